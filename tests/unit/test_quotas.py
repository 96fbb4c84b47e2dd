"""runtime.quotas: what one connection and one owner id may hold (pure bookkeeping)."""

from __future__ import annotations

import pytest

from pyjoynr.runtime.addresses import WebSocketClientAddress
from pyjoynr.runtime.quotas import (
    CONNECTION_GONE,
    PROVIDERS,
    ROUTES,
    SUBSCRIPTIONS,
    ConnectionBounds,
    Quotas,
)

A, B, C = (WebSocketClientAddress(name) for name in "abc")


def quotas(**bounds: int) -> Quotas:
    return Quotas(ConnectionBounds(**bounds))


def test_a_connection_holds_up_to_its_bound_and_holding_again_is_no_new_holding() -> None:
    q = quotas(max_routes_per_connection=2)
    q.connected(A)
    assert q.admit(ROUTES, A, "p1") is None and q.admit(ROUTES, A, "p2") is None
    assert q.admit(ROUTES, A, "p1") is None
    refusal = q.admit(ROUTES, A, "p3")
    assert refusal is not None and refusal.reason == "bound-routes-per-connection"
    assert "holds 2 routes (add_next_hop), the bound ([connection_bounds] " \
        "max_routes_per_connection) is 2" in refusal.detail
    assert q.counters == {"bound-routes-per-connection": 1}
    assert q.held(ROUTES, A) == 2 and q.held(PROVIDERS, A) == 0
    q.release(ROUTES, A, "p1")
    q.release(ROUTES, A, "never-held")
    assert q.admit(ROUTES, A, "p3") is None


def test_this_process_is_not_bounded_and_a_connection_that_is_gone_takes_nothing() -> None:
    q = quotas(max_routes_per_connection=1)
    assert all(q.admit(ROUTES, None, f"p{i}") is None for i in range(5))
    refusal = q.admit(ROUTES, A, "p")
    assert refusal is not None and refusal.reason == CONNECTION_GONE
    q.connected(A)
    assert q.admit(ROUTES, A, "p") is None
    q.disconnected(A)
    assert q.admit(ROUTES, A, "q") is not None
    assert q.connections == 0 and q.totals()[ROUTES] == 0


def test_the_connections_of_one_owner_share_its_bound_until_they_end() -> None:
    q = quotas(max_providers_per_connection=3, max_providers_per_owner=4)
    q.connected(A, "alice")
    q.connected(B, "alice")
    q.connected(C, None)
    for pid in ("a1", "a2", "a3"):
        assert q.admit(PROVIDERS, A, pid) is None
    assert q.admit(PROVIDERS, B, "b1") is None
    refusal = q.admit(PROVIDERS, B, "b2")
    assert refusal is not None and refusal.reason == "bound-providers-per-owner"
    assert "the connections of owner id 'alice' hold 4 registered providers" in refusal.detail
    assert q.owner_held(PROVIDERS, "alice") == 4
    assert all(q.admit(PROVIDERS, C, f"c{i}") is None for i in range(3))  # another holder
    q.disconnected(A)
    assert q.owner_held(PROVIDERS, "alice") == 1
    assert q.admit(PROVIDERS, B, "b2") is None
    q.disconnected(B)
    assert q.owner_held(PROVIDERS, "alice") == 0


def test_a_subscription_that_has_ended_makes_room_at_the_bound() -> None:
    q = quotas(max_subscriptions_per_connection=2, max_subscriptions_per_owner=3)
    q.connected(A, "alice")
    assert q.admit(SUBSCRIPTIONS, A, "s1", ends_ms=1_000, now_ms=0) is None
    assert q.admit(SUBSCRIPTIONS, A, "s2", now_ms=0) is None
    assert q.admit(SUBSCRIPTIONS, A, "s3", now_ms=999) is not None
    assert q.admit(SUBSCRIPTIONS, A, "s3", now_ms=1_000) is None  # s1 ended
    assert q.held(SUBSCRIPTIONS, A) == 2 and q.owner_held(SUBSCRIPTIONS, "alice") == 2
    # the owner's bound forgets the ended ones of its other connections too
    q.connected(B, "alice")
    assert q.admit(SUBSCRIPTIONS, B, "t1", ends_ms=2_000, now_ms=1_000) is None
    assert q.admit(SUBSCRIPTIONS, B, "t2", now_ms=1_500) is not None
    assert q.admit(SUBSCRIPTIONS, B, "t2", now_ms=2_000) is None


@pytest.mark.parametrize("setting", ["max_routes_per_connection", "max_subscriptions_per_owner"])
def test_a_bound_below_one_is_refused(setting: str) -> None:
    with pytest.raises(ValueError, match=f"{setting} must be >= 1"):
        ConnectionBounds(**{setting: 0})


def test_an_owner_whose_connections_never_held_anything_ends_cleanly() -> None:
    # a Unix domain socket connection has an owner id (its user) from the start; one that
    # connects and leaves without a route must not fail its clean-up
    q = quotas()
    q.connected(A, "alice")
    q.connected(B, "alice")
    q.disconnected(A)
    assert q.admit(ROUTES, B, "p") is None
    q.disconnected(B)
    assert q.owner_held(ROUTES, "alice") == 0 and q.connections == 0

"""The decision tables of the routing table's put (runtime.routing), generated over every case.

Every (runtime kind, old type, new type, same/different address, same/different visibility,
old sticky, new sticky, later/earlier expiry) combination is one test, asserting the outcome and
the resulting entry. The expectations come from the precedence tables written out literally
below, not from the implementation.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from pyjoynr.runtime.addresses import (
    Address,
    InProcessAddress,
    MqttAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.routing import PutResult, RoutingEntry, RoutingTable, RuntimeKind

CC = RuntimeKind.CLUSTER_CONTROLLER
LIB = RuntimeKind.LIBJOYNR

# precedence: old (row) \ new (column); R = replaced, K = kept
PRECEDENCE = {
    CC: {
        "InProcess": {"InProcess": "R", "WebSocketClient": "K", "Mqtt": "K"},
        "WebSocketClient": {"InProcess": "R", "WebSocketClient": "R", "Mqtt": "K"},
        "Mqtt": {"InProcess": "R", "WebSocketClient": "R", "Mqtt": "R"},
    },
    LIB: {
        "InProcess": {"InProcess": "R", "WebSocket": "K"},
        "WebSocket": {"InProcess": "R", "WebSocket": "R"},
    },
}
ALL_TYPES = ("InProcess", "WebSocket", "WebSocketClient", "Mqtt")

_SKELETONS = (object(), object())


def make_address(type_name: str, variant: int) -> Address:
    """Two distinct addresses per type (variant 0 and 1); same variant = equal address."""
    if type_name == "InProcess":
        return InProcessAddress(_SKELETONS[variant])  # a new wrapper object, same skeleton
    if type_name == "WebSocket":
        return WebSocketAddress("ws", "127.0.0.1", 4242 + variant, "/")
    if type_name == "WebSocketClient":
        return WebSocketClientAddress(f"client-{variant}")
    return MqttAddress("joynrdefaultgbid", f"cc/{variant}")


@dataclass(frozen=True)
class Case:
    kind: RuntimeKind
    old_type: str
    new_type: str
    same_address: bool
    same_visibility: bool
    old_sticky: bool
    new_sticky: bool
    later_expiry: bool

    @property
    def id(self) -> str:
        return "-".join(
            [
                "cc" if self.kind is CC else "lib",
                f"{self.old_type}>{self.new_type}",
                "same-addr" if self.same_address else "other-addr",
                "same-vis" if self.same_visibility else "other-vis",
                "old-sticky" if self.old_sticky else "old-plain",
                "new-sticky" if self.new_sticky else "new-plain",
                "later" if self.later_expiry else "earlier",
            ]
        )


def all_cases() -> list[Case]:
    cases = []
    for kind, table in PRECEDENCE.items():
        for old_type, new_type in itertools.product(table, ALL_TYPES):
            same_address_options = (True, False) if old_type == new_type else (False,)
            for same_address, same_vis, old_sticky, new_sticky, later in itertools.product(
                same_address_options, *([(True, False)] * 4)
            ):
                cases.append(
                    Case(kind, old_type, new_type, same_address, same_vis, old_sticky,
                         new_sticky, later)
                )
    return cases


CASES = all_cases()


def expected_outcome(case: Case) -> PutResult:
    if case.new_type not in PRECEDENCE[case.kind]:
        return PutResult.REJECTED_INVALID
    if case.same_address and case.same_visibility:
        return PutResult.MERGED
    if case.old_sticky:
        return PutResult.REJECTED_STICKY
    if PRECEDENCE[case.kind][case.old_type][case.new_type] == "R":
        return PutResult.REPLACED
    return PutResult.REJECTED_PRECEDENCE


def test_the_generated_table_covers_every_case():
    # cc: 3 old types x (2 same-type variants + 3 other types) x 16; lib: 2 x (2 + 3) x 16
    assert len(CASES) == 3 * 5 * 16 + 2 * 5 * 16
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_put_over_an_existing_entry(case: Case):
    table = RoutingTable(case.kind)
    old_address = make_address(case.old_type, 0)
    new_address = make_address(case.new_type, 0 if case.same_address else 1)
    old_expiry, new_expiry = 5_000, (9_000 if case.later_expiry else 1_000)
    old_visible = True
    new_visible = old_visible if case.same_visibility else not old_visible

    first = table.put(
        "p", old_address, is_globally_visible=old_visible, expiry_date_ms=old_expiry,
        is_sticky=case.old_sticky,
    )
    assert first is PutResult.CREATED
    old_entry = table.get("p")

    result = table.put(
        "p", new_address, is_globally_visible=new_visible, expiry_date_ms=new_expiry,
        is_sticky=case.new_sticky,
    )

    expected = expected_outcome(case)
    assert result is expected
    assert result.accepted == (expected in (PutResult.MERGED, PutResult.REPLACED))
    entry = table.get("p")
    merged_expiry = max(old_expiry, new_expiry)
    merged_sticky = case.old_sticky or case.new_sticky
    if expected is PutResult.MERGED:
        assert entry == RoutingEntry(old_address, old_visible, merged_expiry, merged_sticky)
    elif expected is PutResult.REPLACED:
        assert entry == RoutingEntry(new_address, new_visible, merged_expiry, merged_sticky)
    else:
        assert entry == old_entry
    # the reverse index follows the entry
    assert table.participants_at(entry.address) == {"p"}
    if entry.address != old_address:
        assert table.participants_at(old_address) == set()
    assert len(table) == 1


@pytest.mark.parametrize("kind", [CC, LIB])
@pytest.mark.parametrize("type_name", ALL_TYPES)
@pytest.mark.parametrize("sticky", [False, True])
def test_put_of_a_new_participant(kind, type_name, sticky):
    table = RoutingTable(kind)
    address = make_address(type_name, 0)
    result = table.put("p", address, is_globally_visible=False, expiry_date_ms=7,
                       is_sticky=sticky)
    if type_name in PRECEDENCE[kind]:
        assert result is PutResult.CREATED
        assert table.get("p") == RoutingEntry(address, False, 7, sticky)
        assert table.participants_at(address) == {"p"}
    else:
        # an invalid address never enters the table, not even as a new entry
        assert result is PutResult.REJECTED_INVALID
        assert "p" not in table
        assert table.get("p") is None
        assert len(table) == 0


OWN = MqttAddress("joynrdefaultgbid", "cc/own")


@pytest.mark.parametrize("sticky", [False, True])
@pytest.mark.parametrize("existing", [None, "Mqtt", "WebSocketClient"])
def test_cluster_controller_refuses_its_own_global_address(sticky, existing):
    table = RoutingTable(CC, own_addresses=[OWN, OWN.with_broker_uri("gbid2")])
    if existing is not None:
        table.put("p", make_address(existing, 0), is_globally_visible=True, expiry_date_ms=1)
    before = table.get("p")
    for own in table.own_addresses:
        assert table.put("p", own, is_globally_visible=True, expiry_date_ms=9,
                         is_sticky=sticky) is PutResult.REJECTED_INVALID
        assert table.get("p") == before
        assert table.participants_at(own) == set()
    # the same topic in a backend that is not one of ours is someone else's address
    other = OWN.with_broker_uri("gbid3")
    assert table.put("q", other, is_globally_visible=True, expiry_date_ms=9).accepted


def test_merge_never_clears_sticky_and_never_lowers_expiry():
    table = RoutingTable(CC)
    address = make_address("Mqtt", 0)
    table.put("p", address, is_globally_visible=True, expiry_date_ms=100, is_sticky=True)
    assert table.put("p", address, is_globally_visible=True, expiry_date_ms=50,
                     is_sticky=False) is PutResult.MERGED
    assert table.get("p") == RoutingEntry(address, True, 100, True)

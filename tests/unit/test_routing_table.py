"""Routing table behaviour beyond put: remove, purge, reverse lookup, argument checks."""

from __future__ import annotations

import pytest

from pyjoynr.runtime.addresses import InProcessAddress, MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.routing import NO_EXPIRY_MS, PutResult, RoutingTable, RuntimeKind

CC = RuntimeKind.CLUSTER_CONTROLLER


def test_put_result_accepted_and_reason():
    assert {r for r in PutResult if r.accepted} == {
        PutResult.CREATED, PutResult.MERGED, PutResult.REPLACED
    }
    assert "sticky" in PutResult.REJECTED_STICKY.reason
    assert "precedence" in PutResult.REJECTED_PRECEDENCE.reason


def test_remove_refuses_sticky_entries():
    table = RoutingTable(CC)
    table.put("s", MqttAddress("g", "t"), is_globally_visible=True, expiry_date_ms=1,
              is_sticky=True)
    assert table.remove("s") is False
    assert "s" in table
    assert table.purge(NO_EXPIRY_MS) == []


def test_participants_at_and_remove_all_at_after_a_client_leaves():
    table = RoutingTable(CC)
    gone, stays = WebSocketClientAddress("gone"), WebSocketClientAddress("stays")
    for pid in ("a", "b", "c"):
        table.put(pid, gone, is_globally_visible=False, expiry_date_ms=NO_EXPIRY_MS)
    table.put("d", stays, is_globally_visible=False, expiry_date_ms=NO_EXPIRY_MS)
    table.put("s", gone, is_globally_visible=False, expiry_date_ms=NO_EXPIRY_MS,
              is_sticky=True)
    assert table.participants_at(gone) == {"a", "b", "c", "s"}
    # the result is a copy: changing it does not change the table
    table.participants_at(gone).clear()
    assert table.participants_at(gone) == {"a", "b", "c", "s"}
    assert table.remove_all_at(gone) == ["a", "b", "c"]
    assert table.participants_at(gone) == {"s"}
    assert set(table) == {"d", "s"}


def test_purge_follows_expiry_extension_and_replacement():
    table = RoutingTable(CC)
    a1, a2 = MqttAddress("g", "1"), MqttAddress("g", "2")
    table.put("p", a1, is_globally_visible=True, expiry_date_ms=1_500)
    table.put("p", a1, is_globally_visible=True, expiry_date_ms=4_200)  # merged: later
    assert table.purge(3_000) == []
    table.put("p", a2, is_globally_visible=True, expiry_date_ms=100)  # replaced: keeps 4_200
    assert table.purge(4_200) == []
    assert table.purge(4_201) == ["p"]
    assert len(table) == 0
    assert table.participants_at(a1) == table.participants_at(a2) == set()


def test_becoming_sticky_protects_from_purge():
    table = RoutingTable(CC)
    a = MqttAddress("g", "1")
    table.put("p", a, is_globally_visible=True, expiry_date_ms=10)
    table.put("p", a, is_globally_visible=True, expiry_date_ms=10, is_sticky=True)
    assert table.purge(NO_EXPIRY_MS) == []
    assert table.get("p").is_sticky


def test_purge_with_heavy_churn_ahead_of_now():
    """Many expiry seconds created and emptied again: purge stays exact."""
    table = RoutingTable(CC)
    a = MqttAddress("g", "1")
    for i in range(2_000):
        table.put(f"p{i}", a, is_globally_visible=True, expiry_date_ms=1_000_000 + i * 1_000)
        if i % 3:
            assert table.remove(f"p{i}")
    survivors = {f"p{i}" for i in range(2_000) if i % 3 == 0}
    assert set(table) == survivors
    cutoff = 1_000_000 + 1_000 * 1_000
    expected = {f"p{i}" for i in range(0, 1_000, 3)}
    assert set(table.purge(cutoff)) == expected
    assert set(table) == survivors - expected
    assert set(table.purge(NO_EXPIRY_MS)) == survivors - expected
    assert len(table) == 0


def test_negative_and_huge_expiries():
    table = RoutingTable(CC)
    a = MqttAddress("g", "1")
    table.put("neg", a, is_globally_visible=True, expiry_date_ms=-5)
    table.put("huge", a, is_globally_visible=True, expiry_date_ms=10**30)
    assert table.purge(0) == ["neg"]
    assert table.purge(NO_EXPIRY_MS) == []


@pytest.mark.parametrize("pid", ["", None, 42, b"bytes"])
def test_participant_id_must_be_a_non_empty_string(pid):
    with pytest.raises(TypeError):
        RoutingTable(CC).put(pid, MqttAddress("g", "t"), is_globally_visible=True,
                             expiry_date_ms=1)


@pytest.mark.parametrize("expiry", [1.5, "10", None])
def test_expiry_must_be_an_int(expiry):
    with pytest.raises(TypeError):
        RoutingTable(CC).put("p", MqttAddress("g", "t"), is_globally_visible=True,
                             expiry_date_ms=expiry)


def test_kind_must_be_a_runtime_kind():
    with pytest.raises(TypeError):
        RoutingTable("cluster-controller")


def test_non_address_objects_are_invalid():
    table = RoutingTable(CC)
    assert table.put("p", "mqtt://x", is_globally_visible=True,
                     expiry_date_ms=1) is PutResult.REJECTED_INVALID
    assert not table.is_valid_address("mqtt://x")
    assert table.is_valid_address(InProcessAddress(object()))


def test_items_is_a_snapshot():
    table = RoutingTable(CC)
    table.put("p", MqttAddress("g", "t"), is_globally_visible=True, expiry_date_ms=1)
    snapshot = table.items()
    table.put("q", MqttAddress("g", "t"), is_globally_visible=True, expiry_date_ms=1)
    assert [pid for pid, _ in snapshot] == ["p"]


def test_expiry_index_stays_bounded_under_churn_and_purge_stays_exact():
    """Entries extended over and over (learned replyTo) leave stale references behind;
    the index is rebuilt before they outnumber the entries, and purge stays exact."""
    table = RoutingTable(CC, expiry_bucket_ms=1)
    a = MqttAddress("g", "1")
    for i in range(50):
        table.put(f"p{i}", a, is_globally_visible=True, expiry_date_ms=0)
    for step in range(1, 200):
        for i in range(50):
            table.put(f"p{i}", a, is_globally_visible=True, expiry_date_ms=step * 10 + i)
        stats = table.stats()
        assert stats["expiry_refs"] - stats["stale_expiry_refs"] == 50
        assert stats["stale_expiry_refs"] <= 1024 + 25
    assert table.purge(1_990) == []
    assert sorted(table.purge(1_990 + 25)) == sorted(f"p{i}" for i in range(25))
    assert sorted(table.purge(10**6)) == sorted(f"p{i}" for i in range(25, 50))
    assert table.stats() == {
        "entries": 0, "addresses": 0, "expiry_buckets": 0, "expiry_refs": 0,
        "stale_expiry_refs": 0, "learned": 0, "learned_heap": 0,
    }


def test_expiry_bucket_width_must_be_positive():
    with pytest.raises(ValueError, match="expiry_bucket_ms"):
        RoutingTable(CC, expiry_bucket_ms=0)


@pytest.mark.parametrize(("visible", "sticky"), [(1, False), (True, None), ("yes", False)])
def test_flags_must_be_bools(visible, sticky):
    with pytest.raises(TypeError, match="bools"):
        RoutingTable(CC).put("p", MqttAddress("g", "t"), is_globally_visible=visible,
                             expiry_date_ms=1, is_sticky=sticky)


# ---------------------------------------------------------------------- learned routes (bounded)

ME = MqttAddress("g", "cc/me")
REPLY = {name: MqttAddress("g", f"reply/{name}") for name in "abcdefxyz"}
CLIENT = WebSocketClientAddress("client")


def _apply(table: RoutingTable, op: tuple, max_learned: int) -> object:
    """One step of a learned-routes scenario; returns what put/put_learned/purge said."""
    kind, pid, *rest = op
    if kind == "learn":  # ("learn", pid, expiry[, address])
        address = rest[1] if len(rest) > 1 else REPLY[pid]
        result, evicted = table.put_learned(pid, address, expiry_date_ms=rest[0],
                                            max_learned=max_learned)
        return result.name, evicted
    if kind == "local":
        return table.put(pid, InProcessAddress(object()), is_globally_visible=False,
                         expiry_date_ms=NO_EXPIRY_MS).name
    if kind == "client":
        return table.put(pid, CLIENT, is_globally_visible=False,
                         expiry_date_ms=NO_EXPIRY_MS).name
    if kind == "provisioned":  # sticky, at the address a request may name as replyTo
        return table.put(pid, REPLY[pid], is_globally_visible=True,
                         expiry_date_ms=NO_EXPIRY_MS, is_sticky=True).name
    if kind == "discovered":  # a GCD answer: visible, not sticky, not learned
        return table.put(pid, REPLY[pid], is_globally_visible=True, expiry_date_ms=rest[0]).name
    if kind == "remove":
        return table.remove(pid)
    if kind == "purge":  # ("purge", "", now)
        return table.purge(rest[0])
    raise AssertionError(op)


LEARNED_CASES = {
    # name: (max learned, steps, what each step said, learned at the end)
    "the one that expires first makes room": (
        3,
        [("learn", "a", 100), ("learn", "b", 300), ("learn", "c", 200), ("learn", "d", 400)],
        [("CREATED", []), ("CREATED", []), ("CREATED", []), ("CREATED", ["a"])],
        {"b", "c", "d"}),
    "... even when the new one expires sooner": (
        2,
        [("learn", "a", 500), ("learn", "b", 600), ("learn", "c", 100)],
        [("CREATED", []), ("CREATED", []), ("CREATED", ["a"])],
        {"b", "c"}),
    "a merge that extends the expiry moves it back": (
        2,
        [("learn", "a", 100), ("learn", "b", 200), ("learn", "a", 300), ("learn", "c", 400)],
        [("CREATED", []), ("CREATED", []), ("MERGED", []), ("CREATED", ["b"])],
        {"a", "c"}),
    "learning a known sender again evicts nothing": (
        1,
        [("learn", "a", 100), ("learn", "a", 200), ("learn", "a", 50)],
        [("CREATED", []), ("MERGED", []), ("MERGED", [])],
        {"a"}),
    "a new replyTo of a known sender evicts nothing": (
        1,
        [("learn", "a", 100), ("learn", "a", 200, REPLY["x"])],
        [("CREATED", []), ("REPLACED", [])],
        {"a"}),
    "local routes are neither counted nor evicted": (
        1,
        [("local", "x"), ("learn", "a", 100), ("learn", "b", 200), ("learn", "x", 50)],
        ["CREATED", ("CREATED", []), ("CREATED", ["a"]), ("REJECTED_PRECEDENCE", [])],
        {"b"}),
    "a client's registration makes a learned route its own": (
        1,
        [("learn", "a", 100), ("client", "a"), ("learn", "b", 200), ("learn", "c", 300)],
        [("CREATED", []), "REPLACED", ("CREATED", []), ("CREATED", ["b"])],
        {"c"}),
    "provisioned (sticky) routes stay, and stay unlearned": (
        1,
        [("provisioned", "x"), ("learn", "x", 100), ("learn", "a", 100), ("learn", "b", 200)],
        ["CREATED", ("MERGED", []), ("CREATED", []), ("CREATED", ["a"])],
        {"b"}),
    "a discovered route that a request merges into stays unlearned": (
        1,
        [("discovered", "x", 100), ("learn", "x", 500), ("learn", "a", 100),
         ("learn", "b", 200)],
        ["CREATED", ("MERGED", []), ("CREATED", []), ("CREATED", ["a"])],
        {"b"}),
    "a learned route confirmed by discovery is no longer learned": (
        1,
        [("learn", "x", 100), ("discovered", "x", 100), ("learn", "a", 100)],
        [("CREATED", []), "MERGED", ("CREATED", [])],
        {"a"}),
    "removed and purged routes leave the count": (
        2,
        [("learn", "a", 100), ("learn", "b", 200), ("remove", "a"), ("learn", "c", 300),
         ("purge", "", 250), ("learn", "d", 400)],
        [("CREATED", []), ("CREATED", []), True, ("CREATED", []), ["b"], ("CREATED", [])],
        {"c", "d"}),
    "an invalid replyTo (this CC itself) evicts nothing": (
        1,
        [("learn", "a", 100), ("learn", "b", 100, ME)],
        [("CREATED", []), ("REJECTED_INVALID", [])],
        {"a"}),
}


@pytest.mark.parametrize(("max_learned", "steps", "said", "learned"), LEARNED_CASES.values(),
                         ids=LEARNED_CASES.keys())
def test_learned_routes_are_bounded(max_learned, steps, said, learned):
    table = RoutingTable(CC, own_addresses=[ME])
    assert [_apply(table, step, max_learned) for step in steps] == said
    assert {pid for pid in table if table.is_learned(pid)} == learned
    assert table.learned_count == len(learned)


def test_learned_heap_stays_bounded_under_churn():
    table = RoutingTable(CC)
    for i in range(20_000):
        # the same few senders, ever later: every merge pushes a heap item
        table.put_learned(f"p{i % 7}", MqttAddress("g", "t"), expiry_date_ms=i,
                          max_learned=5)
    assert table.learned_count == 5
    assert table.stats()["learned_heap"] <= 1024 + 2 * 5 + 1
    # the survivors are the five latest senders
    assert sorted(pid for pid in table if table.is_learned(pid)) == sorted(
        f"p{i % 7}" for i in range(20_000 - 5, 20_000))

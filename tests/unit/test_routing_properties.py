"""Property-based tests: random operation sequences keep the routing table's invariants."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from pyjoynr.runtime.addresses import (
    InProcessAddress,
    MqttAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.routing import NO_EXPIRY_MS, RoutingEntry, RoutingTable, RuntimeKind

_SKELETONS = [object(), object()]
OWN = MqttAddress("gbid-a", "cc/own")
ADDRESSES = [
    InProcessAddress(_SKELETONS[0]),
    InProcessAddress(_SKELETONS[1]),
    WebSocketAddress("ws", "127.0.0.1", 4242, "/"),
    WebSocketAddress("ws", "127.0.0.1", 4243, "/"),
    WebSocketClientAddress("c1"),
    WebSocketClientAddress("c2"),
    MqttAddress("gbid-a", "cc/1"),
    MqttAddress("gbid-b", "cc/1"),
    OWN,
]
PIDS = [f"p{i}" for i in range(6)]
# expiries around a few second boundaries, plus "never"
EXPIRIES = st.one_of(st.integers(-1_000, 6_000), st.just(NO_EXPIRY_MS))


class RoutingTableMachine(RuleBasedStateMachine):
    kind = RuntimeKind.CLUSTER_CONTROLLER

    def __init__(self) -> None:
        super().__init__()
        # 1 s buckets: the expiries below span several, so bucket boundaries are exercised
        self.table = RoutingTable(self.kind, own_addresses=[OWN], expiry_bucket_ms=1_000)

    def entries(self) -> dict[str, RoutingEntry]:
        return dict(self.table.items())

    @rule(
        pid=st.sampled_from(PIDS),
        address=st.sampled_from(ADDRESSES),
        visible=st.booleans(),
        expiry=EXPIRIES,
        sticky=st.booleans(),
    )
    def put(self, pid, address, visible, expiry, sticky):
        before = self.table.get(pid)
        result = self.table.put(pid, address, is_globally_visible=visible,
                                expiry_date_ms=expiry, is_sticky=sticky)
        after = self.table.get(pid)
        if result.accepted:
            assert after.address == address
            assert after.is_globally_visible == visible
            assert after.expiry_date_ms >= expiry
            assert after.is_sticky >= sticky
        else:
            assert after == before
        if before is not None:
            # expiry never decreases and stickiness is never lost through put
            assert after.expiry_date_ms >= before.expiry_date_ms
            assert after.is_sticky >= before.is_sticky
            if before.is_sticky:
                assert after.address == before.address
                assert after.is_globally_visible == before.is_globally_visible

    @rule(pid=st.sampled_from(PIDS))
    def remove(self, pid):
        before = self.table.get(pid)
        removed = self.table.remove(pid)
        if before is None or before.is_sticky:
            assert removed is False
            assert self.table.get(pid) == before
        else:
            assert removed is True
            assert pid not in self.table

    @rule(now=st.integers(-2_000, 8_000) | st.just(NO_EXPIRY_MS))
    def purge(self, now):
        before = self.entries()
        removed = self.table.purge(now)
        expected = {pid for pid, e in before.items() if e.expiry_date_ms < now and not e.is_sticky}
        assert len(removed) == len(set(removed))
        assert set(removed) == expected
        after = self.entries()
        assert after == {pid: e for pid, e in before.items() if pid not in expected}

    @rule(address=st.sampled_from(ADDRESSES))
    def remove_all_at(self, address):
        before = self.entries()
        removed = self.table.remove_all_at(address)
        assert set(removed) == {
            pid for pid, e in before.items() if e.address == address and not e.is_sticky
        }

    @invariant()
    def one_consistent_entry_per_participant(self):
        entries = self.entries()
        assert len(self.table) == len(entries)
        for pid, entry in entries.items():
            assert pid in self.table
            assert self.table.is_valid_address(entry.address)

    @invariant()
    def expiry_index_accounts_for_every_purgeable_entry(self):
        purgeable = sum(
            1 for _, e in self.table.items() if not e.is_sticky and e.expiry_date_ms < NO_EXPIRY_MS
        )
        stats = self.table.stats()
        assert stats["stale_expiry_refs"] >= 0
        assert stats["expiry_refs"] - stats["stale_expiry_refs"] == purgeable

    @invariant()
    def participants_at_agrees_with_the_entries(self):
        entries = self.entries()
        for address in ADDRESSES:
            expected = {pid for pid, e in entries.items() if e.address == address}
            assert self.table.participants_at(address) == expected


class LibjoynrRoutingTableMachine(RoutingTableMachine):
    kind = RuntimeKind.LIBJOYNR


TestClusterControllerTable = RoutingTableMachine.TestCase
TestLibjoynrTable = LibjoynrRoutingTableMachine.TestCase

"""The index's lookups as (gbid, shared parameters) pairs - what the GCD provider answers from
- give the rows of its StoredEntry lookups, in their order, after any sequence of changes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.gcd.changes import Change
from pyjoynr.gcd.index import DirectoryIndex
from pyjoynr.gcd.store import StoredEntry

NOW = 1_000


def entry(pid: str, gbid: str, domain: str, interface_name: str, *, expiry_ms: int,
          priority: int) -> StoredEntry:
    return StoredEntry(gbid, pid, domain, interface_name, 1, 0, priority, "GLOBAL", True, "[]",
                       0, expiry_ms, "", "joynr/cc/cc-1", "cc-1")


changes = st.lists(st.tuples(
    st.sampled_from(["p1", "p2", "p3", "p4"]), st.sampled_from(["g1", "g2", "g3"]),
    st.sampled_from(["d1", "d2"]), st.sampled_from(["I", "J"]),
    st.sampled_from([NOW - 1, NOW, NOW + 1]), st.integers(0, 2), st.booleans()), max_size=30)


@given(changes)
def test_shared_lookups_are_the_entry_lookups(steps: list[tuple[str, str, str, str, int, int,
                                                                bool]]) -> None:
    index = DirectoryIndex()
    for version, (pid, gbid, domain, interface_name, expiry, priority, delete) in enumerate(
            steps, 1):
        stored = None if delete else entry(pid, gbid, domain, interface_name, expiry_ms=expiry,
                                     priority=priority)
        index.apply([Change(version, gbid, pid, stored)])
    for domains in (["d1"], ["d2"], ["d1", "d2"], ["d2", "d1", "d2"], []):
        for interface_name in ("I", "J"):
            shared = index.find_shared(domains, interface_name, NOW)
            assert [p.to_entry(g) for g, p in shared] == index.find(domains, interface_name,
                                                                    NOW)
    for pid in ("p1", "p2", "p3", "p4", "p5"):
        shared = index.find_participant_shared(pid, NOW)
        assert [p.to_entry(g) for g, p in shared] == index.find_participant(pid, NOW)

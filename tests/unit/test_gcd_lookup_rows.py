"""The index's lookups as looked-up rows (gcd.params.Found) - what the GCD provider answers
from - give the rows of its StoredEntry lookups, in their order, after any sequence of
changes."""

from __future__ import annotations

import gc
import tracemalloc

from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.gcd.changes import Change
from pyjoynr.gcd.index import DirectoryIndex
from pyjoynr.gcd.params import entry_of_found
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
            assert [entry_of_found(f) for f in shared] == index.find(domains, interface_name,
                                                                    NOW)
    for pid in ("p1", "p2", "p3", "p4", "p5"):
        shared = index.find_participant_shared(pid, NOW)
        assert [entry_of_found(f) for f in shared] == index.find_participant(pid, NOW)


def test_a_lookup_hands_out_the_index_profile_and_keeps_nothing() -> None:
    """A lookup's rows refer to the one profile tuple the index keeps for rows of the same
    parameters (no parameter object is made per row), and lookups over every row leave no
    memory behind (no cache of answers grows with them)."""
    index = DirectoryIndex()
    for i in range(3_000):
        index.apply([Change(i + 1, "g1", f"p{i:05d}", entry(
            f"p{i:05d}", "g1", f"d{i // 10}", "I", expiry_ms=NOW + 1, priority=1))])
    found = index.find_shared(["d7"], "I", NOW)
    assert len(found) == 10 and all(row[4] is found[0][4] for row in found)
    assert index.find_shared(["d7"], "I", NOW)[3][4] is found[0][4]
    assert index.find_participant_shared("p00071", NOW)[0][4] is found[0][4]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for domain in range(300):
            index.find_shared([f"d{domain}"], "I", NOW)
        for i in range(3_000):
            index.find_participant_shared(f"p{i:05d}", NOW)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000, f"lookups of every row left {grown} bytes behind"

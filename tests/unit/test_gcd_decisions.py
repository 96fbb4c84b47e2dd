"""The decisions both GCD stores share (gcd/decisions.py), as data: no database."""

from __future__ import annotations

import dataclasses

import pytest

from pyjoynr.gcd.decisions import RemoveDecision, decide_remove, distinct, rows_to_add
from pyjoynr.gcd.store import RemoveOutcome, StoredEntry

REMOVED, NO_PARTICIPANT, NOT_IN_ALL = (RemoveOutcome.REMOVED, RemoveOutcome.NO_PARTICIPANT,
                                       RemoveOutcome.NOT_IN_ALL_SELECTED)


@pytest.mark.parametrize(("registered", "selected", "decision"), [
    # registered nowhere: whatever is selected
    ([], ["g1"], RemoveDecision(NO_PARTICIPANT)),
    ([], [], RemoveDecision(NO_PARTICIPANT)),
    # registered in every selected GBID: those rows go, each GBID once, in code-point order
    (["g1"], ["g1"], RemoveDecision(REMOVED, ("g1",))),
    (["g1", "g2"], ["g1"], RemoveDecision(REMOVED, ("g1",))),
    (["g2", "g1", "g3"], ["g3", "g1"], RemoveDecision(REMOVED, ("g1", "g3"))),
    (["g1", "g2"], ["g2", "g2", "g1", "g2"], RemoveDecision(REMOVED, ("g1", "g2"))),
    # a registration listed twice (a store may read a GBID once per row)
    (["g1", "g1"], ["g1"], RemoveDecision(REMOVED, ("g1",))),
    # not in every selected GBID: nothing goes
    (["g1"], ["g2"], RemoveDecision(NOT_IN_ALL)),
    (["g1", "g2"], ["g1", "g3"], RemoveDecision(NOT_IN_ALL)),
    (["g1"], ["g1", "g1", "g2"], RemoveDecision(NOT_IN_ALL)),
    # an empty selection removes nothing
    (["g1"], [], RemoveDecision(REMOVED, ())),
])
def test_decide_remove(registered: list[str], selected: list[str],
                       decision: RemoveDecision) -> None:
    assert decide_remove(registered, selected) == decision
    assert decide_remove(iter(registered), iter(selected)) == decision  # any iterables


@pytest.mark.parametrize(("values", "expected"), [
    ([], ()),
    (["b"], ("b",)),
    (["b", "a", "b", "a", "a"], ("a", "b")),
    # code-point order: upper case before lower case, "-" before digits, accents last
    (["é", "a1", "a-1", "B", "a", "_x"], ("B", "_x", "a", "a-1", "a1", "é")),
])
def test_distinct_gives_each_value_once_in_code_point_order(values: list[str],
                                                            expected: tuple[str, ...]) -> None:
    assert distinct(values) == expected


def entry(pid: str, gbid: str, priority: int = 0) -> StoredEntry:
    return StoredEntry(gbid=gbid, participant_id=pid, domain="d", interface_name="i",
                       major_version=1, minor_version=0, priority=priority, scope="GLOBAL",
                       supports_on_change=False, custom_parameters="[]", last_seen_ms=0,
                       expiry_ms=1, public_key_id="", topic="joynr/cc/cc-1",
                       cluster_controller_id="cc-1")


@pytest.mark.parametrize(("batch", "written"), [
    ([], []),
    ([("p1", "g1", 1)], [("p1", "g1", 1)]),
    # one participant in two GBIDs: two rows, in key order (gbid, participantId)
    ([("p1", "g2", 1), ("p1", "g1", 2)], [("p1", "g1", 2), ("p1", "g2", 1)]),
    # a key named twice: the last entry of it is written, once
    ([("p1", "g1", 1), ("p2", "g1", 2), ("p1", "g1", 3)], [("p1", "g1", 3), ("p2", "g1", 2)]),
    ([("b", "g1", 1), ("a", "g2", 2), ("b", "g1", 3), ("b", "g1", 4), ("a", "g1", 5)],
     [("a", "g1", 5), ("b", "g1", 4), ("a", "g2", 2)]),
])
def test_rows_to_add_one_per_key_the_last_wins_in_key_order(
        batch: list[tuple[str, str, int]], written: list[tuple[str, str, int]]) -> None:
    rows = rows_to_add([entry(*spec) for spec in batch])
    assert [(r.participant_id, r.gbid, r.priority) for r in rows] == written


def test_rows_to_add_keeps_the_entries_themselves() -> None:
    last = dataclasses.replace(entry("p1", "g1"), domain="other")
    assert rows_to_add([entry("p1", "g1"), last]) == [last]
    assert rows_to_add([entry("p1", "g1"), last])[0] is last

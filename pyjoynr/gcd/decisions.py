"""The decisions of the GCD's stores, made once for both (pure: no I/O, no database).

SQLite (:mod:`gcd.sqlite_store`) and PostgreSQL (:mod:`gcd.postgres_store`) keep the same rows
and must give the same answers; what they decide is here, and each store only reads and writes
what these functions say:

- **add** (:func:`rows_to_add`): one row per key (gbid, participantId); when a batch names a
  key twice, the last entry of it is written. Rows are written in key order, the order in
  which every statement that changes several rows locks them.
- **find** (:func:`distinct`): no domains asks nothing and finds nothing; each domain is asked
  once, so a row is found once however often its domain is listed.
- **remove** of a participant from selected GBIDs (:func:`decide_remove`): all or nothing.
- **remove_in_backends** of participants from one GBID, and **touch** of a cluster controller's rows
  (of some participants, or all): each participant counts once (:func:`distinct`), and the
  count returned is of distinct rows.

Which rows are live, expired or stale is the same rule for both stores too: SQL conditions
given once in :mod:`gcd.store` (``LIVE``, ``EXPIRED``, ``STALE``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyjoynr.gcd.store import RemoveOutcome, StoredEntry

__all__ = ["RemoveDecision", "decide_remove", "distinct", "rows_to_add"]


def distinct(values: Iterable[str]) -> tuple[str, ...]:
    """Each value once, in code-point order (a stable order for statements and locks)."""
    return tuple(sorted(set(values)))


def rows_to_add(entries: Iterable[StoredEntry]) -> list[StoredEntry]:
    """The rows an add writes: one per key, the last entry of a key wins, in key order."""
    latest: dict[tuple[str, str], StoredEntry] = {}
    for entry in entries:
        latest[entry.key] = entry
    return [latest[key] for key in sorted(latest)]


@dataclass(frozen=True, slots=True)
class RemoveDecision:
    """What a remove does: ``outcome``, and the GBIDs whose rows of the participant go
    (distinct, in code-point order; empty unless the outcome is REMOVED)."""

    outcome: RemoveOutcome
    delete: tuple[str, ...] = ()


def decide_remove(registered: Iterable[str], selected: Iterable[str]) -> RemoveDecision:
    """Remove a participant from the ``selected`` GBIDs, given the GBIDs it is ``registered``
    in (its live rows):

    - registered nowhere: NO_PARTICIPANT, nothing goes;
    - not registered in every selected GBID: NOT_IN_ALL_SELECTED, nothing goes;
    - else REMOVED: its rows in the selected GBIDs go (each GBID once), the others stay.

    An empty selection removes nothing (REMOVED when the participant is registered; the GCD
    refuses an empty GBID list before it asks the store)."""
    known = frozenset(registered)
    if not known:
        return RemoveDecision(RemoveOutcome.NO_PARTICIPANT)
    wanted = distinct(selected)
    if not known.issuperset(wanted):
        return RemoveDecision(RemoveOutcome.NOT_IN_ALL_SELECTED)
    return RemoveDecision(RemoveOutcome.REMOVED, wanted)

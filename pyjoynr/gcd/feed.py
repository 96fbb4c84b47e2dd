"""The change feed's logic that both versioned stores share (pure: no I/O, no database).

The stores (:mod:`gcd.sqlite_store`, :mod:`gcd.postgres_store`) keep, for every row, its
version, its key's bucket and its row hash (:mod:`gcd.changes`); a deleted key leaves a
tombstone. What they compute in Python before writing, and how they cut the answer of
``changes_since`` into a batch, is here, once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyjoynr.gcd.changes import Change, ChangeBatch, bucket_of, row_hash
from pyjoynr.gcd.store import StoredEntry

__all__ = [
    "MIGRATION_BATCH",
    "buckets_of",
    "changes_batch",
    "deletion_changes",
    "entry_changes",
    "hashes_of",
    "sort_changes",
]

#: rows per statement when a store migrates a database of the previous version
MIGRATION_BATCH = 10_000


def buckets_of(keys: Iterable[tuple[str, str]]) -> list[int]:
    """The bucket of each (gbid, participant_id)."""
    return [bucket_of(gbid, pid) for gbid, pid in keys]


def hashes_of(keys: Iterable[tuple[str, str]], version: int) -> list[int]:
    """The row hash of each (gbid, participant_id) at ``version``."""
    return [row_hash(gbid, pid, version) for gbid, pid in keys]


def sort_changes(changes: Iterable[Change]) -> list[Change]:
    """Changes in version order, each version's group in key order (code points)."""
    return sorted(changes, key=lambda c: (c.version, c.gbid, c.participant_id))


def changes_batch(rows: Sequence[Change], tombstones: Sequence[Change], limit: int,
                  store_version: int) -> ChangeBatch | int:
    """The batch ``changes_since`` answers, from the first ``limit + 1`` changed rows and the
    first ``limit + 1`` tombstones after the asked version (each in version order), read in
    one snapshot whose store version is ``store_version``.

    Everything fits: all of it, complete up to ``store_version``. Else the first ``limit``
    changes without the group of the version that the limit would cut in two, complete up to
    the last version included. When that group is the first one (a single write changed more
    than ``limit`` keys), the answer is that version (an int): the caller reads the whole group
    and answers it, complete up to that version."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    merged = sort_changes([*rows, *tombstones])
    if len(merged) <= limit:
        return ChangeBatch(merged, store_version)
    cut = merged[limit].version  # the first change left out: its group must stay whole
    if merged[0].version == cut:
        return cut
    included = [c for c in merged[:limit] if c.version < cut]
    return ChangeBatch(included, included[-1].version)


def entry_changes(version: int, entries: Iterable[StoredEntry]) -> list[Change]:
    """The changes of rows written at ``version``, in key order."""
    return sorted((Change(version, e.gbid, e.participant_id, e) for e in entries),
                  key=lambda c: c.key)


def deletion_changes(version: int, keys: Iterable[tuple[str, str]]) -> list[Change]:
    """The changes of keys deleted at ``version``, in key order."""
    return [Change(version, gbid, pid, None) for gbid, pid in sorted(keys)]

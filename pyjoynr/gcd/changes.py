"""The vocabulary of a GCD cluster's synchronisation: versions, changes, buckets and digests,
and the interfaces between the store, the in-memory index and the synchroniser. Pure module.

Several GCD instances share one store (PostgreSQL); each answers lookups from an in-memory
index of every stored row (:mod:`gcd.index`) that it keeps in sync with the store
(:mod:`gcd.sync`). The rules every part relies on:

Versions
    One store-wide counter. Every write transaction takes the next version once (all rows it
    creates, changes or deletes carry that version) and holds the counter's row lock until it
    commits, so versions become visible in increasing order: a reader that has seen version V
    has seen every version below V (no "sequence gap": a lower version cannot commit after a
    higher one). A deleted row leaves a tombstone (key + version) for ``tombstone_retention``.

Changes
    ``changes_since(V)`` answers the current state of every key whose version is above V, in
    version order: a row (``Change.entry``) or a tombstone (``entry is None``). A key changed
    twice after V appears once, at its latest version. Changes are data pulled from the store;
    notifications between instances carry only a version and only wake a reader up.

Applying a change to an index (:meth:`gcd.index.DirectoryIndex.apply`)
    The index keeps a watermark W: every change with version <= W is reflected. A change is
    applied when its version is above W and above the version the index knows for that key
    (the index remembers the version of keys it deleted while that version is above W). So a
    late, duplicated or reordered change never undoes a newer one, and a delete that arrives
    after a re-add is ignored. Catch-up applies a whole batch and moves W to the batch's
    ``up_to``; a writer applies its own committed changes at once without moving W.

Buckets and digests (drift repair)
    A key's bucket is :func:`bucket_of`; both the store (a column written with the row) and the
    index use it. A bucket's digest is :class:`Digest`: the number of rows, the sum of their
    versions and the sum of their :func:`row_hash` es (rows, not tombstones; expired rows
    count until they are purged). Store and index compute the same numbers; repair fetches
    only the buckets whose digests differ, at a snapshot version S, and never changes a key
    whose index version is above S.
"""

from __future__ import annotations

import zlib
from bisect import bisect_right
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter
from typing import Any, Final, Protocol

from pyjoynr.gcd.store import COLUMNS, GcdStore, RemoveOutcome, StoredEntry, row_values

__all__ = [
    "BUCKETS",
    "PROFILE_COLUMNS",
    "ROW_LISTS",
    "Change",
    "ChangeBatch",
    "ColumnBatch",
    "Digest",
    "LoadBatch",
    "Notifier",
    "PlainWrites",
    "RepairRows",
    "TooFarBehind",
    "VersionedStore",
    "bucket_and_row_hash",
    "bucket_of",
    "row_hash",
]

#: the number of key buckets drift repair compares (a power of two)
BUCKETS: Final = 4096


def _key_bytes(gbid: str, participant_id: str) -> bytes:
    # length-prefixed: ("a\0", "b") and ("a", "\0b") stay different keys
    g, p = gbid.encode(), participant_id.encode()
    return len(g).to_bytes(4, "big") + g + len(p).to_bytes(4, "big") + p


def bucket_of(gbid: str, participant_id: str) -> int:
    """The bucket of a key, 0 <= bucket < BUCKETS (CRC-32 of the length-prefixed key)."""
    return zlib.crc32(_key_bytes(gbid, participant_id)) % BUCKETS


def row_hash(gbid: str, participant_id: str, version: int) -> int:
    """A 32-bit hash of one row's key and version, summed into its bucket's digest."""
    return zlib.crc32(version.to_bytes(8, "big"), zlib.crc32(_key_bytes(gbid, participant_id)))


def bucket_and_row_hash(gbid: str, participant_id: str, version: int) -> tuple[int, int]:
    """``(bucket_of(gbid, participant_id), row_hash(gbid, participant_id, version))``, the
    key encoded and checksummed once."""
    key_crc = zlib.crc32(_key_bytes(gbid, participant_id))
    return key_crc % BUCKETS, zlib.crc32(version.to_bytes(8, "big"), key_crc)


@dataclass(frozen=True, slots=True)
class Digest:
    """What one bucket holds, summed: rows, their versions, their row hashes."""

    count: int = 0
    version_sum: int = 0
    hash_sum: int = 0

    def plus(self, version: int, hashed: int) -> Digest:
        return Digest(self.count + 1, self.version_sum + version, self.hash_sum + hashed)

    def minus(self, version: int, hashed: int) -> Digest:
        return Digest(self.count - 1, self.version_sum - version, self.hash_sum - hashed)


@dataclass(frozen=True, slots=True)
class Change:
    """The state of one key at ``version``: its row, or ``entry is None`` for a deletion."""

    version: int
    gbid: str
    participant_id: str
    entry: StoredEntry | None

    @property
    def key(self) -> tuple[str, str]:
        return (self.gbid, self.participant_id)


@dataclass(frozen=True, slots=True)
class ChangeBatch:
    """Changes after some version, in version order, complete up to ``up_to`` (the store's
    version when it answered; ``changes`` may be empty)."""

    changes: Sequence[Change]
    up_to: int


@dataclass(frozen=True, slots=True)
class LoadBatch:
    """A slice of the whole store at one snapshot, as the database driver gives it: per row
    its values in ``COLUMNS`` order, then its version, its key's bucket and its row hash as the
    store keeps them (``VERSION_COLUMNS``). A load reads millions of rows: a StoredEntry made
    per row was a sixth of its time (:meth:`entries` makes them), and the index takes the
    bucket and row hash the store computed when it wrote the row instead of computing them
    again."""

    records: Sequence[Sequence[Any]]
    #: the same rows grouped by profile, when the store read them so (PostgreSQL): then
    #: ``records`` is a view of them, a row's record made when it is read
    groups: ColumnBatch | None = None

    @classmethod
    def grouped(cls, groups: ColumnBatch) -> LoadBatch:
        """The batch of the rows of ``groups`` (its ``records`` a view of them)."""
        return cls(_RowsOfGroups(groups), groups)

    @classmethod
    def of(cls, rows: Iterable[tuple[StoredEntry, int]]) -> LoadBatch:
        """The batch of these (row, its version) pairs (bucket and row hash computed)."""
        return cls([(*row_values(entry), version,
                     *bucket_and_row_hash(entry.gbid, entry.participant_id, version))
                    for entry, version in rows])

    def entries(self) -> Iterator[tuple[StoredEntry, int]]:
        """The rows as (row, its version) pairs."""
        for record in self.records:
            yield StoredEntry(*record[:-3]), record[-3]


#: the profile columns of a ColumnBatch record: COLUMNS but the key and the two times
PROFILE_COLUMNS: Final = tuple(c for c in COLUMNS
                               if c not in ("gbid", "participant_id", "last_seen_ms", "expiry_ms"))
#: the per-row lists of a ColumnBatch record, after its profile values
ROW_LISTS: Final = ("participant_id", "gbid", "version", "last_seen_ms", "expiry_ms", "bucket",
                    "row_hash")
_participant_ids: Final = itemgetter(len(PROFILE_COLUMNS))
_PROFILE_AT: Final = tuple(COLUMNS.index(c) for c in PROFILE_COLUMNS)


@dataclass(frozen=True, slots=True)
class ColumnBatch:
    """A slice of the whole store at one snapshot, grouped by profile: per record the values
    of ``PROFILE_COLUMNS`` (what rows share: the domain, interface, versions, QoS, topic,
    cluster controller), then one list per ``ROW_LISTS`` name holding the values of each row
    with that profile (its participant id, GBID, version, last seen, expiry, bucket and row
    hash, the n-th of each list being one row's). A store that can group in its query hands
    a load over this way: the index takes a record's rows with a few list and array
    operations instead of a Python step per row (gcd.index.DirectoryIndex.load). Two records
    may share a profile (e.g. when a slice splits one)."""

    records: Sequence[Sequence[Any]]

    @classmethod
    def of(cls, rows: Iterable[tuple[StoredEntry, int]]) -> ColumnBatch:
        """The batch of these (row, its version) pairs, grouped by profile in Python (values
        of other types than another row's, such as 1 and True, are another profile)."""
        groups: dict[Any, tuple[list[Any], ...]] = {}
        for entry, version in rows:
            values = row_values(entry)
            profile = tuple(values[i] for i in _PROFILE_AT)
            lists = groups.get((profile, tuple(map(type, profile))))
            if lists is None:
                lists = groups[(profile, tuple(map(type, profile)))] = tuple(
                    [] for _ in ROW_LISTS)
            for column, value in zip(lists, (
                    entry.participant_id, entry.gbid, version, entry.last_seen_ms,
                    entry.expiry_ms, *bucket_and_row_hash(entry.gbid, entry.participant_id,
                                                          version)), strict=True):
                column.append(value)
        return cls([(*profile, *lists) for (profile, _), lists in groups.items()])

    def __len__(self) -> int:
        """The number of rows."""
        return sum(map(len, map(_participant_ids, self.records)))

    def split(self, rows: int) -> list[ColumnBatch]:
        """This batch as slices of whole records of about ``rows`` rows each (at least one
        record each)."""
        ends = list(accumulate(map(len, map(_participant_ids, self.records))))
        slices = []
        start = 0
        while start < len(ends):
            done = ends[start - 1] if start else 0
            end = max(start + 1, bisect_right(ends, done + rows, start))
            slices.append(ColumnBatch(self.records[start:end]))
            start = end
        return slices

    def entries(self) -> Iterator[tuple[StoredEntry, int]]:
        """The rows as (row, its version) pairs."""
        return self.load_batch().entries()

    def load_batch(self) -> LoadBatch:
        """The same rows as a LoadBatch (COLUMNS, version, bucket, row hash per row)."""
        out = []
        for record in self.records:
            profile = record[:len(PROFILE_COLUMNS)]
            for pid, gbid, version, seen, expiry, bucket, hashed in zip(
                    *record[len(PROFILE_COLUMNS):], strict=True):
                out.append((gbid, pid, *profile[:8], seen, expiry, *profile[8:], version,
                            bucket, hashed))
        return LoadBatch(out)


class _RowsOfGroups(Sequence[tuple[Any, ...]]):
    """The records of a grouped LoadBatch, one per row, made when read."""

    __slots__ = ("_ends", "_groups")

    def __init__(self, groups: ColumnBatch) -> None:
        self._groups = groups.records
        self._ends = list(accumulate(map(len, map(_participant_ids, self._groups))))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("record index out of range")
        at = bisect_right(self._ends, index)
        record = self._groups[at]
        n = index - (self._ends[at - 1] if at else 0)
        width = len(PROFILE_COLUMNS)
        pid, gbid, version, seen, expiry, bucket, hashed = (
            values[n] for values in record[width:])
        profile = record[:width]
        return (gbid, pid, *profile[:8], seen, expiry, *profile[8:], version, bucket, hashed)


@dataclass(frozen=True, slots=True)
class RepairRows:
    """Every row of some buckets at snapshot version ``snapshot``."""

    rows: Sequence[tuple[StoredEntry, int]]
    snapshot: int


class TooFarBehind(Exception):
    """``changes_since(V)``: tombstones after V may have been purged (V is older than the
    retention): the caller reloads everything."""


class VersionedStore(GcdStore, Protocol):
    """A :class:`gcd.store.GcdStore` whose writes are versioned and observable.

    The write methods of GcdStore keep their meaning; their ``*_changes`` forms return what
    they committed (each change with its version), which the writing instance applies to its
    own index. A write that changed something wakes the other instances up inside its own
    transaction (PostgreSQL: ``pg_notify(channel, version)``, delivered at commit, never for a
    rolled-back write); SQLite has no peers."""

    async def add_changes(self, entries: Sequence[StoredEntry]) -> list[Change]: ...

    async def remove_changes(self, participant_id: str, gbids: Sequence[str], now_ms: int
                             ) -> tuple[RemoveOutcome, list[Change]]: ...

    async def remove_in_changes(self, participant_ids: Sequence[str], gbid: str
                                ) -> list[Change]: ...

    async def touch_changes(self, cluster_controller_id: str,
                            participant_ids: Sequence[str] | None, last_seen_ms: int,
                            expiry_ms: int) -> list[Change]: ...

    async def remove_stale_changes(self, cluster_controller_id: str, max_last_seen_ms: int
                                   ) -> list[Change]: ...

    async def purge_expired_changes(self, now_ms: int) -> list[Change] | None:
        """Delete the rows expired at ``now_ms``, on one instance of the cluster at a time;
        None when another instance holds the purge lock."""
        ...

    async def current_version(self) -> int: ...

    async def changes_since(self, version: int, limit: int = 10_000) -> ChangeBatch:
        """At most ``limit`` changes after ``version`` (the batch's ``up_to`` is then the last
        one's version); raises TooFarBehind when tombstones after ``version`` may be gone."""
        ...

    def load(self, batch_size: int = 10_000) -> AsyncIterator[LoadBatch | int]:
        """The whole store at one snapshot, in batches of ``batch_size`` rows (the last one
        fewer); the last item yielded is the snapshot's version (an int)."""
        ...

    async def digests(self) -> dict[int, Digest]:
        """The digest of every non-empty bucket."""
        ...

    async def rows_in_buckets(self, buckets: Sequence[int]) -> RepairRows: ...

    async def purge_tombstones(self, older_than_ms: int) -> int:
        """Drop tombstones written before ``older_than_ms`` (epoch ms); how many."""
        ...


class Notifier(Protocol):
    """The listening side of the wake-ups between the instances of one cluster (PostgreSQL
    LISTEN on a channel named after the cluster). What it delivers is a hint: it may be lost,
    duplicated, reordered or late; the synchroniser pulls the changes from the store either
    way. Tests wrap it to drop, duplicate, reorder or delay what it delivers."""

    async def start(self, on_version: Callable[[int], None],
                    on_reconnected: Callable[[], None]) -> None:
        """Listen: ``on_version(v)`` for each notification, ``on_reconnected()`` when the
        listening connection came back after a loss (notifications may have been missed)."""
        ...

    async def stop(self) -> None: ...


class PlainWrites:
    """The GcdStore write methods, answered from a versioned store's ``*_changes`` forms (the
    outcome, or how many rows changed). Both stores inherit them."""

    async def remove_changes(self, participant_id: str, gbids: Sequence[str], now_ms: int
                             ) -> tuple[RemoveOutcome, list[Change]]:
        raise NotImplementedError

    async def remove_in_changes(self, participant_ids: Sequence[str], gbid: str
                                ) -> list[Change]:
        raise NotImplementedError

    async def touch_changes(self, cluster_controller_id: str,
                            participant_ids: Sequence[str] | None, last_seen_ms: int,
                            expiry_ms: int) -> list[Change]:
        raise NotImplementedError

    async def remove_stale_changes(self, cluster_controller_id: str, max_last_seen_ms: int
                                   ) -> list[Change]:
        raise NotImplementedError

    async def purge_expired_changes(self, now_ms: int) -> list[Change] | None:
        raise NotImplementedError

    async def remove(self, participant_id: str, gbids: Sequence[str], now_ms: int
                     ) -> RemoveOutcome:
        return (await self.remove_changes(participant_id, gbids, now_ms))[0]

    async def remove_in_backends(self, participant_ids: Sequence[str], gbid: str) -> int:
        return len(await self.remove_in_changes(participant_ids, gbid))

    async def touch(self, cluster_controller_id: str, participant_ids: Sequence[str] | None,
                    last_seen_ms: int, expiry_ms: int) -> int:
        return len(await self.touch_changes(cluster_controller_id, participant_ids,
                                            last_seen_ms, expiry_ms))

    async def remove_stale(self, cluster_controller_id: str, max_last_seen_ms: int) -> int:
        return len(await self.remove_stale_changes(cluster_controller_id, max_last_seen_ms))

    async def purge_expired(self, now_ms: int) -> int:
        return len(await self.purge_expired_changes(now_ms) or ())

"""The in-memory directory index of one GCD instance (pure: no I/O, no asyncio).

:class:`DirectoryIndex` holds every stored row, keyed (gbid, participant_id), with its version
and its shared parameters (:mod:`gcd.params`), and answers the GCD's reads the way the store
does (:meth:`DirectoryIndex.find`, :meth:`DirectoryIndex.find_participant`: same rows, same
order, expired rows hidden). It is kept in sync with the store by the rules of
:mod:`gcd.changes`:

- :meth:`~DirectoryIndex.apply` a writer's own committed changes, :meth:`~DirectoryIndex.
  apply_batch` a catch-up batch (which moves the watermark W). A change is applied iff its
  version is above W and above the version the index knows for its key; the versions of
  deleted keys are kept while they are above W (index tombstones) and dropped once W passes
  them.
- :meth:`~DirectoryIndex.load` the store's rows at start-up (or on a full reload), then
  :meth:`~DirectoryIndex.finish_load` with the snapshot's version: W moves there, and rows the
  index held or gained meanwhile that the snapshot does not have (version <= snapshot) go.
  While a load runs the index keeps its tombstones even when W passes them, so that a row of
  the snapshot deleted meanwhile stays deleted; call :meth:`~DirectoryIndex.begin_load`
  before the store's snapshot is taken when changes may be applied during the load.
- :meth:`~DirectoryIndex.digests` per key bucket, kept on every change, and
  :meth:`~DirectoryIndex.repair` of differing buckets from the store's rows at a snapshot S,
  never touching a key whose index version is above S. A repair made while W <= S leaves its
  buckets a floor S: a change at or below it to a key of those buckets is ignored like one at
  or below W (the repair reflected it; so a late change cannot bring back what the repair
  removed). This only ignores changes the index already reflects: the rule of
  :mod:`gcd.changes` ("applied when above W and above what the index knows for the key")
  with the repair's knowledge counted in.

Statistics (:meth:`~DirectoryIndex.stats`) are kept as the index changes: no call counts rows.

Memory: one small slotted object per row (its gbid, version and shared parameters); per
participant one dict slot (the row, or a tuple of its rows ordered by gbid); per (domain,
interface) and per cluster controller a dict of rows (as an ordered set); per bucket a list of
rows. No dict per row; repeated strings are interned (figures: bench/gcd_index_memory.py).
"""

from __future__ import annotations

import heapq
import operator
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pyjoynr.gcd.changes import (
    BUCKETS,
    Change,
    ChangeBatch,
    Digest,
    LoadBatch,
    RepairRows,
    bucket_and_row_hash,
    bucket_of,
    row_hash,
)
from pyjoynr.gcd.params import ParamsTable, SharedParams, params_of_record
from pyjoynr.gcd.store import StoredEntry

__all__ = ["DirectoryIndex", "IndexStats"]

Key = tuple[str, str]
_K = TypeVar("_K")


class _Row:
    """One stored row: its GBID, version and shared parameters. The object stays the same
    while its key is in the index (a change replaces version and parameters in place)."""

    __slots__ = ("gbid", "params", "version")

    def __init__(self, gbid: str, version: int, params: SharedParams) -> None:
        self.gbid = gbid
        self.version = version
        self.params = params

    @property
    def key(self) -> Key:
        return (self.gbid, self.params.participant_id)

    def entry(self) -> StoredEntry:
        return self.params.to_entry(self.gbid)


def _gbid_of(row: _Row) -> str:
    return row.gbid


#: the order of find()'s rows: (participant_id, gbid) (attrgetter: no Python call per row)
_find_order: Final = operator.attrgetter("params.participant_id", "gbid")


@dataclass(frozen=True, slots=True)
class IndexStats:
    """What the index holds, for operators (every figure is kept, none is counted per call)."""

    #: rows held (expired ones included until they are purged from the store)
    rows: int
    #: distinct participants with at least one row
    participants: int
    #: shared parameter objects, and the sum of their reference counts (== rows)
    shared_params: int
    param_refs: int
    #: versions of deleted keys kept while above the watermark
    tombstones: int
    #: every change up to this version is reflected
    watermark: int
    #: changes applied and changes ignored as not newer (since the index was made)
    changes_applied: int
    changes_ignored: int
    #: keys changed by repair runs (since the index was made)
    keys_repaired: int
    #: a load is under way (between the first load() and finish_load())
    loading: bool


class DirectoryIndex:
    """Every stored row of a GCD in memory, with the lookup paths of the GCD and the version
    rules of :mod:`gcd.changes` (see the module docstring)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._params = ParamsTable()
        # participant_id -> its row, or its rows (2 or more) ordered by gbid
        self._by_pid: dict[str, _Row | tuple[_Row, ...]] = {}
        self._by_interface: dict[tuple[str, str], dict[_Row, None]] = {}
        self._by_cc: dict[str, dict[_Row, None]] = {}
        self._bucket_rows: list[list[_Row]] = [[] for _ in range(BUCKETS)]
        self._bucket_count = [0] * BUCKETS
        self._bucket_versions = [0] * BUCKETS
        self._bucket_hashes = [0] * BUCKETS
        self._rows = 0
        self._tombstones: dict[Key, int] = {}
        # (version, gbid, participant_id) of tombstones, to drop them when W passes them
        # (entries of keys re-added or deleted again since are skipped when they come up)
        self._tombstone_heap: list[tuple[int, str, str]] = []
        self._watermark = 0
        # per bucket: the snapshot version of the last complete repair of the bucket (its keys
        # reflect every change up to it), and the highest of them
        self._floors = [0] * BUCKETS
        self._floor_max = 0
        # between the first load() and finish_load(): rows that may have to go when the
        # snapshot does not have them (held before the load, or added while it ran by a change
        # or a repair)
        self._sweep: set[_Row] | None = None
        self._applied = 0
        self._ignored = 0
        self._repaired = 0

    # -- lookups (the reads of gcd.store.GcdStore) ---------------------------------------------

    def find(self, domains: Iterable[str], interface_name: str, now_ms: int
             ) -> list[StoredEntry]:
        """Live rows (``expiry_ms >= now_ms``) of any GBID in one of ``domains`` with
        ``interface_name``, each once, ordered by participant_id, gbid (as GcdStore.find)."""
        return [row.params.to_entry(row.gbid)
                for row in self._live(domains, interface_name, now_ms)]

    def find_shared(self, domains: Iterable[str], interface_name: str, now_ms: int
                    ) -> list[tuple[str, SharedParams]]:
        """The rows of :meth:`find` as (gbid, shared parameters), in its order: what a
        lookup answers, without a StoredEntry made per row (the objects are the index's own:
        immutable, never to be released by the caller)."""
        return [(row.gbid, row.params) for row in self._live(domains, interface_name, now_ms)]

    def _live(self, domains: Iterable[str], interface_name: str, now_ms: int) -> list[_Row]:
        found: list[_Row] = []
        groups = self._by_interface
        for domain in set(domains):
            group = groups.get((domain, interface_name))
            if group:
                found.extend([row for row in group if row.params.expiry_ms >= now_ms])
        found.sort(key=_find_order)
        return found

    def find_participant(self, participant_id: str, now_ms: int) -> list[StoredEntry]:
        """Live rows of ``participant_id`` (one per GBID), ordered by gbid (as
        GcdStore.find_participant)."""
        return [row.params.to_entry(row.gbid) for row in self._rows_of(participant_id)
                if row.params.expiry_ms >= now_ms]

    def find_participant_shared(self, participant_id: str, now_ms: int
                                ) -> list[tuple[str, SharedParams]]:
        """The rows of :meth:`find_participant` as (gbid, shared parameters), in its order."""
        return [(row.gbid, row.params) for row in self._rows_of(participant_id)
                if row.params.expiry_ms >= now_ms]

    def gbids_of(self, participant_id: str, now_ms: int) -> list[str]:
        """The GBIDs in which ``participant_id`` has a live row, in code-point order."""
        return [row.gbid for row in self._rows_of(participant_id)
                if row.params.expiry_ms >= now_ms]

    def keys_of_cluster_controller(self, cluster_controller_id: str) -> list[Key]:
        """The keys of that cluster controller's rows (expired or not), ordered."""
        group = self._by_cc.get(cluster_controller_id)
        return sorted(row.key for row in group) if group else []

    def get(self, gbid: str, participant_id: str) -> StoredEntry | None:
        """The row of a key, expired or not."""
        row = self._row(gbid, participant_id)
        return None if row is None else row.entry()

    def version_of(self, gbid: str, participant_id: str) -> int | None:
        """The version the index knows for a key: its row's, or its tombstone's."""
        row = self._row(gbid, participant_id)
        if row is not None:
            return row.version
        return self._tombstones.get((gbid, participant_id))

    def shared_params_of(self, gbid: str, participant_id: str) -> SharedParams | None:
        """The shared parameter object a key's row holds."""
        row = self._row(gbid, participant_id)
        return None if row is None else row.params

    def rows(self) -> Iterator[tuple[StoredEntry, int]]:
        """Every row with its version, in no particular order (O(rows): tests, tools)."""
        for value in self._by_pid.values():
            for row in (value,) if isinstance(value, _Row) else value:
                yield row.entry(), row.version

    def shared_params(self) -> Iterator[SharedParams]:
        """Every shared parameter object (its ``refs`` is the number of keys using it)."""
        return iter(self._params)

    def __len__(self) -> int:
        return self._rows

    @property
    def watermark(self) -> int:
        return self._watermark

    @property
    def loading(self) -> bool:
        return self._sweep is not None

    def stats(self) -> IndexStats:
        return IndexStats(rows=self._rows, participants=len(self._by_pid),
                          shared_params=len(self._params), param_refs=self._params.total_refs,
                          tombstones=len(self._tombstones), watermark=self._watermark,
                          changes_applied=self._applied, changes_ignored=self._ignored,
                          keys_repaired=self._repaired, loading=self._sweep is not None)

    # -- changes -------------------------------------------------------------------------------

    def apply(self, changes: Iterable[Change]) -> int:
        """Apply committed changes (a writer's own) without moving the watermark; how many
        were applied (the others were not newer than what the index knows)."""
        applied = 0
        for change in changes:
            if self._apply_one(change):
                applied += 1
        self._applied += applied
        return applied

    def apply_batch(self, batch: ChangeBatch) -> int:
        """Apply a catch-up batch and move the watermark to its ``up_to``; how many changes
        were applied."""
        applied = self.apply(batch.changes)
        self._advance(batch.up_to)
        return applied

    def _apply_one(self, change: Change) -> bool:
        version = change.version
        entry = change.entry
        gbid, participant_id = change.gbid, change.participant_id
        if entry is not None and (entry.gbid != gbid or entry.participant_id != participant_id):
            raise ValueError(f"change of key {change.key!r} carries the row of {entry.key!r}")
        if version <= self._watermark or (
                version <= self._floor_max
                and version <= self._floors[bucket_of(gbid, participant_id)]):
            self._ignored += 1
            return False
        row = self._row(gbid, participant_id)
        known = row.version if row is not None else self._tombstones.get((gbid, participant_id))
        if known is not None and version <= known:
            self._ignored += 1
            return False
        if entry is None:
            if row is not None:
                self._delete(row)
            self._set_tombstone(gbid, participant_id, version)
        elif row is not None:
            self._replace(row, entry, version)
        else:
            self._insert(entry, version)
        return True

    def _advance(self, version: int) -> None:
        if version <= self._watermark:
            return
        self._watermark = version
        if self._sweep is None:  # a load keeps its tombstones until it finishes (see load)
            self._drop_tombstones()

    def _drop_tombstones(self) -> None:
        version = self._watermark
        heap, tombstones = self._tombstone_heap, self._tombstones
        while heap and heap[0][0] <= version:
            tombstone_version, gbid, participant_id = heapq.heappop(heap)
            key = (gbid, participant_id)
            if tombstones.get(key) == tombstone_version:
                del tombstones[key]

    def _set_tombstone(self, gbid: str, participant_id: str, version: int) -> None:
        if version > self._watermark:
            self._tombstones[(gbid, participant_id)] = version
            heapq.heappush(self._tombstone_heap, (version, gbid, participant_id))

    # -- start-up load -------------------------------------------------------------------------

    def begin_load(self) -> None:
        """Start a load (start-up, or a full reload of a non-empty index). Call it before the
        store's snapshot is taken when changes may be applied while the load runs (the first
        :meth:`load` calls it otherwise): from here until :meth:`finish_load` the index keeps
        the versions of deleted keys even when the watermark passes them, so that a row of the
        snapshot deleted meanwhile is not brought back."""
        if self._sweep is None:
            self._sweep = {row for value in self._by_pid.values()
                           for row in ((value,) if isinstance(value, _Row) else value)}

    def load(self, rows: LoadBatch | Iterable[tuple[StoredEntry, int]]) -> int:
        """Load a batch of the store's rows at one snapshot (a store's LoadBatch, or (row, its
        version) pairs); how many rows were taken (a key the index knows at the same or a
        newer version keeps what it has). Lookups work throughout; call :meth:`finish_load`
        with the snapshot's version after the last batch."""
        self.begin_load()
        if isinstance(rows, LoadBatch):
            return self._load_records(rows.records)
        taken = 0
        for entry, version in rows:
            taken += self._load_one(entry, version)
        return taken

    def _load_records(self, records: Iterable[Sequence[Any]]) -> int:
        """:meth:`load` of a store's records (LoadBatch: values in COLUMNS order, then the
        version, the key's bucket and the row hash as the store keeps them).

        Most rows of a load are new keys in an index that has no tombstones and no repair
        floors (a start-up, a reload into a fresh index): those are inserted here without a
        StoredEntry (the shared parameters are made straight from the record:
        params.params_of_record) and with the bucket and row hash the store wrote with the row
        (the store's digests sum the same columns). Every other row takes :meth:`_load_one`,
        the general rule. (Costs a reader this second spelling of :meth:`_insert`; a test
        checks that both build the same index.)"""
        by_pid, by_interface, by_cc = self._by_pid, self._by_interface, self._by_cc
        bucket_rows, counts = self._bucket_rows, self._bucket_count
        versions, hashes = self._bucket_versions, self._bucket_hashes
        tombstones, adopt = self._tombstones, self._params.adopt
        floor_max = self._floor_max  # (repairs change it, never a load)
        make_params, intern = params_of_record, sys.intern
        taken = inserted = 0  # (_load_one counts its own rows in self._rows)
        for record in records:
            gbid, participant_id = record[0], record[1]
            version, bucket, hashed = record[-3], record[-2], record[-1]
            if (participant_id in by_pid or floor_max
                    or (tombstones and (gbid, participant_id) in tombstones)
                    or not 0 <= bucket < BUCKETS):
                taken += self._load_one(StoredEntry(*record[:-3]), version)
                continue
            params = adopt(make_params(record))
            row = _Row(intern(gbid), version, params)
            by_pid[params.participant_id] = row
            group_key = (params.domain, params.interface_name)
            group = by_interface.get(group_key)
            if group is None:
                group = by_interface[group_key] = {}
            group[row] = None
            group = by_cc.get(params.cluster_controller_id)
            if group is None:
                group = by_cc[params.cluster_controller_id] = {}
            group[row] = None
            bucket_rows[bucket].append(row)
            counts[bucket] += 1
            versions[bucket] += version
            hashes[bucket] += hashed
            inserted += 1
        self._rows += inserted
        return taken + inserted

    def _load_one(self, entry: StoredEntry, version: int) -> int:
        """One row of a load (1: taken, 0: the index keeps what it has)."""
        sweep = self._sweep
        assert sweep is not None
        row = self._row(entry.gbid, entry.participant_id)
        if row is not None:
            sweep.discard(row)  # the snapshot has it
            if version > row.version:
                self._replace(row, entry, version)
                return 1
            return 0
        tombstone = self._tombstones.get(entry.key)
        if tombstone is not None and version <= tombstone:
            return 0  # deleted after the snapshot
        if version <= self._floor_max and version <= self._floors[
                bucket_of(entry.gbid, entry.participant_id)]:
            return 0  # a repair since saw the key absent at a later version
        self._insert(entry, version, swept=False)  # the snapshot has it
        return 1

    def finish_load(self, snapshot_version: int) -> int:
        """End a load at the snapshot's version: rows the snapshot did not have (held before
        the load or applied while it ran, at a version up to the snapshot's) go, and the
        watermark moves to the snapshot's version. How many rows went."""
        self.begin_load()
        sweep, self._sweep = self._sweep, None
        assert sweep is not None
        dropped = 0
        for row in sweep:
            if row.version <= snapshot_version and self._row(*row.key) is row:
                self._delete(row)
                self._set_tombstone(row.gbid, row.params.participant_id, snapshot_version)
                dropped += 1
        self._watermark = max(self._watermark, snapshot_version)
        self._drop_tombstones()
        return dropped

    def clear(self) -> None:
        """Drop everything (shutdown): no rows, no tombstones, watermark 0."""
        self._params.clear()
        self._reset()

    # -- drift repair --------------------------------------------------------------------------

    def digest(self, bucket: int) -> Digest:
        return Digest(self._bucket_count[bucket], self._bucket_versions[bucket],
                      self._bucket_hashes[bucket])

    def digests(self) -> dict[int, Digest]:
        """The digest of every non-empty bucket (as VersionedStore.digests)."""
        counts, versions, hashes = (self._bucket_count, self._bucket_versions,
                                    self._bucket_hashes)
        return {b: Digest(counts[b], versions[b], hashes[b])
                for b in range(BUCKETS) if counts[b]}

    def repair(self, store_rows: RepairRows, buckets: Iterable[int]) -> int:
        """Make ``buckets`` hold what the store held at ``store_rows.snapshot`` (S): a key
        whose index version (row or tombstone) is above S is left as it is; every other key
        of these buckets takes the store's row, or goes when the store has none (an absent
        key is only added when neither the watermark nor an earlier repair of its bucket is
        above S: its absence may be newer). How many keys changed. (Store rows outside
        ``buckets`` are ignored.)

        Afterwards (when the watermark was not above S) a change at or below S to a key of
        these buckets is ignored like one at or below the watermark: the repair reflected
        it already, so a late delivery cannot bring back what the repair removed."""
        snapshot = store_rows.snapshot
        wanted = set(buckets)
        stored: dict[Key, tuple[StoredEntry, int]] = {}
        for entry, version in store_rows.rows:
            if bucket_of(entry.gbid, entry.participant_id) in wanted:
                stored[entry.key] = (entry, version)
        repaired = 0
        for bucket in wanted:
            for held in list(self._bucket_rows[bucket]):
                if held.key not in stored and held.version <= snapshot:
                    self._delete(held)
                    self._set_tombstone(held.gbid, held.params.participant_id, snapshot)
                    repaired += 1
        for key, (entry, version) in stored.items():
            row = self._row(*key)
            if row is not None:
                if row.version > snapshot or (row.version == version
                                              and row.params.matches(entry)):
                    continue
                self._replace(row, entry, version)
            else:
                # absent: deleted at its tombstone's version, or (without one) at a version up
                # to W; either may be newer than the snapshot
                tombstone = self._tombstones.get(key)
                if (self._watermark > snapshot or self._floors[bucket_of(*key)] > snapshot
                        or (tombstone is not None and tombstone > snapshot)):
                    continue
                self._insert(entry, version)
            repaired += 1
        if self._watermark <= snapshot:
            # nothing was skipped for want of knowledge: these buckets now reflect every
            # change up to the snapshot, and a change at or below it is old news for them
            floors = self._floors
            for bucket in wanted:
                floors[bucket] = max(floors[bucket], snapshot)
            self._floor_max = max(self._floor_max, snapshot)
        self._repaired += repaired
        return repaired

    # -- the rows and their paths --------------------------------------------------------------

    def _rows_of(self, participant_id: str) -> tuple[_Row, ...]:
        value = self._by_pid.get(participant_id)
        if value is None:
            return ()
        return (value,) if isinstance(value, _Row) else value

    def _row(self, gbid: str, participant_id: str) -> _Row | None:
        value = self._by_pid.get(participant_id)
        if value is None:
            return None
        if isinstance(value, _Row):
            return value if value.gbid == gbid else None
        for row in value:
            if row.gbid == gbid:
                return row
        return None

    def _insert(self, entry: StoredEntry, version: int, *, swept: bool = True) -> _Row:
        gbid = sys.intern(entry.gbid)
        participant_id = entry.participant_id
        siblings = self._rows_of(participant_id)
        params = self._params.acquire(
            entry, participant_id=siblings[0].params.participant_id if siblings else None)
        row = _Row(gbid, version, params)
        participant_id = params.participant_id
        if not siblings:
            self._by_pid[participant_id] = row
        else:
            self._by_pid[participant_id] = tuple(sorted((*siblings, row), key=_gbid_of))
        self._by_interface.setdefault((params.domain, params.interface_name), {})[row] = None
        self._by_cc.setdefault(params.cluster_controller_id, {})[row] = None
        bucket, hashed = bucket_and_row_hash(gbid, participant_id, version)
        self._bucket_rows[bucket].append(row)
        self._bucket_count[bucket] += 1
        self._bucket_versions[bucket] += version
        self._bucket_hashes[bucket] += hashed
        self._rows += 1
        self._tombstones.pop((gbid, participant_id), None)
        if swept and self._sweep is not None:  # a load runs: its snapshot decides (see
            self._sweep.add(row)                # finish_load), unless the row comes from it
        return row

    def _replace(self, row: _Row, entry: StoredEntry, version: int) -> None:
        old = row.params
        gbid, participant_id = row.gbid, old.participant_id
        bucket = bucket_of(gbid, participant_id)
        self._bucket_versions[bucket] += version - row.version
        self._bucket_hashes[bucket] += (row_hash(gbid, participant_id, version)
                                        - row_hash(gbid, participant_id, row.version))
        row.version = version
        if old.matches(entry):
            return
        new = self._params.acquire(entry, participant_id=participant_id)
        if (old.domain, old.interface_name) != (new.domain, new.interface_name):
            self._unlink(self._by_interface, (old.domain, old.interface_name), row)
            self._by_interface.setdefault((new.domain, new.interface_name), {})[row] = None
        if old.cluster_controller_id != new.cluster_controller_id:
            self._unlink(self._by_cc, old.cluster_controller_id, row)
            self._by_cc.setdefault(new.cluster_controller_id, {})[row] = None
        row.params = new
        self._params.release(old)

    def _delete(self, row: _Row) -> None:
        params = row.params
        gbid, participant_id = row.gbid, params.participant_id
        siblings = self._rows_of(participant_id)
        if len(siblings) == 1:
            del self._by_pid[participant_id]
        else:
            rest = tuple(r for r in siblings if r is not row)
            self._by_pid[participant_id] = rest[0] if len(rest) == 1 else rest
        self._unlink(self._by_interface, (params.domain, params.interface_name), row)
        self._unlink(self._by_cc, params.cluster_controller_id, row)
        bucket = bucket_of(gbid, participant_id)
        self._bucket_rows[bucket].remove(row)
        self._bucket_count[bucket] -= 1
        self._bucket_versions[bucket] -= row.version
        self._bucket_hashes[bucket] -= row_hash(gbid, participant_id, row.version)
        self._rows -= 1
        self._params.release(params)
        if self._sweep is not None:
            self._sweep.discard(row)

    @staticmethod
    def _unlink(groups: dict[_K, dict[_Row, None]], group_key: _K, row: _Row) -> None:
        group = groups[group_key]
        del group[row]
        if not group:
            del groups[group_key]


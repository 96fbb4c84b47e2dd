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

Memory (figures: bench/gcd_startup.py): the rows are columns, not objects. A row is a slot
number; per slot the index keeps its participant id and GBID (references to strings: a
participant's id is one object), its version, last seen and expiry time (int64 arrays), its
profile id and its places in its groups (uint32 arrays). A profile is every parameter but the
participant id, last seen and expiry (the domain, interface, versions, QoS, topic, cluster
controller...: what a fleet repeats), kept once as a tuple of interned values with a count
of the rows using it. Per participant one dict slot (the row's slot, or a tuple of its slots
ordered by gbid); per (domain, interface), per cluster controller and per bucket an array of
slots. A row whose values are not of the store's types (an int where a bool is kept, an
expiry beyond int64) keeps them in a dict beside the columns. A lookup answers
:data:`gcd.params.Found` tuples (participant id, GBID, last seen, expiry, the row's profile
tuple itself): one tuple per row and no other object, as few as an index of row objects made.
:class:`SharedParams` objects are made when asked for: :meth:`DirectoryIndex.shared_params_of`
keeps the object it made while a row has its parameters (its ``refs`` counts the keys with
them).
(Costs a reader: a row is read through ``self._column[slot]`` rather than an attribute, and
the load spells the insert out inline; a test holds the two loads equal.)
"""

from __future__ import annotations

import heapq
import operator
import sys
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any, Final, TypeVar, cast

from pyjoynr.gcd.changes import (
    BUCKETS,
    Change,
    ChangeBatch,
    ColumnBatch,
    Digest,
    LoadBatch,
    RepairRows,
    bucket_and_row_hash,
    bucket_of,
    row_hash,
)
from pyjoynr.gcd.params import (
    HASHED_FIELDS,
    INTERNED_FIELDS,
    PROFILE_FIELDS,
    Found,
    Profile,
    SharedParams,
    _set_refs,
    same_values,
)
from pyjoynr.gcd.store import StoredEntry, new_entry
from pyjoynr.gcd.store import _new_entry as _make_entry

__all__ = ["DirectoryIndex", "IndexStats"]

Key = tuple[str, str]
_K = TypeVar("_K")

#: the values of an entry's shared parameters (gcd.params.HASHED_FIELDS order)
_values_of: Final = operator.attrgetter(*HASHED_FIELDS)
#: positions in HASHED_FIELDS of the values a row keeps in its profile (all but the
#: participant id, last seen and expiry: what repeats across the rows of a fleet)
_PROFILE_AT: Final = tuple(i for i, name in enumerate(HASHED_FIELDS)
                           if name not in ("participant_id", "last_seen_ms", "expiry_ms"))
assert tuple(HASHED_FIELDS[i] for i in _PROFILE_AT) == PROFILE_FIELDS
#: the type every profile value has in the store (others make a row "odd", see below)
_PROFILE_TYPES: Final = tuple({"major_version": int, "minor_version": int, "priority": int,
                               "supports_on_change": bool}.get(HASHED_FIELDS[i], str)
                              for i in _PROFILE_AT)
_INTERNED_AT: Final = frozenset(i for i, name in enumerate(HASHED_FIELDS)
                                if name in INTERNED_FIELDS)
_SEEN_AT: Final = HASHED_FIELDS.index("last_seen_ms")
_EXPIRY_AT: Final = HASHED_FIELDS.index("expiry_ms")
#: the range of the int64 columns
_I64_MIN: Final = -(2 ** 63)
_I64_MAX: Final = 2 ** 63 - 1
#: the profile id of an odd row: its values are in DirectoryIndex._odd
_ODD: Final = 0
#: the profile values of a load record (gbid, HASHED_FIELDS..., version, bucket, hash)
_record_profile: Final = operator.itemgetter(*(i + 1 for i in _PROFILE_AT))


def _profile_key(values: Sequence[Any]) -> tuple[Any, ...] | None:
    """The profile of parameter values (HASHED_FIELDS order), or None when a value is not of
    the store's type (1 and True are one dict key: only typed values share a profile)."""
    profile = tuple(values[i] for i in _PROFILE_AT)
    if tuple(map(type, profile)) != _PROFILE_TYPES:
        return None
    return profile


def _in_columns(seen: object, expiry: object) -> bool:
    return (type(seen) is int and type(expiry) is int
            and _I64_MIN <= seen <= _I64_MAX and _I64_MIN <= expiry <= _I64_MAX)


def _live_bound(expiry: object) -> int:
    """An odd row's expiry as the int64 column compares it with a time (``>= now``)."""
    if type(expiry) is bool or type(expiry) is int:
        return max(_I64_MIN, min(_I64_MAX, int(expiry)))
    return _I64_MIN  # (None: never live)


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
        self._views: dict[str, dict[Any, SharedParams]] = {}
        self._reset()

    def _reset(self) -> None:
        # the rows, one slot each (a slot of a deleted row is taken again by the next insert)
        self._pid: list[str | None] = []
        self._gbid: list[str | None] = []
        self._version = array("q")
        self._seen = array("q")
        self._expiry = array("q")
        self._profile_of = array("I")
        # a row's place in its (domain, interface) group and in its cluster controller's
        # group (a row leaves a group by taking the group's last row into its place; a bucket,
        # some 250 rows at a million, is searched)
        self._at_interface = array("I")
        self._at_cc = array("I")
        self._free: list[int] = []
        # the profiles: id -> values (id 0: odd rows, see _odd), the rows using each, by value
        self._profiles: list[Profile | None] = [None]
        self._profile_refs: list[int] = [0]
        self._profile_ids: dict[tuple[Any, ...], int] = {}
        self._free_profiles: list[int] = []
        # rows whose values do not fit the columns: slot -> parameter values
        self._odd: dict[int, tuple[Any, ...]] = {}
        # participant_id -> its row's slot, or its rows' slots (2 or more) ordered by gbid
        self._by_pid: dict[str, int | tuple[int, ...]] = {}
        self._by_interface: dict[tuple[Any, Any], array[int]] = {}
        self._by_cc: dict[Any, array[int]] = {}
        self._bucket_rows: list[array[int]] = [array("I") for _ in range(BUCKETS)]
        self._bucket_count = [0] * BUCKETS
        self._bucket_versions = [0] * BUCKETS
        self._bucket_hashes = [0] * BUCKETS
        self._rows = 0
        # distinct parameter sets (a participant's rows with equal parameters count once)
        self._param_sets = 0
        for views in self._views.values():
            for view in views.values():
                _set_refs(view, 0)
        self._views = {}
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
        self._sweep: set[int] | None = None
        self._applied = 0
        self._ignored = 0
        self._repaired = 0

    # -- lookups (the reads of gcd.store.GcdStore) ---------------------------------------------

    def find(self, domains: Iterable[str], interface_name: str, now_ms: int
             ) -> list[StoredEntry]:
        """Live rows (``expiry_ms >= now_ms``) of any GBID in one of ``domains`` with
        ``interface_name``, each once, ordered by participant_id, gbid (as GcdStore.find)."""
        return _entries(self.find_shared(domains, interface_name, now_ms))

    def find_shared(self, domains: Iterable[str], interface_name: str, now_ms: int
                    ) -> list[Found]:
        """The rows of :meth:`find` as looked-up rows (gcd.params.Found: the participant id,
        gbid, last seen, expiry and the row's Profile, the index's own object: immutable), in
        its order: what a lookup answers, one tuple per row and no other object made."""
        if self._odd:  # (rows whose values are not in the columns: rare, see _set_params)
            return [self._found(slot) for slot in self._live(domains, interface_name, now_ms)]
        found: list[Found] = []
        groups, expiry = self._by_interface, self._expiry
        # (no odd row: every slot of a group has its strings and a profile)
        pids: list[str] = self._pid  # type: ignore[assignment]
        gbids: list[str] = self._gbid  # type: ignore[assignment]
        profiles: list[Profile] = self._profiles  # type: ignore[assignment]
        seen, profile_of = self._seen, self._profile_of
        for domain in set(domains):
            group = groups.get((domain, interface_name))
            if group:
                found.extend([
                    (pids[slot], gbids[slot], seen[slot], until, profiles[profile_of[slot]])
                    for slot in group if (until := expiry[slot]) >= now_ms])
        if len(found) > 1:
            found.sort()  # (by participant id, then gbid: a key is one row)
        return found

    def _live(self, domains: Iterable[str], interface_name: str, now_ms: int) -> list[int]:
        found: list[int] = []
        groups, expiry = self._by_interface, self._expiry
        for domain in set(domains):
            group = groups.get((domain, interface_name))
            if group:
                found.extend([slot for slot in group if expiry[slot] >= now_ms])
        if len(found) > 1:
            pids, gbids = self._pid, self._gbid
            found.sort(key=lambda slot: (pids[slot], gbids[slot]))
        return found

    def _live_of(self, participant_id: str, now_ms: int) -> list[int]:
        expiry = self._expiry
        return [slot for slot in self._rows_of(participant_id) if expiry[slot] >= now_ms]

    def find_participant(self, participant_id: str, now_ms: int) -> list[StoredEntry]:
        """Live rows of ``participant_id`` (one per GBID), ordered by gbid (as
        GcdStore.find_participant)."""
        value = self._by_pid.get(participant_id)
        if type(value) is not int:
            return _entries(self.find_participant_shared(participant_id, now_ms))
        slot = value  # (one row: most participants; as _entries makes it)
        until = self._expiry[slot]
        profile = self._profiles[self._profile_of[slot]]
        if until < now_ms or profile is None:
            return _entries(self.find_participant_shared(participant_id, now_ms))
        (domain, interface_name, major_version, minor_version, priority, scope,
         supports_on_change, custom_parameters, public_key_id, topic,
         cluster_controller_id) = profile
        return [_make_entry(self._gbid[slot], participant_id, domain, interface_name,
                            major_version, minor_version, priority, scope, supports_on_change,
                            custom_parameters, self._seen[slot], until, public_key_id, topic,
                            cluster_controller_id)]

    def find_participant_shared(self, participant_id: str, now_ms: int) -> list[Found]:
        """The rows of :meth:`find_participant` as looked-up rows (see :meth:`find_shared`),
        in its order."""
        value = self._by_pid.get(participant_id)
        if value is None:
            return []
        if type(value) is int:  # (one row: most participants)
            slot = value
            until = self._expiry[slot]
            if until < now_ms:
                return []
            profile = self._profiles[self._profile_of[slot]]
            if profile is None:
                return [self._found(slot)]
            # (the participant id asked for: equal to the row's, and one read fewer)
            found: Found = (participant_id, self._gbid[slot],  # type: ignore[assignment]
                            self._seen[slot], until, profile)
            return [found]
        return [self._found(slot) for slot in self._live_of(participant_id, now_ms)]

    def gbids_of(self, participant_id: str, now_ms: int) -> list[str]:
        """The GBIDs in which ``participant_id`` has a live row, in code-point order."""
        gbids = self._gbid
        return [cast(str, gbids[slot]) for slot in self._live_of(participant_id, now_ms)]

    def keys_of_cluster_controller(self, cluster_controller_id: str) -> list[Key]:
        """The keys of that cluster controller's rows (expired or not), ordered."""
        group = self._by_cc.get(cluster_controller_id)
        return sorted(self._key(slot) for slot in group) if group else []

    def get(self, gbid: str, participant_id: str) -> StoredEntry | None:
        """The row of a key, expired or not."""
        slot = self._row(gbid, participant_id)
        return None if slot is None else self._entry(slot)

    def version_of(self, gbid: str, participant_id: str) -> int | None:
        """The version the index knows for a key: its row's, or its tombstone's."""
        slot = self._row(gbid, participant_id)
        if slot is not None:
            return self._version[slot]
        return self._tombstones.get((gbid, participant_id))

    def shared_params_of(self, gbid: str, participant_id: str) -> SharedParams | None:
        """The shared parameter object a key's row holds (made on first request, then kept
        while a row has its parameters; its ``refs`` counts the keys with them)."""
        slot = self._row(gbid, participant_id)
        return None if slot is None else self._view(slot)

    def rows(self) -> Iterator[tuple[StoredEntry, int]]:
        """Every row with its version, in no particular order (O(rows): tests, tools)."""
        for slot in self._slots():
            yield self._entry(slot), self._version[slot]

    def shared_params(self) -> Iterator[SharedParams]:
        """Every shared parameter object (its ``refs`` is the number of keys using it; O(rows):
        tests, tools)."""
        return iter({id(view): view for view in map(self._view, list(self._slots()))}.values())

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
                          shared_params=self._param_sets, param_refs=self._rows,
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
        slot = self._row(gbid, participant_id)
        known = (self._version[slot] if slot is not None
                 else self._tombstones.get((gbid, participant_id)))
        if known is not None and version <= known:
            self._ignored += 1
            return False
        if entry is None:
            if slot is not None:
                self._delete(slot)
            self._set_tombstone(gbid, participant_id, version)
        elif slot is not None:
            self._replace(slot, entry, version)
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
            self._sweep = set(self._slots())

    def load(self, rows: LoadBatch | ColumnBatch | Iterable[tuple[StoredEntry, int]]) -> int:
        """Load a batch of the store's rows at one snapshot (a store's LoadBatch or
        ColumnBatch, or (row, its version) pairs); how many rows were taken (a key the index
        knows at the same or a newer version keeps what it has). Lookups work throughout;
        call :meth:`finish_load` with the snapshot's version after the last batch."""
        self.begin_load()
        if isinstance(rows, LoadBatch):
            if rows.groups is not None:
                return self._load_columns(rows.groups)
            return self._load_records(rows.records)
        if isinstance(rows, ColumnBatch):
            return self._load_columns(rows)
        taken = 0
        for entry, version in rows:
            taken += self._load_one(entry, version)
        return taken

    def _load_records(self, records: Iterable[Sequence[Any]]) -> int:
        """:meth:`load` of a store's records (LoadBatch: values in COLUMNS order, then the
        version, the key's bucket and the row hash as the store keeps them).

        Most rows of a load are new keys in an index that has no tombstones and no repair
        floors (a start-up, a reload into a fresh index), with values of the store's types:
        those are appended to the columns here, without a
        StoredEntry, with the bucket and row hash the store wrote with the row (the store's
        digests sum the same columns). Every other row takes :meth:`_load_one`, the general
        rule. (Costs a reader this second spelling of :meth:`_insert`; a test checks that
        both build the same index.)"""
        (by_pid, by_interface, by_cc, bucket_rows, counts, versions, hashes, tombstones,
         profile_ids, profiles, profile_refs) = (
            self._by_pid, self._by_interface, self._by_cc, self._bucket_rows,
            self._bucket_count, self._bucket_versions, self._bucket_hashes, self._tombstones,
            self._profile_ids, self._profiles, self._profile_refs)
        (pids, gbids, version_of, seen_of, expiry_of, profile_of, at_interface, at_cc) = (
            self._pid, self._gbid, self._version, self._seen, self._expiry, self._profile_of,
            self._at_interface, self._at_cc)
        floor_max = self._floor_max  # (repairs change it, never a load)
        profile_values, intern, free, low, high = (_record_profile, sys.intern, self._free,
                                                   _I64_MIN, _I64_MAX)
        taken = inserted = 0  # (_load_one counts its own rows in self._rows)
        for record in records:
            gbid, participant_id, seen, expiry = record[0], record[1], record[10], record[11]
            version, bucket, hashed = record[-3], record[-2], record[-1]
            if (participant_id in by_pid or floor_max or free
                    or (tombstones and (gbid, participant_id) in tombstones)
                    or not 0 <= bucket < BUCKETS or type(record[4]) is not int
                    or type(record[5]) is not int or type(record[6]) is not int
                    or type(record[8]) is not bool or type(participant_id) is not str
                    or type(seen) is not int or type(expiry) is not int
                    or not low <= seen <= high or not low <= expiry <= high
                    or type(version) is not int):
                # (a known key, a free slot, a value of another type: the general rule)
                taken += self._load_one(StoredEntry(*record[:-3]), version)
                continue
            profile_id = profile_ids.get(profile_values(record))
            if profile_id is None:  # a new profile (or values of other types: the rule)
                profile_id = self._acquire_profile(record[1:-3])
                if profile_id == _ODD:
                    taken += self._load_one(StoredEntry(*record[:-3]), version)
                    continue
            else:
                profile_refs[profile_id] += 1
            slot = len(pids)
            profile: Any = profiles[profile_id]
            pids.append(participant_id)
            gbids.append(intern(gbid))
            version_of.append(version)
            seen_of.append(seen)
            expiry_of.append(expiry)
            profile_of.append(profile_id)
            by_pid[participant_id] = slot
            group_key = (profile[0], profile[1])
            group = by_interface.get(group_key)
            if group is None:
                group = by_interface[group_key] = array("I")
            at_interface.append(len(group))
            group.append(slot)
            group = by_cc.get(profile[10])
            if group is None:
                group = by_cc[profile[10]] = array("I")
            at_cc.append(len(group))
            group.append(slot)
            bucket_rows[bucket].append(slot)
            counts[bucket] += 1
            versions[bucket] += version
            hashes[bucket] += hashed
            inserted += 1
        self._rows += inserted
        self._param_sets += inserted  # (each a new participant)
        return taken + inserted

    def _load_columns(self, batch: ColumnBatch) -> int:
        """:meth:`load` of a store's rows grouped by profile (gcd.changes.ColumnBatch).

        When every row is a new key of an index without tombstones, repair floors or free
        slots (a start-up, a reload into a fresh index) and the values are of the store's
        types, the rows are appended to the columns as whole lists (a C loop each: the
        participant ids, GBIDs, versions, times; the slots of a profile's rows are one range,
        so its groups take them as a range), and a Python step is made per profile, per
        participant with several GBIDs and per row only to file its slot under its bucket.
        Other profiles (values of other types) and every row of any other batch take
        :meth:`_load_records`, the rule of a row. (Costs a reader this third spelling of
        :meth:`_insert`; a test checks that it builds the index the others build.)"""
        width = len(_PROFILE_AT)
        typed: list[Sequence[Any]] = list(batch.records)
        other: list[Sequence[Any]] = []
        if not all(set(map(type, map(operator.itemgetter(i), typed))) <= {kind}
                   for i, kind in enumerate(_PROFILE_TYPES)):  # (a column at a time)
            fit = [tuple(map(type, record[:width])) == _PROFILE_TYPES for record in typed]
            other = [record for record, ok in zip(typed, fit, strict=True) if not ok]
            typed = [record for record, ok in zip(typed, fit, strict=True) if ok]
        taken = 0
        if other:
            taken += self._load_records(ColumnBatch(other).load_batch().records)
        if not typed:
            return taken
        per_list = [list(map(operator.itemgetter(width + i), typed)) for i in range(7)]
        counts = list(map(len, per_list[0]))
        pids, gbids, versions, seen, expiry, buckets, hashes = (
            list(chain.from_iterable(values)) for values in per_list)
        rows = len(pids)
        by_pid = self._by_pid
        try:
            columns = (array("q", versions), array("q", seen), array("q", expiry))
            fits = (not self._free and not self._floor_max and not self._tombstones
                    and all(list(map(len, values)) == counts for values in per_list)
                    and set(map(type, chain(pids, gbids))) == {str}
                    and set(map(type, chain(versions, seen, expiry, buckets, hashes))) == {int}
                    and 0 <= min(buckets) <= max(buckets) < BUCKETS
                    and by_pid.keys().isdisjoint(pids))
        except (TypeError, OverflowError, ValueError):  # (not int64 values; no rows)
            fits = False
        if not fits:
            return taken + self._load_records(ColumnBatch(typed).load_batch().records)
        base = len(self._pid)
        self._pid.extend(pids)
        self._gbid.extend(map(sys.intern, gbids))
        for column, values in zip((self._version, self._seen, self._expiry), columns,
                                  strict=True):
            column.extend(values)
        self._append_profiles(typed, counts, base)
        param_sets = self._file_participants(pids, base)
        self._file_buckets(buckets, versions, hashes, base)
        self._rows += rows
        self._param_sets += param_sets
        return taken + rows

    def _append_profiles(self, records: list[Sequence[Any]], counts: list[int], base: int
                         ) -> None:
        """The profile column and the groups of the rows of ``records`` (a ColumnBatch's),
        whose slots are ``base`` on: the rows of a record are a range of slots."""
        width = len(_PROFILE_AT)
        profile_ids, profiles, profile_refs = (self._profile_ids, self._profiles,
                                               self._profile_refs)
        by_interface, by_cc, at_interface, at_cc, profile_of = (
            self._by_interface, self._by_cc, self._at_interface, self._at_cc,
            self._profile_of)
        slot, intern = base, sys.intern
        for record, count in zip(records, counts, strict=True):
            profile = tuple(record[:width])
            profile_id = profile_ids.get(profile)
            if profile_id is None:  # (its types are the store's: the texts are these)
                (domain, interface_name, major_version, minor_version, priority, scope,
                 supports_on_change, custom_parameters, public_key_id, topic,
                 cluster_controller_id) = profile
                profile_id = self._new_profile((
                    intern(domain), intern(interface_name), major_version, minor_version,
                    priority, intern(scope), supports_on_change, intern(custom_parameters),
                    intern(public_key_id), intern(topic), intern(cluster_controller_id)))
            profile_refs[profile_id] += count
            profile_of.extend(repeat(profile_id, count))
            held = cast(Profile, profiles[profile_id])
            group = by_interface.get((held[0], held[1]))
            if group is None:
                group = by_interface[(held[0], held[1])] = array("I")
            at_interface.extend(range(len(group), len(group) + count))
            group.extend(range(slot, slot + count))
            group = by_cc.get(held[10])
            if group is None:
                group = by_cc[held[10]] = array("I")
            at_cc.extend(range(len(group), len(group) + count))
            group.extend(range(slot, slot + count))
            slot += count

    def _file_participants(self, pids: list[str], base: int) -> int:
        """Each participant's slot, or its slots (a tuple ordered by gbid), for these new rows
        (slots ``base`` on); how many distinct parameter sets they add."""
        by_pid = self._by_pid
        rows = len(pids)
        before = len(by_pid)
        by_pid.update(zip(pids, range(base, base + rows), strict=True))
        param_sets = rows
        if len(by_pid) - before != rows:
            several = {pid for pid, n in Counter(pids).items() if n > 1}
            slots_of: dict[str, list[int]] = {}
            for at_slot, pid in enumerate(pids, base):
                if pid in several:
                    slots_of.setdefault(pid, []).append(at_slot)
            gbid_of, pid_of = self._gbid, self._pid
            for pid, slots in slots_of.items():
                by_pid[pid] = tuple(sorted(slots, key=lambda s: cast(str, gbid_of[s])))
                for at_slot in slots:  # (a participant's id is one object in memory)
                    pid_of[at_slot] = pid
                param_sets -= len(slots) - len({self._params_key(s) for s in slots})
        return param_sets

    def _file_buckets(self, buckets: list[int], versions: list[int], hashes: list[int],
                      base: int) -> None:
        """The new rows (slots ``base`` on) in their buckets, and the buckets' digests (the
        store's bucket and row hash of each row)."""
        rows = len(buckets)
        bucket_rows, counts, bucket_versions, bucket_hashes = (
            self._bucket_rows, self._bucket_count, self._bucket_versions, self._bucket_hashes)
        filed = [rows_of.append for rows_of in bucket_rows]
        for at_slot, bucket, version, hashed in zip(range(base, base + rows), buckets, versions,
                                                    hashes, strict=True):
            filed[bucket](at_slot)
            bucket_versions[bucket] += version
            bucket_hashes[bucket] += hashed
        for bucket, n in Counter(buckets).items():
            counts[bucket] += n

    def _load_one(self, entry: StoredEntry, version: int) -> int:
        """One row of a load (1: taken, 0: the index keeps what it has)."""
        sweep = self._sweep
        assert sweep is not None
        slot = self._row(entry.gbid, entry.participant_id)
        if slot is not None:
            sweep.discard(slot)  # the snapshot has it
            if version > self._version[slot]:
                self._replace(slot, entry, version)
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
        for slot in sorted(sweep):
            if self._version[slot] <= snapshot_version and self._row(*self._key(slot)) == slot:
                gbid, participant_id = self._key(slot)
                self._delete(slot)
                self._set_tombstone(gbid, participant_id, snapshot_version)
                dropped += 1
        self._watermark = max(self._watermark, snapshot_version)
        self._drop_tombstones()
        return dropped

    def clear(self) -> None:
        """Drop everything (shutdown): no rows, no tombstones, watermark 0."""
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
                key = self._key(held)
                if key not in stored and self._version[held] <= snapshot:
                    self._delete(held)
                    self._set_tombstone(*key, snapshot)
                    repaired += 1
        for key, (entry, version) in stored.items():
            slot = self._row(*key)
            if slot is not None:
                held_version = self._version[slot]
                if held_version > snapshot or (held_version == version and same_values(
                        self._values(slot), _values_of(entry))):
                    continue
                self._replace(slot, entry, version)
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

    def _slots(self) -> Iterator[int]:
        for value in self._by_pid.values():
            if type(value) is int:
                yield value
            else:
                yield from cast(tuple[int, ...], value)

    def _key(self, slot: int) -> Key:
        return cast(str, self._gbid[slot]), cast(str, self._pid[slot])

    def _values(self, slot: int) -> tuple[Any, ...]:
        """The row's parameter values, in HASHED_FIELDS order."""
        profile = self._profiles[self._profile_of[slot]]
        if profile is None:
            return self._odd[slot]
        return (self._pid[slot], *profile[:8], self._seen[slot], self._expiry[slot],
                *profile[8:])

    def _entry(self, slot: int) -> StoredEntry:
        profile = self._profiles[self._profile_of[slot]]
        if profile is None:
            return new_entry(self._gbid[slot], *self._odd[slot])
        # (the store's maker itself, with the fields spelled out: no tuples sliced and no
        # wrapper call per row of an answer)
        return _make_entry(
            self._gbid[slot], self._pid[slot], profile[0], profile[1], profile[2],
            profile[3], profile[4], profile[5], profile[6], profile[7], self._seen[slot],
            self._expiry[slot], profile[8], profile[9], profile[10])

    def _found(self, slot: int) -> Found:
        """The looked-up row of a slot (an odd row's Profile is made for the answer)."""
        profile = self._profiles[self._profile_of[slot]]
        if profile is None:
            odd = self._odd[slot]
            return (odd[0], cast(str, self._gbid[slot]), odd[_SEEN_AT], odd[_EXPIRY_AT],
                    cast(Profile, tuple(odd[i] for i in _PROFILE_AT)))
        return (cast(str, self._pid[slot]), cast(str, self._gbid[slot]), self._seen[slot],
                self._expiry[slot], profile)

    def _params_key(self, slot: int) -> Any:
        """What tells a participant's rows with equal parameters (exactly: same types)."""
        profile_id = self._profile_of[slot]
        if profile_id == _ODD:
            values = self._odd[slot]
            return (_ODD, values, tuple(map(type, values)))
        return (profile_id, self._seen[slot], self._expiry[slot])

    def _sharing(self, participant_id: str, key: Any, but: int) -> int:
        """How many rows of ``participant_id`` other than ``but`` have the parameters ``key``."""
        return sum(1 for slot in self._rows_of(participant_id)
                   if slot != but and self._params_key(slot) == key)

    def _view(self, slot: int) -> SharedParams:
        """The SharedParams object of a row's parameters (kept while a row has them)."""
        participant_id = cast(str, self._pid[slot])
        key = self._params_key(slot)
        views = self._views.setdefault(participant_id, {})
        view = views.get(key)
        if view is None:
            view = views[key] = SharedParams(self._values(slot))
            _set_refs(view, 1 + self._sharing(participant_id, key, slot))
        return view

    def _views_changed(self, participant_id: str) -> None:
        """A row of ``participant_id`` came, went or changed: its objects' counts follow."""
        views = self._views.get(participant_id)
        if views is None:
            return
        for key, view in list(views.items()):
            refs = self._sharing(participant_id, key, -1)
            _set_refs(view, refs)
            if not refs:
                del views[key]
        if not views:
            del self._views[participant_id]

    def _rows_of(self, participant_id: str) -> tuple[int, ...]:
        value = self._by_pid.get(participant_id)
        if value is None:
            return ()
        return (value,) if type(value) is int else cast(tuple[int, ...], value)

    def _row(self, gbid: str, participant_id: str) -> int | None:
        value = self._by_pid.get(participant_id)
        if value is None:
            return None
        gbids = self._gbid
        if type(value) is int:
            return value if gbids[value] == gbid else None
        for slot in cast(tuple[int, ...], value):
            if gbids[slot] == gbid:
                return slot
        return None

    def _acquire_profile(self, values: Sequence[Any]) -> int:
        """The id of the profile of these parameter values (made on first use, strings
        interned), counted once more; _ODD when a value is not of the store's type."""
        profile = _profile_key(values)
        if profile is None or not _in_columns(values[_SEEN_AT], values[_EXPIRY_AT]):
            return _ODD
        profile_id = self._profile_ids.get(profile)
        if profile_id is None:
            profile_id = self._new_profile(
                tuple(sys.intern(v) if type(v) is str else v for v in profile))
        self._profile_refs[profile_id] += 1
        return profile_id

    def _new_profile(self, profile: tuple[Any, ...]) -> int:
        """The id of a new profile (its strings interned by the caller), used by no row yet."""
        if self._free_profiles:
            profile_id = self._free_profiles.pop()
            self._profiles[profile_id] = cast(Profile, profile)
            self._profile_refs[profile_id] = 0
        else:
            profile_id = len(self._profiles)
            self._profiles.append(cast(Profile, profile))
            self._profile_refs.append(0)
        self._profile_ids[profile] = profile_id
        return profile_id

    def _release_profile(self, profile_id: int) -> None:
        if profile_id == _ODD:
            return
        refs = self._profile_refs[profile_id] - 1
        self._profile_refs[profile_id] = refs
        if not refs:
            del self._profile_ids[cast(tuple[Any, ...], self._profiles[profile_id])]
            self._profiles[profile_id] = None
            self._free_profiles.append(profile_id)

    def _set_params(self, slot: int, values: Sequence[Any]) -> None:
        """The row's parameter columns from these values (its profile acquired)."""
        profile_id = self._acquire_profile(values)
        self._profile_of[slot] = profile_id
        seen, expiry = values[_SEEN_AT], values[_EXPIRY_AT]
        if profile_id == _ODD:
            odd = tuple(values)
            if type(odd[0]) is str:
                odd = (odd[0], *(sys.intern(v) if type(v) is str and i in _INTERNED_AT else v
                                 for i, v in enumerate(odd[1:], 1)))
            self._odd[slot] = odd
            seen, expiry = 0, _live_bound(expiry)
        else:
            self._odd.pop(slot, None)
        self._seen[slot] = seen
        self._expiry[slot] = expiry

    def _group_keys(self, slot: int) -> tuple[tuple[Any, Any], Any]:
        """The row's (domain, interface) and cluster controller."""
        profile = self._profiles[self._profile_of[slot]]
        if profile is None:
            odd = self._odd[slot]
            return (odd[1], odd[2]), odd[13]
        return (profile[0], profile[1]), profile[10]

    def _insert(self, entry: StoredEntry, version: int, *, swept: bool = True) -> int:
        gbid = sys.intern(entry.gbid)
        values = _checked(_values_of(entry))
        siblings = self._rows_of(values[0])
        if siblings:  # (a participant's id is one object in memory)
            values = (self._pid[siblings[0]], *values[1:])
        participant_id = values[0]
        if self._free:
            slot = self._free.pop()
            self._pid[slot] = participant_id
            self._gbid[slot] = gbid
            self._version[slot] = version
        else:
            slot = len(self._pid)
            self._pid.append(participant_id)
            self._gbid.append(gbid)
            for column in (self._version, self._seen, self._expiry, self._profile_of,
                           self._at_interface, self._at_cc):
                column.append(0)
            self._version[slot] = version
        self._set_params(slot, values)
        if not siblings:
            self._by_pid[participant_id] = slot
        else:
            gbids = self._gbid
            self._by_pid[participant_id] = tuple(sorted((*siblings, slot),
                                                        key=lambda s: cast(str, gbids[s])))
        interface_key, cc = self._group_keys(slot)
        self._link(self._by_interface, interface_key, slot, self._at_interface)
        self._link(self._by_cc, cc, slot, self._at_cc)
        bucket, hashed = bucket_and_row_hash(gbid, participant_id, version)
        self._bucket_rows[bucket].append(slot)
        self._bucket_count[bucket] += 1
        self._bucket_versions[bucket] += version
        self._bucket_hashes[bucket] += hashed
        self._rows += 1
        if not self._sharing(participant_id, self._params_key(slot), slot):
            self._param_sets += 1
        self._views_changed(participant_id)
        self._tombstones.pop((gbid, participant_id), None)
        if swept and self._sweep is not None:  # a load runs: its snapshot decides (see
            self._sweep.add(slot)               # finish_load), unless the row comes from it
        return slot

    def _replace(self, slot: int, entry: StoredEntry, version: int) -> None:
        gbid, participant_id = self._key(slot)
        old_version = self._version[slot]
        bucket = bucket_of(gbid, participant_id)
        self._bucket_versions[bucket] += version - old_version
        self._bucket_hashes[bucket] += (row_hash(gbid, participant_id, version)
                                        - row_hash(gbid, participant_id, old_version))
        self._version[slot] = version
        values = (participant_id, *_checked(_values_of(entry))[1:])
        if same_values(self._values(slot), values):
            return
        if not self._sharing(participant_id, self._params_key(slot), slot):
            self._param_sets -= 1
        old_interface, old_cc = self._group_keys(slot)
        old_profile = self._profile_of[slot]
        self._set_params(slot, values)
        self._release_profile(old_profile)
        new_interface, new_cc = self._group_keys(slot)
        if old_interface != new_interface:
            self._unlink(self._by_interface, old_interface, slot, self._at_interface)
            self._link(self._by_interface, new_interface, slot, self._at_interface)
        if old_cc != new_cc:
            self._unlink(self._by_cc, old_cc, slot, self._at_cc)
            self._link(self._by_cc, new_cc, slot, self._at_cc)
        if not self._sharing(participant_id, self._params_key(slot), slot):
            self._param_sets += 1
        self._views_changed(participant_id)

    def _delete(self, slot: int) -> None:
        gbid, participant_id = self._key(slot)
        version = self._version[slot]
        if not self._sharing(participant_id, self._params_key(slot), slot):
            self._param_sets -= 1
        siblings = self._rows_of(participant_id)
        if len(siblings) == 1:
            del self._by_pid[participant_id]
        else:
            rest = tuple(s for s in siblings if s != slot)
            self._by_pid[participant_id] = rest[0] if len(rest) == 1 else rest
        interface_key, cc = self._group_keys(slot)
        self._unlink(self._by_interface, interface_key, slot, self._at_interface)
        self._unlink(self._by_cc, cc, slot, self._at_cc)
        bucket = bucket_of(gbid, participant_id)
        self._bucket_rows[bucket].remove(slot)
        self._bucket_count[bucket] -= 1
        self._bucket_versions[bucket] -= version
        self._bucket_hashes[bucket] -= row_hash(gbid, participant_id, version)
        self._rows -= 1
        self._release_profile(self._profile_of[slot])
        self._odd.pop(slot, None)
        self._profile_of[slot] = _ODD
        self._pid[slot] = self._gbid[slot] = None
        self._free.append(slot)
        self._views_changed(participant_id)
        if self._sweep is not None:
            self._sweep.discard(slot)

    @staticmethod
    def _link(groups: dict[_K, array[int]], group_key: _K, slot: int, at: array[int]) -> None:
        group = groups.get(group_key)
        if group is None:
            group = groups[group_key] = array("I")
        at[slot] = len(group)
        group.append(slot)

    @staticmethod
    def _unlink(groups: dict[_K, array[int]], group_key: _K, slot: int, at: array[int]
                ) -> None:
        group = groups[group_key]
        _take_out(group, slot, at)
        if not group:
            del groups[group_key]


_VALUE_TYPES: Final = frozenset({str, int, bool, type(None)})


def _checked(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values``, when each is of a type parameters hold (as SharedParams: TypeError)."""
    if not _VALUE_TYPES.issuperset(map(type, values)):
        bad = next(v for v in values if type(v) not in _VALUE_TYPES)
        raise TypeError(f"entry parameters hold str, int, bool or None, not {type(bad)!r}")
    return values


def _entries(found: list[Found]) -> list[StoredEntry]:
    """The StoredEntry of each looked-up row (gcd.params.entry_of_found, spelled out in one
    comprehension: a lookup of ten rows makes them without a call per row but the maker's)."""
    new = _make_entry
    return [new(gbid, pid, domain, interface_name, major_version, minor_version, priority,
                scope, supports_on_change, custom_parameters, seen, until, public_key_id, topic,
                cluster_controller_id)
            for pid, gbid, seen, until, (domain, interface_name, major_version, minor_version,
                                         priority, scope, supports_on_change, custom_parameters,
                                         public_key_id, topic, cluster_controller_id) in found]


def _take_out(group: array[int], slot: int, at: array[int]) -> None:
    """Remove ``slot`` from ``group`` (unordered) in O(1): the last one takes its place."""
    place = at[slot]
    last = group.pop()
    if last != slot:
        group[place] = last
        at[last] = place



"""The routing table: participantId -> the one address through which this runtime reaches it.

Pure module (no asyncio, no I/O, no logging): the table and its own rules, nothing else. What may
be routed where (admission, forwarding, learned replyTo routes) is decided in
:mod:`runtime.rules`.

``put`` decides in this order:

1. the address is not valid for this runtime        -> ``REJECTED_INVALID`` (table untouched)
   (its type is not one this runtime kind routes to, or it is one of the runtime's own
   addresses: a route there would loop back to itself)
2. no entry yet                                     -> ``CREATED``
3. same address and same visibility                 -> ``MERGED``  (expiry = max, sticky = or)
4. the existing entry is sticky                     -> ``REJECTED_STICKY``
5. precedence lets the new address replace the old  -> ``REPLACED`` (expiry = max, sticky = or)
6. otherwise                                        -> ``REJECTED_PRECEDENCE``

Precedence: a new address replaces the old one iff its type ranks at least as high:
cluster controller ``InProcess > WebSocketClient = UdsClient > Mqtt``; libjoynr
``InProcess > WebSocket = Uds`` (joynr's order).
A participant in this process wins over one reached over a connection, and a local connection
wins over a backend.

Entries expire: ``purge(now)`` removes the non-sticky ones whose expiry lies before now. A merge
or replacement never shortens an entry's expiry; a sticky entry (provisioned) never points
elsewhere, and is never removed or purged.

Learned entries (``put(..., learned=True)``: replyTo routes taught by messages from a backend)
are counted: :meth:`RoutingTable.put_learned` keeps at most a given number of them by evicting
the learned entries that expire first. An entry stops being learned when a put that is not
learned merges into it or replaces it (it is then a deliberate route: local, discovered or
provisioned), so local, provisioned and sticky routes are never evicted.

Rejections are values, not exceptions: callers decide what to tell their own callers. Calling
with arguments of the wrong type is a programming error and raises ``TypeError``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Final, NamedTuple

from pyjoynr.runtime.addresses import (
    Address,
    InProcessAddress,
    MqttAddress,
    UdsAddress,
    UdsClientAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)

__all__ = [
    "DEFAULT_MAX_LEARNED_ROUTES",
    "NO_EXPIRY_MS",
    "PutResult",
    "RoutingEntry",
    "RoutingSettings",
    "RoutingTable",
    "RuntimeKind",
]

#: Expiry of entries that do not expire on their own (joynr uses Long.MAX_VALUE).
NO_EXPIRY_MS: Final = 2**63 - 1
#: Learned (replyTo) entries kept at most, by default.
DEFAULT_MAX_LEARNED_ROUTES: Final = 10_000

@dataclass(frozen=True)
class RoutingSettings:
    """The routing table's settings: the ``[routing]`` section of a process's configuration."""

    #: seconds between two purges of expired routing entries
    cleanup_interval_s: float = 60.0
    #: learned replyTo entries live this long past the expiry of the request that taught them
    reply_to_grace_ms: int = 30_000
    #: ... counted from an expiry of at most now + this (a request chooses its own expiry)
    reply_to_max_ttl_ms: int = 86_400_000
    #: learned replyTo entries kept at most; the ones that expire first make room for new ones
    max_learned_routes: int = DEFAULT_MAX_LEARNED_ROUTES

    def __post_init__(self) -> None:
        if not self.cleanup_interval_s > 0:
            raise ValueError(f"cleanup_interval_s must be > 0, got {self.cleanup_interval_s}")
        if self.reply_to_grace_ms < 0:
            raise ValueError(f"reply_to_grace_ms must be >= 0, got {self.reply_to_grace_ms}")
        if self.reply_to_max_ttl_ms < 1:
            raise ValueError("reply_to_max_ttl_ms must be >= 1")
        if self.max_learned_routes < 1:
            raise ValueError(f"max_learned_routes must be >= 1, got {self.max_learned_routes}")


#: Default width of the expiry buckets that let purge() skip the entries that are not due.
DEFAULT_EXPIRY_BUCKET_MS: Final = 60_000


class RuntimeKind(Enum):
    CLUSTER_CONTROLLER = "cluster-controller"
    LIBJOYNR = "libjoynr"


class PutResult(Enum):
    CREATED = "created"
    MERGED = "merged"
    REPLACED = "replaced"
    REJECTED_INVALID = "rejected: address type not valid for this runtime"
    REJECTED_STICKY = "rejected: the existing entry is sticky"
    REJECTED_PRECEDENCE = "rejected: the existing address has precedence"

    @property
    def accepted(self) -> bool:
        """True when the table now holds the given address for the participant."""
        return self in _ACCEPTED

    @property
    def reason(self) -> str:
        return self.value


_ACCEPTED: Final = frozenset({PutResult.CREATED, PutResult.MERGED, PutResult.REPLACED})


class RoutingEntry(NamedTuple):
    """One participant's route. Immutable: the table replaces the entry on every change."""

    address: Address
    is_globally_visible: bool
    expiry_date_ms: int
    is_sticky: bool


_new_entry = tuple.__new__  # building a NamedTuple without its Python-level __new__ is ~3x faster

#: Rank of each address type per runtime kind; a type missing here is invalid for that kind.
_RANKS: Final[dict[RuntimeKind, dict[type[Address], int]]] = {
    RuntimeKind.CLUSTER_CONTROLLER: {
        InProcessAddress: 3,
        WebSocketClientAddress: 2,
        UdsClientAddress: 2,
        MqttAddress: 1,
    },
    RuntimeKind.LIBJOYNR: {
        InProcessAddress: 2,
        WebSocketAddress: 1,
        UdsAddress: 1,
    },
}

_CREATED: Final = PutResult.CREATED
_MERGED: Final = PutResult.MERGED
_REPLACED: Final = PutResult.REPLACED
_REJECTED_INVALID: Final = PutResult.REJECTED_INVALID
_REJECTED_STICKY: Final = PutResult.REJECTED_STICKY
_REJECTED_PRECEDENCE: Final = PutResult.REJECTED_PRECEDENCE


class RoutingTable:
    """The routing table of one runtime (cluster controller or libjoynr).

    ``own_addresses`` are this runtime's own global/replyTo addresses; the cluster controller
    refuses to route a participant to one of them (that would loop back to itself).
    ``expiry_bucket_ms`` only tunes the expiry index behind :meth:`purge` (see there).
    """

    __slots__ = (
        "_bucket_keys",
        "_bucket_ms",
        "_buckets",
        "_by_address",
        "_entries",
        "_learned",
        "_learned_heap",
        "_own",
        "_ranks",
        "_stale_refs",
        "_sticky",
        "get",
        "kind",
    )

    def __init__(
        self,
        kind: RuntimeKind,
        own_addresses: Iterable[Address] = (),
        *,
        expiry_bucket_ms: int = DEFAULT_EXPIRY_BUCKET_MS,
    ) -> None:
        if not isinstance(kind, RuntimeKind):
            raise TypeError(f"kind must be a RuntimeKind, got {kind!r}")
        if type(expiry_bucket_ms) is not int or expiry_bucket_ms <= 0:
            raise ValueError(f"expiry_bucket_ms must be a positive int, got {expiry_bucket_ms!r}")
        self.kind: Final = kind
        self._ranks = _RANKS[kind]
        self._own: frozenset[Address] = frozenset(own_addresses)
        self._entries: dict[str, RoutingEntry] = {}
        #: ``get(participant_id)``: its entry, None without one. The entries' own dict.get,
        #: not a method around it: the routers look a participant up two to three times per
        #: message (sender, recipient), and a Python frame per lookup cost more than the lookup
        self.get: Final[Callable[[str], RoutingEntry | None]] = self._entries.get
        # reverse index for participants_at(): address -> participantIds routed there
        self._by_address: dict[Address, set[str]] = {}
        # Expiry index for purge(), so that a purge costs what is due, not what the table holds:
        # the purgeable entries (not sticky, finite expiry) listed by expiry // bucket width, and
        # a heap of the bucket keys. Lists are cheap but only ever appended to: when an entry
        # leaves its bucket (removed, extended, made sticky) its reference stays behind, is
        # counted as stale, and is dropped when purge reaches it or the index is rebuilt.
        self._bucket_ms = expiry_bucket_ms
        self._buckets: dict[int, list[str]] = {}
        self._bucket_keys: list[int] = []
        self._stale_refs = 0
        # the learned entries (an ordered set), and a heap of (expiry, participantId) to find
        # the one that expires first; a heap item whose entry is no longer learned or has
        # another expiry by now is stale and skipped (the heap is rebuilt when mostly stale)
        self._learned: dict[str, None] = {}
        self._learned_heap: list[tuple[int, str]] = []
        # sticky entries are never removed and never lose stickiness: a count that only grows
        self._sticky = 0

    # ------------------------------------------------------------------ queries

    def __contains__(self, participant_id: object) -> bool:
        return participant_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def items(self) -> Iterator[tuple[str, RoutingEntry]]:
        """A snapshot of (participantId, entry) pairs, safe against concurrent changes."""
        return iter(list(self._entries.items()))

    def is_learned(self, participant_id: str) -> bool:
        """Whether the entry of ``participant_id`` is a learned one (see the module doc)."""
        return participant_id in self._learned

    @property
    def learned_count(self) -> int:
        return len(self._learned)

    @property
    def sticky_count(self) -> int:
        return self._sticky

    def count_by_address_type(self) -> dict[str, int]:
        """Entries per address type name (costs one step per distinct address)."""
        counts: dict[str, int] = {}
        for address, ids in self._by_address.items():
            name = type(address).__name__
            counts[name] = counts.get(name, 0) + len(ids)
        return counts

    def participants_at(self, address: Address) -> set[str]:
        """The participantIds whose entry points at ``address`` (a copy)."""
        ids = self._by_address.get(address)
        return set(ids) if ids else set()

    def stats(self) -> dict[str, int]:
        """Sizes of the table and its indexes, for diagnostics and metrics."""
        return {
            "entries": len(self._entries),
            "addresses": len(self._by_address),
            "expiry_buckets": len(self._buckets),
            "expiry_refs": sum(map(len, self._buckets.values())),
            "stale_expiry_refs": self._stale_refs,
            "learned": len(self._learned),
            "learned_heap": len(self._learned_heap),
        }

    @property
    def own_addresses(self) -> frozenset[Address]:
        return self._own

    def is_valid_address(self, address: Address) -> bool:
        """Whether this runtime could hold ``address`` at all (rule 1 of put)."""
        return self._rank(address) is not None

    def _rank(self, address: Address) -> int | None:
        """The precedence rank of ``address``; None when it is not valid here (rule 1)."""
        rank = self._ranks.get(type(address))
        if rank is None or (self._own and type(address) is MqttAddress and address in self._own):
            return None
        return rank

    # ------------------------------------------------------------------ changes

    def put(
        self,
        participant_id: str,
        address: Address,
        *,
        is_globally_visible: bool,
        expiry_date_ms: int,
        is_sticky: bool = False,
        learned: bool = False,
    ) -> PutResult:
        """Add or update the route of ``participant_id``; see the module doc for the rules.
        ``learned``: a replyTo route taught by a message (see :meth:`put_learned`)."""
        if type(participant_id) is not str or not participant_id:
            raise TypeError(f"participant_id must be a non-empty str, got {participant_id!r}")
        if type(expiry_date_ms) is not int:
            raise TypeError(f"expiry_date_ms must be an int, got {type(expiry_date_ms).__name__}")
        new_rank = self._rank(address)
        if new_rank is None:
            return _REJECTED_INVALID
        if (is_globally_visible is not True and is_globally_visible is not False) or (
            is_sticky is not True and is_sticky is not False
        ):
            raise TypeError("is_globally_visible and is_sticky must be bools")

        entries = self._entries
        old = entries.get(participant_id)
        if old is None:  # the hot path of a growing table, kept inline
            entries[participant_id] = _new_entry(
                RoutingEntry, (address, is_globally_visible, expiry_date_ms, is_sticky)
            )
            ids = self._by_address.get(address)
            if ids is None:
                self._by_address[address] = {participant_id}
            else:
                ids.add(participant_id)
            if not is_sticky and expiry_date_ms < NO_EXPIRY_MS:
                key = expiry_date_ms // self._bucket_ms
                bucket = self._buckets.get(key)
                if bucket is None:
                    self._buckets[key] = [participant_id]
                    heapq.heappush(self._bucket_keys, key)
                else:
                    bucket.append(participant_id)
            if learned:
                self._learn(participant_id, expiry_date_ms)
            self._sticky += is_sticky
            return _CREATED

        old_address, old_visible, old_expiry, old_sticky = old
        if old_address == address and old_visible == is_globally_visible:
            if expiry_date_ms > old_expiry or (is_sticky and not old_sticky):
                new_expiry = max(expiry_date_ms, old_expiry)
                new_sticky = old_sticky or is_sticky
                entries[participant_id] = _new_entry(
                    RoutingEntry, (old_address, old_visible, new_expiry, new_sticky)
                )
                self._reindex_expiry(participant_id, old_expiry, old_sticky, new_expiry,
                                     new_sticky)
            if learned or self._learned:
                self._track_learned(participant_id, learned, max(expiry_date_ms, old_expiry),
                                    replaced=False)
            return _MERGED
        if old_sticky:
            return _REJECTED_STICKY
        if new_rank < self._ranks[type(old_address)]:
            return _REJECTED_PRECEDENCE

        new_expiry = max(expiry_date_ms, old_expiry)
        entries[participant_id] = _new_entry(
            RoutingEntry, (address, is_globally_visible, new_expiry, is_sticky)
        )
        if new_expiry != old_expiry or is_sticky:
            self._reindex_expiry(participant_id, old_expiry, False, new_expiry, is_sticky)
        if old_address != address:
            self._index_discard(old_address, participant_id)
            self._index_add(address, participant_id)
        if learned or self._learned:
            self._track_learned(participant_id, learned, new_expiry, replaced=True)
        return _REPLACED

    def put_learned(self, participant_id: str, address: Address, *, expiry_date_ms: int,
                    max_learned: int) -> tuple[PutResult, list[str]]:
        """Put a learned route (globally visible, not sticky) while at most ``max_learned``
        learned entries stay: before a new one is created, the learned entries that expire
        first are removed. Returns the outcome and the participantIds removed."""
        evicted: list[str] = []
        if (participant_id not in self._entries and self._rank(address) is not None
                and len(self._learned) >= max_learned):
            evicted = self._evict_learned(len(self._learned) - max_learned + 1)
        result = self.put(participant_id, address, is_globally_visible=True,
                          expiry_date_ms=expiry_date_ms, learned=True)
        return result, evicted

    def _track_learned(self, participant_id: str, learned: bool, expiry_ms: int, *,
                       replaced: bool) -> None:
        """After a merge or replacement: a put that is not learned makes the entry a deliberate
        one; a learned put keeps a learned entry learned, and makes a replaced one learned."""
        if not learned:
            if participant_id in self._learned:
                self._unlearn(participant_id)
        elif replaced or participant_id in self._learned:
            self._learn(participant_id, expiry_ms)

    def _learn(self, participant_id: str, expiry_ms: int) -> None:
        self._learned[participant_id] = None
        heap = self._learned_heap
        heapq.heappush(heap, (expiry_ms, participant_id))
        if len(heap) > 1024 + 2 * len(self._learned):
            entries = self._entries
            heap[:] = [(entries[pid].expiry_date_ms, pid) for pid in self._learned]
            heapq.heapify(heap)

    def _unlearn(self, participant_id: str) -> None:
        del self._learned[participant_id]  # its heap items are stale from now on
        if not self._learned:
            self._learned_heap.clear()

    def _evict_learned(self, count: int) -> list[str]:
        """Remove the ``count`` learned entries that expire first."""
        heap, learned, entries = self._learned_heap, self._learned, self._entries
        evicted: list[str] = []
        while heap and len(evicted) < count:
            expiry, pid = heapq.heappop(heap)
            entry = entries.get(pid)
            if pid in learned and entry is not None and entry.expiry_date_ms == expiry:
                self.remove(pid)
                evicted.append(pid)
        return evicted

    def remove(self, participant_id: str) -> bool:
        """Remove the entry; False when there is none or it is sticky (never removed)."""
        entry = self._entries.get(participant_id)
        if entry is None or entry.is_sticky:
            return False
        del self._entries[participant_id]
        self._index_discard(entry.address, participant_id)
        if participant_id in self._learned:
            self._unlearn(participant_id)
        if entry.expiry_date_ms < NO_EXPIRY_MS:
            self._stale_refs += 1
            self._maybe_rebuild_expiry_index()
        return True

    def purge(self, now_ms: int) -> list[str]:
        """Remove every non-sticky entry whose expiry is before ``now_ms``; return their ids.

        Costs O(removed + entries expiring in now's bucket + stale references passed), not
        O(table size): buckets wholly before now are emptied without looking at the rest.
        """
        entries = self._entries
        buckets = self._buckets
        keys = self._bucket_keys
        width = self._bucket_ms
        now_key = now_ms // width
        expired: list[str] = []
        stale_dropped = 0
        while keys and keys[0] <= now_key:
            key = keys[0]
            bucket = buckets.get(key)
            if bucket is None:  # a key pushed twice; its bucket is already gone
                heapq.heappop(keys)
                continue
            kept: list[str] = []
            for pid in bucket:
                entry = entries.get(pid)
                if (
                    entry is None
                    or entry.is_sticky
                    or entry.expiry_date_ms // width != key
                ):
                    stale_dropped += 1  # this reference outlived its entry's place here
                elif entry.expiry_date_ms < now_ms:
                    del entries[pid]
                    self._index_discard(entry.address, pid)
                    if pid in self._learned:
                        self._unlearn(pid)
                    expired.append(pid)
                else:  # only in now's own bucket: due later
                    kept.append(pid)
            if kept:
                buckets[key] = kept
                break
            del buckets[key]
            heapq.heappop(keys)
        self._stale_refs -= stale_dropped
        return expired

    def remove_all_at(self, address: Address) -> list[str]:
        """Remove every non-sticky entry pointing at ``address`` (e.g. a websocket client gone)."""
        removed = [pid for pid in self.participants_at(address) if self.remove(pid)]
        removed.sort()
        return removed

    # ------------------------------------------------------------------ indexes

    def _index_add(self, address: Address, participant_id: str) -> None:
        ids = self._by_address.get(address)
        if ids is None:
            self._by_address[address] = {participant_id}
        else:
            ids.add(participant_id)

    def _index_discard(self, address: Address, participant_id: str) -> None:
        ids = self._by_address.get(address)
        if ids is not None:
            ids.discard(participant_id)
            if not ids:
                del self._by_address[address]

    def _bucket_key(self, expiry_ms: int, sticky: bool) -> int | None:
        if sticky or expiry_ms >= NO_EXPIRY_MS:
            return None
        return expiry_ms // self._bucket_ms

    def _reindex_expiry(
        self, pid: str, old_expiry: int, old_sticky: bool, new_expiry: int, new_sticky: bool
    ) -> None:
        # every entry that becomes sticky after it was made passes here (merge or replace)
        self._sticky += new_sticky and not old_sticky
        old_key = self._bucket_key(old_expiry, old_sticky)
        new_key = self._bucket_key(new_expiry, new_sticky)
        if old_key == new_key:
            return
        if new_key is not None:
            bucket = self._buckets.get(new_key)
            if bucket is None:
                self._buckets[new_key] = [pid]
                heapq.heappush(self._bucket_keys, new_key)
            else:
                bucket.append(pid)
        if old_key is not None:
            self._stale_refs += 1
            self._maybe_rebuild_expiry_index()

    def _maybe_rebuild_expiry_index(self) -> None:
        # amortised O(1): a rebuild costs O(entries) and follows at least entries/2 changes
        if self._stale_refs <= 1024 + (len(self._entries) >> 1):
            return
        width = self._bucket_ms
        buckets: dict[int, list[str]] = {}
        for pid, (_, _, expiry, sticky) in self._entries.items():
            if not sticky and expiry < NO_EXPIRY_MS:
                key = expiry // width
                bucket = buckets.get(key)
                if bucket is None:
                    buckets[key] = [pid]
                else:
                    bucket.append(pid)
        keys = list(buckets)
        heapq.heapify(keys)
        self._buckets, self._bucket_keys, self._stale_refs = buckets, keys, 0

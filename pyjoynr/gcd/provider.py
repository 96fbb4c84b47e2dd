"""The Global Capabilities Directory's rules: :class:`GcdProvider`, the provider of the joynr
interface GlobalCapabilitiesDirectory 0.3 (:mod:`gcd.interface`).

One GCD instance serves one backend (its own GBID) and knows every valid GBID; all instances,
in all backends, share one store (:mod:`gcd.store`). The rules:

- GBID lists (the ``*_in`` forms): an empty list, an empty GBID or a GBID listed twice is
  INVALID_GBID; a GBID that is not valid is UNKNOWN_GBID. The list is checked in order, the
  first offending element decides which error, and nothing changes.
- ``add_in_backends(entry, gbids)`` registers the entry in each listed GBID (the GBID in the entry's
  address does not matter; a registration in another GBID stays); ``add`` registers in the
  own GBID. An entry without domain, interface, participantId or address, or whose address is
  not an MQTT address, is refused with a provider runtime error and nothing is stored. An
  entry registered by another cluster controller is replaced (the last registration wins: a
  provider that moved to another cluster controller; over MQTT the caller cannot be checked).
- Lookups answer one entry per participantId, with the address of one GBID: the own GBID if
  it is listed and the provider is registered there, else the first listed GBID the provider
  is registered in. ``lookup_in_backends`` finding providers, but none in the listed GBIDs, is
  NO_ENTRY_FOR_SELECTED_BACKENDS; ``lookup_participant_in`` of an unknown participant is
  NO_ENTRY_FOR_PARTICIPANT. The forms without GBIDs look in the own GBID only.
- ``remove_in_backends(participantId, gbids)`` is all or nothing: NO_ENTRY_FOR_PARTICIPANT if it is
  registered nowhere, NO_ENTRY_FOR_SELECTED_BACKENDS if not in every listed GBID. ``remove``
  acts on the own GBID and never fails for an unknown participant.
- ``touch`` and ``removeStale`` act on the entries of one cluster controller, in every GBID.
  The cluster controller of an entry is the last level of its address topic
  (``joynr/cc/<id>``). A touch sets last seen to now and the expiry to now plus the default
  expiry.
- Expired entries are never returned; :meth:`GcdProvider.start_purging` deletes them
  periodically (on one instance of the cluster at a time; the others drop them by catch-up).
- A failing store is INTERNAL_ERROR for the forms with modelled errors, and a provider runtime
  error saying so for the others.

Where the answers come from (docs/discovery.md): lookups read the instance's in-memory index
(:class:`~gcd.sync.Synchronizer`), so they keep being answered while the database is down.
Writes go to the store (one transaction each, through the ``*_changes`` forms of
:class:`~gcd.changes.VersionedStore`), and the instance then applies what the store committed
- not what was asked - to its index. While the index loads at start-up with
``serve_while_loading`` (:attr:`~gcd.sync.Synchronizer.serving_from_store`), lookups read the
store itself (:attr:`GcdProvider.store_lookups` counts them) and writes are taken as always.
Otherwise, before the index is loaded, nothing is answered: a provider given a synchroniser
refuses with INTERNAL_ERROR or a provider runtime error ("not loaded yet"); a provider that
made its own (no ``sync`` given: one instance without peers, e.g. in tests) loads it on its
first call.

Figures for the admin endpoint: :attr:`GcdProvider.requests` counts the calls per method (the
Python name of the overload, e.g. ``lookup_participant_in``) and outcome (``ok``, the modelled
error's name, ``provider-error``, ``failed``), :attr:`GcdProvider.request_latency` their
durations per method, :attr:`GcdProvider.store_latency` those of the store writes per operation.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, NoReturn, TypeVar, cast

from pyjoynr.gcd.changes import Change, VersionedStore
from pyjoynr.gcd.params import Found, found_of
from pyjoynr.gcd.store import GcdStore, RemoveOutcome, StoredEntry, StoreError
from pyjoynr.gcd.sync import NotReady, Synchronizer
from pyjoynr.programming.discovery_types import (
    DEFAULT_PROVIDER_EXPIRY_MS,
    CustomParameter,
    DiscoveryErrorCode,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
    check_gbids,
)
from pyjoynr.programming.generated.infrastructure import GlobalCapabilitiesDirectoryProviderBase
from pyjoynr.programming.providers import wire_form_of
from pyjoynr.programming.system_interfaces import address_from_json
from pyjoynr.runtime.addresses import AddressError, MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import ApplicationError, ProviderRuntimeError
from pyjoynr.runtime.logs import RepeatedWarnings, get_logger
from pyjoynr.runtime.metrics import LatencyHistograms
from pyjoynr.runtime.tasks import TaskSupervisor

__all__ = ["GcdProvider", "cluster_controller_id_of"]

log = get_logger(__name__)

T = TypeVar("T")
#: a method of the provider (its signature kept by the decorators below)
_M = TypeVar("_M", bound=Callable[..., Awaitable[Any]])


def _served(method: _M) -> _M:
    """A method of the interface, counted per outcome and timed (GcdProvider.requests)."""
    return _served_as(method.__name__)(method)


def _served_as(name: str) -> Callable[[_M], _M]:
    """:func:`_served`, counted as the interface method ``name`` (a wire-form twin)."""
    return cast(Callable[[_M], _M], functools.partial(_serve_counted, name))


def _serve_counted(name: str, method: Callable[..., Awaitable[T]]
                   ) -> Callable[..., Awaitable[T]]:
    @functools.wraps(method)
    async def serve(self: GcdProvider, *args: Any) -> T:
        started = time.perf_counter()
        outcome = "failed"
        try:
            result = await method(self, *args)
            outcome = "ok"
            return result
        except ApplicationError as exc:
            outcome = exc.error if exc.error in _ERROR_NAMES else "failed"
            raise
        except ProviderRuntimeError:
            outcome = "provider-error"
            raise
        finally:
            self.requests[name, outcome] += 1
            self.request_latency.observe(name, time.perf_counter() - started)

    return serve


#: the outcomes a request can have besides ok (bounded: never a text from a peer)
_ERROR_NAMES: Final = frozenset(code.name for code in DiscoveryErrorCode)


def cluster_controller_id_of(topic: str) -> str:
    """The cluster controller id in a provider's address topic: its last level."""
    return topic.rstrip("/").rsplit("/", 1)[-1]


def _fail(error: DiscoveryErrorCode, detail: str) -> NoReturn:
    raise ApplicationError(error.name, detail)


def _to_row(entry: GlobalDiscoveryEntry, gbid: str, topic: str) -> StoredEntry:
    qos = entry.qos
    return StoredEntry(
        gbid=gbid, participant_id=entry.participant_id, domain=entry.domain,
        interface_name=entry.interface_name,
        major_version=entry.provider_version.major_version,
        minor_version=entry.provider_version.minor_version, priority=qos.priority,
        scope=qos.scope.value, supports_on_change=qos.supports_on_change_subscriptions,
        custom_parameters=json.dumps([[p.name, p.value] for p in qos.custom_parameters]),
        last_seen_ms=entry.last_seen_date_ms, expiry_ms=entry.expiry_date_ms,
        public_key_id=entry.public_key_id, topic=topic,
        cluster_controller_id=cluster_controller_id_of(topic),
    )


#: the start of a serialized MqttAddress (a looked-up entry's address is built directly: the
#: topic was checked when the entry was added)
_MQTT_JSON_START: Final = '{"_typeName":' + json.dumps(MqttAddress("", "t").to_dict()["_typeName"])


def _json_string(text: str) -> str:
    """``text`` as a JSON string, as ``json.dumps(text, ensure_ascii=False)`` writes it: quoted
    as it is when it holds nothing JSON escapes (the common case: a GBID, a topic)."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return json.dumps(text, ensure_ascii=False)


@functools.lru_cache(maxsize=16_384)
def _address_json(gbid: str, topic: str) -> str:
    """``address_to_json(MqttAddress(gbid, topic))``, made directly. (Kept for the last 16,384
    pairs: a topic is a cluster controller's, shared by its providers' rows, and a lookup
    answers it once per row; a cache hit is a fifth of making it.)"""
    return f'{_MQTT_JSON_START},"brokerUri":{_json_string(gbid)},"topic":{_json_string(topic)}}}'


_SCOPES: Final = {scope.value: scope for scope in ProviderScope}
_NO_CUSTOM_PARAMETERS: Final = "[]"


@functools.lru_cache(maxsize=1024)
def _decoded_custom_parameters(stored: str) -> tuple[tuple[str, str], ...]:
    """The (name, value) pairs of a stored custom parameter list (few distinct lists exist:
    they are decoded once each)."""
    return tuple((name, value) for name, value in json.loads(stored))


def _from_row(found: Found) -> GlobalDiscoveryEntry:
    participant_id, gbid, last_seen_ms, expiry_ms, profile = found
    (domain, interface_name, major_version, minor_version, priority, scope, supports_on_change,
     stored, public_key_id, topic, _) = profile
    known_scope = _SCOPES.get(scope)
    return GlobalDiscoveryEntry(
        Version(major_version, minor_version), domain, interface_name, participant_id,
        ProviderQos(
            [] if stored == _NO_CUSTOM_PARAMETERS else
            [CustomParameter(n, v) for n, v in _decoded_custom_parameters(stored)],
            priority, known_scope if known_scope is not None else ProviderScope(scope),
            supports_on_change),
        last_seen_ms, expiry_ms, public_key_id, _address_json(gbid, topic),
    )


@functools.lru_cache(maxsize=1024, typed=True)  # (1 and True are different values here)
def _wire_qos(custom_parameters: str, priority: int, scope: str, supports_on_change: bool
              ) -> dict[str, Any]:
    """The wire form of a ProviderQos (few distinct ones exist: made once each; shared by the
    answers that hold it, which are packed, never changed)."""
    return {"custom_parameters": [] if custom_parameters == _NO_CUSTOM_PARAMETERS else [
                {"name": n, "value": v}
                for n, v in _decoded_custom_parameters(custom_parameters)],
            "priority": priority,
            "scope": (_SCOPES.get(scope) or ProviderScope(scope)).name,
            "supports_on_change_subscriptions": supports_on_change}


def _wire_of_row(found: Found) -> dict[str, Any]:
    """What ``to_wire(_from_row(found))`` makes, made directly (a lookup's answer sent as a
    message: about five times faster). tests/unit/test_gcd_wire_form.py holds the two equal,
    byte for byte once packed."""
    participant_id, gbid, last_seen_ms, expiry_ms, profile = found
    (domain, interface_name, major_version, minor_version, priority, scope, supports_on_change,
     custom_parameters, public_key_id, topic, _) = profile
    return {
        "provider_version": {"major_version": major_version, "minor_version": minor_version},
        "domain": domain, "interface_name": interface_name, "participant_id": participant_id,
        "qos": _wire_qos(custom_parameters, priority, scope, supports_on_change),
        "last_seen_date_ms": last_seen_ms, "expiry_date_ms": expiry_ms,
        "public_key_id": public_key_id,
        "address": _address_json(gbid, topic),
    }


class GcdProvider(GlobalCapabilitiesDirectoryProviderBase):
    """One GCD instance: ``own_gbid`` (its backend), ``valid_gbids``, a shared ``store`` (a
    :class:`~gcd.changes.VersionedStore`), and ``sync``, the synchroniser of the instance's
    index on that store (None: the provider makes a passive one, loaded on its first call).
    """

    def __init__(self, store: GcdStore, own_gbid: str, valid_gbids: Sequence[str], *,
                 default_expiry_ms: int = DEFAULT_PROVIDER_EXPIRY_MS,
                 clock_ms: Callable[[], int] = now_ms,
                 sync: Synchronizer | None = None, name: str = "",
                 warnings: RepeatedWarnings | None = None) -> None:
        super().__init__()
        if own_gbid not in valid_gbids:
            raise ValueError(f"the own GBID {own_gbid!r} is not among the valid GBIDs")
        if not hasattr(store, "add_changes"):
            raise TypeError(f"{store!r} is not a versioned store (gcd.changes.VersionedStore)")
        self.store = cast(VersionedStore, store)
        #: how log lines name the instance
        self.name = name or f"GCD {own_gbid}"
        #: the rate limit of the failures it logs (the process's, or one of its own)
        self.warnings = warnings if warnings is not None else RepeatedWarnings()
        self._owns_sync = sync is None
        self.sync = sync if sync is not None else Synchronizer(self.store, name=self.name)
        self.own_gbid = own_gbid
        self.valid_gbids = frozenset(valid_gbids)
        self.default_expiry_ms = default_expiry_ms
        self._clock_ms = clock_ms
        #: requests per (method, outcome), their latency per method, store writes' latency
        self.requests: Counter[tuple[str, str]] = Counter()
        #: store calls that failed, per (operation, StoreError reason)
        self.store_failures: Counter[tuple[str, str]] = Counter()
        self.request_latency = LatencyHistograms()
        self.store_latency = LatencyHistograms()
        #: lookups answered by reading the store (while the index loaded at start-up)
        self.store_lookups = 0

    # ------------------------------------------------------------------ checks

    def _check_gbids(self, gbids: Sequence[str]) -> None:
        check_gbids(gbids, self.valid_gbids)

    @staticmethod
    def _topic_of(entry: GlobalDiscoveryEntry) -> str:
        """The entry's MQTT topic; a provider runtime error if it is incomplete."""
        missing = [name for name, value in (("domain", entry.domain),
                                            ("interface name", entry.interface_name),
                                            ("participantId", entry.participant_id),
                                            ("address", entry.address)) if not value]
        if missing:
            raise ProviderRuntimeError(f"incomplete discovery entry: no {', '.join(missing)}")
        try:
            address = address_from_json(entry.address)
        except AddressError as exc:
            raise ProviderRuntimeError(f"discovery entry {entry.participant_id}: bad address: "
                                       f"{exc}") from None
        if not isinstance(address, MqttAddress):
            raise ProviderRuntimeError(f"discovery entry {entry.participant_id}: the address "
                                       f"must be an MqttAddress, not {address.type_name}")
        return address.topic

    async def _store(self, what: str, call: Callable[[], Awaitable[T]], *, modelled: bool
                     ) -> T:
        """Run a store call; a storage failure becomes INTERNAL_ERROR (modelled), or a provider
        runtime error saying so."""
        started = time.perf_counter()
        try:
            return await call()
        except StoreError as exc:
            self.store_failures[what, exc.reason] += 1
            # one line per operation and reason a minute, then a count (an outage fails
            # every write)
            self.warnings.warning(log, f"{what} failed ({exc.reason})", "the store",
                                  "%s: %s failed (%s): %s", self.name, what, exc.reason, exc,
                                  level=logging.ERROR)
            if modelled:
                _fail(DiscoveryErrorCode.INTERNAL_ERROR, f"{what}: storage failure")
            raise ProviderRuntimeError(f"{what}: internal error of the directory (storage "
                                       "failure)") from None
        finally:
            self.store_latency.observe(what, time.perf_counter() - started)

    async def _ready(self, what: str, *, modelled: bool) -> None:
        """The index is loaded or loading while served from the store (a provider's own
        synchroniser is loaded now), or the call is refused like a storage failure."""
        sync = self.sync
        if sync.serving:
            return
        if self._owns_sync:
            await self._store(what, sync.start, modelled=modelled)
            return
        self._refuse(what, modelled)

    def _refuse(self, what: str, modelled: bool) -> NoReturn:
        self.warnings.warning(log, f"{what} refused (not loaded)", "the index",
                              "%s: %s refused: the directory is not loaded yet", self.name,
                              what)
        if modelled:
            _fail(DiscoveryErrorCode.INTERNAL_ERROR, f"{what}: the directory is not loaded yet")
        raise ProviderRuntimeError(f"{what}: the directory is not loaded yet")

    async def _write(self, what: str, call: Callable[[], Awaitable[list[Change]]], *,
                     modelled: bool) -> list[Change]:
        """A write through the store; what it committed is applied to the index at once."""
        await self._ready(what, modelled=modelled)
        changes = await self._store(what, call, modelled=modelled)
        self.sync.apply_own(changes)
        return changes

    # ------------------------------------------------------------------ add

    async def _add(self, entries: Sequence[GlobalDiscoveryEntry], gbids: Sequence[str], *,
                   modelled: bool) -> None:
        rows = []
        for entry in entries:
            topic = self._topic_of(entry)
            rows += [_to_row(entry, gbid, topic) for gbid in gbids]
        await self._write("add", lambda: self.store.add_changes(rows), modelled=modelled)
        for entry in entries:
            log.debug("%s: added %s (%s, %s) in %s", self.name, entry.participant_id,
                     entry.domain, entry.interface_name, ", ".join(gbids),
                     extra={"participantId": entry.participant_id})

    @_served
    async def add(self, global_discovery_entry: GlobalDiscoveryEntry) -> None:
        await self._add([global_discovery_entry], [self.own_gbid], modelled=False)

    @_served
    async def add_entries(self, global_discovery_entries: list[GlobalDiscoveryEntry]) -> None:
        await self._add(global_discovery_entries, [self.own_gbid], modelled=False)

    @_served
    async def add_in_backends(self, global_discovery_entry: GlobalDiscoveryEntry, gbids: list[str]
                     ) -> None:
        self._check_gbids(gbids)
        await self._add([global_discovery_entry], gbids, modelled=True)

    # ------------------------------------------------------------------ lookup

    def _select(self, rows: Sequence[Found], gbids: Sequence[str]) -> list[Found]:
        """One row per participant: the own GBID if listed and registered, else the first
        listed GBID it is registered in; participants in none of them are left out."""
        if len(gbids) == 1:  # the common case: a key (gbid, participant) is one row
            only = gbids[0]
            return [row for row in rows if row[1] == only]
        by_pid: dict[str, dict[str, Found]] = {}
        for row in rows:
            by_pid.setdefault(row[0], {})[row[1]] = row
        listed = list(gbids)
        if self.own_gbid in listed:
            listed.remove(self.own_gbid)
            listed.insert(0, self.own_gbid)
        selected = []
        for registered in by_pid.values():
            for gbid in listed:
                if gbid in registered:
                    selected.append(registered[gbid])
                    break
        return selected

    async def _from_store(self, read: Callable[[], Awaitable[list[StoredEntry]]],
                          modelled: bool) -> list[Found]:
        """A lookup answered by reading the store (while the index loads)."""
        self.store_lookups += 1
        return [found_of(entry) for entry in await self._store("lookup", read, modelled=modelled)]

    async def _find(self, domains: list[str], interface_name: str, modelled: bool
                    ) -> list[Found]:
        await self._ready("lookup", modelled=modelled)
        if not self.sync.ready:  # serving from the store while the index loads
            return await self._from_store(
                lambda: self.store.find(domains, interface_name, self._clock_ms()), modelled)
        await self.sync.notified_applied()
        try:
            rows = self.sync.find_shared(domains, interface_name, self._clock_ms())
            if not rows:
                await self.sync.catch_up_on_miss()
                rows = self.sync.find_shared(domains, interface_name, self._clock_ms())
            return rows
        except NotReady:  # stopped meanwhile
            self._refuse("lookup", modelled)

    def _in_selected(self, rows: Sequence[Found], interface_name: str, domains: list[str],
                     gbids: list[str]) -> list[Found]:
        selected = self._select(rows, gbids)
        if rows and not selected:
            _fail(DiscoveryErrorCode.NO_ENTRY_FOR_SELECTED_BACKENDS,
                  f"{interface_name} in {domains}: registered in none of {gbids}")
        return selected

    @_served
    async def lookup(self, domains: list[str], interface_name: str
                     ) -> list[GlobalDiscoveryEntry]:
        rows = await self._find(domains, interface_name, False)
        return [_from_row(r) for r in self._select(rows, [self.own_gbid])]

    @wire_form_of("lookup")
    @_served_as("lookup")
    async def _lookup_wired(self, domains: list[str], interface_name: str
                            ) -> list[dict[str, Any]]:
        rows = await self._find(domains, interface_name, False)
        return [_wire_of_row(r) for r in self._select(rows, [self.own_gbid])]

    @_served
    async def lookup_in_backends(self, domains: list[str], interface_name: str, gbids: list[str]
                        ) -> list[GlobalDiscoveryEntry]:
        self._check_gbids(gbids)
        rows = await self._find(domains, interface_name, True)
        return [_from_row(r) for r in self._in_selected(rows, interface_name, domains, gbids)]

    @wire_form_of("lookup_in_backends")
    @_served_as("lookup_in_backends")
    async def _lookup_in_wired(self, domains: list[str], interface_name: str, gbids: list[str]
                               ) -> list[dict[str, Any]]:
        self._check_gbids(gbids)
        rows = await self._find(domains, interface_name, True)
        return [_wire_of_row(r)
                for r in self._in_selected(rows, interface_name, domains, gbids)]

    async def _find_participant(self, participant_id: str, modelled: bool
                                ) -> list[Found]:
        await self._ready("lookup", modelled=modelled)
        if not self.sync.ready:  # serving from the store while the index loads
            return await self._from_store(
                lambda: self.store.find_participant(participant_id, self._clock_ms()), modelled)
        await self.sync.notified_applied()
        try:
            rows = self.sync.find_participant_shared(participant_id, self._clock_ms())
            if not rows:
                await self.sync.catch_up_on_miss()
                rows = self.sync.find_participant_shared(participant_id, self._clock_ms())
            return rows
        except NotReady:  # stopped meanwhile
            self._refuse("lookup", modelled)

    async def _own_participant_row(self, participant_id: str) -> Found:
        rows = self._select(await self._find_participant(participant_id, False),
                            [self.own_gbid])
        if not rows:
            raise ProviderRuntimeError(f"no entry for participant {participant_id} in "
                                       f"{self.own_gbid}")
        return rows[0]

    @_served
    async def lookup_participant(self, participant_id: str) -> GlobalDiscoveryEntry:
        return _from_row(await self._own_participant_row(participant_id))

    @wire_form_of("lookup_participant")
    @_served_as("lookup_participant")
    async def _lookup_participant_wired(self, participant_id: str) -> dict[str, Any]:
        return _wire_of_row(await self._own_participant_row(participant_id))

    async def _participant_row_in(self, participant_id: str, gbids: list[str]) -> Found:
        self._check_gbids(gbids)
        rows = await self._find_participant(participant_id, True)
        if not rows:
            _fail(DiscoveryErrorCode.NO_ENTRY_FOR_PARTICIPANT, f"no entry for {participant_id}")
        selected = self._select(rows, gbids)
        if not selected:
            _fail(DiscoveryErrorCode.NO_ENTRY_FOR_SELECTED_BACKENDS,
                  f"{participant_id} is registered in none of {gbids}")
        return selected[0]

    @_served
    async def lookup_participant_in(self, participant_id: str, gbids: list[str]
                                    ) -> GlobalDiscoveryEntry:
        return _from_row(await self._participant_row_in(participant_id, gbids))

    @wire_form_of("lookup_participant_in")
    @_served_as("lookup_participant_in")
    async def _lookup_participant_in_wired(self, participant_id: str, gbids: list[str]
                                           ) -> dict[str, Any]:
        return _wire_of_row(await self._participant_row_in(participant_id, gbids))

    # ------------------------------------------------------------------ remove

    @_served
    async def remove(self, participant_id: str) -> None:
        await self._remove_participants([participant_id])

    @_served
    async def remove_participants(self, participant_ids: list[str]) -> None:
        await self._remove_participants(participant_ids)

    async def _remove_participants(self, participant_ids: list[str]) -> None:
        removed = await self._write(
            "remove", lambda: self.store.remove_in_changes(participant_ids, self.own_gbid),
            modelled=False)
        log.debug("%s: removed %s row(s) of %d participant(s)", self.name, len(removed),
                 len(participant_ids))

    @_served
    async def remove_in_backends(self, participant_id: str, gbids: list[str]) -> None:
        self._check_gbids(gbids)
        await self._ready("remove", modelled=True)
        outcome, changes = await self._store(
            "remove", lambda: self.store.remove_changes(participant_id, gbids,
                                                        self._clock_ms()),
            modelled=True)
        self.sync.apply_own(changes)
        if outcome is RemoveOutcome.NO_PARTICIPANT:
            _fail(DiscoveryErrorCode.NO_ENTRY_FOR_PARTICIPANT, f"no entry for {participant_id}")
        if outcome is RemoveOutcome.NOT_IN_ALL_SELECTED:
            _fail(DiscoveryErrorCode.NO_ENTRY_FOR_SELECTED_BACKENDS,
                  f"{participant_id} is not registered in every one of {gbids}")
        log.debug("%s: removed %s from %s", self.name, participant_id, ", ".join(gbids),
                 extra={"participantId": participant_id})

    # ------------------------------------------------------------------ freshness

    async def _touch(self, cluster_controller_id: str, participant_ids: list[str] | None
                     ) -> None:
        now = self._clock_ms()
        touched = await self._write(
            "touch", lambda: self.store.touch_changes(cluster_controller_id, participant_ids,
                                                      now, now + self.default_expiry_ms),
            modelled=False)
        log.debug("%s: touched %s row(s) of %s", self.name, len(touched),
                  cluster_controller_id)

    @_served
    async def touch(self, cluster_controller_id: str) -> None:
        await self._touch(cluster_controller_id, None)

    @_served
    async def touch_participants(self, cluster_controller_id: str, participant_ids: list[str]
                                 ) -> None:
        await self._touch(cluster_controller_id, participant_ids)

    @_served
    async def remove_stale(self, cluster_controller_id: str, max_last_seen_date_ms: int
                           ) -> None:
        removed = await self._write(
            "removeStale", lambda: self.store.remove_stale_changes(cluster_controller_id,
                                                                   max_last_seen_date_ms),
            modelled=False)
        log.debug("%s: removeStale %s before %d: %s row(s) removed", self.name,
                 cluster_controller_id, max_last_seen_date_ms, len(removed))

    # ------------------------------------------------------------------ housekeeping

    async def purge_expired(self) -> int:
        """Delete the entries expired by now (they are never returned anyway); how many (0
        when another instance of the cluster is purging: it holds the store's purge lock)."""
        if not self.sync.ready:
            if not self._owns_sync:
                return 0  # nothing to purge into yet: the next round
            await self.sync.start()
        purged = await self.sync.purge_expired(self._clock_ms()) or 0
        if purged:
            log.info("%s: purged %d expired entr%s", self.name, purged,
                     "y" if purged == 1 else "ies")
        return purged

    def start_purging(self, tasks: TaskSupervisor, interval_s: float) -> asyncio.Task[None]:
        """Purge expired entries every ``interval_s``, in a task owned by ``tasks`` (it ends
        when they are closed). A purge that fails is logged; the next one runs all the same."""
        if not interval_s > 0:
            raise ValueError(f"purge interval must be > 0 seconds, got {interval_s!r}")

        async def purging() -> None:
            while True:
                await asyncio.sleep(interval_s)
                try:
                    await self.purge_expired()
                except StoreError as exc:
                    self.warnings.warning(log, f"purge failed ({exc.reason})", "the store",
                                          "%s: purging expired entries failed (%s): %s",
                                          self.name, exc.reason, exc)

        return tasks.spawn(purging(), name="gcd-purge")

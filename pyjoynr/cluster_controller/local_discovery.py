"""The cluster controller's local capabilities directory (``system/Discovery``, joynr's
version 0.3 with all its overloads).

The overloads without GBIDs behave as joynr's cluster controllers make them: ``add(entry)`` is
``add(entry, false)``; ``add(entry, await)`` and ``lookup(domains, interface, qos)`` are the
forms with an empty GBID list (all of this CC's GBIDs), their modelled errors turned into
provider runtime errors naming the error; ``lookup(participantId)`` looks locally, then in the
cache (any age), then in the GCD. An empty GBID list stands for all GBIDs, in every form.

What one connection (and one owner id) may register is bounded (runtime.quotas, through the
:class:`cluster_controller.bounds.ConnectionHolds` the cluster controller hands in):
its providers, and of those the ones registered with the GCD. An ``add`` beyond a bound is
refused with a provider runtime error that names the bound and its value (in every form: the
interface's modelled errors name no bound), counted and logged rate-limited, before anything
is stored here or sent to the GCD; what the connection registered already stays. ``remove``
gives back; the end of the connection forgets its counts (its providers then wait out their
grace period, see ``client_gone``)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

from pyjoynr.cluster_controller.bounds import ConnectionHolds
from pyjoynr.cluster_controller.gcd_link import GlobalLink
from pyjoynr.cluster_controller.routing_provider import caller_may_act_for
from pyjoynr.programming.discovery_types import (
    DEFAULT_DISCOVERY_TIMEOUT_MS,
    DiscoveryEntry,
    DiscoveryEntryWithMetaInfo,
    DiscoveryErrorCode,
    DiscoveryQos,
    DiscoveryScope,
    GlobalDiscoveryEntry,
    ProviderScope,
    check_gbids,
)
from pyjoynr.programming.generated import types
from pyjoynr.programming.generated.system import DiscoveryProviderBase
from pyjoynr.programming.providers import (
    current_creator,
    current_deadline_ms,
    current_origin,
    current_request,
)
from pyjoynr.programming.system_interfaces import address_from_json
from pyjoynr.runtime import rules
from pyjoynr.runtime.addresses import Address, AddressError
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import ApplicationError, ProviderRuntimeError
from pyjoynr.runtime.logs import get_logger, peer_of
from pyjoynr.runtime.messages import Message
from pyjoynr.runtime.quotas import GLOBAL_PROVIDERS, PROVIDERS
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry

T = TypeVar("T")

log = get_logger(__name__)

_INT64_MAX = 2 ** 63 - 1


class LocalDiscovery(DiscoveryProviderBase):
    """The local capabilities directory (docs/discovery.md, "The local capabilities directory").

    Local registrations; provisioned global providers (always known, never expire); and, once
    a GCD is attached (``attach_gcd``), the global directory: GLOBAL-scope providers are
    registered with the GCD, lookups go to it by discovery scope, its answers are cached for
    ``cache_max_age_ms`` and routed, and the CC's entries are kept fresh (touch) and cleaned
    after a restart (removeStale). A libjoynr runtime may only add or remove entries of its own
    participants (routed to the connection the call arrived over)."""

    serves_remote_callers = False

    def __init__(self, router: MessageRouter, *, answer_margin_ms: int = 500,
                 tasks: TaskSupervisor | None = None, vanished_grace_s: float = 60.0,
                 telemetry: Telemetry | None = None, holds: ConnectionHolds | None = None
                 ) -> None:
        """``router``: the cluster controller's, which routes to the providers found (and whose
        routing table says who may act for whom). ``telemetry``: the process's counters and
        limit of repeated warnings (its own by default). ``holds``: what each connection may
        register (cluster_controller.bounds; none: unbounded)."""
        super().__init__()
        #: the timers of vanished connections' providers (none: they are kept)
        self._tasks = tasks
        #: the providers of a connection that ended without unregistering them are removed
        #: (here and from the GCD) this long (s) after, unless registered again
        self.vanished_grace_s = vanished_grace_s
        #: registrations, removals, refusals and what became of vanished connections'
        #: providers (the per-call events, which are logged at DEBUG only)
        self.counters: Counter[str] = Counter()
        #: a call to the GCD ends this long (ms) before the request it serves expires, so
        #: that the answer reaches the caller in time
        self.answer_margin_ms = answer_margin_ms
        self._router = router
        self._telemetry = Telemetry() if telemetry is None else telemetry
        self._holds = ConnectionHolds(None, self._telemetry) if holds is None else holds
        self._entries: dict[str, DiscoveryEntry] = {}
        self._provisioned: dict[str, DiscoveryEntryWithMetaInfo] = {}
        self._gcd: GlobalLink | None = None
        # participantId -> (when cached, entry): answers of the GCD
        self._cache: dict[str, tuple[int, DiscoveryEntryWithMetaInfo]] = {}
        self._global_gbids: dict[str, list[str]] = {}  # registered with the GCD, in these
        self.gcd_calls: Counter[str] = Counter()
        #: asked before every registration a libjoynr runtime makes (access control): (the
        #: caller's uid, None for this process; domain; interface; participant id; the
        #: request), raises ProviderRuntimeError to refuse it
        self.registration_check: Callable[[str | None, str, str, str, Message | None], None
                                          ] | None = None

    # ------------------------------------------------------------------ set-up

    def attach_gcd(self, link: GlobalLink) -> None:
        self._gcd = link

    @property
    def gbids(self) -> list[str]:
        return list(self._gcd.gbids) if self._gcd is not None else []

    def _check_owner(self, participant_id: str, action: str) -> None:
        if not caller_may_act_for(self._router, participant_id):
            caller = current_origin()
            self.counters[f"refused-{action}"] += 1
            self._telemetry.warn(log, f"refused-{action}", peer_of(caller),
                                 "discovery %s of %s refused: not a participant of %r",
                                 action, participant_id, caller)
            raise ProviderRuntimeError(
                f"discovery {action} refused: {participant_id} is not routed to the caller")

    def _budget_ms(self, limit_ms: int) -> int:
        """The time (ms) a GCD call may take for the request being served: ``limit_ms``, but
        ending ``answer_margin_ms`` before that request expires (its caller waits no longer).
        Direct calls in this process have no request: ``limit_ms``."""
        deadline = current_deadline_ms()
        if deadline is None:
            return limit_ms
        return min(limit_ms, deadline - now_ms() - self.answer_margin_ms)

    def _check_gbids(self, gbids: list[str]) -> list[str]:
        """The GBIDs to use: the caller's, checked, or all configured ones."""
        if not gbids:
            return self.gbids
        check_gbids(gbids, self.gbids)
        return list(gbids)

    # ------------------------------------------------------------------ add, remove

    async def add(self, entry: DiscoveryEntry) -> None:
        await self.add_awaiting(entry, False)

    async def add_awaiting(self, entry: DiscoveryEntry, await_global_registration: bool
                           ) -> None:
        try:
            await self.add_in_backends(entry, await_global_registration, [])
        except ApplicationError as exc:
            raise ProviderRuntimeError(f"Error registering provider {entry.participant_id} "
                                       f"in default backend: {exc.error}") from None

    async def add_to_all(self, entry: DiscoveryEntry, await_global_registration: bool) -> None:
        await self.add_in_backends(entry, await_global_registration, self.gbids)

    async def add_in_backends(self, entry: DiscoveryEntry, await_global_registration: bool,
                     gbids: list[str]) -> None:
        if not (entry.domain and entry.interface_name and entry.participant_id):
            raise ProviderRuntimeError("discovery entry without domain, interface or "
                                       "participantId")
        self._check_owner(entry.participant_id, "add")
        check = self.registration_check
        if check is not None:
            check(current_creator(), entry.domain, entry.interface_name, entry.participant_id,
                  current_request())
        gbids = self._check_gbids(gbids)
        pid = entry.participant_id
        link = self._gcd
        self._hold(entry, link is not None and entry.qos.scope is ProviderScope.GLOBAL)
        self._entries[pid] = entry
        self.counters["registered"] += 1  # per call: any client can register thousands
        log.debug("registered provider %s (%s, %s v%d.%d)", pid, entry.domain,
                  entry.interface_name, entry.provider_version.major_version,
                  entry.provider_version.minor_version, extra={"participantId": pid})
        if entry.qos.scope is not ProviderScope.GLOBAL or link is None:
            return
        self._global_gbids[pid] = gbids
        if not await_global_registration:
            link.in_background(f"add {pid}", lambda: link.add(entry, gbids),
                               still_wanted=lambda: self._entries.get(pid) is entry)
            return
        try:
            await link.add(entry, gbids, self._budget_ms(link.request_ttl_ms))
        except BaseException:
            # the caller learns that it failed: the local registration is rolled back
            if self._entries.get(pid) is entry:
                del self._entries[pid]
                self._global_gbids.pop(pid, None)
                self._give_back(pid)
            raise

    def _hold(self, entry: DiscoveryEntry, in_gcd: bool) -> None:
        """The caller's connection holds ``entry`` (and, ``in_gcd``, its registration with the
        GCD), or the call is refused (ProviderRuntimeError) beyond a bound (runtime.quotas):
        nothing is changed then."""
        holds, caller, pid = self._holds, current_origin(), entry.participant_id
        what = f"discovery add of {pid}"
        holds.hold(PROVIDERS, caller, pid, what, log)
        if in_gcd:
            # (one registered with the GCD before and now in a narrower scope keeps its
            # count: its row stays there until it is removed)
            try:
                holds.hold(GLOBAL_PROVIDERS, caller, pid, what, log)
            except ProviderRuntimeError:
                if pid not in self._entries:
                    holds.release(PROVIDERS, caller, pid)
                raise

    def _give_back(self, participant_id: str) -> None:
        caller = current_origin()
        self._holds.release(PROVIDERS, caller, participant_id)
        self._holds.release(GLOBAL_PROVIDERS, caller, participant_id)

    async def remove(self, participant_id: str) -> None:
        if participant_id in self._entries:
            self._check_owner(participant_id, "remove")
        self._forget(participant_id)
        self._give_back(participant_id)

    def _forget(self, participant_id: str) -> None:
        """Remove a registration here and (in the background) from the GCD."""
        if self._entries.pop(participant_id, None) is not None:
            self.counters["unregistered"] += 1
            log.debug("unregistered provider %s", participant_id)
        gbids = self._global_gbids.pop(participant_id, None)
        link = self._gcd
        if gbids and link is not None:
            link.in_background(f"remove {participant_id}",
                               lambda: link.remove(participant_id, gbids),
                               still_wanted=lambda: participant_id not in self._entries)

    # ------------------------------------------------------------------ vanished runtimes

    def client_gone(self, client: Address, participant_ids: list[str]) -> None:
        """A websocket connection ended; ``participant_ids`` were routed to it. Its providers
        that were not unregistered stay registered (here and in the GCD) for
        ``vanished_grace_s``, so that a runtime restarted after a crash finds and re-registers
        them, then they are removed unless registered again (rules.vanished_provider)."""
        vanished = {pid: entry for pid in participant_ids
                    if (entry := self._entries.get(pid)) is not None}
        if not vanished or self._tasks is None:
            return
        in_gcd = sum(1 for pid in vanished if pid in self._global_gbids)
        # once per connection that ends: a connection flood would write one each
        self.counters["vanished-client"] += 1
        self._telemetry.warn(log, "vanished-client", "websocket clients",
                             "%r is gone without unregistering %d provider(s) (%d in the GCD): "
                             "removed in %.1f s unless registered again", client, len(vanished),
                             in_gcd, self.vanished_grace_s, level=logging.INFO)
        self._tasks.spawn(self._forget_vanished(client, vanished),
                          name=f"vanished providers of {client!r}")

    async def _forget_vanished(self, client: Address, vanished: dict[str, DiscoveryEntry]
                               ) -> None:
        await asyncio.sleep(self.vanished_grace_s)
        for pid, entry in vanished.items():
            current = self._entries.get(pid)
            if current is None:
                continue  # removed meanwhile
            notice = rules.vanished_provider(current is not entry, self._router.route_of(pid))
            if notice is not None:
                self.counters[notice.reason] += 1
                log.debug("provider %s of vanished %r kept: %s", pid, client, notice.detail)
                continue
            self.counters["vanished-provider-removed"] += 1
            log.debug("provider %s of vanished %r removed after %.1f s%s", pid, client,
                     self.vanished_grace_s,
                     " (and from the GCD)" if pid in self._global_gbids else "")
            self._forget(pid)

    def global_participants(self) -> list[str]:
        """The participantIds this CC registered with the GCD (for touch)."""
        return sorted(self._global_gbids)

    # ------------------------------------------------------------------ lookup

    def _with_meta(self, entry: DiscoveryEntry) -> DiscoveryEntryWithMetaInfo:
        return DiscoveryEntryWithMetaInfo(**vars(entry), is_local=True)

    def add_global(self, entry: DiscoveryEntryWithMetaInfo) -> None:
        """A provisioned provider in another cluster controller (always known)."""
        self._provisioned[entry.participant_id] = entry

    def _cached(self, max_age_ms: int, now: int) -> list[DiscoveryEntryWithMetaInfo]:
        """Provisioned entries and the GCD's answers not older than ``max_age_ms``."""
        fresh = [e for when, e in self._cache.values() if now - when <= max_age_ms]
        return list(self._provisioned.values()) + [
            e for e in fresh if e.participant_id not in self._provisioned]

    def _cached_participant(self, participant_id: str, max_age_ms: int, now: int
                            ) -> DiscoveryEntryWithMetaInfo | None:
        """What ``_cached`` holds for one participant, without building the whole list."""
        provisioned = self._provisioned.get(participant_id)
        if provisioned is not None:
            return provisioned
        cached = self._cache.get(participant_id)
        if cached is not None and now - cached[0] <= max_age_ms:
            return cached[1]
        return None

    def _remember(self, found: list[GlobalDiscoveryEntry], now: int
                  ) -> list[DiscoveryEntryWithMetaInfo]:
        """Cache and route what the GCD returned (never over a local route)."""
        entries = []
        for gde in found:
            try:
                address = address_from_json(gde.address)
            except AddressError as exc:
                self.counters["gcd-bad-address"] += 1
                self._telemetry.warn(log, "gcd-bad-address", "the GCD",
                                     "GCD answered %s with a bad address: %s", gde.participant_id,
                                     exc)
                continue
            meta = DiscoveryEntryWithMetaInfo(**{k: v for k, v in vars(gde).items()
                                                 if k != "address"}, is_local=False)
            self._cache[gde.participant_id] = (now, meta)
            if gde.participant_id not in self._entries:
                self._router.add_route(gde.participant_id, address, is_globally_visible=True)
            entries.append(meta)
        return entries

    async def lookup(self, domains: list[str], interface_name: str,
                     discovery_qos: types.DiscoveryQos) -> list[DiscoveryEntryWithMetaInfo]:
        try:
            return await self.lookup_in_backends(domains, interface_name, discovery_qos, [])
        except ApplicationError as exc:
            raise ProviderRuntimeError(
                f"Error discovering provider for domain {domains[:10]} and interface "
                f"{interface_name[:200]} in all backends: {exc.error}") from None

    async def lookup_in_backends(self, domains: list[str], interface_name: str,
                        discovery_qos: types.DiscoveryQos, gbids: list[str]
                        ) -> list[DiscoveryEntryWithMetaInfo]:
        gbids = self._check_gbids(gbids)
        now = now_ms()
        wanted = set(domains)
        on_change = discovery_qos.provider_must_support_on_change

        def fits(e: DiscoveryEntry) -> bool:
            return (e.domain in wanted and e.interface_name == interface_name
                    and e.expiry_date_ms >= now
                    and (e.qos.supports_on_change_subscriptions or not on_change))

        scope = discovery_qos.discovery_scope
        local = [self._with_meta(e) for e in self._entries.values() if fits(e)]
        if scope is DiscoveryScope.LOCAL_ONLY:
            return local
        if scope is DiscoveryScope.LOCAL_THEN_GLOBAL and {e.domain for e in local} >= wanted:
            return local  # every domain has a local provider
        if scope is DiscoveryScope.GLOBAL_ONLY:
            local = [e for e in local if e.qos.scope is ProviderScope.GLOBAL]
        remote = [e for e in self._cached(discovery_qos.cache_max_age, now) if fits(e)]
        link = self._gcd
        if not remote and link is not None:
            self.gcd_calls["lookup"] += 1
            # the caller's discovery timeout, within what is left of its request
            found = await link.lookup(domains, interface_name, gbids,
                                      self._budget_ms(discovery_qos.discovery_timeout))
            remote = [e for e in self._remember(found, now) if fits(e)]
        if scope is DiscoveryScope.LOCAL_THEN_GLOBAL and local:
            # some domains have local providers: those, plus the others' global ones
            local_domains = {e.domain for e in local}
            remote = [e for e in remote if e.domain not in local_domains]
        mine = {e.participant_id for e in local}
        # a provider known here is returned as local, whatever the GCD says
        return local + [e for e in remote if e.participant_id not in mine
                        and e.participant_id not in self._entries]

    async def lookup_participant(self, participant_id: str) -> DiscoveryEntryWithMetaInfo:
        # joynr's: local, else cached (any age), else the GCD; here within the CC's own
        # time to live of a GCD call
        link = self._gcd
        qos = DiscoveryQos(cache_max_age_ms=_INT64_MAX,
                           discovery_timeout_ms=(link.request_ttl_ms if link is not None
                                                 else DEFAULT_DISCOVERY_TIMEOUT_MS),
                           discovery_scope=DiscoveryScope.LOCAL_AND_GLOBAL)
        try:
            return await self.lookup_participant_in(participant_id, qos, [])
        except ApplicationError as exc:
            raise ProviderRuntimeError(f"Error discovering provider {participant_id[:200]} "
                                       f"in all backends: {exc.error}") from None

    async def lookup_participant_in(self, participant_id: str, discovery_qos: types.DiscoveryQos,
                                    gbids: list[str]) -> DiscoveryEntryWithMetaInfo:
        gbids = self._check_gbids(gbids)
        now = now_ms()
        scope = discovery_qos.discovery_scope
        entry = self._entries.get(participant_id)
        if entry is not None and entry.expiry_date_ms >= now and (
            scope is not DiscoveryScope.GLOBAL_ONLY or entry.qos.scope is ProviderScope.GLOBAL
        ):
            return self._with_meta(entry)
        if scope is not DiscoveryScope.LOCAL_ONLY:
            cached = self._cached_participant(participant_id, discovery_qos.cache_max_age,
                                              now)
            if cached is not None and cached.expiry_date_ms >= now:
                return cached
            link = self._gcd
            if link is not None:
                self.gcd_calls["lookup_participant"] += 1
                found = self._remember([await link.lookup_participant(
                    participant_id, gbids, self._budget_ms(discovery_qos.discovery_timeout))],
                    now)
                if found:
                    return found[0]
        raise ApplicationError(DiscoveryErrorCode.NO_ENTRY_FOR_PARTICIPANT.name,
                               f"no provider {participant_id}")

    def entries(self) -> list[DiscoveryEntry]:
        return list(self._entries.values())

    def local_entry(self, participant_id: str) -> DiscoveryEntry | None:
        """The entry of a provider registered on this host, None for another."""
        return self._entries.get(participant_id)

"""The cluster controller's own providers: Routing, the local capabilities directory and its
link to the GCD."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from runtime.addresses import (
    Address,
    AddressError,
    MqttAddress,
    WebSocketClientAddress,
    address_from_dict,
)
from runtime.clock import now_ms
from runtime.discovery_types import (
    DiscoveryEntry,
    DiscoveryEntryWithMetaInfo,
    DiscoveryQos,
    DiscoveryScope,
    GlobalDiscoveryEntry,
    ProviderScope,
    check_gbids,
)
from runtime.dispatch import Provider, current_origin
from runtime.errors import ApplicationError, JoynrError, ProviderRuntimeError
from runtime.multicast import MulticastError, make_multicast_id
from runtime.router import MessageRouter
from runtime.routing import RoutingTable
from runtime.system_interfaces import (
    Discovery,
    DiscoveryErrorCode,
    Routing,
)

T = TypeVar("T")

log = logging.getLogger(__name__)


def _belongs_to_caller(table: RoutingTable, participant_id: str) -> bool:
    """Whether the current call may act for ``participant_id``: it comes from this process,
    or the participant is routed to the connection the call arrived over."""
    caller = current_origin()
    if caller is None:
        return True
    entry = table.get(participant_id)
    return entry is not None and entry.address == caller


class RoutingProvider(Provider, interface=Routing):
    """The Routing provider's implementation over the cluster controller's router."""

    serves_remote_callers = False

    def __init__(self, router: MessageRouter, global_address: Address | None = None) -> None:
        super().__init__()
        self.router = router
        self._global = global_address

    async def get_global_address(self) -> dict[str, Any]:
        return {} if self._global is None else self._global.to_dict()

    async def get_reply_to_address(self) -> dict[str, Any]:
        return await self.get_global_address()

    async def add_next_hop(self, participant_id: str, address: dict[str, Any],
                           is_globally_visible: bool) -> None:
        try:
            decoded = address_from_dict(address)
        except AddressError as exc:
            raise ProviderRuntimeError(f"add_next_hop: bad address: {exc}") from None
        caller = current_origin()
        if caller is not None and decoded != caller:
            # a websocket client may only register participants at its own connection
            self.router.counters["refused-foreign-next-hop"] += 1
            log.warning("add_next_hop %s -> %r refused: the caller is %r", participant_id,
                        decoded, caller)
            raise ProviderRuntimeError(
                f"add_next_hop refused: {decoded!r} is not the caller's own address {caller!r}"
            )
        if caller is None and not isinstance(decoded, WebSocketClientAddress):
            raise ProviderRuntimeError("add_next_hop: only WebSocketClientAddresses are accepted")
        if caller is not None:
            decoded = caller  # the same address; the connection's own object compares fastest
        result = self.router.add_route(participant_id, decoded,
                                       is_globally_visible=is_globally_visible)
        if not result.accepted:
            raise ProviderRuntimeError(f"add_next_hop {participant_id} refused: {result.reason}")

    async def remove_next_hop(self, participant_id: str) -> None:
        table = self.router.table
        if participant_id in table and not _belongs_to_caller(table, participant_id):
            raise ProviderRuntimeError(
                f"remove_next_hop {participant_id} refused: it is not routed to the caller"
            )
        self.router.remove_route(participant_id)

    async def resolve_next_hop(self, participant_id: str) -> bool:
        return participant_id in self.router.table

    async def add_multicast_receiver(self, multicast_id: str, subscriber_participant_id: str,
                                     provider_participant_id: str) -> None:
        self._check_multicast(multicast_id, subscriber_participant_id, provider_participant_id)
        self.router.add_multicast_receiver(multicast_id, subscriber_participant_id,
                                           provider_participant_id)

    async def remove_multicast_receiver(self, multicast_id: str, subscriber_participant_id: str,
                                        provider_participant_id: str) -> None:
        self._check_multicast(multicast_id, subscriber_participant_id, provider_participant_id)
        self.router.remove_multicast_receiver(multicast_id, subscriber_participant_id)

    def _check_multicast(self, multicast_id: str, subscriber: str, provider: str) -> None:
        prefix = provider + "/"
        if not multicast_id.startswith(prefix):
            raise ProviderRuntimeError("multicast id does not belong to the provider")
        name, *partitions = multicast_id[len(prefix):].split("/")
        try:
            make_multicast_id(provider, name, partitions, for_subscription=True)
        except MulticastError as exc:
            raise ProviderRuntimeError(f"bad multicast id: {exc}") from None
        if not _belongs_to_caller(self.router.table, subscriber):
            raise ProviderRuntimeError(
                f"multicast receiver {subscriber} is not a participant of the caller"
            )


class LocalDiscovery(Provider, interface=Discovery):
    """The local capabilities directory (spec/discovery.md, "The cluster controller's LCD").

    Local registrations; provisioned global providers (always known, never expire); and, once
    a GCD is attached (``attach_gcd``), the global directory: GLOBAL-scope providers are
    registered with the GCD, lookups go to it by discovery scope, its answers are cached for
    ``cache_max_age_ms`` and routed, and the CC's entries are kept fresh (touch) and cleaned
    after a restart (removeStale). A libjoynr runtime may only add or remove entries of its own
    participants (routed to the connection the call arrived over)."""

    serves_remote_callers = False

    def __init__(self, table: RoutingTable, router: MessageRouter | None = None) -> None:
        super().__init__()
        self._table = table
        self._router = router
        self._entries: dict[str, DiscoveryEntry] = {}
        self._provisioned: dict[str, DiscoveryEntryWithMetaInfo] = {}
        self._gcd: GlobalLink | None = None
        # participantId -> (when cached, entry): answers of the GCD
        self._cache: dict[str, tuple[int, DiscoveryEntryWithMetaInfo]] = {}
        self._global_gbids: dict[str, list[str]] = {}  # registered with the GCD, in these
        self.gcd_calls: Counter[str] = Counter()

    # ------------------------------------------------------------------ set-up

    def attach_gcd(self, link: GlobalLink) -> None:
        self._gcd = link

    @property
    def gbids(self) -> list[str]:
        return list(self._gcd.gbids) if self._gcd is not None else []

    def _check_owner(self, participant_id: str, action: str) -> None:
        if not _belongs_to_caller(self._table, participant_id):
            log.warning("discovery %s of %s refused: not a participant of %r", action,
                        participant_id, current_origin())
            raise ProviderRuntimeError(
                f"discovery {action} refused: {participant_id} is not routed to the caller")

    def _check_gbids(self, gbids: list[str]) -> list[str]:
        """The GBIDs to use: the caller's, checked, or all configured ones."""
        if not gbids:
            return self.gbids
        check_gbids(gbids, self.gbids)
        return list(gbids)

    # ------------------------------------------------------------------ add, remove

    async def add(self, entry: DiscoveryEntry) -> None:
        await self.add_in(entry, False, [])

    async def add_to_all(self, entry: DiscoveryEntry, await_global_registration: bool) -> None:
        await self.add_in(entry, await_global_registration, self.gbids)

    async def add_in(self, entry: DiscoveryEntry, await_global_registration: bool,
                     gbids: list[str]) -> None:
        if not (entry.domain and entry.interface_name and entry.participant_id):
            raise ProviderRuntimeError("discovery entry without domain, interface or "
                                       "participantId")
        self._check_owner(entry.participant_id, "add")
        gbids = self._check_gbids(gbids)
        pid = entry.participant_id
        self._entries[pid] = entry
        log.info("registered provider %s (%s, %s v%d.%d)", pid, entry.domain,
                 entry.interface_name, entry.provider_version.major_version,
                 entry.provider_version.minor_version)
        link = self._gcd
        if entry.qos.scope is not ProviderScope.GLOBAL or link is None:
            return
        self._global_gbids[pid] = gbids
        if not await_global_registration:
            link.in_background(f"add {pid}", lambda: link.add(entry, gbids),
                               still_wanted=lambda: self._entries.get(pid) is entry)
            return
        try:
            await link.add(entry, gbids)
        except BaseException:
            # the caller learns that it failed: the local registration is rolled back
            if self._entries.get(pid) is entry:
                del self._entries[pid]
                self._global_gbids.pop(pid, None)
            raise

    async def remove(self, participant_id: str) -> None:
        if participant_id in self._entries:
            self._check_owner(participant_id, "remove")
        if self._entries.pop(participant_id, None) is not None:
            log.info("unregistered provider %s", participant_id)
        gbids = self._global_gbids.pop(participant_id, None)
        link = self._gcd
        if gbids and link is not None:
            link.in_background(f"remove {participant_id}",
                               lambda: link.remove(participant_id, gbids),
                               still_wanted=lambda: participant_id not in self._entries)

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
                address = address_from_dict(gde.address)
            except AddressError as exc:
                log.warning("GCD answered %s with a bad address: %s", gde.participant_id, exc)
                continue
            meta = DiscoveryEntryWithMetaInfo(**{k: v for k, v in vars(gde).items()
                                                 if k != "address"}, is_local=False)
            self._cache[gde.participant_id] = (now, meta)
            if self._router is not None and gde.participant_id not in self._entries:
                self._router.add_route(gde.participant_id, address, is_globally_visible=True)
            entries.append(meta)
        return entries

    async def lookup(self, domains: list[str], interface_name: str,
                     discovery_qos: DiscoveryQos) -> list[DiscoveryEntryWithMetaInfo]:
        return await self.lookup_in(domains, interface_name, discovery_qos, [])

    async def lookup_in(self, domains: list[str], interface_name: str,
                        discovery_qos: DiscoveryQos, gbids: list[str]
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
        remote = [e for e in self._cached(discovery_qos.cache_max_age_ms, now) if fits(e)]
        link = self._gcd
        if not remote and link is not None:
            self.gcd_calls["lookup"] += 1
            remote = [e for e in self._remember(
                await link.lookup(domains, interface_name, gbids), now) if fits(e)]
        if scope is DiscoveryScope.LOCAL_THEN_GLOBAL and local:
            # some domains have local providers: those, plus the others' global ones
            local_domains = {e.domain for e in local}
            remote = [e for e in remote if e.domain not in local_domains]
        mine = {e.participant_id for e in local}
        # a provider known here is returned as local, whatever the GCD says
        return local + [e for e in remote if e.participant_id not in mine
                        and e.participant_id not in self._entries]

    async def lookup_participant(self, participant_id: str,
                                 discovery_qos: DiscoveryQos) -> DiscoveryEntryWithMetaInfo:
        return await self.lookup_participant_in(participant_id, discovery_qos, [])

    async def lookup_participant_in(self, participant_id: str, discovery_qos: DiscoveryQos,
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
            cached = self._cached_participant(participant_id, discovery_qos.cache_max_age_ms,
                                              now)
            if cached is not None and cached.expiry_date_ms >= now:
                return cached
            link = self._gcd
            if link is not None:
                self.gcd_calls["lookup_participant"] += 1
                found = self._remember([await link.lookup_participant(participant_id, gbids)],
                                       now)
                if found:
                    return found[0]
        raise ApplicationError(DiscoveryErrorCode.NO_ENTRY_FOR_PARTICIPANT.name,
                               f"no provider {participant_id}")

    def entries(self) -> list[DiscoveryEntry]:
        return list(self._entries.values())


class GlobalLink:
    """The local directory's way to the GCD: a proxy of it, the CC's GBIDs and address,
    background retries, and the freshness jobs (touch, removeStale)."""

    def __init__(self, gcd: Any, gbids: list[str], address: MqttAddress,
                 cluster_controller_id: str, *, retry_initial_s: float = 0.5,
                 retry_max_s: float = 30.0) -> None:
        self.gcd = gcd
        self.gbids = list(gbids)
        self.address = address
        self.cluster_controller_id = cluster_controller_id
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self._tasks: set[asyncio.Task[None]] = set()

    def _global_entry(self, entry: DiscoveryEntry) -> GlobalDiscoveryEntry:
        return GlobalDiscoveryEntry(**vars(entry), address=self.address.to_dict())

    async def _call(self, what: str, call: Awaitable[T]) -> T:
        """A GCD call: modelled errors pass; anything else is INTERNAL_ERROR for the caller."""
        try:
            return await call
        except ApplicationError:
            raise
        except JoynrError as exc:
            log.warning("GCD %s failed: %s", what, exc)
            raise ApplicationError(DiscoveryErrorCode.INTERNAL_ERROR.name,
                                   f"GCD {what} failed: {exc}") from None

    async def add(self, entry: DiscoveryEntry, gbids: list[str]) -> None:
        await self._call(f"add {entry.participant_id}",
                         self.gcd.add_in(self._global_entry(entry), gbids))
        log.info("provider %s registered globally in %s", entry.participant_id,
                 ", ".join(gbids))

    async def remove(self, participant_id: str, gbids: list[str]) -> None:
        try:
            await self._call(f"remove {participant_id}", self.gcd.remove_in(participant_id,
                                                                            gbids))
        except ApplicationError as exc:
            if exc.error not in (DiscoveryErrorCode.NO_ENTRY_FOR_PARTICIPANT.name,
                                 DiscoveryErrorCode.NO_ENTRY_FOR_SELECTED_BACKENDS.name):
                raise
        log.info("provider %s removed from the GCD (%s)", participant_id, ", ".join(gbids))

    async def lookup(self, domains: list[str], interface_name: str, gbids: list[str]
                     ) -> list[GlobalDiscoveryEntry]:
        result: list[GlobalDiscoveryEntry] = await self._call(
            f"lookup {interface_name}", self.gcd.lookup_in(domains, interface_name, gbids))
        return result

    async def lookup_participant(self, participant_id: str, gbids: list[str]
                                 ) -> GlobalDiscoveryEntry:
        result: GlobalDiscoveryEntry = await self._call(
            f"lookup {participant_id}", self.gcd.lookup_participant_in(participant_id, gbids))
        return result

    async def touch(self, participant_ids: list[str]) -> None:
        await self._call("touch", self.gcd.touch_participants(self.cluster_controller_id,
                                                              participant_ids))

    async def remove_stale(self, max_last_seen_ms: int) -> None:
        await self._call("removeStale", self.gcd.remove_stale(self.cluster_controller_id,
                                                              max_last_seen_ms))

    def in_background(self, what: str, call: Callable[[], Awaitable[object]], *,
                      still_wanted: Callable[[], bool] = lambda: True,
                      give_up_s: float | None = None) -> None:
        """Retry ``call`` with backoff until it succeeds, is no longer wanted, or (with
        ``give_up_s``) time is up. Modelled errors other than INTERNAL_ERROR end it too."""
        async def run() -> None:
            loop = asyncio.get_running_loop()
            deadline = None if give_up_s is None else loop.time() + give_up_s
            delay = self.retry_initial_s
            attempt = 0
            while still_wanted():
                attempt += 1
                try:
                    await call()
                    return
                except ApplicationError as exc:
                    if exc.error != DiscoveryErrorCode.INTERNAL_ERROR.name:
                        log.error("GCD %s refused: %s", what, exc)
                        return
                    level = logging.WARNING if attempt == 1 else logging.INFO
                    log.log(level, "GCD %s failed (attempt %d), retrying in %.1f s: %s", what,
                            attempt, delay, exc)
                if deadline is not None and loop.time() + delay > deadline:
                    log.error("GCD %s: giving up after %d attempts", what, attempt)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_max_s)

        task = asyncio.get_running_loop().create_task(run(), name=f"gcd-{what}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

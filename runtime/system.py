"""The cluster controller's own providers, served to its libjoynr runtimes.

- Routing (``system/Routing``): next hops and multicast receivers of the libjoynr runtimes.
- Discovery (``system/Discovery``): the local capabilities directory. For now it knows local
  registrations only and answers every scope from them; the global part comes with the GCD.

Both are registered in-process in the cluster controller under provisioned participantIds with
sticky routing entries. The caller's identity is the connection its request arrived over
(``message.origin``): a libjoynr runtime may only register next hops at its own address.
"""

from __future__ import annotations

import logging
from typing import Any

from runtime.addresses import (
    Address,
    AddressError,
    WebSocketClientAddress,
    address_from_dict,
)
from runtime.clock import now_ms
from runtime.discovery_types import (
    DiscoveryEntry,
    DiscoveryEntryWithMetaInfo,
    DiscoveryError,
    DiscoveryQos,
    DiscoveryScope,
    ProviderScope,
)
from runtime.dispatch import Provider, current_origin
from runtime.errors import ApplicationError, ProviderRuntimeError
from runtime.interface import attribute, errors, interface
from runtime.multicast import MulticastError, make_multicast_id
from runtime.router import MessageRouter
from runtime.routing import RoutingTable

__all__ = [
    "DEFAULT_DISCOVERY_PARTICIPANT_ID",
    "DEFAULT_ROUTING_PARTICIPANT_ID",
    "Discovery",
    "LocalDiscovery",
    "Routing",
    "RoutingProvider",
]

log = logging.getLogger(__name__)

DEFAULT_ROUTING_PARTICIPANT_ID = "system.routing.provider"
DEFAULT_DISCOVERY_PARTICIPANT_ID = "system.discovery.provider"


#: the modelled errors of the Discovery provider (kept under its old name too)
DiscoveryErrorEnum = DiscoveryError


@interface("system/Routing", version=(1, 0))
class Routing:
    # the cluster controller's MqttAddress in wire form ({} while it has none)
    global_address = attribute(dict[str, Any], readonly=True, notifiable=False)
    reply_to_address = attribute(dict[str, Any], readonly=True, notifiable=False)

    async def add_next_hop(self, participant_id: str, address: dict[str, Any],
                           is_globally_visible: bool) -> None: ...

    async def remove_next_hop(self, participant_id: str) -> None: ...

    async def resolve_next_hop(self, participant_id: str) -> bool: ...

    async def add_multicast_receiver(self, multicast_id: str, subscriber_participant_id: str,
                                     provider_participant_id: str) -> None: ...

    async def remove_multicast_receiver(self, multicast_id: str, subscriber_participant_id: str,
                                        provider_participant_id: str) -> None: ...


@interface("system/Discovery", version=(1, 0))
class Discovery:
    async def add(self, entry: DiscoveryEntry) -> None: ...

    async def remove(self, participant_id: str) -> None: ...

    async def lookup(self, domains: list[str], interface_name: str,
                     discovery_qos: DiscoveryQos) -> list[DiscoveryEntryWithMetaInfo]: ...

    @errors(DiscoveryErrorEnum)
    async def lookup_participant(self, participant_id: str,
                                 discovery_qos: DiscoveryQos) -> DiscoveryEntryWithMetaInfo: ...


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
    """The local capabilities directory: local registrations, plus the global entries it was
    given (provisioned; the GCD's come with the GCD issue).

    A libjoynr runtime may only add or remove entries of its own participants (routed to the
    connection the call arrived over)."""

    serves_remote_callers = False

    def __init__(self, table: RoutingTable) -> None:
        super().__init__()
        self._table = table
        self._entries: dict[str, DiscoveryEntry] = {}
        self._global: dict[str, DiscoveryEntryWithMetaInfo] = {}

    def _check_owner(self, participant_id: str, action: str) -> None:
        if not _belongs_to_caller(self._table, participant_id):
            log.warning("discovery %s of %s refused: not a participant of %r", action,
                        participant_id, current_origin())
            raise ProviderRuntimeError(
                f"discovery {action} refused: {participant_id} is not routed to the caller")

    async def add(self, entry: DiscoveryEntry) -> None:
        if not (entry.domain and entry.interface_name and entry.participant_id):
            raise ProviderRuntimeError("discovery entry without domain, interface or "
                                       "participantId")
        self._check_owner(entry.participant_id, "add")
        self._entries[entry.participant_id] = entry
        log.info("registered provider %s (%s, %s v%d.%d)", entry.participant_id, entry.domain,
                 entry.interface_name, entry.provider_version.major_version,
                 entry.provider_version.minor_version)

    async def remove(self, participant_id: str) -> None:
        if participant_id in self._entries:
            self._check_owner(participant_id, "remove")
        if self._entries.pop(participant_id, None) is not None:
            log.info("unregistered provider %s", participant_id)

    def _with_meta(self, entry: DiscoveryEntry) -> DiscoveryEntryWithMetaInfo:
        return DiscoveryEntryWithMetaInfo(**vars(entry), is_local=True)

    def add_global(self, entry: DiscoveryEntryWithMetaInfo) -> None:
        """A provider in another cluster controller (provisioned, or from the GCD)."""
        self._global[entry.participant_id] = entry

    async def lookup(self, domains: list[str], interface_name: str,
                     discovery_qos: DiscoveryQos) -> list[DiscoveryEntryWithMetaInfo]:
        now = now_ms()
        wanted = set(domains)
        on_change = discovery_qos.provider_must_support_on_change

        def fits(e: DiscoveryEntry) -> bool:
            return (e.domain in wanted and e.interface_name == interface_name
                    and e.expiry_date_ms >= now
                    and (e.qos.supports_on_change_subscriptions or not on_change))

        scope = discovery_qos.discovery_scope
        local = [self._with_meta(e) for e in self._entries.values() if fits(e)]
        if scope is DiscoveryScope.LOCAL_ONLY or (
            scope is DiscoveryScope.LOCAL_THEN_GLOBAL and local
        ):
            return local
        remote = [e for pid, e in self._global.items() if fits(e) and pid not in self._entries]
        if scope is DiscoveryScope.GLOBAL_ONLY:
            local = [e for e in local if e.qos.scope is ProviderScope.GLOBAL]
        return local + remote

    async def lookup_participant(self, participant_id: str,
                                 discovery_qos: DiscoveryQos) -> DiscoveryEntryWithMetaInfo:
        entry = self._entries.get(participant_id)
        if entry is not None and entry.expiry_date_ms >= now_ms():
            return self._with_meta(entry)
        remote = self._global.get(participant_id)
        if remote is not None and remote.expiry_date_ms >= now_ms() and (
            discovery_qos.discovery_scope is not DiscoveryScope.LOCAL_ONLY
        ):
            return remote
        raise ApplicationError(DiscoveryErrorEnum.NO_ENTRY_FOR_PARTICIPANT.name,
                               f"no provider {participant_id}")

    def entries(self) -> list[DiscoveryEntry]:
        return list(self._entries.values())

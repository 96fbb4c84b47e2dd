"""The cluster controller's system interfaces (Routing, Discovery) and their well-known
participantIds: what a libjoynr runtime calls and the cluster controller implements."""

from __future__ import annotations

from typing import Any

from runtime.discovery_types import (
    DiscoveryEntry,
    DiscoveryEntryWithMetaInfo,
    DiscoveryErrorCode,
    DiscoveryQos,
)
from runtime.interface import attribute, errors, interface, wire_name
from runtime.logs import get_logger

log = get_logger(__name__)


DEFAULT_ROUTING_PARTICIPANT_ID = "system.routing.provider"
DEFAULT_DISCOVERY_PARTICIPANT_ID = "system.discovery.provider"




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

    @wire_name("add")
    @errors(DiscoveryErrorCode)
    async def add_in(self, entry: DiscoveryEntry, await_global_registration: bool,
                     gbids: list[str]) -> None: ...

    @wire_name("addToAll")
    @errors(DiscoveryErrorCode)
    async def add_to_all(self, entry: DiscoveryEntry, await_global_registration: bool
                         ) -> None: ...

    async def remove(self, participant_id: str) -> None: ...

    @errors(DiscoveryErrorCode)
    async def lookup(self, domains: list[str], interface_name: str,
                     discovery_qos: DiscoveryQos) -> list[DiscoveryEntryWithMetaInfo]: ...

    @wire_name("lookup")
    @errors(DiscoveryErrorCode)
    async def lookup_in(self, domains: list[str], interface_name: str,
                        discovery_qos: DiscoveryQos, gbids: list[str]
                        ) -> list[DiscoveryEntryWithMetaInfo]: ...

    @errors(DiscoveryErrorCode)
    async def lookup_participant(self, participant_id: str,
                                 discovery_qos: DiscoveryQos) -> DiscoveryEntryWithMetaInfo: ...

    @wire_name("lookup_participant")
    @errors(DiscoveryErrorCode)
    async def lookup_participant_in(self, participant_id: str, discovery_qos: DiscoveryQos,
                                    gbids: list[str]) -> DiscoveryEntryWithMetaInfo: ...

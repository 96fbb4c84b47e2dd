"""The cluster controller's system interfaces (Routing, Discovery) and their well-known
participantIds: what a libjoynr runtime calls and the cluster controller implements.

Both are declared in joynr's shape, so that one declaration is right on both wires (this
project's msgpack and joynr's JSON):

- ``system/Routing`` version 0.1: the readonly String attributes ``globalAddress`` and
  ``replyToAddress`` (the serialized address JSON, ``_typeName`` first; ``""`` while the
  cluster controller has none, see :class:`Routing`), ``addNextHop`` (joynr declares one
  overload per address struct; here one method whose address is a map, its joynr datatype
  one of :data:`ADDRESS_TYPE_NAMES`), ``removeNextHop``, ``resolveNextHop``,
  ``addMulticastReceiver``, ``removeMulticastReceiver``;
- ``system/Discovery`` version 0.3: every overload of joynr's (the Python names tell them
  apart), answering ``DiscoveryEntryWithMetaInfo``.
"""

from __future__ import annotations

import json
from typing import Any, Final

from runtime.addresses import Address, AddressError, address_from_dict
from runtime.discovery_types import (
    DiscoveryEntry,
    DiscoveryEntryWithMetaInfo,
    DiscoveryErrorCode,
    DiscoveryQos,
)
from runtime.interface import attribute, errors, interface, joynr_datatypes, wire_name
from runtime.joynr_json import compact_json
from runtime.logs import get_logger

__all__ = [
    "ADDRESS_TYPE_NAMES",
    "DEFAULT_DISCOVERY_PARTICIPANT_ID",
    "DEFAULT_ROUTING_PARTICIPANT_ID",
    "Discovery",
    "DiscoveryErrorCode",
    "Routing",
    "address_from_json",
    "address_to_json",
]

log = get_logger(__name__)


#: joynr's participantIds of the cluster controller's Routing and Discovery providers
DEFAULT_ROUTING_PARTICIPANT_ID: Final = "CC.RoutingProvider.ParticipantId"
DEFAULT_DISCOVERY_PARTICIPANT_ID: Final = "CC.DiscoveryProvider.ParticipantId"

_ROUTING_TYPES: Final = "joynr.system.RoutingTypes."
#: the joynr address structs of Routing.addNextHop's overloads, in joynr's order
ADDRESS_TYPE_NAMES: Final = tuple(_ROUTING_TYPES + name for name in (
    "ChannelAddress", "MqttAddress", "BrowserAddress", "WebSocketAddress", "UdsAddress",
    "BinderAddress", "WebSocketClientAddress", "UdsClientAddress"))
#: the longest serialized address read
MAX_ADDRESS_JSON_CHARS: Final = 16 * 1024


def address_to_json(address: Address) -> str:
    """An address serialized as joynr writes it into a String (the Routing attributes,
    ``GlobalDiscoveryEntry.address``): compact, ``_typeName`` first."""
    return compact_json(address.to_dict())


def address_from_json(text: str) -> Address:
    """The address a serialized address JSON names; AddressError saying why not."""
    if len(text) > MAX_ADDRESS_JSON_CHARS:
        raise AddressError(f"serialized address longer than {MAX_ADDRESS_JSON_CHARS} chars")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise AddressError("serialized address is not JSON") from None
    return address_from_dict(data)


@interface("system/Routing", version=(0, 1))
class Routing:
    """joynr's Routing interface. The attributes hold the cluster controller's address
    serialized as JSON (``{"_typeName":"joynr.system.RoutingTypes.MqttAddress",...}``), the
    empty string while it has none (no MQTT backend): joynr's C++ cluster controller answers
    a ProviderRuntimeException then, but joynr's JavaScript runtime does not start without an
    answer to ``getReplyToAddress``, and a runtime of a cluster controller without a global
    address needs none. The attributes never change: they are not subscribable here."""

    global_address = attribute(str, readonly=True, notifiable=False)
    reply_to_address = attribute(str, readonly=True, notifiable=False)

    # the address: a map of one of the joynr structs, its joynr datatype the struct's name
    @joynr_datatypes("String", ADDRESS_TYPE_NAMES, "Boolean")
    async def add_next_hop(self, participant_id: str, address: dict[str, Any],
                           is_globally_visible: bool) -> None: ...

    async def remove_next_hop(self, participant_id: str) -> None: ...

    async def resolve_next_hop(self, participant_id: str) -> bool: ...

    async def add_multicast_receiver(self, multicast_id: str, subscriber_participant_id: str,
                                     provider_participant_id: str) -> None: ...

    async def remove_multicast_receiver(self, multicast_id: str, subscriber_participant_id: str,
                                        provider_participant_id: str) -> None: ...


@interface("system/Discovery", version=(0, 3))
class Discovery:
    """joynr's Discovery interface, every overload. The forms with GBIDs (and ``addToAll``)
    have modelled errors; the others fail with a provider runtime error naming the error.
    An empty GBID list stands for all the cluster controller's GBIDs."""

    async def add(self, entry: DiscoveryEntry) -> None: ...

    @wire_name("add")
    async def add_awaiting(self, entry: DiscoveryEntry, await_global_registration: bool
                           ) -> None: ...

    @wire_name("add")
    @errors(DiscoveryErrorCode)
    async def add_in(self, entry: DiscoveryEntry, await_global_registration: bool,
                     gbids: list[str]) -> None: ...

    @wire_name("addToAll")
    @errors(DiscoveryErrorCode)
    async def add_to_all(self, entry: DiscoveryEntry, await_global_registration: bool
                         ) -> None: ...

    async def lookup(self, domains: list[str], interface_name: str,
                     discovery_qos: DiscoveryQos) -> list[DiscoveryEntryWithMetaInfo]: ...

    @wire_name("lookup")
    @errors(DiscoveryErrorCode)
    async def lookup_in(self, domains: list[str], interface_name: str,
                        discovery_qos: DiscoveryQos, gbids: list[str]
                        ) -> list[DiscoveryEntryWithMetaInfo]: ...

    @wire_name("lookup")
    async def lookup_participant(self, participant_id: str) -> DiscoveryEntryWithMetaInfo: ...

    @wire_name("lookup")
    @errors(DiscoveryErrorCode)
    async def lookup_participant_in(self, participant_id: str, discovery_qos: DiscoveryQos,
                                    gbids: list[str]) -> DiscoveryEntryWithMetaInfo: ...

    async def remove(self, participant_id: str) -> None: ...

"""The cluster controller's system interfaces (Routing, Discovery), their well-known
participantIds, and the conversions between joynr's address structs and this project's
addresses.

The interfaces are generated from ``fidl/system/Routing.fidl`` and ``fidl/system/Discovery.fidl``
into :mod:`programming.generated.system` and re-exported here:

- ``system/Routing`` version 0.1: the readonly String attributes ``globalAddress`` and
  ``replyToAddress`` (the serialized address JSON, ``_typeName`` first; ``""`` while the
  cluster controller has none), ``addNextHop`` (one overload per address struct of
  ``joynr.system.RoutingTypes``, as joynr declares it: ``add_next_hop`` for the
  WebSocketClientAddress a runtime registers its participants at, ``add_next_hop_mqtt``,
  ``add_next_hop_web_socket``, ...), ``removeNextHop``, ``resolveNextHop``,
  ``addMulticastReceiver``, ``removeMulticastReceiver``;
- ``system/Discovery`` version 0.3: every overload of joynr's (``add``, ``add_awaiting``,
  ``add_in_backends``, ``add_to_all``, ``lookup``, ``lookup_in_backends``, ``lookup_participant``,
  ``lookup_participant_in``, ``remove``), answering ``DiscoveryEntryWithMetaInfo``. The forms
  with GBIDs (and ``addToAll``) have modelled errors; the others fail with a provider runtime
  error naming the error. An empty GBID list stands for all the cluster controller's GBIDs.

The address structs are plain data as they come off the wire; :func:`address_of` makes the
validated :class:`runtime.addresses.Address` a routing table keeps, :func:`address_struct` the
struct of one.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
from typing import Any, Final

from pyjoynr.programming.generated import system
from pyjoynr.programming.generated.system import Discovery, Routing
from pyjoynr.runtime.addresses import Address, AddressError, address_from_dict
from pyjoynr.runtime.interface import joynr_member_names, joynr_type_name
from pyjoynr.runtime.joynr_json import compact_json

__all__ = [
    "ADDRESS_STRUCTS",
    "ADDRESS_TYPE_NAMES",
    "DEFAULT_DISCOVERY_PARTICIPANT_ID",
    "DEFAULT_ROUTING_PARTICIPANT_ID",
    "SYSTEM_SERVICES_DOMAIN",
    "Discovery",
    "Routing",
    "address_from_json",
    "address_of",
    "address_struct",
    "address_to_json",
]


#: joynr's participantIds of the cluster controller's Routing and Discovery providers
DEFAULT_ROUTING_PARTICIPANT_ID: Final = "CC.RoutingProvider.ParticipantId"
DEFAULT_DISCOVERY_PARTICIPANT_ID: Final = "CC.DiscoveryProvider.ParticipantId"
#: joynr's domain of a cluster controller's system services (its default: the cluster
#: controller registers the providers it serves its runtimes on it)
SYSTEM_SERVICES_DOMAIN: Final = "io.joynr.system"

#: the joynr address structs of Routing.addNextHop's overloads, in joynr's order
ADDRESS_STRUCTS: Final[tuple[type[system.Address], ...]] = (
    system.ChannelAddress, system.MqttAddress, system.BrowserAddress, system.WebSocketAddress,
    system.UdsAddress, system.BinderAddress, system.WebSocketClientAddress,
    system.UdsClientAddress)
#: their joynr type names (``joynr.system.RoutingTypes.MqttAddress``, ...)
ADDRESS_TYPE_NAMES: Final = tuple(joynr_type_name(s) for s in ADDRESS_STRUCTS)
_STRUCT_NAMED: Final = dict(zip(ADDRESS_TYPE_NAMES, ADDRESS_STRUCTS, strict=True))
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
    return _address_of_json(text)


@functools.lru_cache(maxsize=64)
def _address_of_json(text: str) -> Address:
    """address_from_json's parse, kept for the texts met last (the GCD answers the same few
    provider addresses again and again; addresses are immutable; a text that is refused is
    not kept)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise AddressError("serialized address is not JSON") from None
    return address_from_dict(data)


def address_of(struct: system.Address) -> Address:
    """The address one of joynr's address structs names (its values checked as any address
    from the wire); AddressError saying why not (a struct of a transport this project does not
    have among them)."""
    members = joynr_member_names(type(struct))
    data: dict[str, Any] = {"_typeName": joynr_type_name(type(struct))}
    for fld in dataclasses.fields(struct):
        value = getattr(struct, fld.name)
        data[members[fld.name]] = value.name if isinstance(value, enum.Enum) else value
    return address_from_dict(data)


def address_struct(address: Address) -> system.Address:
    """The joynr address struct of an address that has a wire form (ValueError for one that
    has none, an in-process address)."""
    try:
        data = address.to_dict()
    except TypeError:  # (an in-process address: never sent)
        raise ValueError(f"{address!r} has no joynr address struct") from None
    struct = _STRUCT_NAMED.get(data.pop("_typeName", None))
    if struct is None:
        raise ValueError(f"{address!r} has no joynr address struct")
    by_member = {member: name for name, member in joynr_member_names(struct).items()}
    values = {by_member[member]: value for member, value in data.items()}
    if struct is system.WebSocketAddress:
        values["protocol"] = system.WebSocketProtocol[values["protocol"]]
    return struct(**values)

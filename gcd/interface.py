"""The GCD's joynr interface, GlobalCapabilitiesDirectory version 0.3, and joynr's well-known
values for reaching it.

This is what other programs know of the GCD: a cluster controller imports this module (to
provision the GCD's entry and build its proxy), never the GCD's provider, stores or service. The
two talk only through joynr messages of this interface, over MQTT.

Methods (joynr overloads share a wire name; the Python names tell them apart):

- ``add`` (one entry, or a list), in the GCD's own backend; ``add_in`` in the listed GBIDs;
- ``lookup`` by domains and interface, or by participantId, in the own backend; ``lookup_in``
  and ``lookup_participant_in`` in the listed GBIDs;
- ``remove`` (one participant, or a list) from the own backend; ``remove_in`` from the listed
  GBIDs;
- ``touch`` a cluster controller's entries (all, or some participants); ``removeStale``: its
  entries last seen before a time.

The forms with GBIDs have modelled errors (:class:`~runtime.discovery_types.DiscoveryErrorCode`);
the older forms have none and fail with a provider runtime error. :mod:`gcd.provider` states
the rules each method follows.
"""

from __future__ import annotations

from typing import Final

from runtime.discovery_types import DiscoveryErrorCode, GlobalDiscoveryEntry
from runtime.interface import errors, interface, wire_name

__all__ = [
    "GBID_HEADER",
    "GCD_DOMAIN",
    "GCD_INTERFACE",
    "GCD_PARTICIPANT_ID",
    "GCD_TOPIC",
    "GlobalCapabilitiesDirectory",
]

#: the GCD's participantId
GCD_PARTICIPANT_ID: Final = "capabilitiesdirectory_participantid"
#: the MQTT topic GCD instances are reached at, in every backend
GCD_TOPIC: Final = "discoverydirectory_channelid"
#: the domain the GCD is registered in
GCD_DOMAIN: Final = "io.joynr"
#: the name of its interface
GCD_INTERFACE: Final = "infrastructure/GlobalCapabilitiesDirectory"
#: the custom header of a call to the GCD naming the backend (GBID) it is for (``c-gb`` on
#: joynr's wire): a cluster controller sends the call to the GCD's topic in that backend
GBID_HEADER: Final = "gb"


@interface(GCD_INTERFACE, version=(0, 3))
class GlobalCapabilitiesDirectory:
    async def add(self, global_discovery_entry: GlobalDiscoveryEntry) -> None: ...

    @wire_name("add")
    async def add_entries(self, global_discovery_entries: list[GlobalDiscoveryEntry]
                          ) -> None: ...

    @wire_name("add")
    @errors(DiscoveryErrorCode)
    async def add_in(self, global_discovery_entry: GlobalDiscoveryEntry, gbids: list[str]
                     ) -> None: ...

    async def lookup(self, domains: list[str], interface_name: str
                     ) -> list[GlobalDiscoveryEntry]: ...

    @wire_name("lookup")
    @errors(DiscoveryErrorCode)
    async def lookup_in(self, domains: list[str], interface_name: str, gbids: list[str]
                        ) -> list[GlobalDiscoveryEntry]: ...

    @wire_name("lookup")
    async def lookup_participant(self, participant_id: str) -> GlobalDiscoveryEntry: ...

    @wire_name("lookup")
    @errors(DiscoveryErrorCode)
    async def lookup_participant_in(self, participant_id: str, gbids: list[str]
                                    ) -> GlobalDiscoveryEntry: ...

    async def remove(self, participant_id: str) -> None: ...

    @wire_name("remove")
    async def remove_participants(self, participant_ids: list[str]) -> None: ...

    @wire_name("remove")
    @errors(DiscoveryErrorCode)
    async def remove_in(self, participant_id: str, gbids: list[str]) -> None: ...

    async def touch(self, cluster_controller_id: str) -> None: ...

    @wire_name("touch")
    async def touch_participants(self, cluster_controller_id: str, participant_ids: list[str]
                                 ) -> None: ...

    @wire_name("removeStale")
    async def remove_stale(self, cluster_controller_id: str, max_last_seen_date_ms: int
                           ) -> None: ...

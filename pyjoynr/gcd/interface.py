"""The GCD's joynr interface, GlobalCapabilitiesDirectory version 0.3, and joynr's well-known
values for reaching it.

This is what other programs know of the GCD: a cluster controller imports this module (to
provision the GCD's entry and build its proxy), never the GCD's provider, stores or service. The
two talk only through joynr messages of this interface, over MQTT.

The interface is generated from ``fidl/infrastructure/GlobalCapabilitiesDirectory.fidl`` into
:mod:`programming.generated.infrastructure`. Its methods (joynr overloads share a wire name; the
Python names tell them apart):

- ``add`` (one entry) and ``add_entries`` (a list), in the GCD's own backend;
  ``add_in_backends`` in the listed GBIDs;
- ``lookup`` by domains and interface, or ``lookup_participant`` by participantId, in the own
  backend; ``lookup_in_backends`` and ``lookup_participant_in`` in the listed GBIDs;
- ``remove`` (one participant) and ``remove_participants`` (a list) from the own backend;
  ``remove_in_backends`` from the listed GBIDs;
- ``touch`` a cluster controller's entries (all), ``touch_participants`` (some);
  ``remove_stale``: its entries last seen before a time.

The forms with GBIDs have modelled errors
(:class:`~programming.discovery_types.DiscoveryErrorCode`); the older forms have none and fail
with a provider runtime error. :mod:`gcd.provider` states the rules each method follows.
"""

from __future__ import annotations

from typing import Final

from pyjoynr.programming.generated.infrastructure import GlobalCapabilitiesDirectory

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

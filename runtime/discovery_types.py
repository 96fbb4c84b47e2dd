"""The discovery data types described in docs/discovery.md.

Their joynr names are joynr's (``joynr.types.DiscoveryEntry``, ...), and so are their members'
in joynr's JSON (``cacheMaxAge``, ``discoveryTimeout``, ``isLocal``, ...): one declaration is
right in msgpack (this project's field names) and in joynr's JSON. joynr carries
``GlobalDiscoveryEntry.address`` as a string holding the serialized address JSON; here (and
in msgpack) it is the address's map.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.errors import ApplicationError
from runtime.interface import joynr_name

__all__ = [
    "CustomParameter",
    "DiscoveryEntry",
    "DiscoveryEntryWithMetaInfo",
    "DiscoveryErrorCode",
    "DiscoveryQos",
    "DiscoveryScope",
    "GlobalDiscoveryEntry",
    "ProviderQos",
    "ProviderScope",
    "Version",
    "check_gbids",
]

#: joynr's default expiry of a provider registration: 6 weeks
DEFAULT_PROVIDER_EXPIRY_MS = 6 * 7 * 24 * 3600 * 1000


@joynr_name("joynr.types.ProviderScope")
class ProviderScope(enum.Enum):
    GLOBAL = "GLOBAL"
    LOCAL = "LOCAL"


@joynr_name("joynr.types.DiscoveryScope")
class DiscoveryScope(enum.Enum):
    LOCAL_ONLY = "LOCAL_ONLY"
    LOCAL_THEN_GLOBAL = "LOCAL_THEN_GLOBAL"
    LOCAL_AND_GLOBAL = "LOCAL_AND_GLOBAL"
    GLOBAL_ONLY = "GLOBAL_ONLY"


@joynr_name("joynr.types.Version")
@dataclass
class Version:
    major_version: int = 1
    minor_version: int = 0


@joynr_name("joynr.types.CustomParameter")
@dataclass
class CustomParameter:
    name: str
    value: str


@joynr_name("joynr.types.ProviderQos")
@dataclass
class ProviderQos:
    custom_parameters: list[CustomParameter] = field(default_factory=list)
    priority: int = 0
    scope: ProviderScope = ProviderScope.LOCAL
    supports_on_change_subscriptions: bool = True


@joynr_name("joynr.types.DiscoveryEntry")
@dataclass
class DiscoveryEntry:
    provider_version: Version
    domain: str
    interface_name: str
    participant_id: str
    qos: ProviderQos
    last_seen_date_ms: int
    expiry_date_ms: int
    public_key_id: str = ""


@joynr_name("joynr.types.DiscoveryEntryWithMetaInfo")
@dataclass
class DiscoveryEntryWithMetaInfo(DiscoveryEntry):
    is_local: bool = True


@joynr_name("joynr.types.DiscoveryQos",
            members={"cache_max_age_ms": "cacheMaxAge", "discovery_timeout_ms": "discoveryTimeout"})
@dataclass
class DiscoveryQos:
    cache_max_age_ms: int = 0
    discovery_timeout_ms: int = 10_000
    discovery_scope: DiscoveryScope = DiscoveryScope.LOCAL_THEN_GLOBAL
    provider_must_support_on_change: bool = False


@joynr_name("joynr.types.GlobalDiscoveryEntry", serialized=("address",))
@dataclass
class GlobalDiscoveryEntry(DiscoveryEntry):
    """A provider as the GCD knows it: with its global address (the wire form of an
    MqttAddress whose broker_uri is the GBID; in joynr's JSON a string holding that form's
    JSON)."""

    address: dict[str, Any] = field(default_factory=dict)


@joynr_name("joynr.types.DiscoveryError")
class DiscoveryErrorCode(enum.Enum):
    """The modelled errors of discovery (GCD and local directory): the ``error`` of the
    ApplicationError a discovery call raises. Not to be confused with the exception
    :class:`runtime.errors.DiscoveryError` (no provider found)."""

    NO_ENTRY_FOR_PARTICIPANT = "NO_ENTRY_FOR_PARTICIPANT"
    INVALID_GBID = "INVALID_GBID"
    UNKNOWN_GBID = "UNKNOWN_GBID"
    NO_ENTRY_FOR_SELECTED_BACKENDS = "NO_ENTRY_FOR_SELECTED_BACKENDS"
    INTERNAL_ERROR = "INTERNAL_ERROR"


def check_gbids(gbids: Sequence[str], valid: Collection[str]) -> None:
    """Raise ApplicationError(INVALID_GBID | UNKNOWN_GBID) for a GBID list that is empty, holds
    ``""`` or a duplicate, or names a GBID not in ``valid``; the first offending element
    decides (docs/discovery.md, "GBID validation")."""
    if not gbids:
        raise ApplicationError(DiscoveryErrorCode.INVALID_GBID.name, "no GBID given")
    seen: set[str] = set()
    for gbid in gbids:
        if not gbid:
            raise ApplicationError(DiscoveryErrorCode.INVALID_GBID.name, "an empty GBID")
        if gbid in seen:
            raise ApplicationError(DiscoveryErrorCode.INVALID_GBID.name,
                                   f"GBID {gbid!r} given twice")
        if gbid not in valid:
            raise ApplicationError(DiscoveryErrorCode.UNKNOWN_GBID.name,
                                   f"unknown GBID {gbid[:100]!r}")
        seen.add(gbid)


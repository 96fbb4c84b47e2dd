"""The discovery data types, as joynr declares them: generated from ``fidl/types.fidl`` into
:mod:`programming.generated.types` and re-exported here with what goes with them.

Their joynr names are joynr's (``joynr.types.DiscoveryEntry``, ...), and so are their members'
in joynr's JSON (``cacheMaxAge``, ``isLocal``, ...). Like joynr's generated types, every member
has a default (0, ``""``, ``False``, an empty list, an enumeration's first enumerator), so a
value missing a member (joynr's JavaScript runtime leaves ``publicKeyId`` out) is read with the
default. ``GlobalDiscoveryEntry.address`` is a String holding the serialized address JSON, as
joynr declares it (:func:`programming.system_interfaces.address_to_json`).

:class:`DiscoveryQos` is what applications give a proxy builder: joynr's DiscoveryQos with this
project's defaults and its times also named with their unit.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final

from pyjoynr.programming.generated import types
from pyjoynr.programming.generated.types import (
    CustomParameter,
    DiscoveryEntry,
    DiscoveryEntryWithMetaInfo,
    DiscoveryScope,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.generated.types import DiscoveryError as DiscoveryErrorCode
from pyjoynr.runtime.errors import ApplicationError
from pyjoynr.runtime.interface import joynr_name

__all__ = [
    "DEFAULT_DISCOVERY_TIMEOUT_MS",
    "DEFAULT_PROVIDER_EXPIRY_MS",
    "MAX_DOMAINS",
    "MAX_GBIDS",
    "MAX_PARTICIPANT_IDS",
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
    "local_provider_qos",
]

#: joynr's default expiry of a provider registration: 6 weeks
DEFAULT_PROVIDER_EXPIRY_MS: Final = 6 * 7 * 24 * 3600 * 1000
#: how long a proxy builder's lookup may take unless told otherwise
DEFAULT_DISCOVERY_TIMEOUT_MS: Final = 10_000

# The bounds fidl/ puts on the lists of the discovery calls (``@details: maxLength N`` on each
# argument: the generated declarations carry them, the runtime refuses a longer list from the
# wire); named here for the code that splits what it sends by them
# (tests/unit/test_system_fidl.py checks them against the generated declarations).
#: the GBIDs one call names (``gbids`` of Discovery's and the GCD's add, lookup, remove)
MAX_GBIDS: Final = 100
#: the domains one lookup asks in (``domains``)
MAX_DOMAINS: Final = 1000
#: the participant ids one call of the GCD names (``participantIds`` of remove and touch)
MAX_PARTICIPANT_IDS: Final = 10_000

# (DiscoveryErrorCode: the modelled errors of discovery, the ``error`` of the ApplicationError
# a discovery call raises; joynr's DiscoveryError, named so here not to be confused with the
# exception runtime.errors.DiscoveryError, "no provider found")


@joynr_name("joynr.types.DiscoveryQos")
class DiscoveryQos(types.DiscoveryQos):
    """How a proxy's provider is looked up: joynr's DiscoveryQos (on the wire exactly that)
    with this project's defaults, a lookup of up to 10 s, local providers first
    (``LOCAL_THEN_GLOBAL``), no cached global entries (``cache_max_age_ms=0``). Its times are
    also read as ``cache_max_age_ms`` and ``discovery_timeout_ms``."""

    def __init__(self, cache_max_age_ms: int = 0,
                 discovery_timeout_ms: int = DEFAULT_DISCOVERY_TIMEOUT_MS,
                 discovery_scope: DiscoveryScope = DiscoveryScope.LOCAL_THEN_GLOBAL,
                 provider_must_support_on_change: bool = False, *,
                 cache_max_age: int | None = None, discovery_timeout: int | None = None
                 ) -> None:
        """The times by either name (joynr's, ``cache_max_age``, win; they are what
        ``dataclasses.replace`` and a value read from the wire give)."""
        super().__init__(
            cache_max_age_ms if cache_max_age is None else cache_max_age,
            discovery_timeout_ms if discovery_timeout is None else discovery_timeout,
            discovery_scope, provider_must_support_on_change)

    @property
    def cache_max_age_ms(self) -> int:
        return self.cache_max_age

    @property
    def discovery_timeout_ms(self) -> int:
        return self.discovery_timeout


def local_provider_qos() -> ProviderQos:
    """The qos a provider registers with unless told otherwise: at its own cluster controller
    only, offering on-change subscriptions."""
    return ProviderQos(scope=ProviderScope.LOCAL, supports_on_change_subscriptions=True)


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

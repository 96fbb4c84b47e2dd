"""The configuration of a libjoynr runtime: :class:`LibjoynrConfig`.

Frozen and checked when made: a configuration that exists is a usable one. The nested router
and websocket settings check themselves the same way.

    config = LibjoynrConfig(system_ttl_ms=5_000,
                            websocket=WebSocketClientSettings(tls_ca_file="ca.pem"))
    async with connect("wss://cc.example:4242/", config=config) as runtime:
        ...
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.router import RouterSettings
from runtime.system_interfaces import (
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
)
from transports.websocket_settings import WebSocketClientSettings

__all__ = ["LibjoynrConfig"]


@dataclass(frozen=True)
class LibjoynrConfig:
    """How a libjoynr runtime talks to its cluster controller (all fields have defaults)."""

    #: time to live (ms) of the runtime's own calls to the cluster controller's Routing and
    #: Discovery providers (registrations, lookups)
    system_ttl_ms: int = 10_000
    #: participantId of the cluster controller's Routing provider (as provisioned there)
    routing_participant_id: str = DEFAULT_ROUTING_PARTICIPANT_ID
    #: participantId of the cluster controller's Discovery provider (as provisioned there)
    discovery_participant_id: str = DEFAULT_DISCOVERY_PARTICIPANT_ID
    #: seconds a proxy waits for a reply beyond its request's expiry date (an error reply for
    #: an expired request can still be on its way)
    reply_grace_s: float = 1.0
    #: the runtime's router: queue limits, retries
    router: RouterSettings = field(default_factory=RouterSettings)
    #: the websocket connection to the cluster controller: frame limit, keep-alive, reconnect
    #: backoff, outgoing queue, TLS trust
    websocket: WebSocketClientSettings = field(default_factory=WebSocketClientSettings)

    def __post_init__(self) -> None:
        if type(self.system_ttl_ms) is not int or self.system_ttl_ms <= 0:
            raise ValueError(f"system_ttl_ms must be an int > 0, got {self.system_ttl_ms!r}")
        for name in ("routing_participant_id", "discovery_participant_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        if self.routing_participant_id == self.discovery_participant_id:
            raise ValueError("routing_participant_id and discovery_participant_id must differ, "
                             f"both are {self.routing_participant_id!r}")
        if not isinstance(self.reply_grace_s, (int, float)) or not self.reply_grace_s >= 0:
            raise ValueError(f"reply_grace_s must be >= 0, got {self.reply_grace_s!r}")
        if not isinstance(self.router, RouterSettings):
            raise TypeError(f"router must be RouterSettings, got {type(self.router).__name__}")
        if not isinstance(self.websocket, WebSocketClientSettings):
            raise TypeError("websocket must be WebSocketClientSettings, got "
                            f"{type(self.websocket).__name__}")

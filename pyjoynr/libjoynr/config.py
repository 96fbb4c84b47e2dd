"""The configuration of a libjoynr runtime: :class:`LibjoynrConfig`.

Frozen and checked when made: a configuration that exists is a usable one. The nested router
and websocket settings check themselves the same way.

    config = LibjoynrConfig(system_ttl_ms=5_000,
                            websocket=WebSocketClientSettings(tls_ca_file="ca.pem"))
    async with connect("wss://cc.example:4242/", config=config) as runtime:
        ...

The settings (all have defaults):

- ``dialect``: ``"native"`` (default) or ``"joynr"``. ``native`` speaks this project's dialect
  (msgpack frames, msgpack bodies to the cluster controller's Routing and Discovery providers).
  ``joynr`` makes the runtime one that a cluster controller of joynr's (Java or C++) can serve:
  joynr's init frame and SMRF frames on the websocket (whatever ``websocket.dialect`` says),
  joynr's JSON bodies to the Routing and Discovery providers, and joynr's behaviour: the start
  sequence of joynr's runtimes (``addNextHop`` of the routing proxy's own participantId, then
  ``getReplyToAddress``, then the discovery proxy's hop), the reply-to address on the requests
  to providers that are not local, and broadcast subscriptions made with
  ``addMulticastReceiver`` alone (no multicast subscription request on the wire). Both work
  with this project's cluster controller; ``websocket.dialect = "joynr"`` with ``dialect =
  "native"`` changes the frames only.
- ``multicast_body``: ``"json"`` (default) or ``"msgpack"``, the body format of the
  broadcasts (multicasts) of the providers registered in the runtime: JSON since their
  receivers may be joynr's runtimes; msgpack only for fleets of this project's runtimes.
- ``system_ttl_ms``, ``routing_participant_id``, ``discovery_participant_id``,
  ``reply_grace_ms``: the runtime's calls to the cluster controller's system providers and its
  proxies' wait for replies;
- ``router`` (:class:`~runtime.router.RouterSettings`), ``websocket``
  (:class:`~transports.websocket.settings.WebSocketClientSettings`) and ``uds``
  (:class:`~transports.uds.settings.UdsClientSettings`, for ``connect("unix:///path")``).

    async with connect("ws://joynr-cc:4242/", config=LibjoynrConfig(dialect="joynr")) as rt:
        ...
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import Final

from pyjoynr.programming.system_interfaces import (
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
)
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.messages import DIALECTS, JOYNR, NATIVE
from pyjoynr.runtime.router import RouterSettings
from pyjoynr.transports.uds.settings import UdsClientSettings
from pyjoynr.transports.websocket.settings import WebSocketClientSettings

__all__ = ["DIALECTS", "JOYNR", "MULTICAST_BODIES", "NATIVE", "LibjoynrConfig"]

#: the body formats of the runtime's multicasts
MULTICAST_BODIES: Final = tuple(f.value for f in (BodyFormat.JSON, BodyFormat.MSGPACK))


@dataclass(frozen=True)
class LibjoynrConfig:
    """How a libjoynr runtime talks to its cluster controller (all fields have defaults).

    ``dialect`` is ``"native"`` (this project's) or ``"joynr"`` (joynr's frames, bodies and
    behaviour towards the cluster controller, for one of joynr's; it sets the websocket
    client's dialect too); ``multicast_body`` is ``"json"`` or ``"msgpack"`` (see the module
    docstring)."""

    #: "native" or "joynr": the runtime's dialect towards its cluster controller ("joynr":
    #: joynr's init and SMRF frames, JSON bodies to the Routing and Discovery providers,
    #: joynr's start sequence, replyTo and multicast subscriptions; for a cluster controller
    #: of joynr's)
    dialect: str = NATIVE
    #: "json" or "msgpack": the body format of the multicasts (broadcasts) of the providers
    #: registered in the runtime (msgpack only when every receiver is a runtime of this project)
    multicast_body: str = BodyFormat.JSON.value
    #: time to live (ms) of the runtime's own calls to the cluster controller's Routing and
    #: Discovery providers (registrations, lookups)
    system_ttl_ms: int = 10_000
    #: participantId of the cluster controller's Routing provider (as provisioned there)
    routing_participant_id: str = DEFAULT_ROUTING_PARTICIPANT_ID
    #: participantId of the cluster controller's Discovery provider (as provisioned there)
    discovery_participant_id: str = DEFAULT_DISCOVERY_PARTICIPANT_ID
    #: milliseconds a proxy waits for a reply beyond its request's expiry date (an error
    #: reply for an expired request can still be on its way)
    reply_grace_ms: int = 1_000
    #: the runtime's router: queue limits, retries
    router: RouterSettings = field(default_factory=RouterSettings)
    #: the websocket connection to the cluster controller: frame limit, keep-alive, reconnect
    #: backoff, outgoing queue, TLS trust (its dialect is "joynr" whenever ``dialect`` is)
    websocket: WebSocketClientSettings = field(default_factory=WebSocketClientSettings)
    #: the Unix domain socket connection (``connect("unix:///path")``): frame limit, reconnect
    #: backoff, outgoing queue, and its frames: joynr's SMRF by default, as joynr's runtimes
    #: write them on a socket; the body formats follow ``dialect`` as over websocket
    uds: UdsClientSettings = field(default_factory=UdsClientSettings)
    _: KW_ONLY
    #: the former name of ``reply_grace_ms``, in seconds (deprecated; warns, and sets
    #: ``reply_grace_ms``; a keyword of the constructor only, read ``reply_grace_ms``)
    reply_grace_s: InitVar[float | None] = None

    def __post_init__(self, reply_grace_s: float | None) -> None:
        if reply_grace_s is not None:
            warnings.warn("LibjoynrConfig(reply_grace_s=...) is deprecated: pass "
                          "reply_grace_ms= (milliseconds)", DeprecationWarning, stacklevel=3)
            if not isinstance(reply_grace_s, (int, float)):
                raise ValueError(f"reply_grace_s must be a number, got {reply_grace_s!r}")
            object.__setattr__(self, "reply_grace_ms", round(reply_grace_s * 1000))
        if self.dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(map(repr, DIALECTS))}, got "
                             f"{self.dialect!r}")
        if self.multicast_body not in MULTICAST_BODIES:
            raise ValueError("multicast_body must be one of "
                             f"{', '.join(map(repr, MULTICAST_BODIES))}, got "
                             f"{self.multicast_body!r}")
        if type(self.system_ttl_ms) is not int or self.system_ttl_ms <= 0:
            raise ValueError(f"system_ttl_ms must be an int > 0, got {self.system_ttl_ms!r}")
        for name in ("routing_participant_id", "discovery_participant_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        if self.routing_participant_id == self.discovery_participant_id:
            raise ValueError("routing_participant_id and discovery_participant_id must differ, "
                             f"both are {self.routing_participant_id!r}")
        if type(self.reply_grace_ms) is not int or self.reply_grace_ms < 0:
            raise ValueError(f"reply_grace_ms must be an int >= 0, got {self.reply_grace_ms!r}")
        if not isinstance(self.router, RouterSettings):
            raise TypeError(f"router must be RouterSettings, got {type(self.router).__name__}")
        if not isinstance(self.uds, UdsClientSettings):
            raise TypeError(f"uds must be UdsClientSettings, got {type(self.uds).__name__}")
        if not isinstance(self.websocket, WebSocketClientSettings):
            raise TypeError("websocket must be WebSocketClientSettings, got "
                            f"{type(self.websocket).__name__}")

    @property
    def joynr_dialect(self) -> bool:
        """Whether the runtime speaks joynr's dialect."""
        return self.dialect == JOYNR

    @property
    def websocket_settings(self) -> WebSocketClientSettings:
        """The websocket settings the runtime uses: ``websocket``, in joynr's frame dialect
        when ``dialect`` is joynr."""
        if self.joynr_dialect and self.websocket.dialect != JOYNR:
            return dataclasses.replace(self.websocket, dialect=JOYNR)
        return self.websocket

    @property
    def uds_settings(self) -> UdsClientSettings:
        """The Unix domain socket settings the runtime uses: ``uds``, in joynr's frame dialect
        when ``dialect`` is joynr."""
        if self.joynr_dialect and self.uds.dialect != JOYNR:
            return dataclasses.replace(self.uds, dialect=JOYNR)
        return self.uds

    @property
    def multicast_body_format(self) -> BodyFormat:
        """``multicast_body`` as a BodyFormat."""
        return BodyFormat(self.multicast_body)

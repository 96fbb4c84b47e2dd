"""Ways in: what the router knows of the connection a message arrived over.

A transport makes one :class:`Inlet` per connection (a libjoynr runtime's websocket, an MQTT
backend, a runtime's connection to its cluster controller), decodes what arrives, and hands each
message to ``MessageRouter.receive(message, inlet)``. The router decides there, by the inlet's
kind, what a message from that kind of connection must pass (:mod:`runtime.rules`), counts and
logs what it refuses, and routes the rest (see :mod:`runtime.router`).

Pure data and bookkeeping, no I/O: the router is the only reader of an inlet's rules.
"""

from __future__ import annotations

import enum
import itertools
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from pyjoynr.runtime.addresses import Address
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import Message
from pyjoynr.runtime.routing import RoutingSettings

__all__ = ["Inlet", "InletKind", "SeenMessages"]

log = get_logger(__name__)


class InletKind(enum.Enum):
    """What is behind a connection, and so which rules its messages pass."""

    #: a libjoynr runtime connected to this cluster controller's websocket server: it speaks
    #: only for the participants routed to it (runtime.rules.admit_from_client)
    CLIENT = "client"
    #: an MQTT backend: messages from other cluster controllers; duplicates and expired ones
    #: are dropped, requests teach their replyTo route, nothing is relayed to another backend
    BACKEND = "backend"
    #: a libjoynr runtime's own cluster controller, which it trusts
    PARENT = "parent"


class SeenMessages:
    """The ids of messages accepted lately (with their expiry dates, epoch ms), at most about
    ``window`` of them: a message id seen again is a duplicate (MQTT QoS 1 delivers at least
    once). Expired ids go first when it is full, then the oldest tenth."""

    __slots__ = ("_seen", "window")

    def __init__(self, window: int) -> None:
        if window < 1:
            raise ValueError(f"the duplicate window must be >= 1, got {window}")
        self.window = window
        self._seen: dict[str, int] = {}

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def add(self, message_id: str, expiry_date_ms: int, now_ms: int) -> None:
        seen = self._seen
        if len(seen) >= self.window:
            for old in [i for i, expiry in seen.items() if expiry < now_ms]:
                del seen[old]
            if len(seen) >= self.window * 9 // 10:
                for old in list(itertools.islice(seen, len(seen) // 10 + 1)):
                    del seen[old]
        seen[message_id] = expiry_date_ms


@dataclass(eq=False, slots=True)
class Inlet:
    """One connection messages arrive over, as the router sees it.

    ``address``: the origin the transport's decoder gives each message of this connection
    (``message.origin``). ``name`` starts the log lines about its refusals (``websocket client
    a from 127.0.0.1:40000``), ``key`` is their rate-limiting key (runtime.logs), ``peer`` names
    the connection in audit records. ``counters``: where its refusals are counted, by reason
    (the transport's counters, which its metrics export).
    """

    kind: InletKind
    address: Address
    name: str
    key: str
    counters: Counter[str]
    peer: str | None = None
    #: CLIENT: every message must be custom-signed with exactly these bytes (the owner id of
    #: the connection's client certificate, on a joynr-dialect connection), else it is refused
    signature: bytes | None = None
    #: the user id of whoever sends over this connection, for access control (each message's
    #: ``creator``): a client certificate's CN, a Unix peer's user, a name configured for a
    #: websocket path or a backend; "" for none (as joynr's cluster controller names them)
    uid: str = ""
    #: BACKEND: a message custom-signed by its sender's runtime is taken to come from the uid
    #: of its signature (joynr's runtimes sign with their owner id) instead of ``uid``; only
    #: where every cluster controller on the backend is trusted to forward them unchanged
    trust_signature: bool = False
    #: BACKEND: its GBID (the learned replyTo routes carry it), the ids of messages accepted
    #: lately (shared by the backends of one transport), how long learned routes live
    gbid: str = ""
    seen: SeenMessages | None = None
    routing: RoutingSettings = field(default_factory=RoutingSettings)
    #: told of each message accepted, before it is routed (MQTT: the dialect its replyTo spoke)
    accepted: Callable[[Message], None] | None = None
    #: ``extra=`` fields of its log lines (e.g. ``{"clientId": ...}``), and the logger they
    #: are written to (the transport's)
    log_fields: dict[str, object] = field(default_factory=dict)
    logger: logging.Logger = log

"""The message router: the way in, next hop by recipient, queues, expiry, multicast.

Free of I/O: the router's decisions are a function of the messages given to it and of the time
read from the clock given at construction (epoch milliseconds; tests pass one they control).

The way in. A transport decodes what arrives on a connection and hands each message to
``receive(message, inlet)`` (the inlet: runtime.inlets, one per connection); what does not
decode it reports with ``refuse_frame``. ``receive`` runs what a message from that kind of
connection must pass (:mod:`runtime.rules`: a websocket client speaks only for its own
participants; from an MQTT backend no duplicates, nothing expired, nothing to relay, replyTo
routes learned), counts, audits and logs (rate-limited) each refusal, and routes the rest.
Messages made in this process (proxies, providers) go straight to ``route(message)``.

``route(message)`` decides and hands the message to the transport for the next hop's address
type, which accepts it (queues it on a connection) or refuses it (no connection right now).
Messages that cannot go out yet wait in a bounded queue per recipient (runtime.queues, all
sharing one budget) until a route appears, a retry succeeds, or they expire. ``sweep()`` drops
expired queued messages and retries refused sends with backoff; ``purge()`` removes expired
routes. The router runs no timers itself: the process's driver (:mod:`runtime.housekeeping`)
calls ``sweep`` and ``purge`` periodically.

What may be routed where is decided by :mod:`runtime.rules` (admission, expiry, queue room,
forwarding, multicast); the router acts on the outcome.

The routing table is the router's alone: routes change through ``add_route``,
``remove_route``, ``remove_routes_at``, ``learn_reply_to`` and ``purge`` (which deliver what
waited, and forget multicast receivers, as a route comes and goes), and others read it through
``route_of``, ``has_route``, ``participants_at``, ``routing_entries`` and ``routing_counts``.

A libjoynr runtime's router has a ``parent``: the cluster controller's WebSocketAddress, the
next hop of every participant without an entry of its own.

Counting, rate-limited logging and the audit are the process's
(:class:`runtime.telemetry.Telemetry`, given at construction and shared with the process's other
components). The telemetry's counters count every message dropped and why
(``dropped-<reason>``); its routing statistics (``telemetry.statistics``,
:class:`runtime.telemetry.RoutingStatistics`: the router increments them, everyone else reads
them there) count the messages handed to ``route`` per type (``routed_by_type``), and what
became of them per outcome and type (``outcomes``): ``forwarded`` (a transport took it; a
multicast once per next hop), ``queued`` (it waits; when it goes out later it is routed, and
counted, again) and ``dropped`` (when routed, or later from a queue: expired, waited too long).
Refusals on the way in are counted in the inlet's counters (the transport's). Each drop and
refusal is logged with the message id, rate-limited per reason and peer by the process's limit
of repeated warnings (runtime.logs; ``sweep()`` writes its summaries). The routine changes of
the table that remote input can cause once per message (a route refused,
``route-rejected-<why>``; the routes behind a connection that ended,
``routes-removed-at-address``; learned routes evicted, ``evicted-learned-route``; queued
messages delivered after a retry, ``delivered-after-retry``) are counted and logged at DEBUG
only.

The telemetry's audit hook (none by default) is told of every routing decision: a message
handed to a transport that accepted it (with the time it spent queued), queued, dropped or
refused with its reason, on the way in, here, and for what a transport drops after accepting
it (``dropped_by_transport``, which also answers the requester of a message that can never be
sent) (:class:`runtime.telemetry.RoutingAudit`, implemented by :class:`runtime.audit.AuditLog`;
records in docs/records.md). Without it the cost is one attribute test per decision. What a
transport sends on its own, outside ``route`` (the MQTT transport's multicasts to its
backends), it records itself through the same telemetry.

What one websocket connection may hold (runtime.quotas) is the cluster controller's, handed to
the router at construction: the way in counts the subscriptions a client requests (refused
beyond the bound); the Routing and Discovery providers and the websocket server are handed the
same quotas by the assembly, not through the router.

A cluster controller's router multicasts across backends through the link it is given
(``global_multicast`` at construction or :meth:`MessageRouter.register_global_multicast`: the
MQTT transport, which the process's assembly registers).

A cluster controller with access control registers a gate (:class:`DeliveryGate`,
``register_gate``): before a message is handed to a transport the gate is asked whether it may
go to that next hop, and a message it refuses is dropped there (a refused request's sender is
answered with a provider runtime error). The way in names each message's ``creator`` (the
inlet's ``uid``; from a backend, the message's signature where the inlet trusts it) for it.

The router's public members are receiving (``receive``, ``refuse_frame``,
``dropped_by_transport``), routing (``route``, ``register_transport``,
``register_global_multicast``, ``register_gate``, ``parent``), the routes (the table and
the multicast receivers: the writers and readers named above, ``multicast_receivers``,
``add_multicast_receiver``, ``remove_multicast_receiver``) and the queues (``queued``,
``queued_bytes``, ``sweep``, ``transport_ready``, ``settings``);
tests/unit/test_router_shape.py keeps that list.
"""


from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import ClassVar, NamedTuple, Protocol

from pyjoynr.runtime import rules
from pyjoynr.runtime.addresses import Address
from pyjoynr.runtime.bodies import decode_body, make_error_answer, make_error_reply
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import (
    JoynrError,
    MessageNotSentError,
    ProviderRuntimeError,
    SubscriptionError,
)
from pyjoynr.runtime.inlets import Inlet, InletKind
from pyjoynr.runtime.logs import get_logger, message_fields, peer_of
from pyjoynr.runtime.messages import REQUEST_TYPES, Message, MessageType, held_bytes
from pyjoynr.runtime.multicast import MulticastReceivers, to_mqtt_topic
from pyjoynr.runtime.payloads import PAYLOAD_TYPES, PayloadError, SubscriptionStop
from pyjoynr.runtime.queues import BoundedQueue, QueueBudget
from pyjoynr.runtime.quotas import SUBSCRIPTIONS, Quotas
from pyjoynr.runtime.records import DROPPED, QUEUED, outcome_of
from pyjoynr.runtime.routing import (
    DEFAULT_MAX_LEARNED_ROUTES,
    NO_EXPIRY_MS,
    PutResult,
    RoutingEntry,
    RoutingTable,
)
from pyjoynr.runtime.rules import check_expiry, check_forward
from pyjoynr.runtime.telemetry import RoutingAudit, Telemetry

__all__ = ["DeliveryGate", "GlobalMulticast", "MessageRouter", "RouterSettings", "RoutingAudit",
           "RoutingCounts", "Transport"]

log = get_logger(__name__)

# enum members as module constants for the per-message paths (cheaper to look up in 3.11)
_MULTICAST = MessageType.MULTICAST
_FROM_CLIENT = InletKind.CLIENT
_FROM_BACKEND = InletKind.BACKEND
_REPLY = MessageType.REPLY
#: the answers replaced by an error answer when they cannot be sent
_ANSWER_TYPES = frozenset({MessageType.REPLY, MessageType.SUBSCRIPTION_REPLY})

#: the longest reason an error answer in place of an unsent message carries (characters)
MAX_ANSWER_DETAIL = 1_000
#: the ids of the error answers a router made lately, not answered again (a bounded memory)
MAX_MADE_ANSWERS = 1_024
_SUBSCRIPTION_REQUESTS = REQUEST_TYPES - {MessageType.REQUEST}
_SUBSCRIPTION_STOP = MessageType.SUBSCRIPTION_STOP
#: the counter of each refusal of a route (``route-rejected-sticky``, ...)
_ROUTE_REFUSED: Mapping[PutResult, str] = {
    result: f"route-{result.name.lower().replace('_', '-')}" for result in PutResult}



class GlobalMulticast(Protocol):
    """The link of a cluster controller's router to multicast across backends (MQTT)."""

    def publish_multicast(self, message: Message) -> None: ...

    def subscribe_multicast(self, gbid: str, topic: str) -> None: ...

    def unsubscribe_multicast(self, gbid: str, topic: str) -> None: ...


class DeliveryGate(Protocol):
    """What decides, for each message about to be handed to a transport, whether it may go
    to that next hop (a cluster controller's access control: may the message's ``creator``
    call its recipient)."""

    def admit(self, message: Message, hop: Address) -> rules.Refusal | None:
        """None: it may go; a Refusal: it is dropped (counted under ``dropped-<reason>``,
        audited, logged rate-limited) and, for a request type, its sender answered with a
        provider runtime error carrying the refusal's detail."""
        ...


class Transport(Protocol):
    """What the router needs of a transport: hand over one message for one address."""

    def send(self, address: Address, message: Message) -> bool:
        """Accept the message for delivery (True) or refuse it for now (False). Never blocks."""
        ...


@dataclass(frozen=True)
class RouterSettings:
    #: messages kept for one recipient that has no route (or whose transport refused them)
    max_queued_per_recipient: int = 1_000
    #: messages kept for all such recipients together
    max_queued_total: int = 100_000
    #: bytes those messages may hold, for one recipient (a queue takes one message of any
    #: size while it is empty) and for all together (runtime.messages.held_bytes)
    max_queued_bytes_per_recipient: int = 8 * 1024 * 1024
    max_queued_bytes_total: int = 64 * 1024 * 1024
    #: the fraction of max_queued_total and max_queued_bytes_total that the messages from one
    #: connection (a websocket client, an MQTT backend) may take, so that one sender cannot
    #: take them all; 1.0: no limit of its own
    max_queued_share_per_connection: float = 0.5
    #: the longest a message waits in a queue (ms), whatever the expiry its sender chose
    max_queue_wait_ms: int = 300_000
    #: milliseconds between two sweeps of the queues (expiry, retries), run by the process's
    #: driver
    sweep_interval_ms: int = 100
    #: first and longest wait (ms) between two retries of a refused send
    retry_initial_ms: int = 100
    retry_max_ms: int = 5_000
    #: a message-not-sent error reply to an expired request lives this long (ms) so that it
    #: can still reach the caller, whose own deadline is a little after the request's expiry
    error_reply_ttl_ms: int = 5_000

    #: settings of earlier versions, in seconds -> their name now, in milliseconds: a
    #: configuration file or variable that still names one is read (times 1,000) with a
    #: warning (runtime.config)
    RENAMED_SECONDS: ClassVar[Mapping[str, str]] = {
        "sweep_interval_s": "sweep_interval_ms", "retry_initial_s": "retry_initial_ms",
        "retry_max_s": "retry_max_ms"}

    def __post_init__(self) -> None:
        if self.max_queued_per_recipient < 0 or self.max_queued_total < 0:
            raise ValueError("queue limits must be >= 0")
        if self.max_queued_bytes_per_recipient < 0 or self.max_queued_bytes_total < 0:
            raise ValueError("queue byte limits must be >= 0")
        if not 0 < self.max_queued_share_per_connection <= 1:
            raise ValueError("max_queued_share_per_connection must be > 0 and <= 1, got "
                             f"{self.max_queued_share_per_connection}")
        if self.max_queue_wait_ms < 1:
            raise ValueError(f"max_queue_wait_ms must be >= 1, got {self.max_queue_wait_ms}")
        for name, what in (("sweep_interval_ms", "sweep interval"),
                           ("retry_initial_ms", "first retry wait")):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 (the {what} in milliseconds), "
                                 f"got {getattr(self, name)}")
        if self.retry_max_ms < self.retry_initial_ms:
            raise ValueError("retry_max_ms must be >= retry_initial_ms")
        if self.error_reply_ttl_ms < 0:
            raise ValueError("error_reply_ttl_ms must be >= 0")


class RoutingCounts(NamedTuple):
    """How many routing entries there are, of which sticky and learned (replyTo), and by the
    type of their address."""

    entries: int
    sticky: int
    learned: int
    by_address_type: dict[str, int]


class _Waiting(NamedTuple):
    """A queued message, when it was first queued (clock ms) and the bytes it holds."""

    message: Message
    queued_at_ms: int
    size: int


# the bytes a queued message holds and where it came from (for the queues)
_size_of = attrgetter("size")
_origin_of = attrgetter("message.origin")


class _Pending(BoundedQueue[_Waiting]):
    """The queue of one recipient (runtime.queues: bounded per recipient, drawing on the
    router's budget for all queues and each connection's share) plus its retry state (clock
    milliseconds). ``hop`` is set for the queue of a multicast that one next hop refused: it is
    retried to that hop alone, since routing it again would deliver it twice everywhere else."""

    __slots__ = ("delay_ms", "hop", "retry_at_ms")

    name = "the recipient's queue"

    def __init__(self, max_messages: int, max_bytes: int, budget: QueueBudget,
                 hop: Address | None = None) -> None:
        super().__init__(max_messages, max_bytes, budget, size_of=_size_of,
                         origin_of=_origin_of)
        self.hop = hop
        self.retry_at_ms = 0
        self.delay_ms = 0


class MessageRouter:
    def __init__(
        self,
        table: RoutingTable,
        settings: RouterSettings | None = None,
        *,
        parent: Address | None = None,
        clock_ms: Callable[[], int] = now_ms,
        telemetry: Telemetry | None = None,
        quotas: Quotas | None = None,
        global_multicast: GlobalMulticast | None = None,
    ) -> None:
        """``table``: the routing table, from now on the router's alone (read it through
        :meth:`route_of` and the other readers below). ``telemetry``: the process's counters,
        limit of repeated warnings and audit hook (runtime.telemetry), shared with its other
        components; the router's own by default. ``global_multicast``: the link to multicast
        across backends (a cluster controller's MQTT transport; see
        :meth:`register_global_multicast`).
        ``quotas``: what each websocket connection may hold (runtime.quotas; a cluster
        controller's, shared with its websocket server and its Routing and Discovery
        providers), of which the way in counts subscription requests; none: unbounded."""
        self._table = table
        # what each connection holds, and may hold (None: no bounds): the way in counts the
        # subscriptions a websocket client requests
        self._quotas = quotas
        self.settings = settings or RouterSettings()
        self.parent = parent
        self.multicast_receivers = MulticastReceivers()
        # the link to multicast across backends (a cluster controller's MQTT transport)
        self._global_multicast = global_multicast
        # receivers of providers behind MQTT: subscriber -> {pattern: GBID}
        self._global_receivers: dict[str, dict[str, str]] = {}
        # the process's counters, limit of repeated warnings (the sweep writes their
        # summaries) and audit hook (runtime.telemetry)
        self._telemetry = telemetry = Telemetry() if telemetry is None else telemetry
        self._counters = telemetry.counters
        self._warnings = telemetry.warnings
        # the routing statistics are the telemetry's (read there): per type, every key
        # present, so that an increment is one dict lookup through these references
        statistics = telemetry.statistics
        self._routed_by_type = statistics.routed_by_type
        self._forwarded = statistics.outcomes["forwarded"]
        self._queued_by_type = statistics.outcomes["queued"]
        self._dropped_by_type = statistics.outcomes["dropped"]
        self._transports: dict[type[Address], Transport] = {}
        # keyed by recipient, or by (next hop, multicast id) for a refused multicast hop
        self._pending: dict[str | tuple[Address, str], _Pending] = {}
        # what all queues hold together, and the messages from each connection of them:
        # origin -> [messages, bytes] (runtime.queues)
        s = self.settings
        self._queued = QueueBudget(s.max_queued_total, s.max_queued_bytes_total,
                                   share=rules.origin_share_of(
                                       s.max_queued_total, s.max_queued_bytes_total,
                                       s.max_queued_share_per_connection))
        # a message being queued again by _flush keeps the time it was first queued
        self._requeued: _Waiting | None = None
        # the router's clock: epoch milliseconds
        self._clock_ms = clock_ms
        self._retry_initial_ms = self.settings.retry_initial_ms
        self._retry_max_ms = self.settings.retry_max_ms
        # the ids of the error answers made here lately, oldest first (_answer_unsent)
        self._made_answers: dict[str, None] = {}
        # what each message must pass before it is handed to a transport (none: nothing)
        self._gate: DeliveryGate | None = None

    # ------------------------------------------------------------------ set-up

    def register_transport(self, address_type: type[Address], transport: Transport) -> None:
        self._transports[address_type] = transport

    def register_global_multicast(self, link: GlobalMulticast) -> None:
        """Multicast across backends through ``link`` (a cluster controller's MQTT transport,
        made after its router): local providers' multicasts published to it, receivers of
        providers behind MQTT subscribed through it."""
        self._global_multicast = link

    def register_gate(self, gate: DeliveryGate | None) -> None:
        """Ask ``gate`` before each message is handed to a transport (a cluster controller's
        access control, made after its router); None: no gate."""
        self._gate = gate

    # ------------------------------------------------------------------ routes

    def add_route(
        self,
        participant_id: str,
        address: Address,
        *,
        is_globally_visible: bool,
        expiry_date_ms: int = NO_EXPIRY_MS,
        is_sticky: bool = False,
    ) -> PutResult:
        """Put a routing entry and deliver what was waiting for the participant."""
        result = self._table.put(
            participant_id,
            address,
            is_globally_visible=is_globally_visible,
            expiry_date_ms=expiry_date_ms,
            is_sticky=is_sticky,
        )
        # (an enum's name and value are properties: read for a line written only)
        if result.accepted:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("route %s -> %r: %s", participant_id, address, result.name)
            if participant_id in self._pending:
                self._flush(participant_id)
        else:
            # per call (an add_next_hop may be refused for each one a client sends): counted,
            # and logged by whoever asked, rate-limited
            self._counters[_ROUTE_REFUSED[result]] += 1
            if log.isEnabledFor(logging.DEBUG):
                log.debug("route %s -> %r refused: %s", participant_id, address,
                          result.reason)
        return result

    def remove_route(self, participant_id: str) -> bool:
        removed = self._table.remove(participant_id)
        if removed:
            log.debug("route %s removed", participant_id)
        return removed

    def remove_routes_at(self, address: Address) -> list[str]:
        """Forget everything behind ``address`` (a websocket client gone): routes and
        multicast receivers."""
        removed = self._table.remove_all_at(address)
        self._forget_receivers(removed)
        if removed:
            # (once per connection's end: the websocket server logs that end, rate-limited)
            self._counters["routes-removed-at-address"] += len(removed)
            log.debug("removed %d route(s) behind %r", len(removed), address)
        return removed

    def purge(self, now_ms: int | None = None) -> list[str]:
        """Remove the routes that expired before ``now_ms`` (default: the router's clock) and
        the multicast receivers of those participants; return their participantIds."""
        removed = self._table.purge(self._clock_ms() if now_ms is None else now_ms)
        self._forget_receivers(removed)
        return removed

    def _forget_receivers(self, participant_ids: list[str]) -> None:
        for pid in participant_ids:
            self.multicast_receivers.remove_receiver(pid)
            for pattern in list(self._global_receivers.get(pid, ())):
                self._forget_global_receiver(pattern, pid)

    def learn_reply_to(self, route: rules.ReplyRoute, *,
                       max_learned: int = DEFAULT_MAX_LEARNED_ROUTES) -> PutResult:
        """Remember how to answer the sender of a request that arrived over MQTT (the route
        :func:`runtime.rules.reply_route` decided) and deliver what was waiting for it. At most
        ``max_learned`` learned routes are kept: the ones that expire first make room."""
        sender = route.participant_id
        result, evicted = self._table.put_learned(sender, route.address,
                                                 expiry_date_ms=route.expiry_date_ms,
                                                 max_learned=max_learned)
        if evicted:
            self._forget_receivers(evicted)
            self._counters["evicted-learned-route"] += len(evicted)
            # per request past the bound (any MQTT publisher can cause it): counted only
            log.debug("%d learned route(s) evicted (at most %d are kept), the first: %s",
                     len(evicted), max_learned, evicted[0])
        if result.accepted:
            if sender in self._pending:
                self._flush(sender)
        elif log.isEnabledFor(logging.DEBUG):  # (per request from a backend)
            log.debug("replyTo %r of %s not learned: %s", route.address, sender, result.reason)
        return result

    # ------------------------------------------------------------------ multicast receivers

    def add_multicast_receiver(self, pattern: str, subscriber: str, provider: str) -> None:
        """A local receiver of ``pattern``; when the provider is behind MQTT, the CC
        subscribes to the pattern's topic in the provider's backend (reference counted)."""
        self.multicast_receivers.add(pattern, subscriber)
        if self._global_multicast is None:
            return
        gbid = rules.multicast_backend(self._table.get(provider))
        if gbid is None:
            return
        patterns = self._global_receivers.setdefault(subscriber, {})
        if pattern not in patterns:
            patterns[pattern] = gbid
            self._global_multicast.subscribe_multicast(gbid, to_mqtt_topic(pattern))

    def remove_multicast_receiver(self, pattern: str, subscriber: str) -> None:
        self.multicast_receivers.remove(pattern, subscriber)
        self._forget_global_receiver(pattern, subscriber)

    def _forget_global_receiver(self, pattern: str, subscriber: str) -> None:
        patterns = self._global_receivers.get(subscriber)
        if patterns is None or pattern not in patterns:
            return
        gbid = patterns.pop(pattern)
        if not patterns:
            del self._global_receivers[subscriber]
        if self._global_multicast is not None:
            self._global_multicast.unsubscribe_multicast(gbid, to_mqtt_topic(pattern))

    def transport_ready(self) -> None:
        """A transport (re)connected: try every queue now instead of at its next retry."""
        for recipient in list(self._pending):
            self._flush(recipient)

    # ------------------------------------------------------------------ the way in

    def receive(self, message: Message, inlet: Inlet) -> bool:
        """The way in: ``message`` arrived over ``inlet`` (decoded by its transport, with
        ``message.origin`` the inlet's address).

        What a message from that kind of connection must pass is decided here
        (:mod:`runtime.rules`): from a websocket client, the owner-id signature and that it
        speaks for its own participants only; from an MQTT backend, that it is no duplicate,
        not expired, not for a participant behind MQTT, a multicast only from its provider's
        cluster controller, and that a request's replyTo can be learned (it is, here). A
        refused message is counted in the inlet's counters, logged (rate-limited per reason and
        connection) and recorded in the audit log; the rest is routed. True when it was routed
        (it went out or waits in a queue)."""
        kind = inlet.kind
        if kind is _FROM_CLIENT:
            signature = inlet.signature
            refusal = (None if signature is None
                       else rules.check_signature(message, signature))
            if refusal is None:
                refusal = rules.admit_from_client(message, self._table.get(message.sender),
                                                  inlet.address)
            if refusal is not None:
                self._refused_in(inlet, message, refusal.reason, refusal.detail)
                return False
            message.creator = inlet.uid
            quotas = self._quotas
            if quotas is not None and (message.type in _SUBSCRIPTION_REQUESTS
                                       or message.type is _SUBSCRIPTION_STOP):
                refusal = self._count_subscription(message, inlet.address, quotas)
                if refusal is not None:
                    self._refused_by_bound(inlet, message, refusal)
                    return False
        elif kind is _FROM_BACKEND and not self._admit_from_backend(message, inlet):
            return False
        return self.route(message)

    def _count_subscription(self, message: Message, connection: Address, quotas: Quotas
                            ) -> rules.Refusal | None:
        """A subscription request from a websocket client holds a subscription of its
        connection (its id, until its QoS's expiry date, a stop or the connection's end); a
        refusal beyond the bound (runtime.quotas). A subscription stop gives it back. A body
        that does not decode is left to the provider, which refuses it (nothing held)."""
        try:
            if message.type is _SUBSCRIPTION_STOP:
                stop = decode_body(SubscriptionStop, message.body)
                quotas.release(SUBSCRIPTIONS, connection, stop.subscription_id)
                return None
            request = decode_body(PAYLOAD_TYPES[message.type], message.body)
        except (PayloadError, ValueError):
            return None
        sid = getattr(request, "subscription_id", None)
        qos = getattr(request, "qos", None)
        if not isinstance(sid, str):
            return None
        ends = qos.get("expiry_date_ms", 0) if isinstance(qos, dict) else 0
        return quotas.admit(SUBSCRIPTIONS, connection, sid,
                            ends_ms=ends if type(ends) is int and ends > 0 else 0,
                            now_ms=self._clock_ms())

    def _refused_by_bound(self, inlet: Inlet, message: Message, refusal: rules.Refusal
                          ) -> None:
        """A request a connection may not make (it holds as much as its bound lets it,
        runtime.quotas; counted there): audited, logged rate-limited, and its sender answered
        with a provider runtime error that names the bound."""
        audit = self._telemetry.audit
        if audit is not None:
            audit.decided(message, outcome_of(refusal.reason), None, refusal.reason,
                          inlet.peer)
        self._warnings.warning(inlet.logger, refusal.reason, inlet.key,
                               "%s: refused (%s): %s: %s", inlet.name, refusal.reason,
                               message.describe(), refusal.detail,
                               extra={**inlet.log_fields, **message_fields(message)})
        self._answer_error(message, ProviderRuntimeError(
            f"{message.type.name.lower().replace('_', ' ')} {message.id} refused: "
            f"{refusal.detail}"), "answered-bound")

    def _refused_by_gate(self, message: Message, refusal: rules.Refusal, hop: Address
                         ) -> None:
        """A message the gate keeps from ``hop`` (access control): dropped like any message
        not routed (counted, audited, logged rate-limited), and a request's sender answered
        with a provider runtime error that says why (one-way messages and subscription
        stops have no answer)."""
        self._drop(message, refusal.reason, refusal.detail, hop=hop)
        if refusal.answer and message.type in REQUEST_TYPES:
            self._answer_error(message, ProviderRuntimeError(refusal.detail)
                               if message.type is MessageType.REQUEST
                               else SubscriptionError(refusal.detail),
                               f"answered-{refusal.reason}")

    def _admit_from_backend(self, message: Message, inlet: Inlet) -> bool:
        seen = inlet.seen
        if seen is not None and message.id in seen:
            inlet.counters[rules.DUPLICATE] += 1
            if inlet.logger.isEnabledFor(logging.DEBUG):  # (describe() for a line written)
                inlet.logger.debug("%s: duplicate %s dropped", inlet.name, message.describe())
            audit = self._telemetry.audit
            if audit is not None:
                audit.decided(message, DROPPED, None, rules.DUPLICATE)
            return False
        now = self._clock_ms()
        table = self._table
        refusal = rules.admit_from_backend(message, table.get(message.recipient), now)
        if refusal is None and message.type is _MULTICAST:
            # only the provider's own CC publishes its multicasts, and only for its provider
            refusal = rules.admit_multicast_from_backend(
                message, table.get(rules.multicast_provider(message.recipient)))
        if refusal is None:
            refusal = self._learn_from(message, inlet, now)
        if refusal is not None:  # (and nothing is learned from it)
            self._refused_in(inlet, message, refusal.reason, refusal.detail)
            return False
        signature = message.custom_signature
        message.creator = (signature.decode("utf-8", "replace")
                           if signature and inlet.trust_signature else inlet.uid)
        if inlet.accepted is not None:
            inlet.accepted(message)
        if seen is not None:  # accepted: a redelivery is a duplicate
            seen.add(message.id, message.expiry_date_ms, now)
        return True

    def _learn_from(self, message: Message, inlet: Inlet, now: int) -> rules.Refusal | None:
        """Learn how to answer a request from a backend (runtime.rules.reply_route); a
        Refusal when it cannot be answered."""
        routing = inlet.routing
        route = rules.reply_route(message, gbid=inlet.gbid, now_ms=now,
                                  grace_ms=routing.reply_to_grace_ms,
                                  max_ttl_ms=routing.reply_to_max_ttl_ms)
        if route is None:  # not a request
            return None
        if isinstance(route, rules.Refusal):
            return route
        outcome = rules.reply_route_learned(
            self.learn_reply_to(route, max_learned=routing.max_learned_routes), route)
        if isinstance(outcome, rules.Notice):
            # the sender's id has a local or sticky route, which wins; answers go there
            inlet.counters[outcome.reason] += 1
            self._warnings.warning(inlet.logger, outcome.reason, inlet.key, "%s: %s: %s",
                                   inlet.name, message.describe(), outcome.detail,
                                   level=logging.INFO,
                                   extra={**inlet.log_fields, **message_fields(message)})
            return None
        return outcome

    def _refused_in(self, inlet: Inlet, message: Message, reason: str, detail: str) -> None:
        inlet.counters[reason] += 1
        audit = self._telemetry.audit
        if audit is not None:
            audit.decided(message, outcome_of(reason), None, reason, inlet.peer)
        self._warnings.warning(inlet.logger, reason, inlet.key, "%s: refused (%s): %s: %s",
                               inlet.name, reason, message.describe(), detail,
                               extra={**inlet.log_fields, **message_fields(message)})

    def refuse_frame(self, inlet: Inlet, reason: str, detail: str, *,
                     level: int = logging.WARNING, exc_info: bool = False) -> None:
        """What arrived over ``inlet`` is no message (it did not decode, it is too big, ...):
        counted in the inlet's counters under ``reason`` and logged, rate-limited."""
        inlet.counters[reason] += 1
        self._warnings.warning(inlet.logger, reason, inlet.key, "%s: refused (%s): %s",
                               inlet.name, reason, detail, level=level, exc_info=exc_info,
                               extra=inlet.log_fields)

    # ------------------------------------------------------------------ what transports report

    def dropped_by_transport(self, message: Message, reason: str, detail: str, *, hop: Address,
                             counters: Counter[str], key: str, name: str,
                             logger: logging.Logger, unsendable: bool = False) -> None:
        """A message a transport had accepted for ``hop`` is dropped there (expired in its
        queue, refused by a broker, ...): counted under ``dropped-<reason>`` in ``counters``
        (the transport's), recorded in the audit log and logged on ``logger``, rate-limited
        per reason and ``key`` (``name`` starts the line).

        ``unsendable``: it can never be sent on that hop (too big for the broker's or the
        connection's limit, not encodable in the hop's dialect, refused by the broker), so its
        requester hears of it at once (:meth:`_answer_unsent`): a request is answered with a
        message-not-sent error, a reply or subscription reply becomes an error answer to
        the same request."""
        counters[f"dropped-{reason}"] += 1
        audit = self._telemetry.audit
        if audit is not None:
            audit.decided(message, outcome_of(reason), hop, reason)
        self._warnings.warning(logger, reason, key, "%s: dropped %s: %s", name,
                               message.describe(), detail, extra=message_fields(message))
        if unsendable:
            self._answer_unsent(message, f"{name}: {detail}")

    # ------------------------------------------------------------------ what others may read

    def route_of(self, participant_id: str) -> RoutingEntry | None:
        """The routing entry of ``participant_id`` (immutable), None without one."""
        return self._table.get(participant_id)

    def has_route(self, participant_id: str) -> bool:
        return participant_id in self._table

    def participants_at(self, address: Address) -> set[str]:
        """The participants routed to ``address``."""
        return self._table.participants_at(address)

    def routing_entries(self) -> list[tuple[str, RoutingEntry]]:
        """A copy of the routing table (its entries are immutable): a consistent snapshot."""
        return list(self._table.items())

    @property
    def route_count(self) -> int:
        """How many routing entries there are."""
        return len(self._table)

    def routing_counts(self) -> RoutingCounts:
        table = self._table
        return RoutingCounts(len(table), table.sticky_count, table.learned_count,
                             table.count_by_address_type())

    # ------------------------------------------------------------------ routing

    def route(self, message: Message) -> bool:
        """Send ``message`` on its way (``message.origin``: where it arrived from, if at all).

        True when it went out or waits in a queue; False when it was dropped (logged, counted,
        and where the rules say so answered: a request with a message-not-sent error, a reply
        or subscription reply replaced by one, :meth:`_answer_unsent`)."""
        self._routed_by_type[message.type] += 1
        # the rule (rules.check_expiry) is asked only for a message past its expiry date: a
        # call fewer on every hop of every message; the rule has the last word
        expiry, now = message.expiry_date_ms, self._clock_ms()
        if expiry < now:
            refusal = check_expiry(expiry, now)
            if refusal is not None:
                self._refused(message, refusal, "before it could be routed")
                return False
        if message.type is _MULTICAST:
            return self._route_multicast(message)
        entry = self._table.get(message.recipient)
        address = entry.address if entry is not None else self.parent
        if address is None:
            return self._enqueue(message, "no route yet")
        return self._send(address, message)

    def _send(self, address: Address, message: Message) -> bool:
        refusal = check_forward(message.origin, address, self.parent)
        if refusal is not None:
            self._refused(message, refusal, hop=address)
            return False
        gate = self._gate
        if gate is not None:
            refusal = gate.admit(message, address)
            if refusal is not None:
                self._refused_by_gate(message, refusal, address)
                return False
        transport = self._transports.get(type(address))
        if transport is None:
            self._drop(message, "no-transport", f"no transport for {type(address).__name__}",
                       answer=True, hop=address)
            return False
        if transport.send(address, message):
            self._forwarded[message.type] += 1
            audit = self._telemetry.audit
            if audit is not None:
                requeued = self._requeued
                audit.delivered(message, address, 0 if requeued is None
                                or requeued.message is not message
                                else max(0, self._clock_ms() - requeued.queued_at_ms))
            return True
        self._counters["send-refused"] += 1
        hop = address if message.type is _MULTICAST else None
        return self._enqueue(message, f"transport refused it for {address!r}", hop, address)

    def _route_multicast(self, message: Message) -> bool:
        refusal = rules.check_multicast_sender(message)
        if refusal is not None:  # on every transport: only its provider sends a multicast
            self._refused(message, refusal)
            return False
        origin = message.origin
        receivers = []
        for receiver in self.multicast_receivers.receivers_for(message.recipient):
            entry = self._table.get(receiver)
            if entry is not None:
                receivers.append(entry.address)
        self._counters["multicast"] += 1
        for address in rules.multicast_hops(receivers, origin, self.parent):
            self._send(address, message)
        if self._global_multicast is not None and rules.publishes_globally(
            origin, self._table.get(message.sender)
        ):
            self._global_multicast.publish_multicast(message)
        return True

    # ------------------------------------------------------------------ queues

    def _enqueue(self, message: Message, why: str, hop: Address | None = None,
                 refused_by: Address | None = None) -> bool:
        """Queue ``message`` (``why``: for the log); ``hop``: the one next hop of a multicast
        that it waits for; ``refused_by``: the next hop whose transport refused it (None: no
        route)."""
        key = message.recipient if hop is None else (hop, message.recipient)
        requeued = self._requeued
        if requeued is not None and requeued.message is message:
            waiting = requeued
        else:
            waiting = _Waiting(message, self._clock_ms(), held_bytes(message))
        pending = self._pending.get(key)
        if pending is None:
            s = self.settings
            pending = _Pending(s.max_queued_per_recipient, s.max_queued_bytes_per_recipient,
                               self._queued, hop)
            refusal = pending.offer(waiting, waiting.size, message.origin, why)
            if refusal is None:
                self._pending[key] = pending
        else:
            refusal = pending.offer(waiting, waiting.size, message.origin, why)
        if refusal is not None:
            self._refused(message, refusal, hop=refused_by)
            return False
        self._counters["queued"] += 1
        self._queued_by_type[message.type] += 1
        audit = self._telemetry.audit
        if audit is not None and (requeued is None or requeued.message is not message):
            # (a message queued again after a retry was recorded when it was first queued)
            audit.decided(message, QUEUED, refused_by)
        if log.isEnabledFor(logging.DEBUG):  # (describe() only for a line written)
            log.debug("queued %s: %s", message.describe(), why)
        return True

    def _flush(self, key: str | tuple[Address, str]) -> None:
        pending = self._pending.pop(key, None)
        if pending is None:
            return
        waited = pending.drain()
        # route() and _send() queue again whatever still cannot go out, in order; such a
        # message keeps the time it was first queued (the cap on its wait counts from there)
        hop = pending.hop
        try:
            for waiting in waited:
                self._requeued = waiting
                if hop is None:
                    self.route(waiting.message)
                else:
                    self._send(hop, waiting.message)
        finally:
            self._requeued = None

    def queued(self, recipient: str | tuple[Address, str] | None = None) -> int:
        if recipient is None:
            return self._queued.messages
        pending = self._pending.get(recipient)
        return 0 if pending is None else len(pending.items)

    def queued_bytes(self, origin: Address | None = None) -> int:
        """The bytes all queued messages hold, or those that arrived from ``origin``."""
        if origin is None:
            return self._queued.bytes
        return self._queued.held_by(origin).bytes

    def sweep(self, now_ms: int | None = None) -> None:
        """Drop queued messages expired at ``now_ms`` (default: the router's clock) or queued
        longer than ``max_queue_wait_ms``; retry the queues whose backoff has passed (doubling
        from ``retry_initial_ms`` up to ``retry_max_ms`` while the transport still refuses); write
        the summaries of rate-limited warnings whose interval has ended."""
        self._warnings.flush()
        if not self._pending:
            return
        now = self._clock_ms() if now_ms is None else now_ms
        max_wait_ms = self.settings.max_queue_wait_ms
        dropped: list[tuple[_Waiting, rules.Refusal]] = []

        def leaves(waiting: _Waiting) -> bool:
            refusal = rules.check_queued(waiting.message.expiry_date_ms, now,
                                         queued_at_ms=waiting.queued_at_ms,
                                         max_wait_ms=max_wait_ms)
            if refusal is None:
                return False
            dropped.append((waiting, refusal))
            return True

        for key in list(self._pending):
            pending = self._pending[key]
            pending.remove_if(leaves)
            for waiting, refusal in dropped:
                self._refused(waiting.message, refusal, hop=pending.hop)
            dropped.clear()
            if not pending.items:
                del self._pending[key]
                continue
            has_route = pending.hop is not None or key in self._table or self.parent is not None
            if has_route and now >= pending.retry_at_ms:
                pending.delay_ms = min(max(pending.delay_ms * 2, self._retry_initial_ms),
                                       self._retry_max_ms)
                pending.retry_at_ms = now + pending.delay_ms
                before = len(pending.items)
                self._flush(key)
                if key in self._pending:
                    # still refused: keep the backoff going on the re-created queue
                    again = self._pending[key]
                    again.delay_ms, again.retry_at_ms = pending.delay_ms, pending.retry_at_ms
                else:
                    self._counters["delivered-after-retry"] += before
                    log.debug("delivered %d queued message(s) for %s", before, key)

    # ------------------------------------------------------------------ drops

    def _refused(self, message: Message, refusal: rules.Refusal, context: str = "", *,
                 hop: Address | None = None) -> None:
        detail = f"{refusal.detail}, {context}" if context else refusal.detail
        self._drop(message, refusal.reason, detail, answer=refusal.answer, hop=hop)

    def _drop(self, message: Message, reason: str, detail: str, *, answer: bool = False,
              hop: Address | None = None) -> None:
        """Count, log, record and (``answer``) answer a message not routed for ``reason``;
        ``hop``: the next hop it was meant for, if one was chosen."""
        self._counters[f"dropped-{reason}"] += 1
        self._dropped_by_type[message.type] += 1
        audit = self._telemetry.audit
        if audit is not None:
            audit.decided(message, outcome_of(reason), hop, reason)
        self._warnings.warning(log, reason, peer_of(message.origin), "dropped %s: %s",
                              message.describe(), detail, extra=message_fields(message))
        if answer:
            self._answer_unsent(message, detail)

    def _answer_unsent(self, message: Message, detail: str) -> None:
        """Tell the requester at once that ``message`` was not sent (``detail``: why; cut to
        :data:`MAX_ANSWER_DETAIL` characters so that the answer fits where the message did
        not): a request-type message is answered to its sender (:meth:`_answer_error`); a
        reply or subscription reply is replaced by an error answer to the same request, routed
        to its recipient as the reply would have been (counted as ``answered-unsent-reply``).
        The native body format carries a JoynrMessageNotSentException, joynr's JSON the type
        every joynr runtime decodes (runtime.joynr_json, docs/wire.md). An error answer this
        router made is not answered again when it cannot be sent either."""
        if len(detail) > MAX_ANSWER_DETAIL:
            detail = detail[:MAX_ANSWER_DETAIL] + "..."
        kind = message.type
        if kind in REQUEST_TYPES:
            self._answer_error(message, MessageNotSentError(
                f"message {message.id} to {message.recipient} not sent: {detail}"))
            return
        if (kind not in _ANSWER_TYPES or message.id in self._made_answers
                or message.expiry_date_ms <= self._clock_ms()):
            return  # (an expired answer's requester waits no longer)
        what = "reply" if kind is _REPLY else "subscription reply"
        try:
            answer = make_error_reply(
                message,
                MessageNotSentError(f"{what} {message.id} from {message.sender} not sent: "
                                    f"{detail}"),
                expiry_date_ms=max(message.expiry_date_ms,
                                   self._clock_ms() + self.settings.error_reply_ttl_ms))
        except PayloadError as exc:
            self._warnings.warning(log, "unanswerable", peer_of(message.origin),
                                   "cannot answer in place of unsent %s: %s",
                                   message.describe(), exc, extra=message_fields(message))
            return
        self._remember_answer(answer.id)
        self._counters["answered-unsent-reply"] += 1
        self.route(answer)

    def _remember_answer(self, message_id: str) -> None:
        made = self._made_answers
        made[message_id] = None
        if len(made) > MAX_MADE_ANSWERS:
            del made[next(iter(made))]

    def _answer_error(self, request: Message, error: JoynrError,
                      counter: str = "answered-not-sent") -> None:
        """Tell the sender of an undeliverable or refused request (a reply, or a
        subscription reply) of ``error``, in the body format of the request; counted under
        ``counter``."""
        try:
            answer = make_error_answer(
                request,
                error,
                expiry_date_ms=max(request.expiry_date_ms,
                                   self._clock_ms() + self.settings.error_reply_ttl_ms),
            )
        except PayloadError as exc:
            self._counters["unanswerable-not-sent"] += 1
            self._warnings.warning(log, "unanswerable-not-sent", peer_of(request.origin),
                                   "cannot answer undeliverable %s: %s", request.describe(), exc,
                                   extra=message_fields(request))
            return
        if answer.recipient in self._table or self.parent is not None:
            self._remember_answer(answer.id)
            self._counters[counter] += 1
            self.route(answer)

"""The message router: next hop by recipient, queues for unknown recipients, expiry, multicast.

Free of I/O: the router's decisions are a function of the messages given to it and of the time
read from the clock given at construction (epoch milliseconds; tests pass one they control).
``route(message)`` decides and hands the message to the transport for the next hop's address
type, which accepts it (queues it on a connection) or refuses it (no connection right now).
Messages that cannot go out yet wait in a bounded queue per recipient until a route appears, a
retry succeeds, or they expire. ``sweep()`` drops expired queued messages and retries refused
sends with backoff; ``purge()`` removes expired routes. The router runs no timers itself: the
process's driver (:mod:`runtime.housekeeping`) calls ``sweep`` and ``purge`` periodically.

What may be routed where is decided by :mod:`runtime.rules` (expiry, queue room, forwarding,
multicast); the router acts on the outcome.

A libjoynr runtime's router has a ``parent``: the cluster controller's WebSocketAddress, the
next hop of every participant without an entry of its own.

Counters (``router.counters``) count every message dropped and why (``dropped-<reason>``);
``routed_by_type`` counts the messages handed to ``route`` per type, and ``outcomes`` what
became of them per outcome and type: ``forwarded`` (a transport took it; a multicast once per
next hop), ``queued`` (it waits; when it goes out later it is routed, and counted, again) and
``dropped`` (when routed, or later from a queue: expired, waited too long). Each drop is logged
with the message id, rate-limited per reason and origin (``router.warnings``, one per process,
used by the transports and providers on this router as well; ``sweep()`` writes its
summaries, see :mod:`runtime.logs`).

The audit hook: ``router.audit`` (None by default) is told of every routing decision — a
message handed to a transport that accepted it (with the time it spent queued), queued, dropped
or refused with its reason — by the router here and by the transports for what they refuse on
admission (:class:`RoutingAudit`, implemented by :class:`runtime.audit.AuditLog`; records in
docs/records.md). Without it the cost is one attribute test per decision.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from pyjoynr.runtime import rules
from pyjoynr.runtime.addresses import Address
from pyjoynr.runtime.bodies import make_error_answer
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import JoynrError, MessageNotSentError
from pyjoynr.runtime.logs import RepeatedWarnings, get_logger, message_fields, peer_of
from pyjoynr.runtime.messages import REQUEST_TYPES, Message, MessageType, held_bytes
from pyjoynr.runtime.multicast import MulticastReceivers, to_mqtt_topic
from pyjoynr.runtime.payloads import PayloadError
from pyjoynr.runtime.records import QUEUED, outcome_of
from pyjoynr.runtime.routing import (
    DEFAULT_MAX_LEARNED_ROUTES,
    NO_EXPIRY_MS,
    PutResult,
    RoutingTable,
)
from pyjoynr.runtime.rules import check_expiry, check_forward

__all__ = ["OUTCOMES", "GlobalMulticast", "MessageRouter", "RouterSettings", "RoutingAudit",
           "Transport"]

log = get_logger(__name__)

# enum members as module constants for the per-message paths (cheaper to look up in 3.11)
_MULTICAST = MessageType.MULTICAST

#: what becomes of a routed message (``MessageRouter.outcomes``)
OUTCOMES = ("forwarded", "queued", "dropped")


class GlobalMulticast(Protocol):
    """The link of a cluster controller's router to multicast across backends (MQTT)."""

    def publish_multicast(self, message: Message) -> None: ...

    def subscribe_multicast(self, gbid: str, topic: str) -> None: ...

    def unsubscribe_multicast(self, gbid: str, topic: str) -> None: ...


class RoutingAudit(Protocol):
    """Told of each routing decision (runtime.audit.AuditLog). Must not block or raise: it is
    called on the routing path."""

    def delivered(self, message: Message, hop: Address, queued_ms: int) -> None:
        """``message`` was accepted by the transport of ``hop`` after ``queued_ms`` in a queue."""
        ...

    def decided(self, message: Message, outcome: str, hop: Address | None = None,
                reason: str | None = None, peer: str | None = None) -> None:
        """``message`` was queued (``hop``: whose transport refused it; None: no route yet),
        dropped or refused (``outcome``, runtime.records) for ``reason``."""
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
    #: seconds between two sweeps of the queues (expiry, retries), run by the process's driver
    sweep_interval_s: float = 0.1
    #: first and longest wait between two retries of a refused send
    retry_initial_s: float = 0.1
    retry_max_s: float = 5.0
    #: a message-not-sent error reply to an expired request lives this long (ms) so that it
    #: can still reach the caller, whose own deadline is a little after the request's expiry
    error_reply_ttl_ms: int = 5_000

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
        for name, what in (("sweep_interval_s", "sweep interval"),
                           ("retry_initial_s", "first retry wait")):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 (the {what} in seconds), "
                                 f"got {getattr(self, name)}")
        if self.retry_max_s < self.retry_initial_s:
            raise ValueError("retry_max_s must be >= retry_initial_s")
        if self.error_reply_ttl_ms < 0:
            raise ValueError("error_reply_ttl_ms must be >= 0")


class _Waiting(NamedTuple):
    """A queued message, when it was first queued (clock ms) and the bytes it holds."""

    message: Message
    queued_at_ms: int
    size: int


class _Pending:
    """The queue of one recipient plus its retry state (clock milliseconds). ``hop`` is set
    for the queue of a multicast that one next hop refused: it is retried to that hop alone,
    since routing it again would deliver it twice everywhere else."""

    __slots__ = ("bytes", "delay_ms", "hop", "messages", "retry_at_ms")

    def __init__(self, hop: Address | None = None) -> None:
        self.hop = hop
        self.messages: deque[_Waiting] = deque()
        self.bytes = 0
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
    ) -> None:
        self.table = table
        self.settings = settings or RouterSettings()
        self.parent = parent
        self.multicast_receivers = MulticastReceivers()
        #: set by the MQTT transport of a cluster controller
        self.global_multicast: GlobalMulticast | None = None
        # receivers of providers behind MQTT: subscriber -> {pattern: GBID}
        self._global_receivers: dict[str, dict[str, str]] = {}
        self.counters: Counter[str] = Counter()
        #: the rate limit of this process's repeated warnings (runtime.logs); the sweep writes
        #: their summaries
        self.warnings = RepeatedWarnings()
        # per type (every key present: an increment is one dict lookup), for statistics
        self.routed_by_type: dict[MessageType, int] = dict.fromkeys(MessageType, 0)
        self.outcomes: dict[str, dict[MessageType, int]] = {
            outcome: dict.fromkeys(MessageType, 0) for outcome in OUTCOMES}
        self._forwarded = self.outcomes["forwarded"]
        #: told of every routing decision when set (the audit log; see the module docstring)
        self.audit: RoutingAudit | None = None
        self._transports: dict[type[Address], Transport] = {}
        # keyed by recipient, or by (next hop, multicast id) for a refused multicast hop
        self._pending: dict[str | tuple[Address, str], _Pending] = {}
        self._pending_total = 0
        self._pending_bytes = 0
        # what the messages from each connection hold in the queues: origin -> [messages, bytes]
        self._by_origin: dict[Address, list[int]] = {}
        # a message being queued again by _flush keeps the time it was first queued
        self._requeued: _Waiting | None = None
        s = self.settings
        self._queue_limits = rules.QueueLimits(
            s.max_queued_per_recipient, s.max_queued_total, s.max_queued_bytes_per_recipient,
            s.max_queued_bytes_total, s.max_queued_share_per_connection)
        #: the router's clock: epoch milliseconds
        self.clock_ms = clock_ms
        self._retry_initial_ms = round(self.settings.retry_initial_s * 1000)
        self._retry_max_ms = round(self.settings.retry_max_s * 1000)

    @property
    def routed(self) -> int:
        """Messages handed to route() so far (a queued one again when it goes out)."""
        return sum(self.routed_by_type.values())

    # ------------------------------------------------------------------ set-up

    def register_transport(self, address_type: type[Address], transport: Transport) -> None:
        self._transports[address_type] = transport

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
        result = self.table.put(
            participant_id,
            address,
            is_globally_visible=is_globally_visible,
            expiry_date_ms=expiry_date_ms,
            is_sticky=is_sticky,
        )
        if result.accepted:
            log.debug("route %s -> %r: %s", participant_id, address, result.name)
            if participant_id in self._pending:
                self._flush(participant_id)
        else:
            log.info("route %s -> %r refused: %s", participant_id, address, result.reason)
        return result

    def remove_route(self, participant_id: str) -> bool:
        removed = self.table.remove(participant_id)
        if removed:
            log.debug("route %s removed", participant_id)
        return removed

    def remove_routes_at(self, address: Address) -> list[str]:
        """Forget everything behind ``address`` (a websocket client gone): routes and
        multicast receivers."""
        removed = self.table.remove_all_at(address)
        self._forget_receivers(removed)
        if removed:
            log.info("removed %d route(s) behind %r", len(removed), address)
        return removed

    def purge(self, now_ms: int | None = None) -> list[str]:
        """Remove the routes that expired before ``now_ms`` (default: the router's clock) and
        the multicast receivers of those participants; return their participantIds."""
        removed = self.table.purge(self.clock_ms() if now_ms is None else now_ms)
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
        result, evicted = self.table.put_learned(sender, route.address,
                                                 expiry_date_ms=route.expiry_date_ms,
                                                 max_learned=max_learned)
        if evicted:
            self._forget_receivers(evicted)
            self.counters["evicted-learned-route"] += len(evicted)
            log.info("%d learned route(s) evicted (at most %d are kept), the first: %s",
                     len(evicted), max_learned, evicted[0])
        if result.accepted:
            if sender in self._pending:
                self._flush(sender)
        else:
            log.debug("replyTo %r of %s not learned: %s", route.address, sender, result.reason)
        return result

    # ------------------------------------------------------------------ multicast receivers

    def add_multicast_receiver(self, pattern: str, subscriber: str, provider: str) -> None:
        """A local receiver of ``pattern``; when the provider is behind MQTT, the CC
        subscribes to the pattern's topic in the provider's backend (reference counted)."""
        self.multicast_receivers.add(pattern, subscriber)
        if self.global_multicast is None:
            return
        gbid = rules.multicast_backend(self.table.get(provider))
        if gbid is None:
            return
        patterns = self._global_receivers.setdefault(subscriber, {})
        if pattern not in patterns:
            patterns[pattern] = gbid
            self.global_multicast.subscribe_multicast(gbid, to_mqtt_topic(pattern))

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
        if self.global_multicast is not None:
            self.global_multicast.unsubscribe_multicast(gbid, to_mqtt_topic(pattern))

    def transport_ready(self) -> None:
        """A transport (re)connected: try every queue now instead of at its next retry."""
        for recipient in list(self._pending):
            self._flush(recipient)

    # ------------------------------------------------------------------ routing

    def route(self, message: Message) -> bool:
        """Send ``message`` on its way (``message.origin``: where it arrived from, if at all).

        True when it went out or waits in a queue; False when it was dropped (logged, counted,
        and for requests answered with a message-not-sent error where the rules say so)."""
        self.routed_by_type[message.type] += 1
        refusal = check_expiry(message.expiry_date_ms, self.clock_ms())
        if refusal is not None:
            self._refused(message, refusal, "before it could be routed")
            return False
        if message.type is _MULTICAST:
            return self._route_multicast(message)
        entry = self.table.get(message.recipient)
        address = entry.address if entry is not None else self.parent
        if address is None:
            return self._enqueue(message, "no route yet")
        return self._send(address, message)

    def _send(self, address: Address, message: Message) -> bool:
        refusal = check_forward(message.origin, address, self.parent)
        if refusal is not None:
            self._refused(message, refusal, hop=address)
            return False
        transport = self._transports.get(type(address))
        if transport is None:
            self._drop(message, "no-transport", f"no transport for {type(address).__name__}",
                       answer=True, hop=address)
            return False
        if transport.send(address, message):
            self._forwarded[message.type] += 1
            audit = self.audit
            if audit is not None:
                requeued = self._requeued
                audit.delivered(message, address, 0 if requeued is None
                                or requeued.message is not message
                                else max(0, self.clock_ms() - requeued.queued_at_ms))
            return True
        self.counters["send-refused"] += 1
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
            entry = self.table.get(receiver)
            if entry is not None:
                receivers.append(entry.address)
        self.counters["multicast"] += 1
        for address in rules.multicast_hops(receivers, origin, self.parent):
            self._send(address, message)
        if self.global_multicast is not None and rules.publishes_globally(
            origin, self.table.get(message.sender)
        ):
            self.global_multicast.publish_multicast(message)
        return True

    # ------------------------------------------------------------------ queues

    def _enqueue(self, message: Message, why: str, hop: Address | None = None,
                 refused_by: Address | None = None) -> bool:
        """Queue ``message`` (``why``: for the log); ``hop``: the one next hop of a multicast
        that it waits for; ``refused_by``: the next hop whose transport refused it (None: no
        route)."""
        key = message.recipient if hop is None else (hop, message.recipient)
        pending = self._pending.get(key)
        requeued = self._requeued
        if requeued is not None and requeued.message is message:
            size, queued_at = requeued.size, requeued.queued_at_ms
        else:
            size, queued_at = held_bytes(message), self.clock_ms()
        origin = message.origin
        by_origin = None if origin is None else self._by_origin.get(origin)
        refusal = rules.admit_to_queue(
            size,
            rules.Queued() if pending is None else rules.Queued(len(pending.messages),
                                                                pending.bytes),
            rules.Queued(self._pending_total, self._pending_bytes),
            None if origin is None else (rules.Queued() if by_origin is None
                                         else rules.Queued(by_origin[0], by_origin[1])),
            self._queue_limits, why=why)
        if refusal is not None:
            self._refused(message, refusal, hop=refused_by)
            return False
        if pending is None:
            pending = self._pending[key] = _Pending(hop)
        pending.messages.append(_Waiting(message, queued_at, size))
        pending.bytes += size
        self._pending_total += 1
        self._pending_bytes += size
        if origin is not None:
            if by_origin is None:
                self._by_origin[origin] = [1, size]
            else:
                by_origin[0] += 1
                by_origin[1] += size
        self.counters["queued"] += 1
        self.outcomes["queued"][message.type] += 1
        audit = self.audit
        if audit is not None and (requeued is None or requeued.message is not message):
            # (a message queued again after a retry was recorded when it was first queued)
            audit.decided(message, QUEUED, refused_by)
        log.debug("queued %s: %s", message.describe(), why)
        return True

    def _dequeued(self, waiting: _Waiting) -> None:
        """Account for a message that left its queue."""
        self._pending_total -= 1
        self._pending_bytes -= waiting.size
        origin = waiting.message.origin
        if origin is not None:
            by_origin = self._by_origin[origin]
            by_origin[0] -= 1
            by_origin[1] -= waiting.size
            if not by_origin[0]:
                del self._by_origin[origin]

    def _flush(self, key: str | tuple[Address, str]) -> None:
        pending = self._pending.pop(key, None)
        if pending is None:
            return
        for waiting in pending.messages:
            self._dequeued(waiting)
        # route() and _send() queue again whatever still cannot go out, in order; such a
        # message keeps the time it was first queued (the cap on its wait counts from there)
        hop = pending.hop
        try:
            for waiting in pending.messages:
                self._requeued = waiting
                if hop is None:
                    self.route(waiting.message)
                else:
                    self._send(hop, waiting.message)
        finally:
            self._requeued = None

    def queued(self, recipient: str | tuple[Address, str] | None = None) -> int:
        if recipient is None:
            return self._pending_total
        pending = self._pending.get(recipient)
        return 0 if pending is None else len(pending.messages)

    def queued_bytes(self, origin: Address | None = None) -> int:
        """The bytes all queued messages hold, or those that arrived from ``origin``."""
        if origin is None:
            return self._pending_bytes
        by_origin = self._by_origin.get(origin)
        return 0 if by_origin is None else by_origin[1]

    def sweep(self, now_ms: int | None = None) -> None:
        """Drop queued messages expired at ``now_ms`` (default: the router's clock) or queued
        longer than ``max_queue_wait_ms``; retry the queues whose backoff has passed (doubling
        from ``retry_initial_s`` up to ``retry_max_s`` while the transport still refuses); write
        the summaries of rate-limited warnings whose interval has ended."""
        self.warnings.flush()
        if not self._pending:
            return
        now = self.clock_ms() if now_ms is None else now_ms
        max_wait_ms = self.settings.max_queue_wait_ms
        for key in list(self._pending):
            pending = self._pending[key]
            fresh: deque[_Waiting] = deque()
            for waiting in pending.messages:
                refusal = rules.check_queued(waiting.message.expiry_date_ms, now,
                                             queued_at_ms=waiting.queued_at_ms,
                                             max_wait_ms=max_wait_ms)
                if refusal is not None:
                    self._dequeued(waiting)
                    pending.bytes -= waiting.size
                    self._refused(waiting.message, refusal, hop=pending.hop)
                else:
                    fresh.append(waiting)
            if not fresh:
                del self._pending[key]
                continue
            pending.messages = fresh
            has_route = pending.hop is not None or key in self.table or self.parent is not None
            if has_route and now >= pending.retry_at_ms:
                pending.delay_ms = min(max(pending.delay_ms * 2, self._retry_initial_ms),
                                       self._retry_max_ms)
                pending.retry_at_ms = now + pending.delay_ms
                before = len(fresh)
                self._flush(key)
                if key in self._pending:
                    # still refused: keep the backoff going on the re-created queue
                    again = self._pending[key]
                    again.delay_ms, again.retry_at_ms = pending.delay_ms, pending.retry_at_ms
                else:
                    log.info("delivered %d queued message(s) for %s", before, key)

    # ------------------------------------------------------------------ drops

    def _refused(self, message: Message, refusal: rules.Refusal, context: str = "", *,
                 hop: Address | None = None) -> None:
        detail = f"{refusal.detail}, {context}" if context else refusal.detail
        self._drop(message, refusal.reason, detail, answer=refusal.answer, hop=hop)

    def _drop(self, message: Message, reason: str, detail: str, *, answer: bool = False,
              hop: Address | None = None) -> None:
        """Count, log, record and (``answer``) answer a message not routed for ``reason``;
        ``hop``: the next hop it was meant for, if one was chosen."""
        self.counters[f"dropped-{reason}"] += 1
        self.outcomes["dropped"][message.type] += 1
        audit = self.audit
        if audit is not None:
            audit.decided(message, outcome_of(reason), hop, reason)
        self.warnings.warning(log, reason, peer_of(message.origin), "dropped %s: %s",
                              message.describe(), detail, extra=message_fields(message))
        if answer and message.type in REQUEST_TYPES:
            self._answer_not_sent(message, MessageNotSentError(
                f"message {message.id} to {message.recipient} not sent: {detail}"
            ))

    def _answer_not_sent(self, request: Message, error: JoynrError) -> None:
        """Tell the sender of an undeliverable request (a reply, or a subscription reply), in
        the body format of the request."""
        try:
            answer = make_error_answer(
                request,
                error,
                expiry_date_ms=max(request.expiry_date_ms,
                                   self.clock_ms() + self.settings.error_reply_ttl_ms),
            )
        except PayloadError as exc:
            log.warning("cannot answer undeliverable %s: %s", request.describe(), exc)
            return
        if answer.recipient in self.table or self.parent is not None:
            self.counters["answered-not-sent"] += 1
            self.route(answer)

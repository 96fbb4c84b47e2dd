"""The message router: next hop by recipient, queues for unknown recipients, expiry, multicast.

The router is synchronous: ``route(message)`` decides and hands the message to the transport for
the next hop's address type, which accepts it (queues it on a connection) or refuses it (no
connection right now). Messages that cannot go out yet wait in a bounded queue per recipient
until a route appears, a retry succeeds, or they expire. A periodic sweep (started with
``start()``) drops expired queued messages and retries refused sends with backoff.

A libjoynr runtime's router has a ``parent``: the cluster controller's WebSocketAddress, the
next hop of every participant without an entry of its own.

Counters (``router.counters``) count every message dropped and why; each drop is logged with the
message id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from runtime.addresses import Address, MqttAddress
from runtime.clock import now_ms
from runtime.errors import JoynrError, MessageNotSentError
from runtime.messages import REQUEST_TYPES, Message, MessageType
from runtime.multicast import MulticastReceivers, to_mqtt_topic
from runtime.payloads import PayloadError, make_error_answer
from runtime.routing import NO_EXPIRY_MS, PutResult, RoutingTable

__all__ = ["GlobalMulticast", "MessageRouter", "RouterSettings", "Transport"]

log = logging.getLogger(__name__)


class GlobalMulticast(Protocol):
    """The link of a cluster controller's router to multicast across backends (MQTT)."""

    def publish_multicast(self, message: Message) -> None: ...

    def subscribe_multicast(self, gbid: str, topic: str) -> None: ...

    def unsubscribe_multicast(self, gbid: str, topic: str) -> None: ...


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
    #: seconds between two sweeps of the queues (expiry, retries)
    sweep_interval_s: float = 0.1
    #: first and longest wait between two retries of a refused send
    retry_initial_s: float = 0.1
    retry_max_s: float = 5.0
    #: a message-not-sent error reply to an expired request lives this long (ms) so that it
    #: can still reach the caller, whose own deadline is a little after the request's expiry
    error_reply_ttl_ms: int = 5_000


class _Pending:
    """The queue of one recipient plus its retry state. ``hop`` is set for the queue of a
    multicast that one next hop refused: it is retried to that hop alone, since routing it
    again would deliver it twice everywhere else."""

    __slots__ = ("delay_s", "hop", "messages", "retry_at")

    def __init__(self, hop: Address | None = None) -> None:
        self.hop = hop
        self.messages: deque[Message] = deque()
        self.retry_at = 0.0
        self.delay_s = 0.0


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
        self.routed = 0  # messages handed to route(), for statistics
        self._transports: dict[type[Address], Transport] = {}
        # keyed by recipient, or by (next hop, multicast id) for a refused multicast hop
        self._pending: dict[str | tuple[Address, str], _Pending] = {}
        self._pending_total = 0
        self._clock_ms = clock_ms
        self._sweeper: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ set-up

    def register_transport(self, address_type: type[Address], transport: Transport) -> None:
        self._transports[address_type] = transport

    def start(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(
                self._sweep_loop(), name="router-sweep"
            )

    async def stop(self) -> None:
        task, self._sweeper = self._sweeper, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

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
        for pid in removed:
            self.multicast_receivers.remove_receiver(pid)
            for pattern in list(self._global_receivers.get(pid, ())):
                self._forget_global_receiver(pattern, pid)
        if removed:
            log.info("removed %d route(s) behind %r", len(removed), address)
        return removed

    def learn_reply_to(self, sender: str, reply_to: Address, *, gbid: str,
                       message_expiry_ms: int, grace_ms: int) -> PutResult:
        """Remember how to answer the sender of a request that arrived over MQTT (see
        RoutingTable.learn_reply_to) and deliver what was waiting for it."""
        result = self.table.learn_reply_to(sender, reply_to, gbid=gbid,
                                           message_expiry_ms=message_expiry_ms,
                                           grace_ms=grace_ms)
        if result.accepted:
            if sender in self._pending:
                self._flush(sender)
        else:
            log.debug("replyTo %r of %s not learned: %s", reply_to, sender, result.reason)
        return result

    # ------------------------------------------------------------------ multicast receivers

    def add_multicast_receiver(self, pattern: str, subscriber: str, provider: str) -> None:
        """A local receiver of ``pattern``; when the provider is behind MQTT, the CC
        subscribes to the pattern's topic in the provider's backend (reference counted)."""
        self.multicast_receivers.add(pattern, subscriber)
        entry = self.table.get(provider)
        if self.global_multicast is None or entry is None or (
            type(entry.address) is not MqttAddress
        ):
            return
        patterns = self._global_receivers.setdefault(subscriber, {})
        if pattern not in patterns:
            gbid = patterns[pattern] = entry.address.broker_uri
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
        and for requests answered with a message-not-sent error)."""
        origin = message.origin
        self.routed += 1
        if message.expiry_date_ms < self._clock_ms():
            self._drop(message, "expired", "the message expired before it could be routed")
            return False
        if message.type is MessageType.MULTICAST:
            self._route_multicast(message, origin)
            return True
        entry = self.table.get(message.recipient)
        address = entry.address if entry is not None else self.parent
        if address is None:
            return self._enqueue(message, "no route yet")
        parent = self.parent
        if (  # cheap tests first: this runs for every message
            origin is not None
            and parent is not None
            and type(address) is type(parent)
            and (address is parent or address == parent)
            and (origin is parent or origin == parent)
        ):
            # the cluster controller sent it here, and it has no route here: it cannot be
            # delivered (sending it back would loop)
            self._drop(message, "no-route", "no route for a message from the cluster controller",
                       answer=True)
            return False
        return self._send(address, message)

    def _send(self, address: Address, message: Message) -> bool:
        transport = self._transports.get(type(address))
        if transport is None:
            self._drop(message, "no-transport", f"no transport for {type(address).__name__}",
                       answer=True)
            return False
        if transport.send(address, message):
            return True
        self.counters["send-refused"] += 1
        hop = address if message.type is MessageType.MULTICAST else None
        return self._enqueue(message, f"transport refused it for {address!r}", hop)

    def _route_multicast(self, message: Message, origin: Address | None) -> None:
        addresses: set[Address] = set()
        for receiver in self.multicast_receivers.receivers_for(message.recipient):
            entry = self.table.get(receiver)
            if entry is not None:
                addresses.add(entry.address)
        if self.parent is not None and origin != self.parent:
            addresses.add(self.parent)  # the cluster controller serves the other runtimes
        addresses.discard(origin)  # never echo a multicast back where it came from
        self.counters["multicast"] += 1
        for address in addresses:
            self._send(address, message)
        if self.global_multicast is not None and type(origin) is not MqttAddress:
            provider = self.table.get(message.sender)
            if provider is not None and provider.is_globally_visible and (
                type(provider.address) is not MqttAddress
            ):
                self.global_multicast.publish_multicast(message)

    # ------------------------------------------------------------------ queues

    def _enqueue(self, message: Message, why: str, hop: Address | None = None) -> bool:
        settings = self.settings
        key = message.recipient if hop is None else (hop, message.recipient)
        pending = self._pending.get(key)
        queued = 0 if pending is None else len(pending.messages)
        if queued >= settings.max_queued_per_recipient or (
            self._pending_total >= settings.max_queued_total
        ):
            self._drop(message, "queue-full", f"queue full ({why})", answer=True)
            return False
        if pending is None:
            pending = self._pending[key] = _Pending(hop)
        pending.messages.append(message)
        self._pending_total += 1
        self.counters["queued"] += 1
        log.debug("queued %s: %s", message.describe(), why)
        return True

    def _flush(self, key: str | tuple[Address, str]) -> None:
        pending = self._pending.pop(key, None)
        if pending is None:
            return
        self._pending_total -= len(pending.messages)
        # route() and _send() queue again whatever still cannot go out, in order
        hop = pending.hop
        for message in pending.messages:
            if hop is None:
                self.route(message)
            else:
                self._send(hop, message)

    def queued(self, recipient: str | tuple[Address, str] | None = None) -> int:
        if recipient is None:
            return self._pending_total
        pending = self._pending.get(recipient)
        return 0 if pending is None else len(pending.messages)

    def sweep(self) -> None:
        """Drop expired queued messages; retry refused sends whose backoff has passed."""
        if not self._pending:
            return
        now = self._clock_ms()
        loop_now = asyncio.get_running_loop().time()
        for key in list(self._pending):
            pending = self._pending[key]
            fresh: deque[Message] = deque()
            for message in pending.messages:
                if message.expiry_date_ms < now:
                    self._pending_total -= 1
                    self._drop(message, "expired-in-queue",
                               "expired while waiting for a route or a connection", answer=True)
                else:
                    fresh.append(message)
            if not fresh:
                del self._pending[key]
                continue
            pending.messages = fresh
            has_route = pending.hop is not None or key in self.table or self.parent is not None
            if has_route and loop_now >= pending.retry_at:
                settings = self.settings
                pending.delay_s = min(max(pending.delay_s * 2, settings.retry_initial_s),
                                      settings.retry_max_s)
                pending.retry_at = loop_now + pending.delay_s
                before = len(fresh)
                self._flush(key)
                if key in self._pending:
                    # still refused: keep the backoff going on the re-created queue
                    again = self._pending[key]
                    again.delay_s, again.retry_at = pending.delay_s, pending.retry_at
                else:
                    log.info("delivered %d queued message(s) for %s", before, key)

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sweep_interval_s)
            try:
                self.sweep()
            except Exception:
                log.exception("router sweep failed")

    # ------------------------------------------------------------------ drops

    def _drop(self, message: Message, reason: str, detail: str, *, answer: bool = False) -> None:
        self.counters[f"dropped-{reason}"] += 1
        log.warning("dropped %s: %s", message.describe(), detail)
        if answer and message.type in REQUEST_TYPES:
            self._answer_not_sent(message, MessageNotSentError(
                f"message {message.id} to {message.recipient} not sent: {detail}"
            ))

    def _answer_not_sent(self, request: Message, error: JoynrError) -> None:
        """Tell the sender of an undeliverable request (a reply, or a subscription reply)."""
        try:
            answer = make_error_answer(
                request,
                error,
                expiry_date_ms=max(request.expiry_date_ms,
                                   self._clock_ms() + self.settings.error_reply_ttl_ms),
            )
        except PayloadError as exc:
            log.warning("cannot answer undeliverable %s: %s", request.describe(), exc)
            return
        if answer.recipient in self.table or self.parent is not None:
            self.counters["answered-not-sent"] += 1
            self.route(answer)

"""The cluster controller's MQTT transport: one broker connection per backend (GBID).

Outgoing: ``send(MqttAddress, message)`` picks the backend by the address's GBID (``broker_uri``)
and queues the message there (bounded); a writer publishes to the address's topic with QoS 1
(QoS 0 for BEST_EFFORT), retain off, and with MQTT 5 the message expiry interval. A message
leaves the queue for good only when the broker acknowledged it: what was in flight when a
connection broke goes out again after the reconnect (QoS 1 is at least once; receivers drop
the duplicates by message id). The queue is bounded in messages and in bytes; queued messages
that expire, or wait longer than ``max_queue_wait_ms`` whatever their expiry, are dropped,
logged and counted.
A message that finds the writer idle (connected, nothing queued, a publish slot free) is handed
to the MQTT client at once, within ``send``; its acknowledgement comes back as a callback
(no task per message).
Incoming messages reach :meth:`MqttTransport.handle_incoming` from the client's read callback
(transports.mqtt.client), without a task hop: a request handled here and its reply published
cost no loop iteration besides the provider's own.

Requests that leave this cluster controller carry its reply-to address (the global address:
MqttAddress(default GBID, own topic)), whatever the local sender put there.

Frame dialects (transports.mqtt.dialect): each backend originates in its dialect (``[mqtt]
dialect``, or ``?dialect=`` in its URL): ``native`` frames to the address's topic, or joynr's
SMRF frames to ``<address topic>/low`` (multicasts to their topic, without suffix), every
custom header also as an MQTT 5 user property ``c-<key>``. A received payload is read in the
dialect its first bytes tell, whatever the backend's; the dialect each request's replyTo topic
spoke is remembered (per backend, at most ``max_learned_routes`` topics) and what is written to
that topic follows it, so that answers go back in the dialect of their request. QoS, expiry,
queueing and every check below are the same in both.

The backend of a message is its address's GBID, unless the ``backend_of`` rule handed in
names another: the cluster controller's sends a call to the GCD to the backend its header
``gb`` names (cluster_controller.gcd_link.gcd_call_backend); the transport knows no
participant or header. A GBID no backend has is refused like any unknown GBID.

Incoming (the own topic tree, and the multicast topics that local receivers need): frames are
decoded and checked like websocket frames; duplicates and expired messages are dropped; a
request-type message teaches the routing table its sender's replyTo address (with the GBID of
the connection it arrived on) or, without a usable replyTo, is dropped. Messages from MQTT are
delivered to local participants only (no relaying to another backend) and their multicasts are
not published again (no echo); a multicast is accepted only from its provider, and only for a
provider behind MQTT (one of a provider local to this CC is a forgery from outside). Every
refusal is counted in ``counters`` and logged with its reason (rate-limited per reason and
backend: runtime.logs). These rules (admission, replyTo learning and rewriting, no relaying)
are decided in :mod:`runtime.rules`; this transport asks
there and acts.

A graceful stop (:meth:`MqttTransport.stop_taking`, then :meth:`MqttTransport.stop`): each
connection UNSUBSCRIBEs its own subscription and stays connected, so that the broker gives what
follows to the other members of a shared subscription; it reads on until the broker has
delivered what it had already taken for it (a marker published to a topic of its own comes
back after all of that: mosquitto keeps sending, after the UNSUBACK, the messages it had queued
or in flight for the connection, in order, and drops them for good when a connection without
a kept session goes away; measured with mosquitto 2.0.11); then the transport publishes what
waits, and disconnects only once the broker acknowledged it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import itertools
import logging
import os
import random
import ssl
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyjoynr.runtime import rules, smrf
from pyjoynr.runtime.addresses import Address, MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.inlets import Inlet, InletKind, SeenMessages
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import (
    Effort,
    FrameError,
    Message,
    MessageType,
    decode_frame,
    encode_frame,
    held_bytes,
    with_reply_to,
)
from pyjoynr.runtime.metrics import LatencyHistogram
from pyjoynr.runtime.queues import BoundedQueue, QueueBudget
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingSettings
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry
from pyjoynr.transports.mqtt.client import (
    PUBACK_ACCEPTED,
    SESSION_TAKEN_OVER,
    MqttSession,
    MqttSessionError,
    open_session,
)
from pyjoynr.transports.mqtt.dialect import (
    JOYNR,
    NATIVE,
    DialectMemory,
    frame_dialect,
    publish_topic,
    user_properties,
)
from pyjoynr.transports.mqtt.mqtt5.client import reason_name
from pyjoynr.transports.mqtt.settings import BrokerUrl, MqttSettings

__all__ = ["MqttTransport"]

log = get_logger(__name__)

_MULTICAST = MessageType.MULTICAST



#: names of PUBACK reason codes, for counters
PUBACK_NAMES = {0x10: "no-matching-subscribers", 0x80: "unspecified-error",
                0x83: "implementation-specific-error", 0x87: "not-authorized",
                0x90: "topic-name-invalid", 0x91: "packet-identifier-in-use",
                0x97: "quota-exceeded", 0x99: "payload-format-invalid"}

#: the largest MQTT 5 message expiry interval (a four-byte integer)
MAX_EXPIRY_INTERVAL_S = 2**32 - 1

#: a connection the broker closes without a word this soon after it was made is suspected to
#: have lost its session to another client (MQTT 3.1.1; the second in a row counts)
TAKEOVER_SUSPECT_S = 10.0

#: a stopping connection whose marker cannot come back (the broker refuses its topic) reads on
#: until nothing arrived for this long
STOP_QUIET_S = 0.5


def stop_marker_topic(own_topic: str, mqtt_client_id: str) -> str:
    """The topic a stopping connection's marker goes to (:meth:`MqttTransport.stop_taking`):
    its own, outside the own topic's tree (which a shared subscription may match)."""
    return f"{own_topic}-stopping/" + "".join(
        "_" if c in "+#/" else c for c in mqtt_client_id)


@dataclass(slots=True)
class _Outgoing:
    seq: int
    message: Message
    #: the topic it is published to (with the dialect's suffix)
    topic: str
    qos: int
    #: when it was queued (epoch ms) and the bytes it holds (runtime.messages.held_bytes)
    queued_at_ms: int = 0
    size: int = 0
    #: the packet id of its last publish (0: none): when that was not acknowledged and the
    #: broker kept the session, it goes out again with this id and DUP set
    packet_id: int = 0
    #: published as an SMRF frame (joynr's dialect), else as a native frame
    joynr: bool = False


def _where(backend: _Backend, topic: str) -> str:
    """Where a received message came from, for a log line (made only when one is written)."""
    return f"backend {backend.gbid}, topic {topic[:200]}"


class _Backend:
    """One broker connection and its outgoing queue."""

    def __init__(self, transport: MqttTransport, gbid: str, url: BrokerUrl) -> None:
        self.transport = transport
        self.gbid = gbid
        self.url = url
        #: where messages received here come from (this CC's own topic in this backend)
        self.origin = MqttAddress(gbid, transport.own_topic)
        #: names it in rate-limited log lines (their key) and refusals
        self.peer = f"backend {gbid}"
        #: the dialect of what this process originates here, and the dialect each replyTo
        #: topic last spoke in (what is written to a topic follows it)
        self.dialect = transport.settings.dialect_of(url)
        self.dialects = DialectMemory(self.dialect, transport.routing.max_learned_routes)
        #: messages received and published in joynr's dialect (SMRF), of those above
        self.received_joynr = 0
        self.published_joynr = 0
        s = transport.settings
        # the share of one connection, of this queue's messages and bytes (runtime.rules)
        budget = QueueBudget(share=None if s.max_queued_share_per_connection >= 1.0 else
                             rules.origin_share_of(s.max_queued_per_backend,
                                                   s.max_queued_bytes_per_backend,
                                                   s.max_queued_share_per_connection))
        #: what waits to be published (runtime.queues): at most max_queued_per_backend
        #: messages; with those in flight (taken out of it, held until the broker acknowledged
        #: them) at most max_queued_bytes_per_backend bytes; the messages from one connection
        #: at most their share of those two
        self.queue: BoundedQueue[_Outgoing] = BoundedQueue(
            s.max_queued_per_backend, s.max_queued_bytes_per_backend, budget,
            size_of=self._size_of, origin_of=self._origin_of)
        self.inflight: dict[int, _Outgoing] = {}
        #: what the messages from each connection hold of the queue and flight: [messages,
        #: bytes] (messages made in this process have no origin and no share of their own)
        self.by_origin: dict[Address, list[int]] = budget.by_origin
        #: sends refused because their connection held its share (also in the transport's
        #: counters as queue-share-used)
        self.share_refusals = 0
        self.topics: Counter[str] = Counter()  # multicast topics -> receivers needing them
        #: the multicast topics the broker has acknowledged on this connection (SUBACK): a
        #: multicast published before its topic is here may not reach this process
        self.subscribed: set[str] = set()
        self.session: MqttSession | None = None
        self.connected = asyncio.Event()
        #: connections established (the first one and every reconnect), attempts that failed
        self.connections = 0
        self.connect_failures = 0
        #: connections whose session another client took (see _taken_over)
        self.takeovers = 0
        self._unexplained_in_a_row = 0
        self._takeover_delay = 0.0
        #: why the last attempt failed or the last connection broke ("" before any failure)
        self.last_error = ""
        #: messages the broker acknowledged (QoS 1; QoS 0: handed over), messages received
        self.published = 0
        self.received = 0
        #: from the hand-over to the client until the broker's acknowledgement (QoS 1)
        self.publish_latency = LatencyHistogram()
        #: set while nothing waits to be published or acknowledged (see MqttTransport.stop)
        self.idle = asyncio.Event()
        self.idle.set()
        #: False once stopping: the own subscription is given up (and not made again by a
        #: reconnect); see MqttTransport.stop_taking
        self.taking = True
        #: this connection's MQTT client id and the topic of its stop marker
        self.client_id = f"{transport.client_id}-{gbid}"
        self.marker_topic = stop_marker_topic(transport.own_topic, self.client_id)
        #: while stopping: the marker awaited and what it resolves when it comes back
        self.marker: tuple[bytes, asyncio.Future[None]] | None = None
        self._wakeup: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        #: the writer's state while it runs: its session, free publish slots (of
        #: max_inflight), what waits for a free slot, and the publishes in flight
        self._session: MqttSession | None = None
        self._free_slots = 0
        #: counts the writers started: a publish of an earlier connection gives no slot back
        self._writer_run = 0
        self._slot_wait: asyncio.Future[None] | None = None
        self._publishes: set[asyncio.Future[int]] = set()

    # ------------------------------------------------------------------ queue

    def put(self, item: _Outgoing) -> bool:
        """Queue ``item``, or publish it at once; False when the queue has no room for it
        (one refused because its connection holds its share is counted)."""
        queue = self.queue
        session = self._session
        # the writer waits for work and a slot is free: publish at once (what the writer would
        # do one loop iteration later, from a task of its own one more later)
        at_once = (session is not None and self._wakeup is not None and not queue.items
                   and self._free_slots > 0)
        refusal = queue.offer(item, item.size, item.message.origin, at_once=at_once)
        if refusal is not None:
            if refusal.reason == rules.QUEUE_SHARE_USED:
                self.share_refusals += 1
                self.transport.counters[rules.QUEUE_SHARE_USED] += 1
            return False
        self.idle.clear()
        if at_once:
            assert session is not None
            self._free_slots -= 1
            self._dispatch(session, item)
        else:
            self._wake()
        return True

    @property
    def bytes(self) -> int:
        """The bytes the messages in the queue and in flight hold."""
        return self.queue.bytes

    @staticmethod
    def _size_of(item: _Outgoing) -> int:
        return item.size

    @staticmethod
    def _origin_of(item: _Outgoing) -> Address | None:
        return item.message.origin

    def _release(self, item: _Outgoing) -> None:
        """``item``, taken out of the queue, left flight for good (or never got there): its
        bytes and its origin's share are free."""
        self.queue.release(item.size, item.message.origin)

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup is not None:
            self._wakeup = None
            if not wakeup.done():
                wakeup.set_result(None)

    @property
    def pending(self) -> int:
        return len(self.queue.items) + len(self.inflight)

    def _refusal(self, item: _Outgoing, now: int) -> rules.Refusal | None:
        return rules.check_queued(item.message.expiry_date_ms, now,
                                  queued_at_ms=item.queued_at_ms,
                                  max_wait_ms=self.transport.settings.max_queue_wait_ms)

    def drop_expired(self) -> None:
        """Drop what expired or waited longer than ``max_queue_wait_ms``."""
        now = now_ms()
        dropped: list[tuple[_Outgoing, rules.Refusal]] = []

        def leaves(item: _Outgoing) -> bool:
            refusal = self._refusal(item, now)
            if refusal is None:
                return False
            dropped.append((item, refusal))
            return True

        self.queue.remove_if(leaves)
        if not dropped:
            return
        for item, refusal in dropped:
            self.transport.dropped_outgoing(self, item.message, refusal.reason,
                                             f"{refusal.detail} (the broker)")
        self._settled()

    # ------------------------------------------------------------------ connection

    def _settled(self) -> None:
        if not self.queue.items and not self.inflight:
            self.idle.set()

    def start(self) -> None:
        if self._task is None:
            self._task = self.transport.tasks.spawn(self._run(), name=f"mqtt-{self.gbid}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await self.transport.tasks.cancel(task)

    async def _run(self) -> None:
        transport = self.transport
        s = transport.settings
        loop = asyncio.get_running_loop()
        delay = s.reconnect_initial_s
        last_error = ""
        while True:
            connected_at: float | None = None
            try:
                async with open_session(self.url, s, client_id=self.client_id,
                                        tls_context=transport.tls_context,
                                        on_refusal=self._refused,
                                        first_packet_id=self._first_new_packet_id()
                                        ) as session:
                    delay, last_error = s.reconnect_initial_s, ""
                    connected_at = loop.time()
                    await self._serve(session)
            except asyncio.CancelledError:
                raise
            except (MqttSessionError, OSError) as exc:
                self.connect_failures += 1
                if self._taken_over(exc, connected_at, loop.time()):
                    delay = self._takeover_delay
                    self.last_error = str(exc)
                    self.drop_expired()
                    await asyncio.sleep(delay)
                    delay = s.reconnect_initial_s
                    continue
                # a new kind of trouble is a warning; the same again while retrying is not
                text = self.last_error = str(exc)
                level = logging.WARNING if text != last_error else logging.INFO
                last_error = text
                log.log(level, "MQTT backend %s (%s): %s; %d message(s) wait; retrying in "
                        "%.2f s", self.gbid, self.url, exc, self.pending, delay)
            except Exception as exc:
                self.connect_failures += 1
                self.last_error = repr(exc)
                log.exception("MQTT backend %s (%s) failed; retrying in %.2f s", self.gbid,
                              self.url, delay)
            self.drop_expired()
            await asyncio.sleep(delay * (0.8 + 0.4 * random.random()))
            delay = min(delay * 2, s.reconnect_max_s)

    def _taken_over(self, exc: Exception, connected_at: float | None, now: float) -> bool:
        """Whether the connection that ended with ``exc`` lost its session to another client
        using this client id: the broker said so (MQTT 5 DISCONNECT 0x8E), or (MQTT 3.1.1,
        where the broker closes the socket without a word) it closed the connection without
        a word within TAKEOVER_SUSPECT_S of connecting, the second time in a row. Counted,
        logged (rate-limited) and given the takeover backoff (:attr:`_takeover_delay`,
        growing from ``reconnect_max_s`` to ``takeover_backoff_max_s``), so that an intruder
        is not fought in a tight loop; any other end of a connection resets both."""
        s = self.transport.settings
        code = getattr(exc, "reason_code", None)
        said = code == SESSION_TAKEN_OVER
        if (not said and connected_at is not None and getattr(exc, "unexplained", False)
                and now - connected_at < TAKEOVER_SUSPECT_S):
            self._unexplained_in_a_row += 1
        elif not said:
            self._unexplained_in_a_row = 0
            self._takeover_delay = 0.0
            return False
        if not said and self._unexplained_in_a_row < 2:
            return False
        self.takeovers += 1
        self.transport.counters["mqtt-session-taken-over"] += 1
        self._takeover_delay = min(max(2 * self._takeover_delay, s.reconnect_max_s),
                                   s.takeover_backoff_max_s)
        how = ("the broker said so: DISCONNECT 0x8e, session taken over" if said else
               f"{self._unexplained_in_a_row} closes without a word in a row, each within "
               f"{TAKEOVER_SUSPECT_S:g} s of connecting")
        self.transport.telemetry.warn(
            log, "mqtt-session-taken-over", self.peer,
            "MQTT backend %s (%s): another connection took the session of client id %s (%s); "
            "%d time(s) so far; connecting again in %.1f s. Another process uses this client "
            "id: tie client ids to credentials on the broker (docs/operating.md)",
            self.gbid, self.url, self.client_id, how, self.takeovers, self._takeover_delay)
        return True

    async def _serve(self, session: MqttSession) -> None:
        transport = self.transport
        own = transport.subscription
        if self.taking:
            await session.subscribe(own, 1)
        else:  # stopping: it takes nothing new, it only sends what waits
            own = f"nothing of its own (stopping, not {own})"
        for topic in list(self.topics):
            await session.subscribe(topic, 1)
            self.subscribed.add(topic)
        self.session = session
        self.connections += 1
        self.connected.set()
        log.info("MQTT backend %s connected to %s (connection %d): subscribed to %s and %d "
                 "multicast topic(s); %d message(s) to send", self.gbid, self.url,
                 self.connections, own, len(self.topics), len(self.queue))
        writer = transport.tasks.spawn(self._write(session), name=f"mqtt-{self.gbid}-writer")
        try:
            await session.receive(functools.partial(transport.handle_incoming, self))
        finally:
            self.session = None
            self.subscribed.clear()
            self.connected.clear()
            marker = self.marker
            if marker is not None and not marker[1].done():
                marker[1].set_exception(MqttSessionError("the connection broke"))
            await transport.tasks.cancel(writer)
            self._requeue_inflight()

    async def stop_taking(self) -> bool:
        """Give up the own subscription, staying connected, and read on until the broker
        has delivered what it had taken for this connection (see the module docstring); True
        when that is confirmed. Unbounded: the caller bounds it."""
        self.taking = False
        session = self.session
        if session is None:
            return True  # (nothing is in flight to a connection that is not there)
        own = self.transport.subscription
        try:
            await session.unsubscribe(own)
        except MqttSessionError as exc:
            log.warning("MQTT backend %s: UNSUBSCRIBE %s failed while stopping: %s", self.gbid,
                        own, exc)
            return False
        token = os.urandom(16).hex().encode()
        back: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.marker = (token, back)
        try:
            # the marker comes back after everything the broker had queued or in flight for
            # this connection (one queue per connection, in order)
            await session.subscribe(self.marker_topic, 1)
            code = await session.publish(self.marker_topic, token, 1, 60)
            if code:  # (0x10: the subscription did not take; the marker would never come)
                raise MqttSessionError(f"the marker was not taken: PUBACK reason code "
                                       f"0x{code:02x} ({reason_name(code)})")
            await back
            return True
        except MqttSessionError as exc:
            log.warning("MQTT backend %s: cannot tell when the broker has delivered what it "
                        "took for this connection (stop marker on %s: %s); reading on until "
                        "nothing arrived for %.1f s", self.gbid, self.marker_topic, exc,
                        STOP_QUIET_S)
        finally:
            self.marker = None
        received = -1
        while received != self.received and self.session is session:  # (bounded by caller)
            received = self.received
            await asyncio.sleep(STOP_QUIET_S)
        return False

    def _first_new_packet_id(self) -> int:
        """Above the packet ids of what goes out again first (they may be taken again)."""
        resent = [item.packet_id for item in itertools.islice(
            self.queue, self.transport.settings.max_inflight) if item.packet_id]
        return max(resent) % 65_535 + 1 if resent else 1

    def _requeue_inflight(self) -> None:
        """What the broker did not acknowledge goes out again, first and in order."""
        if self.inflight:
            items = sorted(self.inflight.values(), key=lambda item: item.seq)
            self.inflight.clear()
            self.queue.putback(items)  # (held all the while)

    async def _write(self, session: MqttSession) -> None:
        loop = asyncio.get_running_loop()
        self._writer_run += 1
        self._free_slots = self.transport.settings.max_inflight
        self._session = session
        try:
            queue = self.queue
            while True:
                while not queue.items:
                    self._wakeup = loop.create_future()
                    await self._wakeup
                while self._free_slots <= 0:
                    self._slot_wait = loop.create_future()
                    await self._slot_wait
                if not queue.items:
                    continue
                self._free_slots -= 1
                self._dispatch(session, queue.popleft())  # (held until _release)
        finally:
            # publishes in flight end with the connection (what they carried is in flight and
            # goes out again after the reconnect)
            self._session = None
            self._wakeup = self._slot_wait = None
            for publish in list(self._publishes):
                publish.cancel()

    def _dispatch(self, session: MqttSession, item: _Outgoing) -> None:
        """Publish ``item`` (a slot taken for it): the MQTT client writes it out before this
        returns; its acknowledgement comes to :meth:`_acknowledged`."""
        now = now_ms()
        refusal = self._refusal(item, now)
        if refusal is not None:
            self._release_slot(self._writer_run)
            self._release(item)
            self._settled()
            self.transport.dropped_outgoing(self, item.message, refusal.reason,
                                            f"{refusal.detail}; not published")
            return
        message = item.message
        properties: tuple[tuple[str, str], ...] = ()
        if item.joynr:
            try:
                payload = smrf.encode(message)
            except (smrf.SmrfError, ValueError) as exc:  # (e.g. a string not UTF-8)
                self._release_slot(self._writer_run)
                self._release(item)
                self._settled()
                self.transport.dropped_outgoing(self, message, "unencodable",
                                                f"no SMRF frame of it: {exc}",
                                                unsendable=True)
                return
            if message.custom_headers:
                properties = user_properties(message.custom_headers)
        else:
            payload = encode_frame(message)
        limit = self.transport.settings.max_message_bytes
        if len(payload) > limit:  # (what receivers refuse, whatever the broker takes)
            self._release_slot(self._writer_run)
            self._release(item)
            self._settled()
            self.transport.dropped_outgoing(
                self, message, "too-big", f"a frame of {len(payload)} bytes: this backend "
                f"takes at most {limit} ([mqtt] max_message_bytes); not published",
                unsendable=True)
            return
        self.inflight[item.seq] = item
        remaining_ms = message.expiry_date_ms - now
        expiry_s = min(-(-remaining_ms // 1000), MAX_EXPIRY_INTERVAL_S)
        started = time.perf_counter()
        # MQTT-4.4.0-1: what was in flight when the broker kept the session goes out again
        # with its packet id (the native client sets DUP); otherwise as a new publish
        publish = session.start_publish(item.topic, payload, item.qos, expiry_s,
                                        item.packet_id if session.session_present else 0,
                                        user_properties=properties)
        item.packet_id = session.last_packet_id
        run = self._writer_run
        if publish.done():
            self._acknowledged(item, run, started, publish)
            return
        self._publishes.add(publish)
        publish.add_done_callback(functools.partial(self._acknowledged, item, run, started))

    def _release_slot(self, run: int) -> None:
        if run != self._writer_run:
            return  # taken from an earlier connection's writer
        self._free_slots += 1
        wait = self._slot_wait
        if wait is not None:
            self._slot_wait = None
            if not wait.done():
                wait.set_result(None)

    def _acknowledged(self, item: _Outgoing, run: int, started: float,
                      publish: asyncio.Future[int]) -> None:
        """A publish ended (``started``: its perf_counter time): acknowledged (with a reason
        code), or the connection broke (the message stays in flight and goes out again after
        the reconnect), or it cannot be published at all (dropped)."""
        self._publishes.discard(publish)
        self._release_slot(run)
        if publish.cancelled():
            return  # the writer ended with its connection: still in flight
        exc = publish.exception()
        if exc is not None:
            if isinstance(exc, MqttSessionError):
                log.debug("publish of %s on %s not acknowledged: %s", item.message.id,
                          self.gbid, exc)
                return
            self._forget(item)
            self.transport.dropped_outgoing(self, item.message, "unpublishable",
                                            f"the MQTT client refused it: {exc}",
                                            unsendable=True)
            return
        code = publish.result()
        self.publish_latency.observe(time.perf_counter() - started)
        self._forget(item)
        if code in PUBACK_ACCEPTED:
            if code:  # 0x10: accepted, but nobody subscribes to the topic now (e.g. a
                # multicast without receivers; not published again: it would be again)
                self.transport.puback_codes[PUBACK_NAMES.get(code, hex(code))] += 1
                log.debug("MQTT backend %s: %s published to no subscriber", self.gbid,
                          item.message.describe())
            self.published += 1
            self.transport.published += 1
            if item.joynr:
                self.published_joynr += 1
            return
        self.transport.puback_codes[PUBACK_NAMES.get(code, hex(code))] += 1
        # the broker refused it (not authorized, quota exceeded, topic invalid, ...): publishing
        # the same message again would be refused again
        self.transport.dropped_outgoing(
            self, item.message, "broker-refused",
            f"the broker refused it: PUBACK reason code 0x{code:02x} ({reason_name(code)})",
            unsendable=True)

    def _forget(self, item: _Outgoing) -> None:
        if self.inflight.pop(item.seq, None) is not None:
            self.queue.release(item.size, item.message.origin)
        self._settled()

    def _refused(self, reason: str, detail: str) -> None:
        """What the MQTT client refused from this backend's broker (a protocol violation:
        the connection ends and is made again; an oversized packet)."""
        self.transport.counters[f"mqtt-{reason}"] += 1
        self.transport.telemetry.warn(log, f"mqtt-{reason}", self.peer,
                                      "MQTT backend %s (%s): refused (%s): %s",
                                      self.gbid, self.url, reason, detail)

    # ------------------------------------------------------------------ subscriptions

    def subscribe(self, topic: str) -> None:
        self.topics[topic] += 1
        if self.topics[topic] == 1 and self.session is not None:
            self._spawn(self._subscribe(self.session, topic), f"subscribe {topic}")

    async def _subscribe(self, session: MqttSession, topic: str) -> None:
        await session.subscribe(topic, 1)
        if topic in self.topics and session is self.session:  # (still wanted, same connection)
            self.subscribed.add(topic)

    def unsubscribe(self, topic: str) -> None:
        if self.topics[topic] <= 0:
            return
        self.topics[topic] -= 1
        if self.topics[topic] == 0:
            del self.topics[topic]
            self.subscribed.discard(topic)
            if self.session is not None:
                self._spawn(self.session.unsubscribe(topic), f"unsubscribe {topic}")

    def _spawn(self, call: object, what: str) -> None:
        async def run() -> None:
            try:
                await call  # type: ignore[misc]
            except MqttSessionError as exc:
                # the reconnect subscribes again to whatever is needed then; (un)subscribing
                # follows what clients ask for: rate-limited
                self.transport.telemetry.warn(log, "subscription-failed", self.peer,
                                              "MQTT backend %s: %s failed: %s", self.gbid, what,
                                              exc, level=logging.INFO)
            else:
                log.debug("MQTT backend %s: %s", self.gbid, what)

        self.transport.tasks.spawn(run(), name=f"mqtt-{self.gbid}-{what}")


class MqttTransport:
    """The router's transport for MqttAddress, and its link to global multicast."""

    def __init__(self, router: MessageRouter, settings: MqttSettings, *,
                 brokers: Mapping[str, BrokerUrl], own_topic: str, client_id: str,
                 tasks: TaskSupervisor, subscription: str | None = None,
                 tls_context: ssl.SSLContext | None = None,
                 routing: RoutingSettings | None = None,
                 backend_of: Callable[[Message], str | None] | None = None,
                 telemetry: Telemetry | None = None, backend_uid: str = "",
                 trust_backend_signature: bool = False) -> None:
        """``brokers``: GBID -> broker URL of every backend, the default backend first (the
        settings may name the embedded broker; these are the resolved URLs). ``own_topic``: the
        topic this process is reached at; it subscribes to ``<own_topic>/#``, or to
        ``subscription`` (e.g. a shared subscription ``$share/<group>/<own_topic>/#`` of
        several service instances). ``client_id``: prefix of the MQTT client id of each backend
        (``<client_id>-<gbid>``). ``routing``: how long learned replyTo routes live.
        ``backend_of``: the GBID a message goes to when not its address's (None: the
        address's), the program's rule (the module docstring).
        ``telemetry``: the process's counters and limit of repeated warnings (its own by
        default). The process's assembly registers it as its router's link to global multicast
        (``MessageRouter.register_global_multicast``). ``backend_uid``: the uid (access
        control) of what arrives from the backends; ``trust_backend_signature``: a message's
        custom signature names its uid instead, where it has one (runtime.inlets)."""
        if not brokers:
            raise ValueError("at least one MQTT backend is needed")
        self.router = router
        self.telemetry = Telemetry() if telemetry is None else telemetry
        self.settings = settings
        self.own_topic = own_topic
        self.client_id = client_id
        self.subscription = subscription or f"{own_topic}/#"
        self.tls_context = tls_context
        self.routing = routing or RoutingSettings()
        self.backend_uid = backend_uid
        self.trust_backend_signature = trust_backend_signature
        self.backend_of = backend_of
        self.tasks = tasks.child("mqtt")
        self.counters: Counter[str] = Counter()
        #: PUBACK reason codes other than success, by name (the native client reports them;
        #: aiomqtt does not): "no-matching-subscribers" is accepted by the broker, the
        #: failures are dropped and counted as dropped-broker-refused as well
        self.puback_codes: Counter[str] = Counter()
        self.published = 0
        self.received = 0
        self._backends = {gbid: _Backend(self, gbid, url) for gbid, url in brokers.items()}
        #: where this process is reached (its replyTo address): its topic in the default
        #: backend
        self.global_address = MqttAddress(next(iter(brokers)), own_topic)
        self._seq = 0
        # the ids of the messages accepted lately, from any backend: one seen again is a
        # duplicate; and the way in of each backend (runtime.router.MessageRouter.receive)
        seen = SeenMessages(settings.duplicate_window)
        self._inlets = {backend.gbid: self._inlet(backend, seen)
                        for backend in self._backends.values()}
        router.register_transport(MqttAddress, self)

    # ------------------------------------------------------------------ lifecycle

    @property
    def gbids(self) -> list[str]:
        return list(self._backends)

    async def start(self, wait_s: float | None = None) -> None:
        """Start connecting every backend; with ``wait_s``, wait that long for all of them."""
        for backend in self._backends.values():
            backend.start()
        if wait_s is not None:
            await self.wait_connected(wait_s)

    async def wait_connected(self, timeout_s: float | None) -> None:
        """Wait until every backend is connected and subscribed (``timeout_s`` None: for as
        long as it takes); ConnectionError naming the missing ones after ``timeout_s``."""
        try:
            async with asyncio.timeout(timeout_s):
                for backend in self._backends.values():
                    await backend.connected.wait()
        except TimeoutError:
            down = [f"{b.gbid} ({b.url})" for b in self._backends.values()
                    if not b.connected.is_set()]
            raise ConnectionError(f"MQTT backend(s) not connected within {timeout_s} s: "
                                  f"{', '.join(down)}") from None

    @property
    def backends(self) -> list[_Backend]:
        """Every backend, the default one first (for the metrics and the status page: read
        ``gbid``, ``url``, ``connected``, ``connections``, ``connect_failures``, ``queue``,
        ``inflight``, ``bytes``, ``published``, ``received``, ``publish_latency``, and of
        the frame dialects ``dialect``, ``received_joynr``, ``published_joynr``)."""
        return list(self._backends.values())

    def connected(self, gbid: str) -> bool:
        backend = self._backends.get(gbid)
        return backend is not None and backend.connected.is_set()

    def connection_count(self, gbid: str) -> int:
        """How many times the connection to ``gbid``'s broker was established (1 + reconnects)."""
        backend = self._backends.get(gbid)
        return 0 if backend is None else backend.connections

    async def stop_taking(self, timeout_s: float) -> bool:
        """The first step of a graceful stop: every backend gives up the own subscription
        (UNSUBSCRIBE; the other members of a shared subscription get what follows) and stays
        connected, reading on until its broker has delivered what it had already taken for
        it (the module docstring says how); messages arriving meanwhile are handled as usual.
        At most ``timeout_s``; True when every backend confirmed it. Then :meth:`stop`."""
        backends = list(self._backends.values())
        try:
            async with asyncio.timeout(timeout_s):
                return all(await asyncio.gather(*(b.stop_taking() for b in backends)))
        except TimeoutError:
            log.warning("MQTT: the brokers did not confirm within %.1f s that they delivered "
                        "what they took for this process", timeout_s)
            return False

    async def stop(self, drain_timeout_s: float = 5.0) -> None:
        """Let the connected backends publish what waits (at most ``drain_timeout_s``), then
        disconnect."""
        draining = [b.idle.wait() for b in self._backends.values() if b.connected.is_set()]
        if draining:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*draining), drain_timeout_s)
        for backend in self._backends.values():
            await backend.stop()
            if backend.pending:
                log.warning("MQTT backend %s stopped with %d unpublished message(s)",
                            backend.gbid, backend.pending)

    def pending(self, gbid: str | None = None) -> int:
        backends = self._backends.values() if gbid is None else [self._backends[gbid]]
        return sum(b.pending for b in backends)

    # ------------------------------------------------------------------ outgoing

    def send(self, address: Address, message: Message) -> bool:
        assert type(address) is MqttAddress
        # (the router does not hand over what came from MQTT: runtime.rules.check_forward)
        gbid = address.broker_uri
        if self.backend_of is not None:
            # the program's rule may name another backend (a call to the GCD: its header)
            chosen = self.backend_of(message)
            if chosen is not None:
                gbid = chosen
        backend = self._backends.get(gbid)
        if backend is None:
            # rate-limited per GBID (bounded in keys: a GBID comes from an address, which a
            # peer may have made up)
            self.telemetry.warn(
                log, "unknown-gbid", f"GBID {gbid[:200]!r}",
                "no MQTT backend for GBID %r (known: %s): messages to %r wait until they "
                "expire", gbid[:200], ", ".join(self._backends),
                address if gbid == address.broker_uri
                else f"{message.recipient} (backend chosen for the message)")
            self.counters["unknown-gbid"] += 1
            return False
        signature = message.custom_signature
        if (signature is not None and message.creator is not None
                and signature != message.creator.encode()):
            # a signature the sender's connection did not prove (it has no client certificate
            # of that name) does not leave this host: another may take it for the sender's uid
            self.counters["unproven-signature-removed"] += 1
            message = dataclasses.replace(message, custom_signature=None, raw=None,
                                          raw_smrf=None)
        reply_to = rules.outgoing_reply_to(message, self.global_address)
        if reply_to is not None:  # the answer must come back here
            # (a changed copy keeps neither frame it arrived in)
            message = with_reply_to(message, reply_to)
        return backend.put(self._outgoing(message, address.topic,
                                          backend.dialects.dialect_of(address.topic)))

    def _outgoing(self, message: Message, topic: str, dialect: str) -> _Outgoing:
        """``message`` for ``topic`` (an address's, or a multicast's) in ``dialect``."""
        self._seq += 1
        qos = 0 if message.effort is Effort.BEST_EFFORT else 1
        if dialect == NATIVE:
            return _Outgoing(self._seq, message, topic, qos, now_ms(), held_bytes(message))
        return _Outgoing(self._seq, message,
                         publish_topic(topic, dialect, multicast=message.type is _MULTICAST),
                         qos, now_ms(), held_bytes(message), joynr=True)

    def publish_multicast(self, message: Message) -> None:
        """A globally visible local provider's multicast: to its topic in every backend."""
        for backend in self._backends.values():
            if not backend.put(self._outgoing(message, message.recipient, backend.dialect)):
                self.dropped_outgoing(backend, message, "queue-full",
                                       "the backend's queue is full")
            elif (audit := self.telemetry.audit) is not None:
                # taken outside the router's route(): recorded here (its kind and GBID)
                audit.delivered(message, backend.origin, 0)

    def subscribe_multicast(self, gbid: str, topic: str) -> None:
        backend = self._backends.get(gbid)
        if backend is None:
            self.counters["unknown-gbid"] += 1
            self.telemetry.warn(log, "unknown-gbid", f"GBID {gbid}",
                                "multicast topic %s: no MQTT backend for GBID %r", topic, gbid)
            return
        backend.subscribe(topic)

    def unsubscribe_multicast(self, gbid: str, topic: str) -> None:
        backend = self._backends.get(gbid)
        if backend is not None:
            backend.unsubscribe(topic)

    def multicast_topics(self, gbid: str) -> dict[str, int]:
        """The multicast topics wanted on backend ``gbid``, with how many receivers want each."""
        return dict(self._backends[gbid].topics)

    def multicast_topics_subscribed(self, gbid: str) -> set[str]:
        """Those of the multicast topics that the broker of ``gbid`` has acknowledged on the
        current connection (a topic is wanted at once, subscribed a round trip later)."""
        return set(self._backends[gbid].subscribed)

    def dropped_outgoing(self, backend: _Backend, message: Message, reason: str,
                          detail: str, *, unsendable: bool = False) -> None:
        """A message accepted for ``backend`` is dropped (counted, logged, audited);
        ``unsendable``: it can never be published there, its requester is told at once
        (runtime.router.MessageRouter.dropped_by_transport)."""
        self.router.dropped_by_transport(message, reason, detail, hop=backend.origin,
                                         counters=self.counters, key=backend.peer,
                                         name=f"MQTT backend {backend.gbid}", logger=log,
                                         unsendable=unsendable)

    # ------------------------------------------------------------------ incoming

    def _inlet(self, backend: _Backend, seen: SeenMessages) -> Inlet:
        """The way in of ``backend``: what arrives there is from other cluster controllers."""
        notes = backend.dialects

        def accepted(message: Message) -> None:
            reply_to = message.reply_to
            if type(reply_to) is MqttAddress and message.is_request_type:
                # its answer goes back in the dialect it came in
                notes.note(reply_to.topic, NATIVE if message.raw_smrf is None else JOYNR)

        return Inlet(InletKind.BACKEND, backend.origin, f"MQTT backend {backend.gbid}",
                     backend.peer, self.counters, peer=backend.peer, gbid=backend.gbid,
                     seen=seen, routing=self.routing, accepted=accepted,
                     uid=self.backend_uid, trust_signature=self.trust_backend_signature,
                     logger=log)

    def handle_incoming(self, backend: _Backend, topic: str, payload: bytes) -> None:
        """A message from ``backend``'s broker: decoded here, handed to the router's way in
        (which checks it, learns from it and routes it, or refuses it)."""
        if not backend.taking and topic == backend.marker_topic:  # (only while stopping)
            marker = backend.marker
            if marker is not None and payload == marker[0] and not marker[1].done():
                marker[1].set_result(None)
            return
        self.received += 1
        backend.received += 1
        inlet = self._inlets[backend.gbid]
        dialect = frame_dialect(payload)
        try:
            if dialect == NATIVE:
                message = decode_frame(payload, self.settings.max_message_bytes,
                                       origin=backend.origin)
            else:
                backend.received_joynr += 1
                message = smrf.decode(payload, self.settings.max_message_bytes,
                                      origin=backend.origin)
        except FrameError as exc:  # (SmrfError too)
            message_id = f" (message {exc.message_id})" if exc.message_id else ""
            what = "" if dialect == NATIVE else "SMRF frame: "
            self.router.refuse_frame(inlet, exc.reason,
                                     f"{_where(backend, topic)}{message_id}: {what}{exc}")
            return
        except Exception:  # never let one payload end the connection
            self.router.refuse_frame(inlet, "undecodable",
                                     f"{_where(backend, topic)}: cannot decode a payload",
                                     level=logging.ERROR, exc_info=True)
            return
        try:
            self.router.receive(message, inlet)
        except Exception:  # a defect: counted and logged with its traceback, rate-limited
            self.router.refuse_frame(inlet, "handler-failed",
                                     f"{_where(backend, topic)}: routing {message.describe()} "
                                     "failed", level=logging.ERROR, exc_info=True)

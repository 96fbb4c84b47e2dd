"""A thin asyncio protocol over the sans-I/O core: bytes in, packets out, per-publish futures.

- Outgoing packets: the first of an event-loop turn is written at once when none waits before
  it; the later ones are gathered and written together at the end of the turn, joined into one
  ``transport.write`` (transports.coalescing: one system call for all the publishes and
  PUBACKs a burst makes).
- A QoS 1 publish returns a future resolved with the PUBACK's reason code; the session state
  (transports.mqtt.mqtt5.session) keeps it by packet id, so an acknowledgement costs one dict pop.
  At most the broker's receive maximum are in flight; the rest wait in order.
- Incoming PUBLISH packets go to the handler from ``data_received`` (QoS 1: the PUBACK is
  queued right after); what arrives before a handler is set waits in a list.
- A protocol violation by the broker (transports.mqtt.mqtt5.packets.ProtocolViolation) is reported
  through ``on_refusal`` (reason, detail), answered with DISCONNECT (MQTT 5: its reason
  code), and ends the connection: the caller reconnects. An MQTT 3.1.1 PUBLISH over the
  maximum packet size (3.1.1 cannot tell the broker the limit) is reported the same way,
  skipped unread and acknowledged; the connection goes on.
- Keep-alive (PINGREQ when idle, the connection declared dead when a PINGREQ gets no answer
  within the interval), a connect timeout, and a disconnect bounded in time.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any, cast

from pyjoynr.runtime.logs import get_logger
from pyjoynr.transports.coalescing import TurnCoalescer
from pyjoynr.transports.mqtt.mqtt5 import packets as p
from pyjoynr.transports.mqtt.mqtt5.session import KeepAlive, Outbound, PacketIdsExhausted, Session

__all__ = ["ConnectionBroken", "MqttClientProtocol", "connect"]

log = get_logger(__name__)

_PUBLISH, _PUBACK = p.PUBLISH, p.PUBACK


class ConnectionBroken(Exception):
    """The connection ended (the message says why); what waited for the broker never got
    its answer. ``reason_code``: that of the broker's DISCONNECT (MQTT 5; None without one);
    ``unexplained``: the broker closed the socket without a word (no DISCONNECT), as
    mosquitto does with MQTT 3.1.1 when another client takes the session."""

    def __init__(self, message: str, *, reason_code: int | None = None,
                 unexplained: bool = False) -> None:
        super().__init__(message)
        self.reason_code = reason_code
        self.unexplained = unexplained



#: the longest wait for the broker to close the connection after DISCONNECT
DISCONNECT_TIMEOUT_S = 1.0

CONNACK_REASONS = {
    0x80: "unspecified error", 0x81: "malformed packet", 0x82: "protocol error",
    0x83: "implementation specific error", 0x84: "unsupported protocol version",
    0x85: "client identifier not valid", 0x86: "bad user name or password",
    0x87: "not authorized", 0x88: "server unavailable", 0x89: "server busy", 0x8A: "banned",
    0x8C: "bad authentication method", 0x90: "topic name invalid", 0x95: "packet too large",
    0x97: "quota exceeded", 0x99: "payload format invalid", 0x9A: "retain not supported",
    0x9B: "QoS not supported", 0x9C: "use another server", 0x9D: "server moved",
    0x9F: "connection rate exceeded",
}
CONNACK_REASONS_311 = {1: "unacceptable protocol version", 2: "identifier rejected",
                       3: "server unavailable", 4: "bad user name or password",
                       5: "not authorized"}


def reason_name(code: int) -> str:
    return CONNACK_REASONS.get(code, {0x10: "no matching subscribers", 0x11: "no subscription "
                                      "existed", 0x8B: "server shutting down",
                                      0x8D: "keep alive timeout",
                                      0x8E: "session taken over", 0x8F: "topic filter invalid",
                                      0x91: "packet identifier in use"}.get(code, "unknown"))


class MqttClientProtocol(asyncio.Protocol):
    """One connection. Made by :func:`connect`; then publish/subscribe/receive/close."""

    def __init__(self, *, version: int, max_packet_size: int,
                 on_refusal: Callable[[str, str], None] | None = None,
                 peer: str = "broker") -> None:
        self.loop = asyncio.get_running_loop()
        self.version = version
        self.peer = peer
        self.decoder = p.Decoder("client", version, max_packet_size)
        self.session = Session()
        self.on_refusal = on_refusal
        self.transport: asyncio.Transport | None = None
        self.connack: asyncio.Future[p.Connack] = self.loop.create_future()
        #: resolved with the reason when the connection ends
        self.closed: asyncio.Future[str] = self.loop.create_future()
        #: set when the socket is closed
        self.lost = asyncio.Event()
        #: the reason code of the broker's DISCONNECT (None: none came)
        self.disconnect_code: int | None = None
        #: the broker closed the socket without a word (see ConnectionBroken)
        self.unexplained_close = False
        self.handler: Callable[[str, bytes], None] | None = None
        self.early: list[tuple[str, bytes]] = []
        #: the broker's limits (CONNACK): largest packet it takes
        self.server_max_packet = p.MAX_VARINT + 5
        #: packets waiting for the end of the turn (see _write)
        self._out: list[bytes] = []
        self._turn = TurnCoalescer(self.loop, self._out, self._flush)
        self._keepalive: KeepAlive | None = None
        self._keepalive_timer: asyncio.TimerHandle | None = None
        #: (topic, expiry) -> the encoded topic and property block of a PUBLISH
        self._parts: dict[tuple[str, int | None], tuple[bytes, bytes]] = {}
        self.protocol_violation: p.ProtocolViolation | None = None
        #: the packet id of the last QoS 1 publish started (see start_publish)
        self.last_packet_id = 0

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports are no subclasses of asyncio.Transport, only alike)
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set()
        if not self.closed.done():  # (nobody here ended it)
            self.unexplained_close = True
        self._end(f"connection lost: {exc}" if exc else "the broker closed the connection")

    def data_received(self, data: bytes) -> None:
        keepalive = self._keepalive
        if keepalive is not None:
            keepalive.ping_sent_at = None  # anything from the broker answers a PINGREQ
        try:
            packets = self.decoder.feed(data)
        except p.ProtocolViolation as exc:
            self._violation(exc)
            return
        try:
            self._received(packets)
        finally:
            # the PUBACKs of this read go out at the end of the turn: after the calls its
            # messages started, with the answers they publish (one system call, and no
            # handler waits for one)
            if self._out:
                self._turn.waits()

    def _received(self, packets: list[p.Packet]) -> None:
        for packet in packets:
            ptype = packet.type
            if ptype == _PUBLISH:
                assert isinstance(packet, p.Publish)
                if packet.qos:  # acknowledged at the end of the turn (data_received)
                    pid = packet.packet_id
                    self._out.append(bytes((0x40, 2, pid >> 8, pid & 0xFF)))
                handler = self.handler
                if handler is None:
                    self.early.append((packet.topic, packet.payload))
                    continue
                try:
                    handler(packet.topic, packet.payload)
                except Exception:  # never into the read path
                    log.exception("MQTT: the handler of an incoming message on %s failed",
                                  packet.topic[:200])
            elif ptype == _PUBACK:
                assert isinstance(packet, p.Puback)
                self._acknowledged(packet)
            elif isinstance(packet, p.Oversized):
                # (MQTT 3.1.1: the broker could not know the limit) refused, acknowledged
                # so that it is not delivered again, and the connection goes on
                if packet.qos:
                    pid = packet.packet_id
                    self._out.append(bytes((0x40, 2, pid >> 8, pid & 0xFF)))
                self._refused("packet-too-large", f"a PUBLISH of {packet.size} bytes on "
                              f"{packet.topic[:200]}, more than {self.decoder.max_packet_size}"
                              "; dropped unread")
            else:
                try:
                    self._control(packet)
                except p.ProtocolViolation as exc:
                    self._violation(exc)
                    return
            if self.closed.done():
                return
        violation = self.decoder.violation
        if violation is not None:  # after the good packets before it
            self._violation(violation)

    # ------------------------------------------------------------------ incoming

    def _acknowledged(self, packet: p.Puback) -> None:
        item, released = self.session.acknowledged(packet.packet_id)
        if item is None:
            self._violation(p.ProtocolViolation(
                "unknown-packet-id", f"PUBACK for packet id {packet.packet_id}, which is "
                "not in flight", p.PROTOCOL_ERROR))
            return
        future = item.token
        if not future.done():
            future.set_result(packet.reason_code)
        for out in released:
            self._write(p.encode_publish(out.topic, out.payload, 1, out.packet_id,
                                         out.properties))

    def _control(self, packet: p.Packet) -> None:
        if isinstance(packet, p.Connack):
            if self.connack.done():
                raise p.ProtocolViolation("protocol-error", "a second CONNACK",
                                          p.PROTOCOL_ERROR)
            self.connack.set_result(packet)
        elif not self.connack.done():
            raise p.ProtocolViolation("protocol-error", f"{p.PACKET_NAMES[packet.type]} "
                                      "before CONNACK", p.PROTOCOL_ERROR)
        elif isinstance(packet, p.Suback | p.Unsuback):
            try:
                future = self.session.answered(packet.packet_id)
            except KeyError:
                raise p.ProtocolViolation("unknown-packet-id", f"{p.PACKET_NAMES[packet.type]}"
                                          f" for packet id {packet.packet_id}, which was not "
                                          "asked for", p.PROTOCOL_ERROR) from None
            if not future.done():
                future.set_result(packet)
        elif isinstance(packet, p.Disconnect):
            self.disconnect_code = packet.reason_code
            reason = packet.properties.get(p.REASON_STRING, "")
            self._close(f"the broker disconnected: reason code 0x{packet.reason_code:02x} "
                        f"({reason_name(packet.reason_code)}) {reason}".rstrip())
        # PINGRESP: data_received noted it

    def _violation(self, exc: p.ProtocolViolation) -> None:
        if self.closed.done():
            return
        self.protocol_violation = exc
        self._refused(exc.reason, f"protocol violation: {exc}; connection closed")
        if self.version == p.V5:
            self._write(p.encode(p.Disconnect(exc.code)))
        self._close(f"protocol violation by the broker ({exc.reason}): {exc}")

    def _refused(self, reason: str, detail: str) -> None:
        if self.on_refusal is not None:
            self.on_refusal(reason, detail)
        else:
            log.warning("MQTT %s: refused (%s): %s", self.peer, reason, detail)

    # ------------------------------------------------------------------ outgoing

    def _write(self, data: bytes) -> None:
        """Send ``data``: the first packet of a loop turn goes out at once when none waits
        before it (no latency added); the others wait for the end of the turn and go out
        together (transports.coalescing)."""
        turn = self._turn
        if turn.scheduled or not turn.at_once():
            self._out.append(data)
            return
        transport = self.transport
        if transport is None or transport.is_closing():
            return  # (nothing more goes out)
        transport.write(data)
        if self._keepalive is not None:
            self._keepalive.last_sent = self.loop.time()

    def _flush(self) -> None:
        """Write the packets waiting, joined into one write."""
        out = self._out
        if not out:
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        transport = self.transport
        if transport is None or transport.is_closing():
            return  # (nothing more goes out)
        transport.write(data)
        if self._keepalive is not None:
            self._keepalive.last_sent = self.loop.time()

    def _parts_of(self, topic: str, expiry_s: int | None,
                  user_properties: tuple[tuple[str, str], ...] = ()) -> tuple[bytes, bytes]:
        """The encoded topic and property block of a PUBLISH; kept per topic and expiry
        (those with user properties, which differ from message to message, are not kept)."""
        if user_properties:
            return self._encode_parts(topic, expiry_s, user_properties)
        key = (topic, expiry_s)
        parts = self._parts.get(key)
        if parts is None:
            if len(self._parts) >= 4096:
                self._parts.clear()
            parts = self._parts[key] = self._encode_parts(topic, expiry_s, ())
        return parts

    def _encode_parts(self, topic: str, expiry_s: int | None,
                      user_properties: tuple[tuple[str, str], ...]) -> tuple[bytes, bytes]:
        properties = b""
        if self.version == p.V5:
            wanted: p.Properties = {}
            if expiry_s is not None:
                wanted[p.MESSAGE_EXPIRY] = max(1, expiry_s)
            if user_properties:
                wanted[p.USER_PROPERTY] = list(user_properties)
            properties = p.encode_properties(wanted)
        encoded = topic.encode()
        if not encoded or len(encoded) > 0xFFFF or "+" in topic or "#" in topic:
            raise ValueError(f"not a topic name to publish to: {topic[:200]!r}")
        return len(encoded).to_bytes(2, "big") + encoded, properties

    def start_publish(self, topic: str, payload: bytes, qos: int,
                      expiry_s: int | None, resend_id: int = 0, *,
                      user_properties: tuple[tuple[str, str], ...] = ()
                      ) -> asyncio.Future[int]:
        """Publish: the future gets the PUBACK's reason code (QoS 0: 0 at once),
        ConnectionBroken when the connection ends first, ValueError for a message the
        broker cannot take (too large, bad topic). ``resend_id``: a QoS 1 publish that was
        in flight on an earlier connection of a session the broker kept goes out again with
        that packet id and DUP set (MQTT-4.4.0-1), where the id is free. The packet id used
        (0: none yet, or QoS 0) is :attr:`last_packet_id` afterwards. ``user_properties``:
        MQTT 5 user properties, (name, value) in order (MQTT 3.1.1 has none)."""
        self.last_packet_id = 0
        future: asyncio.Future[int] = self.loop.create_future()
        if self.closed.done():
            future.set_exception(ConnectionBroken(self.closed.result()))
            return future
        try:
            topic_bytes, properties = self._parts_of(topic, expiry_s, user_properties)
            size = len(topic_bytes) + len(properties) + len(payload) + 2
            size += len(p.encode_varint(size)) + 1
            if size > self.server_max_packet:
                raise ValueError(f"a packet of {size} bytes: the broker takes at most "
                                 f"{self.server_max_packet}")
            if qos == 0:
                self._write(p.encode_publish(topic_bytes, payload, 0, 0, properties))
                future.set_result(0)
                return future
            item = Outbound(topic_bytes, payload, properties, future)
            if resend_id:
                again = self.session.publish_again(item, resend_id)
                if item.packet_id:  # (else it waits for room, then goes out as a new one)
                    self._write(p.encode_publish(topic_bytes, payload, 1, item.packet_id,
                                                 properties, dup=again))
            elif self.session.publish(item):
                self._write(p.encode_publish(topic_bytes, payload, 1, item.packet_id,
                                             properties))
            self.last_packet_id = item.packet_id
        except (ValueError, PacketIdsExhausted) as exc:
            future.set_exception(exc)
        return future

    async def request(self, packet_of: Callable[[int], p.Packet]) -> Any:
        """Send a SUBSCRIBE/UNSUBSCRIBE (made by ``packet_of(packet id)``); its answer."""
        if self.closed.done():
            raise ConnectionBroken(self.closed.result())
        future: asyncio.Future[Any] = self.loop.create_future()
        pid = self.session.request(future)
        self._write(p.encode(packet_of(pid), self.version))
        done, _ = await asyncio.wait((future, self.closed),
                                     return_when=asyncio.FIRST_COMPLETED)
        if future not in done:
            raise ConnectionBroken(self.closed.result())
        return future.result()

    # ------------------------------------------------------------------ lifecycle

    def start_keepalive(self, interval_s: float) -> None:
        if interval_s > 0:
            self._keepalive = KeepAlive(interval_s, self.loop.time())
            self._keepalive_timer = self.loop.call_later(interval_s, self._keepalive_check)

    def _keepalive_check(self) -> None:
        keepalive = self._keepalive
        if keepalive is None or self.closed.done():
            return
        action, after = keepalive.poll(self.loop.time())
        if action == "ping":
            self._write(b"\xc0\x00")
        elif action == "dead":
            self._close(f"no answer from the broker within the keep-alive interval "
                        f"({keepalive.interval_s:g} s)")
            return
        self._keepalive_timer = self.loop.call_later(after, self._keepalive_check)

    def _close(self, reason: str) -> None:
        """End the connection now (what is queued for writing goes first)."""
        self._flush()
        self._end(reason)
        if self.transport is not None:
            self.transport.close()

    def _end(self, reason: str) -> None:
        if self.closed.done():
            return
        self.closed.set_result(reason)
        if self._keepalive_timer is not None:
            self._keepalive_timer.cancel()
        if not self.connack.done():
            self.connack.set_exception(ConnectionBroken(reason))
            self.connack.exception()  # (retrieved: a failed connect raises it elsewhere)
        for item in self.session.abandon():
            if not item.token.done():
                item.token.set_exception(ConnectionBroken(reason))
                item.token.exception()  # a publish nobody awaits any more is no error
        self.session.requests.clear()

    async def disconnect(self) -> None:
        """DISCONNECT, then close; bounded: the socket is dropped after
        DISCONNECT_TIMEOUT_S if the broker keeps it open."""
        transport = self.transport
        if transport is None:
            return
        if not self.closed.done():
            self._write(b"\xe0\x00")
            self._close("disconnected")
        try:
            async with asyncio.timeout(DISCONNECT_TIMEOUT_S):
                await self.lost.wait()
        except TimeoutError:
            transport.abort()  # the buffered bytes would not go out: drop them


async def connect(host: str, port: int, connect_packet: p.Connect, *, timeout_s: float,
                  max_packet_size: int, ssl_context: ssl.SSLContext | None = None,
                  on_refusal: Callable[[str, str], None] | None = None,
                  peer: str = "broker") -> tuple[MqttClientProtocol, p.Connack]:
    """Open the connection, send CONNECT, wait for CONNACK (all within ``timeout_s``).
    ConnectionBroken, OSError or TimeoutError when that fails; a refusing CONNACK is
    returned as it is (the caller decides)."""
    loop = asyncio.get_running_loop()
    protocol: MqttClientProtocol | None = None

    def factory() -> MqttClientProtocol:
        nonlocal protocol
        protocol = MqttClientProtocol(version=connect_packet.version,
                                      max_packet_size=max_packet_size,
                                      on_refusal=on_refusal, peer=peer)
        return protocol

    try:
        async with asyncio.timeout(timeout_s):
            await loop.create_connection(factory, host, port, ssl=ssl_context,
                                         server_hostname=host if ssl_context else None)
            assert protocol is not None
            protocol._write(p.encode(connect_packet))
            connack = await protocol.connack
    except BaseException:
        if protocol is not None and protocol.transport is not None:
            protocol.transport.abort()
        raise
    return protocol, connack

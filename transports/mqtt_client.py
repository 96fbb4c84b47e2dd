"""The seam between the MQTT transport and an MQTT client library (aiomqtt today).

The transport needs four things of a broker connection: publish (returning once the broker has
the message: PUBACK for QoS 1), subscribe, unsubscribe, and the incoming messages, each handed
to a handler as it arrives.
:class:`MqttSession` states them; :func:`open_session` opens one with aiomqtt. Swapping the
client library means writing one more implementation of this module's protocol, nothing else.

Only public APIs of aiomqtt and paho are used. A connection is configured by the MQTT settings
section (:class:`transports.mqtt_settings.MqttSettings`) plus what follows from the process
(client id, TLS context).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Protocol, cast

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from runtime.logs import get_logger
from transports.mqtt_settings import BrokerUrl, MqttSettings

__all__ = ["PACKET_OVERHEAD_BYTES", "MqttSession", "MqttSessionError", "open_session"]

log = get_logger(__name__)

#: longest wait for the broker to close the connection after DISCONNECT
DISCONNECT_TIMEOUT_S = 1.0

#: what an MQTT packet carries besides the payload, at most (topic, properties)
PACKET_OVERHEAD_BYTES = 1024 + 4096


class MqttSessionError(Exception):
    """The broker connection failed or broke (the message says how)."""


class MqttSession(Protocol):
    """One connection to one broker."""

    async def publish(self, topic: str, payload: bytes, qos: int, expiry_s: int | None) -> None:
        """Return when the broker has the message (QoS 1: PUBACK); MqttSessionError when the
        connection broke first. ``expiry_s``: MQTT 5 message expiry interval (ignored by 3.1.1)."""
        ...

    async def subscribe(self, topic: str, qos: int) -> None: ...

    async def unsubscribe(self, topic: str) -> None: ...

    async def receive(self, handler: Callable[[str, bytes], None]) -> None:
        """Call ``handler(topic, payload)`` for every incoming message, as it arrives (from
        the client's read callback: it must not block, and what it raises is logged), until
        the connection breaks (then MqttSessionError)."""
        ...


class _Inbox(asyncio.Queue[aiomqtt.Message]):
    """aiomqtt's queue of incoming messages, replaced (``queue_type``): while a handler is
    set, a message goes to it at once instead. aiomqtt's message iterator starts a task and an
    ``asyncio.wait`` per message, and the consumer is woken two loop iterations after the
    message was read: a reply waited that long for every request."""

    def __init__(self, maxsize: int = 0) -> None:
        super().__init__(maxsize)
        self.handler: Callable[[str, bytes], None] | None = None

    def put_nowait(self, item: aiomqtt.Message) -> None:
        handler = self.handler
        if handler is None:
            super().put_nowait(item)
            return
        payload = item.payload
        try:
            handler(item.topic.value, payload if isinstance(payload, bytes)
                    else str(payload).encode())
        except Exception:  # never into paho's read loop
            log.exception("MQTT: the handler of an incoming message on %s failed",
                          item.topic.value[:200])


class _PackedOnce(Properties):
    """PUBLISH properties packed once: they are never changed after they are made, and paho
    packs the properties of every publish again (about 5 us each)."""

    def pack(self) -> bytes:
        packed: bytes | None = self.__dict__.get("_packed_once")
        if packed is None:
            packed = bytes(super().pack())
            object.__setattr__(self, "_packed_once", packed)  # (paho's __setattr__ refuses)
        return packed


class _AiomqttSession:
    def __init__(self, client: aiomqtt.Client, version: str, inbox: _Inbox) -> None:
        self._client = client
        self._inbox = inbox
        self._v5 = version == "5"
        # paho's Properties cost about as much as the rest of a publish; they are only read
        # after being made, so one per expiry interval serves every message
        self._expiry_properties: dict[int, Properties] = {}

    def _properties(self, expiry_s: int) -> Properties:
        properties = self._expiry_properties.get(expiry_s)
        if properties is None:
            if len(self._expiry_properties) >= 4096:
                self._expiry_properties.clear()
            properties = _PackedOnce(PacketTypes.PUBLISH)
            properties.MessageExpiryInterval = max(1, expiry_s)
            self._expiry_properties[expiry_s] = properties
        return properties

    async def publish(self, topic: str, payload: bytes, qos: int, expiry_s: int | None) -> None:
        properties = None
        if self._v5 and expiry_s is not None:
            properties = self._properties(expiry_s)
        try:
            await self._client.publish(topic, payload, qos=qos, properties=properties,
                                       timeout=math.inf)
        except aiomqtt.MqttError as exc:
            raise MqttSessionError(str(exc)) from exc

    async def subscribe(self, topic: str, qos: int) -> None:
        try:
            await self._client.subscribe(topic, qos=qos)
        except aiomqtt.MqttError as exc:
            raise MqttSessionError(f"subscribe {topic}: {exc}") from exc

    async def unsubscribe(self, topic: str) -> None:
        try:
            await self._client.unsubscribe(topic)
        except aiomqtt.MqttError as exc:
            raise MqttSessionError(f"unsubscribe {topic}: {exc}") from exc

    async def receive(self, handler: Callable[[str, bytes], None]) -> None:
        inbox = self._inbox
        # what arrived before a handler was set (between connecting and now), in order
        while not inbox.empty():
            message = inbox.get_nowait()
            payload = message.payload
            handler(message.topic.value, payload if isinstance(payload, bytes)
                    else str(payload).encode())
        inbox.handler = handler
        try:
            # nothing is queued from now on: the iterator ends when the connection breaks
            async for _ in self._client.messages:
                pass
            raise MqttSessionError("the message stream ended")
        except aiomqtt.MqttError as exc:
            raise MqttSessionError(str(exc)) from exc
        finally:
            inbox.handler = None


@contextlib.asynccontextmanager
async def open_session(url: BrokerUrl, settings: MqttSettings, *, client_id: str,
                       tls_context: ssl.SSLContext | None = None
                       ) -> AsyncIterator[MqttSession]:
    """Connect to the broker at ``url`` as ``client_id``; MqttSessionError when that fails."""
    version = url.version or settings.version
    persistent = settings.session_expiry_s > 0
    kwargs: dict[str, object] = {}
    if version == "5":
        protocol = aiomqtt.ProtocolVersion.V5
        kwargs["clean_start"] = not persistent
        connect_properties = Properties(PacketTypes.CONNECT)
        if persistent:
            connect_properties.SessionExpiryInterval = settings.session_expiry_s
        # the broker does not send bigger packets: they are never buffered here. Room for the
        # topic and properties: payloads a little over the limit still arrive and are refused
        # with a reason; far bigger ones are not sent at all
        connect_properties.MaximumPacketSize = settings.max_message_bytes + PACKET_OVERHEAD_BYTES
        kwargs["properties"] = connect_properties
    else:
        protocol = aiomqtt.ProtocolVersion.V311
        kwargs["clean_session"] = not persistent
    if url.tls and tls_context is None:
        tls_context = ssl.create_default_context()
    inboxes: list[_Inbox] = []

    def inbox(maxsize: int = 0) -> _Inbox:
        inboxes.append(_Inbox(maxsize))
        return inboxes[-1]

    client = aiomqtt.Client(
        url.host,
        url.port,
        username=url.username,
        password=url.password,
        identifier=client_id,
        protocol=protocol,
        keepalive=settings.keepalive_s,
        timeout=settings.connect_timeout_s,
        max_inflight_messages=settings.max_inflight,
        tls_context=tls_context if url.tls else None,
        # no Nagle: a request and its reply are small single packets (with Nagle and delayed
        # ACKs each leg waits ~40 ms); the broker should set TCP_NODELAY too (mosquitto:
        # set_tcp_nodelay true)
        socket_options=((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),),
        queue_type=cast("type[asyncio.Queue[aiomqtt.Message]]", inbox),
        **kwargs,  # type: ignore[arg-type]
    )
    # aiomqtt warns on every publish while more than this many wait for their PUBACK; with
    # max_inflight publishes in flight by design that would be a warning per message
    client.pending_calls_threshold = max(10, 2 * settings.max_inflight)
    try:
        await client.__aenter__()
    except aiomqtt.MqttError as exc:
        raise MqttSessionError(f"cannot connect to {url}: {exc}") from exc
    try:
        yield _AiomqttSession(client, version, inboxes[0])
    finally:
        # a graceful DISCONNECT waits for the broker to close the socket, which a broker in
        # trouble (or amqtt in the middle of a handshake) may never do. The wait is bounded;
        # paho then closes the socket itself once the keep-alive interval passes without
        # traffic (its keep-alive check closes a connection that is disconnecting)
        with contextlib.suppress(aiomqtt.MqttError, OSError, TimeoutError):
            await asyncio.wait_for(client.__aexit__(None, None, None), DISCONNECT_TIMEOUT_S)

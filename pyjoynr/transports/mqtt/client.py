"""The seam between the MQTT transport and an MQTT client.

The transport needs four things of a broker connection: publish (returning once the broker has
the message: PUBACK for QoS 1, with its reason code), subscribe, unsubscribe, and the incoming
messages, each handed to a handler as it arrives. :class:`MqttSession` states them;
:func:`open_session` opens one with the client that ``[mqtt] client`` names:

- ``"native"`` (default): the project's own client (transports.mqtt.mqtt5: a sans-I/O protocol core
  under a thin asyncio protocol). PUBACK reason codes reach the transport; a broker's protocol
  violation is reported through ``on_refusal`` and ends the connection.
- ``"aiomqtt"``: aiomqtt over paho-mqtt (only their public APIs). Its PUBACK reason codes are
  not available (reported as 0), and it checks no packet beyond what paho does.

A connection is configured by the MQTT settings section
(:class:`transports.mqtt.settings.MqttSettings`) plus what follows from the process (client
id, TLS context).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
import ssl
import types
from collections.abc import AsyncIterator, Callable, Coroutine, Generator
from typing import Any, Protocol, cast

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from pyjoynr.runtime.logs import get_logger
from pyjoynr.transports.mqtt.mqtt5 import client as native
from pyjoynr.transports.mqtt.mqtt5 import packets
from pyjoynr.transports.mqtt.settings import BrokerUrl, MqttSettings

__all__ = ["PACKET_OVERHEAD_BYTES", "SESSION_TAKEN_OVER", "MqttSession", "MqttSessionError",
           "UserProperties", "open_session"]

log = get_logger(__name__)

#: longest wait for the broker to close the connection after DISCONNECT
DISCONNECT_TIMEOUT_S = 1.0

#: what an MQTT packet carries besides the payload, at most (topic, properties)
PACKET_OVERHEAD_BYTES = 1024 + 4096


#: The broker connection failed or broke (the message says how). (The native client's own
#: exception, so that it needs no translation on the hot path.)
MqttSessionError = native.ConnectionBroken

#: the reason code of a broker's DISCONNECT when another connection took the client id's
#: session (MQTT 5)
SESSION_TAKEN_OVER = 0x8E

#: PUBACK reason codes (MQTT 5) that are no failure: success, no matching subscribers
PUBACK_ACCEPTED = frozenset({0x00, 0x10})

#: MQTT 5 user properties of a PUBLISH: (name, value) pairs, in order
UserProperties = tuple[tuple[str, str], ...]


class MqttSession(Protocol):
    """One connection to one broker."""

    async def publish(self, topic: str, payload: bytes, qos: int, expiry_s: int | None, *,
                      user_properties: UserProperties = ()) -> int:
        """Return when the broker has the message (QoS 1: PUBACK) with the PUBACK's reason
        code (0 where the client cannot tell); MqttSessionError when the connection broke
        first, another exception when the message cannot be published at all (e.g. larger
        than the broker takes). ``expiry_s``: MQTT 5 message expiry interval;
        ``user_properties``: MQTT 5 user properties, (name, value) in order (3.1.1 carries
        neither)."""
        ...

    def start_publish(self, topic: str, payload: bytes, qos: int, expiry_s: int | None,
                      resend_id: int = 0, *, user_properties: UserProperties = ()
                      ) -> asyncio.Future[int]:
        """:meth:`publish` started now (the packet is on its way to the socket before this
        returns), its outcome in the future. ``resend_id``: the packet id the message had
        on the previous connection, when the broker kept the session (:attr:`session_present`):
        it goes out again with that id and DUP set where the client can (the native one);
        :attr:`last_packet_id` is the id it got (0: none, or the client does not tell)."""
        ...

    #: the broker kept the session of the previous connection (CONNACK; False where the
    #: client does not tell)
    session_present: bool
    @property
    def last_packet_id(self) -> int:
        """The packet id of the last QoS 1 publish started (0: none, or the client does not
        tell)."""
        ...

    async def subscribe(self, topic: str, qos: int) -> None:
        """Return once the broker granted it (SUBACK); MqttSessionError when it refused
        (a reason code of 0x80 or more) or the connection broke first."""
        ...

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


@types.coroutine
def _resume(coro: Coroutine[Any, Any, int], awaited: Any) -> Generator[Any, Any, int]:
    """Go on with ``coro``, started outside a task and now waiting for ``awaited``, in the
    current task: what ``await coro`` would do had it not been started yet."""
    while True:
        try:
            value = yield awaited
        except BaseException as exc:
            try:
                awaited = coro.throw(exc)
            except StopIteration as stop:
                return cast(int, stop.value)
        else:
            try:
                awaited = coro.send(value)
            except StopIteration as stop:
                return cast(int, stop.value)


class _AiomqttSession:
    def __init__(self, client: aiomqtt.Client, version: str, inbox: _Inbox,
                 broker_limit: list[int] | None = None) -> None:
        self._client = client
        self._inbox = inbox
        self._v5 = version == "5"
        # the largest packet the broker takes (its CONNACK's maximum packet size; MQTT 5),
        # as the native client checks it: paho sends a bigger one, and the broker closes
        # the connection, again after every reconnect
        self._broker_limit = broker_limit if broker_limit is not None else [0]
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

    async def publish(self, topic: str, payload: bytes, qos: int, expiry_s: int | None, *,
                      user_properties: UserProperties = ()) -> int:
        properties = None
        if self._v5:
            if user_properties:  # (made for this message alone: they differ per message)
                properties = Properties(PacketTypes.PUBLISH)
                if expiry_s is not None:
                    properties.MessageExpiryInterval = max(1, expiry_s)
                properties.UserProperty = list(user_properties)
            elif expiry_s is not None:
                properties = self._properties(expiry_s)
        limit = self._broker_limit[0]
        if limit:
            size = (len(topic.encode("utf-8")) + len(payload) + 2 + (2 if qos else 0)
                    + (len(properties.pack()) if properties is not None else int(self._v5)))
            size += len(packets.encode_varint(size)) + 1
            if size > limit:
                raise ValueError(f"a packet of {size} bytes: the broker takes at most {limit}")
        try:
            await self._client.publish(topic, payload, qos=qos, properties=properties,
                                       timeout=math.inf)
        except aiomqtt.MqttError as exc:
            raise MqttSessionError(str(exc)) from exc
        return 0  # (aiomqtt does not pass the PUBACK's reason code on)

    #: (aiomqtt tells neither; paho resends what it kept itself)
    session_present = False
    last_packet_id = 0

    def start_publish(self, topic: str, payload: bytes, qos: int, expiry_s: int | None,
                      resend_id: int = 0, *, user_properties: UserProperties = ()
                      ) -> asyncio.Future[int]:
        # the coroutine runs up to its first wait here (paho writes the packet), the rest in
        # a task: what the writer would otherwise do one loop iteration later
        loop = asyncio.get_running_loop()
        coro = self.publish(topic, payload, qos, expiry_s, user_properties=user_properties)
        try:
            awaited = coro.send(None)
        except StopIteration as stop:
            future: asyncio.Future[int] = loop.create_future()
            future.set_result(stop.value)
            return future
        except Exception as exc:
            future = loop.create_future()
            future.set_exception(exc)
            return future
        return loop.create_task(_resume(coro, awaited))

    async def subscribe(self, topic: str, qos: int) -> None:
        try:
            granted = await self._client.subscribe(topic, qos=qos)
        except aiomqtt.MqttError as exc:
            raise MqttSessionError(f"subscribe {topic}: {exc}") from exc
        for code in granted:  # (paho's ReasonCode, or a number)
            value = code if isinstance(code, int) else int(code.value)
            if value >= 0x80:
                raise MqttSessionError(f"subscribe {topic}: refused by the broker: reason "
                                       f"code 0x{value:02x} ({native.reason_name(value)})")

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
            # (aiomqtt tells neither a DISCONNECT's reason code nor whether one came: the
            # broker ended the connection without saying why, as far as the transport knows)
            raise MqttSessionError(str(exc), unexplained=True) from exc
        finally:
            inbox.handler = None


class _NativeSession:
    """The project's own client (transports.mqtt.mqtt5.client) behind the seam."""

    def __init__(self, protocol: native.MqttClientProtocol, session_present: bool) -> None:
        self._protocol = protocol
        self.start_publish = protocol.start_publish
        self.session_present = session_present

    @property
    def last_packet_id(self) -> int:
        return self._protocol.last_packet_id

    async def publish(self, topic: str, payload: bytes, qos: int, expiry_s: int | None, *,
                      user_properties: UserProperties = ()) -> int:
        return await self._protocol.start_publish(topic, payload, qos, expiry_s,
                                                  user_properties=user_properties)

    async def subscribe(self, topic: str, qos: int) -> None:
        suback = await self._protocol.request(
            lambda pid: packets.Subscribe(pid, [(topic, qos)]))
        code = suback.reason_codes[0]
        if code >= 0x80:
            raise MqttSessionError(f"subscribe {topic}: refused by the broker: reason code "
                                   f"0x{code:02x} ({native.reason_name(code)})")

    async def unsubscribe(self, topic: str) -> None:
        unsuback = await self._protocol.request(
            lambda pid: packets.Unsubscribe(pid, [topic]))
        codes = unsuback.reason_codes
        if codes and codes[0] >= 0x80:
            raise MqttSessionError(f"unsubscribe {topic}: refused by the broker: reason code "
                                   f"0x{codes[0]:02x} ({native.reason_name(codes[0])})")

    async def receive(self, handler: Callable[[str, bytes], None]) -> None:
        protocol = self._protocol
        early, protocol.early = protocol.early, []
        for topic, payload in early:  # what arrived before a handler was set, in order
            handler(topic, payload)
        protocol.handler = handler
        try:
            reason = await asyncio.shield(protocol.closed)
        finally:
            protocol.handler = None
        raise MqttSessionError(reason, reason_code=protocol.disconnect_code,
                               unexplained=protocol.unexplained_close)


@contextlib.asynccontextmanager
async def open_session(url: BrokerUrl, settings: MqttSettings, *, client_id: str,
                       tls_context: ssl.SSLContext | None = None,
                       on_refusal: Callable[[str, str], None] | None = None,
                       first_packet_id: int = 1) -> AsyncIterator[MqttSession]:
    """Connect to the broker at ``url`` as ``client_id``; MqttSessionError when that fails.
    ``on_refusal(reason, detail)``: what the client refused from the broker (the native
    client: protocol violations, oversized packets), to count and log; logged here if None.
    ``first_packet_id``: where the native client starts allocating packet ids (above those
    of the publishes the caller will send again with theirs)."""
    if url.tls and tls_context is None:
        tls_context = ssl.create_default_context()
    if settings.client == "aiomqtt":
        async with _open_aiomqtt(url, settings, client_id, tls_context) as session:
            yield session
        return
    version = packets.V5 if (url.version or settings.version) == "5" else packets.V311
    persistent = settings.session_expiry_s > 0
    properties: packets.Properties = {}
    if version == packets.V5:
        if persistent:
            properties[packets.SESSION_EXPIRY] = settings.session_expiry_s
        # the broker does not send bigger packets (see _open_aiomqtt)
        properties[packets.MAXIMUM_PACKET_SIZE] = (settings.max_message_bytes
                                                   + PACKET_OVERHEAD_BYTES)
    connect = packets.Connect(
        client_id, clean_start=not persistent, keepalive=settings.keepalive_s,
        username=url.username,
        password=url.password.encode() if url.password is not None else None,
        properties=properties, version=version)
    try:
        protocol, connack = await native.connect(
            url.host, url.port, connect, timeout_s=settings.connect_timeout_s,
            max_packet_size=settings.max_message_bytes + PACKET_OVERHEAD_BYTES,
            ssl_context=tls_context if url.tls else None, on_refusal=on_refusal,
            peer=str(url))
    except TimeoutError:
        raise MqttSessionError(f"cannot connect to {url}: no answer within "
                               f"{settings.connect_timeout_s:g} s") from None
    except (OSError, native.ConnectionBroken) as exc:
        raise MqttSessionError(f"cannot connect to {url}: {exc}") from exc
    try:
        _accept_connack(url, protocol, connack, settings)
        # new packet ids from first_packet_id on: those below it may be taken again by the
        # publishes that go out again with theirs
        protocol.session.start_ids_at(first_packet_id)
        yield _NativeSession(protocol, persistent and connack.session_present)
    finally:
        await protocol.disconnect()


def _accept_connack(url: BrokerUrl, protocol: native.MqttClientProtocol,
                    connack: packets.Connack, settings: MqttSettings) -> None:
    """Check the broker's CONNACK and take on the limits it sets."""
    code = connack.reason_code
    if code:
        name = (native.CONNACK_REASONS if protocol.version == packets.V5
                else native.CONNACK_REASONS_311).get(code, "unknown")
        raise MqttSessionError(f"cannot connect to {url}: the broker refused: reason code "
                               f"0x{code:02x} ({name})")
    props = connack.properties
    if props.get(packets.MAXIMUM_QOS, 1) < 1:
        raise MqttSessionError(f"cannot connect to {url}: the broker takes QoS 0 only")
    protocol.session.receive_maximum = props.get(packets.RECEIVE_MAXIMUM, 65_535)
    protocol.server_max_packet = props.get(packets.MAXIMUM_PACKET_SIZE,
                                           protocol.server_max_packet)
    protocol.start_keepalive(props.get(packets.SERVER_KEEP_ALIVE, settings.keepalive_s))


@contextlib.asynccontextmanager
async def _open_aiomqtt(url: BrokerUrl, settings: MqttSettings, client_id: str,
                        tls_context: ssl.SSLContext | None) -> AsyncIterator[MqttSession]:
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
    broker_limit = [0]
    if version == "5":
        _note_broker_limit(client, broker_limit)
    try:
        await client.__aenter__()
    except aiomqtt.MqttError as exc:
        raise MqttSessionError(f"cannot connect to {url}: {exc}") from exc
    try:
        yield _AiomqttSession(client, version, inboxes[0], broker_limit)
    finally:
        # a graceful DISCONNECT waits for the broker to close the socket, which a broker in
        # trouble (or amqtt in the middle of a handshake) may never do. The wait is bounded;
        # paho then closes the socket itself once the keep-alive interval passes without
        # traffic (its keep-alive check closes a connection that is disconnecting)
        with contextlib.suppress(aiomqtt.MqttError, OSError, TimeoutError):
            await asyncio.wait_for(client.__aexit__(None, None, None), DISCONNECT_TIMEOUT_S)


def _note_broker_limit(client: aiomqtt.Client, limit: list[int]) -> None:
    """Keep the maximum packet size of the broker's CONNACK in ``limit[0]`` (aiomqtt does
    not pass CONNACK properties on: paho's connect callback is wrapped for them)."""
    paho = client._client  # (aiomqtt's paho client: the one way to the CONNACK)
    inner = paho.on_connect

    def on_connect(*args: Any, **kwargs: Any) -> None:
        properties = kwargs.get("properties", args[4] if len(args) > 4 else None)
        value = getattr(properties, "MaximumPacketSize", None)
        if isinstance(value, int):
            limit[0] = value
        inner(*args, **kwargs)  # type: ignore[misc]

    paho.on_connect = on_connect

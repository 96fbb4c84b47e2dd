"""The seam between the MQTT transport and an MQTT client library (aiomqtt today).

The transport needs four things of a broker connection: publish (returning once the broker has
the message: PUBACK for QoS 1), subscribe, unsubscribe, and a stream of incoming messages.
:class:`MqttSession` states them; :func:`open_session` opens one with aiomqtt. Swapping the
client library means writing one more implementation of this module's protocol, nothing else.

Broker URLs: ``mqtt://host:port`` (or ``tcp://``), ``mqtts://host:port`` (or ``ssl://``) for TLS,
credentials as ``mqtt://user:password@host:port``, and the protocol version as a query
parameter: ``?version=3.1.1`` or ``?version=5`` (the transport's default applies without it).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import parse_qs, unquote, urlsplit

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

__all__ = [
    "BrokerUrl",
    "MqttSession",
    "MqttSessionError",
    "SessionOptions",
    "open_session",
    "parse_broker_url",
]

#: longest wait for the broker to close the connection after DISCONNECT
DISCONNECT_TIMEOUT_S = 1.0

_SCHEMES = {"mqtt": False, "tcp": False, "mqtts": True, "ssl": True}
_VERSIONS = {"5": "5", "5.0": "5", "3.1.1": "3.1.1", "311": "3.1.1", "4": "3.1.1"}


class MqttSessionError(Exception):
    """The broker connection failed or broke (the message says how)."""


@dataclass(frozen=True)
class BrokerUrl:
    host: str
    port: int
    tls: bool
    username: str | None = None
    password: str | None = None
    #: "5" or "3.1.1"; None: the transport's default
    version: str | None = None

    def __str__(self) -> str:  # never shows the password
        user = f"{self.username}@" if self.username else ""
        version = f"?version={self.version}" if self.version else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.host}:{self.port}{version}"


def parse_broker_url(url: str) -> BrokerUrl:
    """Parse a broker URL; ValueError saying what is wrong."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad broker URL {url!r}: {exc}") from None
    if parts.scheme not in _SCHEMES:
        raise ValueError(f"bad broker URL {url!r}: the scheme must be one of "
                         f"{', '.join(sorted(_SCHEMES))}")
    if not parts.hostname:
        raise ValueError(f"bad broker URL {url!r}: no host")
    tls = _SCHEMES[parts.scheme]
    version = None
    query = parse_qs(parts.query)
    unknown = set(query) - {"version"}
    if unknown:
        raise ValueError(f"bad broker URL {url!r}: unknown parameter(s) {sorted(unknown)}")
    if "version" in query:
        version = _VERSIONS.get(query["version"][-1])
        if version is None:
            raise ValueError(f"bad broker URL {url!r}: version must be 5 or 3.1.1")
    return BrokerUrl(
        host=parts.hostname,
        port=port or (8883 if tls else 1883),
        tls=tls,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        version=version,
    )


@dataclass(frozen=True)
class SessionOptions:
    client_id: str
    version: str = "5"
    keepalive_s: int = 30
    #: keep the session (subscriptions, queued QoS 1 messages) in the broker while disconnected
    #: for this long (MQTT 5; with 3.1.1 a persistent session lasts until the broker drops it);
    #: 0: clean session
    session_expiry_s: int = 3600
    connect_timeout_s: float = 10.0
    #: QoS 1 messages sent but not acknowledged at once
    max_inflight: int = 100
    #: MQTT 5: the largest packet the broker may send (0: no limit)
    max_packet_bytes: int = 0
    tls_context: ssl.SSLContext | None = None


class MqttSession(Protocol):
    """One connection to one broker."""

    async def publish(self, topic: str, payload: bytes, qos: int, expiry_s: int | None) -> None:
        """Return when the broker has the message (QoS 1: PUBACK); MqttSessionError when the
        connection broke first. ``expiry_s``: MQTT 5 message expiry interval (ignored by 3.1.1)."""
        ...

    async def subscribe(self, topic: str, qos: int) -> None: ...

    async def unsubscribe(self, topic: str) -> None: ...

    def messages(self) -> AsyncIterator[tuple[str, bytes]]:
        """(topic, payload) of every incoming message, until the connection breaks
        (then MqttSessionError)."""
        ...


class _AiomqttSession:
    def __init__(self, client: aiomqtt.Client, version: str) -> None:
        self._client = client
        self._v5 = version == "5"
        # paho's Properties cost about as much as the rest of a publish; they are only read
        # after being made, so one per expiry interval serves every message
        self._expiry_properties: dict[int, Properties] = {}

    def _properties(self, expiry_s: int) -> Properties:
        properties = self._expiry_properties.get(expiry_s)
        if properties is None:
            if len(self._expiry_properties) >= 4096:
                self._expiry_properties.clear()
            properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
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

    async def messages(self) -> AsyncIterator[tuple[str, bytes]]:
        try:
            async for message in self._client.messages:
                payload = message.payload
                yield message.topic.value, (payload if isinstance(payload, bytes)
                                            else str(payload).encode())
        except aiomqtt.MqttError as exc:
            raise MqttSessionError(str(exc)) from exc


@contextlib.asynccontextmanager
async def open_session(url: BrokerUrl, options: SessionOptions) -> AsyncIterator[MqttSession]:
    """Connect to the broker at ``url``; MqttSessionError when that fails."""
    version = url.version or options.version
    persistent = options.session_expiry_s > 0
    kwargs: dict[str, object] = {}
    if version == "5":
        protocol = aiomqtt.ProtocolVersion.V5
        kwargs["clean_start"] = not persistent
        connect_properties = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        if persistent:
            connect_properties.SessionExpiryInterval = options.session_expiry_s
        if options.max_packet_bytes:
            # the broker does not send bigger packets: they are never buffered here
            connect_properties.MaximumPacketSize = options.max_packet_bytes
        kwargs["properties"] = connect_properties
    else:
        protocol = aiomqtt.ProtocolVersion.V311
        kwargs["clean_session"] = not persistent
    tls_context = None
    if url.tls:
        tls_context = options.tls_context or ssl.create_default_context()
    client = aiomqtt.Client(
        url.host,
        url.port,
        username=url.username,
        password=url.password,
        identifier=options.client_id,
        protocol=protocol,
        keepalive=options.keepalive_s,
        timeout=options.connect_timeout_s,
        max_inflight_messages=options.max_inflight,
        tls_context=tls_context,
        # no Nagle: a request and its reply are small single packets (with Nagle and delayed
        # ACKs each leg waits ~40 ms); the broker should set TCP_NODELAY too (mosquitto:
        # set_tcp_nodelay true)
        socket_options=((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),),
        **kwargs,  # type: ignore[arg-type]
    )
    # aiomqtt warns on every publish while more than this many wait for their PUBACK; with
    # max_inflight publishes in flight by design that would be a warning per message
    client.pending_calls_threshold = max(10, 2 * options.max_inflight)
    try:
        await client.__aenter__()
    except aiomqtt.MqttError as exc:
        raise MqttSessionError(f"cannot connect to {url}: {exc}") from exc
    try:
        yield _AiomqttSession(client, version)
    finally:
        # a graceful DISCONNECT waits for the broker to close the socket, which a broker in
        # trouble (or amqtt in the middle of a handshake) may never do: bounded, then forced
        try:
            await asyncio.wait_for(client.__aexit__(None, None, None), DISCONNECT_TIMEOUT_S)
        except (aiomqtt.MqttError, OSError, TimeoutError):
            with contextlib.suppress(Exception):
                client._client._sock_close()  # paho's own socket shutdown (private)

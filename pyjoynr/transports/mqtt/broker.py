"""The embedded MQTT broker (amqtt) that the default configuration starts in the CC process.

It lets ``bin/cluster-controller`` run with no broker installed. amqtt speaks MQTT 3.1.1 only
and is slow next to mosquitto (docs/benchmarks.md): use it for development and single-host
set-ups, a real broker (mosquitto, ...) in production.

amqtt has no limit on the size of a packet: it reads whatever length a fixed header announces
and passes the publish on (a 20 MB publish reached the cluster controller, whose MQTT 3.1.1
client buffers a whole packet before the CC can refuse it). Here every client connection is
read through :class:`_PacketSizeLimit`, which follows the MQTT framing and closes the
connection as soon as a fixed header announces a packet larger than ``max_packet_bytes`` (the
CC passes its ``[mqtt] max_message_bytes`` plus room for the topic and properties), before
the body is read: the broker never holds it and never passes it on. mosquitto's equivalent is
``max_packet_size``.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass

from amqtt.adapters import ReaderAdapter, StreamReaderAdapter, StreamWriterAdapter
from amqtt.broker import Broker

from pyjoynr.runtime.logs import RepeatedWarnings, get_logger

__all__ = ["DEFAULT_MAX_PACKET_BYTES", "EmbeddedBroker", "EmbeddedBrokerSettings"]

log = get_logger(__name__)

#: the largest packet by default: [mqtt] max_message_bytes's default plus room for the topic and
#: properties (transports.mqtt.client.PACKET_OVERHEAD_BYTES)
DEFAULT_MAX_PACKET_BYTES = 4 * 1024 * 1024 + 1024 + 4096


@dataclass(frozen=True)
class EmbeddedBrokerSettings:
    """The ``[embedded_broker]`` section of the cluster controller's configuration."""

    #: start an MQTT broker (amqtt, MQTT 3.1.1) inside the CC; backends name it "embedded"
    enabled: bool = False
    host: str = "127.0.0.1"
    #: 0: any free port
    port: int = 1883

    def __post_init__(self) -> None:
        if not 0 <= self.port < 65536:
            raise ValueError(f"port must be in 0..65535, got {self.port}")


class _PacketSizeLimit(ReaderAdapter):
    """What amqtt reads from one client, checked on the way: the MQTT framing is followed
    (fixed header: one byte, then the remaining length in 1..4 bytes; then that many bytes),
    and a packet announced larger than ``max_packet_bytes`` ends the connection before its
    body is read. amqtt reads a packet's parts with exact-size reads, in order."""

    _HEADER, _LENGTH, _BODY = 0, 1, 2

    def __init__(self, reader: StreamReaderAdapter, writer: asyncio.StreamWriter,
                 max_packet_bytes: int, broker: EmbeddedBroker) -> None:
        self._reader = reader
        self._writer = writer
        self._max = max_packet_bytes
        self._broker = broker
        self._state = self._HEADER
        self._length = 0
        self._shift = 0
        self._remaining = 0

    async def read(self, n: int = -1) -> bytes:
        data: bytes = await self._reader.read(n)
        if not self._follow(data):
            self._broker.refused_oversized += 1
            peer = self._writer.get_extra_info("peername")
            host = peer[0] if isinstance(peer, tuple) and peer else peer
            self._broker.warnings.warning(
                log, "oversized-packet", f"host {host}",
                "embedded MQTT broker: %s announced a packet of %d bytes, more than %d; "
                "connection closed", peer, self._length, self._max)
            self._writer.transport.abort()
            # what amqtt takes for the end of the stream: the connection is over for it
            raise asyncio.IncompleteReadError(b"", n if n > 0 else None)
        return data

    def _follow(self, data: bytes) -> bool:
        """Follow the framing over ``data``; False when a packet is too large."""
        i, end = 0, len(data)
        while i < end:
            state = self._state
            if state == self._BODY:
                take = min(self._remaining, end - i)
                self._remaining -= take
                i += take
                if not self._remaining:
                    self._state = self._HEADER
            elif state == self._HEADER:
                self._state, self._length, self._shift = self._LENGTH, 0, 0
                i += 1
            else:
                byte = data[i]
                i += 1
                self._length |= (byte & 0x7F) << self._shift
                self._shift += 7
                if byte & 0x80 and self._shift < 28:
                    continue
                if self._length > self._max:
                    return False
                self._remaining = self._length
                self._state = self._BODY if self._length else self._HEADER
        return True

    def feed_eof(self) -> None:
        self._reader.feed_eof()


class _LimitedBroker(Broker):
    """amqtt's broker, reading each TCP client through :class:`_PacketSizeLimit`."""

    def __init__(self, config: dict[str, object], limit: _Limit) -> None:
        super().__init__(config)
        self._limit = limit

    async def stream_connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                               listener_name: str) -> None:
        limited = _PacketSizeLimit(StreamReaderAdapter(reader), writer,
                                   self._limit.max_packet_bytes, self._limit.owner)
        await self.external_connected(limited, StreamWriterAdapter(writer), listener_name)


@dataclass(frozen=True)
class _Limit:
    max_packet_bytes: int
    owner: EmbeddedBroker


class EmbeddedBroker:
    """``async with EmbeddedBroker(settings) as broker:`` an amqtt broker on host:port that
    closes the connection of a client sending a packet larger than ``max_packet_bytes``."""

    def __init__(self, settings: EmbeddedBrokerSettings, *,
                 max_packet_bytes: int = DEFAULT_MAX_PACKET_BYTES,
                 warnings: RepeatedWarnings | None = None) -> None:
        """``warnings``: the process's limit of repeated warnings (runtime.logs), which
        rate-limits the line of each connection closed for an oversized packet per host."""
        if max_packet_bytes < 1:
            raise ValueError(f"max_packet_bytes must be >= 1, got {max_packet_bytes}")
        self.settings = settings
        self.port = settings.port
        self.max_packet_bytes = max_packet_bytes
        #: connections closed because of a packet over the limit
        self.refused_oversized = 0
        self.warnings = RepeatedWarnings() if warnings is None else warnings
        self._broker: Broker | None = None

    @property
    def url(self) -> str:
        return f"mqtt://{self.settings.host}:{self.port}"

    async def start(self) -> None:
        s = self.settings
        port = s.port or _free_port(s.host)
        # amqtt reports a taken port only in its log; check first for a clear error
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((s.host, port))
        except OSError as exc:
            raise OSError(f"embedded MQTT broker: cannot listen on {s.host}:{port}: "
                          f"{exc.strerror}") from None
        finally:
            probe.close()
        broker = _LimitedBroker({
            "listeners": {"default": {"type": "tcp", "bind": f"{s.host}:{port}"}},
            "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin":
                        {"allow_anonymous": True}},
        }, _Limit(self.max_packet_bytes, self))
        await broker.start()
        self._broker, self.port = broker, port
        log.info("embedded MQTT broker (amqtt, MQTT 3.1.1) listening on %s (packets up to %d "
                 "bytes)", self.url, self.max_packet_bytes)

    async def stop(self) -> None:
        broker, self._broker = self._broker, None
        if broker is not None:
            try:
                await asyncio.wait_for(broker.shutdown(), 5)
            except Exception:
                log.exception("embedded MQTT broker did not shut down cleanly")

    async def __aenter__(self) -> EmbeddedBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])

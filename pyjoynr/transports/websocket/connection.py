"""The project's asyncio layer over websockets' sans-I/O protocol objects.

websockets implements the WebSocket protocol as objects that do no I/O
(:class:`websockets.server.ServerProtocol`, :class:`websockets.client.ClientProtocol`): bytes
read from the network go in (``receive_data``), events come out (``events_received``: the
handshake request or response, then frames), and whatever must go on the wire waits in
``data_to_send``. This module is the I/O around them, an :class:`asyncio.Protocol` driven by
``loop.create_server`` / ``loop.create_connection`` (TLS with ``ssl=``), and it does what a
joynr connection needs and no more:

- complete messages go to a handler straight from ``data_received``, one call per message, in
  order. Unfragmented binary messages, nearly all of joynr's traffic, are read by the
  connection's own reader while the protocol object stands between two frames with nothing
  buffered, and every other byte by the protocol object (transports/websocket/framing.py:
  :class:`~pyjoynr.transports.websocket.framing.FrameReader`; the same outcome for every input
  as the protocol object alone). Fragments are joined into one buffer of bytes (websockets
  bounds a message's total size by ``max_size`` and fails the connection with 1009 above it; a
  message in more than ``max_fragments`` fragments fails it with 1009 too). Messages that arrive
  before a handler is set wait in a backlog (taken by :meth:`WebSocketConnection.recv` one by
  one, or all by :meth:`WebSocketConnection.deliver`, in order) while reading goes on: pings are
  answered and pongs and close frames read whoever waits for what. The backlog holds at most
  ``max_backlog_bytes`` (an empty backlog takes one message of any size); at that bound reading
  pauses until messages are taken from it;
- :meth:`WebSocketConnection.send_frames` sends several binary messages with one socket write;
  it writes their frames itself (transports/websocket/framing.py: the same bytes as
  websockets' ``send_binary``, without its per-frame objects) while the connection is open
  with no extension and no fragmented message under way, and through the protocol object
  otherwise; ``paused_writing`` and ``on_writable`` are the write-buffer flow control for the
  writer above (see :class:`transports.outbox.Outbox`);
- keep-alive: a ping every ``ping_interval_s``; no pong within ``ping_timeout_s`` fails the
  connection (1011). :meth:`WebSocketConnection.ping` pings on demand;
- closing: :meth:`WebSocketConnection.close` runs the close handshake (what the peer still
  sends before its close frame is read, and dropped when no handler is set); whenever
  websockets expects the TCP connection to end (a close frame sent or received, a failure, a
  refused handshake), it is aborted if it is still there after ``close_timeout_s`` (or the
  shorter bound given to ``close``);
- opening: the server side answers the handshake request (``accept``, or the response an
  ``on_request`` callback returns instead, e.g. a 404) within ``handshake_timeout_s``;
  :func:`open_client_connection` connects, sends the handshake request and waits for the
  response.

Only websockets' documented sans-I/O API is used (and its masking function), so a websockets
upgrade that keeps that API keeps this module working; the own reader of binary frames leans
on three undocumented attributes of the protocol object as well, checks them per connection
and leaves every byte to websockets when they are missing (framing.py says which).
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from collections import deque
from collections.abc import Callable
from typing import Any, Final, cast

from websockets.client import ClientProtocol
from websockets.frames import OP_BINARY, OP_CONT, OP_PONG, OP_TEXT, Frame
from websockets.http11 import Request, Response
from websockets.protocol import CLIENT, CLOSED, CONNECTING, OPEN, Protocol
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from pyjoynr.runtime.logs import get_logger
from pyjoynr.transports.websocket.framing import FrameReader, MaskSource, binary_frames
from pyjoynr.transports.websocket.settings import DEFAULT_MAX_BACKLOG_BYTES, DEFAULT_MAX_FRAGMENTS

__all__ = [
    "HANDSHAKE_TIMEOUT_S",
    "ClientSideConnection",
    "EventReport",
    "FrameHandler",
    "RequestCheck",
    "ServerSideConnection",
    "WebSocketConnection",
    "open_client_connection",
]

log = get_logger(__name__)

#: what a handler receives: the payload of a binary message, or the text of a text message
FrameHandler = Callable[[bytes | str], None]
#: a connection's :attr:`WebSocketConnection.report`: (connection, reason, level, exc_info,
#: message, *arguments)
EventReport = Callable[..., None]

#: seconds a server connection has to complete its opening handshake (as websockets' own)
HANDSHAKE_TIMEOUT_S: Final = 10.0
#: write buffer size above which the writer stops (``paused_writing``) until it drains to a
#: quarter of this
WRITE_BUFFER_HIGH: Final = 64 * 1024
#: close code of a connection whose keep-alive ping was not answered in time
KEEPALIVE_FAILED: Final = 1011
#: close code of a connection that sent a message in too many fragments (RFC 6455: too big)
MESSAGE_TOO_BIG: Final = 1009


class WebSocketConnection(asyncio.Protocol):
    """One websocket connection over one sans-I/O protocol object (see the module docstring).

    ``protocol`` is websockets' protocol object (public: read its ``state``, ``close_code``,
    ``close_reason``, ``close_exc``); ``transport`` the asyncio transport; ``closed`` a future
    done when the TCP connection is gone.
    """

    transport: asyncio.Transport
    #: where the lines about what this connection's peer did go (a handshake that never
    #: came, a pong that never came, a handler that failed on its message): called with this
    #: connection, a reason, a level, ``exc_info``, the message and its arguments; the
    #: server counts them and rate-limits them per peer host (runtime.logs). None: logged
    #: here as they are
    report: EventReport | None = None

    def __init__(self, protocol: Protocol, *, ping_interval_s: float | None,
                 ping_timeout_s: float, close_timeout_s: float,
                 max_fragments: int = DEFAULT_MAX_FRAGMENTS,
                 max_backlog_bytes: int = DEFAULT_MAX_BACKLOG_BYTES) -> None:
        self.protocol = protocol
        self.max_fragments = max_fragments
        self.max_backlog_bytes = max_backlog_bytes
        #: True once the peer sent a message in more than ``max_fragments`` fragments (the
        #: connection was failed with 1009)
        self.too_many_fragments = False
        self.ping_interval_s = ping_interval_s
        self.ping_timeout_s = ping_timeout_s
        self.close_timeout_s = close_timeout_s
        self.loop = asyncio.get_running_loop()
        #: done when the connection has ended (TCP closed, the protocol's state CLOSED)
        self.closed: asyncio.Future[None] = self.loop.create_future()
        #: the peer's address (``getpeername()``), set when the TCP connection is made
        self.remote_address: Any = None
        #: True while the transport's write buffer is above its high-water mark
        self.paused_writing = False
        #: called when writing may go on (the buffer drained) and when the connection ends
        self.on_writable: Callable[[], None] | None = None
        self._handler: FrameHandler | None = None
        self._backlog: deque[bytes | str] = deque()
        self._backlog_bytes = 0  # the length of the messages in the backlog
        self._backlog_waiter: asyncio.Future[None] | None = None
        self._reading_paused = False  # by this layer: the backlog is full
        self._fragments: bytearray | None = None  # the message being reassembled
        self._fragment_count = 0
        self._fragments_text = False
        self._pings: dict[bytes, asyncio.Future[None]] = {}
        self._keepalive_timer: asyncio.TimerHandle | None = None
        self._close_timer: asyncio.TimerHandle | None = None
        # the masking keys of a client's data frames (None: the server side, no masks)
        self._masks = MaskSource() if protocol.side is CLIENT else None
        #: reads what arrives: binary messages itself, the rest through the protocol object
        self._reader = FrameReader(protocol)
        self._made = False  # connection_made() was called
        self._abort_when_made = False
        #: this end started the close handshake (close()): what the peer still sends is read
        #: and dropped until its close frame arrives
        self._close_started = False

    # ------------------------------------------------------------------ public API

    @property
    def open(self) -> bool:
        return self.protocol.state is OPEN

    @property
    def close_reason(self) -> str | None:
        """The peer's close reason ("" without one); None while the connection is not closed."""
        return self.protocol.close_reason

    def deliver(self, handler: FrameHandler) -> None:
        """From now on, hand every complete data message to ``handler`` (first those waiting
        in the backlog). The handler runs inside ``data_received``: it must not block;
        whatever it raises is logged and the connection goes on."""
        self._handler = handler
        while self._backlog and self._handler is handler:
            self._call(handler, self._take())
        self._resume_own_reading()

    async def recv(self) -> bytes | str:
        """The next message of the backlog (before :meth:`deliver` only). Raises
        ConnectionClosed when the connection ends first."""
        assert self._handler is None, "recv() after deliver()"
        while not self._backlog:
            if self.closed.done():
                raise self.protocol.close_exc
            waiter = self._backlog_waiter = self.loop.create_future()
            try:
                await waiter
            finally:
                self._backlog_waiter = None
        data = self._take()
        if self._backlog_bytes < self.max_backlog_bytes:
            self._resume_own_reading()
        return data

    @property
    def backlog(self) -> int:
        """Messages waiting in the backlog (before :meth:`deliver`)."""
        return len(self._backlog)

    def discard_backlog(self) -> int:
        """Drop the messages waiting in the backlog (nobody will take them); how many."""
        dropped = len(self._backlog)
        self._backlog.clear()
        self._backlog_bytes = 0
        return dropped

    def send_frames(self, frames: list[bytes]) -> bool:
        """Send each of ``frames`` as one binary message, all with one socket write; False
        (and nothing sent) when the connection is not open."""
        protocol = self.protocol
        if protocol.state is not OPEN:
            return False
        if protocol.extensions or protocol.expect_continuation_frame:
            for frame in frames:  # (not the case of joynr's connections: no extension)
                protocol.send_binary(frame)
            writes = protocol.data_to_send()
        else:
            # the bytes protocol.send_binary() would write, without its per-frame objects
            # (transports/websocket/framing.py); after anything the protocol had waiting
            writes = protocol.data_to_send()
            writes += binary_frames(frames, self._masks)
        transport = self.transport
        if not transport.is_closing():
            # data frames only: no end of the stream among them, and sending them cannot make
            # the connection expect its end, so close_expected() is not asked (as _write()
            # does after the rest)
            transport.write(b"".join(writes))
        return True

    def ping(self) -> asyncio.Future[None]:
        """Send a ping; the future is done when its pong (or a later one) arrives, and fails
        with ConnectionClosed when the connection ends first."""
        waiter: asyncio.Future[None] = self.loop.create_future()
        state = self.protocol.state
        if state is CLOSED:
            waiter.set_exception(self.protocol.close_exc)
            return waiter
        data = os.urandom(4)
        while data in self._pings:
            data = os.urandom(4)
        self._pings[data] = waiter
        if state is OPEN:
            self.protocol.send_ping(data)
            self._flush()
        return waiter

    def fail(self, code: int, reason: str = "") -> None:
        """Fail the connection: a close frame (if none was sent yet), then the end."""
        if self.protocol.state is CLOSED:
            return
        self.protocol.fail(code, reason)
        self._resume_own_reading()
        self._flush()

    async def close(self, code: int = 1000, reason: str = "", *,
                    timeout_s: float | None = None) -> None:
        """Run the close handshake (at most ``close_timeout_s`` for the peer's part, or
        ``timeout_s`` when that is shorter) and wait until the connection has ended. What the
        peer sends until its close frame goes to the handler if one is set, and is dropped
        otherwise (reading goes on, so that its close frame is read). Idempotent."""
        self.start_close(code, reason, timeout_s=timeout_s)
        if self._made:
            await asyncio.shield(self.closed)

    def start_close(self, code: int = 1000, reason: str = "", *,
                    timeout_s: float | None = None) -> None:
        """Start :meth:`close` without waiting for its end: the connection ends by itself
        within the close timeout (``closed``), e.g. a peer that answers no ping, which nobody
        should wait for."""
        if not self._made:  # e.g. a TLS handshake in progress: it will not go further
            self._abort_when_made = True
            return
        state = self.protocol.state
        if state is OPEN:
            if timeout_s is not None:
                self.close_timeout_s = min(self.close_timeout_s, timeout_s)
            self._close_started = True
            self.protocol.send_close(code, reason)
            self._resume_own_reading()  # the peer's close frame must be read
            self._flush()
        elif state is CONNECTING:
            self.abort()

    def abort(self) -> None:
        """End the connection at once (no close handshake)."""
        if self._made:
            self.transport.abort()
        else:
            self._abort_when_made = True

    async def wait_closed(self) -> None:
        await asyncio.shield(self.closed)

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        self.transport = transport
        self._made = True
        if self._abort_when_made:
            transport.abort()
            return
        self.remote_address = transport.get_extra_info("peername")
        transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)

    def data_received(self, data: bytes) -> None:
        # binary messages read by the connection's own reader (bytes), then websockets'
        # events for the rest (transports/websocket/framing.py: FrameReader)
        events = self._reader.feed(data)
        writes = self.protocol.data_to_send()
        if writes:  # pongs, the close handshake, the end of the stream
            self._write(writes)
        # taken out of the list one by one, so that each frame is freed once handled: a read
        # brings hundreds, and a list holding them all while they are handled would make the
        # garbage collector see them as long-lived (promoted, then full collections)
        events.reverse()
        while events:
            event = events.pop()
            if type(event) is bytes:  # a whole binary message, read by the own reader
                if self.too_many_fragments:
                    break  # failed: nothing more of this peer's is delivered
                payload = event
            elif isinstance(event, Frame):
                if self.too_many_fragments:
                    break  # failed: nothing more of this peer's is delivered
                opcode = event.opcode
                if opcode is OP_BINARY and event.fin and self._fragments is None:
                    body = event.data
                    payload = body if type(body) is bytes else bytes(body)
                elif opcode is OP_BINARY or opcode is OP_TEXT or opcode is OP_CONT:
                    self._fragment(event)
                    continue
                else:
                    if opcode is OP_PONG:
                        self._pong(bytes(event.data))
                    # pings are answered and close frames handled by the protocol object
                    continue
            else:
                self._handshake(event)
                continue
            handler = self._handler
            if handler is None:
                self._message(payload)
                continue
            # the usual message: _message() and _call() inline (two calls fewer per message)
            try:
                handler(payload)
            except Exception:
                self._event("handler-failed", logging.ERROR,
                            "websocket %s: handling a message failed",
                            self.remote_address, exc_info=True)

    def eof_received(self) -> bool | None:
        self._reader.feed_eof()
        events = self.protocol.events_received()  # a response delimited by the end of stream
        self._flush()
        for event in events:
            if not isinstance(event, Frame):
                self._handshake(event)
        return None  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._reader.feed_eof()  # idempotent; the state is CLOSED from here on
        for timer in (self._keepalive_timer, self._close_timer):
            if timer is not None:
                timer.cancel()
        self._keepalive_timer = self._close_timer = None
        self._fragments = None
        closed_exc = self.protocol.close_exc
        pings, self._pings = self._pings, {}
        for waiter in pings.values():
            if not waiter.done():
                waiter.set_exception(closed_exc)
                waiter.exception()  # nobody may wait for it any more: not an unhandled error
        if self._backlog_waiter is not None and not self._backlog_waiter.done():
            self._backlog_waiter.set_result(None)
        self._lost(exc)
        self.closed.set_result(None)
        self.paused_writing = False
        if self.on_writable is not None:
            self.on_writable()

    def pause_writing(self) -> None:
        self.paused_writing = True

    def resume_writing(self) -> None:
        self.paused_writing = False
        if self.on_writable is not None:
            self.on_writable()

    # ------------------------------------------------------------------ for the subclasses

    def _handshake(self, event: Request | Response) -> None:
        raise NotImplementedError

    def _lost(self, exc: Exception | None) -> None:
        """The connection ended (before ``closed`` is set)."""

    def _opened(self) -> None:
        """The opening handshake is complete: start the keep-alive."""
        if self.ping_interval_s is not None:
            self._keepalive_timer = self.loop.call_later(self.ping_interval_s, self._keepalive)

    # ------------------------------------------------------------------ internals

    def _message(self, data: bytes | str) -> None:
        handler = self._handler
        if handler is not None:
            self._call(handler, data)
            return
        if self._close_started:
            # nobody takes it any more; reading must go on, the peer's close frame is behind
            return
        self._backlog.append(data)
        self._backlog_bytes += len(data)
        # reading goes on (keep-alive, close frames) until the backlog is full: then the peer
        # waits (TCP flow control) until messages are taken from it
        if (self._backlog_bytes >= self.max_backlog_bytes and not self._reading_paused
                and not self.transport.is_closing()):
            self._reading_paused = True
            self.transport.pause_reading()
        waiter = self._backlog_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _take(self) -> bytes | str:
        data = self._backlog.popleft()
        self._backlog_bytes -= len(data)
        return data

    def _event(self, reason: str, level: int, msg: str, *args: object,
               exc_info: bool = False) -> None:
        """A line about what the peer did: to :attr:`report` (rate-limited there), or logged."""
        report = self.report
        if report is not None:
            report(self, reason, level, exc_info, msg, *args)
        else:
            log.log(level, msg, *args, exc_info=exc_info)

    def _call(self, handler: FrameHandler, data: bytes | str) -> None:
        try:
            handler(data)
        except Exception:
            self._event("handler-failed", logging.ERROR,
                        "websocket %s: handling a message failed", self.remote_address,
                        exc_info=True)

    def _fragment(self, frame: Frame) -> None:
        """A fragment of a message, or a whole text message. websockets checks the order of
        fragments and bounds their total size; only their bytes are kept (one buffer), and a
        message in more than ``max_fragments`` fragments fails the connection."""
        if frame.opcode is not OP_CONT:
            self._fragments = bytearray(frame.data)
            self._fragment_count = 1
            self._fragments_text = frame.opcode is OP_TEXT
        else:
            fragments = self._fragments
            if fragments is None:  # the rest of a message refused below: the connection ends
                return
            self._fragment_count += 1
            if self._fragment_count > self.max_fragments:
                self._fragments = None
                self.too_many_fragments = True
                # (the server counts and logs it as a refusal, rate-limited, when it ends)
                log.debug("websocket %s: a message in more than %d fragments; closing the "
                          "connection", self.remote_address, self.max_fragments)
                self.fail(MESSAGE_TOO_BIG, "message in too many fragments")
                return
            fragments += frame.data
        if not frame.fin:
            return
        data = bytes(self._fragments)  # type: ignore[arg-type]  # set above
        self._fragments = None
        if self._fragments_text:
            self._message(data.decode("utf-8", errors="replace"))
        else:
            self._message(data)

    def _resume_own_reading(self) -> None:
        if self._reading_paused:
            self._reading_paused = False
            if not self.transport.is_closing():
                self.transport.resume_reading()

    def _flush(self) -> None:
        writes = self.protocol.data_to_send()
        if writes:
            self._write(writes)
        elif self._close_timer is None and self.protocol.close_expected():
            self._close_timer = self.loop.call_later(self.close_timeout_s, self._close_timeout)

    def _write(self, writes: list[bytes]) -> None:
        transport = self.transport
        if transport.is_closing():
            return  # aborted or closed: nothing goes out any more
        if all(writes):
            if len(writes) == 1:
                transport.write(writes[0])
            else:
                transport.writelines(writes)
        else:  # the end of the stream among them
            for data in writes:
                if data:
                    transport.write(data)
                elif transport.can_write_eof():
                    try:
                        transport.write_eof()
                    except (OSError, RuntimeError):  # uvloop raises RuntimeError
                        transport.close()
                else:  # TLS: no half-close
                    transport.close()
                    break
        if self._close_timer is None and self.protocol.close_expected():
            self._close_timer = self.loop.call_later(self.close_timeout_s, self._close_timeout)

    def _close_timeout(self) -> None:
        self._close_timer = None
        if not self.closed.done():
            log.debug("websocket %s: the peer did not close in time; aborting",
                      self.remote_address)
            self.transport.abort()

    def _pong(self, data: bytes) -> None:
        pings = self._pings
        if data not in pings:
            return  # unsolicited
        # a pong answers its ping and every earlier one
        for key in list(pings):
            waiter = pings.pop(key)
            if not waiter.done():
                waiter.set_result(None)
            if key == data:
                break

    def _keepalive(self) -> None:
        self._keepalive_timer = None
        if self.protocol.state is not OPEN:
            return
        waiter = self.ping()
        self._keepalive_timer = self.loop.call_later(self.ping_timeout_s,
                                                     self._keepalive_timeout, waiter)
        waiter.add_done_callback(self._keepalive_answered)

    def _keepalive_answered(self, waiter: asyncio.Future[None]) -> None:
        if waiter.cancelled() or waiter.exception() is not None or self.closed.done():
            return
        if self._keepalive_timer is not None:
            self._keepalive_timer.cancel()
        assert self.ping_interval_s is not None
        self._keepalive_timer = self.loop.call_later(self.ping_interval_s, self._keepalive)

    def _keepalive_timeout(self, waiter: asyncio.Future[None]) -> None:
        self._keepalive_timer = None
        if waiter.done():
            return
        self._event("no-pong", logging.INFO,
                    "websocket %s: no pong within %.1f s; closing the connection",
                    self.remote_address, self.ping_timeout_s)
        self.fail(KEEPALIVE_FAILED, "keepalive ping timeout")


#: an ``on_request`` callback: None to accept the handshake request, or the response to send
#: instead (made with ``ServerProtocol.reject``)
RequestCheck = Callable[["ServerSideConnection", Request], Response | None]


class _ProtocolLog(logging.LoggerAdapter):
    """The logger of websockets' protocol object of one server-side connection. websockets
    writes a line per connection at INFO ("connection open", "connection rejected"): a flood
    of connections would write one each, so they are DEBUG lines here (the server logs the
    connections it serves, rate-limited); its errors (a failed parser or handshake) go to the
    connection's :attr:`~WebSocketConnection.report`, rate-limited with their traceback."""

    def __init__(self) -> None:
        super().__init__(log, {})
        self.connection: WebSocketConnection | None = None

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        connection = self.connection
        if level >= logging.WARNING and connection is not None:
            connection._event("protocol-error", level, "websocket %s: %s",
                              connection.remote_address, str(msg) % args if args else msg,
                              exc_info=bool(kwargs.get("exc_info")))
        elif self.logger.isEnabledFor(logging.DEBUG):
            self.logger.debug(msg, *args, **kwargs)


class ServerSideConnection(WebSocketConnection):
    """The server end of a connection: made by ``loop.create_server`` for each client."""

    protocol: ServerProtocol

    def __init__(self, *, max_size: int, ping_interval_s: float | None, ping_timeout_s: float,
                 close_timeout_s: float, on_request: RequestCheck,
                 on_open: Callable[[ServerSideConnection], None],
                 tracked: set[ServerSideConnection] | None = None,
                 handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S,
                 max_fragments: int = DEFAULT_MAX_FRAGMENTS,
                 max_backlog_bytes: int = DEFAULT_MAX_BACKLOG_BYTES) -> None:
        protocol_log = _ProtocolLog()
        super().__init__(ServerProtocol(max_size=max_size, logger=protocol_log),
                         ping_interval_s=ping_interval_s,
                         ping_timeout_s=ping_timeout_s, close_timeout_s=close_timeout_s,
                         max_fragments=max_fragments, max_backlog_bytes=max_backlog_bytes)
        protocol_log.connection = self
        self._on_request = on_request
        self._on_open = on_open
        #: the set this connection is in from connection_made() until connection_lost()
        self._tracked = tracked
        self._handshake_timeout_s = handshake_timeout_s
        self._handshake_timer: asyncio.TimerHandle | None = None
        #: the handshake request (its path and headers), once received
        self.request: Request | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if self._tracked is not None:
            self._tracked.add(self)
        if not self._abort_when_made:
            self._handshake_timer = self.loop.call_later(self._handshake_timeout_s,
                                                         self._handshake_timeout)

    def _handshake(self, event: Request | Response) -> None:
        assert isinstance(event, Request)
        self.request = event
        if self._handshake_timer is not None:
            self._handshake_timer.cancel()
            self._handshake_timer = None
        protocol = self.protocol
        try:
            response = self._on_request(self, event)
        except Exception:
            self._event("handshake-check-failed", logging.ERROR,
                        "websocket %s: checking the handshake request failed",
                        self.remote_address, exc_info=True)
            response = protocol.reject(500, "internal error\n")
        if response is None:
            response = protocol.accept(event)  # or its own error response
        protocol.send_response(response)
        self._flush()
        if protocol.state is OPEN:
            self._opened()
            self._on_open(self)

    def _handshake_timeout(self) -> None:
        self._handshake_timer = None
        if self.protocol.state is CONNECTING:
            self._event("no-handshake", logging.INFO, "websocket %s: no handshake within %.1f s",
                        self.remote_address, self._handshake_timeout_s)
            self.transport.abort()

    def _lost(self, exc: Exception | None) -> None:
        if self._handshake_timer is not None:
            self._handshake_timer.cancel()
            self._handshake_timer = None
        if self._tracked is not None:
            self._tracked.discard(self)


class ClientSideConnection(WebSocketConnection):
    """The client end of a connection: see :func:`open_client_connection`."""

    protocol: ClientProtocol

    def __init__(self, url: str, *, max_size: int, ping_interval_s: float | None,
                 ping_timeout_s: float, close_timeout_s: float,
                 max_fragments: int = DEFAULT_MAX_FRAGMENTS) -> None:
        super().__init__(ClientProtocol(parse_uri(url), max_size=max_size),
                         ping_interval_s=ping_interval_s, ping_timeout_s=ping_timeout_s,
                         close_timeout_s=close_timeout_s, max_fragments=max_fragments)
        #: done when the opening handshake succeeded; fails with its error
        self.opened: asyncio.Future[None] = self.loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        protocol = self.protocol
        protocol.send_request(protocol.connect())
        self._flush()

    def _handshake(self, event: Request | Response) -> None:
        error = self.protocol.handshake_exc
        if self.opened.done():
            return
        if error is not None:
            self.opened.set_exception(error)
            self._flush()
            return
        self.opened.set_result(None)
        self._opened()

    def _lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            error = self.protocol.handshake_exc or ConnectionError(
                f"connection lost during the opening handshake: {exc or 'closed by the peer'}")
            self.opened.set_exception(error)
            self.opened.exception()  # retrieved here: open_client_connection may be gone


async def open_client_connection(url: str, *, max_size: int, ping_interval_s: float | None,
                                 ping_timeout_s: float, close_timeout_s: float,
                                 open_timeout_s: float, ssl_context: ssl.SSLContext | None,
                                 max_fragments: int = DEFAULT_MAX_FRAGMENTS
                                 ) -> ClientSideConnection:
    """Connect to the websocket server at ``url`` (``ws://`` or ``wss://``, then with
    ``ssl_context``) and complete the opening handshake within ``open_timeout_s``. Raises
    OSError (TLS errors included), TimeoutError, InvalidURI or InvalidHandshake (e.g.
    InvalidStatus for an HTTP error response)."""
    uri = parse_uri(url)
    loop = asyncio.get_running_loop()
    connection: ClientSideConnection | None = None

    def factory() -> ClientSideConnection:
        nonlocal connection
        connection = ClientSideConnection(url, max_size=max_size,
                                          ping_interval_s=ping_interval_s,
                                          ping_timeout_s=ping_timeout_s,
                                          close_timeout_s=close_timeout_s,
                                          max_fragments=max_fragments)
        return connection

    try:
        async with asyncio.timeout(open_timeout_s):
            if uri.secure:
                await loop.create_connection(
                    factory, uri.host, uri.port,
                    ssl=ssl_context or ssl.create_default_context(), server_hostname=uri.host)
            else:
                await loop.create_connection(factory, uri.host, uri.port)
            assert connection is not None
            await asyncio.shield(connection.opened)
    except BaseException:
        if connection is not None and not connection.closed.done():
            connection.abort()
        raise
    return connection


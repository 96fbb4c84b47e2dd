"""The admin endpoint's HTTP server: :class:`AdminServer`, h11 over asyncio streams.

A network entry point like the others, so its input is hostile until checked. The HTTP
protocol is h11's (a sans-I/O HTTP/1.1 state machine: the parsing is its, never ours); this
module reads bytes into it, answers the requests it yields and writes what it emits. What a
client gets:

- ``GET`` (and ``HEAD``) of the paths the server was given (``routes``), with keep-alive;
  every other method: 405; every other path: 404;
- a request head over ``max_request_head_bytes`` (h11 stops buffering there): 431; a request
  h11 cannot parse: 400; a request with a body: 413 (no endpoint takes one; the body is not
  read); a request not complete within ``request_timeout_s``: 408; each time the connection
  is closed after the answer;
- a loopback endpoint answers only requests whose Host header names the loopback interface
  (421 otherwise): a web page cannot read it through a DNS name rebound to 127.0.0.1;
- at most ``max_connections`` connections at once: a further one is closed at once;
- a response the client does not read within ``request_timeout_s`` closes the connection.

Every refusal is counted in :attr:`AdminServer.counters` by reason and logged, rate-limited per
reason and client address (``warnings``: the process's :class:`~runtime.logs.RepeatedWarnings`);
nothing a client sends ends the server. Memory per connection is bounded by the head limit
plus one read (h11 buffers no more), and the answers are the process's own, bounded by its
tables' row limits. A handler that raises is a 500 (logged with its traceback).
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import h11

from pyjoynr.admin.settings import AdminSettings, is_loopback
from pyjoynr.runtime.logs import RepeatedWarnings, get_logger

__all__ = ["AdminServer", "Handler", "Reply", "text_reply"]

log = get_logger(__name__)

#: bytes read from a connection at once (h11 holds at most the head limit of unparsed bytes)
READ_BYTES = 16 * 1024
#: what every answer says besides its own headers: not cached, not sniffed, not framed
COMMON_HEADERS = (("cache-control", "no-store"), ("x-content-type-options", "nosniff"),
                  ("x-frame-options", "DENY"), ("referrer-policy", "no-referrer"))


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer: status, body, its content type and further headers."""

    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


def text_reply(status: int, text: str) -> Reply:
    return Reply(status, (text + "\n").encode())


#: what an endpoint is: an answer, computed when asked (GET, no parameters)
Handler = Callable[[], Awaitable[Reply]]


class _Refused(Exception):
    """A request answered with an error and the end of the connection."""

    def __init__(self, reason: str, status: int, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.status = status


class AdminServer:
    """``await start()`` / ``await stop()``; serves ``routes`` (path -> handler)."""

    def __init__(self, settings: AdminSettings, routes: Mapping[str, Handler], *,
                 warnings: RepeatedWarnings, name: str = "admin endpoint") -> None:
        self.settings = settings
        self.routes = dict(routes)
        self.warnings = warnings
        self.name = name
        #: refusals by reason (see the module docstring)
        self.counters: Counter[str] = Counter()
        #: answers by (path, status); paths that are not routes count as "other"
        self.requests: Counter[tuple[str, int]] = Counter()
        self._server: asyncio.Server | None = None
        self._port: int | None = None
        self._open: set[asyncio.Task[None]] = set()
        self._check_host = settings.loopback

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        s = self.settings
        self._server = await asyncio.start_server(self._connection, s.host, s.port,
                                                  limit=READ_BYTES)
        sockets = self._server.sockets
        self._port = sockets[0].getsockname()[1] if sockets else s.port
        log.info("%s listening on %s (%s)", self.name, self.url, ", ".join(sorted(self.routes)))

    @property
    def port(self) -> int:
        return self._port if self._port is not None else self.settings.port

    @property
    def url(self) -> str:
        host = self.settings.host
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}"

    @property
    def open_connections(self) -> int:
        return len(self._open)

    async def stop(self) -> None:
        """Stop listening and close every connection (a request being answered ends)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._open):
            task.cancel()
        if self._open:
            await asyncio.wait(list(self._open))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 1.0)

    # ------------------------------------------------------------------ connections

    def _refuse(self, reason: str, host: str, detail: str) -> None:
        self.counters[reason] += 1
        self.warnings.warning(log, reason, f"admin client {host}",
                              "%s: refused a request of %s: %s", self.name, host, detail)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                          ) -> None:
        peer = writer.get_extra_info("peername")
        host = str(peer[0]) if isinstance(peer, tuple) and peer else str(peer)
        if len(self._open) >= self.settings.max_connections:
            self._refuse("too-many-connections", host,
                         f"{self.settings.max_connections} connections are open")
            writer.transport.abort()
            return
        task = asyncio.current_task()
        assert task is not None
        self._open.add(task)
        conn = h11.Connection(h11.SERVER,
                              max_incomplete_event_size=self.settings.max_request_head_bytes)
        try:
            while await self._exchange(conn, reader, writer, host):
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    break
                conn.start_next_cycle()
        except (ConnectionError, OSError):
            pass  # the client went away
        except asyncio.CancelledError:
            pass  # stop(): the connection ends here
        except Exception:
            log.exception("%s: a connection of %s failed", self.name, host)
        finally:
            self._open.discard(task)
            writer.transport.abort()

    async def _exchange(self, conn: h11.Connection, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter, host: str) -> bool:
        """One request and its answer; False when the connection is to end."""
        timeout_s = self.settings.request_timeout_s
        try:
            try:
                async with asyncio.timeout(timeout_s):
                    request = await self._read_request(conn, reader)
            except TimeoutError:
                if conn.their_state is h11.IDLE and not conn.trailing_data[0]:
                    return False  # an idle keep-alive connection: closed without a word
                raise _Refused("timeout", 408,
                               f"the request was not complete within {timeout_s} s") from None
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint
                raise _Refused("oversized-head" if status == 431 else "bad-request", status,
                               f"{exc}") from None
            if request is None:
                return False  # closed by the client
            reply = await self._answer(request, host)
            keep = True
        except _Refused as refused:
            self._refuse(refused.reason, host, str(refused))
            reply, keep = text_reply(refused.status, str(refused)), False
            request = None
        head = request is not None and request.method == b"HEAD"
        try:
            async with asyncio.timeout(timeout_s):
                await self._send(conn, writer, reply, head=head, close=not keep)
        except h11.LocalProtocolError:
            return False  # no answer is possible in this state (a partial request timed out)
        except TimeoutError:
            self._refuse("write-timeout", host,
                         f"the answer was not read within {timeout_s} s")
            return False
        return keep

    async def _read_request(self, conn: h11.Connection, reader: asyncio.StreamReader
                            ) -> h11.Request | None:
        """The next complete request (its head; a body is refused), or None at the end."""
        request: h11.Request | None = None
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(READ_BYTES))  # b"": the client closed
            elif isinstance(event, h11.Request):
                request = event
                if _has_body(event):
                    raise _Refused("request-body", 413, "no endpoint takes a request body")
            elif isinstance(event, h11.Data):  # (a body announced otherwise: still refused)
                raise _Refused("request-body", 413, "no endpoint takes a request body")
            elif isinstance(event, h11.EndOfMessage):
                return request
            else:  # ConnectionClosed, or PAUSED (cannot happen: one request at a time)
                return None

    async def _answer(self, request: h11.Request, host: str) -> Reply:
        target = request.target.decode("ascii", errors="replace")
        path = target.split("?", 1)[0]
        if self._check_host:
            named = _host_header(request)
            if named is not None and not is_loopback(named):
                raise _Refused("bad-host", 421, f"Host {named[:100]!r} is not this host's "
                               "loopback interface")
        handler = self.routes.get(path)
        if request.method not in (b"GET", b"HEAD"):
            raise _Refused("method-not-allowed", 405,
                           f"method {request.method[:20].decode(errors='replace')!r} on "
                           f"{path[:100]!r}: only GET and HEAD")
        if handler is None:
            self.requests["other", 404] += 1
            raise _Refused("not-found", 404, f"no endpoint {path[:200]!r}")
        started = time.perf_counter()
        try:
            reply = await handler()
        except Exception:
            log.exception("%s: %s failed", self.name, path)
            reply = text_reply(500, f"{path} failed (see the process's log)")
        self.requests[path, reply.status] += 1
        log.debug("%s: %s %s -> %d in %.1f ms", self.name, host, path, reply.status,
                  (time.perf_counter() - started) * 1000)
        return reply

    @staticmethod
    async def _send(conn: h11.Connection, writer: asyncio.StreamWriter, reply: Reply, *,
                    head: bool, close: bool) -> None:
        headers = [("content-type", reply.content_type),
                   ("content-length", str(len(reply.body))), *COMMON_HEADERS, *reply.headers]
        if close:
            headers.append(("connection", "close"))
        writer.write(conn.send(h11.Response(status_code=reply.status, headers=headers,
                                            reason=_phrase(reply.status))))
        if reply.body and not head:
            writer.write(conn.send(h11.Data(data=reply.body)))
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()


def _has_body(request: h11.Request) -> bool:
    for name, value in request.headers:
        if name == b"content-length" and value.strip() not in (b"0", b""):
            return True
        if name == b"transfer-encoding":
            return True
    return False


def _host_header(request: h11.Request) -> str | None:
    """The host the Host header names, without its port (None: no Host header)."""
    for name, value in request.headers:
        if name == b"host":
            text = value.decode("ascii", errors="replace").strip()
            if text.startswith("["):  # [::1]:4280
                return text[1:text.find("]")] if "]" in text else text
            return text.rsplit(":", 1)[0] if text.count(":") == 1 else text
    return None


def _phrase(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""

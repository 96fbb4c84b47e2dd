"""A Unix domain socket client that behaves on the wire as joynr's JavaScript runtime's UDS
transport does, for tests.

It writes and reads joynr's UDS frames by hand (never the project's framing module): a 4-byte
cookie, the payload's length as a 4-byte big-endian unsigned integer, the payload. In the order
joynr's JavaScript runtime uses them:

1. on connect, one init frame: cookie ``MJI1``, payload
   ``{"_typeName":"joynr.system.RoutingTypes.UdsClientAddress","id":"<client id>"}`` (the
   generated type's ``_typeName`` field comes first in its JSON); the server answers nothing;
2. then message frames (cookie ``MJM1``), one SMRF message each, either way; a frame from the
   server with another cookie is fatal to the client (it closes the connection);
3. the runtime's calls are those of its websocket runtime (tests.support.joynr_js), with its
   ``UdsClientAddress`` in ``addNextHop`` (the overload of that datatype).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

from tests.support.joynr_js import CONNECT_TIMEOUT_S, ROUTING, SYSTEM_TTL_MS, JoynrJsClient

__all__ = ["UDS_CLIENT_ADDRESS", "JoynrJsUdsClient", "UdsLink", "uds_frame"]

UDS_CLIENT_ADDRESS = "joynr.system.RoutingTypes.UdsClientAddress"
INIT_COOKIE = b"MJI1"
MESSAGE_COOKIE = b"MJM1"


def uds_frame(payload: bytes, cookie: bytes = MESSAGE_COOKIE) -> bytes:
    """A frame as joynr's MagicCookieUtil writes one: cookie, UInt32BE length, payload."""
    return cookie + struct.pack(">I", len(payload)) + payload


class UdsLink:
    """The socket under a :class:`JoynrJsUdsClient`: ``send`` writes one message frame, and
    iterating gives the payloads of the frames received until the connection ends (or a frame
    with a wrong cookie arrives: then it closes, as joynr's client does)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        #: the cookie of a frame that was not a message frame (the client closed then)
        self.bad_cookie: bytes | None = None

    @classmethod
    async def open(cls, path: str) -> UdsLink:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(path),
                                                CONNECT_TIMEOUT_S)
        return cls(reader, writer)

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, payload: bytes) -> None:
        await self.send_raw(uds_frame(payload))

    async def close(self, code: int = 0, reason: str = "") -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()

    async def closed_by_peer(self, timeout_s: float = 10.0) -> bool:
        """Whether the server ends the connection within ``timeout_s`` (reading what else it
        sends)."""
        try:
            async with asyncio.timeout(timeout_s):
                while await self.reader.read(65536):
                    pass
        except TimeoutError:
            return False
        except OSError:
            return True
        return True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            try:
                header = await self.reader.readexactly(8)
            except (asyncio.IncompleteReadError, OSError):
                return
            cookie, length = header[:4], struct.unpack(">I", header[4:])[0]
            if cookie != MESSAGE_COOKIE:
                self.bad_cookie = cookie
                await self.close()
                return
            try:
                yield await self.reader.readexactly(length)
            except (asyncio.IncompleteReadError, OSError):
                return


class JoynrJsUdsClient(JoynrJsClient):
    """joynr's JavaScript runtime connected over a Unix domain socket (see the module
    docstring); everything above the frames is :class:`JoynrJsClient`'s."""

    link: UdsLink

    def __init__(self, link: UdsLink) -> None:
        super().__init__(link)  # type: ignore[arg-type]  # (a websocket's send/close/iterate)
        self.link = link
        self.address = {"_typeName": UDS_CLIENT_ADDRESS, "id": self.client_id}

    @classmethod
    async def open(cls, stack: AsyncExitStack, url: str, *, start: bool = True
                   ) -> JoynrJsUdsClient:
        """Connect to the socket ``url`` (a path, or unix:///path), send the init frame and
        (``start``) make the system calls of joynr's runtime start; closed when ``stack``
        closes."""
        link = await UdsLink.open(url.removeprefix("unix://"))
        client = cls(link)
        stack.push_async_callback(client.close)
        await link.send_raw(uds_frame(client.init_frame(), INIT_COOKIE))
        client._reader = asyncio.create_task(client._read())
        if start:
            await client.start()
        return client

    def init_frame(self) -> bytes:
        return ('{"_typeName":"' + UDS_CLIENT_ADDRESS + '","id":"' + self.client_id
                + '"}').encode()

    async def add_next_hop(self, participant_id: str, visible: bool, *,
                           sender: str | None = None) -> None:
        assert await self.call(
            ROUTING, "addNextHop", ["String", UDS_CLIENT_ADDRESS, "Boolean"],
            [participant_id, self.address, visible], sender=sender or self.routing_proxy,
            ttl_ms=SYSTEM_TTL_MS) == []

"""How long a reconnecting runtime waits to take over the client id of its half-open connection.

Usage: .venv/bin/python bench/websocket_takeover.py [--ping-interval S] [--ping-timeout S]
                                                    [--rounds R]

An in-process cluster controller with the given keep-alive (``[websocket] ping_interval_s``,
``ping_timeout_s``; the defaults are the shipped ones, 20 s and 20 s). Each round:

- an old connection sends its init frame for an id, then reads nothing any more (a raw socket:
  a laptop lid closed, a NAT entry gone): it answers no ping;
- a new connection (the project's client end, with the same keep-alive) sends its init frame for
  the same id and, in the same write, an ``add_next_hop`` request to the CC's Routing provider;
- timed from that write: until the CC has the new connection registered under the id (its
  status page's client list), and until the reply to the request is back;
- then the new connection is watched for ``ping_interval + ping_timeout`` more: "up" when both
  ends' keep-alive kept it open, else the close code it ended with and when.

The CC pings the old connection and replaces it when no pong comes within ``ping_timeout_s``,
so the take-over cannot be shorter than that; what it costs beyond is the figure to watch.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import uuid
from pathlib import Path

import uvloop
from websockets.client import ClientProtocol
from websockets.protocol import CONNECTING
from websockets.uri import parse_uri

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.programming.system_interfaces import DEFAULT_ROUTING_PARTICIPANT_ID, Routing
from pyjoynr.runtime.addresses import WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import Request
from pyjoynr.testing.cluster import cc_config
from pyjoynr.transports.dialects import encode_init
from pyjoynr.transports.websocket.connection import open_client_connection


async def silent_connection(url: str, client_id: str) -> asyncio.StreamWriter:
    """Open a websocket connection, send the init frame, and read nothing from then on."""
    uri = parse_uri(url)
    reader, writer = await asyncio.open_connection(uri.host, uri.port)
    protocol = ClientProtocol(uri)
    protocol.send_request(protocol.connect())
    writer.writelines(protocol.data_to_send())
    async with asyncio.timeout(10):
        while protocol.state is CONNECTING:
            data = await reader.read(65536)
            if not data:
                raise ConnectionError("closed during the opening handshake")
            protocol.receive_data(data)
    protocol.send_binary(encode_init(client_id))
    writer.writelines(protocol.data_to_send())
    await writer.drain()
    return writer


def add_next_hop(participant_id: str, client_id: str) -> Message:
    method = interface_def(Routing).methods["add_next_hop"]
    body = Request(uuid.uuid4().hex, "add_next_hop",
                   [participant_id, WebSocketClientAddress(client_id).to_dict(), False],
                   method.param_datatypes).to_body()
    return Message(type=MessageType.REQUEST, sender=participant_id,
                   recipient=DEFAULT_ROUTING_PARTICIPANT_ID,
                   expiry_date_ms=now_ms() + 600_000, body=body)


async def one_round(cc: ClusterController, interval_s: float, timeout_s: float
                    ) -> tuple[float | None, float | None, str]:
    url = cc.websocket_address.url
    loop = asyncio.get_running_loop()
    client_id = f"lid-{uuid.uuid4().hex[:8]}"
    old = await silent_connection(url, client_id)
    try:
        for _ in range(2000):  # at most 10 s
            if client_id in cc.websocket.clients:
                break
            await asyncio.sleep(0.005)
        else:
            raise RuntimeError(f"{client_id} did not connect")
        new = await open_client_connection(
            url, max_size=1 << 20, ping_interval_s=interval_s, ping_timeout_s=timeout_s,
            close_timeout_s=timeout_s, open_timeout_s=10, ssl_context=None)
        here = new.transport.get_extra_info("sockname")
        peer = f"{here[0]}:{here[1]}"
        replied: list[Message] = []
        new.deliver(lambda frame: replied.append(decode_frame(frame)))
        started = loop.time()
        new.send_frames([encode_init(client_id), encode_frame(add_next_hop("p-" + client_id,
                                                                           client_id))])
        registered: float | None = None
        reply: float | None = None
        deadline = started + 2 * timeout_s + interval_s + 5
        while loop.time() < deadline and not new.closed.done():
            if registered is None and any(
                    s.address.id == client_id and s.peer == peer
                    for s in cc.websocket.client_summaries()):
                registered = loop.time() - started
            if reply is None and replied:
                reply = loop.time() - started
            if registered is not None and reply is not None:
                break
            await asyncio.sleep(0.005)
        if registered is not None and not new.closed.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(new.wait_closed(), interval_s + timeout_s + 1)
        if new.closed.done():
            exc = new.protocol.close_exc
            frame = exc.sent or exc.rcvd
            state = (f"closed {frame.code if frame else 'without close frame'} "
                     f"{loop.time() - started:.3f} s after the init frame")
        else:
            state = "up"
            await new.close()
        return registered, reply, state
    finally:
        old.close()


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        config = cc_config(Path(data_dir), websocket__ping_interval_s=args.ping_interval,
                           websocket__ping_timeout_s=args.ping_timeout)
        async with ClusterController(config) as cc:
            print(f"ping interval {args.ping_interval} s, ping timeout {args.ping_timeout} s")
            for i in range(args.rounds):
                registered, reply, state = await one_round(cc, args.ping_interval,
                                                           args.ping_timeout)
                def s(value: float | None) -> str:
                    return "never" if value is None else f"{value:.3f} s"
                print(f"round {i + 1}: registered after {s(registered)}, reply after "
                      f"{s(reply)}, then {state}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ping-interval", type=float, default=20.0)
    parser.add_argument("--ping-timeout", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    uvloop.run(main(parser.parse_args()))
    sys.exit(0)

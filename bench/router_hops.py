"""The routing core per hop, unprofiled: each hop of the websocket paths alone, beside a bare relay.

Usage: .venv/bin/python bench/router_hops.py [--payload BYTES] [--messages N] [--runs K]

cProfile makes every Python call several times slower, and the routing core is many small
calls: the router's row of the path benches' ``--profile`` is larger than its share of the
unprofiled time. This script times the core's hops as the websocket paths run them, without a
profiler, in one process, and each beside what a bare relay does for the same message (the
raw baseline: msgpack alone, one dict lookup of the recipient, the transport's send):

- ``decode``: ``decode_frame`` of a one-way frame as the proxy sends it (the path benches'
  ``push``, same fields and sizes), against ``msgpack.unpackb`` of the same bytes;
- ``CC hop``: a cluster controller's way in for that frame from a websocket client
  (``decode_frame``, ``MessageRouter.receive`` over the client's inlet: admission, routing,
  the next hop's transport), against unpackb, a lookup and the send;
- ``runtime hop``: the same in the provider's runtime, from its cluster controller to an
  in-process participant;
- ``runtime route``: a runtime routing a message made there to its cluster controller (the
  proxy's side; nothing to decode), against a lookup and the send.

The transport of every next hop takes each message and keeps a count (the router's
``Transport``: what it would write is not this script's subject; the path benches time the
writes). Per hop and run: microseconds per message of both and the ratio project/raw, the
runs alternating the two, best of ``--rounds`` rounds per run; then the sum per one-way
message (three routings, two decodes) and per request/reply call (six, four). Every message
of every round must reach its next hop, or the script says WRONG.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgpack

from pyjoynr.runtime.addresses import (
    Address,
    InProcessAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.inlets import Inlet, InletKind
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import OneWayRequest
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind

PROXY, PROVIDER = "proxy-" + "0" * 26, "provider-" + "0" * 23  # uuid-long participant ids
TTL_MS = 600_000


class Taker:
    """A transport that takes every message and counts them."""

    def __init__(self) -> None:
        self.count = 0

    def send(self, address: Address, message: Message) -> bool:
        self.count += 1
        return True


Hop = tuple[Callable[[], object], Callable[[], object], Taker, Taker]


def hops(payload: int) -> dict[str, Hop]:
    """Per hop: the project's step and the raw one, each with the transport it ends in."""
    client_a, client_b = WebSocketClientAddress("a"), WebSocketClientAddress("b")
    cc_address = WebSocketAddress("ws", "127.0.0.1", 4242)
    body = OneWayRequest("push", ["x" * payload], ["String"]).to_body()
    message = Message(MessageType.ONE_WAY, PROXY, PROVIDER, now_ms() + TTL_MS, body)
    frame = encode_frame(message)
    unpackb = msgpack.unpackb

    # a cluster controller: both runtimes' participants routed to their connections
    cc_taker, cc_raw = Taker(), Taker()
    cc = MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER))
    cc.register_transport(WebSocketClientAddress, cc_taker)
    cc.add_route(PROXY, client_a, is_globally_visible=False)
    cc.add_route(PROVIDER, client_b, is_globally_visible=False)
    client_inlet = Inlet(InletKind.CLIENT, client_a, "websocket client a", "client a",
                         Counter())
    cc_routes = {PROXY: client_a, PROVIDER: client_b}

    def cc_hop() -> object:
        return cc.receive(decode_frame(frame, origin=client_a), client_inlet)

    def cc_hop_raw() -> object:
        data = unpackb(frame)
        return cc_raw.send(cc_routes[data["r"]], message)

    # the provider's runtime: its provider in-process, the cluster controller its parent
    rt_taker, rt_raw, up, up_raw = Taker(), Taker(), Taker(), Taker()
    runtime = MessageRouter(RoutingTable(RuntimeKind.LIBJOYNR), parent=cc_address)
    runtime.register_transport(InProcessAddress, rt_taker)
    runtime.register_transport(WebSocketAddress, up)
    provider = InProcessAddress(object())
    runtime.add_route(PROVIDER, provider, is_globally_visible=False)
    parent_inlet = Inlet(InletKind.PARENT, cc_address, "the cluster controller",
                         "the cluster controller", Counter())
    rt_routes: dict[str, Address] = {PROVIDER: provider}

    def runtime_hop() -> object:
        return runtime.receive(decode_frame(frame, origin=cc_address), parent_inlet)

    def runtime_hop_raw() -> object:
        data = unpackb(frame)
        return rt_raw.send(rt_routes[data["r"]], message)

    # the proxy's runtime sends what it made to its cluster controller (no route of its own)
    outgoing = Message(MessageType.ONE_WAY, PROXY, "elsewhere", now_ms() + TTL_MS, body)

    def runtime_route() -> object:
        return runtime.route(outgoing)

    def runtime_route_raw() -> object:
        return up_raw.send(rt_routes.get(outgoing.recipient) or cc_address, outgoing)

    decoded, raw_decoded = Taker(), Taker()

    def decode() -> object:
        decoded.count += 1
        return decode_frame(frame, origin=client_a)

    def decode_raw() -> object:
        raw_decoded.count += 1
        return unpackb(frame)

    print(f"the frame: {len(frame)} B")
    return {"decode": (decode, decode_raw, decoded, raw_decoded),
            "CC hop": (cc_hop, cc_hop_raw, cc_taker, cc_raw),
            "runtime hop": (runtime_hop, runtime_hop_raw, rt_taker, rt_raw),
            "runtime route": (runtime_route, runtime_route_raw, up, up_raw)}


def per_message_us(step: Callable[[], object], messages: int) -> float:
    start = time.perf_counter()
    for _ in range(messages):
        step()
    return (time.perf_counter() - start) / messages * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payload", type=int, default=200, help="payload string length")
    parser.add_argument("--messages", type=int, default=5_000, help="messages per round")
    parser.add_argument("--rounds", type=int, default=20, help="rounds per run (best counts)")
    parser.add_argument("--runs", type=int, default=3, help="runs (each alternating the two)")
    args = parser.parse_args()
    steps = hops(args.payload)
    print(f"routing core per hop: one-way messages of a {args.payload} B payload, best of "
          f"{args.rounds} rounds of {args.messages:,} per run, project and raw alternating; "
          f"Python {sys.version.split()[0]}, msgpack {version('msgpack')}")
    wrong = False
    for run in range(1, args.runs + 1):
        best = {name: [float("inf"), float("inf")] for name in steps}
        for _ in range(args.rounds):
            for name, (project, raw, taken, raw_taken) in steps.items():
                before = taken.count, raw_taken.count
                best[name][0] = min(best[name][0], per_message_us(project, args.messages))
                best[name][1] = min(best[name][1], per_message_us(raw, args.messages))
                if (taken.count - before[0], raw_taken.count - before[1]) != (
                        args.messages, args.messages):
                    print(f"WRONG: {name}: {taken.count - before[0]:,} and "
                          f"{raw_taken.count - before[1]:,} of {args.messages:,} messages "
                          "reached their next hop")
                    wrong = True
        for name, (project_us, raw_us) in best.items():
            print(f"run {run}: {name:13} project {project_us:6.3f} us   raw {raw_us:6.3f} us   "
                  f"ratio {project_us / raw_us:5.2f}")
        one_way = [best["runtime route"][i] + best["CC hop"][i] + best["runtime hop"][i]
                   for i in (0, 1)]
        call = [2 * one_way[i] for i in (0, 1)]
        print(f"run {run}: per one-way message (3 routings, 2 decodes) project "
              f"{one_way[0]:6.3f} us   raw {one_way[1]:6.3f} us; per call (6, 4) project "
              f"{call[0]:6.3f} us   raw {call[1]:6.3f} us")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())

"""The Unix domain socket transport beside websocket, in one run: one-way rate and
request/reply latency through one cluster controller, with the raw baselines of both sockets.

Usage: .venv/bin/python bench/uds.py [--messages N] [--calls C] [--rounds R] [--payload BYTES]
                                     [--window W] [--dialect native|joynr] [--profile]

Project paths: one cluster controller serving websocket and its Unix domain socket (``[uds]``
on, in a temporary directory), and two pairs of this project's libjoynr runtimes in this
process: a websocket pair (``connect("ws://...")``) and a UDS pair (``connect("unix://...")``);
in each pair the provider of ``bench/Sink`` lives in runtime B and the proxy in runtime A. Both
pairs speak the frames of ``--dialect`` (``native``: msgpack; ``joynr``: SMRF, as joynr's
runtimes write them on either socket), so that only the socket differs.

- one-way: A calls ``push(data)`` N times with a BYTES-long string, never more than W messages
  ahead of the provider (bench/_common.send_windowed); msgs/s from the first call until B has
  received all N; best of R alternating rounds (websocket, UDS, raw websocket, raw UDS, ...);
- request/reply: A calls ``echo(data)`` C times, one call outstanding (A -> CC -> B -> CC ->
  A); p50, p99 and mean latency, best of R alternating rounds.

Raw paths in the same event loop, relays of the CC's shape without the CC (client A -> server
-> client B; the server forwards the bytes of each frame): a websockets relay (websockets'
asyncio API, as bench/websocket_oneway.py) and a Unix socket relay (asyncio streams,
joynr's UDS frames: read the 8-byte header, read the payload, write header and payload); for
request/reply, B sends each frame back the same way.

Printed: each figure, the UDS/websocket ratio of the project and of the raw paths, and the
goals: one-way UDS/websocket >= 1.5 (msgs/s), request/reply UDS/websocket <= 0.7 (p50
latency: on a loaded machine the mean follows the stalls of other work, printed beside it).
``--profile``: one UDS round of each under cProfile afterwards (not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import struct
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import uvloop
from _common import (
    DOMAIN,
    ROUND_TIMEOUT_S,
    WS_OPTIONS,
    Latency,
    Progress,
    Sink,
    SinkProvider,
    best_rates,
    cancel,
    cc_config,
    environment,
    help_text,
    profiled,
    quiet_gc,
    send_windowed,
    setup_logging,
    start_raw_server,
)
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import LibjoynrConfig, LibjoynrRuntime
from pyjoynr.libjoynr import connect as joynr_connect
from pyjoynr.libjoynr.advanced import WebSocketClientSettings
from pyjoynr.programming.proxies import Proxy
from pyjoynr.transports.uds.settings import UdsClientSettings

ONE_WAY_GOAL = 1.5
LATENCY_GOAL = 0.7
HEADER = struct.Struct(">4sI")


class Pair:
    """Runtimes A (proxy) and B (provider) connected to ``url``."""

    a: LibjoynrRuntime
    b: LibjoynrRuntime
    provider: SinkProvider
    proxy: Proxy

    @classmethod
    async def open(cls, stack: AsyncExitStack, url: str, name: str, config: LibjoynrConfig
                   ) -> Pair:
        pair = cls()
        pair.a = await stack.enter_async_context(
            joynr_connect(url, client_id=f"{name}-a", config=config))
        pair.b = await stack.enter_async_context(
            joynr_connect(url, client_id=f"{name}-b", config=config))
        pair.provider = SinkProvider()
        await pair.b.register_provider(f"{DOMAIN}-{name}", pair.provider)
        pair.proxy = await pair.a.build_proxy(Sink, f"{DOMAIN}-{name}", ttl_ms=60_000)
        return pair

    def dropped(self) -> int:
        return sum(v for rt in (self.a, self.b) for c in (rt.core.telemetry.counters,
                                                           rt.core.transport.counters)
                   for k, v in c.items() if k.startswith("dropped-"))


# ---------------------------------------------------------------------- raw paths

class RawWsRelay:
    """client A -> server -> client B over websockets; ``echo``: B sends each frame back."""

    def __init__(self, echo: bool) -> None:
        self.echo = echo
        self.progress = Progress()
        self._peers: dict[bytes, ServerConnection] = {}
        self._both = asyncio.Event()
        self.a: ClientConnection | None = None

    async def _handle(self, ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            role = await ws.recv()
            assert isinstance(role, bytes)
            self._peers[role] = ws
            if len(self._peers) == 2:
                self._both.set()
            await self._both.wait()
            other = self._peers[b"b" if role == b"a" else b"a"]
            async for frame in ws:
                await other.send(frame)

    async def _b(self, ws: ClientConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in ws:
                if self.echo:
                    await ws.send(frame)
                else:
                    self.progress.hit()

    async def open(self, stack: AsyncExitStack) -> RawWsRelay:
        server, url = await start_raw_server(self._handle)
        stack.push_async_callback(server.wait_closed)
        stack.callback(server.close)
        b = await stack.enter_async_context(connect(url, **WS_OPTIONS))
        await b.send(b"b")
        task = asyncio.get_running_loop().create_task(self._b(b))
        stack.push_async_callback(cancel, task)
        self.a = await stack.enter_async_context(connect(url, **WS_OPTIONS))
        await self.a.send(b"a")
        await self._both.wait()
        return self

    async def send(self, frame: bytes) -> None:
        assert self.a is not None
        await self.a.send(frame)

    async def round_trip(self, frame: bytes) -> None:
        assert self.a is not None
        await self.a.send(frame)
        await self.a.recv()


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    header = await reader.readexactly(8)
    return header + await reader.readexactly(HEADER.unpack(header)[1])


class RawUdsRelay:
    """client A -> server -> client B over a Unix socket, joynr's UDS frames; ``echo``: B
    sends each frame back."""

    def __init__(self, path: str, echo: bool) -> None:
        self.path = path
        self.echo = echo
        self.progress = Progress()
        self._peers: dict[bytes, asyncio.StreamWriter] = {}
        self._both = asyncio.Event()
        self.a: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            role = (await read_frame(reader))[8:]
            self._peers[role] = writer
            if len(self._peers) == 2:
                self._both.set()
            await self._both.wait()
            other = self._peers[b"b" if role == b"a" else b"a"]
            while True:
                other.write(await read_frame(reader))
                await other.drain()

    async def _b(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                frame = await read_frame(reader)
                if self.echo:
                    writer.write(frame)
                    await writer.drain()
                else:
                    self.progress.hit()

    async def open(self, stack: AsyncExitStack) -> RawUdsRelay:
        server = await asyncio.start_unix_server(self._handle, self.path)
        stack.push_async_callback(server.wait_closed)
        stack.callback(server.close)
        b = await asyncio.open_unix_connection(self.path)
        b[1].write(HEADER.pack(b"MJI1", 1) + b"b")
        task = asyncio.get_running_loop().create_task(self._b(*b))
        stack.push_async_callback(cancel, task)
        stack.callback(b[1].close)
        self.a = await asyncio.open_unix_connection(self.path)
        stack.callback(self.a[1].close)
        self.a[1].write(HEADER.pack(b"MJI1", 1) + b"a")
        await self._both.wait()
        return self

    async def send(self, frame: bytes) -> None:
        assert self.a is not None
        writer = self.a[1]
        writer.write(frame)
        await writer.drain()

    async def round_trip(self, frame: bytes) -> None:
        assert self.a is not None
        reader, writer = self.a
        writer.write(frame)
        await writer.drain()
        await read_frame(reader)


# ---------------------------------------------------------------------- measuring

async def timed_calls(call: Callable[[], Awaitable[object]], n: int) -> Latency:
    samples = [0] * n
    clock = time.perf_counter_ns
    async with asyncio.timeout(ROUND_TIMEOUT_S):
        for i in range(n):
            t0 = clock()
            await call()
            samples[i] = clock() - t0
    return Latency.of(samples)


async def best_latencies(paths: dict[str, Callable[[], Awaitable[object]]], calls: int,
                         rounds: int) -> dict[str, Latency]:
    for call in paths.values():
        await timed_calls(call, min(calls, 500))
    best: dict[str, Latency | None] = dict.fromkeys(paths)
    for i in range(1, rounds + 1):
        line = []
        for name, call in paths.items():
            quiet_gc()
            got = await timed_calls(call, calls)
            best[name] = got.best(best[name])
            line.append(f"{name} {got.mean_us:7.1f}")
        print(f"  round {i} (mean us): " + "   ".join(line))
    return {name: value for name, value in best.items() if value is not None}


async def run(args: argparse.Namespace) -> int:
    data = "x" * args.payload
    dialect = args.dialect
    config = LibjoynrConfig(websocket=WebSocketClientSettings(dialect=dialect),
                            uds=UdsClientSettings(dialect=dialect))
    async with AsyncExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-uds-")))
        cc = await stack.enter_async_context(ClusterController(cc_config(
            str(tmp), uds__enabled="true", uds__path=str(tmp / "cc.sock"))))
        assert cc.uds is not None
        ws = await Pair.open(stack, cc.websocket_address.url, "ws", config)
        uds = await Pair.open(stack, cc.uds.address.url, "uds", config)
        # each pair travels as named: its socket and its frames
        for name, prefix, clients in (("websocket", "ws", cc.websocket.client_summaries()),
                                      ("uds", "uds", cc.uds.client_summaries())):
            ids = sorted(c.address.id for c in clients)
            dialects = {c.dialect for c in clients}
            named = ids == [f"{prefix}-a", f"{prefix}-b"] and dialects == {dialect}
            print(f"  {name} pair: {', '.join(ids)} with {', '.join(sorted(dialects))} frames: "
                  f"{'as named' if named else 'WRONG'}")
            if not named:
                return 1
        # a frame of the same size as the project's push / echo, for the raw paths
        frame = HEADER.pack(b"MJM1", args.payload + 160) + b"x" * (args.payload + 160)
        raw_ws = await RawWsRelay(echo=False).open(stack)
        raw_uds = await RawUdsRelay(str(tmp / "raw.sock"), echo=False).open(stack)
        raw_ws_echo = await RawWsRelay(echo=True).open(stack)
        raw_uds_echo = await RawUdsRelay(str(tmp / "raw-echo.sock"), echo=True).open(stack)
        print(f"uds beside websocket: {args.payload} B payload, {dialect} frames on both, "
              f"one-way {args.messages:,} messages (window {args.window:,}), request/reply "
              f"{args.calls:,} calls, best of {args.rounds} alternating rounds; "
              f"{environment()}")

        def one_way(pair: Pair) -> Callable[[int], Awaitable[float]]:
            async def one_round(n: int) -> float:
                return await send_windowed(lambda: pair.proxy.push(data), n, args.window,
                                           pair.provider.progress)
            return one_round

        def raw_one_way(relay: RawWsRelay | RawUdsRelay) -> Callable[[int], Awaitable[float]]:
            async def one_round(n: int) -> float:
                return await send_windowed(lambda: relay.send(frame), n, args.window,
                                           relay.progress)
            return one_round

        print("one-way (msgs/s):")

        def report(i: int, rates: dict[str, float]) -> None:
            print(f"  round {i}: " + "   ".join(f"{k} {v:9,.0f}" for k, v in rates.items()))

        rates = await best_rates({"websocket": one_way(ws), "uds": one_way(uds),
                                  "raw websocket": raw_one_way(raw_ws),
                                  "raw uds": raw_one_way(raw_uds)},
                                 args.messages, args.rounds,
                                 warm=min(args.messages, 2_000), report=report)
        print("request/reply:")
        latencies = await best_latencies({
            "websocket": lambda: ws.proxy.echo(data), "uds": lambda: uds.proxy.echo(data),
            "raw websocket": lambda: raw_ws_echo.round_trip(frame),
            "raw uds": lambda: raw_uds_echo.round_trip(frame)}, args.calls, args.rounds)

        one_way_ratio = rates["uds"] / rates["websocket"]
        raw_ratio = rates["raw uds"] / rates["raw websocket"]
        print("\none-way, best rounds:")
        for name, rate in rates.items():
            print(f"  {name:14} {rate:9,.0f} msg/s ({1e6 / rate:6.1f} us/msg)")
        print(f"  ratio uds/websocket: project {one_way_ratio:4.2f}, raw {raw_ratio:4.2f};"
              f" goal project >= {ONE_WAY_GOAL}: "
              f"{'met' if one_way_ratio >= ONE_WAY_GOAL else 'MISSED'}")
        print("request/reply, best rounds:")
        for name, lat in latencies.items():
            print(f"  {name:14} {lat.line()}")
        rr_ratio = latencies["uds"].p50_us / latencies["websocket"].p50_us
        raw_rr = latencies["raw uds"].p50_us / latencies["raw websocket"].p50_us
        mean_ratio = latencies["uds"].mean_us / latencies["websocket"].mean_us
        print(f"  ratio uds/websocket (p50 latency): project {rr_ratio:4.2f}, raw {raw_rr:4.2f};"
              f" goal project <= {LATENCY_GOAL}: "
              f"{'met' if rr_ratio <= LATENCY_GOAL else 'MISSED'}   (mean: project "
              f"{mean_ratio:4.2f}; the mean follows the machine's stalls, the p50 the path)")
        dropped = ws.dropped() + uds.dropped()
        refusals = dict(cc.uds.counters) | dict(cc.websocket.counters)
        print(f"dropped: {dropped:,}; refusals: {refusals or 'none'}")
        if args.profile:
            await profiled(one_way(uds)(args.messages))
            await profiled(timed_calls(lambda: uds.proxy.echo(data), args.calls))
        return 0 if dropped == 0 and not refusals else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--messages", type=int, default=20_000, help="one-way messages per round")
    parser.add_argument("--calls", type=int, default=2_000, help="request/reply calls per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each (alternating)")
    parser.add_argument("--payload", type=int, default=200, help="payload string length")
    parser.add_argument("--window", type=int, default=1_000,
                        help="most one-way messages in flight")
    parser.add_argument("--dialect", choices=("native", "joynr"), default="native",
                        help="the frames both pairs speak")
    parser.add_argument("--profile", action="store_true",
                        help="then profile a UDS round of each (not counted)")
    args = parser.parse_args()
    if args.messages < 1 or args.calls < 1 or args.rounds < 1 or args.window < 2:
        parser.error("need --messages, --calls, --rounds >= 1 and --window >= 2")
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

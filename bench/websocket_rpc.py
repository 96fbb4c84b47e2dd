"""Request/reply round-trip latency through the cluster controller, beside a raw websockets echo.

Usage: .venv/bin/python bench/websocket_rpc.py [--calls N] [--rounds R] [--payload BYTES]
                                                [--profile]

Project path: a cluster controller and two libjoynr runtimes in this process (each runtime on
its own websocket connection to the CC); the provider of ``bench/Sink`` lives in runtime B, the
proxy in runtime A, which calls ``echo(data: str) -> str`` N times, one call outstanding at a
time, with a BYTES-long string. Each call is timed from the call until its result is back
(A -> CC -> B -> CC -> A: four websocket hops). The project's websocket ends drive websockets'
sans-I/O protocol objects from their own asyncio protocol (transports/websocket/connection.py):
a message goes to the router from ``data_received`` and is written from a callback of the
connection's queue, with no task hop per message.

Raw paths, in the same process and uvloop event loop, on websockets' own asyncio API
(``recv()`` / ``send()``) with the same connection options as the project's transports,
sending a project request frame of the same echo call (same byte size), one at a time:

- raw echo (2 hops): a bare ``websockets`` echo server on 127.0.0.1 and one client that sends
  the frame and waits for it to come back;
- raw relay + echo (4 hops, the CC's shape without the CC): client A -> server -> client B,
  which sends it back -> server -> client A; the server only forwards bytes.

Rounds alternate project, raw echo, raw relay, project, ...; each figure printed (p50, p99,
mean in microseconds; round trips per second) is the best of the R rounds for that figure (this
machine is noisy), with the ratios project/raw and the goal: project p50 <= 1.1 x the raw
relay + echo's p50 (the CC's shape without the CC).
``--profile`` adds one project round under cProfile (not counted) and prints the top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import uvloop
from _common import (
    ROUND_TIMEOUT_S,
    WS_OPTIONS,
    ProjectSetup,
    cancel,
    environment,
    help_text,
    profiled,
    quiet_gc,
    setup_logging,
    start_raw_server,
)
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed


@dataclass(frozen=True)
class Stats:
    p50_us: float
    p99_us: float
    mean_us: float
    per_s: float

    @classmethod
    def of(cls, samples_ns: list[int], total_ns: int) -> Stats:
        ordered = sorted(samples_ns)
        n = len(ordered)
        return cls(
            p50_us=ordered[n // 2] / 1e3,
            p99_us=ordered[min(n - 1, (n * 99) // 100)] / 1e3,
            mean_us=sum(ordered) / n / 1e3,
            per_s=n / (total_ns / 1e9),
        )

    def best(self, other: Stats | None) -> Stats:
        if other is None:
            return self
        return Stats(min(self.p50_us, other.p50_us), min(self.p99_us, other.p99_us),
                     min(self.mean_us, other.mean_us), max(self.per_s, other.per_s))

    def line(self) -> str:
        return (f"p50 {self.p50_us:7.1f} us   p99 {self.p99_us:7.1f} us   "
                f"mean {self.mean_us:7.1f} us   {self.per_s:7,.0f} round trips/s")


async def timed_calls(call: Callable[[], Awaitable[object]], n: int) -> Stats:
    """``n`` sequential calls, each timed; raises TimeoutError after ROUND_TIMEOUT_S."""
    samples = [0] * n
    clock = time.perf_counter_ns
    async with asyncio.timeout(ROUND_TIMEOUT_S):
        start = clock()
        for i in range(n):
            t0 = clock()
            await call()
            samples[i] = clock() - t0
        total = clock() - start
    return Stats.of(samples, total)


async def echo(ws: ServerConnection) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for frame in ws:
            await ws.send(frame)


class RelayEcho:
    """The CC's shape without the CC: client A -> server -> client B, which sends every frame
    back -> server -> client A; the server forwards bytes between its two connections."""

    def __init__(self) -> None:
        self._peers: dict[bytes, ServerConnection] = {}
        self._both = asyncio.Event()
        self._stack = contextlib.AsyncExitStack()
        self.client: ClientConnection | None = None

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

    @staticmethod
    async def _echo_back(ws: ClientConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in ws:
                await ws.send(frame)

    async def __aenter__(self) -> RelayEcho:
        stack = self._stack
        server, url = await start_raw_server(self._handle)
        stack.push_async_callback(server.wait_closed)
        stack.callback(server.close)
        b = await stack.enter_async_context(connect(url, **WS_OPTIONS))
        await b.send(b"b")
        echoing = asyncio.get_running_loop().create_task(self._echo_back(b))
        stack.push_async_callback(cancel, echoing)
        self.client = await stack.enter_async_context(connect(url, **WS_OPTIONS))
        await self.client.send(b"a")
        await self._both.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


def round_trip(ws: ClientConnection, frame: bytes) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        await ws.send(frame)
        await ws.recv()
    return call


async def run(args: argparse.Namespace) -> int:
    data = "x" * args.payload
    async with ProjectSetup() as setup, RelayEcho() as relay, contextlib.AsyncExitStack() as st:
        server, url = await start_raw_server(echo)
        st.push_async_callback(server.wait_closed)
        st.callback(server.close)
        client = await st.enter_async_context(connect(url, **WS_OPTIONS))
        assert relay.client is not None
        frame = setup.request_frame(data)
        print(f"websocket request/reply: {args.calls:,} sequential calls of a {args.payload} B "
              f"payload (request frame {len(frame)} B), best of {args.rounds} alternating "
              f"rounds; {environment()}")
        proxy = setup.proxy
        if await proxy.echo(data) != data:
            print("ERROR: echo() returned something else")
            return 1

        async def project_call() -> None:
            await proxy.echo(data)

        paths = {
            "project (CC + 2 libjoynr runtimes, 4 hops)": project_call,
            "raw websockets echo (2 hops)": round_trip(client, frame),
            RELAY: round_trip(relay.client, frame),
        }
        try:
            best = await measure(paths, args.calls, args.rounds)
        except TimeoutError:
            print(f"TIMEOUT: a round did not finish; counters: {setup.counters() or 'none'}")
            return 1
        report(best)
        report_goal(best)
        dropped = setup.dropped()
        counters = setup.counters()
        print(f"dropped: {dropped:,}" + (f"; counters: {counters}" if counters else ""))
        if args.profile:
            await profiled(timed_calls(project_call, args.calls), per=(args.calls, "call"))
        return 0 if dropped == 0 else 1


async def measure(paths: dict[str, Callable[[], Awaitable[None]]], calls: int, rounds: int
                  ) -> dict[str, Stats]:
    """Warm up, then ``rounds`` rounds of each path in turn; the best figures of each path."""
    for call in paths.values():
        await timed_calls(call, min(calls, 500))
    best: dict[str, Stats] = {}
    for i in range(1, rounds + 1):
        figures = []
        for name, call in paths.items():
            quiet_gc()
            stats = await timed_calls(call, calls)
            best[name] = stats.best(best.get(name))
            figures.append(f"{stats.p50_us:6.1f}/{stats.p99_us:6.1f}")
        print(f"  round {i}: p50/p99 us (project, raw echo, raw relay)  " + "   ".join(figures))
    return best

#: the goal's baseline, and the goal: project p50 / its p50 at most this
RELAY = "raw websockets relay + echo (4 hops)"
GOAL = 1.1


def report(best: dict[str, Stats]) -> None:
    (_, project), *raws = best.items()
    width = max(len(name) for name in best)
    for name, stats in best.items():
        print(f"{name:<{width}}  {stats.line()}")
    for name, raw in raws:
        print(f"ratio project / {name}: p50 {project.p50_us / raw.p50_us:4.2f}x   "
              f"p99 {project.p99_us / raw.p99_us:4.2f}x   "
              f"mean {project.mean_us / raw.mean_us:4.2f}x   "
              f"round trips/s {project.per_s / raw.per_s:4.2f}")


def report_goal(best: dict[str, Stats]) -> None:
    """The goal's line: the project's p50 against the raw relay + echo's."""
    ratio = next(iter(best.values())).p50_us / best[RELAY].p50_us
    print(f"p50 project / {RELAY}: {ratio:4.2f}x   goal <= {GOAL}x: "
          f"{'met' if ratio <= GOAL else 'MISSED'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--calls", "--messages", type=int, default=3_000,
                        help="sequential calls per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each (alternating)")
    parser.add_argument("--payload", type=int, default=200, help="payload string length")
    parser.add_argument("--profile", action="store_true",
                        help="then run one project round under cProfile and print hotspots")
    args = parser.parse_args()
    if args.calls < 1 or args.rounds < 1 or args.payload < 0:
        parser.error("need --calls >= 1, --rounds >= 1, --payload >= 0")
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

"""One-way message rate through the cluster controller, beside a raw websockets relay.

Usage: .venv/bin/python bench/websocket_oneway.py [--messages N] [--rounds R] [--payload BYTES]
                                                   [--window W] [--profile] [--audit]
                                                   [--metrics]

Project path: a cluster controller and two libjoynr runtimes in this process (each runtime on
its own websocket connection to the CC); the provider of ``bench/Sink`` lives in runtime B, the
proxy in runtime A, which calls the one-way ``push(data: str)`` N times with a BYTES-long
string. Timed from the first call until the provider has received all N.

Raw path, in the same process and uvloop event loop: a bare ``websockets`` server on 127.0.0.1
that forwards every frame of a sender connection to a receiver connection
(``await other.send(frame)``, no decoding), with the same connection options as the project's
transports. The frame sent is a project frame of the same push call (same byte size).

The two paths use websockets differently, on purpose: the raw relay is what a plain user of
the library writes (websockets' asyncio API, ``recv()`` / ``send()`` per frame); the project
drives websockets' sans-I/O protocol objects from its own asyncio protocol
(transports/websocket/connection.py), hands each complete message to the router straight from
``data_received`` (no task per message), and writes all frames waiting for a connection with
one socket write (one websocket message per joynr message either way; see
transports/outbox.py).

Both paths send in the same windows: never more than W messages ahead of the receiver (then
wait until at most W/2 are in flight), so that no queue overflows. Rounds alternate project,
raw, project, raw, ...; the best round of each counts (this machine is noisy). Printed: msgs/s
of both, the ratio and the goal (project rate >= 1.2 x the raw rate). Lost or dropped
messages are reported with the CC's and the runtimes' counters. ``--profile`` adds one project
round under cProfile (not counted) and prints the top functions.

``--audit``: a second project setup whose CC writes the message audit log (``[audit]`` on, its
defaults) runs in the same rounds (project, project with audit, raw, ...); printed beside the
others: its rate and the ratio audit on / off (goal >= 0.9), with the audit log's counters.
``--profile`` then profiles a round of the audited setup.

``--metrics``: a further project setup whose CC has its admin endpoint on, scraped while its
rounds run (``/metrics`` every second, ``/status.json`` every other time; bench/_common.py
Scraper), runs in the same rounds; printed: its rate and the ratio metrics on / off (goal >=
0.95), with the number of scrapes. Both options may be given: each setup is compared with the
plain project path of the same rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable

import uvloop
from _common import (
    AUDIT_ON,
    WS_OPTIONS,
    Progress,
    ProjectSetup,
    Scraper,
    audit_summary,
    best_rates,
    cancel,
    check_throughput_options,
    environment,
    help_text,
    metered,
    metrics_summary,
    profiled,
    scraped,
    send_windowed,
    setup_logging,
    start_raw_server,
    throughput_options,
)
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

GOAL = 1.2
SENDER, RECEIVER = b"sender", b"receiver"


class RawRelay:
    """client A -> server -> client B; the server forwards the bytes of every frame."""

    def __init__(self) -> None:
        self.progress = Progress()
        self.url = ""
        self._receiver: ServerConnection | None = None
        self._receiver_ready = asyncio.Event()
        self._stack = contextlib.AsyncExitStack()
        self.sender: ClientConnection | None = None

    async def _handle(self, ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            role = await ws.recv()
            if role == RECEIVER:
                self._receiver = ws
                self._receiver_ready.set()
                await ws.wait_closed()
                return
            receiver = self._receiver
            assert receiver is not None, "the receiver connects first"
            async for frame in ws:
                await receiver.send(frame)

    async def _count(self, ws: ClientConnection) -> None:
        hit = self.progress.hit
        with contextlib.suppress(ConnectionClosed):
            async for _ in ws:
                hit()

    async def __aenter__(self) -> RawRelay:
        stack = self._stack
        server, self.url = await start_raw_server(self._handle)
        stack.push_async_callback(server.wait_closed)
        stack.callback(server.close)
        receiver = await stack.enter_async_context(connect(self.url, **WS_OPTIONS))
        await receiver.send(RECEIVER)
        await self._receiver_ready.wait()
        counting = asyncio.get_running_loop().create_task(self._count(receiver))
        stack.push_async_callback(cancel, counting)
        self.sender = await stack.enter_async_context(connect(self.url, **WS_OPTIONS))
        await self.sender.send(SENDER)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


def report_losses(setup: ProjectSetup, expected: int, received: int) -> bool:
    lost = expected - received
    dropped = setup.dropped()
    print(f"messages: {expected:,} sent per round, {received:,} received in the last project "
          f"round; lost {max(lost, 0):,}, extra {max(-lost, 0):,}, dropped {dropped:,}, "
          f"still queued {setup.queued():,}")
    counters = setup.counters()
    if lost or dropped:
        print(f"counters: {counters or 'none'}")
    elif counters:
        print(f"counters (no drops): {counters}")
    return lost == 0 and dropped == 0


async def run(args: argparse.Namespace) -> int:
    data = "x" * args.payload
    async with contextlib.AsyncExitStack() as stack:
        setup = await stack.enter_async_context(ProjectSetup())
        relay = await stack.enter_async_context(RawRelay())
        audited = (await stack.enter_async_context(ProjectSetup(**AUDIT_ON)) if args.audit
                   else None)
        with_admin = await stack.enter_async_context(metered(args.metrics))
        return await compare(args, data, setup, relay, audited=audited,
                             with_admin=with_admin)


async def compare(args: argparse.Namespace, data: str, setup: ProjectSetup, relay: RawRelay,
                  *, audited: ProjectSetup | None, with_admin: ProjectSetup | None) -> int:
    frame = setup.one_way_frame(data)
    provider, sender = setup.provider, relay.sender
    assert sender is not None
    extra = "".join(text for on, text in (
        (audited, "; with a second setup whose CC writes the audit log"),
        (with_admin, "; with a setup whose CC's admin endpoint is on and scraped"))
        if on is not None)
    print(f"websocket one-way: {args.messages:,} messages of a {args.payload} B payload "
          f"(frame {len(frame)} B), window {args.window:,}, best of {args.rounds} "
          f"alternating rounds; {environment()}{extra}")

    def through(p: ProjectSetup) -> Callable[[int], Awaitable[float]]:
        async def one_round(n: int) -> float:
            return await send_windowed(lambda: p.proxy.push(data), n, args.window,
                                       p.provider.progress)
        return one_round

    async def raw(n: int) -> float:
        return await send_windowed(lambda: sender.send(frame), n, args.window,
                                   relay.progress)

    project = through(setup)
    # the optional setups, each measured in the same rounds and compared with `project`
    variants: list[tuple[str, Callable[[int], Awaitable[float]]]] = []
    if audited is not None:
        variants.append(("audit on", through(audited)))
    scraper = Scraper(with_admin.admin_urls()) if with_admin is not None else None
    if with_admin is not None and scraper is not None:
        variants.append(("metrics on", scraped(scraper, through(with_admin))))

    paths = {"project": project, **dict(variants), "raw": raw}

    def report(i: int, rates: dict[str, float]) -> None:
        p, r = rates["project"], rates["raw"]
        variant_text = "".join(f"   {name} {rates[name]:9,.0f} msg/s (on/off "
                               f"{rates[name] / p:4.2f})" for name, _ in variants)
        print(f"  round {i}: project {p:9,.0f} msg/s   raw {r:9,.0f} msg/s   "
              f"ratio {p / r:4.2f}{variant_text}")

    try:
        best = await best_rates(paths, args.messages, args.rounds,
                                warm=min(args.messages, 2_000), report=report)
        best_project, best_raw = best["project"], best["raw"]
        best_variant = {name: best[name] for name, _ in variants}
    except TimeoutError:
        print(f"TIMEOUT: a round did not finish; provider got {provider.progress.count:,}, "
              f"raw receiver got {relay.progress.count:,}")
        report_losses(setup, args.messages, provider.progress.count)
        return 1
    await asyncio.sleep(0.2)  # anything extra (duplicates) would arrive now
    ok = report_losses(setup, args.messages, provider.progress.count)

    ratio = best_project / best_raw
    print(f"project (CC + 2 libjoynr runtimes) {best_project:9,.0f} msg/s "
          f"({1e6 / best_project:6.1f} us/msg)")
    print(f"raw websockets relay               {best_raw:9,.0f} msg/s "
          f"({1e6 / best_raw:6.1f} us/msg)")
    print(f"ratio project/raw {ratio:4.2f}   goal >= {GOAL}: "
          f"{'met' if ratio >= GOAL else 'MISSED'}")
    if audited is not None:
        ok = report_losses(audited, args.messages, audited.provider.progress.count) and ok
        print(audit_summary(best_project, best_variant["audit on"], audited.audit_stats()))
    if with_admin is not None and scraper is not None:
        ok = report_losses(with_admin, args.messages, with_admin.provider.progress.count) and ok
        print(metrics_summary(best_project, best_variant["metrics on"], scraper))
    if args.profile:
        await profiled(project(args.messages) if audited is None
                       else through(audited)(args.messages), per=(args.messages, "message"))
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    throughput_options(parser, messages=20_000, rounds=5)
    parser.add_argument("--profile", action="store_true",
                        help="then run one project round under cProfile and print hotspots")
    parser.add_argument("--audit", action="store_true",
                        help="also measure a setup whose CC writes the audit log (on/off ratio)")
    parser.add_argument("--metrics", action="store_true",
                        help="also measure a setup whose CC has its admin endpoint on, scraped "
                             "every second (on/off ratio)")
    args = parser.parse_args()
    check_throughput_options(parser, args)
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

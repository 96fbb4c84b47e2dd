"""One attribute change fanned out to N on-change subscriptions, beside one broadcast to N
multicast receivers: fan-out time, setup time and memory per subscription.

Usage: .venv/bin/python bench/subscriptions.py [--subscriptions N] [--proxies P] [--rounds R]
                                                [--profile] [--trace-frames F]

Setup, all in this process and one uvloop event loop (as the other benches): a cluster
controller, a provider runtime and a consumer runtime (libjoynr, each on its own websocket
connection to the CC). The provider runtime registers a provider of ``bench/Feed``: one
notifiable attribute ``level: int`` and one non-selective broadcast ``tick(level: int)``.

The N subscriptions of each path come from P proxies (default 100) of the consumer runtime,
N/P each; each path has its own P proxies, so that neither path's deliveries walk the other's
subscriptions. Why P proxies and not N or one: N subscriptions of one provider in a fleet come
from many consumers holding a few each, not from N proxies (N discovery lookups and routing
entries would dominate the setup) nor from one (one proxy makes a multicast a single delivery
with a loop over its callbacks); P proxies make path B deliver the multicast to P participants,
which is the shape of the real thing, and build in well under a second.

- A, on-change: ``proxy.level.subscribe(callback, OnChangeSubscriptionQos(min_interval_ms=0))``.
  A change is timed from ``provider.set_attribute("level", v)`` until all N callbacks were called
  with ``v``: N publications, provider runtime -> CC -> consumer runtime, one callback each.
- B, multicast: ``proxy.tick.subscribe(callback)``. A change is timed from
  ``provider.fire("tick", v)`` until all N callbacks were called with ``v``: one multicast to
  the CC, one frame to the consumer runtime, delivered there to P proxies, N callbacks.

Setup time: all P proxies subscribe at once, each its share one after another (every subscribe
waits for its confirmation: A the provider's subscription reply; B the CC's reply to
addMulticastReceiver and the provider's subscription reply). The provider starts with a value,
so that each A subscription also gets the current value once (as joynr's providers publish it);
that is waited for after the timed setup, not timed.

Rounds: one warm-up change of each path (not counted), then R rounds alternating A, B, each
on a clean heap (gc.collect); each change a new value; the best round of each counts (this
machine is noisy). Every wait is bounded; missing callbacks fail with the counts and the
counters of the CC and both runtimes.

Memory: after the rounds, a further N subscriptions of each path are made (on P new proxies per
path, built before measuring) under tracemalloc: the growth of its current size per
subscription, after the initial publications arrived and a gc.collect(), and its split by
project file (the innermost project frame of each allocation; runtime/router.py and
runtime/multicast.py serve the CC and the runtimes alike). ``--trace-frames F`` (default 1)
keeps F frames per allocation; with F >= 10 the cluster controller's share is split off too
(allocations with cluster_controller/ or the CC's websocket server on their stack), at some 10x
the cost of F = 1 (tracemalloc makes a setup some 5x slower already with one frame). Beside it
the growth of the process's RSS (/proc/self/statm) over the timed setups: coarse (arenas, never
given back), but measured without tracemalloc. Being the second N of each path, the
tracemalloc figures are a marginal cost (the tables they grow are already big).

Printed: N and P, setup time per path, fan-out time per change (ms, and us per subscription),
memory per subscription, and the ratios A/B. ``--profile`` adds one round of each path under
cProfile (not counted) and prints the time per owner and the top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import uvloop
from _common import (
    DOMAIN,
    PROJECT_ROOT,
    Progress,
    ProjectSetup,
    cc_config,
    environment,
    help_text,
    profiled,
    quiet_gc,
    setup_logging,
)

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import Provider, Proxy, attribute, broadcast, connect, interface
from pyjoynr.programming.subscription_qos import OnChangeSubscriptionQos

#: generous bounds: a fan-out or a setup that takes longer has lost something
CHANGE_TIMEOUT_S = 60.0
SETUP_TIMEOUT_S = 300.0
ATTRIBUTE, BROADCAST = "on-change", "multicast"
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
#: frames kept per allocation from which the CC's share is told (its transport is reached)
CC_SPLIT_FRAMES = 10
CC_FILES = ("pyjoynr/cluster_controller/", "pyjoynr/transports/websocket/server.py")


@interface("bench/Feed", version=(1, 0))
class Feed:
    level = attribute(int)
    tick = broadcast(level=int)


class FeedProvider(Provider, interface=Feed):
    pass


class Tally:
    """Counts the callbacks that got the value of the current change (in ``progress``) and
    those that got any other (``stale``)."""

    def __init__(self) -> None:
        self.progress = Progress()
        self.expected = 0
        self.stale = 0

    def expect(self, value: int) -> None:
        self.expected = value
        self.progress.reset()

    def __call__(self, value: int) -> None:
        if value == self.expected:
            self.progress.hit()
        else:
            self.stale += 1


class FeedSetup(ProjectSetup):
    """``async with FeedSetup() as p``: a CC, the consumer runtime ``p.a`` and the provider
    runtime ``p.b`` with ``p.feed`` registered (``level`` 0). The counters, drops and queues of
    :class:`ProjectSetup`."""

    feed: FeedProvider

    async def __aenter__(self) -> FeedSetup:
        stack = self._stack
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-cc-"))
        self.cc = await stack.enter_async_context(ClusterController(cc_config(data_dir)))
        url = self.cc.websocket_address.url
        self.a = await stack.enter_async_context(connect(url, client_id="bench-consumer"))
        self.b = await stack.enter_async_context(connect(url, client_id="bench-provider"))
        self.feed = FeedProvider(level=0)
        await self.b.register_provider(DOMAIN, self.feed)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        # the consumer disconnects at once: ending its subscriptions one by one (each multicast
        # one a call to the CC) would take longer than the bench and is no part of it
        with contextlib.suppress(AttributeError):  # (never connected)
            await self.a.stop()
        await super().__aexit__(exc_type, exc, tb)

    async def proxies(self, n: int) -> list[Proxy]:
        return list(await asyncio.gather(*(self.a.build_proxy(Feed, DOMAIN, ttl_ms=self.ttl_ms)
                                           for _ in range(n))))


def shares(n: int, parts: int) -> list[int]:
    """``n`` split into ``parts`` near-equal shares."""
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


async def subscribe_all(path: str, proxies: list[Proxy], n: int, tally: Tally) -> float:
    """``n`` subscriptions of ``path`` over ``proxies`` (all at once, each proxy its share in
    turn); returns the seconds until every subscribe returned."""
    qos = OnChangeSubscriptionQos(min_interval_ms=0)

    async def one_proxy(proxy: Proxy, count: int) -> None:
        for _ in range(count):
            if path == ATTRIBUTE:
                await proxy.level.subscribe(tally, qos)
            else:
                await proxy.tick.subscribe(tally)

    start = time.perf_counter()
    async with asyncio.timeout(SETUP_TIMEOUT_S):
        await asyncio.gather(*(one_proxy(p, k) for p, k in
                               zip(proxies, shares(n, len(proxies)), strict=True)))
    return time.perf_counter() - start


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE_BYTES


@dataclass
class Memory:
    """What a path's subscriptions hold (bytes, from tracemalloc), in all, on the CC's side
    (None: not told, too few frames) and by project file."""

    total: int
    cc: int | None
    by_file: dict[str, int]


def memory_of(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, frames: int
              ) -> Memory:
    """The growth from ``before`` to ``after``, by side and by the innermost project file on
    each allocation's stack (``other <file>`` when none is: the event loop's own)."""
    root = str(PROJECT_ROOT) + os.sep
    cc = 0
    by_file: dict[str, int] = defaultdict(int)
    for diff in after.compare_to(before, "traceback"):
        if not diff.size_diff:
            continue
        files = [frame.filename for frame in reversed(diff.traceback)]  # innermost first
        project = [f.removeprefix(root) for f in files
                   if f.startswith(root) and "site-packages" not in f]
        if any(f.startswith(CC_FILES) for f in project):
            cc += diff.size_diff
        own = next((f for f in project if not f.startswith("bench/")), None)
        by_file[own or f"other {Path(files[0]).name if files else '?'}"] += diff.size_diff
    total = sum(by_file.values())
    return Memory(total, cc if frames >= CC_SPLIT_FRAMES else None, dict(by_file))


def snapshot() -> tracemalloc.Snapshot:
    gc.collect()
    return tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)])


class Bench:
    def __init__(self, setup: FeedSetup, args: argparse.Namespace) -> None:
        self.setup = setup
        self.args = args
        self.n: int = args.subscriptions
        self.tallies = {ATTRIBUTE: Tally(), BROADCAST: Tally()}
        self.value = 0

    async def wait_all(self, path: str, what: str) -> None:
        """Until the ``path``'s tally has N hits; a clear failure after CHANGE_TIMEOUT_S."""
        tally = self.tallies[path]
        try:
            await asyncio.wait_for(tally.progress.reach(self.n), CHANGE_TIMEOUT_S)
        except TimeoutError:
            raise SystemExit(
                f"FAILED: {what} ({path}): {tally.progress.count:,} of {self.n:,} callbacks "
                f"within {CHANGE_TIMEOUT_S:.0f} s ({tally.stale:,} with another value); "
                f"dropped {self.setup.dropped():,}, still queued {self.setup.queued():,}, "
                f"counters: {self.setup.counters() or 'none'}") from None

    async def change(self, path: str) -> float:
        """One change of ``path`` with a new value; seconds until all N callbacks ran."""
        self.value += 1
        tally = self.tallies[path]
        tally.expect(self.value)
        feed = self.setup.feed
        start = time.perf_counter()
        if path == ATTRIBUTE:
            feed.set_attribute("level", self.value)
        else:
            feed.fire("tick", self.value)
        await self.wait_all(path, f"change to {self.value}")
        return time.perf_counter() - start

    async def set_up(self, path: str, proxies: list[Proxy]) -> float:
        """N subscriptions of ``path``; their setup seconds (A: then the initial values)."""
        tally = self.tallies[path]
        tally.expect(self.setup.feed.get_attribute("level") if path == ATTRIBUTE else -1)
        seconds = await subscribe_all(path, proxies, self.n, tally)
        if path == ATTRIBUTE:
            await self.wait_all(path, "initial values")
        return seconds

    async def run(self) -> int:
        args, n, p = self.args, self.n, self.args.proxies
        print(f"subscriptions: {n:,} of each path from {p} proxies ({n // p:,}+ each) of one "
              f"provider, best of {args.rounds} alternating rounds; {environment()}")
        setup_s: dict[str, float] = {}
        rss: dict[str, int] = {}
        for path in (ATTRIBUTE, BROADCAST):
            started = time.perf_counter()
            proxies = await self.setup.proxies(p)
            print(f"{path}: {p} proxies built in {time.perf_counter() - started:.2f} s")
            gc.collect()
            before = rss_bytes()
            setup_s[path] = await self.set_up(path, proxies)
            gc.collect()
            rss[path] = rss_bytes() - before

        for path in (ATTRIBUTE, BROADCAST):  # warm-up, not counted
            await self.change(path)
        best = dict.fromkeys((ATTRIBUTE, BROADCAST), float("inf"))
        for i in range(1, args.rounds + 1):
            took = {}
            for path in (ATTRIBUTE, BROADCAST):
                quiet_gc()
                took[path] = await self.change(path)
                best[path] = min(best[path], took[path])
            a, b = took[ATTRIBUTE], took[BROADCAST]
            print(f"  round {i}: {ATTRIBUTE} {1e3 * a:8.1f} ms   {BROADCAST} {1e3 * b:8.1f} ms"
                  f"   ratio {a / b:5.1f}")
        await asyncio.sleep(0.2)  # anything extra (duplicates) would arrive now
        ok = self.check()

        if args.profile:
            for path in (ATTRIBUTE, BROADCAST):
                print(f"=== profile: one {path} change to {n:,} subscriptions ===")
                await profiled(self.change(path), by_package=True)

        memory = await self.measure_memory()
        self.print_summary(setup_s, best, rss, memory)
        return 0 if ok else 1

    def check(self) -> bool:
        stale = {path: t.stale for path, t in self.tallies.items()}
        extra = {path: t.progress.count - self.n for path, t in self.tallies.items()}
        dropped = self.setup.dropped()
        print(f"callbacks: every change reached all {self.n:,}; extra in the last round "
              f"{extra}, with an old value {stale}; dropped {dropped:,}, still queued "
              f"{self.setup.queued():,}")
        if dropped:
            print(f"counters: {self.setup.counters()}")
        return dropped == 0 and not any(stale.values()) and not any(extra.values())

    async def measure_memory(self) -> dict[str, Memory]:
        proxies = {path: await self.setup.proxies(self.args.proxies)
                   for path in (ATTRIBUTE, BROADCAST)}
        memory = {}
        started = time.perf_counter()
        frames = self.args.trace_frames
        tracemalloc.start(frames)
        try:
            before = snapshot()
            for path in (ATTRIBUTE, BROADCAST):
                await self.set_up(path, proxies[path])
                await asyncio.sleep(0.2)  # let the last confirmations' leftovers go
                after = snapshot()
                memory[path] = memory_of(before, after, frames)
                before = after
        finally:
            tracemalloc.stop()
        took = time.perf_counter() - started
        print(f"memory: a further {self.n:,} subscriptions of each path under tracemalloc "
              f"({frames} frame{'s' if frames > 1 else ''} per allocation) in {took:.1f} s")
        return memory

    def print_summary(self, setup_s: dict[str, float], best: dict[str, float],
                      rss: dict[str, int], memory: dict[str, Memory]) -> None:
        n = self.n

        def split(m: Memory) -> str:
            if m.cc is None:
                return ""
            return f" (CC {m.cc / n:5.0f} B, runtimes {(m.total - m.cc) / n:5.0f} B)"

        print(f"{'':10} {'setup':>18} {'fan-out (best)':>24} {'memory/subscription':>29}")
        for path in (ATTRIBUTE, BROADCAST):
            m = memory[path]
            print(f"{path:10} {setup_s[path]:6.2f} s {1e6 * setup_s[path] / n:6.1f} us/sub "
                  f"{1e3 * best[path]:8.1f} ms {1e6 * best[path] / n:6.2f} us/sub "
                  f"{m.total / n:7.0f} B{split(m)}   RSS {rss[path] / n:6.0f} B")
        a, b = memory[ATTRIBUTE], memory[BROADCAST]
        print(f"ratio {ATTRIBUTE}/{BROADCAST}: setup {setup_s[ATTRIBUTE] / setup_s[BROADCAST]:.2f}"
              f"   fan-out {best[ATTRIBUTE] / best[BROADCAST]:.1f}"
              f"   memory {a.total / b.total if b.total else float('nan'):.2f}")
        for path in (ATTRIBUTE, BROADCAST):
            top = sorted(((name, size) for name, size in memory[path].by_file.items()
                          if abs(size) >= n), key=lambda kv: -abs(kv[1]))[:8]  # >= 1 B each
            print(f"memory per {path} subscription by file: " + ", ".join(
                f"{name} {size / n:.0f} B" for name, size in top))


async def run(args: argparse.Namespace) -> int:
    async with FeedSetup() as setup:
        return await Bench(setup, args).run()


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--subscriptions", type=int, default=10_000,
                        help="subscriptions of each path (on-change, multicast)")
    parser.add_argument("--proxies", type=int, default=100,
                        help="proxies the subscriptions of each path are spread over")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each (alternating)")
    parser.add_argument("--profile", action="store_true",
                        help="then run one change of each path under cProfile and print "
                             "hotspots")
    parser.add_argument("--trace-frames", type=int, default=1,
                        help="tracemalloc frames per allocation; >= 10 also splits off the "
                             "cluster controller's share (slower)")
    args = parser.parse_args()
    if args.rounds < 1 or not 1 <= args.proxies <= args.subscriptions or args.trace_frames < 1:
        parser.error("need --rounds >= 1, 1 <= --proxies <= --subscriptions, "
                     "--trace-frames >= 1")
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

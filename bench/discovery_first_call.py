"""Time from ``build_proxy`` to the first reply through discovery (the GCD over MQTT), beside a
raw gmqtt request/reply round trip through the same broker (and raw aiomqtt for reference).

Usage: .venv/bin/python bench/discovery_first_call.py [--iterations N] [--raw-per-iteration R]
                                   [--payload BYTES] [--raw-payload BYTES]
                                   [--client native|aiomqtt] [--profile]

Set-up, all in this process and uvloop event loop: one mosquitto broker
(pyjoynr/testing/brokers.Mosquitto, no persistence, TCP_NODELAY) on a free loopback port; a GCD
(gcd.service.GcdService, SQLite store in a temporary directory) on it; cluster
controllers CC1 and CC2, each with that broker as their only backend (GBID joynrdefaultgbid)
and the GCD provisioned as usual; a libjoynr runtime on each, by websocket. The provider of
``bench/Sink`` is registered on CC1's runtime with scope GLOBAL and
``await_global_registration=True`` (so it is in the GCD before anything is timed).

Project path, N times (after 3 untimed warm-up iterations), on CC2's runtime:
``build_proxy(Sink, domain)`` with the default DiscoveryQos (cache_max_age 0, LOCAL_THEN_GLOBAL:
CC2 has no local provider, so every build asks the GCD: runtime -> CC2 -> broker -> GCD and
back, then the proxy's route is added at CC2), then the first ``echo(data)`` (runtime -> CC2 ->
broker -> CC1 -> provider's runtime and back), then a second ``echo`` on the same proxy (for
reference: a call without anything first about it), then ``proxy.close()`` (not timed).
Reported: p50 / p99 / mean of build_proxy alone, of the first call, of the two together
(the figure), and of the second call; and, to split build_proxy, two more lookups timed in each
iteration: CC2's ``discovery.lookup`` called in-process (CC2 -> broker -> GCD and back, without
the runtime's websocket hops) and the GCD provider's ``lookup_in_backends`` called in-process (its
SQLite store and the provider, without MQTT).

Raw path, R ping-pongs after each project iteration (so both see the same moments of this noisy
machine), each one, like each project iteration, after a full garbage collection and a pause of
SETTLE_S (the first hop after a pause costs more; both paths pay it alike): gmqtt client A (the
fastest Python MQTT client here; bench/mqtt_rpc.py's RawGmqttPingPong) publishes a BYTES payload
with QoS 1 to topic a, client B (subscribed to a) publishes it back to topic b with QoS 1, A
(subscribed to b) waits for it: four MQTT legs, one MQTT request/reply round trip, as one GCD
lookup or one remote call is. The same with two aiomqtt clients (TCP_NODELAY) for reference. And
the figure's own hops done raw (RawSameHops, the floor of this layout): a websockets client in
the runtime's place, bare websockets relays in the CCs' places and gmqtt clients, one of them
answering in the GCD's place; the lookup, add_next_hop (the relay answers) and the first call,
as the project does them, with nothing encoded, routed or looked up. The goal: build_proxy +
first call p50 <= 1.5 x the raw same hops' p50 (what the project adds to the hops its layout
needs); the report also says how many raw gmqtt round trips the raw same hops take (the floor)
and the project's figure in them; and, for that floor
with MQTT legs as fast as the project's own client, the ping-pong with two native sessions
(NativePingPong) and an estimate from it. Discovery plus the first call are two such round trips
plus websocket hops (runtime <-> CC, four of them for build_proxy and two for each call) and the
work of the CCs, the GCD and its store; the ratios say how many raw round trips the project's
figures cost. """

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import gmqtt
import uvloop
from _common import (
    DOMAIN,
    GBID,
    WS_OPTIONS,
    Latency,
    PendingCallsWarnings,
    Sink,
    SinkProvider,
    cc_config,
    help_text,
    mqtt_environment,
    profiled,
    quiet_gc,
    setup_logging,
    start_raw_server,
)
from mqtt_rpc import (
    NativePingPong,
    RawComposedPingPong,
    RawGmqttPingPong,
    RawPingPong,
    disconnect_quietly,
    gmqtt_subscribed,
)
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.libjoynr import DiscoveryQos, LibjoynrRuntime, ProviderQos, ProviderScope, connect
from pyjoynr.runtime.interface import interface_def
from pyjoynr.testing.brokers import Mosquitto

WAIT_S = 10.0
WARM_UP = 3
#: a pause before each timed block, project or raw, so that what the previous one left
#: running (the proxy's close, acknowledgements) does not fall into the next one; both paths
#: start every timed block alike, since the first hop after a pause costs more (the broker's
#: process and this one are woken: about 0.5 ms more for build_proxy on a loaded 2-core
#: machine, measured 2026-11-27)
SETTLE_S = 0.01
PROFILED = 50
#: build_proxy + first call at most this many times the same hops done raw (p50)
GOAL = 1.5
SINK = interface_def(Sink).name


# ---------------------------------------------------------------------- the raw path


# RawPingPong: bench/mqtt_rpc.py's (two raw aiomqtt clients, TCP_NODELAY)


class RawSameHops:
    """build_proxy + first call's hops done raw (the floor of this layout, like with like):

    - the lookup: runtime (websockets client) -> a bare websockets relay in CC2's place ->
      gmqtt -> broker -> a gmqtt client in the GCD's place answers -> broker -> gmqtt -> the
      relay -> runtime (two websocket hops, four MQTT legs);
    - add_next_hop: runtime -> the relay, which answers itself -> runtime (two websocket
      hops);
    - the first call: bench/mqtt_rpc.py's RawComposedPingPong (four websocket hops, four MQTT
      legs).

    Every frame is the raw payload; nothing is encoded, decoded, routed or looked up."""

    LOOKUP, NEXT_HOP = b"L", b"N"

    def __init__(self, broker: Mosquitto, payload: bytes) -> None:
        self.broker = broker
        self.payload = payload
        self.call_path = RawComposedPingPong(broker, payload)
        prefix = f"bench/raw/same-hops-{uuid.uuid4().hex[:8]}"
        self.to_gcd, self.from_gcd = f"{prefix}/gcd", f"{prefix}/cc"
        suffix = uuid.uuid4().hex[:8]
        self.relay_mqtt = gmqtt.Client(f"bench-same-hops-cc-{suffix}")
        self.gcd_mqtt = gmqtt.Client(f"bench-same-hops-gcd-{suffix}")
        self._replies: asyncio.Queue[bytes] = asyncio.Queue()
        self._stack = AsyncExitStack()
        self.runtime: ClientConnection | None = None

    async def _relay(self, ws: ServerConnection) -> None:
        async def forward() -> None:  # the GCD's replies -> the runtime
            while True:
                await ws.send(await self._replies.get())
        task = asyncio.get_running_loop().create_task(forward())
        try:
            with contextlib.suppress(ConnectionClosed):
                async for frame in ws:
                    assert isinstance(frame, bytes)
                    if frame[:1] == self.NEXT_HOP:
                        await ws.send(frame)  # the CC answers add_next_hop itself
                    else:
                        self.relay_mqtt.publish(self.to_gcd, frame, qos=1)
        finally:
            task.cancel()

    async def __aenter__(self) -> RawSameHops:
        stack = self._stack
        await stack.enter_async_context(self.call_path)
        server, url = await start_raw_server(self._relay)
        stack.push_async_callback(server.wait_closed)
        stack.callback(server.close)
        gcd = self.gcd_mqtt
        for client, topic, handler in (
                (gcd, self.to_gcd,
                 lambda _c, _t, payload, _q, _p: gcd.publish(self.from_gcd, payload, qos=1)),
                (self.relay_mqtt, self.from_gcd,
                 lambda _c, _t, payload, _q, _p: self._replies.put_nowait(payload))):
            stack.push_async_callback(disconnect_quietly, client)
            await gmqtt_subscribed(client, self.broker, topic, handler)
        self.runtime = await stack.enter_async_context(ws_connect(url, **WS_OPTIONS))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def call(self) -> None:
        runtime = self.runtime
        assert runtime is not None
        lookup, next_hop = self.LOOKUP + self.payload, self.NEXT_HOP + self.payload
        for frame in (lookup, next_hop):
            await runtime.send(frame)
            if await runtime.recv() != frame:
                raise AssertionError("the raw lookup or add_next_hop returned something else")
        await self.call_path.call()


# ---------------------------------------------------------------------- the project


@dataclass
class World:
    broker: Mosquitto
    gcd: GcdService
    cc1: ClusterController
    cc2: ClusterController
    rt1: LibjoynrRuntime
    rt2: LibjoynrRuntime
    provider_id: str


async def start_world(stack: AsyncExitStack, client: str = "native") -> World:
    directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-disc-")))
    broker = await stack.enter_async_context(
        Mosquitto(directory / "mosquitto", persistence=False))
    gcd = await stack.enter_async_context(GcdService(GcdSettings(
        gbid=GBID, broker_url=broker.url, sqlite_path=directory / "gcd" / "gcd.sqlite",
        client_id="bench-gcd", mqtt_client=client)))
    await gcd.mqtt.wait_connected(WAIT_S)
    suffix = uuid.uuid4().hex[:8]
    backends = f'{{{GBID} = "{broker.url}"}}'
    ccs = []
    for name in ("cc1", "cc2"):
        cc = await stack.enter_async_context(ClusterController(cc_config(
            str(directory / name), cluster_controller__id=f"bench-{name}-{suffix}",
            mqtt__backends=backends, discovery__gcd="true", mqtt__client=client)))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        ccs.append(cc)
    rt1 = await stack.enter_async_context(
        connect(ccs[0].websocket_address.url, client_id="bench-provider-side"))
    rt2 = await stack.enter_async_context(
        connect(ccs[1].websocket_address.url, client_id="bench-consumer-side"))
    provider_id = await rt1.register_provider(
        DOMAIN, SinkProvider(), qos=ProviderQos(scope=ProviderScope.GLOBAL),
        await_global_registration=True)
    return World(broker, gcd, ccs[0], ccs[1], rt1, rt2, provider_id)


@dataclass
class Samples:
    build: list[int]
    first: list[int]
    total: list[int]
    second: list[int]
    cc_lookup: list[int]
    gcd_lookup: list[int]
    raw: list[int]
    raw_aiomqtt: list[int]
    raw_same_hops: list[int]
    native: list[int]


async def iteration(world: World, data: str, samples: Samples | None) -> None:
    """One build_proxy + first call + second call on CC2's runtime; timed into ``samples``."""
    clock = time.perf_counter_ns
    t0 = clock()
    proxy = await world.rt2.build_proxy(Sink, DOMAIN, ttl_ms=10_000)
    t1 = clock()
    first = await proxy.echo(data)
    t2 = clock()
    second = await proxy.echo(data)
    t3 = clock()
    await proxy.close()
    if proxy.provider_participant_id != world.provider_id or first != data or second != data:
        raise RuntimeError(f"wrong provider ({proxy.provider_participant_id}) or echo")
    # the parts of build_proxy, for reference: CC2's own lookup (CC2 -> GCD -> CC2, no
    # websocket) and the GCD provider's lookup_in_backends in-process (store + provider, no MQTT)
    t4 = clock()
    found = await world.cc2.discovery.lookup([DOMAIN], SINK, DiscoveryQos())
    t5 = clock()
    entries = await world.gcd.provider.lookup_in_backends([DOMAIN], SINK, [GBID])
    t6 = clock()
    if len(found) != 1 or len(entries) != 1:
        raise RuntimeError(f"CC2 found {len(found)}, the GCD {len(entries)} providers, not 1")
    if samples is not None:
        samples.build.append(t1 - t0)
        samples.first.append(t2 - t1)
        samples.total.append(t2 - t0)
        samples.second.append(t3 - t2)
        samples.cc_lookup.append(t5 - t4)
        samples.gcd_lookup.append(t6 - t5)


Raws = tuple[RawGmqttPingPong, RawPingPong, RawSameHops, NativePingPong]


async def raw_round_trips(raws: Raws, n: int, samples: Samples | None) -> None:
    clock = time.perf_counter_ns
    intos = ((samples.raw, samples.raw_aiomqtt, samples.raw_same_hops, samples.native)
             if samples else (None, None, None, None))
    for raw, into in zip(raws, intos, strict=True):
        for _ in range(n):
            # each timed block starts as the project's does: a clean heap and a pause
            quiet_gc()
            await asyncio.sleep(SETTLE_S)
            t0 = clock()
            await raw.call()
            if into is not None:
                into.append(clock() - t0)


async def measure(world: World, raw: Raws, args: argparse.Namespace) -> Samples:
    data = "x" * args.payload
    for _ in range(WARM_UP):
        await iteration(world, data, None)
        await raw_round_trips(raw, args.raw_per_iteration, None)
    samples = Samples([], [], [], [], [], [], [], [], [], [])
    async with asyncio.timeout(max(60.0, args.iterations * 2.0)):
        for _ in range(args.iterations):
            quiet_gc()
            await asyncio.sleep(SETTLE_S)
            await iteration(world, data, samples)
            await asyncio.sleep(SETTLE_S)
            await raw_round_trips(raw, args.raw_per_iteration, samples)
    return samples


async def profile_iterations(world: World, data: str) -> None:
    for _ in range(PROFILED):
        await iteration(world, data, None)


def report(samples: Samples) -> None:
    raw = Latency.of(samples.raw)
    figures = {
        "build_proxy (discovery through the GCD)": Latency.of(samples.build),
        "first call (echo)": Latency.of(samples.first),
        "build_proxy + first call (the figure)": Latency.of(samples.total),
        "second call on the same proxy (reference)": Latency.of(samples.second),
        "  CC2 discovery.lookup alone (reference)": Latency.of(samples.cc_lookup),
        "  GCD lookup_in_backends in-process (reference)": Latency.of(samples.gcd_lookup),
    }
    width = max(len(name) for name in [*figures, "raw"]) + 2
    print(f"{'':<{width}}  {len(samples.total)} iterations")
    for name, latency in figures.items():
        print(f"{name:<{width}}  {latency.line()}")
    print(f"{'raw gmqtt round trip':<{width}}  {raw.line()}   "
          f"({len(samples.raw):,} round trips)")
    aiomqtt = Latency.of(samples.raw_aiomqtt)
    print(f"{'raw aiomqtt round trip, TCP_NODELAY':<{width}}  {aiomqtt.line()}   "
          f"(reference)")
    same_hops = Latency.of(samples.raw_same_hops)
    print(f"{'raw same hops (the floor of the figure)':<{width}}  {same_hops.line()}   "
          f"(RawSameHops: websockets + gmqtt, nothing else)")
    for name, latency in figures.items():
        print(f"ratio {name} / raw round trip: p50 {latency.p50_us / raw.p50_us:5.2f}x   "
              f"p99 {latency.p99_us / raw.p99_us:5.2f}x   "
              f"mean {latency.mean_us / raw.mean_us:5.2f}x")
    native = Latency.of(samples.native)
    print(f"{'the same with the native client':<{width}}  {native.line()}   "
          f"(NativePingPong: the project's own MQTT client, not raw)")
    # the floor with MQTT legs as fast as the project's client: the two gmqtt round trips of
    # the raw same hops exchanged for two native ones (an estimate from this run's p50s)
    native_floor = same_hops.p50_us - 2 * (raw.p50_us - native.p50_us)
    print(f"the floor with native MQTT legs (estimate: raw same hops - 2 gmqtt + 2 native "
          f"round trips): {native_floor:7.1f} us = {native_floor / raw.p50_us:4.2f} gmqtt "
          f"round trips")
    total = Latency.of(samples.total)
    print(f"p50 build_proxy + first call / raw gmqtt round trip: "
          f"{total.p50_us / raw.p50_us:4.2f}x; raw same hops / raw gmqtt round trip: "
          f"{same_hops.p50_us / raw.p50_us:4.2f}x (the floor, in round trips)")
    ratio = total.p50_us / same_hops.p50_us
    print(f"p50 build_proxy + first call / raw same hops: {ratio:4.2f}x (what the project "
          f"adds to the hops its layout needs)   goal <= {GOAL}x: "
          f"{'met' if ratio <= GOAL else 'MISSED'}")


async def run(args: argparse.Namespace) -> int:
    warnings = PendingCallsWarnings().install()
    async with AsyncExitStack() as stack:
        world = await start_world(stack, args.client)
        raw = (await stack.enter_async_context(RawGmqttPingPong(world.broker,
                                                                b"r" * args.raw_payload)),
               await stack.enter_async_context(RawPingPong(world.broker,
                                                           b"r" * args.raw_payload,
                                                           nodelay=True)),
               await stack.enter_async_context(RawSameHops(world.broker,
                                                           b"r" * args.raw_payload)),
               await stack.enter_async_context(NativePingPong(world.broker,
                                                              b"r" * args.raw_payload)))
        print(f"discovery + first call: build_proxy on CC2's runtime, the provider on CC1's "
              f"(GLOBAL), a GCD with a SQLite store, one mosquitto; payload {args.payload} B, "
              f"raw payload {args.raw_payload} B; MQTT client of the CCs and the GCD: "
              f"{args.client}; {mqtt_environment()}")
        gcd_before = world.gcd.mqtt.received
        lookups_before = world.cc2.discovery.gcd_calls["lookup"]
        try:
            samples = await measure(world, raw, args)
        except TimeoutError:
            print("TIMEOUT: the iterations did not finish")
            return 1
        report(samples)
        asked = world.cc2.discovery.gcd_calls["lookup"] - lookups_before
        received = world.gcd.mqtt.received - gcd_before
        lookups = 2 * (WARM_UP + args.iterations)  # build_proxy's and the reference's
        print(f"CC2 asked the GCD {asked:,} time(s) for {lookups:,} lookups (build_proxy and "
              f"the reference lookups); the GCD received {received:,} request(s)"
              + ("" if asked >= lookups else "  WARNING: not every lookup asked the GCD"))
        counters = {f"{name}.{kind}": dict(counter) for name, cc in
                    (("cc1", world.cc1), ("cc2", world.cc2))
                    for kind, counter in (("router", cc.telemetry.counters),
                                          ("mqtt", cc.mqtt.counters if cc.mqtt else {}))
                    if counter}
        print(f"counters: {counters or 'none'}; {warnings.summary()}")
        print(f"GCD store rows: {await world.gcd.store.count()}")
        if args.profile:
            print(f"=== profile of {PROFILED} iterations (build_proxy, two calls, close, the "
                  "reference lookups), not counted ===")
            await profiled(profile_iterations(world, "x" * args.payload), by_package=True,
                           per=(PROFILED, "iteration"))
        await unregister_and_settle(world)
    return 0


async def unregister_and_settle(world: World) -> None:
    """Shutdown in order: the provider leaves the GCD (CC1 removes it in the background)
    before the stack stops the CCs and then the GCD, so that no GCD call is still on its way
    when the GCD's store closes."""
    await world.rt1.unregister_provider(world.provider_id)
    for _ in range(int(WAIT_S / 0.01)):  # bounded: at most WAIT_S
        if not await world.gcd.store.count():
            return
        await asyncio.sleep(0.01)


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--iterations", type=int, default=100,
                        help="timed build_proxy + first call iterations")
    parser.add_argument("--raw-per-iteration", type=int, default=3,
                        help="raw round trips of each kind after each iteration (each after "
                             "the same pause as an iteration)")
    parser.add_argument("--payload", type=int, default=200, help="echo string length")
    parser.add_argument("--raw-payload", type=int, default=512,
                        help="raw ping-pong payload bytes (about a GCD lookup reply)")
    parser.add_argument("--client", choices=("native", "aiomqtt"), default="native",
                        help="the MQTT client of the CCs and the GCD")
    parser.add_argument("--profile", action="store_true",
                        help=f"then run {PROFILED} iterations under cProfile and print hotspots")
    args = parser.parse_args()
    if (args.iterations < 1 or args.raw_per_iteration < 1 or args.payload < 0
            or args.raw_payload < 1):
        parser.error("need --iterations >= 1, --raw-per-iteration >= 1, --payload >= 0, "
                     "--raw-payload >= 1")
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

"""Request/reply round-trip latency between two cluster controllers linked by MQTT, beside raw
gmqtt and aiomqtt ping-pongs through the same broker.

Usage: .venv/bin/python bench/mqtt_rpc.py [--calls N] [--rounds R] [--payload BYTES]
                                           [--client native|aiomqtt] [--profile]

A mosquitto broker (/usr/sbin/mosquitto) is started on a free loopback port for the run.

Project path: cluster controllers CC1 and CC2 in this process, each with one MQTT backend on
that broker (MQTT 5, QoS 1, the CC's default settings), and two libjoynr runtimes, each on its
own websocket connection: runtime A on CC1 holds the proxy, runtime B on CC2 the provider of
``bench/Sink`` (registered GLOBAL with a fixed participantId that CC1 knows from a
provisioning file). A calls ``echo(data: str) -> str`` N times, one call outstanding at a
time, with a BYTES-long string. Each call is timed from the call until its result is back:
A -> CC1 -> mosquitto -> CC2 -> B and the reply B -> CC2 -> mosquitto -> CC1 -> A (four MQTT
legs, four websocket hops).

Raw paths, in the same process and uvloop event loop, through the same broker: aiomqtt
client A publishes the payload with QoS 1 to topic a (``await publish()``: until the PUBACK),
client B, subscribed to ``a/#``, publishes every payload back to topic b with QoS 1, and A,
subscribed to ``b/#``, waits for it (four MQTT legs, no websocket). The payload is a project
request frame of the same echo call (same byte size). The clients have the project's
connection options (MQTT 5, at most 100 QoS 1 messages unacknowledged), and:

- raw gmqtt ping-pong (reference: the bare MQTT round trip): the
  same with gmqtt clients (asyncio's sockets: TCP_NODELAY); A's ``publish()`` returns at once,
  B's on_message publishes the echo, A's on_message completes the call;
- raw composed (the baseline of the goal, like with like: project p50 <= 1.1 x its p50):
  the project's hops done raw: runtime A (websockets
  client) -> a bare websockets relay -> gmqtt -> broker -> gmqtt -> a bare websockets relay
  -> runtime B echoes, and back: four MQTT legs and four websocket hops;
- raw aiomqtt ping-pong, TCP_NODELAY: the client sockets have TCP_NODELAY set
  (``socket_options`` of aiomqtt.Client), as asyncio sets it on its own TCP connections;
- native ping-pong (reference, not raw): the same with two sessions of the project's own MQTT
  client; with it the report estimates the floor of the layout with MQTT legs that fast (the
  raw composed path with its gmqtt round trip exchanged for the native one);
- raw aiomqtt ping-pong, default sockets (reference): aiomqtt's defaults, as the CCs' MQTT
  clients have them: paho-mqtt opens its socket itself and leaves Nagle's algorithm on, so a
  small write that follows another one before its TCP ACK waits for the peer's delayed ACK
  (about 40 ms on Linux).

The broker runs with ``set_tcp_nodelay true`` (mosquitto's default is false: then every
broker-to-client leg of a request/reply can wait for a delayed ACK too, whatever the client).

Rounds alternate project, raw, reference, project, ...; each figure printed (p50, p99, mean in
microseconds; round trips per second) is the best of the R rounds for that figure (this
machine is noisy), with the ratios project/raw and the goal. When 20 probe
calls show round trips so slow that N calls of a path would take more than --max-round-s,
every path makes fewer calls per round (printed). Dropped messages are reported with the
counters of both CCs (router, websocket, MQTT) and both runtimes. ``--profile`` adds one
project round under cProfile (not counted) and prints the time per package (project code,
aiomqtt, paho, asyncio, ...) and the top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

import aiomqtt
import gmqtt
import uvloop
from _common import (
    HOST,
    WS_OPTIONS,
    Mosquitto,
    MqttProjectSetup,
    PendingCallsWarnings,
    cancel,
    help_text,
    mqtt_environment,
    profiled,
    quiet_gc,
    raw_mqtt_client,
    setup_logging,
    start_raw_server,
)
from gmqtt.mqtt.constants import MQTTv50
from websocket_rpc import Stats, report, timed_calls
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from pyjoynr.transports.mqtt.client import MqttSession, open_session
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url

NODELAY = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)
#: the goal: project p50 / raw composed p50 (like with like) at most this
GOAL = 1.1


class Replies:
    """The reply a ping-pong's caller waits for: ``expect()`` before it publishes, ``deliver``
    from the receiving callback (a payload nobody waits for is dropped)."""

    def __init__(self) -> None:
        self._waiting: asyncio.Future[bytes] | None = None

    def expect(self) -> asyncio.Future[bytes]:
        waiting = self._waiting = asyncio.get_running_loop().create_future()
        return waiting

    def deliver(self, payload: bytes) -> None:
        waiting, self._waiting = self._waiting, None
        if waiting is not None and not waiting.done():
            waiting.set_result(payload)


GmqttHandler = Callable[[gmqtt.Client, str, bytes, int, dict[str, Any]], Any]


async def gmqtt_subscribed(client: gmqtt.Client, broker: Mosquitto, topic: str,
                           on_message: GmqttHandler) -> None:
    """Connect ``client`` (MQTT 5) to ``broker`` and subscribe it to ``topic``/# with QoS 1,
    handing every message to ``on_message``; returns once the broker confirmed it."""
    subscribed = asyncio.Event()
    client.on_message = on_message
    client.on_subscribe = lambda *_: subscribed.set()
    await client.connect(HOST, broker.port, keepalive=30, version=MQTTv50)
    client.subscribe(f"{topic}/#", qos=1)
    async with asyncio.timeout(10.0):
        await subscribed.wait()


async def disconnect_quietly(client: gmqtt.Client) -> None:
    with contextlib.suppress(Exception):
        await client.disconnect()


class RawGmqttPingPong:
    """The same ping-pong with gmqtt clients (the fastest Python MQTT client here): A
    publishes to topic a (``publish()`` returns at once), B's on_message publishes the payload
    to topic b, A's on_message completes the call."""

    def __init__(self, broker: Mosquitto, payload: bytes) -> None:
        self.broker = broker
        self.payload = payload
        prefix = f"bench/raw/gmqtt-rpc-{uuid.uuid4().hex[:8]}"
        self.topic_a, self.topic_b = f"{prefix}/a", f"{prefix}/b"
        suffix = uuid.uuid4().hex[:8]
        self.a = gmqtt.Client(f"bench-gmqtt-ping-{suffix}")
        self.b = gmqtt.Client(f"bench-gmqtt-pong-{suffix}")
        self.replies = Replies()

    def _echo(self, client: gmqtt.Client, topic: str, payload: bytes, qos: int,
              properties: dict[str, Any]) -> int:
        self.b.publish(self.topic_b, payload, qos=1)
        return 0

    def _replied(self, client: gmqtt.Client, topic: str, payload: bytes, qos: int,
                 properties: dict[str, Any]) -> int:
        self.replies.deliver(payload)
        return 0

    async def __aenter__(self) -> RawGmqttPingPong:
        await gmqtt_subscribed(self.b, self.broker, self.topic_a, self._echo)
        await gmqtt_subscribed(self.a, self.broker, self.topic_b, self._replied)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in (self.a, self.b):
            await disconnect_quietly(client)

    async def call(self) -> None:
        reply = self.replies.expect()
        self.a.publish(self.topic_a, self.payload, qos=1)
        if await reply != self.payload:
            raise AssertionError("the raw echo returned something else")


class NativePingPong:
    """The gmqtt ping-pong with two sessions of the project's own MQTT client (the seam's
    ``open_session``, native): B echoes what arrives on topic a to topic b, A waits for it.
    Not raw (it is the project's client); printed to say what the floor would be with MQTT
    legs as fast as the project's."""

    def __init__(self, broker: Mosquitto, payload: bytes) -> None:
        self.url = parse_broker_url(f"mqtt://{HOST}:{broker.port}")
        self.settings = MqttSettings(client="native", session_expiry_s=0)
        self.payload = payload
        prefix = f"bench/raw/native-rpc-{uuid.uuid4().hex[:8]}"
        self.topic_a, self.topic_b = f"{prefix}/a", f"{prefix}/b"
        self._stack = contextlib.AsyncExitStack()
        self.replies = Replies()
        self.a: MqttSession | None = None

    async def __aenter__(self) -> NativePingPong:
        stack, loop = self._stack, asyncio.get_running_loop()
        suffix = uuid.uuid4().hex[:8]
        b = await stack.enter_async_context(open_session(
            self.url, self.settings, client_id=f"bench-native-pong-{suffix}"))
        await b.subscribe(f"{self.topic_a}/#", 1)
        a = self.a = await stack.enter_async_context(open_session(
            self.url, self.settings, client_id=f"bench-native-ping-{suffix}"))
        await a.subscribe(f"{self.topic_b}/#", 1)

        def echo(topic: str, payload: bytes) -> None:
            b.start_publish(f"{self.topic_b}/m", payload, 1, 60)

        stack.push_async_callback(cancel, loop.create_task(b.receive(echo)))
        stack.push_async_callback(cancel, loop.create_task(
            a.receive(lambda topic, payload: self.replies.deliver(payload))))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def call(self) -> None:
        assert self.a is not None
        reply = self.replies.expect()
        self.a.start_publish(f"{self.topic_a}/m", self.payload, 1, 60)
        if await reply != self.payload:
            raise AssertionError("the native echo returned something else")


class RawPingPong:
    """A publishes to topic a; B echoes every payload to topic b; A waits for it."""

    def __init__(self, broker: Mosquitto, payload: bytes, nodelay: bool) -> None:
        self.broker = broker
        self.payload = payload
        self.socket_options = NODELAY if nodelay else ()
        prefix = f"bench/raw/rpc-{uuid.uuid4().hex[:8]}"
        self.topic_a, self.topic_b = f"{prefix}/a", f"{prefix}/b"
        self._stack = contextlib.AsyncExitStack()
        self.replies = Replies()
        self.a: aiomqtt.Client | None = None

    async def _echo(self, b: aiomqtt.Client) -> None:
        async for message in b.messages:
            payload = message.payload
            assert isinstance(payload, bytes)
            await b.publish(self.topic_b, payload, qos=1)

    async def _replies(self, a: aiomqtt.Client) -> None:
        async for message in a.messages:
            assert isinstance(message.payload, bytes)
            self.replies.deliver(message.payload)

    async def __aenter__(self) -> RawPingPong:
        stack = self._stack
        loop = asyncio.get_running_loop()
        b = await stack.enter_async_context(
            raw_mqtt_client(self.broker, "bench-pong", socket_options=self.socket_options))
        await b.subscribe(f"{self.topic_a}/#", qos=1)
        stack.push_async_callback(cancel, loop.create_task(self._echo(b)))
        self.a = await stack.enter_async_context(
            raw_mqtt_client(self.broker, "bench-ping", socket_options=self.socket_options))
        await self.a.subscribe(f"{self.topic_b}/#", qos=1)
        stack.push_async_callback(cancel, loop.create_task(self._replies(self.a)))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def call(self) -> None:
        assert self.a is not None
        reply = self.replies.expect()
        await self.a.publish(self.topic_a, self.payload, qos=1)
        if await reply != self.payload:
            raise AssertionError("the raw echo returned something else")


class RawComposedPingPong:
    """The project's hops done raw (reference, like with like): runtime A (websockets client)
    -> relay 1 (a bare websockets server in CC1's place) -> gmqtt -> broker -> gmqtt (CC2's
    place) -> relay 2 -> runtime B (websockets client) echoes -> relay 2 -> gmqtt -> broker ->
    gmqtt -> relay 1 -> A: four MQTT legs and four websocket hops, as the project's call."""

    def __init__(self, broker: Mosquitto, payload: bytes) -> None:
        self.broker = broker
        self.payload = payload
        prefix = f"bench/raw/composed-rpc-{uuid.uuid4().hex[:8]}"
        self.topic_a, self.topic_b = f"{prefix}/a", f"{prefix}/b"
        suffix = uuid.uuid4().hex[:8]
        self.mqtt_1 = gmqtt.Client(f"bench-composed-1-{suffix}")
        self.mqtt_2 = gmqtt.Client(f"bench-composed-2-{suffix}")
        self._to_a: asyncio.Queue[bytes] = asyncio.Queue()
        self._to_b: asyncio.Queue[bytes] = asyncio.Queue()
        self._stack = contextlib.AsyncExitStack()
        self.a: ClientConnection | None = None

    async def _relay(self, ws: ServerConnection, client: gmqtt.Client, topic: str,
                     queue: asyncio.Queue[bytes]) -> None:
        async def forward() -> None:  # broker -> this relay's runtime
            while True:
                await ws.send(await queue.get())
        task = asyncio.get_running_loop().create_task(forward())
        try:
            with contextlib.suppress(ConnectionClosed):
                async for frame in ws:  # this relay's runtime -> broker
                    client.publish(topic, frame, qos=1)
        finally:
            task.cancel()

    async def _echo(self, ws: ClientConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in ws:
                await ws.send(frame)

    async def __aenter__(self) -> RawComposedPingPong:
        stack = self._stack
        urls = []
        for client, topic, queue in ((self.mqtt_1, self.topic_a, self._to_a),
                                     (self.mqtt_2, self.topic_b, self._to_b)):
            server, url = await start_raw_server(
                lambda ws, c=client, t=topic, q=queue: self._relay(ws, c, t, q))
            stack.push_async_callback(server.wait_closed)
            stack.callback(server.close)
            urls.append(url)
        for client, topic, queue in ((self.mqtt_1, self.topic_b, self._to_a),
                                     (self.mqtt_2, self.topic_a, self._to_b)):
            await gmqtt_subscribed(
                client, self.broker, topic,
                lambda _c, _t, payload, _q, _p, q=queue: q.put_nowait(payload))
        b = await stack.enter_async_context(ws_connect(urls[1], **WS_OPTIONS))
        stack.push_async_callback(cancel, asyncio.get_running_loop().create_task(self._echo(b)))
        self.a = await stack.enter_async_context(ws_connect(urls[0], **WS_OPTIONS))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()
        for client in (self.mqtt_1, self.mqtt_2):
            await disconnect_quietly(client)

    async def call(self) -> None:
        assert self.a is not None
        await self.a.send(self.payload)
        if await self.a.recv() != self.payload:
            raise AssertionError("the raw echo returned something else")


async def run(args: argparse.Namespace) -> int:
    data = "x" * args.payload
    warnings = PendingCallsWarnings().install()
    async with (Mosquitto() as broker,
                MqttProjectSetup(broker.url, mqtt_client=args.client) as setup):
        frame = setup.request_frame(data)
        async with (RawGmqttPingPong(broker, frame) as fastest,
                    RawComposedPingPong(broker, frame) as composed,
                    RawPingPong(broker, frame, nodelay=True) as raw,
                    RawPingPong(broker, frame, nodelay=False) as nagle,
                NativePingPong(broker, frame) as native):
            print(f"MQTT request/reply: sequential calls of a {args.payload} B payload (request "
                  f"frame {len(frame)} B), QoS 1, best of {args.rounds} alternating rounds; "
                  f"the CCs' MQTT client: {args.client}; {mqtt_environment()}, "
                  f"gmqtt {version('gmqtt')}")
            proxy = setup.proxy
            if await proxy.echo(data) != data:
                print("ERROR: echo() returned something else")
                return 1

            async def project_call() -> None:
                await proxy.echo(data)

            paths = {
                "project (2 CCs + 2 runtimes, 4 MQTT legs + 4 websocket hops)": project_call,
                "raw gmqtt ping-pong (4 MQTT legs)": fastest.call,
                "raw composed: websockets relays + gmqtt (4 MQTT legs + 4 websocket hops)":
                    composed.call,
                "raw aiomqtt ping-pong, TCP_NODELAY (4 MQTT legs)": raw.call,
                "raw aiomqtt ping-pong, default sockets (4 MQTT legs)": nagle.call,
                "native ping-pong: the project's own MQTT client, not raw (4 MQTT legs)":
                    native.call,
            }
            try:
                calls = await calls_per_round(paths, args.calls, args.max_round_s)
                best = await measure(paths, calls, args.rounds)
            except TimeoutError:
                print(f"TIMEOUT: a round did not finish; counters: {setup.counters() or 'none'}")
                return 1
            report(best)
            project_stats, gmqtt_stats, composed_stats = list(best.values())[:3]
            native_stats = list(best.values())[-1]
            ratio = project_stats.p50_us / composed_stats.p50_us
            print(f"p50 project / raw composed (like with like): {ratio:4.2f}x   goal <= "
                  f"{GOAL}x: {'met' if ratio <= GOAL else 'MISSED'}   (project / raw gmqtt "
                  f"ping-pong: {project_stats.p50_us / gmqtt_stats.p50_us:4.2f}x)")
            # the composed path's floor with MQTT legs as fast as the project's own client:
            # its gmqtt round trip exchanged for the native one (an estimate from these p50s)
            floor = composed_stats.p50_us - gmqtt_stats.p50_us + native_stats.p50_us
            print(f"the floor of this layout, in raw gmqtt ping-pongs: raw composed "
                  f"{composed_stats.p50_us / gmqtt_stats.p50_us:4.2f}x; with native MQTT legs "
                  f"(estimate: composed - gmqtt + native) {floor / gmqtt_stats.p50_us:4.2f}x")
            dropped = setup.dropped()
            counters = setup.counters()
            print(f"dropped: {dropped:,}, still queued {setup.queued():,}"
                  + (f"; counters: {counters}" if counters else ""))
            print(f"MQTT traffic of the CCs: {setup.mqtt_traffic()}")
            print(warnings.summary())
            if args.profile:
                print("=== profile of one project round ===")
                await profiled(timed_calls(project_call, calls), by_package=True,
                               per=(calls, "call"))
            return 0 if dropped == 0 else 1


async def calls_per_round(paths: dict[str, Callable[[], Awaitable[None]]], calls: int,
                          max_round_s: float) -> int:
    """``calls``, or fewer when 20 probe calls of a path show that a round of it would take
    longer than ``max_round_s`` (printed, with the probe figures)."""
    slowest, slowest_name = 0.0, ""
    for name, call in paths.items():
        probe = await timed_calls(call, 20)
        print(f"  probe, 20 calls: p50 {probe.p50_us:9.1f} us  {name}")
        if probe.p50_us > slowest:
            slowest, slowest_name = probe.p50_us, name
    fitting = max(20, int(max_round_s * 1e6 / slowest))
    if fitting < calls:
        print(f"NOTE: {slowest_name} takes {slowest / 1e3:.1f} ms per round trip: {fitting:,} "
              f"calls per round instead of {calls:,} (--max-round-s {max_round_s:g})")
        return fitting
    print(f"{calls:,} calls per round")
    return calls


async def measure(paths: dict[str, Callable[[], Awaitable[None]]], calls: int, rounds: int
                  ) -> dict[str, Stats]:
    """Warm up, then ``rounds`` rounds of each path in turn; the best figures of each path."""
    for call in paths.values():
        await timed_calls(call, max(1, min(calls // 5, 300)))
    best: dict[str, Stats] = {}
    for i in range(1, rounds + 1):
        figures = []
        for name, call in paths.items():
            quiet_gc()
            stats = await timed_calls(call, calls)
            best[name] = stats.best(best.get(name))
            figures.append(f"{stats.p50_us:7.1f}/{stats.p99_us:7.1f}")
        print(f"  round {i}: p50/p99 us (project, gmqtt, composed, aiomqtt, aiomqtt default "
              "sockets, native)  "
              + "   ".join(figures))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--calls", "--messages", type=int, default=2_000,
                        help="sequential calls per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each (alternating)")
    parser.add_argument("--payload", type=int, default=200, help="payload string length")
    parser.add_argument("--max-round-s", type=float, default=12.0,
                        help="fewer calls per round when a round of a path would take longer")
    parser.add_argument("--client", choices=("native", "aiomqtt"), default="native",
                        help="the CCs' MQTT client ([mqtt] client)")
    parser.add_argument("--profile", action="store_true",
                        help="then run one project round under cProfile and print hotspots")
    args = parser.parse_args()
    if args.calls < 1 or args.rounds < 1 or args.payload < 0 or args.max_round_s <= 0:
        parser.error("need --calls >= 1, --rounds >= 1, --payload >= 0, --max-round-s > 0")
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

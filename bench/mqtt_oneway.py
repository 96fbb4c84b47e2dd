"""One-way message rate between two cluster controllers linked by MQTT, beside raw MQTT clients.

Usage: .venv/bin/python bench/mqtt_oneway.py [--messages N] [--rounds R] [--payload BYTES]
                                              [--window W] [--client native|aiomqtt]
                                              [--profile] [--profile-raw] [--audit]
                                              [--metrics]

A mosquitto broker (/usr/sbin/mosquitto) is started on a free loopback port for the run.

Project path: cluster controllers CC1 and CC2 in this process, each with one MQTT backend on
that broker (MQTT 5, QoS 1, the CC's default settings), and two libjoynr runtimes, each on its
own websocket connection: runtime A on CC1 holds the proxy, runtime B on CC2 the provider of
``bench/Sink`` (registered GLOBAL with a fixed participantId that CC1 knows from a
provisioning file). A calls the one-way ``push(data: str)`` N times with a BYTES-long string:
A -> websocket -> CC1 -> MQTT publish -> mosquitto -> CC2 -> websocket -> B. Timed from the
first call until the provider has received all N.

Raw paths, in the same process and uvloop event loop, through the same broker; the payload is
a project frame of the same push call (the bytes CC1 publishes, same size):

- raw composed (the baseline of the goal): the project's hops done raw in the same layout:
  runtime A (websockets client) -> a bare websockets relay in CC1's place -> gmqtt publish,
  QoS 1 -> mosquitto -> gmqtt subscriber in CC2's place -> a bare websockets relay -> runtime
  B (websockets client). The goal: project rate >= 0.8 x this rate;
- raw aiomqtt, await each publish: one aiomqtt client publishes with QoS 1 to a topic another
  subscribes to (``<topic>/#``), ``await client.publish(...)`` per message;
- raw aiomqtt, publishes in tasks: the same clients, each publish in a task of its own (up to
  100 unacknowledged);
- raw gmqtt: QoS 1, MQTT 5, ``publish()`` returns at once, PUBACKs handled as they come.

The CCs use the MQTT client of ``--client`` (``[mqtt] client``; default native).

Every path sends in the same windows: never more than W messages ahead of the receiver (then
wait until at most W/2 are in flight). Rounds alternate project, raw, the reference paths,
project, ...; the best round of each counts (this machine is noisy). Printed: msgs/s of each,
the ratio project / raw composed with the goal, and the ratio to each other raw path. Lost or
dropped messages are reported with the counters of both CCs
(router, websocket, MQTT) and both runtimes. ``--profile`` adds one project round under
cProfile (not counted) and prints the own time per package (project code, aiomqtt, paho,
asyncio, ...) and the top functions; ``--profile-raw`` does the same for one round of raw
aiomqtt publishes in tasks.

aiomqtt logs a warning "There are N pending publish calls." for every publish made while more
than 10 publishes wait for their PUBACK (the CCs' clients with --client aiomqtt and the raw
clients in tasks do); the
records are made as usual, but they are kept out of the output and only counted (printed at
the end, per logger: ``mqtt`` is the CCs' clients, ``bench.*`` the raw ones).

``--audit``: a second pair of CCs (with their runtimes), both writing the message audit log
(``[audit]`` on, its defaults), runs in the same rounds through the same broker; printed: its
rate and the ratio audit on / off (goal >= 0.9), with the audit logs' counters.

``--metrics``: a further pair of CCs whose admin endpoints are on and scraped while its rounds
run (bench/_common.py Scraper), in the same rounds; printed: its rate and the ratio metrics on /
off (goal >= 0.95), with the number of scrapes. Both options may be given: each pair is compared
with the plain project path of the same rounds; the pairs use the MQTT client of ``--client``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import uuid
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

import aiomqtt
import gmqtt
import uvloop
from _common import (
    AUDIT_ON,
    HOST,
    WS_OPTIONS,
    Mosquitto,
    MqttProjectSetup,
    PendingCallsWarnings,
    Progress,
    Scraper,
    audit_summary,
    best_rates,
    cancel,
    check_throughput_options,
    help_text,
    metered,
    metrics_summary,
    mqtt_environment,
    profiled,
    raw_mqtt_client,
    scraped,
    send_windowed,
    setup_logging,
    start_raw_server,
    throughput_options,
)
from gmqtt.mqtt.constants import MQTTv50
from websocket_oneway import report_losses
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

#: the project path / the same hops done raw (websockets relay, gmqtt, websockets relay)
GOAL = 0.8


class RawAiomqtt:
    """sender client -> broker -> receiver client (subscribed to ``<topic>/#``), counting."""

    def __init__(self, broker: Mosquitto, payload: bytes) -> None:
        self.broker = broker
        self.payload = payload
        self.topic = f"bench/raw/aiomqtt-{uuid.uuid4().hex[:8]}"
        self.progress = Progress()
        self._stack = contextlib.AsyncExitStack()
        self._tasks: set[asyncio.Task[None]] = set()
        self.sender: aiomqtt.Client | None = None

    async def _count(self, client: aiomqtt.Client) -> None:
        hit = self.progress.hit
        async for _ in client.messages:
            hit()

    async def __aenter__(self) -> RawAiomqtt:
        stack = self._stack
        receiver = await stack.enter_async_context(raw_mqtt_client(self.broker, "bench-raw-rx"))
        await receiver.subscribe(f"{self.topic}/#", qos=1)
        counting = asyncio.get_running_loop().create_task(self._count(receiver))
        stack.push_async_callback(cancel, counting)
        self.sender = await stack.enter_async_context(
            raw_mqtt_client(self.broker, "bench-raw-tx"))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.settle()
        await self._stack.aclose()

    async def publish(self) -> None:
        """Publish one message and wait for its PUBACK."""
        assert self.sender is not None
        await self.sender.publish(self.topic, self.payload, qos=1)

    async def publish_in_task(self) -> None:
        """Start publishing one message in a task of its own (many are in flight)."""
        task = asyncio.get_running_loop().create_task(self.publish())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait until every publish task has its PUBACK."""
        if self._tasks:
            await asyncio.gather(*self._tasks)


class RawGmqtt:
    """The same with gmqtt clients: sender -> broker -> receiver, QoS 1, MQTT 5."""

    def __init__(self, broker: Mosquitto, payload: bytes) -> None:
        self.broker = broker
        self.payload = payload
        self.topic = f"bench/raw/gmqtt-{uuid.uuid4().hex[:8]}"
        self.progress = Progress()
        suffix = uuid.uuid4().hex[:8]
        self.receiver = gmqtt.Client(f"bench-gmqtt-rx-{suffix}")
        self.sender = gmqtt.Client(f"bench-gmqtt-tx-{suffix}")

    def _on_message(self, client: gmqtt.Client, topic: str, payload: bytes, qos: int,
                    properties: dict[str, Any]) -> int:
        self.progress.hit()
        return 0  # PUBACK reason code: success

    async def __aenter__(self) -> RawGmqtt:
        subscribed = asyncio.Event()
        self.receiver.on_message = self._on_message
        self.receiver.on_subscribe = lambda *_: subscribed.set()
        await self.receiver.connect(HOST, self.broker.port, keepalive=30, version=MQTTv50)
        self.receiver.subscribe(f"{self.topic}/#", qos=1)
        async with asyncio.timeout(10.0):
            await subscribed.wait()
        await self.sender.connect(HOST, self.broker.port, keepalive=30, version=MQTTv50)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.settle()
        for client in (self.sender, self.receiver):
            with contextlib.suppress(Exception):
                await client.disconnect()

    async def publish(self) -> None:
        """Hand one message to gmqtt (it does not wait for the PUBACK)."""
        self.sender.publish(self.topic, self.payload, qos=1)

    async def settle(self) -> None:
        """Wait until every message sent has its PUBACK (gmqtt keeps them until then)."""
        async with asyncio.timeout(10.0):
            await self.sender._persistent_storage.wait_empty()


class RawComposed:
    """The project's hops done raw, in the same layout: runtime A (a websockets client) ->
    relay 1 (a bare websockets server, the place of CC1) -> gmqtt publish, QoS 1 -> broker ->
    gmqtt subscriber (the place of CC2) -> relay 2 (a bare websockets server) -> runtime B (a
    websockets client, counting). The relays forward the frame's bytes without decoding, as
    bench/websocket_oneway.py's raw relay; gmqtt's on_message hands each payload to relay 2's
    sender through a queue (websockets' send is a coroutine)."""

    def __init__(self, broker: Mosquitto, payload: bytes) -> None:
        self.broker = broker
        self.payload = payload
        self.topic = f"bench/raw/composed-{uuid.uuid4().hex[:8]}"
        self.progress = Progress()
        suffix = uuid.uuid4().hex[:8]
        self.mqtt_rx = gmqtt.Client(f"bench-composed-rx-{suffix}")
        self.mqtt_tx = gmqtt.Client(f"bench-composed-tx-{suffix}")
        self._to_b: asyncio.Queue[bytes] = asyncio.Queue()
        self._b_ready = asyncio.Event()
        self._stack = contextlib.AsyncExitStack()
        self.sender: ClientConnection | None = None

    async def _relay_1(self, ws: ServerConnection) -> None:
        publish, topic = self.mqtt_tx.publish, f"{self.topic}/m"
        with contextlib.suppress(ConnectionClosed):
            async for frame in ws:
                publish(topic, frame, qos=1)

    async def _relay_2(self, ws: ServerConnection) -> None:
        self._b_ready.set()
        forwarding = asyncio.get_running_loop().create_task(self._forward(ws))
        # the forwarding waits on the queue and would never see the connection go: the
        # handler (which the server's close waits for) ends when the connection does
        await ws.wait_closed()
        await cancel(forwarding)

    async def _forward(self, ws: ServerConnection) -> None:
        queue = self._to_b
        with contextlib.suppress(ConnectionClosed):
            while True:
                await ws.send(await queue.get())

    def _on_message(self, client: gmqtt.Client, topic: str, payload: bytes, qos: int,
                    properties: dict[str, Any]) -> int:
        self._to_b.put_nowait(payload)
        return 0

    async def _count(self, ws: ClientConnection) -> None:
        hit = self.progress.hit
        with contextlib.suppress(ConnectionClosed):
            async for _ in ws:
                hit()

    async def __aenter__(self) -> RawComposed:
        stack = self._stack
        loop = asyncio.get_running_loop()
        for handler in (self._relay_1, self._relay_2):
            server, url = await start_raw_server(handler)
            stack.push_async_callback(server.wait_closed)
            stack.callback(server.close)
            if handler == self._relay_1:
                url_1 = url
            else:
                url_2 = url
        subscribed = asyncio.Event()
        self.mqtt_rx.on_message = self._on_message
        self.mqtt_rx.on_subscribe = lambda *_: subscribed.set()
        await self.mqtt_rx.connect(HOST, self.broker.port, keepalive=30, version=MQTTv50)
        self.mqtt_rx.subscribe(f"{self.topic}/#", qos=1)
        async with asyncio.timeout(10.0):
            await subscribed.wait()
        await self.mqtt_tx.connect(HOST, self.broker.port, keepalive=30, version=MQTTv50)
        b = await stack.enter_async_context(ws_connect(url_2, **WS_OPTIONS))
        await self._b_ready.wait()
        counting = loop.create_task(self._count(b))
        stack.push_async_callback(cancel, counting)
        self.sender = await stack.enter_async_context(ws_connect(url_1, **WS_OPTIONS))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.settle()
        await self._stack.aclose()
        for client in (self.mqtt_tx, self.mqtt_rx):
            with contextlib.suppress(Exception):
                await client.disconnect()

    async def send(self) -> None:
        assert self.sender is not None
        await self.sender.send(self.payload)

    async def settle(self) -> None:
        async with asyncio.timeout(10.0):
            await self.mqtt_tx._persistent_storage.wait_empty()


Round = Callable[[int], Awaitable[float]]


async def run(args: argparse.Namespace) -> int:
    data = "x" * args.payload
    args.warnings = PendingCallsWarnings().install()
    async with (Mosquitto() as broker,
                MqttProjectSetup(broker.url, mqtt_client=args.client) as setup,
                contextlib.AsyncExitStack() as stack):
        audited = (await stack.enter_async_context(MqttProjectSetup(
            broker.url, mqtt_client=args.client, **AUDIT_ON)) if args.audit else None)
        with_admin = await stack.enter_async_context(metered(
            args.metrics, MqttProjectSetup, broker.url, mqtt_client=args.client))
        frame = setup.one_way_frame(data)
        async with (RawAiomqtt(broker, frame) as raw, RawGmqtt(broker, frame) as other,
                    RawComposed(broker, frame) as composed):
            return await compare(args, data, setup, raw, other, composed=composed,
                                 audited=audited, with_admin=with_admin)


async def compare(args: argparse.Namespace, data: str, setup: MqttProjectSetup,  # noqa: PLR0915
                  raw: RawAiomqtt, other: RawGmqtt, *, composed: RawComposed,
                  audited: MqttProjectSetup | None = None,
                  with_admin: MqttProjectSetup | None = None) -> int:
    proxy, provider, frame = setup.proxy, setup.provider, raw.payload
    print(f"MQTT one-way: {args.messages:,} messages of a {args.payload} B payload (frame "
          f"{len(frame)} B), QoS 1, window {args.window:,}, best of {args.rounds} alternating "
          f"rounds; the CCs' MQTT client: {args.client}; {mqtt_environment()}, "
          f"gmqtt {version('gmqtt')}"
          f"{'; with a pair of CCs writing the audit log' if audited else ''}"
          f"{'; with a pair of CCs with admin endpoints, scraped' if with_admin else ''}")

    def windowed(send: Callable[[], Awaitable[object]], progress: Progress,
                 settle: Callable[[], Awaitable[None]] | None = None) -> Round:
        async def one_round(n: int) -> float:
            seconds = await send_windowed(send, n, args.window, progress)
            if settle is not None:
                await settle()  # the PUBACKs still coming do not spill into the next round
            return seconds
        return one_round

    project_name = "project (2 CCs + 2 runtimes, via MQTT)"
    composed_name = "raw composed: websockets relay + gmqtt + websockets relay"
    raw_name = "raw aiomqtt, await each publish"
    tasks_name = "raw aiomqtt, publishes in tasks"
    gmqtt_name = "raw gmqtt, publish() + PUBACKs async"
    paths: dict[str, tuple[Round, Progress]] = {
        project_name: (windowed(lambda: proxy.push(data), provider.progress), provider.progress),
        composed_name: (windowed(composed.send, composed.progress, composed.settle),
                        composed.progress),
        raw_name: (windowed(raw.publish, raw.progress), raw.progress),
        tasks_name: (windowed(raw.publish_in_task, raw.progress, raw.settle), raw.progress),
        gmqtt_name: (windowed(other.publish, other.progress, other.settle), other.progress),
    }
    # the optional pairs of CCs, each measured in the same rounds and compared with the project
    audit_name, metrics_name = "project, audit log on", "project, metrics on and scraped"
    if audited is not None:
        audit_proxy = audited.proxy
        paths[audit_name] = (windowed(lambda: audit_proxy.push(data), audited.provider.progress),
                             audited.provider.progress)
    scraper = None
    if with_admin is not None:
        scraper = Scraper(with_admin.admin_urls())
        admin_proxy = with_admin.proxy
        paths[metrics_name] = (scraped(scraper, windowed(lambda: admin_proxy.push(data),
                                                         with_admin.provider.progress)),
                               with_admin.provider.progress)
    optional = [label for label, on in (("audit on", audited), ("metrics on", with_admin))
                if on is not None]

    def report(i: int, by_name: dict[str, float]) -> None:
        rates = list(by_name.values())
        extra = "".join(f"   | {label} {rate:7,.0f} (on/off {rate / rates[0]:4.2f})"
                        for label, rate in zip(optional, rates[5:], strict=True))
        print(f"  round {i}: msg/s project {rates[0]:7,.0f}   raw composed "
              f"{rates[1]:7,.0f}   ratio {rates[0] / rates[1]:4.2f}   | aiomqtt "
              f"{rates[2]:7,.0f}   aiomqtt in tasks {rates[3]:7,.0f}   gmqtt "
              f"{rates[4]:7,.0f}{extra}")

    try:
        best = await best_rates({name: one_round for name, (one_round, _) in paths.items()},
                                args.messages, args.rounds, warm=min(args.messages, 1_000),
                                report=report)
    except TimeoutError:
        got = ", ".join(f"{name}: {progress.count:,}" for name, (_, progress) in paths.items())
        print(f"TIMEOUT: a round did not finish; received {got}")
        report_losses(setup, args.messages, provider.progress.count)
        return 1
    await asyncio.sleep(0.2)  # anything extra (duplicates) would arrive now
    ok = report_losses(setup, args.messages, provider.progress.count)
    print(f"MQTT traffic of the CCs: {setup.mqtt_traffic()}")
    print(args.warnings.summary())
    for extra in (audited, with_admin):
        if extra is not None:
            ok = report_losses(extra, args.messages, extra.provider.progress.count) and ok
    for name, (_, progress) in list(paths.items())[1:]:
        if progress.count != args.messages:
            print(f"{name}: received {progress.count:,} of {args.messages:,} in its last round")
            ok = False

    width = max(len(name) for name in paths)
    for name, rate in best.items():
        print(f"{name:<{width}}  {rate:9,.0f} msg/s ({1e6 / rate:7.1f} us/msg)")
    ratio = best[project_name] / best[composed_name]
    print(f"ratio project / {composed_name}: {ratio:4.2f}   goal >= {GOAL}: "
          f"{'met' if ratio >= GOAL else 'MISSED'}")
    for name in (raw_name, tasks_name, gmqtt_name):
        print(f"reference: project / {name}: {best[project_name] / best[name]:4.2f}")
    if audited is not None:
        print(audit_summary(best[project_name], best[audit_name], audited.audit_stats()))
    if scraper is not None:
        print(metrics_summary(best[project_name], best[metrics_name], scraper))
    if args.profile:
        print("=== profile of one project round ===")
        await profiled(paths[project_name][0](args.messages), by_package=True)
    if args.profile_raw:
        print(f"=== profile of one round of {tasks_name} ===")
        await profiled(paths[tasks_name][0](args.messages), by_package=True)
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    throughput_options(parser, messages=10_000, rounds=3)
    parser.add_argument("--client", choices=("native", "aiomqtt"), default="native",
                        help="the CCs' MQTT client ([mqtt] client)")
    parser.add_argument("--profile", action="store_true",
                        help="then run one project round under cProfile and print hotspots")
    parser.add_argument("--audit", action="store_true",
                        help="also measure a pair of CCs that write the audit log (on/off ratio)")
    parser.add_argument("--metrics", action="store_true",
                        help="also measure a pair of CCs with their admin endpoints on, scraped "
                             "every second (on/off ratio)")
    parser.add_argument("--profile-raw", action="store_true",
                        help="then run one round of raw aiomqtt publishes in tasks under "
                             "cProfile and print hotspots")
    args = parser.parse_args()
    check_throughput_options(parser, args)
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

"""The MQTT session alone (transports.mqtt.client), beside raw gmqtt and raw aiomqtt.

Usage: .venv/bin/python bench/mqtt_session.py [--messages N] [--rounds R] [--payload BYTES]
                                               [--window W] [--profile]

A mosquitto broker (/usr/sbin/mosquitto) is started on a free loopback port for the run.

Paths, all in this process and uvloop event loop, through that broker, QoS 1, MQTT 5, the same
payload (``--payload`` bytes), every PUBACK tracked:

- project session, native: two sessions of the seam (``open_session``, ``[mqtt] client =
  "native"``, the CC's default settings): one publishes with ``start_publish`` (a future per
  message, resolved by its PUBACK), the other is subscribed to ``<topic>/#`` and counts what
  its handler gets;
- project session, aiomqtt: the same through the seam on ``client = "aiomqtt"``;
- raw gmqtt: two gmqtt clients, ``publish()`` returns at once, PUBACKs handled as they come
  (the fastest Python client here: the baseline of the goal below);
- raw aiomqtt, publishes in tasks: two aiomqtt clients, each publish in a task of its own.

Every path sends in the same windows (never more than W messages ahead of the receiver) and
ends a round only when every PUBACK has arrived. Rounds alternate the paths; the best round of
each counts. Printed: msgs/s of each and the ratio native / gmqtt (goal >= 0.8).
``--profile`` runs one round of the native session under cProfile.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import uuid
from collections.abc import Awaitable, Callable
from importlib.metadata import version

import uvloop
from _common import (
    HOST,
    Mosquitto,
    PendingCallsWarnings,
    Progress,
    best_rates,
    cancel,
    check_throughput_options,
    help_text,
    mqtt_environment,
    profiled,
    send_windowed,
    setup_logging,
    throughput_options,
)
from mqtt_oneway import RawAiomqtt, RawGmqtt

from pyjoynr.transports.mqtt.client import MqttSession, open_session
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url

GOAL = 0.8


class ProjectSessions:
    """Sender session -> broker -> receiver session (subscribed to ``<topic>/#``)."""

    def __init__(self, broker: Mosquitto, payload: bytes, client: str) -> None:
        self.url = parse_broker_url(f"mqtt://{HOST}:{broker.port}")
        self.settings = MqttSettings(client=client, session_expiry_s=0)
        self.payload = payload
        self.topic = f"bench/session/{client}-{uuid.uuid4().hex[:8]}"
        self.progress = Progress()
        self.sender: MqttSession | None = None
        self._stack = contextlib.AsyncExitStack()
        self._unacked: set[asyncio.Future[int]] = set()
        self.refused = 0

    async def __aenter__(self) -> ProjectSessions:
        stack = self._stack
        suffix = uuid.uuid4().hex[:8]
        receiver = await stack.enter_async_context(open_session(
            self.url, self.settings, client_id=f"bench-session-rx-{suffix}"))
        await receiver.subscribe(f"{self.topic}/#", 1)
        hit = self.progress.hit
        receiving = asyncio.get_running_loop().create_task(
            receiver.receive(lambda topic, payload: hit()))
        stack.push_async_callback(cancel, receiving)
        self.sender = await stack.enter_async_context(open_session(
            self.url, self.settings, client_id=f"bench-session-tx-{suffix}"))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.settle()
        await self._stack.aclose()

    def _acked(self, future: asyncio.Future[int]) -> None:
        self._unacked.discard(future)
        if future.cancelled() or future.exception() is not None or future.result() not in (0,
                                                                                           0x10):
            self.refused += 1

    async def publish(self) -> None:
        assert self.sender is not None
        future = self.sender.start_publish(f"{self.topic}/m", self.payload, 1, 60)
        self._unacked.add(future)
        future.add_done_callback(self._acked)

    async def settle(self) -> None:
        if self._unacked:
            await asyncio.wait(list(self._unacked))


Round = Callable[[int], Awaitable[float]]


async def run(args: argparse.Namespace) -> int:
    payload = b"p" * args.payload
    args.warnings = PendingCallsWarnings().install()
    async with (Mosquitto() as broker,
                ProjectSessions(broker, payload, "native") as native,
                ProjectSessions(broker, payload, "aiomqtt") as seam_aiomqtt,
                RawGmqtt(broker, payload) as gmqtt,
                RawAiomqtt(broker, payload) as aiomqtt):
        print(f"MQTT session alone: {args.messages:,} messages of {args.payload} B, QoS 1, "
              f"window {args.window:,}, best of {args.rounds} alternating rounds; "
              f"{mqtt_environment()}, gmqtt {version('gmqtt')}")

        def windowed(send: Callable[[], Awaitable[object]], progress: Progress,
                     settle: Callable[[], Awaitable[None]]) -> Round:
            async def one_round(n: int) -> float:
                seconds = await send_windowed(send, n, args.window, progress)
                await settle()  # every PUBACK in before the next round
                return seconds
            return one_round

        paths: dict[str, tuple[Round, Progress]] = {
            "project session, native": (windowed(native.publish, native.progress,
                                                 native.settle), native.progress),
            "project session, aiomqtt": (windowed(seam_aiomqtt.publish, seam_aiomqtt.progress,
                                                  seam_aiomqtt.settle), seam_aiomqtt.progress),
            "raw gmqtt": (windowed(gmqtt.publish, gmqtt.progress, gmqtt.settle),
                          gmqtt.progress),
            "raw aiomqtt, publishes in tasks": (windowed(aiomqtt.publish_in_task,
                                                         aiomqtt.progress, aiomqtt.settle),
                                                aiomqtt.progress),
        }
        def report(i: int, rates: dict[str, float]) -> None:
            print(f"  round {i}: msg/s " + "   ".join(
                f"{name.split(', ')[-1]} {rate:7,.0f}" for name, rate in rates.items()))

        try:
            best = await best_rates(
                {name: one_round for name, (one_round, _) in paths.items()}, args.messages,
                args.rounds, warm=min(args.messages, 1_000), report=report)
        except TimeoutError:
            print("TIMEOUT: a round did not finish")
            return 1
        width = max(len(name) for name in paths)
        for name, rate in best.items():
            print(f"{name:<{width}}  {rate:9,.0f} msg/s ({1e6 / rate:7.1f} us/msg)")
        ratio = best["project session, native"] / best["raw gmqtt"]
        print(f"ratio project session (native) / raw gmqtt: {ratio:4.2f}   goal >= {GOAL}: "
              f"{'met' if ratio >= GOAL else 'MISSED'}")
        gmqtt_rate = best["raw gmqtt"]
        print(f"ratio project session (aiomqtt) / raw gmqtt: "
              f"{best['project session, aiomqtt'] / gmqtt_rate:4.2f}; raw aiomqtt in tasks / "
              f"raw gmqtt: {best['raw aiomqtt, publishes in tasks'] / gmqtt_rate:4.2f}")
        ok = native.refused == 0 and seam_aiomqtt.refused == 0
        if not ok:
            print(f"REFUSED or failed publishes: native {native.refused}, aiomqtt "
                  f"{seam_aiomqtt.refused}")
        if args.profile:
            print("=== profile of one round of the native session ===")
            await profiled(paths["project session, native"][0](args.messages),
                           by_package=True)
        return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    throughput_options(parser, messages=20_000, rounds=3, payload_help="payload bytes")
    parser.add_argument("--profile", action="store_true",
                        help="then run one native round under cProfile and print hotspots")
    args = parser.parse_args()
    check_throughput_options(parser, args)
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

"""One-way message rate in joynr's dialect beside the native one and the raw relays.

Usage: .venv/bin/python bench/dialects.py [--messages N] [--rounds R] [--payload BYTES]
                                           [--window W] [--only websocket|mqtt]
                                           [--profile] [--profile-path NAME]

Four project paths, each with its own cluster controller(s) and pair of libjoynr runtimes in
this process: runtime A's proxy calls the one-way ``push(data: str)`` of the ``bench/Sink``
provider in runtime B N times with a BYTES-long string, timed from the first call until the
provider has received all N:

- ``native``: both runtimes in the native dialect (msgpack frames), msgpack bodies;
- ``native+json``: the same frames with joynr's JSON bodies (the proxy forced to JSON): what
  the bodies alone cost;
- ``joynr+msgpack``: both runtimes in joynr's dialect (``LibjoynrConfig(dialect="joynr")``:
  joynr's init frame, SMRF frames), msgpack bodies (the provider is a runtime of this
  project, which reads them);
- ``joynr+json``: joynr's dialect with JSON bodies: what a runtime of joynr's sends.

websocket (A -> CC -> B, as bench/websocket_oneway.py): beside them the raw websockets relay
of that bench (a bare server forwarding each frame, a native frame of the same call).

MQTT (A -> CC1 -> mosquitto -> CC2 -> B, as bench/mqtt_oneway.py; a mosquitto broker is
started on a free loopback port): the CCs' backends are in the dialect of the path's runtimes
(``[mqtt] dialect``; joynr: SMRF frames published to ``<topic>/low``); beside them the raw
composed path of that bench (websockets relay, gmqtt QoS 1, websockets relay).

Rounds alternate every path; the best round of each counts (this machine is noisy). Printed per
transport: msgs/s and us/msg of each path, its ratio to the raw path and to ``native``, and
the goal: joynr's dialect >= 0.7 x native. After the rounds, each path is checked to have
travelled as named (the dialect of the CCs' websocket clients, the SMRF frames the MQTT
backends published, the proxy's body format); lost or dropped messages are reported with the
counters. ``--profile`` adds one round of ``--profile-path`` (default joynr+json) per transport
under cProfile (not counted) and prints the time per owner and per project file and the top
functions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import version

import uvloop
from _common import (
    Mosquitto,
    MqttProjectSetup,
    ProjectSetup,
    best_rates,
    check_throughput_options,
    environment,
    help_text,
    mqtt_environment,
    profiled,
    send_windowed,
    setup_logging,
    throughput_options,
)
from mqtt_oneway import RawComposed
from websocket_oneway import RawRelay

from libjoynr import LibjoynrConfig
from runtime import smrf
from runtime.bodies import BodyFormat
from runtime.messages import encode_frame

#: joynr's dialect / the native one
GOAL = 0.7
NATIVE, JOYNR = "native", "joynr"
Round = Callable[[int], Awaitable[float]]


@dataclass(frozen=True)
class Variant:
    """A project path: the frame dialect of the runtimes (and MQTT backends), the bodies."""

    name: str
    dialect: str
    body: BodyFormat

    @property
    def label(self) -> str:
        frames = "SMRF" if self.dialect == JOYNR else "native"
        return f"{self.name:<14} ({frames} frames, {self.body.value} bodies)"

    def runtime_config(self) -> LibjoynrConfig:
        return LibjoynrConfig(dialect=self.dialect)


PATHS = (Variant("native", NATIVE, BodyFormat.MSGPACK),
         Variant("native+json", NATIVE, BodyFormat.JSON),
         Variant("joynr+msgpack", JOYNR, BodyFormat.MSGPACK),
         Variant("joynr+json", JOYNR, BodyFormat.JSON))
BASELINE = PATHS[0].name


def frame_sizes(setup: ProjectSetup, data: str) -> str:
    """The bytes of a push call in each path's frames (without MQTT's topic and properties)."""
    sizes = []
    for path in PATHS:
        message = setup.one_way_message(data, path.body)
        frame = smrf.encode(message) if path.dialect == JOYNR else encode_frame(message)
        sizes.append(f"{path.name} {len(frame)} B")
    return "frames: " + ", ".join(sizes)


def websocket_dialects(setup: ProjectSetup) -> set[str]:
    """The dialects of the runtimes' websocket connections, as their CC(s) saw them."""
    return {client.dialect for cc in setup.ccs() for client in cc.websocket.client_summaries()}


def check_path(path: Variant, setup: ProjectSetup, messages: int) -> bool:
    """Print how ``path`` travelled and whether as named: the runtimes' websocket dialect,
    the proxy's bodies, the SMRF frames the MQTT backends published; and what was lost."""
    problems = []
    seen = websocket_dialects(setup)
    if seen != {path.dialect}:
        problems.append(f"websocket clients spoke {sorted(seen)}")
    if setup.proxy.body_format is not path.body:
        problems.append(f"the proxy wrote {setup.proxy.body_format.value} bodies")
    smrf_text = ""
    if isinstance(setup, MqttProjectSetup):
        backends = [b for cc in setup.ccs() if cc.mqtt is not None for b in cc.mqtt.backends]
        published = sum(b.published for b in backends)
        as_smrf = sum(b.published_joynr for b in backends)
        smrf_text = f", MQTT: {as_smrf:,} of {published:,} published as SMRF"
        if (as_smrf >= messages) != (path.dialect == JOYNR):
            problems.append(f"{as_smrf:,} SMRF publications")
    received = setup.provider.progress.count
    lost, dropped = messages - received, setup.dropped()
    if lost or dropped:
        problems.append(f"lost {lost:,}, dropped {dropped:,} in the last round, still queued "
                        f"{setup.queued():,}; counters {setup.counters()}")
    print(f"  {path.name}: websocket {'/'.join(sorted(seen))}, "
          f"{setup.proxy.body_format.value} bodies{smrf_text}: "
          f"{'as named' if not problems else 'WRONG: ' + '; '.join(problems)}")
    return not problems


def summary(best: dict[str, float], raw_name: str) -> None:
    """The table of the best rates, with the ratios to the raw path and to native, and the
    goal of joynr's dialect."""
    print(f"  {'path':<46} {'msg/s':>9} {'us/msg':>7}  {'/raw':>5}  {'/native':>7}")
    for name, rate in best.items():
        label = next((p.label for p in PATHS if p.name == name), name)
        native = (f"{rate / best[BASELINE]:7.2f}" if name != raw_name else "")
        print(f"  {label:<46} {rate:9,.0f} {1e6 / rate:7.1f}  {rate / best[raw_name]:5.2f}  "
              f"{native}".rstrip())
    goals = [f"{p.name} {best[p.name] / best[BASELINE]:4.2f} "
             f"{'met' if best[p.name] / best[BASELINE] >= GOAL else 'MISSED'}"
             for p in PATHS if p.dialect == JOYNR]
    print(f"  goal joynr's dialect / native >= {GOAL}: {', '.join(goals)}")


async def measure(args: argparse.Namespace, title: str, setups: dict[str, ProjectSetup],
                  raw_name: str, raw: Round) -> bool:
    """Rounds of every project path and the raw one; print the rounds, the checks, the table
    and (``--profile``) a profile of one round of ``--profile-path``."""
    data = "x" * args.payload
    print(f"{title}: {args.messages:,} messages of a {args.payload} B payload, window "
          f"{args.window:,}, best of {args.rounds} alternating rounds")
    print(f"  {frame_sizes(setups[BASELINE], data)}")

    def through(setup: ProjectSetup) -> Round:
        async def one_round(n: int) -> float:
            return await send_windowed(lambda: setup.proxy.push(data), n, args.window,
                                       setup.provider.progress)
        return one_round

    rounds: dict[str, Round] = {name: through(setup) for name, setup in setups.items()}
    rounds[raw_name] = raw

    def report(i: int, rates: dict[str, float]) -> None:
        print(f"  round {i}: " + "   ".join(f"{name} {rate:7,.0f}"
                                              for name, rate in rates.items()) + " msg/s")

    try:
        best = await best_rates(rounds, args.messages, args.rounds,
                                warm=min(args.messages, 1_000), report=report)
    except TimeoutError:
        got = ", ".join(f"{name}: {s.provider.progress.count:,}" for name, s in setups.items())
        print(f"  TIMEOUT: a round did not finish; received {got}")
        return False
    await asyncio.sleep(0.2)  # anything extra (duplicates) would arrive now
    ok = all([check_path(path, setups[path.name], args.messages) for path in PATHS])
    summary(best, raw_name)
    if args.profile:
        print(f"=== profile of one {args.profile_path} round ({title}) ===")
        await profiled(rounds[args.profile_path](args.messages), by_package=True)
    return ok


async def websocket(args: argparse.Namespace) -> bool:
    async with contextlib.AsyncExitStack() as stack:
        setups: dict[str, ProjectSetup] = {}
        for path in PATHS:
            setups[path.name] = await stack.enter_async_context(ProjectSetup(
                runtime_config=path.runtime_config(), body_format=path.body))
        relay = await stack.enter_async_context(RawRelay())
        frame = setups[BASELINE].one_way_frame("x" * args.payload)
        sender = relay.sender
        assert sender is not None

        async def raw(n: int) -> float:
            return await send_windowed(lambda: sender.send(frame), n, args.window,
                                       relay.progress)

        return await measure(args, f"websocket one-way (A -> CC -> B); {environment()}",
                             setups, "raw relay", raw)


async def mqtt(args: argparse.Namespace) -> bool:
    broker = Mosquitto()  # (its __aenter__ is typed as the tests' broker it extends)
    async with broker, contextlib.AsyncExitStack() as stack:
        setups: dict[str, ProjectSetup] = {}
        for path in PATHS:
            setups[path.name] = await stack.enter_async_context(MqttProjectSetup(
                broker.url, runtime_config=path.runtime_config(), body_format=path.body,
                mqtt__dialect=path.dialect))
        frame = setups[BASELINE].one_way_frame("x" * args.payload)
        composed = await stack.enter_async_context(RawComposed(broker, frame))

        async def raw(n: int) -> float:
            seconds = await send_windowed(composed.send, n, args.window, composed.progress)
            await composed.settle()  # the PUBACKs still coming do not spill into the next round
            return seconds

        return await measure(args, f"MQTT one-way (A -> CC1 -> mosquitto -> CC2 -> B), QoS 1; "
                             f"{mqtt_environment()}, gmqtt {version('gmqtt')}",
                             setups, "raw composed", raw)


async def run(args: argparse.Namespace) -> int:
    ok = True
    if args.only in (None, "websocket"):
        ok = await websocket(args) and ok
    if args.only in (None, "mqtt"):
        ok = await mqtt(args) and ok
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    throughput_options(parser, messages=10_000, rounds=5)
    parser.add_argument("--only", choices=("websocket", "mqtt"),
                        help="measure one transport only (default: both, websocket first)")
    parser.add_argument("--profile", action="store_true",
                        help="then run one round of --profile-path per transport under "
                             "cProfile and print hotspots")
    parser.add_argument("--profile-path", choices=[p.name for p in PATHS], default="joynr+json",
                        help="the path --profile profiles (default joynr+json)")
    args = parser.parse_args()
    check_throughput_options(parser, args)
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

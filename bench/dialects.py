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

websocket only, a second family, "CC relay": what the cluster controller costs when joynr's own
runtimes are the ends (no runtime of this project, so no codec at the ends). Raw websocket
clients (websockets' asyncio API) each on a CC of their own path: a sender sends pre-encoded
frames of the same push call (same participantIds and sizes as the runtime paths'), a receiver
only counts the frames it gets. Both said who they are with an init frame and registered their
participant with an ``addNextHop`` call to the CC's Routing provider, as a runtime does:

- ``CC relay native``: native frames, msgpack bodies (as this project's runtimes send them);
- ``CC relay joynr``: joynr's init frame, SMRF frames with JSON bodies (as joynr's runtimes send
  them); the CC decodes each frame once and forwards it unchanged;
- ``raw SMRF relay``: the raw relay above forwarding that SMRF frame (``raw relay`` forwards
  the native one).

Their table gives each CC relay path's ratio to the raw relay of its frame and to
``CC relay native``, and the ratio joynr / native of the CC relay. After the rounds each is
checked: the clients' dialect as the CC saw it, the frames arrived unchanged, nothing lost or
dropped.

MQTT (A -> CC1 -> mosquitto -> CC2 -> B, as bench/mqtt_oneway.py; a mosquitto broker is
started on a free loopback port): the CCs' backends are in the dialect of the path's runtimes
(``[mqtt] dialect``; joynr: SMRF frames published to ``<topic>/low``); beside them the raw
composed path of that bench (websockets relay, gmqtt QoS 1, websockets relay).

Rounds alternate every path (of both families); the best round of each counts (this machine is
noisy). Printed per transport: msgs/s and us/msg of each path, its ratio to the raw path and to
``native``, and the goal: joynr's dialect >= 0.7 x native. After the rounds, each path is
checked to have travelled as named (the dialect of the CCs' websocket clients, the SMRF frames
the MQTT backends published, the proxy's body format); lost or dropped messages are reported
with the counters. ``--profile`` adds one round of ``--profile-path`` (default joynr+json) per
transport under cProfile (not counted) and prints the time per owner and per project file and
the top functions (a CC relay path: websocket only).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import version

import uvloop
from _common import (
    WS_OPTIONS,
    Mosquitto,
    MqttProjectSetup,
    Progress,
    ProjectSetup,
    best_rates,
    cancel,
    cc_config,
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
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import LibjoynrConfig
from pyjoynr.programming.system_interfaces import (
    DEFAULT_ROUTING_PARTICIPANT_ID,
    Routing,
    address_struct,
)
from pyjoynr.runtime import smrf
from pyjoynr.runtime.addresses import WebSocketClientAddress
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def, to_wire
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import Reply, Request, decode_payload
from pyjoynr.transports.dialects import encode_init, encode_joynr_init

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
        return label(self.name, self.dialect, self.body)

    def runtime_config(self) -> LibjoynrConfig:
        return LibjoynrConfig(dialect=self.dialect)


def label(name: str, dialect: str, body: BodyFormat) -> str:
    frames = "SMRF" if dialect == JOYNR else "native"
    return f"{name:<15} ({frames} frames, {body.value} bodies)"


PATHS = (Variant("native", NATIVE, BodyFormat.MSGPACK),
         Variant("native+json", NATIVE, BodyFormat.JSON),
         Variant("joynr+msgpack", JOYNR, BodyFormat.MSGPACK),
         Variant("joynr+json", JOYNR, BodyFormat.JSON))
BASELINE = PATHS[0].name
RAW_RELAY, RAW_SMRF_RELAY = "raw relay", "raw SMRF relay"


@dataclass(frozen=True)
class RelayPath:
    """A CC relay path: the clients' frame dialect, the bodies of its frames, the runtime path
    whose push call its frames carry and the raw relay that forwards the same frames."""

    name: str
    dialect: str
    body: BodyFormat
    frames_of: str
    raw: str

    @property
    def label(self) -> str:
        return label(self.name, self.dialect, self.body)


RELAYS = (RelayPath("CC relay native", NATIVE, BodyFormat.MSGPACK, "native", RAW_RELAY),
          RelayPath("CC relay joynr", JOYNR, BodyFormat.JSON, "joynr+json", RAW_SMRF_RELAY))
RELAY_BASELINE = RELAYS[0].name
#: the frames of the CC relays expire this long after they were written (once, at the start)
RELAY_FRAME_TTL_MS = 3_600_000
ROUTING = interface_def(Routing)
CLIENT_ADDRESS = "joynr.system.RoutingTypes.WebSocketClientAddress"
ANSWER_TIMEOUT_S = 10.0


class CcRelay:
    """``async with CcRelay(path, message)``: a CC of its own with two raw websocket clients
    in ``path.dialect`` (no runtime): ``sender`` (sends ``frame``, ``message`` written in that
    dialect) and a receiver that counts the frames it gets in ``progress`` and keeps the last.
    Each client sends its init frame and registers its participant (the message's sender,
    its recipient) with an ``addNextHop`` call to the CC's Routing provider before anything
    else, as a runtime does: native frame and msgpack body, or SMRF frame and JSON body as
    joynr's runtimes write them."""

    cc: ClusterController
    sender: ClientConnection

    def __init__(self, path: RelayPath, message: Message) -> None:
        self.path = path
        self.message = message
        self.frame = encode_frame(message) if path.dialect == NATIVE else smrf.encode(message)
        self.progress = Progress()
        self.last: bytes | str | None = None
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> CcRelay:
        stack = self._stack
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-cc-"))
        self.cc = await stack.enter_async_context(ClusterController(cc_config(data_dir)))
        receiver = await self._client("bench-relay-b", self.message.recipient)
        counting = asyncio.get_running_loop().create_task(self._count(receiver))
        stack.push_async_callback(cancel, counting)
        self.sender = await self._client("bench-relay-a", self.message.sender)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def _client(self, client_id: str, participant_id: str) -> ClientConnection:
        """A connection that said who it is and routed ``participant_id`` to itself."""
        ws = await self._stack.enter_async_context(connect(self.cc.websocket_address.url,
                                                           **WS_OPTIONS))
        native = self.path.dialect == NATIVE
        await ws.send(encode_init(client_id) if native else encode_joynr_init(client_id))
        await ws.send(self._add_next_hop(client_id, participant_id))
        answer = await asyncio.wait_for(ws.recv(), ANSWER_TIMEOUT_S)
        assert isinstance(answer, bytes), f"a text frame: {answer!r}"
        error = (decode_payload(Reply, decode_frame(answer).body).error if native
                 else json.loads(smrf.decode(answer).body).get("error"))
        if error is not None:
            raise RuntimeError(f"addNextHop of {participant_id} failed: {error}")
        return ws

    def _add_next_hop(self, client_id: str, participant_id: str) -> bytes:
        """The frame of ``addNextHop(participant_id, <this connection's address>, false)``."""
        request_id = uuid.uuid4().hex
        address = to_wire(address_struct(WebSocketClientAddress(client_id)))
        expiry = now_ms() + 60_000
        if self.path.dialect == NATIVE:
            method = ROUTING.methods["add_next_hop"]
            return encode_frame(Message(
                MessageType.REQUEST, participant_id, DEFAULT_ROUTING_PARTICIPANT_ID, expiry,
                Request(request_id, method.name, [participant_id, address, False],
                        method.param_datatypes).to_body()))
        body = {"_typeName": "joynr.Request", "methodName": "addNextHop",
                "paramDatatypes": ["String", CLIENT_ADDRESS, "Boolean"],
                "params": [participant_id, {"_typeName": CLIENT_ADDRESS, "id": client_id},
                           False],
                "requestReplyId": request_id}
        return smrf.encode(Message(
            MessageType.REQUEST, participant_id, DEFAULT_ROUTING_PARTICIPANT_ID, expiry,
            json.dumps(body, separators=(",", ":")).encode(),
            custom_headers={"z4": request_id}))

    async def _count(self, ws: ClientConnection) -> None:
        hit = self.progress.hit
        with contextlib.suppress(ConnectionClosed):
            async for frame in ws:
                self.last = frame
                hit()

    def one_round(self, window: int) -> Round:
        frame, sender = self.frame, self.sender

        async def one_round(n: int) -> float:
            return await send_windowed(lambda: sender.send(frame), n, window, self.progress)
        return one_round

    def dropped(self) -> int:
        """Messages the CC dropped or refused (every websocket counter counts a refusal)."""
        return (sum(v for k, v in self.cc.telemetry.counters.items() if k.startswith("dropped-"))
                + sum(self.cc.websocket.counters.values()))

    def check(self, messages: int) -> bool:
        """Print how the path travelled and whether as named: the clients' dialect as the CC
        saw it, the frames arrived as sent, nothing lost or dropped."""
        problems = []
        seen = {client.dialect for client in self.cc.websocket.client_summaries()}
        if seen != {self.path.dialect}:
            problems.append(f"websocket clients spoke {sorted(seen)}")
        if self.last != self.frame:
            problems.append("the frames arrived changed")
        lost, dropped = messages - self.progress.count, self.dropped()
        if lost or dropped:
            problems.append(f"lost {lost:,}, dropped {dropped:,} in the last round, still "
                            f"queued {self.cc.router.queued():,}; counters "
                            f"{dict(self.cc.telemetry.counters)} "
                            f"{dict(self.cc.websocket.counters)}")
        print(f"  {self.path.name}: websocket {'/'.join(sorted(seen))}, frames forwarded "
              f"unchanged: {'as named' if not problems else 'WRONG: ' + '; '.join(problems)}")
        return not problems


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
    """The table of the best rates of the runtime paths, with the ratios to the raw path and to
    native, and the goal of joynr's dialect."""
    print(f"  {'path':<47} {'msg/s':>9} {'us/msg':>7}  {'/raw':>5}  {'/native':>7}")
    for name in (*(p.name for p in PATHS), raw_name):
        rate = best[name]
        label = next((p.label for p in PATHS if p.name == name), name)
        native = (f"{rate / best[BASELINE]:7.2f}" if name != raw_name else "")
        print(f"  {label:<47} {rate:9,.0f} {1e6 / rate:7.1f}  {rate / best[raw_name]:5.2f}  "
              f"{native}".rstrip())
    goals = [f"{p.name} {best[p.name] / best[BASELINE]:4.2f} "
             f"{'met' if best[p.name] / best[BASELINE] >= GOAL else 'MISSED'}"
             for p in PATHS if p.dialect == JOYNR]
    print(f"  goal joynr's dialect / native >= {GOAL}: {', '.join(goals)}")


def relay_summary(best: dict[str, float]) -> None:
    """The table of the CC relay paths: each with its ratio to the raw relay of its frames and
    to ``CC relay native``; the raw SMRF relay; the ratio joynr / native of the CC relay."""
    print("  CC relay (raw websocket clients, no runtime: the CC alone)")
    print(f"  {'path':<47} {'msg/s':>9} {'us/msg':>7}  {'/raw':>5}  {'/native':>7}")
    for path in RELAYS:
        rate = best[path.name]
        print(f"  {path.label:<47} {rate:9,.0f} {1e6 / rate:7.1f}  "
              f"{rate / best[path.raw]:5.2f}  {rate / best[RELAY_BASELINE]:7.2f}")
    rate = best[RAW_SMRF_RELAY]
    print(f"  {RAW_SMRF_RELAY:<47} {rate:9,.0f} {1e6 / rate:7.1f}  {1.0:5.2f}")
    joynr, native = best[RELAYS[1].name], best[RELAY_BASELINE]
    print(f"  CC relay joynr / native: {joynr / native:4.2f} (SMRF frames with JSON bodies / "
          f"native frames with msgpack bodies; {1e6 / joynr - 1e6 / native:+.1f} us/msg)")


async def measure(args: argparse.Namespace, title: str, setups: dict[str, ProjectSetup],
                  raw_name: str, raw: Round, *, relays: Mapping[str, CcRelay] | None = None,
                  raw_smrf: Round | None = None) -> bool:
    """Rounds of every project path and the raw one (and of the CC relay paths and the raw
    SMRF relay when given); print the rounds, the checks, the tables and (``--profile``) a
    profile of one round of ``--profile-path``."""
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
    relays = relays or {}
    rounds.update({name: relay.one_round(args.window) for name, relay in relays.items()})
    if raw_smrf is not None:
        rounds[RAW_SMRF_RELAY] = raw_smrf

    def report(i: int, rates: dict[str, float]) -> None:
        print(f"  round {i}: " + "   ".join(f"{name} {rate:7,.0f}"
                                              for name, rate in rates.items()) + " msg/s")

    try:
        best = await best_rates(rounds, args.messages, args.rounds,
                                warm=min(args.messages, 1_000), report=report)
    except TimeoutError:
        got = ", ".join([*(f"{name}: {s.provider.progress.count:,}"
                           for name, s in setups.items()),
                         *(f"{name}: {r.progress.count:,}" for name, r in relays.items())])
        print(f"  TIMEOUT: a round did not finish; received {got}")
        return False
    await asyncio.sleep(0.2)  # anything extra (duplicates) would arrive now
    ok = all([*(check_path(path, setups[path.name], args.messages) for path in PATHS),
              *(relay.check(args.messages) for relay in relays.values())])
    summary(best, raw_name)
    if relays:
        relay_summary(best)
    if args.profile:
        if args.profile_path in rounds:
            print(f"=== profile of one {args.profile_path} round ({title}) ===")
            await profiled(rounds[args.profile_path](args.messages), by_package=True)
        else:
            print(f"=== no {args.profile_path} path to profile ({title}) ===")
    return ok


def long_lived(message: Message) -> Message:
    """``message`` expiring RELAY_FRAME_TTL_MS from now (its frame is written once)."""
    return dataclasses.replace(message, expiry_date_ms=now_ms() + RELAY_FRAME_TTL_MS)


async def websocket(args: argparse.Namespace) -> bool:
    data = "x" * args.payload
    async with contextlib.AsyncExitStack() as stack:
        setups: dict[str, ProjectSetup] = {}
        for path in PATHS:
            setups[path.name] = await stack.enter_async_context(ProjectSetup(
                runtime_config=path.runtime_config(), body_format=path.body))
        # the CC relays' frames: the push calls of the runtime paths, as their proxies write
        # them (same participantIds, so same sizes), in the relay's dialect
        relays = {path.name: await stack.enter_async_context(CcRelay(path, long_lived(
            setups[path.frames_of].one_way_message(data, path.body)))) for path in RELAYS}
        frames = {path.raw: relays[path.name].frame for path in RELAYS}

        async def raw_relay(frame: bytes) -> Round:
            relay = await stack.enter_async_context(RawRelay())
            sender = relay.sender
            assert sender is not None

            async def raw(n: int) -> float:
                return await send_windowed(lambda: sender.send(frame), n, args.window,
                                           relay.progress)
            return raw

        return await measure(args, f"websocket one-way (A -> CC -> B); {environment()}",
                             setups, RAW_RELAY, await raw_relay(frames[RAW_RELAY]),
                             relays=relays, raw_smrf=await raw_relay(frames[RAW_SMRF_RELAY]))


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
    parser.add_argument("--profile-path", choices=[p.name for p in (*PATHS, *RELAYS)],
                        default="joynr+json",
                        help="the path --profile profiles (default joynr+json; a CC relay "
                             "path: websocket only)")
    args = parser.parse_args()
    check_throughput_options(parser, args)
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

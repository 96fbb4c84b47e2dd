"""Whether a cluster controller and a GCD keep their broker connections through a loaded minute,
beside a bare MQTT client of the same library that does nothing but stay connected.

Usage: .venv/bin/python bench/mqtt_loaded_minute.py [--seconds S] [--hogs N]
                                                     [--keepalive-s K] [--client native|aiomqtt]

A mosquitto broker (/usr/sbin/mosquitto, its notices logged: connects, disconnects, keep-alive
timeouts) is started on a free loopback port. In this process and one uvloop event loop, as
the programs assemble them: a GCD (``GcdService`` on SQLite in a temporary directory, its MQTT
connection with the keep-alive K) and a cluster controller (``ClusterController``, one MQTT
backend on that broker, ``[discovery] gcd`` on, no embedded broker or GCD, ``[mqtt]
keepalive_s`` K), and a libjoynr runtime connected to the CC by websocket, holding one provider
registered GLOBAL (the registration awaited at the GCD). K defaults to the project's default
keep-alive (``[mqtt] keepalive_s``).

Then N CPU hog processes (``python -c 'while True: pass'``, each under ``timeout`` so that it
ends by itself, and stopped at the end) run for S seconds. Meanwhile, once a second, the
runtime asks the CC's Discovery provider for the provider's domain with scope GLOBAL_ONLY and
no cache (``cache_max_age_ms`` 0): the CC asks the GCD over MQTT each time (an MQTT round trip
CC -> mosquitto -> GCD -> mosquitto -> CC); answered / failed and the latency are counted. The
event loop's lag is sampled every 100 ms (how late a 100 ms sleep wakes up: max and p99).

Raw baseline, same run, same loop: one bare session of the CCs' MQTT client (the project's
own ``mqtt5`` client or aiomqtt, through ``open_session``) connected to the same broker with
the same keep-alive, subscribed to nothing, doing nothing; it reconnects when dropped and
counts its disconnects.

At the end, one line each: the CC's and the GCD's MQTT connection counts (1 = never
reconnected), what mosquitto's log says about keep-alive timeouts and disconnects, lookups
answered / failed with their latency, the loop lag, the raw client's disconnects; then a
verdict. The run is bounded (S seconds plus start and stop); it prints figures only, it
asserts no timing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import uvloop
from _common import Mosquitto, help_text  # (bench/, the script's folder)

from pyjoynr.cluster_controller.config import ClusterControllerConfig
from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.libjoynr import (
    DiscoveryQos,
    DiscoveryScope,
    LibjoynrRuntime,
    Provider,
    ProviderQos,
    ProviderScope,
    connect,
    interface,
)
from pyjoynr.runtime.interface import interface_def
from pyjoynr.transports.mqtt.client import MqttSessionError, open_session
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url

HOST = "127.0.0.1"
GBID = "joynrdefaultgbid"
DOMAIN = "bench.loaded"
#: the project's default MQTT keep-alive ([mqtt] keepalive_s)
DEFAULT_KEEPALIVE_S = MqttSettings().keepalive_s
#: how long one lookup may take (its discovery timeout), and the start-up waits
LOOKUP_TIMEOUT_S = 5.0
WAIT_S = 15.0
LAG_INTERVAL_S = 0.1
#: what start-up and shutdown may add to --seconds before the run is cut short
RUN_MARGIN_S = 120
#: a hog outlives the run by at most this (``timeout``), should this process die first
HOG_MARGIN_S = 30


@interface("bench/Loaded", version=(1, 0))
class Loaded:
    async def ping(self) -> str: ...  # type: ignore[empty-body]  # a declaration


class LoadedProvider(Provider, interface=Loaded):
    async def ping(self) -> str:
        return "pong"


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


@dataclass
class Lookups:
    answered: int = 0
    failed: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)


@dataclass
class RawClient:
    """The bare baseline client: connections made, disconnects seen, the last reason."""

    connections: int = 0
    disconnects: int = 0
    last_error: str = ""
    up: asyncio.Event = field(default_factory=asyncio.Event)


def cc_config(data_dir: Path, broker_url: str, keepalive_s: int, client: str
              ) -> ClusterControllerConfig:
    """A CC as the program runs it from its environment: one MQTT backend on the broker, the
    GCD on that backend's GCD topic, websocket on a free loopback port, admin endpoint off."""
    env = {
        "JOYNR_CC__CLUSTER_CONTROLLER__ID": f"bench-loaded-{uuid.uuid4().hex[:8]}",
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(data_dir),
        "JOYNR_CC__WEBSOCKET__HOST": HOST,
        "JOYNR_CC__WEBSOCKET__PORT": "0",
        "JOYNR_CC__MQTT__BACKENDS": f'{{{GBID} = "{broker_url}"}}',
        "JOYNR_CC__MQTT__KEEPALIVE_S": str(keepalive_s),
        "JOYNR_CC__MQTT__CLIENT": client,
        "JOYNR_CC__DISCOVERY__GCD": "true",
        "JOYNR_CC__EMBEDDED_BROKER__ENABLED": "false",
        "JOYNR_CC__EMBEDDED_GCD__ENABLED": "false",
        "JOYNR_CC__ADMIN__ENABLED": "false",
        "JOYNR_CC__ADMIN__PORT": "0",
        "JOYNR_CC__LOGGING__LEVEL": "WARNING",
    }
    return ClusterControllerConfig.load(None, env=env)


async def sample_lag(samples: list[float], stop: asyncio.Event) -> None:
    """How late each 100 ms sleep wakes up (ms), until ``stop``."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(LAG_INTERVAL_S)
        samples.append(max(0.0, (loop.time() - before - LAG_INTERVAL_S) * 1000))


async def look_up_every_second(rt: LibjoynrRuntime, cc: ClusterController, found: Lookups,
                               stop: asyncio.Event) -> None:
    """A GLOBAL_ONLY lookup without cache once a second (the CC asks the GCD each time)."""
    loop = asyncio.get_running_loop()
    name = interface_def(Loaded).name
    qos = DiscoveryQos(cache_max_age_ms=0, discovery_timeout_ms=int(LOOKUP_TIMEOUT_S * 1000),
                       discovery_scope=DiscoveryScope.GLOBAL_ONLY)
    next_at = loop.time()
    while not stop.is_set():
        gcd_calls = cc.discovery.gcd_calls["lookup"]
        started = time.perf_counter()
        try:
            async with asyncio.timeout(LOOKUP_TIMEOUT_S + 1):
                await rt.core.system.discovery_lookup([DOMAIN], name, qos, (),
                                                 int(LOOKUP_TIMEOUT_S * 1000))
            if cc.discovery.gcd_calls["lookup"] == gcd_calls:
                raise RuntimeError("answered without asking the GCD")
            found.answered += 1
            found.latencies_ms.append((time.perf_counter() - started) * 1000)
        except Exception as exc:  # counted and shown, the run goes on
            found.failed += 1
            kind = type(exc).__name__
            found.errors[kind] = found.errors.get(kind, 0) + 1
        now = loop.time()
        next_at = max(next_at + 1.0, now)  # after a lookup of over a second: the next at once
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), next_at - now)


async def stay_connected(broker_url: str, settings: MqttSettings, raw: RawClient,
                         stop: asyncio.Event) -> None:
    """The baseline: one bare session, doing nothing; reconnect when dropped, count it."""
    url = parse_broker_url(broker_url)
    client_id = f"bench-raw-idle-{uuid.uuid4().hex[:8]}"
    while not stop.is_set():
        try:
            async with open_session(url, settings, client_id=client_id) as session:
                raw.connections += 1
                raw.up.set()
                receiving = asyncio.ensure_future(session.receive(lambda topic, payload: None))
                stopping = asyncio.ensure_future(stop.wait())
                await asyncio.wait({receiving, stopping}, return_when=asyncio.FIRST_COMPLETED)
                stopping.cancel()
                if not receiving.done():
                    receiving.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await receiving
                    return
                receiving.result()  # the connection broke: MqttSessionError
                raise MqttSessionError("receive ended")
        except (MqttSessionError, OSError) as exc:
            if raw.connections:
                raw.disconnects += 1
            raw.last_error = str(exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.1)


def start_hogs(count: int, seconds: int) -> list[subprocess.Popen[bytes]]:
    """``count`` busy loops, each ended by ``timeout`` should nobody stop it."""
    bound = str(seconds + HOG_MARGIN_S)
    return [subprocess.Popen(["timeout", "--kill-after=2", bound, sys.executable, "-c",
                              "while True: pass"], stdin=subprocess.DEVNULL)
            for _ in range(count)]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:  # SIGTERM to timeout, which hands it to its child
        if hog.poll() is None:
            hog.terminate()
    for hog in hogs:
        try:
            hog.wait(5)
        except subprocess.TimeoutExpired:
            hog.kill()
            hog.wait()


def broker_log_summary(log_file: Path) -> tuple[int, int, list[str]]:
    """Keep-alive timeouts, disconnects (any kind) and those lines (timeouts first)."""
    text = log_file.read_text(errors="replace") if log_file.exists() else ""
    lines = text.splitlines()
    timeouts = [line for line in lines if "exceeded timeout" in line]
    disconnects = [line for line in lines if "disconnect" in line.lower()]
    others = [line for line in disconnects if line not in timeouts]
    return len(timeouts), len(disconnects), timeouts + others


@dataclass
class Figures:
    """What one run measured (read before anything stopped)."""

    cc_connections: int
    cc_failures: int
    cc_last_error: str
    gcd_connections: int
    gcd_failures: int
    gcd_last_error: str
    timeouts: int
    disconnects: int
    #: the broker's lines of keep-alive timeouts, then its other disconnect lines
    log_lines: list[str]
    gcd_requests: int
    lookups: Lookups
    lags_ms: list[float]
    raw: RawClient


async def measure(args: argparse.Namespace, directory: Path) -> Figures:
    """Start broker, GCD, CC, runtime and the bare client; load the machine for
    ``args.seconds``; return the figures."""
    keepalive = args.keepalive_s
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(
            Mosquitto())
        gcd = await stack.enter_async_context(GcdService(
            GcdSettings(gbid=GBID, broker_url=broker.url, store="sqlite",
                        sqlite_path=directory / "gcd" / "gcd.sqlite",
                        data_dir=directory / "gcd", mqtt_client=args.client),
            mqtt=MqttSettings(client=args.client, keepalive_s=keepalive)))
        await gcd.mqtt.wait_connected(WAIT_S)
        cc = await stack.enter_async_context(ClusterController(cc_config(
            directory / "cc", broker.url, keepalive, args.client)))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        rt = await stack.enter_async_context(connect(cc.websocket_address.url,
                                                     client_id="bench-loaded"))
        await rt.register_provider(DOMAIN, LoadedProvider(),
                                   qos=ProviderQos(scope=ProviderScope.GLOBAL),
                                   await_global_registration=True)
        gcd_received = gcd.mqtt.received
        stop = asyncio.Event()
        raw = RawClient()
        lookups = Lookups()
        lags: list[float] = []
        loop = asyncio.get_running_loop()
        raw_settings = MqttSettings(client=args.client, keepalive_s=keepalive,
                                    session_expiry_s=0)
        raw_task = loop.create_task(stay_connected(broker.url, raw_settings, raw, stop))
        await asyncio.wait_for(raw.up.wait(), WAIT_S)
        print(f"started: broker {HOST}:{broker.port}, GCD and CC connected, provider "
              f"registered at the GCD; hogs on for {args.seconds} s ...", flush=True)
        hogs = start_hogs(args.hogs, args.seconds)
        try:
            tasks = [loop.create_task(sample_lag(lags, stop)),
                     loop.create_task(look_up_every_second(rt, cc, lookups, stop)), raw_task]
            await asyncio.sleep(args.seconds)
            # before anything stops: the log then holds only what happened under load (not
            # the bare client's own DISCONNECT when it stops)
            timeouts, disconnects, log_lines = broker_log_summary(broker.log)
            stop.set()
            async with asyncio.timeout(LOOKUP_TIMEOUT_S + 5):
                await asyncio.gather(*tasks)
        finally:
            stop.set()
            stop_hogs(hogs)
        cc_backend, gcd_backend = cc.mqtt.backends[0], gcd.mqtt.backends[0]
        return Figures(
            cc.mqtt.connection_count(GBID), cc_backend.connect_failures, cc_backend.last_error,
            gcd.mqtt.connection_count(GBID), gcd_backend.connect_failures,
            gcd_backend.last_error, timeouts, disconnects, log_lines,
            gcd.mqtt.received - gcd_received, lookups, lags, raw)


def connection_line(name: str, connections: int, failures: int, last_error: str) -> str:
    return (f"{name} MQTT connections: {connections} (1 = never reconnected), failed attempts "
            f"{failures}" + (f", last error: {last_error}" if last_error else ""))


def report(args: argparse.Namespace, f: Figures) -> bool:
    """Print the figures, one line each, and the verdict; whether both kept their
    connections and every lookup was answered."""
    lat, lookups, raw = f.lookups.latencies_ms, f.lookups, f.raw
    print(connection_line("CC ", f.cc_connections, f.cc_failures, f.cc_last_error))
    print(connection_line("GCD", f.gcd_connections, f.gcd_failures, f.gcd_last_error))
    print(f"mosquitto log: {f.timeouts} 'exceeded timeout', {f.disconnects} line(s) with "
          "'disconnect'" + "".join(f"\n    {line}" for line in f.log_lines[:10]))
    print(f"GCD lookups through the CC: {lookups.answered} answered, {lookups.failed} failed"
          + (f" {lookups.errors}" if lookups.errors else "")
          + f"; latency p50 {percentile(lat, 0.5):.1f} ms, p99 {percentile(lat, 0.99):.1f} ms, "
          f"max {max(lat, default=float('nan')):.1f} ms; GCD requests received "
          f"{f.gcd_requests}")
    print(f"event loop lag ({len(f.lags_ms)} samples every {LAG_INTERVAL_S * 1000:.0f} ms): "
          f"max {max(f.lags_ms, default=float('nan')):.1f} ms, p99 "
          f"{percentile(f.lags_ms, 0.99):.1f} ms")
    print(f"raw baseline, a bare {args.client} client doing nothing, keep-alive "
          f"{args.keepalive_s} s: {raw.disconnects} disconnect(s), {raw.connections} "
          "connection(s)" + (f", last error: {raw.last_error}" if raw.last_error else ""))
    kept = (f.cc_connections == 1 and f.gcd_connections == 1 and f.timeouts == 0
            and lookups.failed == 0)
    if kept:
        verdict = "KEPT: CC and GCD stayed connected, every lookup answered"
    elif raw.disconnects:
        verdict = ("LOST, and the bare client lost its connection too: the loop or the "
                   "machine starved every client")
    else:
        verdict = "LOST while the bare client stayed connected: the project's side"
    print(f"verdict: {verdict}", flush=True)
    return kept


async def run(args: argparse.Namespace) -> int:
    print(f"MQTT through a loaded minute: {args.seconds} s, {args.hogs} CPU hog(s), keep-alive "
          f"{args.keepalive_s} s (project default {DEFAULT_KEEPALIVE_S} s), MQTT client "
          f"{args.client}; Python {sys.version.split()[0]}, uvloop {version('uvloop')}, "
          f"{Mosquitto.version()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-loaded-") as tmp:
        # the whole run, start and stop included, ends by itself
        async with asyncio.timeout(args.seconds + RUN_MARGIN_S):
            figures = await measure(args, Path(tmp))
    return 0 if report(args, figures) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--seconds", type=int, default=60, help="seconds under load")
    parser.add_argument("--hogs", type=int, default=4, help="CPU hog processes")
    parser.add_argument("--keepalive-s", type=int, default=DEFAULT_KEEPALIVE_S,
                        help="MQTT keep-alive (s) of the CC, the GCD and the bare client "
                             f"(default: the project's, {DEFAULT_KEEPALIVE_S})")
    parser.add_argument("--client", choices=("native", "aiomqtt"), default="native",
                        help="MQTT client of the CC, the GCD and the bare client")
    args = parser.parse_args()
    if args.seconds < 1 or args.hogs < 0 or args.keepalive_s < 1:
        parser.error("need --seconds >= 1, --hogs >= 0, --keepalive-s >= 1")
    logging.basicConfig(level=logging.WARNING,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

"""A simulated fleet's registration storm against a GCD tier: every cluster controller comes
back at once, calls ``removeStale``, adds its providers with their GBIDs, touches them at an
interval and looks others up; beside the raw baseline of the same run.

Usage: PYTHONPATH=. .venv/bin/python bench/fleet.py [--ccs N] [--providers-per-cc P]
           [--instances I] [--touch-interval S] [--lookups L] [--seconds S] [--drivers D]
           [--connect-window W] [--call-timeout S] [--curve] [--curve-limit N]
           [--profile]

The tier: a throwaway PostgreSQL server (pyjoynr/testing/postgres.PostgresServer, durability
off) and I GCD instances (default 3), each a process of its own (``python -m pyjoynr.gcd``,
store postgres, one cluster), each in a backend of its own (GBIDs ``joynrdefaultgbid``,
``fleet-gbid-1``, ...) with one mosquitto per backend (pyjoynr/testing/brokers.py): the
deployment where every instance can be asked by itself, so that "visible in every instance"
is checked by asking each.

A simulated cluster controller is one MQTT 5 connection of this project's native MQTT client
(transports.mqtt.client.open_session), many per driver process (D driver processes, default 2:
one core cannot drive 10,000 of them). It speaks to the GCD exactly as a joynr cluster
controller does: client id its cluster controller id, subscribed (QoS 1) to
``joynr/cc/<id>/#``, each call an SMRF frame with a JSON body published with QoS 1 to
``discoverydirectory_channelid/low``, replyTo ``joynr/cc/<id>`` in its backend, the custom
header ``gb`` (MQTT user property ``c-gb``) naming its backend's GBID. CC ``i`` is in backend
``i mod I``; its storm:

1. connect (at most W connects in flight per driver: a real fleet's reconnects are spread by
   their backoff too), subscribe;
2. ``removeStale(ccId, <storm start>)``;
3. ``add(GlobalDiscoveryEntry, [gbid])`` of its P providers, all at once (domain
   ``<run>-d<i>``, interface ``fleet/Radio``);
4. L lookups, alternating ``lookup(domains, interface, gbids)`` of another CC's domain and
   ``lookup(participantId, gbids)`` of another CC's provider (an answer that it is not there
   yet counts as answered: the storm is still on);
5. ``touch(ccId, participantIds)`` every ``--touch-interval`` s until ``--seconds`` after the
   start.

Every call's answer is counted; a call unanswered within ``--call-timeout`` is lost, and so is
every call of a cluster controller that could not connect or on a connection the broker
closed; an add answered with an error (the GCD could not store it) is counted apart.
Meanwhile this process asks each instance (a checker connection on its broker) for the
fleet's domains, 50 at a time (32 calls at once), until every provider is in every
instance's answers or the storm's calls ended a call timeout and 30 s ago: "visible" is
when the last one showed up (polled: the pass that found it ends at most one pass after it
became visible).

The baseline ("raw upserts"): the same N x P rows written straight to PostgreSQL as plain
one-row upserts (INSERT ... ON CONFLICT DO UPDATE, no transaction around, no version) by 16
connections, into a table like the store's, in the same run: what the database alone gives
for those writes. The storm's figure is its "done" time (every add answered and visible in
every instance); the ratio is storm / raw.

Resources: RSS (peak) and CPU (average over the storm and the busiest 1 s sample, in cores)
of each GCD instance, each broker, PostgreSQL (all its processes) and the drivers, sampled
from /proc; PostgreSQL's commit rate (pg_stat_database). ``--curve``: the storm at 1k, 2k,
5k, 10k, ... cluster controllers (each a fresh tier) until ``--curve-limit`` or until a point
loses a call. ``--profile``: instance 0 runs under cProfile; its top functions by own time are
printed after the storm.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import pstats
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import uvloop
from _common import Mosquitto, help_text, setup_logging

from pyjoynr.gcd.interface import GCD_PARTICIPANT_ID, GCD_TOPIC, GlobalCapabilitiesDirectory
from pyjoynr.gcd.store import COLUMNS
from pyjoynr.programming.discovery_types import (
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.system_interfaces import address_to_json
from pyjoynr.runtime import smrf
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.bodies import BodyFormat, decode_body, encode_body, schema_of
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def, to_wire
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import Reply, Request
from pyjoynr.testing.postgres import PostgresServer
from pyjoynr.transports.mqtt.client import MqttSession, MqttSessionError, open_session
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GBID = "joynrdefaultgbid"
INTERFACE = "fleet/Radio"
TOPIC_PREFIX = "joynr/cc/"
GBID_PROPERTY = "c-gb"
#: domains per visibility lookup (with 10 providers each: 500 entries, ~250 KB of JSON)
CHECK_DOMAINS = 50
#: visibility lookups in flight per instance
CHECK_WINDOW = 32
#: connections writing the raw baseline
RAW_WRITERS = 16
CURVE = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000)
#: the goals of a 10,000 x 10 storm on 3 instances
GOAL_DONE_S = 10.0
GOAL_LOOKUP_P99_MS = 50.0
PROGRESS_S = 2.0
METHODS = interface_def(GlobalCapabilitiesDirectory).methods
SCHEMA = schema_of(interface_def(GlobalCapabilitiesDirectory))


def gbid_of(backend: int) -> str:
    return DEFAULT_GBID if backend == 0 else f"fleet-gbid-{backend}"


def cc_id(run: str, i: int) -> str:
    return f"{run}-cc-{i:06}"


def domain_of(run: str, i: int) -> str:
    return f"{run}-d{i}"


def participant_of(run: str, i: int, k: int) -> str:
    return f"{run}-p{i}-{k}"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


# ---------------------------------------------------------------------- one joynr-like caller


class Caller:
    """One MQTT connection speaking to the GCD as a joynr cluster controller does: SMRF
    requests with JSON bodies to the GCD topic, replies on its own topic, matched by request
    id (any number outstanding)."""

    def __init__(self, session: MqttSession, ident: str, gbid: str, ttl_ms: int) -> None:
        self.session = session
        self.ident = ident
        self.gbid = gbid
        self.ttl_ms = ttl_ms
        self.reply_to = MqttAddress(gbid, TOPIC_PREFIX + ident)
        self.pending: dict[str, asyncio.Future[Reply]] = {}
        self.undecodable = 0

    def on_message(self, topic: str, payload: bytes) -> None:
        try:
            reply = decode_body(Reply, smrf.decode(payload).body, schema=SCHEMA)
        except Exception:  # (counted: a reply this caller cannot read)
            self.undecodable += 1
            return
        future = self.pending.pop(reply.request_reply_id, None)
        if future is not None and not future.done():
            future.set_result(reply)

    async def open(self) -> None:
        await self.session.subscribe(f"{TOPIC_PREFIX}{self.ident}/#", 1)

    async def call(self, method: str, params: list[Any], timeout_s: float) -> Reply:
        """The reply to one call (TimeoutError when none comes in time)."""
        found = METHODS[method]
        rid = uuid.uuid4().hex
        body = encode_body(Request(rid, found.name, params, found.param_datatypes),
                           BodyFormat.JSON, schema=SCHEMA)
        frame = smrf.encode(Message(
            MessageType.REQUEST, self.ident, GCD_PARTICIPANT_ID, now_ms() + self.ttl_ms, body,
            reply_to=self.reply_to, custom_headers={"gb": self.gbid}))
        future = self.pending[rid] = asyncio.get_running_loop().create_future()
        try:
            await self.session.publish(f"{GCD_TOPIC}/low", frame, 1, self.ttl_ms // 1000,
                                       user_properties=((GBID_PROPERTY, self.gbid),))
            return await asyncio.wait_for(future, timeout_s)
        finally:
            self.pending.pop(rid, None)


def mqtt_settings() -> MqttSettings:
    return MqttSettings(backends={}, session_expiry_s=0)


# ---------------------------------------------------------------------- a driver process


@dataclass
class DriverResult:
    calls: int = 0
    answered: int = 0
    lost: int = 0
    errors: int = 0
    connect_failed: int = 0
    adds_answered: int = 0
    #: adds answered with an error (the GCD could not store them)
    add_errors: int = 0
    last_add_s: float = 0.0
    lookups_ms: list[float] = field(default_factory=list)
    lookups_found: int = 0
    #: calls that failed because their CC's connection had ended (counted lost too)
    broken: int = 0


async def drive(spec: dict[str, Any]) -> DriverResult:  # noqa: PLR0915
    """Run this driver's cluster controllers (``spec``: from the orchestrating process)."""
    run, ppc, total = spec["run"], spec["ppc"], spec["ccs"]
    brokers: list[str] = spec["brokers"]
    timeout_s: float = spec["call_timeout_s"]
    print("ready", flush=True)  # then the start time on stdin: every driver starts at once
    start_wall = float(await asyncio.to_thread(sys.stdin.readline))
    start_ms = int(start_wall * 1000)
    result = DriverResult()
    window = asyncio.Semaphore(spec["connect_window"])
    settings = mqtt_settings()
    rng = random.Random(spec["lo"])
    calls_per_cc = 1 + ppc + spec["lookups"]
    touches = (int(spec["seconds"] // spec["touch_interval_s"])
               if spec["touch_interval_s"] > 0 else 0)
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, start_wall - time.time()))
    started = loop.time()

    def elapsed() -> float:
        return loop.time() - started

    async def answered(call: Callable[[], Any]) -> Reply | None:
        result.calls += 1
        try:
            reply: Reply = await call()
        except TimeoutError:
            result.lost += 1
            return None
        except (MqttSessionError, OSError):  # the broker closed the connection
            result.lost += 1
            result.broken += 1
            return None
        result.answered += 1
        if reply.error is not None:
            result.errors += 1
        return reply

    async def one_cc(i: int) -> None:
        ident, backend = cc_id(run, i), i % len(brokers)
        gbid = gbid_of(backend)
        address = address_to_json(MqttAddress(gbid, TOPIC_PREFIX + ident))
        try:
            async with window:
                stack = AsyncExitStack()
                session = await stack.enter_async_context(open_session(
                    parse_broker_url(brokers[backend]), settings, client_id=ident))
                caller = Caller(session, ident, gbid, int(timeout_s * 1000))
                receiving = loop.create_task(session.receive(caller.on_message))
                await caller.open()
        except Exception:  # (counted: every call of this CC is lost)
            result.connect_failed += 1
            result.calls += calls_per_cc + touches
            result.lost += calls_per_cc + touches
            return
        try:
            await answered(lambda: caller.call("remove_stale", [ident, start_ms], timeout_s))
            pids = [participant_of(run, i, k) for k in range(ppc)]

            async def add(pid: str) -> None:
                now = now_ms()
                entry = to_wire(GlobalDiscoveryEntry(
                    Version(1, 0), domain_of(run, i), INTERFACE, pid,
                    ProviderQos(scope=ProviderScope.GLOBAL), now, now + 3_600_000, "", address))
                reply = await answered(lambda: caller.call("add_in_backends",
                                                           [entry, [gbid]], timeout_s))
                if reply is not None:
                    result.adds_answered += 1
                    result.add_errors += reply.error is not None
                    result.last_add_s = max(result.last_add_s, elapsed())

            await asyncio.gather(*(add(pid) for pid in pids))
            for n in range(spec["lookups"]):
                other = rng.randrange(total)
                if n % 2 == 0:
                    method, params = "lookup_in_backends", [[domain_of(run, other)], INTERFACE,
                                                            [gbid_of(other % len(brokers))]]
                else:
                    method, params = "lookup_participant_in", [
                        participant_of(run, other, rng.randrange(ppc)),
                        [gbid_of(other % len(brokers))]]
                sent = time.perf_counter()
                reply = await answered(
                    lambda m=method, p=params: caller.call(m, p, timeout_s))  # type: ignore[misc]
                if reply is not None:
                    result.lookups_ms.append((time.perf_counter() - sent) * 1000)
                    result.lookups_found += reply.error is None
            for n in range(touches):
                await asyncio.sleep(max(0.0, (n + 1) * spec["touch_interval_s"] - elapsed()))
                await answered(lambda: caller.call("touch_participants", [ident, pids],
                                                   timeout_s))
        finally:
            receiving.cancel()
            with contextlib.suppress(asyncio.CancelledError, MqttSessionError, OSError):
                await receiving
            with contextlib.suppress(MqttSessionError, OSError):
                await stack.aclose()

    async def progress() -> None:
        while True:
            await asyncio.sleep(PROGRESS_S)
            print(f"    driver {spec['lo']}-{spec['hi']}: {elapsed():5.1f} s, "
                  f"{result.adds_answered:,}/{(spec['hi'] - spec['lo']) * ppc:,} adds answered, "
                  f"{result.answered:,} answers, {result.lost} lost", file=sys.stderr, flush=True)

    reporter = loop.create_task(progress())
    try:
        await asyncio.gather(*(one_cc(i) for i in range(spec["lo"], spec["hi"])))
    finally:
        reporter.cancel()
    return result


def driver_main(spec_json: str) -> int:
    setup_logging()
    spec = json.loads(spec_json)
    result = uvloop.run(drive(spec))
    print(json.dumps(vars(result)), flush=True)
    return 0


# ---------------------------------------------------------------------- resources


def read_stat(pid: int) -> tuple[float, int]:
    """CPU seconds and RSS bytes of a process (0, 0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks, int(fields[21]) * os.sysconf("SC_PAGE_SIZE")


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return found


class Sampler:
    """CPU and RSS of named groups of processes, every ``interval_s``: the average cores over
    the run, the busiest sample's cores, the peak RSS (a group's processes summed: for
    PostgreSQL the shared buffers count once per process that touched them)."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]], interval_s: float = 1.0
                 ) -> None:
        self.groups = groups
        self.interval_s = interval_s
        self.peak_rss: dict[str, int] = dict.fromkeys(groups, 0)
        self.peak_cores: dict[str, float] = dict.fromkeys(groups, 0.0)
        self.cpu: dict[str, dict[int, float]] = {name: {} for name in groups}
        self.first: dict[str, dict[int, float]] = {name: {} for name in groups}
        self.started = self.ended = 0.0

    def sample(self) -> dict[str, tuple[float, int]]:
        now: dict[str, tuple[float, int]] = {}
        for name, pids_of in self.groups.items():
            cpu, rss = 0.0, 0
            for pid in pids_of():
                c, r = read_stat(pid)
                if not r:  # gone: its last figures stay
                    continue
                self.first[name].setdefault(pid, c)
                self.cpu[name][pid] = c
                rss += r
            cpu = sum(self.cpu[name].values()) - sum(self.first[name].values())
            self.peak_rss[name] = max(self.peak_rss[name], rss)
            now[name] = (cpu, rss)
        return now

    async def run(self, line: Callable[[dict[str, float]], None]) -> None:
        self.started = last_t = time.monotonic()
        last = self.sample()
        while True:
            await asyncio.sleep(self.interval_s)
            now_t = time.monotonic()
            now = self.sample()
            cores = {name: (now[name][0] - last[name][0]) / (now_t - last_t) for name in now}
            for name, c in cores.items():
                self.peak_cores[name] = max(self.peak_cores[name], c)
            self.ended, last, last_t = now_t, now, now_t
            line(cores)

    def average_cores(self, name: str) -> float:
        wall = max(1e-9, self.ended - self.started)
        return (sum(self.cpu[name].values()) - sum(self.first[name].values())) / wall


# ---------------------------------------------------------------------- the tier


class GcdProcess:
    def __init__(self, directory: Path, index: int, broker_url: str, *, dsn: str,
                 gbids: list[str], run: str, profiled: bool = False) -> None:
        self.directory = directory / f"gcd-{index}"
        #: cProfile's output when the instance runs under it
        self.profile = self.directory / "gcd.prof" if profiled else None
        self.directory.mkdir(parents=True)
        self.log = self.directory / "gcd.log"
        self.config = self.directory / "gcd.toml"
        self.config.write_text(
            "[gcd]\n"
            f'gbid = "{gbids[index]}"\nbroker_url = "{broker_url}"\n'
            f"valid_gbids = {json.dumps(gbids)}\n"
            f'store = "postgres"\npostgres_dsn = "{dsn}"\n'
            f'instance_id = "fleet-{index}"\ndata_dir = "{self.directory}"\n'
            f'client_id = "gcd-{run}-{index}"\ncluster_name = "fleet"\n'
            "[admin]\nenabled = false\n[logging]\nlevel = \"WARNING\"\n")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with open(self.log, "wb") as out:
            profiler = ([] if self.profile is None
                        else ["-m", "cProfile", "-o", str(self.profile)])
            self.proc = subprocess.Popen(
                [sys.executable, *profiler, "-m", "pyjoynr.gcd", "--config", str(self.config)],
                cwd=self.directory, env=env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)

    async def stop(self) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.terminate()
        try:
            return await asyncio.to_thread(self.proc.wait, 30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None

    def output(self) -> str:
        return self.log.read_text(errors="replace")


async def ready(urls: list[str], gbids: list[str], timeout_s: float = 60.0) -> None:
    """Until each instance answers a lookup through its broker."""
    deadline = time.monotonic() + timeout_s
    for k, url in enumerate(urls):
        async with open_session(parse_broker_url(url), mqtt_settings(),
                                client_id=f"fleet-ready-{uuid.uuid4().hex[:8]}") as session:
            caller = Caller(session, f"fleet-ready-{k}", gbids[k], 5_000)
            receiving = asyncio.get_running_loop().create_task(session.receive(caller.on_message))
            await caller.open()
            try:
                while True:
                    with contextlib.suppress(TimeoutError):
                        await caller.call("lookup_participant_in", ["nobody", [gbids[k]]], 0.5)
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"GCD instance {k} did not answer in {timeout_s} s")
            finally:
                receiving.cancel()


async def check_visible(urls: list[str], gbids: list[str], run: str, ccs: int, *, ppc: int,
                        deadline: list[float]) -> tuple[list[float | None], int]:
    """Ask every instance for the fleet's domains until each shows every provider: the
    seconds (from the call) until each instance showed all (None: not by ``deadline[0]``,
    loop time, which the caller sets once the storm's calls have ended) and the visibility
    lookups made."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    lookups = 0

    async def one(k: int) -> float | None:
        nonlocal lookups
        async with open_session(parse_broker_url(urls[k]), mqtt_settings(),
                                client_id=f"fleet-check-{run}-{k}") as session:
            caller = Caller(session, f"fleet-check-{run}-{k}", gbids[k], 30_000)
            receiving = loop.create_task(session.receive(caller.on_message))
            await caller.open()
            pending = [list(range(s, min(s + CHECK_DOMAINS, ccs)))
                       for s in range(0, ccs, CHECK_DOMAINS)]
            window = asyncio.Semaphore(CHECK_WINDOW)
            try:
                while pending and loop.time() < deadline[0]:
                    async def ask(batch: list[int]) -> list[int]:
                        nonlocal lookups
                        async with window:
                            lookups += 1
                            try:
                                reply = await caller.call("lookup_in_backends", [
                                    [domain_of(run, i) for i in batch], INTERFACE, gbids], 30.0)
                            except TimeoutError:
                                return batch
                        if reply.error is not None or not reply.response:
                            return batch
                        seen: dict[str, int] = {}
                        for entry in reply.response[0]:
                            seen[entry["domain"]] = seen.get(entry["domain"], 0) + 1
                        return [i for i in batch if seen.get(domain_of(run, i), 0) < ppc]

                    left = await asyncio.gather(*(ask(b) for b in pending))
                    pending = [b for b in left if b]
                    if pending:
                        await asyncio.sleep(0.2)
            finally:
                receiving.cancel()
            return None if pending else loop.time() - started

    return list(await asyncio.gather(*(one(k) for k in range(len(urls))))), lookups


# ---------------------------------------------------------------------- the raw baseline


async def raw_upserts(dsn: str, run: str, ccs: int, ppc: int) -> float:
    """Seconds for the storm's rows as plain one-row upserts by RAW_WRITERS connections."""
    table = "fleet_raw_entries"
    columns = [*COLUMNS, "version", "bucket", "row_hash"]
    upsert = (f"INSERT INTO {table} ({', '.join(columns)}) "
              f"VALUES ({', '.join(f'${i}' for i in range(1, len(columns) + 1))}) "
              "ON CONFLICT (gbid, participant_id) DO UPDATE SET "
              + ", ".join(f"{c} = EXCLUDED.{c}" for c in columns[2:]))
    conns = [await asyncpg.connect(dsn) for _ in range(RAW_WRITERS)]
    try:
        await conns[0].execute(f"DROP TABLE IF EXISTS {table}")
        await conns[0].execute(f"CREATE TABLE {table} (LIKE discovery_entries INCLUDING ALL)")
        now = now_ms()
        rows = []
        for i in range(ccs):
            gbid = gbid_of(i % 3)
            address = address_to_json(MqttAddress(gbid, TOPIC_PREFIX + cc_id(run, i)))
            for k in range(ppc):
                row = {"gbid": gbid, "participant_id": participant_of(run, i, k),
                       "domain": domain_of(run, i), "interface_name": INTERFACE,
                       "major_version": 1, "minor_version": 0, "priority": 1,
                       "scope": "GLOBAL", "supports_on_change": False,
                       "custom_parameters": "[]", "last_seen_ms": now,
                       "expiry_ms": now + 3_600_000, "public_key_id": "", "address": address,
                       "topic": TOPIC_PREFIX + cc_id(run, i),
                       "cluster_controller_id": cc_id(run, i), "version": 1, "bucket": 0,
                       "row_hash": 0}
                rows.append(tuple(row.get(c, "") for c in columns))
        started = time.perf_counter()

        async def writer(w: int) -> None:
            for row in rows[w::RAW_WRITERS]:
                await conns[w].execute(upsert, *row)

        await asyncio.gather(*(writer(w) for w in range(RAW_WRITERS)))
        return time.perf_counter() - started
    finally:
        for conn in conns:
            await conn.close()


# ---------------------------------------------------------------------- one storm


@dataclass
class StormFigures:
    ccs: int
    ppc: int
    instances: int
    load: str
    calls: int = 0
    answered: int = 0
    lost: int = 0
    errors: int = 0
    connect_failed: int = 0
    broken: int = 0
    adds: int = 0
    adds_answered: int = 0
    add_errors: int = 0
    last_add_s: float = 0.0
    visible_s: list[float | None] = field(default_factory=list)
    check_lookups: int = 0
    lookups_ms: list[float] = field(default_factory=list)
    lookups_found: int = 0
    raw_s: float = 0.0
    commits_per_s: float = 0.0
    resources: list[str] = field(default_factory=list)
    #: CPU seconds of the GCD instances together, and of every process of the run
    gcd_cpu_s: float = 0.0
    all_cpu_s: float = 0.0
    wall_s: float = 0.0
    driver_failures: list[str] = field(default_factory=list)

    @property
    def all_visible(self) -> bool:
        return bool(self.visible_s) and all(v is not None for v in self.visible_s)

    @property
    def done_s(self) -> float | None:
        if not self.all_visible or self.adds_answered < self.adds or self.add_errors:
            return None
        return max([self.last_add_s, *(v for v in self.visible_s if v is not None)])


async def storm(args: argparse.Namespace, ccs: int) -> StormFigures:  # noqa: PLR0915
    """A fresh tier (PostgreSQL, brokers, instances), the storm of ``ccs`` cluster
    controllers, the baseline."""
    instances, ppc = args.instances, args.providers_per_cc
    figures = StormFigures(ccs, ppc, instances, uptime())
    print(f"\n=== storm: {ccs:,} cluster controllers x {ppc} providers, {instances} "
          f"instance(s), {args.drivers} driver(s)\n  {figures.load}", flush=True)
    run = f"f{uuid.uuid4().hex[:6]}"
    gbids = [gbid_of(k) for k in range(instances)]
    async with AsyncExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-fleet-")))
        pg = await stack.enter_async_context(PostgresServer())
        dsn = await pg.create_database("fleet")
        brokers = [await stack.enter_async_context(Mosquitto()) for _ in range(instances)]
        urls = [b.url for b in brokers]
        gcds = [GcdProcess(directory, k, urls[k], dsn=dsn, gbids=gbids, run=run,
                           profiled=args.profile and k == 0) for k in range(instances)]
        for gcd in gcds:
            gcd.start()
            stack.push_async_callback(gcd.stop)
        try:
            await ready(urls, gbids)
        except RuntimeError:
            for gcd in gcds:
                print(gcd.output()[-2000:])
            raise
        postmaster = int((pg.data_dir / "postmaster.pid").read_text().split()[0])
        drivers: list[asyncio.subprocess.Process] = []
        groups: dict[str, Callable[[], list[int]]] = {
            **{f"gcd-{k}": (lambda g=g: [g.proc.pid] if g.proc else [])  # type: ignore[misc]
               for k, g in enumerate(gcds)},
            **{f"mosquitto-{k}": (lambda b=b: [b.process.pid] if b.process else [])
               for k, b in enumerate(brokers)},
            "postgres": lambda: [postmaster, *children_of(postmaster)],
            "drivers": lambda: [d.pid for d in drivers],
        }
        sampler = Sampler(groups)
        stats = await asyncpg.connect(dsn)
        stack.push_async_callback(stats.close)
        commits_before = await stats.fetchval(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        share = -(-ccs // args.drivers)
        for d in range(args.drivers):
            lo, hi = d * share, min(ccs, (d + 1) * share)
            if lo >= hi:
                continue
            spec = {"run": run, "ppc": ppc, "ccs": ccs, "lo": lo, "hi": hi, "brokers": urls,
                    "lookups": args.lookups, "touch_interval_s": args.touch_interval,
                    "seconds": args.seconds, "call_timeout_s": args.call_timeout,
                    "connect_window": args.connect_window}
            drivers.append(await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--driver", json.dumps(spec), cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE))
        for d in drivers:  # each has imported everything and waits
            assert d.stdout is not None
            if (await asyncio.wait_for(d.stdout.readline(), 120)).strip() != b"ready":
                raise RuntimeError("a driver did not start")
        start_at = time.time() + 0.1
        for d in drivers:
            assert d.stdin is not None
            d.stdin.write(f"{start_at}\n".encode())
            await d.stdin.drain()

        def progress(cores: dict[str, float]) -> None:
            busy = ", ".join(f"{name} {c:.2f}" for name, c in cores.items())
            print(f"  {time.time() - start_at:5.1f} s  cores: {busy}", flush=True)

        await asyncio.sleep(max(0.0, start_at - time.time()))
        sampling = asyncio.get_running_loop().create_task(sampler.run(progress))
        deadline = [float("inf")]  # until the storm's calls have ended, then a grace
        visible_task = asyncio.get_running_loop().create_task(check_visible(
            urls, gbids, run, ccs, ppc=ppc, deadline=deadline))
        outputs = await asyncio.gather(*(d.communicate() for d in drivers))
        deadline[0] = asyncio.get_running_loop().time() + args.call_timeout + 30
        figures.visible_s, figures.check_lookups = await visible_task
        sampling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampling
        commits = await stats.fetchval(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        figures.commits_per_s = (commits - commits_before) / max(
            1e-9, sampler.ended - sampler.started)
        for d, (out, _) in zip(drivers, outputs, strict=True):
            lines = out.decode(errors="replace").strip().splitlines()
            if d.returncode != 0 or not lines:
                figures.driver_failures.append(f"driver exited {d.returncode}")
                continue
            got = json.loads(lines[-1])
            for name in ("calls", "answered", "lost", "errors", "connect_failed",
                         "adds_answered", "lookups_found", "broken", "add_errors"):
                setattr(figures, name, getattr(figures, name) + got[name])
            figures.last_add_s = max(figures.last_add_s, got["last_add_s"])
            figures.lookups_ms += got["lookups_ms"]
        figures.adds = ccs * ppc
        figures.wall_s = sampler.ended - sampler.started
        for name in groups:
            cpu = sampler.average_cores(name) * figures.wall_s
            figures.all_cpu_s += cpu
            if name.startswith("gcd-"):
                figures.gcd_cpu_s += cpu
            figures.resources.append(
                f"  {name:<12} RSS peak {sampler.peak_rss[name] / 2**20:8.1f} MiB   CPU "
                f"{sampler.average_cores(name):5.2f} cores on average, "
                f"{sampler.peak_cores[name]:5.2f} in the busiest second")
        for k, gcd in enumerate(gcds):
            lines = gcd.output().splitlines()
            errors = sum(" ERROR " in line for line in lines)
            warnings = sum(" WARNING " in line for line in lines)
            if errors or warnings:
                figures.resources.append(f"  gcd-{k}: {errors} ERROR and {warnings} WARNING "
                                         "lines in its log, the first ones:")
                figures.resources += [f"    {line[:300]!r}" for line in lines
                                      if " ERROR " in line or " WARNING " in line][:4]
            if gcd.proc is not None and gcd.proc.poll() is not None:
                figures.driver_failures.append(f"GCD instance {k} exited "
                                               f"{gcd.proc.returncode}: {gcd.output()[-1500:]}")
        for k, broker in enumerate(brokers):  # why a broker closed connections (its log)
            log = broker.log.read_text(errors="replace")
            timeouts = log.count("exceeded timeout")
            if timeouts or "error" in log.lower():
                figures.resources.append(
                    f"  mosquitto-{k}: {timeouts:,} clients closed for their keep-alive, "
                    f"{log.lower().count('error')} error lines")
        figures.raw_s = await raw_upserts(dsn, run, ccs, ppc)
        if gcds[0].profile is not None:
            await gcds[0].stop()
            print_profile(gcds[0].profile)
    report(figures)
    return figures


def print_profile(path: Path) -> None:
    """The top 25 functions by own time of instance 0 over its whole run."""
    if not path.exists():
        print("  (no profile of instance 0: it did not stop cleanly)")
        return
    out = io.StringIO()
    pstats.Stats(str(path), stream=out).sort_stats("tottime").print_stats(25)
    print("  --- instance 0, profile, top 25 by tottime ---")
    print(out.getvalue())


def fmt_s(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f} s"


def report(f: StormFigures) -> None:
    done = f.done_s
    p50, p99 = percentile(f.lookups_ms, 0.5), percentile(f.lookups_ms, 0.99)
    print(f"  load before: {f.load}\n  now:         {uptime()}")
    print(f"  calls {f.calls:,}, answered {f.answered:,}, lost {f.lost}"
          f" (of them {f.broken:,} on connections the broker closed, and the calls of "
          f"{f.connect_failed} CCs that could not connect), error answers "
          f"{f.errors:,} (lookups of providers not there yet, among them)")
    print(f"  adds answered {f.adds_answered:,}/{f.adds:,} ({f.add_errors:,} of them with an "
          f"error), the last after "
          f"{f.last_add_s:.2f} s")
    print("  visible in instance " + ", ".join(
        f"{k}: {fmt_s(v)}" for k, v in enumerate(f.visible_s))
        + f" ({f.check_lookups:,} visibility lookups)")
    print(f"  every add visible in every instance: {'yes' if f.all_visible else 'NO'}")
    print(f"  lookups during the storm: {len(f.lookups_ms):,}, found {f.lookups_found:,}, "
          f"p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    print(f"  PostgreSQL commits/s over the storm: {f.commits_per_s:,.0f}")
    print(*f.resources, sep="\n")
    print(f"  GCD tier: {f.gcd_cpu_s:.1f} CPU s for {f.answered + f.check_lookups:,} answers "
          f"({1000 * f.gcd_cpu_s / max(1, f.answered + f.check_lookups):.2f} ms a call); every "
          f"process of the run: {f.all_cpu_s / max(1e-9, f.wall_s):.2f} of "
          f"{os.cpu_count()} cores over {f.wall_s:.1f} s (the rest: other work)")
    for failure in f.driver_failures:
        print(f"  FAILURE: {failure}")
    rows = f.ccs * f.ppc
    print(f"  {'figure':<52} {'storm':>10} {'raw upserts':>12} {'ratio':>8}")
    if done is None:
        print(f"  {'storm done (answered, visible everywhere)':<52} {'never':>10} "
              f"{f.raw_s:>10.2f} s")
    else:
        print(f"  {'storm done (answered, visible everywhere)':<52} {done:>8.2f} s "
              f"{f.raw_s:>10.2f} s {done / f.raw_s:7.2f}x")
    print(f"  {'rows/s':<52} {rows / done if done else 0:>10,.0f} "
          f"{rows / f.raw_s:>12,.0f}")
    print(f"  lost: {f.lost}")
    if f.ccs >= 10_000 and f.instances == 3 and f.ppc == 10:
        ok = (done is not None and done <= GOAL_DONE_S and f.lost == 0
              and p99 < GOAL_LOOKUP_P99_MS)
        print(f"  goal (done <= {GOAL_DONE_S:g} s, 0 lost, lookup p99 < "
              f"{GOAL_LOOKUP_P99_MS:g} ms): {'met' if ok else 'MISSED'}")


async def run(args: argparse.Namespace) -> int:
    print(f"bench/fleet.py  {time.strftime('%Y-%m-%d %H:%M:%S')}  {os.cpu_count()} cores")
    sizes = ([s for s in CURVE if s <= args.curve_limit] if args.curve else [args.ccs])
    failed = False
    for size in sizes:
        figures = await storm(args, size)
        if (figures.lost or figures.add_errors or not figures.all_visible
                or figures.driver_failures):
            failed = True
            if args.curve:
                print(f"  the curve stops at {size:,}: calls lost, adds failed or not visible")
                break
    return 1 if failed else 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--driver":
        return driver_main(sys.argv[2])
    parser = argparse.ArgumentParser(description=help_text(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ccs", type=int, default=1_000, help="simulated cluster controllers")
    parser.add_argument("--providers-per-cc", type=int, default=10)
    parser.add_argument("--instances", type=int, default=3, help="GCD instances (backends)")
    parser.add_argument("--touch-interval", type=float, default=5.0,
                        help="seconds between a CC's touches (0: none)")
    parser.add_argument("--lookups", type=int, default=2, help="lookups per CC after its adds")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="how long each CC keeps touching after the start")
    parser.add_argument("--drivers", type=int, default=2, help="driver processes")
    parser.add_argument("--connect-window", type=int, default=500,
                        help="connects in flight per driver")
    parser.add_argument("--call-timeout", type=float, default=60.0,
                        help="seconds a call waits for its answer before it counts as lost")
    parser.add_argument("--profile", action="store_true",
                        help="run instance 0 under cProfile and print where its time went")
    parser.add_argument("--curve", action="store_true", help="1k, 2k, 5k, ... cluster controllers")
    parser.add_argument("--curve-limit", type=int, default=10_000)
    args = parser.parse_args()
    if min(args.ccs, args.providers_per_cc, args.instances, args.drivers) < 1:
        parser.error("--ccs, --providers-per-cc, --instances and --drivers must be >= 1")
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

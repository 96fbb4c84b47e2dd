"""The same radio workload through joynr's Java cluster controller (release 1.25.0) and through
this project's, with the same client runtimes on both, printed side by side.

Usage: .venv/bin/python bench/joynr_java_peer.py [--messages N] [--warm N] [--rounds R]
                                                 [--concurrency C] [--payload BYTES]
                                                 [--ccs joynr,pyjoynr] [--quick] [--profile]

Each side gets one mosquitto (shared) and this project's GCD (``GcdService``, SQLite, in this
process) for discovery, and two cluster controllers, A and B, both connected to that broker:

- joynr: two of joynr's Java cluster controllers (``JavaClusterController`` of
  tests/support/java_oracles.py: the websocket runtime with its HiveMQ MQTT client);
- pyjoynr: two of this project's, each its own process as a user runs it
  (``python -m pyjoynr.cluster_controller`` with pyjoynr/config/cluster-controller.toml), with
  the shipped settings but for the broker (mosquitto instead of the embedded one, no embedded
  GCD), ``[mqtt] dialect = "joynr"`` (joynr's SMRF frames on MQTT, as joynr's CCs publish
  them) and ports (any free one).

The clients, the same on both sides, of the radio interface (examples/radio/radio.fidl):

- java apps: joynr's Java applications (``JavaRadioApp``): a provider on CC A, a consumer on
  CC A (proxy of scope LOCAL_ONLY) and one on CC B (GLOBAL_ONLY, found through the GCD); the
  consumers run the harness's ``bench`` command (tests/oracles/java/.../Bench.java);
- python: this project's runtimes in joynr's dialect (``connect(url,
  config=LibjoynrConfig(dialect="joynr"))``, the generated radio package of
  examples/radio/generated), in this process: a provider on CC A, consumers on A and B.

Paths: ``one host`` (provider and consumer on CC A, websocket only) and ``two hosts``
(consumer on CC B: B -> mosquitto -> A and back). Workloads (each with ``--concurrency``
callers, ``--payload`` bytes in the strings): logMessage (one-way, a string), stationHeard
(one-way, the RadioStation struct), describeStation (request/reply, a string),
addFavoriteStation (request/reply, the struct). Figures: messages per second (one-way: from
the first call until the provider has counted every message, the Java provider's counters
polled through its providerState command every 10 ms; request/reply: until the last reply),
p50/p99 latency of the request/reply calls (call to result, as the caller sees it), best of
``--rounds`` after a warm-up of ``--warm`` calls (both sides run at once, and their rounds
alternate: joynr, pyjoynr, joynr, ... on a noisy machine), and each cluster controller's resident
memory (VmRSS of its own process in /proc, after start-up and after the load) and the CPU
time (user + system, /proc/PID/stat) the two cluster controllers of a side used per call over
the timed rounds, which the load of a busy machine changes less than the rates; each with the
ratio pyjoynr / joynr. ``--profile`` runs this project's cluster controllers under cProfile
and prints where their time went (their figures are then the profiled ones).

Everything is started and stopped by the script, every wait bounded. joynr's Java runtimes
are built on first use (tests/support/java_oracles.py; ``PYJOYNR_JAVA_ORACLES`` names the
build directory): Java 17, Maven and gcc must be installed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import itertools
import os
import pstats
import signal
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop
from _common import (
    GBID,
    HOST,
    PROJECT_ROOT,
    ROUND_TIMEOUT_S,
    Latency,
    Mosquitto,
    Progress,
    TestMosquitto,
    free_port,
    help_text,
    mqtt_environment,
    package_of,
    quiet_gc,
    setup_logging,
)

from examples.radio.generated import Country, RadioProviderBase, RadioStation, build_radio_proxy
from pyjoynr import (
    DiscoveryQos,
    DiscoveryScope,
    LibjoynrConfig,
    LibjoynrRuntime,
    ProviderQos,
    ProviderScope,
    connect,
)
from pyjoynr.gcd.service import GcdService, GcdSettings
from tests.support.java_oracles import (
    CURRENT_RELEASE,
    JavaClusterController,
    JavaOracles,
    JavaRadioApp,
    build,
)

#: the workloads: name -> (one-way?, what it carries)
WORKLOADS: dict[str, tuple[bool, str]] = {
    "logMessage": (True, "one-way string"),
    "stationHeard": (True, "one-way struct"),
    "describeStation": (False, "request/reply string"),
    "addFavoriteStation": (False, "request/reply struct"),
}
#: the Java provider's providerState counter of each one-way workload
JAVA_COUNTERS = {"logMessage": "logMessages", "stationHeard": "stationsHeard"}
PATHS = ("one host", "two hosts")
CLIENTS = ("java apps", "python")
CCS = ("joynr", "pyjoynr")
#: bounds of the waits (s): a process start, a poll of the Java provider's counters
START_S = 60.0
STOP_S = 10.0
POLL_S = 0.01
#: the struct both kinds of clients send (the Java harness's Bench sends the same)
STATION = RadioStation("Bench FM", Country.GERMANY, True)
#: the configuration this project's cluster controller ships with
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: what --quick changes
QUICK = {"messages": 200, "warm": 50, "rounds": 1}
SHIPPED_CONFIG = PROJECT_ROOT / "pyjoynr" / "config" / "cluster-controller.toml"


# ---------------------------------------------------------------------- results


@dataclass
class Figure:
    """One workload's best round: messages per second, and the latency of request/reply."""

    per_s: float = 0.0
    latency: Latency | None = None
    failure: str = ""
    #: CPU time of the side's cluster controllers (A and B) over the timed rounds, and the calls
    cpu_s: float = 0.0
    calls: int = 0
    #: CPU time of the clients' processes over the timed rounds (see Side.client_pids)
    client_cpu_s: float = 0.0

    @property
    def cpu_us_per_call(self) -> float:
        return 1e6 * self.cpu_s / self.calls if self.calls else 0.0

    @property
    def client_cpu_us_per_call(self) -> float:
        return 1e6 * self.client_cpu_s / self.calls if self.calls else 0.0

    def better(self, per_s: float, latency: Latency | None) -> None:
        self.per_s = max(self.per_s, per_s)
        if latency is not None:
            self.latency = latency.best(self.latency)


@dataclass
class Side:
    """What one side (joynr's CCs or this project's) measured."""

    figures: dict[tuple[str, str, str], Figure] = field(default_factory=dict)
    rss_start_kib: dict[str, int] = field(default_factory=dict)
    rss_load_kib: dict[str, int] = field(default_factory=dict)
    failure: str = ""
    #: while it runs: its loads by (clients, path), its cluster controllers by name
    loads: dict[tuple[str, str], Load] = field(default_factory=dict)
    ccs: dict[str, JavaClusterController | ProjectCcProcess] = field(default_factory=dict)
    #: the processes of each kind of client: the Java applications, or this process (which
    #: holds the Python provider and consumers, and the GCD)
    client_pids: dict[str, list[int]] = field(default_factory=dict)


def cpu_s(pids: list[int]) -> float:
    """User and system CPU time (s) the processes ``pids`` have used, from /proc/PID/stat."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / CLOCK_TICKS


def rss_kib(pid: int) -> int:
    """VmRSS of process ``pid`` (KiB), from /proc/PID/status."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")


# ---------------------------------------------------------------------- this project's CC


class ProjectCcProcess:
    """This project's cluster controller as its own process, as a user starts it: ``python -m
    pyjoynr.cluster_controller --config pyjoynr/config/cluster-controller.toml`` with
    ``JOYNR_CC__`` overrides (see :attr:`env`), output to a log file, stopped by its PID
    (SIGTERM, SIGKILL after a grace). ``profile``: under cProfile, its stats written at exit."""

    def __init__(self, workdir: Path, name: str, broker_url: str, *, profile: bool) -> None:
        self.workdir = workdir
        self.name = name
        self.port = free_port()
        self.log_path = workdir / f"{name}.log"
        self.profile_path = workdir / f"{name}.prof" if profile else None
        self.cc_id = f"peer-{name}-{uuid.uuid4().hex[:8]}"
        self.process: asyncio.subprocess.Process | None = None
        workdir.mkdir(parents=True, exist_ok=True)
        #: the shipped configuration file, and what differs from it (environment overrides)
        self.env = {
            "JOYNR_CC__CLUSTER_CONTROLLER__ID": self.cc_id,
            "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(workdir / name),
            "JOYNR_CC__WEBSOCKET__PORT": str(self.port),
            "JOYNR_CC__MQTT__BACKENDS": f'{{ {GBID} = "{broker_url}" }}',
            "JOYNR_CC__MQTT__DIALECT": "joynr",
            "JOYNR_CC__EMBEDDED_BROKER__ENABLED": "false",
            "JOYNR_CC__EMBEDDED_GCD__ENABLED": "false",
            "JOYNR_CC__ADMIN__PORT": "0",
        }

    @property
    def url(self) -> str:
        return f"ws://{HOST}:{self.port}/"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def start(self) -> ProjectCcProcess:
        profiler = ["-m", "cProfile", "-o", str(self.profile_path)] if self.profile_path else []
        with open(self.log_path, "wb") as sink:  # noqa: ASYNC230 - before the process runs
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, *profiler, "-m", "pyjoynr.cluster_controller",
                "--config", str(SHIPPED_CONFIG), cwd=PROJECT_ROOT,
                env={**os.environ, **self.env},
                stdin=asyncio.subprocess.DEVNULL, stdout=sink, stderr=asyncio.subprocess.STDOUT)
        needle = f"cluster controller {self.cc_id}"
        deadline = time.monotonic() + START_S
        while needle not in self.log_path.read_text(encoding="utf-8", errors="replace"):
            if self.process.returncode is not None or time.monotonic() > deadline:
                await self.stop()
                raise RuntimeError(f"{self.name} did not start; {self.log_path}:\n"
                                   f"{self.tail()}")
            await asyncio.sleep(0.05)
        return self

    def tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    async def stop(self) -> None:
        process = self.process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), STOP_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await asyncio.wait_for(process.wait(), STOP_S)


# ---------------------------------------------------------------------- the clients


class CountingRadio(RadioProviderBase):
    """The radio as the example's provider answers it, counting the one-way calls."""

    def __init__(self) -> None:
        super().__init__(current_station=RadioStation("FM4", Country.AUSTRIA, True), volume=50)
        self.stations: list[RadioStation] = []
        self.progress = {"logMessage": Progress(), "stationHeard": Progress()}

    async def add_favorite_station(self, station: RadioStation) -> bool:
        if any(s.name == station.name for s in self.stations):
            return False
        self.stations.append(station)
        return True

    async def describe_station(self, name: str) -> str:
        for station in self.stations:
            if station.name == name:
                return f"{name} ({station.country.name.title()})"
        return name

    async def log_message(self, text: str) -> None:
        self.progress["logMessage"].hit()

    async def station_heard(self, station: RadioStation) -> None:
        self.progress["stationHeard"].hit()


#: one timed load: (workload, calls) -> (seconds, latency of request/reply or None)
Load = Callable[[str, int], Awaitable[tuple[float, Latency | None]]]


def java_load(consumer: JavaRadioApp, provider: JavaRadioApp, domain: str,
              args: argparse.Namespace) -> Load:
    """A load run by a Java consumer's bench command, answered by a Java provider's radio of
    ``domain``."""

    async def run(workload: str, n: int) -> tuple[float, Latency | None]:
        one_way = WORKLOADS[workload][0]
        fields = {"op": workload, "count": n, "concurrency": args.concurrency,
                  "textBytes": args.payload}
        if not one_way:
            done = await consumer.call("bench", timeout_s=ROUND_TIMEOUT_S, **fields)
            return (done["elapsedNs"] / 1e9,
                    Latency(done["p50Us"], done["p99Us"], 0.0))  # (no mean from Java)
        counter = JAVA_COUNTERS[workload]
        target = (await provider.call("providerState", domain=domain))[counter] + n
        began = time.perf_counter()
        await consumer.call("bench", timeout_s=ROUND_TIMEOUT_S, **fields)
        deadline = time.monotonic() + ROUND_TIMEOUT_S
        while (got := (await provider.call("providerState", domain=domain))[counter]) < target:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the provider counted {got - target + n} of {n}")
            await asyncio.sleep(POLL_S)
        return time.perf_counter() - began, None

    return run


def python_load(runtime: LibjoynrRuntime, provider: CountingRadio, domain: str,
                scope: DiscoveryScope, args: argparse.Namespace, *, side: str) -> Load:
    """A load of ``--concurrency`` tasks calling a radio proxy in this project's runtime."""
    proxy_of: list[Any] = []
    text = "x" * args.payload

    async def run(workload: str, n: int) -> tuple[float, Latency | None]:
        if not proxy_of:
            proxy_of.append(await build_radio_proxy(
                runtime, domain, discovery_qos=DiscoveryQos(discovery_scope=scope),
                ttl_ms=int(ROUND_TIMEOUT_S * 1000)))
            print(f"  ({side}: the python proxy of scope {scope.name} writes "
                  f"{proxy_of[0].body_format.value} bodies)", flush=True)
        proxy = proxy_of[0]
        call: Callable[[], Awaitable[object]] = {
            "logMessage": lambda: proxy.log_message(text),
            "stationHeard": lambda: proxy.station_heard(STATION),
            "describeStation": lambda: proxy.describe_station(text),
            "addFavoriteStation": lambda: proxy.add_favorite_station(STATION),
        }[workload]
        one_way = WORKLOADS[workload][0]
        counted = provider.progress.get(workload)
        samples: list[int] = [0] * n
        ticket = itertools.count()

        async def caller() -> None:
            while (i := next(ticket)) < n:
                began = time.perf_counter_ns()
                await call()
                samples[i] = time.perf_counter_ns() - began

        async with asyncio.timeout(ROUND_TIMEOUT_S):
            if counted is not None:
                counted.reset()
            began = time.perf_counter()
            await asyncio.gather(*(caller() for _ in range(args.concurrency)))
            if one_way:
                assert counted is not None
                await counted.reach(n)
            seconds = time.perf_counter() - began
        return seconds, None if one_way else Latency.of(samples)

    return run


# ---------------------------------------------------------------------- one side


async def start_side(cc_kind: str, oracles: JavaOracles, broker: TestMosquitto,
                     directory: Path, args: argparse.Namespace, *,
                     stack: AsyncExitStack) -> Side:
    """Start two cluster controllers of ``cc_kind`` and the clients on them (``stack`` stops
    them); the side's loads by (clients, path)."""
    side = Side()
    workdir = directory / cc_kind
    suffix = uuid.uuid4().hex[:8]
    print(f"--- starting {cc_kind}'s cluster controllers and the clients", flush=True)
    ccs = side.ccs
    for name in ("A", "B"):
        if cc_kind == "joynr":
            ccs[name] = JavaClusterController(oracles, workdir, {GBID: broker.url},
                                              name=f"java-cc-{name}")
        else:
            ccs[name] = ProjectCcProcess(workdir, f"cc-{name}", broker.url,
                                         profile=args.profile)
        stack.push_async_callback(ccs[name].stop)
    await asyncio.gather(*(cc.start() for cc in ccs.values()))
    side.rss_start_kib = {name: rss_kib(cc.pid) for name, cc in ccs.items()}
    if "java" in args.clients:
        apps = {role: JavaRadioApp(oracles, workdir, ccs[at].url, name=f"java-{role}")
                for role, at in (("provider", "A"), ("consumer-A", "A"), ("consumer-B", "B"))}
        for app in apps.values():
            stack.push_async_callback(app.stop)
        await asyncio.gather(*(app.start() for app in apps.values()))
        domain = f"peer-java-{suffix}"
        provider = apps["provider"]
        await provider.call("register", domain=domain, scope="GLOBAL")
        await provider.call("quiet", domain=domain, on=True)
        for consumer, scope in (("consumer-A", "LOCAL_ONLY"), ("consumer-B", "GLOBAL_ONLY")):
            await apps[consumer].call("proxy", domain=domain, scope=scope,
                                      ttlMs=int(ROUND_TIMEOUT_S * 1000))
        side.client_pids["java apps"] = [app.pid for app in apps.values()]
        side.loads["java apps", "one host"] = java_load(apps["consumer-A"], provider, domain, args)
        side.loads["java apps", "two hosts"] = java_load(apps["consumer-B"], provider, domain, args)
    if "python" in args.clients:
        config = LibjoynrConfig(dialect="joynr")
        runtimes = {}
        for role, at in (("provider", "A"), ("consumer-A", "A"), ("consumer-B", "B")):
            runtimes[role] = await stack.enter_async_context(connect(
                ccs[at].url, config=config, client_id=f"peer-{cc_kind}-{role}-{suffix}"))
        domain = f"peer-python-{suffix}"
        radio = CountingRadio()
        await runtimes["provider"].register_provider(
            domain, radio, qos=ProviderQos(scope=ProviderScope.GLOBAL),
            await_global_registration=True)
        side.client_pids["python"] = [os.getpid()]
        side.loads["python", "one host"] = python_load(
            runtimes["consumer-A"], radio, domain, DiscoveryScope.LOCAL_ONLY, args, side=cc_kind)
        side.loads["python", "two hosts"] = python_load(
            runtimes["consumer-B"], radio, domain, DiscoveryScope.GLOBAL_ONLY, args, side=cc_kind)
    return side


async def measure(sides: dict[str, Side], args: argparse.Namespace) -> None:
    """Every workload of every (clients, path) on every side that started: a warm-up on each
    side, then the rounds, alternating between the sides; the best round of each."""
    live = {kind: side for kind, side in sides.items() if not side.failure}
    for clients, path, workload in itertools.product(CLIENTS, PATHS, WORKLOADS):
        if path not in args.paths or workload not in args.workloads:
            continue
        key = (clients, path, workload)
        runs = {kind: side.loads[clients, path] for kind, side in live.items()
                if (clients, path) in side.loads}
        if not runs:
            continue
        for kind in runs:
            live[kind].figures[key] = Figure()
        for i, n in enumerate((args.warm, *[args.messages] * args.rounds)):
            for kind, load in runs.items():  # (i == 0: the warm-up, not counted)
                figure = live[kind].figures[key]
                if figure.failure:
                    continue
                pids = [cc.pid for cc in live[kind].ccs.values()]
                client_pids = live[kind].client_pids.get(clients, [])
                try:
                    quiet_gc()
                    cpu_before, client_before = cpu_s(pids), cpu_s(client_pids)
                    seconds, latency = await load(workload, n)
                    cpu = cpu_s(pids) - cpu_before
                    client_cpu = cpu_s(client_pids) - client_before
                except Exception as failure:  # (reported in the table; the others go on)
                    figure.failure = f"{type(failure).__name__}: {failure}".splitlines()[0][:120]
                    continue
                if i > 0:
                    figure.better(n / seconds, latency)
                    figure.cpu_s += cpu
                    figure.client_cpu_s += client_cpu
                    figure.calls += n
        print(f"  {clients:9} {path:9} {workload:18} "
              + "   ".join(f"{kind} {cell(live[kind].figures[key])} msg/s" for kind in runs),
              flush=True)



def print_profile(what: str, path: Path, top: int = 20) -> None:
    """The own time of a process's whole life (start-up included) per package / project file,
    then its ``top`` functions by own and by cumulative time."""
    stats = pstats.Stats(str(path))
    raw: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    own: dict[str, float] = defaultdict(float)
    for (filename, _, function), (_, _, tottime, _, _) in raw.items():
        own[package_of(filename, function)] += tottime
    total = sum(own.values()) or 1.0
    print(f"=== profile of {what}, its whole life ({total:.2f} s; the event loop's wait for "
          f"I/O is the own time of asyncio's run) ===")
    for name, seconds in sorted(own.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {seconds:7.3f} s  {100 * seconds / total:5.1f} %  {name}")
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(str(path), stream=out).strip_dirs().sort_stats(key).print_stats(top)
        print(f"--- top {top} by {key} ---")
        print("\n".join(line for line in out.getvalue().splitlines()[5:] if line.strip()))


# ---------------------------------------------------------------------- the tables


def print_cpu_table(joynr: Side, ours: Side, figure: str, what: str) -> None:
    """One table of CPU time per call (the ``figure`` property of each side's Figure)."""
    print(f"\n=== CPU time of {what}")
    print(f"  {'clients':9} {'path':9} {'workload':18} {'joynr':>9} {'pyjoynr':>9}  ratio")
    for clients, path, workload in itertools.product(CLIENTS, PATHS, WORKLOADS):
        key = (clients, path, workload)
        if key not in joynr.figures and key not in ours.figures:
            continue
        jc = getattr(joynr.figures.get(key, Figure()), figure)
        oc = getattr(ours.figures.get(key, Figure()), figure)
        print(f"  {clients:9} {path:9} {workload:18} {jc:9,.0f} {oc:9,.0f} {ratio(oc, jc)}")


def ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:6.2f}" if ours > 0 and theirs > 0 else "     -"


def print_tables(sides: dict[str, Side], args: argparse.Namespace) -> None:
    joynr, ours = sides.get("joynr", Side()), sides.get("pyjoynr", Side())
    print(f"\n=== throughput, msg/s (best of {args.rounds} x {args.messages:,} calls, "
          f"{args.concurrency} callers, {args.payload}-byte strings); ratio pyjoynr / joynr, "
          f"higher is better")
    print(f"  {'clients':9} {'path':9} {'workload':18} {'kind':20} {'joynr':>9} "
          f"{'pyjoynr':>9}  ratio")
    for clients, path, workload in itertools.product(CLIENTS, PATHS, WORKLOADS):
        key = (clients, path, workload)
        if key not in joynr.figures and key not in ours.figures:
            continue
        j, o = joynr.figures.get(key, Figure()), ours.figures.get(key, Figure())
        print(f"  {clients:9} {path:9} {workload:18} {WORKLOADS[workload][1]:20} "
              f"{cell(j):>9} {cell(o):>9} {ratio(o.per_s, j.per_s)}")
    print("\n=== request/reply latency, us (as the caller sees it); ratio pyjoynr / joynr, "
          "lower is better")
    print(f"  {'clients':9} {'path':9} {'workload':18} {'joynr p50':>9} {'pyjoynr':>9} "
          f"{'ratio':>6}   {'joynr p99':>9} {'pyjoynr':>9} {'ratio':>6}")
    for clients, path, workload in itertools.product(CLIENTS, PATHS, WORKLOADS):
        if WORKLOADS[workload][0]:
            continue
        theirs = joynr.figures.get((clients, path, workload), Figure()).latency
        mine = ours.figures.get((clients, path, workload), Figure()).latency
        if theirs is None and mine is None:
            continue
        jp50, op50 = (theirs.p50_us if theirs else 0.0), (mine.p50_us if mine else 0.0)
        jp99, op99 = (theirs.p99_us if theirs else 0.0), (mine.p99_us if mine else 0.0)
        print(f"  {clients:9} {path:9} {workload:18} {jp50:9,.0f} {op50:9,.0f} "
              f"{ratio(op50, jp50)}   {jp99:9,.0f} {op99:9,.0f} {ratio(op99, jp99)}")
    print_cpu_table(joynr, ours, "cpu_us_per_call",
                    "the cluster controller processes per call, us (user + system, A and B "
                    "together, over the timed rounds); ratio pyjoynr / joynr, lower is better")
    print_cpu_table(joynr, ours, "client_cpu_us_per_call",
                    "the clients' processes per call, us (the Java applications; for python "
                    "this process: its provider, consumers and GCD), over the same rounds; "
                    "ratio pyjoynr / joynr")
    print("\n=== resident memory of each cluster controller process (VmRSS, MiB); ratio "
          "pyjoynr / joynr")
    print(f"  {'CC':3} {'when':12} {'joynr':>8} {'pyjoynr':>8}  ratio")
    for name in ("A", "B"):
        for when, of in (("after start", "rss_start_kib"), ("after load", "rss_load_kib")):
            jk, ok = getattr(joynr, of).get(name, 0), getattr(ours, of).get(name, 0)
            print(f"  {name:3} {when:12} {jk / 1024:8.1f} {ok / 1024:8.1f} {ratio(ok, jk)}")
    for kind, side in sides.items():
        if side.failure:
            print(f"{kind}: FAILED: {side.failure}")


def cell(figure: Figure) -> str:
    if figure.failure:
        return "FAILED"
    return f"{figure.per_s:,.0f}" if figure.per_s else "-"


# ---------------------------------------------------------------------- main


async def run(args: argparse.Namespace) -> int:
    print(f"joynr {CURRENT_RELEASE} (Java {java_version()}) beside pyjoynr; "
          f"{mqtt_environment()}; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    oracles = await asyncio.to_thread(build)
    sides: dict[str, Side] = {}
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
        directory = Path(args.workdir or tmp)
        print(f"logs and data in {directory}{'' if args.workdir else ' (removed at the end)'}",
              flush=True)
        async with Mosquitto() as broker, GcdService(GcdSettings(
                gbid=GBID, broker_url=broker.url, sqlite_path=directory / "gcd" / "gcd.sqlite",
                data_dir=directory / "gcd", client_id="bench-peer-gcd")) as gcd:
            await gcd.mqtt.wait_connected(START_S)
            async with AsyncExitStack() as stack:
                for kind in args.ccs:
                    try:
                        sides[kind] = await start_side(kind, oracles, broker, directory, args,
                                                       stack=stack)
                    except Exception as failure:  # (the other side still runs)
                        sides[kind] = Side(failure=f"{type(failure).__name__}: {failure}")
                        print(f"{kind}: FAILED: {sides[kind].failure}", flush=True)
                print("--- the rounds, alternating between the sides", flush=True)
                await measure(sides, args)
                for side in sides.values():
                    if not side.failure:
                        side.rss_load_kib = {name: rss_kib(cc.pid)
                                             for name, cc in side.ccs.items()}
        # (written when they stopped; before the temporary directory goes)
        profiled_ccs = sides["pyjoynr"].ccs if args.profile and "pyjoynr" in sides else {}
        for name, cc in profiled_ccs.items():
            assert isinstance(cc, ProjectCcProcess) and cc.profile_path is not None
            if cc.profile_path.is_file():
                print_profile(f"this project's cluster controller {name}", cc.profile_path)
            else:
                print(f"this project's cluster controller {name} wrote no profile")
    print_tables(sides, args)
    failed = any(side.failure or any(f.failure for f in side.figures.values())
                 for side in sides.values())
    return 1 if failed else 0


def java_version() -> str:
    try:
        import subprocess  # noqa: PLC0415 - only for this line

        out = subprocess.run(["java", "-version"], capture_output=True, text=True,
                             check=False, timeout=30)
        return out.stderr.splitlines()[0].split('"')[1]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--messages", type=int, default=5_000, help="calls per timed round")
    parser.add_argument("--warm", type=int, default=1_000,
                        help="calls of the warm-up before the rounds of each workload")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds (best is shown)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="callers at once (threads in Java, tasks in Python)")
    parser.add_argument("--payload", type=int, default=200, help="bytes of the strings")
    parser.add_argument("--ccs", default=",".join(CCS),
                        help="the sides to run, comma-separated: joynr, pyjoynr")
    parser.add_argument("--clients", default="java,python",
                        help="the clients, comma-separated: java, python")
    parser.add_argument("--paths", default="one host,two hosts",
                        help="the paths, comma-separated: one host, two hosts")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"the workloads, comma-separated: {', '.join(WORKLOADS)}")
    parser.add_argument("--workdir", default="",
                        help="keep the processes' logs and data here (default: a temporary "
                             "directory, removed at the end)")
    parser.add_argument("--quick", action="store_true",
                        help="a short look: 200 calls, a warm-up of 50, one round (unless "
                             "given)")
    parser.add_argument("--profile", action="store_true",
                        help="run this project's CCs under cProfile and print where their "
                             "time went")
    args = parser.parse_args()
    if args.quick:  # (what is given explicitly stays)
        for name, value in QUICK.items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)
    args.ccs = [c.strip() for c in args.ccs.split(",") if c.strip()]
    args.clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    args.paths = [c.strip() for c in args.paths.split(",") if c.strip()]
    args.workloads = [c.strip() for c in args.workloads.split(",") if c.strip()]
    if (args.messages < 1 or args.warm < 1 or args.rounds < 1 or args.concurrency < 1
            or args.payload < 0 or not args.ccs or set(args.ccs) - set(CCS)
            or not args.clients or set(args.clients) - {"java", "python"}
            or not args.paths or set(args.paths) - set(PATHS)
            or not args.workloads or set(args.workloads) - set(WORKLOADS)):
        parser.error("need --messages, --warm, --rounds, --concurrency >= 1, --payload >= 0, "
                     "and --ccs, --clients, --paths, --workloads of the values named")
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

"""joynr's own Java runtimes as oracles: the harness in tests/oracles/java, built with Maven, and
its programs run as processes the tests drive.

- :func:`build` builds the harness once per source state (Maven, offline once the local
  repository has what it needs; online the first time) into ``PYJOYNR_JAVA_ORACLES`` (default
  ``~/.cache/pyjoynr/java-oracles``), outside the checkout, with a lock so that parallel runs
  wait for each other, and compiles the loopback-only preload library beside it.
- :class:`JavaClusterController`: joynr's websocket cluster controller with its MQTT client,
  configured by joynr's properties only (GBIDs, broker URIs, the GCD's participant id and
  channel, the freshness interval).
- :class:`OldJavaClusterController`: the cluster controller of an old joynr release
  (:data:`OLD_RELEASES`: one broker, the Paho MQTT client, Guice 3) with a radio provider and
  consumer in its own JVM, driven by JSON lines as the applications are.
- :class:`JavaRadioApp`: a joynr Java application (provider, consumer or both) of the radio
  interface, whose code joynr's generator made from examples/radio/radio.fidl; it takes one
  JSON command a line and answers each (:meth:`JavaProcess.call`), and reports what it is
  told unasked as events (:meth:`JavaProcess.next_event`). With ``main=LEGAL_APP`` it is the
  application of the legal Franca of tests/franca/oracle (``Widths``: put overloaded by width;
  ``Underscores``: members named with ``_``), driven the same way.

Every process runs with the preload library that binds a wildcard listener to loopback (joynr's
websocket server binds every interface whatever its host property says), is waited for with a
bound, is stopped by its PID (SIGTERM, SIGKILL after a grace) and writes its output to a log
file whose tail a failing call or start quotes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import hashlib
import ipaddress
import itertools
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyjoynr.testing.cluster import free_port

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "tests" / "oracles" / "java"
#: what the harness is built from: a change to any of these builds it again
SOURCES = (HARNESS, ROOT / "examples" / "radio" / "radio.fidl",
           ROOT / "tests" / "franca" / "oracle" / "legal_overloads.fidl",
           ROOT / "tests" / "franca" / "oracle" / "legal_names.fidl")
OUT = Path(os.environ.get("PYJOYNR_JAVA_ORACLES",
                          Path.home() / ".cache" / "pyjoynr" / "java-oracles"))
#: the current joynr release (the newest on Maven Central) and its harness module
CURRENT = "joynr-current"
CURRENT_RELEASE = "1.25.0"
#: the MQTT client module of the current release
HIVEMQ_MODULE = "io.joynr.messaging.mqtt.hivemq.client.HivemqMqttClientModule"
#: the MQTT client module of 1.8 and earlier (Eclipse Paho)
PAHO_MODULE = "io.joynr.messaging.mqtt.paho.client.MqttPahoModule"
#: what Guice 3 (joynr 1.8 and earlier) needs on Java 17
GUICE3_JVM_OPTIONS = ("--add-opens=java.base/java.lang=ALL-UNNAMED",)
#: the harness's applications (main classes of the current release's module)
RADIO_APP = "pyjoynr.oracle.RadioApp"
LEGAL_APP = "pyjoynr.oracle.LegalApp"
GCD_PARTICIPANT_ID = "capabilitiesdirectory_participantid"
GCD_CHANNEL_ID = "discoverydirectory_channelid"
#: bounds of every wait (s)
BUILD_TIMEOUT_S = 900.0
START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 30.0
STOP_GRACE_S = 5.0

log = logging.getLogger("tests.java_oracles")


@dataclass(frozen=True)
class OldRelease:
    """An old joynr release of the harness: its module, the version of the GCD interface its
    cluster controller speaks, and what it needs to run."""

    version: str
    module: str
    gcd_interface: str
    mqtt_module: str = PAHO_MODULE
    jvm_options: tuple[str, ...] = GUICE3_JVM_OPTIONS


#: the old releases the harness builds, by the GCD interface their cluster controllers speak:
#: 0.1 (1.7.0, the newest 0.1 release, has no generator on Maven Central; 1.6.0 has) and 0.2
OLD_RELEASES = {
    "0.1": OldRelease("1.6.0", "joynr-1.6", "0.1"),
    "0.2": OldRelease("1.8.0", "joynr-1.8", "0.2"),
}


class OracleError(AssertionError):
    """The harness could not be built or a Java process did not do what it was asked."""


@dataclass(frozen=True)
class JavaOracles:
    """The built harness: a classpath per module and the preload library."""

    out: Path
    preload: Path

    def classpath(self, module: str) -> str:
        classes = self.out / module / "classes"
        listed = (self.out / module / "classpath.txt").read_text(encoding="utf-8").strip()
        return f"{classes}{os.pathsep}{listed}"


def _stamp() -> str:
    digest = hashlib.sha256()
    for source in SOURCES:
        files = sorted(source.rglob("*")) if source.is_dir() else [source]
        for path in files:
            if path.is_file() and "target" not in path.parts:
                digest.update(str(path.relative_to(ROOT)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise OracleError(f"{name} is not on PATH: joynr's Java oracles need Java 17, Maven "
                          "and gcc (bin/test installs what it can)")
    return found


def _modules() -> list[str]:
    text = (HARNESS / "pom.xml").read_text(encoding="utf-8")
    return [line.split("<module>")[1].split("</module>")[0]
            for line in text.splitlines() if "<module>" in line]


def build(out: Path = OUT) -> JavaOracles:
    """Build the harness unless ``out`` holds a build of the same sources; raise
    :class:`OracleError` naming the log when Maven or gcc fails."""
    out.mkdir(parents=True, exist_ok=True)
    preload = out / "libloopback_only.so"
    stamp = _stamp()
    with open(out / ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp_file = out / "stamp"
        built = all((out / m / "classpath.txt").is_file() for m in _modules())
        if built and preload.is_file() and stamp_file.is_file() \
                and stamp_file.read_text(encoding="utf-8") == stamp:
            return JavaOracles(out, preload)
        mvn, gcc = _tool("mvn"), _tool("gcc")
        _tool("java")
        build_log = out / "build.log"
        base = [mvn, "-B", "-q", "-f", str(HARNESS / "pom.xml"), f"-Doracle.out={out}",
                "package"]
        with open(build_log, "w", encoding="utf-8") as sink:
            began = time.monotonic()
            done = subprocess.run([*base[:1], "-o", *base[1:]], stdout=sink,
                                  stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S,
                                  check=False)
            if done.returncode != 0:
                # the first build (or a new dependency): Maven downloads from Maven Central
                sink.write("\n--- offline build failed; building online ---\n")
                sink.flush()
                done = subprocess.run(base, stdout=sink, stderr=subprocess.STDOUT,
                                      timeout=BUILD_TIMEOUT_S, check=False)
            log.info("joynr's Java oracles built in %.1f s", time.monotonic() - began)
        if done.returncode != 0:
            raise OracleError(f"building the Java oracles failed (mvn exit {done.returncode});"
                              f" see {build_log}:\n{_tail(build_log)}")
        compiled = subprocess.run(
            [gcc, "-shared", "-fPIC", "-O2", "-o", str(preload),
             str(HARNESS / "loopback_only.c"), "-ldl"],
            capture_output=True, text=True, timeout=120, check=False)
        if compiled.returncode != 0:
            raise OracleError(f"compiling the loopback preload failed: {compiled.stderr}")
        stamp_file.write_text(stamp, encoding="utf-8")
        return JavaOracles(out, preload)


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before it runs Java: SIGKILL it when the process that started it dies, so
    that a test run or bench killed before its stop leaves no JVM behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


class JavaCallError(OracleError):
    """A command the Java application answered with an error."""

    def __init__(self, answer: Mapping[str, Any]) -> None:
        super().__init__(f"{answer.get('error')}: {answer.get('message')}")
        self.answer = dict(answer)
        self.error = str(answer.get("error"))
        self.name = answer.get("name")


class JavaProcess:
    """One Java program of the harness, its stdout read as JSON lines."""

    def __init__(self, oracles: JavaOracles, module: str, main: str, args: Sequence[str],
                 workdir: Path, *, name: str, jvm_options: Sequence[str] = ()) -> None:
        self.oracles = oracles
        self.module = module
        self.main = main
        self.args = list(args)
        self.workdir = workdir
        self.name = name
        self.jvm_options = list(jvm_options)
        self.log_path = workdir / f"{name}.log"
        self.process: asyncio.subprocess.Process | None = None
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None
        self._log: Any = None
        self.ready: asyncio.Future[dict[str, Any]] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def start(self, timeout_s: float = START_TIMEOUT_S) -> JavaProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: ASYNC230, SIM115 - closed in stop()
        env = {**os.environ, "LD_PRELOAD": str(self.oracles.preload)}
        command = [_tool("java"), "-Xmx256m", "-Djava.net.preferIPv4Stack=true",
                   *self.jvm_options, "-cp", self.oracles.classpath(self.module), self.main,
                   *self.args]
        self.process = await asyncio.create_subprocess_exec(
            *command, cwd=self.workdir, env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=self._log, limit=16 * 1024 * 1024,
            preexec_fn=_die_with_parent)
        self.ready = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read(), name=f"{self.name}-stdout")
        try:
            await asyncio.wait_for(asyncio.shield(self.ready), timeout_s)
        except (TimeoutError, OracleError) as failure:
            await self.stop()
            raise OracleError(f"{self.name} did not start within {timeout_s} s ({failure}); "
                              f"log {self.log_path}:\n{_tail(self.log_path)}") from None
        return self

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        while line := await stdout.readline():
            self._log.write(b"[stdout] " + line)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if "event" in message:
                if message["event"] == "ready" and self.ready and not self.ready.done():
                    self.ready.set_result(message)
                else:
                    self.events.put_nowait(message)
            elif (waiting := self._answers.pop(int(message.get("id", -1)), None)) is not None \
                    and not waiting.done():
                waiting.set_result(message)
        gone = OracleError(f"{self.name} exited (code {await self.process.wait()}); "
                           f"log {self.log_path}:\n{_tail(self.log_path)}")
        if self.ready and not self.ready.done():
            self.ready.set_exception(gone)
        for waiting in self._answers.values():
            if not waiting.done():
                waiting.set_exception(gone)
        self._answers.clear()

    async def call(self, cmd: str, timeout_s: float = CALL_TIMEOUT_S, **fields: Any) -> Any:
        """Send a command; its result, or :class:`JavaCallError` with the Java error."""
        answer = await self.request(cmd, timeout_s=timeout_s, **fields)
        if not answer.get("ok"):
            raise JavaCallError(answer)
        return answer.get("result")

    async def request(self, cmd: str, timeout_s: float = CALL_TIMEOUT_S, **fields: Any
                      ) -> dict[str, Any]:
        """Send a command; its whole answer (``ok``, ``result`` or ``error``)."""
        assert self.process is not None and self.process.stdin is not None
        if self.process.returncode is not None:
            raise OracleError(f"{self.name} is not running; log {self.log_path}:\n"
                              f"{_tail(self.log_path)}")
        ident = next(self._ids)
        waiting: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[ident] = waiting
        self.process.stdin.write(json.dumps({"id": ident, "cmd": cmd, **fields}).encode()
                                 + b"\n")
        await self.process.stdin.drain()
        try:
            return await asyncio.wait_for(waiting, timeout_s)
        except TimeoutError:
            self._answers.pop(ident, None)
            raise OracleError(f"{self.name} did not answer {cmd} within {timeout_s} s; log "
                              f"{self.log_path}:\n{_tail(self.log_path)}") from None

    async def next_event(self, event: str | None = None, timeout_s: float = CALL_TIMEOUT_S,
                         **match: Any) -> dict[str, Any]:
        """The next event line (of that name and those fields), waiting at most
        ``timeout_s``; others before it are dropped."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OracleError(f"{self.name}: no {event or 'event'} {match or ''} within "
                                  f"{timeout_s} s; log {self.log_path}:\n"
                                  f"{_tail(self.log_path)}")
            try:
                message = await asyncio.wait_for(self.events.get(), left)
            except TimeoutError:
                continue
            if (event is None or message.get("event") == event) and all(
                    message.get(k) == v for k, v in match.items()):
                return message

    def drain_events(self) -> list[dict[str, Any]]:
        """The events that arrived and were not taken yet."""
        out = []
        while not self.events.empty():
            out.append(self.events.get_nowait())
        return out

    async def stop(self) -> None:
        """Stop by PID: SIGTERM (for an application first the quit command), SIGKILL after
        the grace; idempotent."""
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE_S)
            except TimeoutError:
                log.info("%s (pid %d) did not stop on SIGTERM; killing it", self.name,
                         process.pid)
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await asyncio.wait_for(process.wait(), STOP_GRACE_S)
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, STOP_GRACE_S)
        if self._log is not None:
            self._log.close()
            self._log = None

    async def kill(self) -> None:
        """SIGKILL at once (a crash)."""
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
        await self.stop()

    def listening_addresses(self) -> list[tuple[str, int]]:
        """The (address, port) of every TCP socket this process listens on (from /proc)."""
        inodes = set()
        fd_dir = Path(f"/proc/{self.pid}/fd")
        for fd in fd_dir.iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        found = []
        for table, width in (("tcp", 8), ("tcp6", 32)):
            for row in Path(f"/proc/{self.pid}/net/{table}").read_text().splitlines()[1:]:
                cols = row.split()
                if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                    continue
                address, port = cols[1].split(":")
                found.append((_proc_address(address, width), int(port, 16)))
        return found


def _proc_address(hexed: str, width: int) -> str:
    raw = bytes.fromhex(hexed)
    if width == 8:
        return ".".join(str(b) for b in reversed(raw))
    words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]
    return str(ipaddress.IPv6Address(b"".join(words)))


def _write_properties(path: Path, properties: Mapping[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{key}={value}" for key, value in properties.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class JavaClusterController(JavaProcess):
    """joynr's websocket cluster controller. ``backends``: GBID -> broker URL (``mqtt://`` or
    ``tcp://``), the first the default backend (where its GCD is). ``properties`` are added to
    (and override) joynr's properties written here."""

    def __init__(self, oracles: JavaOracles, workdir: Path, backends: Mapping[str, str], *,
                 module: str = CURRENT, mqtt_module: str = HIVEMQ_MODULE,
                 freshness_interval_ms: int | None = None,
                 properties: Mapping[str, object] | None = None, name: str = "java-cc",
                 jvm_options: Sequence[str] = ()) -> None:
        self.port = free_port()
        self.backends = dict(backends)
        brokers = ",".join(_tcp(url) for url in self.backends.values())
        own: dict[str, object] = {
            "oracle.mqttModule": mqtt_module,
            "joynr.messaging.gbids": ",".join(self.backends),
            "joynr.messaging.mqtt.brokeruris": brokers,
            # joynr wants one keep-alive and one connection timeout per GBID (its defaults:
            # 30 s and 60 s); a single value with two GBIDs stops it at start
            "joynr.messaging.mqtt.keepalivetimerssec": ",".join(["30"] * len(self.backends)),
            "joynr.messaging.mqtt.connectiontimeoutssec": ",".join(["60"] * len(self.backends)),
            "joynr.messaging.cc.host": "127.0.0.1",
            "joynr.messaging.cc.port": self.port,
            "joynr.messaging.cc.protocol": "ws",
            "joynr.messaging.cc.path": "/",
            # the GCD: joynr's defaults, named so that a change of them shows here
            # joynr 1.25 takes this "URL" as the GBID of the GCD's address (MqttAddress
            # brokerUri): anything else leaves its GCD calls unroutable
            "joynr.messaging.gcd.url": next(iter(self.backends)),
            "joynr.messaging.capabilitiesdirectoryparticipantid": GCD_PARTICIPANT_ID,
            "joynr.messaging.capabilitiesdirectorychannelid": GCD_CHANNEL_ID,
            "joynr.messaging.discoverydirectoriesdomain": "io.joynr",
            # its channel and receiver ids (its MQTT client id) are kept here: in joynr's
            # default, joynr.properties in the working directory, two processes of one
            # directory take the same ids and the broker closes one for the other, in turn
            "joynr.messaging.persistence_file": workdir / f"{name}.persisted.properties",
        }
        if freshness_interval_ms is not None:
            own["joynr.capabilities.freshnessupdateintervalms"] = freshness_interval_ms
        own.update(properties or {})
        self.properties = own
        props = _write_properties(workdir / f"{name}.properties", own)
        super().__init__(oracles, module, "pyjoynr.oracle.ClusterControllerMain", [str(props)],
                         workdir, name=name, jvm_options=jvm_options)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    async def start(self, timeout_s: float = START_TIMEOUT_S) -> JavaClusterController:
        await super().start(timeout_s)
        # ready once its websocket server takes connections
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                if time.monotonic() > deadline:
                    await self.stop()
                    raise OracleError(f"{self.name}: no websocket server on {self.port} "
                                      f"within {timeout_s} s:\n{_tail(self.log_path)}") from None
                await asyncio.sleep(0.1)
                continue
            writer.close()
            return self


class OldJavaClusterController(JavaClusterController):
    """The websocket cluster controller of an old joynr release (one broker at ``broker_url``,
    joynr's single-broker properties) with a radio provider and consumer in its own JVM
    (``pyjoynr.oracle.OldClusterController``): the commands ``register``, ``unregister``,
    ``providerState``, ``proxy``, ``getCurrentStation``, ``getVolume``,
    ``addFavoriteStation`` and ``describeStation`` act through this cluster controller.
    ``properties`` are added to (and override) the ones written here."""

    def __init__(self, oracles: JavaOracles, workdir: Path, release: OldRelease,
                 broker_url: str, *, freshness_interval_ms: int | None = None,
                 properties: Mapping[str, object] | None = None,
                 name: str | None = None) -> None:
        self.release = release
        self.port = free_port()
        self.backends = {"": broker_url}
        broker = _tcp(broker_url)
        host, port = broker[len("tcp://"):].rsplit(":", 1)
        name = name or f"java-cc-{release.version}"
        own: dict[str, object] = {
            "oracle.mqttModule": release.mqtt_module,
            "joynr.messaging.primaryglobaltransport": "mqtt",
            "joynr.messaging.mqtt.brokeruri": broker,
            # the provisioned GCD entry of these releases names its broker by these two
            "JOYNR_SERVER_HOST": host,
            "JOYNR_SERVER_MQTT_PORT": port,
            "joynr.messaging.cc.host": "127.0.0.1",
            "joynr.messaging.cc.port": self.port,
            "joynr.messaging.cc.protocol": "ws",
            "joynr.messaging.cc.path": "/",
            "joynr.messaging.capabilitiesdirectoryparticipantid": GCD_PARTICIPANT_ID,
            "joynr.messaging.capabilitiesdirectorychannelid": GCD_CHANNEL_ID,
            "joynr.messaging.discoverydirectoriesdomain": "io.joynr",
            "joynr.discovery.participantids_persistence_file": workdir / f"{name}.ids",
            "joynr.messaging.persistence_file": workdir / f"{name}.persisted",
        }
        if freshness_interval_ms is not None:
            own["joynr.capabilities.freshnessupdateintervalms"] = freshness_interval_ms
        own.update(properties or {})
        self.properties = own
        props = _write_properties(workdir / f"{name}.properties", own)
        JavaProcess.__init__(self, oracles, release.module,
                             "pyjoynr.oracle.OldClusterController", [str(props)], workdir,
                             name=name, jvm_options=release.jvm_options)

    async def stop(self) -> None:
        await _quit(self)
        await super().stop()


async def _quit(process: JavaProcess) -> None:
    """Ask a program that reads commands to quit (its runtime shuts down), with a bound."""
    running = process.process
    if running is not None and running.returncode is None and running.stdin is not None:
        with contextlib.suppress(Exception):
            running.stdin.write(b'{"cmd":"quit"}\n')
            await running.stdin.drain()
            await asyncio.wait_for(running.wait(), STOP_GRACE_S)


def _tcp(url: str) -> str:
    for scheme in ("mqtt://", "tcp://"):
        if url.startswith(scheme):
            return "tcp://" + url[len(scheme):].split("?", maxsplit=1)[0].rstrip("/")
    raise ValueError(f"not a plain MQTT broker URL: {url}")


class JavaRadioApp(JavaProcess):
    """A joynr Java application on the libjoynr websocket runtime, connected to the cluster
    controller at ``cc_url`` (joynr's or this project's): the radio application, or with
    ``main`` another of the harness's (:data:`LEGAL_APP`)."""

    def __init__(self, oracles: JavaOracles, workdir: Path, cc_url: str, *,
                 module: str = CURRENT, name: str = "java-app", main: str = RADIO_APP,
                 properties: Mapping[str, object] | None = None,
                 jvm_options: Sequence[str] = ()) -> None:
        host_port = cc_url.split("://", 1)[1].split("/", 1)[0]
        host, port = host_port.rsplit(":", 1)
        own: dict[str, object] = {
            "joynr.messaging.cc.host": host,
            "joynr.messaging.cc.port": port,
            "joynr.messaging.cc.protocol": "ws",
            "joynr.messaging.cc.path": "/",
            "joynr.messaging.cc.connectiontype": "WEBSOCKET",
            # the participant ids this application's providers get are kept here
            "joynr.discovery.participantids_persistence_file": workdir / f"{name}.ids",
            # and its own ids (see JavaClusterController)
            "joynr.messaging.persistence_file": workdir / f"{name}.persisted.properties",
        }
        own.update(properties or {})
        props = _write_properties(workdir / f"{name}.properties", own)
        super().__init__(oracles, module, main, [str(props)], workdir, name=name,
                         jvm_options=jvm_options)

    async def stop(self) -> None:
        await _quit(self)
        await super().stop()


def station(name: str, country: str = "AUSTRIA", traffic: bool = False) -> dict[str, Any]:
    """A RadioStation as the harness writes and reads it."""
    return {"name": name, "country": country, "trafficService": traffic}

"""Running cluster controller and GCD processes and asking their admin endpoints, in tests.

- :class:`ProgramProcess`: ``python -m pyjoynr.cluster_controller`` or ``python -m
  pyjoynr.gcd`` with environment overrides; its output is read by a thread the whole time (a
  long-running process must never block on a full pipe), the admin endpoint's URL taken from
  its log;
- :func:`http_get`: a real HTTP request (urllib, in a thread), the status, headers and body,
  whatever the status; :func:`raw_exchange`: bytes written on a fresh connection, what came
  back until the server closed it (for hostile requests);
- :func:`scrape`: the metrics, parsed by prometheus_client's text parser, as a
  :class:`Metrics` (samples by name and labels).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
#: where tests keep what a person may want to look at afterwards (git-ignored)
ARTIFACTS = ROOT / "test-artifacts"
WAIT_S = 20.0


class ProgramProcess:
    """One program process (``module``: ``cluster_controller`` or ``gcd``), run as ``python -m
    pyjoynr.<module>`` in the checkout, or as ``command`` (e.g. an installed console script)
    in ``cwd``."""

    def __init__(self, module: str, env: dict[str, str], *, command: list[str] | None = None,
                 cwd: Path = ROOT) -> None:
        self.module = module
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.proc = subprocess.Popen(
            command or [sys.executable, "-m", f"pyjoynr.{module}"], cwd=cwd,
            env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        self._reader = threading.Thread(target=self._read, daemon=True,
                                        name=f"output of {module}")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def output(self) -> str:
        with self._changed:
            return "".join(self.lines)

    def wait_for_sync(self, pattern: str, timeout_s: float = WAIT_S) -> re.Match[str]:
        """The first match of ``pattern`` (a regular expression) in the output; fails the
        test with the output when it does not come."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                for line in self.lines:
                    found = regex.search(line)
                    if found:
                        return found
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    break
                self._changed.wait(min(left, 0.2))
        raise AssertionError(f"{pattern!r} not in the output of {self.module}:\n"
                             f"{self.output()}")

    async def wait_for(self, pattern: str, timeout_s: float = WAIT_S) -> re.Match[str]:
        return await asyncio.to_thread(self.wait_for_sync, pattern, timeout_s)

    async def admin_url(self) -> str:
        found = await self.wait_for(r"admin endpoint .* listening on (http://\S+) ")
        return found.group(1)

    async def exited(self, timeout_s: float = WAIT_S) -> int:
        """The exit status of a process that ends by itself (killed after ``timeout_s``)."""
        try:
            await asyncio.to_thread(self.proc.wait, timeout_s)
        finally:
            self.stop()
        return self.proc.returncode

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then the exit status (killed if it does not end in time)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._reader.join(5)
        return self.proc.returncode

    async def astop(self, timeout_s: float = 30.0) -> int:
        return await asyncio.to_thread(self.stop, timeout_s)


def cc_process(data_dir: Path, *, command: list[str] | None = None, cwd: Path = ROOT,
               **env: str) -> ProgramProcess:
    """A cluster controller process on free ports (websocket, admin, embedded broker)."""
    return ProgramProcess("cluster_controller", command=command, cwd=cwd, env={
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(data_dir),
        "JOYNR_CC__WEBSOCKET__PORT": "0", "JOYNR_CC__EMBEDDED_BROKER__PORT": "0",
        "JOYNR_CC__ADMIN__PORT": "0", "JOYNR_CC__ROUTER__SWEEP_INTERVAL_MS": "50", **env})


def gcd_process(data_dir: Path, broker_url: str, *, command: list[str] | None = None,
                cwd: Path = ROOT, **env: str) -> ProgramProcess:
    """A GCD process (SQLite and its instance id in ``data_dir``) on the broker, its admin
    endpoint on a free port."""
    return ProgramProcess("gcd", command=command, cwd=cwd, env={
        "JOYNR_GCD__GCD__SQLITE_PATH": str(data_dir / "gcd.sqlite"),
        "JOYNR_GCD__GCD__DATA_DIR": str(data_dir),
        "JOYNR_GCD__GCD__BROKER_URL": broker_url, "JOYNR_GCD__ADMIN__PORT": "0", **env})


# ---------------------------------------------------------------------------- HTTP


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _get(url: str, headers: dict[str, str], method: str) -> Answer:
    request = urllib.request.Request(url, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return Answer(answer.status, {k.lower(): v for k, v in answer.headers.items()},
                          answer.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, {k.lower(): v for k, v in error.headers.items()},
                      error.read())


async def http_get(url: str, *, headers: dict[str, str] | None = None,
                   method: str = "GET") -> Answer:
    return await asyncio.to_thread(_get, url, headers or {}, method)


async def raw_exchange(url: str, data: bytes | Iterable[bytes], *, pause_s: float = 0.0,
                       timeout_s: float = 20.0) -> bytes:
    """Write ``data`` (pieces with ``pause_s`` between them) to the host and port of ``url``
    and read until the server closes the connection."""
    host, port = re.match(r"http://\[?([^\]/]+?)\]?:(\d+)", url).groups()  # type: ignore[union-attr]
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        async with asyncio.timeout(timeout_s):
            for piece in [data] if isinstance(data, bytes) else data:
                writer.write(piece)
                await writer.drain()
                if pause_s:
                    await asyncio.sleep(pause_s)
            return await reader.read(-1)
    finally:
        writer.close()


def status_line(answer: bytes) -> str:
    return answer.split(b"\r\n", 1)[0].decode(errors="replace")


# ---------------------------------------------------------------------------- metrics


class Metrics:
    """Samples of one scrape: ``m["name", {"label": "value"}]`` (0 when absent)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
        self.types: dict[str, str] = {}
        for family in text_string_to_metric_families(text):
            self.types[family.name] = family.type
            for sample in family.samples:
                self.samples[sample.name, frozenset(sample.labels.items())] = sample.value

    def __getitem__(self, key: str | tuple[str, dict[str, str]]) -> float:
        name, labels = (key, {}) if isinstance(key, str) else key
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def has(self, name: str, **labels: str) -> bool:
        return (name, frozenset(labels.items())) in self.samples

    def labelled(self, name: str) -> dict[frozenset[tuple[str, str]], float]:
        return {labels: v for (n, labels), v in self.samples.items() if n == name}


async def scrape(admin_url: str) -> Metrics:
    answer = await http_get(f"{admin_url}/metrics")
    assert answer.status == 200, answer
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return Metrics(answer.body.decode())


async def health(admin_url: str, kind: str) -> Answer:
    return await http_get(f"{admin_url}/health/{kind}")


async def eventually_async(check: Any, what: str, timeout_s: float = WAIT_S,
                           interval_s: float = 0.1) -> Any:
    """Await ``check()`` until it returns something true; that value."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(interval_s)
    raise AssertionError(f"{what} not reached within {timeout_s} s (last: {last!r})")

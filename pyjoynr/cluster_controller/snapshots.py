"""Routing table snapshots: the cluster controller's routing table written to a file.

Schema and file name: :mod:`runtime.records` and docs/records.md (snapshot schema version 1):
``<dir>/routing-<cluster controller id>-<UTC yyyymmddTHHMMSSZ>-<ms>.jsonl.gz``, one JSON line per
routing entry, written to ``.part`` and renamed when complete.

A snapshot is taken on demand (:meth:`RoutingSnapshots.request`: the process calls it on
SIGUSR1, which ``python -m pyjoynr.cluster_controller snapshot`` sends) and, with
``interval_s`` > 0, periodically. The table is copied on the event loop (a list of its
entries, which are immutable), and rendered, compressed and written in a thread. A request
while a snapshot is being written is served by one more snapshot once it is done (requests
are never lost, and never pile up). At most ``max_files`` snapshots of this process are kept:
the oldest go.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyjoynr.runtime import records
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingEntry
from pyjoynr.runtime.tasks import TaskSupervisor

__all__ = ["RoutingSnapshotSettings", "RoutingSnapshots", "write_snapshot"]

log = get_logger(__name__)


@dataclass(frozen=True)
class RoutingSnapshotSettings:
    """The ``[routing_snapshots]`` section of the cluster controller's configuration."""

    #: where the snapshots go; empty: <data_dir>/routing-snapshots
    dir: str = ""
    #: seconds between two periodic snapshots; 0: none (only on demand)
    interval_s: float = 0.0
    #: snapshots of this cluster controller kept; the oldest are deleted
    max_files: int = 100
    #: gzip compression level, 1 (fastest) to 9 (smallest)
    gzip_level: int = 6

    def __post_init__(self) -> None:
        if self.interval_s < 0:
            raise ValueError(f"interval_s must be >= 0 (0: off), got {self.interval_s}")
        if self.max_files < 1:
            raise ValueError(f"max_files must be >= 1, got {self.max_files}")
        if not 1 <= self.gzip_level <= 9:
            raise ValueError(f"gzip_level must be 1..9, got {self.gzip_level}")

    def directory(self, data_dir: Path) -> Path:
        return Path(self.dir) if self.dir else data_dir / "routing-snapshots"


def write_snapshot(directory: Path, process_id: str, taken_ms: int,
                   entries: list[tuple[str, RoutingEntry]], *, gzip_level: int = 6,
                   max_files: int | None = None) -> Path:
    """Write one snapshot file (``.part``, then renamed) and delete the oldest snapshots of
    ``process_id`` beyond ``max_files``; the file's path. Blocking: run it in a thread."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / records.snapshot_file_name(process_id, taken_ms)
    part = path.with_name(path.name + ".part")
    with open(part, "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=gzip_level, mtime=0) as out:
        chunk: list[str] = []
        for line in records.snapshot_lines(taken_ms, process_id, entries):
            chunk.append(line)
            if len(chunk) >= 1000:
                out.write("".join(chunk).encode("ascii"))
                chunk.clear()
        out.write("".join(chunk).encode("ascii"))
    os.replace(part, path)
    if max_files is not None:
        prefix = f"routing-{records.file_process_id(process_id)}-"
        kept = sorted(p for p in directory.iterdir()
                      if p.name.startswith(prefix) and p.name.endswith(".jsonl.gz"))
        for old in kept[:-max_files]:
            try:
                old.unlink()
                log.info("routing snapshot %s deleted (at most %d are kept)", old.name,
                         max_files)
            except OSError as exc:
                log.warning("cannot delete routing snapshot %s: %s", old, exc)
    return path


class RoutingSnapshots:
    """Snapshots of one routing table (see the module docstring). Its task (the periodic
    timer, the one writing) belongs to ``tasks``."""

    def __init__(self, router: MessageRouter, directory: Path, process_id: str,
                 settings: RoutingSnapshotSettings, tasks: TaskSupervisor, *,
                 clock_ms: Callable[[], int] = now_ms) -> None:
        """``router``: the one whose routing table is written."""
        self.router = router
        self.directory = directory
        self.process_id = process_id
        self.settings = settings
        self.tasks = tasks
        self.clock_ms = clock_ms
        self.written = 0
        self.failed = 0
        #: the path of the last snapshot written
        self.last: Path | None = None
        self._writing: asyncio.Task[None] | None = None
        self._again = False

    def start(self) -> None:
        if self.settings.interval_s > 0:
            self.tasks.every(self.settings.interval_s, self.request, name="routing-snapshot")
            log.info("routing snapshots every %.0f s to %s", self.settings.interval_s,
                     self.directory)

    def request(self) -> None:
        """Take a snapshot now, or right after the one being written (from the event loop:
        a signal handler, a timer)."""
        if self._writing is not None and not self._writing.done():
            self._again = True
            return
        if self.tasks.closed:
            log.info("routing snapshot not taken: the cluster controller is stopping")
            return
        self._writing = self.tasks.spawn(self._write_all(), name="routing-snapshot-write")

    async def take(self) -> Path:
        """Take a snapshot and wait until it is written; its path (OSError if it failed)."""
        while self._writing is not None and not self._writing.done():
            await asyncio.wait({self._writing})
        return await self._write_one()

    async def _write_all(self) -> None:
        self._again = True
        while self._again:
            self._again = False
            with contextlib.suppress(OSError):  # logged and counted there
                await self._write_one()

    async def _write_one(self) -> Path:
        entries = self.router.routing_entries()  # immutable entries: a consistent copy
        taken = self.clock_ms()
        s = self.settings
        try:
            path = await asyncio.to_thread(write_snapshot, self.directory, self.process_id,
                                           taken, entries, gzip_level=s.gzip_level,
                                           max_files=s.max_files)
        except OSError as exc:
            self.failed += 1
            log.error("routing snapshot to %s failed: %s", self.directory, exc)
            raise
        self.written += 1
        self.last = path
        log.info("routing snapshot: %d entr%s written to %s", len(entries),
                 "y" if len(entries) == 1 else "ies", path)
        return path

    async def stop(self) -> None:
        """Wait for the snapshot being written, if any."""
        task = self._writing
        if task is not None and not task.done():
            self._again = False
            await asyncio.wait({task}, timeout=30)

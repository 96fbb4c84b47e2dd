"""The message audit log: one record per routing decision, written off the event loop.

Schema and file names: :mod:`runtime.records` and docs/records.md (audit schema version 1).

:class:`AuditLog` is the audit hook of a process's telemetry (``Telemetry(audit=)``, handed to
its router, runtime.telemetry): the router calls :meth:`AuditLog.delivered` /
:meth:`AuditLog.decided` at each routing decision (see docs/records.md for where), which append
one tuple of the message's fields to an in-memory batch: no dict, no JSON, no I/O on the event
loop. Whole batches go to a writer thread (one per log, fed through a queue, when a batch is
full and every ``flush_interval_s``, a periodic job of the process's
:class:`~runtime.tasks.TaskSupervisor`), which builds the JSON lines, gzips them and appends
them to ``<dir>/audit-<process>-<UTC time>-<seq>.jsonl.gz.part``.

Files: each batch is one gzip member (a file is a valid multi-member gzip file at every batch
boundary, and its size is known exactly); a file is closed (renamed without ``.part``) when the
next member would take it over ``max_file_bytes``, when it is older than ``max_file_age_s``,
and at shutdown. Before anything is written, the oldest closed files of this process are
deleted until the closed files plus the one being written plus the new member fit in
``max_total_bytes`` (each deletion logged and counted). So the log never holds more than
``max_total_bytes`` on disk.

Memory: the records waiting in memory (the batch being filled and those handed to the writer)
are bounded by ``max_pending_bytes`` (each counted at its strings' lengths plus a fixed
overhead); when the writer falls behind, further records are dropped and counted
(``records_dropped``), never waited for: routing does not block on the disk.

Shutdown (:meth:`AuditLog.close`): the batch being filled goes to the writer, which writes
everything it was given and closes the file; no record taken before is lost on a clean stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pyjoynr.runtime import records
from pyjoynr.runtime.addresses import (
    CLIENT_ADDRESS_TYPES,
    Address,
    MqttAddress,
)
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import Message
from pyjoynr.runtime.tasks import TaskSupervisor

__all__ = ["AuditLog", "AuditSettings", "AuditWriter", "peer_text"]

log = get_logger(__name__)

#: what one waiting record holds besides its strings (the tuple, its ints), about
RECORD_OVERHEAD_BYTES: Final = 256


@dataclass(frozen=True)
class AuditSettings:
    """The ``[audit]`` section of a cluster controller's (or a GCD's) configuration."""

    #: write the message audit log
    enabled: bool = False
    #: where the files go; empty: the process's default (<data_dir>/audit for a cluster
    #: controller, var/gcd/audit for a GCD)
    dir: str = ""
    #: a file is closed when the next batch would take it over this size (compressed bytes)
    max_file_bytes: int = 16 * 1024 * 1024
    #: ... or when it is older than this (seconds)
    max_file_age_s: float = 300.0
    #: the files of this process together never take more than this; the oldest closed files
    #: are deleted first
    max_total_bytes: int = 1024 * 1024 * 1024
    #: records per batch handed to the writer thread (a full batch goes at once) ...
    batch_records: int = 1000
    #: ... and the seconds after which a batch that is not full goes all the same
    flush_interval_s: float = 1.0
    #: records waiting in memory for the writer may hold this much; beyond it further records
    #: are dropped and counted (audit_records_dropped)
    max_pending_bytes: int = 16 * 1024 * 1024
    #: gzip compression level, 1 (fastest: the default; the records compress well anyway) to
    #: 9 (smallest)
    gzip_level: int = 1
    #: seconds between two INFO lines of the log's counters (0: none; they are in the stop line
    #: anyway)
    stats_interval_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_file_bytes < 1024:
            raise ValueError(f"max_file_bytes must be >= 1024, got {self.max_file_bytes}")
        if self.max_total_bytes < 2 * self.max_file_bytes:
            raise ValueError("max_total_bytes must be at least twice max_file_bytes (the file "
                             f"being written and one closed file), got {self.max_total_bytes}")
        if not self.max_file_age_s > 0:
            raise ValueError(f"max_file_age_s must be > 0, got {self.max_file_age_s}")
        if self.batch_records < 1:
            raise ValueError(f"batch_records must be >= 1, got {self.batch_records}")
        if not self.flush_interval_s > 0:
            raise ValueError(f"flush_interval_s must be > 0, got {self.flush_interval_s}")
        if self.max_pending_bytes < 64 * 1024:
            raise ValueError(f"max_pending_bytes must be >= 65536, got {self.max_pending_bytes}")
        if not 1 <= self.gzip_level <= 9:
            raise ValueError(f"gzip_level must be 1..9, got {self.gzip_level}")
        if self.stats_interval_s < 0:
            raise ValueError(f"stats_interval_s must be >= 0, got {self.stats_interval_s}")

    def directory(self, default: Path) -> Path:
        """The configured directory, or ``default`` when none is."""
        return Path(self.dir) if self.dir else default


def peer_text(origin: Address | None) -> str:
    """Where a message came from, as the ``peer`` of a refusal: ``client <id>`` (a websocket
    connection), ``backend <gbid>`` (an MQTT backend), ``this process``."""
    if origin is None:
        return "this process"
    if type(origin) in CLIENT_ADDRESS_TYPES:
        return f"client {getattr(origin, 'id', '')}"
    if type(origin) is MqttAddress:
        return f"backend {origin.broker_uri}"
    return repr(origin)


# One waiting record, as cheap to make as can be (the writer thread builds the line): a
# delivered message (time ns, id, type, sender, recipient, hop, bytes, queued_ms), or any
# other decision, which adds (gbid, outcome, reason, peer). ``hop`` is the next hop's Address:
# the writer finds its kind and GBID.
Pending = tuple[Any, ...]

_STOP: Final = object()


class AuditWriter:
    """The files of one audit log: gzip members appended to the current ``.part`` file,
    rotation by size and age, the bound on total disk use. Used by one thread at a time (the
    writer thread of :class:`AuditLog`); ``clock_ms``: epoch ms for the file names,
    ``monotonic``: seconds for the ages."""

    def __init__(self, directory: Path, process_id: str, settings: AuditSettings, *,
                 clock_ms: Callable[[], int] = now_ms,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.directory = directory
        self.process_id = process_id
        self.settings = settings
        self.clock_ms = clock_ms
        self.monotonic = monotonic
        self.records_written = 0
        self.files_closed = 0
        self.files_deleted = 0
        self.bytes_deleted = 0
        self.write_errors = 0
        self._prefix = f"audit-{records.file_process_id(process_id)}-"
        self._closed: deque[tuple[Path, int]] = deque()  # oldest first: (path, bytes)
        self._closed_bytes = 0
        self._file: Any = None  # the open .part file (binary)
        self._path: Path | None = None  # its final name
        self._size = 0
        self._opened_at = 0.0
        self._seq = 0
        self._scanned = False

    # ------------------------------------------------------------------ state

    @property
    def disk_bytes(self) -> int:
        """What this log's files take on disk now (closed ones and the one being written)."""
        return self._closed_bytes + self._size

    @property
    def current(self) -> Path | None:
        """The final name of the file being written (it is at this name + ``.part``)."""
        return self._path

    def seconds_to_rotation(self) -> float | None:
        """Until the open file is old enough to be closed (None: no file is open)."""
        if self._file is None:
            return None
        return max(0.0, self._opened_at + self.settings.max_file_age_s - self.monotonic())

    def _scan(self) -> None:
        """The closed files of this process left by earlier runs count towards the bound; a
        ``.part`` file of an earlier run that did not stop cleanly is closed as it is (its
        complete gzip members are readable; a reader reports a truncated last one)."""
        self._scanned = True
        self.directory.mkdir(parents=True, exist_ok=True)
        found: list[tuple[str, Path]] = []
        for path in self.directory.iterdir():
            name = path.name
            if not name.startswith(self._prefix):
                continue
            if name.endswith(".jsonl.gz.part"):
                final = path.with_name(name.removesuffix(".part"))
                try:
                    os.replace(path, final)
                except OSError as exc:
                    log.warning("audit log: cannot close %s left by an earlier run: %s", path,
                                exc)
                    continue
                log.warning("audit log: closed %s, left unfinished by an earlier run", final)
                found.append((final.name, final))
            elif name.endswith(".jsonl.gz"):
                found.append((name, path))
        for name, path in sorted(found):  # by UTC time, then sequence number
            with contextlib.suppress(OSError):
                size = path.stat().st_size
                self._closed.append((path, size))
                self._closed_bytes += size
            seq = name.removesuffix(".jsonl.gz").rsplit("-", 1)[-1]
            if seq.isdigit():
                self._seq = max(self._seq, int(seq) + 1)

    # ------------------------------------------------------------------ writing

    def write(self, lines: list[str]) -> None:
        """Append ``lines`` (JSON lines, each ending in a newline) as gzip member(s); a member
        that alone would exceed ``max_file_bytes`` is split."""
        if not lines:
            return
        member = gzip.compress("".join(lines).encode("ascii"),
                               compresslevel=self.settings.gzip_level, mtime=0)
        if len(member) > self.settings.max_file_bytes and len(lines) > 1:
            half = len(lines) // 2
            self.write(lines[:half])
            self.write(lines[half:])
            return
        self._append(member, len(lines))

    def _append(self, member: bytes, count: int) -> None:
        if not self._scanned:
            self._scan()
        s = self.settings
        if self._file is not None and (
                self._size + len(member) > s.max_file_bytes
                or self.monotonic() - self._opened_at >= s.max_file_age_s):
            self.rotate()
        self._make_room(len(member))
        if self._file is None:
            self._open()
        view = memoryview(member)
        while view:  # (a raw file may take less than all in one write)
            view = view[self._file.write(view):]
        self._size += len(member)
        self.records_written += count

    def _open(self) -> None:
        self._path = self.directory / records.audit_file_name(self.process_id,
                                                              self.clock_ms(), self._seq)
        self._seq += 1
        # unbuffered: each member reaches the file in one write (a batch at a time)
        self._file = open(self._path.with_name(self._path.name + ".part"), "wb",  # noqa: SIM115
                          buffering=0)
        self._size = 0
        self._opened_at = self.monotonic()

    def _make_room(self, incoming: int) -> None:
        """Delete the oldest closed files until everything fits in max_total_bytes."""
        limit = self.settings.max_total_bytes
        while self._closed and self._closed_bytes + self._size + incoming > limit:
            path, size = self._closed.popleft()
            self._closed_bytes -= size
            try:
                path.unlink()
            except FileNotFoundError:
                pass  # someone else removed it (e.g. the pipeline's housekeeping)
            except OSError as exc:
                log.warning("audit log: cannot delete %s: %s", path, exc)
                continue
            self.files_deleted += 1
            self.bytes_deleted += size
            log.info("audit log: deleted %s (%d bytes): the files of %s may take %d bytes",
                     path.name, size, self.process_id, limit)

    def rotate(self) -> Path | None:
        """Close the current file (rename it without ``.part``); its final path, or None when
        no file was open."""
        file, path = self._file, self._path
        if file is None or path is None:
            return None
        self._file = self._path = None
        size, self._size = self._size, 0
        file.close()
        os.replace(path.with_name(path.name + ".part"), path)
        self._closed.append((path, size))
        self._closed_bytes += size
        self.files_closed += 1
        log.debug("audit log: closed %s (%d bytes)", path.name, size)
        return path

    def rotate_if_old(self) -> None:
        if self._file is not None and (
                self.monotonic() - self._opened_at >= self.settings.max_file_age_s):
            self.rotate()

    def close(self) -> None:
        self.rotate()


_json_str = records.json_string


def encode(encoder: records.AuditLineEncoder, pending: list[Pending]) -> list[str]:
    """The JSON lines of waiting records, each with its newline: the lines of
    runtime.records.audit_line, built with the encoder's cached parts (the writer thread's
    loop: every record passes here)."""
    head, proc, middle_of, tail_of = encoder.head, encoder.proc, encoder.middle, encoder.tail
    delivered_tail = tail_of(records.DELIVERED, None, None)
    kinds = records.ADDRESS_KINDS
    middles: dict[Any, str] = {}  # this batch's, keyed without the hop's kind (cheaper)
    out: list[str] = []
    append = out.append
    for record in pending:
        if len(record) == 8:  # delivered: the common case
            ns, ident, mtype, sender, recipient, hop, size, queued_ms = record
            hop_type = type(hop)
            gbid = hop.broker_uri if hop_type is MqttAddress else None
            key = (mtype, sender, recipient, hop_type, gbid)
            middle = middles.get(key)
            if middle is None:
                middle = middles[key] = middle_of(key, kinds.get(hop_type)
                                                  or records.address_kind(hop))
            append(f"{head}{ns // 1_000_000}{proc}{_json_str(ident)}{middle}{size}"
                   f"{delivered_tail}{queued_ms}}}\n")
        else:
            ns, ident, mtype, sender, recipient, hop, size, _, gbid, outcome, reason, peer = \
                record
            kind = None
            if hop is not None:
                kind = records.address_kind(hop)
                if gbid is None and type(hop) is MqttAddress:
                    gbid = hop.broker_uri
            middle = middle_of((mtype, sender, recipient, kind, gbid), kind)
            append(f"{head}{ns // 1_000_000}{proc}{_json_str(ident)}{middle}{size}"
                   f"{tail_of(outcome, reason, peer)}null}}\n")
    return out


class AuditLog:
    """The audit log of one process (see the module docstring).

    ``start(tasks)`` starts the writer thread and the periodic jobs; the router and transports
    call :meth:`delivered` and :meth:`decided`; ``await close()`` writes everything out.
    """

    def __init__(self, settings: AuditSettings, directory: Path, process_id: str, *,
                 clock_ns: Callable[[], int] = time.time_ns) -> None:
        """``clock_ns``: epoch nanoseconds, the time of each record (``ts`` is in ms)."""
        self.settings = settings
        self.directory = directory
        self.process_id = process_id
        self.clock_ns = clock_ns
        self.writer = AuditWriter(directory, process_id, settings,
                                  clock_ms=lambda: clock_ns() // 1_000_000)
        self.encoder = records.AuditLineEncoder(process_id)
        #: records taken (handed to the writer or waiting in the batch), and dropped because
        #: max_pending_bytes was used
        self.records_taken = 0
        self.records_dropped = 0
        self._batch: list[Pending] = []
        self._batch_bytes = 0
        self._batch_limit = settings.batch_records
        # bytes the waiting records may still take; the writer thread adds what it has
        # written to _freed (only it writes there), the loop takes it back into _room
        self._room = settings.max_pending_bytes
        self._freed = 0
        self._freed_seen = 0
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._dropping = False
        self._closed = False
        self._failed_records = 0

    # ------------------------------------------------------------------ the hot path

    def delivered(self, message: Message, hop: Address, queued_ms: int) -> None:
        """``message`` was handed to the transport of ``hop``, which accepted it, after
        ``queued_ms`` in a queue (0: at once)."""
        # (the hot path: a tuple of references and two ints, nothing else)
        ident, sender, recipient = message.id, message.sender, message.recipient
        cost = RECORD_OVERHEAD_BYTES + len(ident) + len(sender) + len(recipient)
        self._room = room = self._room - cost
        if room < 0 and not self._reclaim(cost):
            return
        raw = message.raw
        if raw is None:
            raw = message.raw_smrf  # (an SMRF frame received)
        batch = self._batch
        batch.append((self.clock_ns(), ident, message.type, sender, recipient, hop,
                      len(message.body) if raw is None else len(raw), queued_ms))
        self._batch_bytes += cost
        if len(batch) >= self._batch_limit:
            self.flush()

    def decided(self, message: Message, outcome: str, hop: Address | None = None,
                reason: str | None = None, peer: str | None = None) -> None:
        """Any other decision on ``message``: queued (``hop``: the next hop that refused it,
        None without a route), dropped or refused for ``reason``. A refusal's ``peer``
        defaults to where the message came from (:func:`peer_text`); a drop or refusal of a
        message from MQTT without an MQTT hop carries the GBID of its backend."""
        gbid = None
        if outcome == records.REFUSED:
            if peer is None:
                peer = peer_text(message.origin)
        else:
            peer = None  # (only a refusal names its peer)
        if outcome != records.QUEUED and type(hop) is not MqttAddress:
            gbid = records.address_gbid(message.origin)
        ident, sender, recipient = message.id, message.sender, message.recipient
        cost = (RECORD_OVERHEAD_BYTES + len(ident) + len(sender) + len(recipient)
                + (len(peer) if peer is not None else 0))
        self._room = room = self._room - cost
        if room < 0 and not self._reclaim(cost):
            return
        raw = message.raw
        if raw is None:
            raw = message.raw_smrf
        self._batch.append((self.clock_ns(), ident, message.type, sender, recipient, hop,
                            len(message.body) if raw is None else len(raw), None, gbid,
                            outcome, reason, peer))
        self._batch_bytes += cost
        if len(self._batch) >= self._batch_limit:
            self.flush()

    def _reclaim(self, cost: int) -> bool:
        """The room ran out (``cost``: of the record that did not fit, already taken from
        it): take back what the writer has freed since; True when the record fits now, else
        it is dropped (counted) and its cost given back."""
        freed = self._freed
        self._room += freed - self._freed_seen
        self._freed_seen = freed
        if self._room >= 0 and not self._closed:
            if self._dropping:
                self._dropping = False
                log.warning("audit log %s: writing again; %d record(s) dropped so far",
                            self.process_id, self.records_dropped)
            return True
        self._room += cost
        self.records_dropped += 1
        if not self._dropping and not self._closed:
            self._dropping = True
            log.warning("audit log %s: the writer is behind (%d bytes of records wait): "
                        "dropping records until it catches up (counted as records_dropped)",
                        self.process_id, self.settings.max_pending_bytes)
        return False

    # ------------------------------------------------------------------ batches

    def flush(self) -> None:
        """Hand the batch being filled to the writer thread."""
        batch = self._batch
        if not batch:
            return
        self._batch = []
        self.records_taken += len(batch)
        self._queue.put((batch, self._batch_bytes))
        self._batch_bytes = 0
        # take back what the writer freed meanwhile (cheap; keeps _room close to the truth)
        freed = self._freed
        self._room += freed - self._freed_seen
        self._freed_seen = freed

    @property
    def pending_bytes(self) -> int:
        """What the records waiting in memory hold (counted as for max_pending_bytes)."""
        return self.settings.max_pending_bytes - self._room - (self._freed - self._freed_seen)

    def _run(self) -> None:
        """The writer thread: write each batch it is given, close files that got old."""
        writer = self.writer
        while True:
            try:
                item = self._queue.get(timeout=writer.seconds_to_rotation())
            except queue.Empty:
                self._guarded(writer.rotate_if_old)
                continue
            if item is _STOP:
                self._guarded(writer.close)
                return
            batch, size = item
            if not self._guarded(self._write_batch, batch):
                self._failed_records += len(batch)
            self._freed += size

    def _write_batch(self, batch: list[Pending]) -> None:
        self.writer.write(encode(self.encoder, batch))

    def _guarded(self, step: Callable[..., object], *args: Any) -> bool:
        try:
            step(*args)
        except Exception as exc:  # a full disk must not end the thread
            self.writer.write_errors += 1
            level = logging.ERROR if self.writer.write_errors == 1 else logging.DEBUG
            log.log(level, "audit log %s: writing in %s failed: %s (%d failure(s) so far; "
                    "records lost are counted as records_failed)", self.process_id,
                    self.directory, exc, self.writer.write_errors, exc_info=True)
            with contextlib.suppress(Exception):
                self.writer.rotate()
            return False
        return True

    # ------------------------------------------------------------------ lifecycle

    def start(self, tasks: TaskSupervisor | None = None) -> None:
        """Start the writer thread and, with ``tasks``, the periodic hand-over of batches that
        are not full and the statistics line."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=f"audit-{self.process_id}",
                                        daemon=True)
        self._thread.start()
        if tasks is not None:
            tasks.every(self.settings.flush_interval_s, self.flush, name="audit-flush")
            if self.settings.stats_interval_s > 0:
                tasks.every(self.settings.stats_interval_s, self.log_stats, name="audit-stats")
        log.info("audit log %s: writing to %s (files up to %d bytes or %.0f s, %d bytes in "
                 "all)", self.process_id, self.directory, self.settings.max_file_bytes,
                 self.settings.max_file_age_s, self.settings.max_total_bytes)

    async def close(self, timeout_s: float = 60.0) -> None:
        """Write every record taken so far and close the file (waits at most ``timeout_s``
        for the writer). Records offered afterwards are dropped (counted). Idempotent."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        self._room = -(1 << 62)  # nothing more is taken
        thread = self._thread
        if thread is None:  # never started: write here (a test, or a failed start)
            self._thread = threading.Thread(target=self._run, daemon=True)
            thread = self._thread
            thread.start()
        self._queue.put(_STOP)
        await asyncio.to_thread(thread.join, timeout_s)
        if thread.is_alive():
            log.error("audit log %s: the writer did not finish within %.0f s", self.process_id,
                      timeout_s)
        log.info("audit log %s closed: %s", self.process_id, self.stats())

    def stats(self) -> dict[str, int]:
        """The counters an operator needs (also in the periodic line and the stop line)."""
        w = self.writer
        return {
            "audit_records_written": w.records_written,
            "audit_records_dropped": self.records_dropped,
            "audit_records_failed": self._failed_records,
            "audit_records_pending": (self.records_taken + len(self._batch)
                                      - w.records_written - self._failed_records),
            "audit_files_rotated": w.files_closed,
            "audit_files_deleted": w.files_deleted,
            "audit_write_errors": w.write_errors,
            "audit_disk_bytes": w.disk_bytes,
        }

    def log_stats(self) -> None:
        log.info("audit log %s: %s", self.process_id,
                 ", ".join(f"{k.removeprefix('audit_')} {v}" for k, v in self.stats().items()))

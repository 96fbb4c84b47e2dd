"""``python -m pyjoynr.cluster_controller snapshot``: a routing table snapshot of a running cluster
controller, on demand.

The running cluster controller writes its process id to ``<data_dir>/cluster-controller.pid``
and takes a snapshot when it receives SIGUSR1 (cluster_controller.snapshots). This command
reads the same configuration (``--config``, ``JOYNR_CC__`` variables) to find the pid file and
the snapshot directory, sends SIGUSR1, waits (at most ``--timeout`` seconds) for a snapshot
taken after the signal, and prints its path.

Why a signal: it is local only (only the CC's user or root may send it), needs no listening
socket and no new network entry point, and the routing table is never exposed to websocket
clients. Before sending, the command checks that the process is a cluster controller (its
command line), since SIGUSR1 ends a process that does not handle it (a stale pid file).

Exit status: 0 with the path printed, 1 when no snapshot came (or no such process), 2 for a bad
configuration or usage.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import signal
import sys
import time
from pathlib import Path

from pyjoynr.cluster_controller.config import DEFAULT_CONFIG, ENV_PREFIX, ClusterControllerConfig
from pyjoynr.runtime import records
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.config import ConfigError
from pyjoynr.runtime.logs import get_logger

__all__ = ["PID_FILE_NAME", "remove_pid_file", "snapshot_main", "write_pid_file"]

log = get_logger(__name__)

PID_FILE_NAME = "cluster-controller.pid"


def write_pid_file(data_dir: Path) -> Path | None:
    """Write this process's id to ``<data_dir>/cluster-controller.pid`` (None if it cannot)."""
    path = data_dir / PID_FILE_NAME
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".pid.tmp")
        tmp.write_text(f"{os.getpid()}\n", encoding="ascii")
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("cannot write the pid file %s: %s (the snapshot command then needs --pid)",
                    path, exc)
        return None
    return path


def remove_pid_file(path: Path | None) -> None:
    """Remove the pid file if it still names this process."""
    if path is None:
        return
    with contextlib.suppress(OSError, ValueError):
        if int(path.read_text(encoding="ascii").strip()) == os.getpid():
            path.unlink()


def _fail(message: str, status: int = 1) -> int:
    sys.stderr.write(f"cluster-controller snapshot: {message}\n")
    return status


def _is_cluster_controller(pid: int) -> bool | None:
    """Whether process ``pid`` runs the cluster controller (None: cannot tell)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return None
    text = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return "cluster_controller" in text or "cluster-controller" in text


def _taken_ms(path: Path) -> int | None:
    """The ``taken_ms`` of a snapshot file's first line (None: no entries, or unreadable)."""
    try:
        with gzip.open(path, "rt", encoding="ascii") as file:
            line = file.readline()
        return int(json.loads(line)["taken_ms"]) if line else None
    except (OSError, ValueError, KeyError, EOFError):
        return None


def _snapshots(directory: Path, prefix: str) -> dict[str, tuple[int, int]]:
    """Snapshot files (name -> (inode, mtime ns)) in ``directory`` whose name starts with
    ``prefix``."""
    found = {}
    with contextlib.suppress(OSError):
        for path in directory.iterdir():
            if path.name.startswith(prefix) and path.name.endswith(".jsonl.gz"):
                with contextlib.suppress(OSError):
                    st = path.stat()
                    found[path.name] = (st.st_ino, st.st_mtime_ns)
    return found


def snapshot_main(argv: list[str], prog: str = "pyjoynr-cluster-controller") -> int:
    """The snapshot command; ``prog``: the name the cluster controller's program was called by."""
    parser = argparse.ArgumentParser(
        prog=f"{prog} snapshot",
        description="Ask the running cluster controller for a routing table snapshot "
                    "(SIGUSR1), wait for the file and print its path. The cluster controller "
                    "is found by its pid file (<data_dir>/cluster-controller.pid) or --pid; "
                    "the directory is [routing_snapshots] dir of the same configuration.")
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG,
                        help=f"the cluster controller's TOML configuration (default: "
                             f"{DEFAULT_CONFIG}); {ENV_PREFIX}__<SECTION>__<KEY> variables "
                             "override it, as for the cluster controller")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--pid", type=int, help="the cluster controller's process id")
    who.add_argument("--pid-file", type=Path,
                     help="file holding it (default: <data_dir>/cluster-controller.pid)")
    parser.add_argument("--dir", type=Path,
                        help="where the snapshots are written (default: from the configuration)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds to wait for the snapshot (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        config = ClusterControllerConfig.load(args.config)
    except ConfigError as exc:
        return _fail(f"bad configuration: {exc}", 2)
    data_dir = config.cluster_controller.data_dir
    pid = args.pid
    if pid is None:
        pid_file = args.pid_file or data_dir / PID_FILE_NAME
        try:
            pid = int(pid_file.read_text(encoding="ascii").strip())
        except (OSError, ValueError) as exc:
            return _fail(f"no cluster controller process id in {pid_file} ({exc}); is it "
                         "running with this configuration? (or give --pid)")
    if _is_cluster_controller(pid) is False:
        return _fail(f"process {pid} is not a running cluster controller (stale pid file?)")
    directory = args.dir or config.routing_snapshots.directory(data_dir)
    # the cluster controller's id, if it is known without generating one
    cc_id = config.cluster_controller.id
    if not cc_id:
        with contextlib.suppress(OSError):
            cc_id = (data_dir / "cluster-controller-id").read_text(encoding="utf-8").strip()
    prefix = f"routing-{records.file_process_id(cc_id)}-" if cc_id else "routing-"
    before = _snapshots(directory, prefix)
    sent_ms = now_ms()
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        return _fail(f"no process {pid}")
    except PermissionError:
        return _fail(f"not allowed to signal process {pid} (run as its user)")
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        for name, identity in sorted(_snapshots(directory, prefix).items()):
            if before.get(name) == identity:
                continue
            path = directory / name
            taken = _taken_ms(path)
            # (an empty table gives an empty file: new since the signal is enough then)
            if taken is None or taken >= sent_ms:
                sys.stdout.write(f"{path}\n")
                return 0
        time.sleep(0.05)
    return _fail(f"no new snapshot in {directory} within {args.timeout:.0f} s; see the "
                 "cluster controller's log")

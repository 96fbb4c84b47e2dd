"""The ``--profile`` of the path benches prints where the time went per part of the path
(bench/_common.py's print_by_part): run briefly through bench/websocket_rpc.py, each part a
line with microseconds per call and its share, the shares adding up to the whole. No timing
assertions: the figures of so short a run mean nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PART_LINE = re.compile(r"^\s+([0-9.]+) us\s+([0-9.]+) %  (.+)$")


def test_websocket_rpc_profile_prints_the_time_per_part_of_the_path() -> None:
    proc = subprocess.run(
        [sys.executable, "bench/websocket_rpc.py", "--calls", "200", "--rounds", "1",
         "--profile"],
        cwd=ROOT, text=True, capture_output=True, timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "Traceback" not in out + proc.stderr
    header = "--- profile: time per part of the path, per call (200 calls, "
    assert header in out, out
    section = out.split(header, 1)[1].split("\n---", 1)[0].splitlines()[1:]
    parts = {}
    for line in section:
        match = PART_LINE.match(line)
        assert match is not None, line
        parts[match.group(3)] = (float(match.group(1)), float(match.group(2)))
    # every hop of a request/reply through the CC has its part, each with some time
    for name in ("websocket frame read: the own reader, websockets' parser, data_received",
                 "websocket frame write: framing, send_frames and its socket write",
                 "frame decode: decode_frame, replyTo addresses",
                 "router: receive, route, _send, rules, routing table, queues, clock",
                 "outbox and the turn coalescer",
                 "proxy: _invoke, the message, waiting for the answer",
                 "bodies: request / reply encode and decode",
                 "skeleton / provider: dispatch, call, reply"):
        assert name in parts, (name, section)
        assert parts[name][0] > 0, (name, section)
    assert abs(sum(share for _, share in parts.values()) - 100) < 1, section

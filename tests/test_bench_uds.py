"""bench/uds.py, run briefly so that it cannot rot: both pairs travel as named (the websocket
pair on websocket, the UDS pair on the Unix domain socket, in the dialect asked for), every
path gets its figures and ratios. No timing assertions: the figures of so short a run mean
nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("dialect", ["native", "joynr"])
def test_the_uds_benchmark_runs_every_path_as_named(dialect: str) -> None:
    proc = subprocess.run(
        [sys.executable, "bench/uds.py", "--messages", "300", "--calls", "50", "--rounds", "1",
         "--window", "50", "--dialect", dialect],
        cwd=ROOT, text=True, capture_output=True, timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "Traceback" not in out + proc.stderr and "WRONG" not in out, out
    assert f"  websocket pair: ws-a, ws-b with {dialect} frames: as named" in out, out
    assert f"  uds pair: uds-a, uds-b with {dialect} frames: as named" in out, out
    for name in ("websocket", "uds", "raw websocket", "raw uds"):
        assert out.count(f"\n  {name:14} ") == 2, out  # one-way and request/reply lines
    assert "ratio uds/websocket: project " in out
    assert "ratio uds/websocket (p50 latency): project " in out
    assert "dropped: 0; refusals: none" in out

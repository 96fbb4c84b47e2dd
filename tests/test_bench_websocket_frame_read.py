"""bench/websocket_frame_read.py, run briefly so that it cannot rot: both readers read every
frame of every case (the script says WRONG otherwise) and each case prints its runs. No timing
assertions: the figures of so short a run mean nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_frame_read_benchmark_reads_every_frame_of_every_case() -> None:
    proc = subprocess.run(
        [sys.executable, "bench/websocket_frame_read.py", "--reads", "300", "--runs", "2",
         "--frames", "1", "7", "--payload", "70000"],
        cwd=ROOT, text=True, capture_output=True, timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "WRONG" not in out and "Traceback" not in proc.stderr, out + proc.stderr
    for side in ("server (masked frames)", "client"):
        for frames in (1, 7):
            for run in (1, 2):
                assert f"{side:22} {frames:4} frame(s) per read, run {run}: own reader" in out, out

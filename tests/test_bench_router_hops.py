"""bench/router_hops.py, run briefly so that it cannot rot: every message of every hop reaches
its next hop, for the project and for the raw relay (the script says WRONG otherwise), and each
hop prints its runs. No timing assertions: the figures of so short a run mean nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_router_hops_benchmark_routes_every_message_of_every_hop() -> None:
    proc = subprocess.run(
        [sys.executable, "bench/router_hops.py", "--messages", "200", "--rounds", "2",
         "--runs", "2"],
        cwd=ROOT, text=True, capture_output=True, timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "WRONG" not in out and "Traceback" not in proc.stderr, out + proc.stderr
    for run in (1, 2):
        for hop in ("decode", "CC hop", "runtime hop", "runtime route"):
            assert f"run {run}: {hop:13} project " in out, out
        assert f"run {run}: per one-way message (3 routings, 2 decodes) project " in out, out

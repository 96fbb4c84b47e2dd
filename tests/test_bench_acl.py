"""bench/acl_websocket_rpc.py, run briefly so that it cannot rot: the three set-ups answer, the
two with access control hold the table asked for, check every call and refuse none. No timing
assertions: the figures of so short a run mean nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_access_control_benchmark_checks_every_call_and_refuses_none() -> None:
    proc = subprocess.run(
        [sys.executable, "bench/acl_websocket_rpc.py", "--calls", "60", "--rounds", "1",
         "--entries", "2000"],
        cwd=ROOT, text=True, capture_output=True, timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "Traceback" not in out + proc.stderr and "ERROR" not in out, out
    for name in ("off", "on, interface level", "on, operation level"):
        assert f"access control {name}" in out, out
    assert out.count(" / off: ") == 2, out
    held = re.findall(r"(\d[\d,]*) entries in force; counters \{.*'checked': (\d+)", out)
    # every entry of the file, and a check per call (warm-up, round, first call)
    assert [int(n.replace(",", "")) for n, _ in held] == [2000, 2000], out
    assert all(int(checked) >= 60 + 60 + 1 for _, checked in held), out

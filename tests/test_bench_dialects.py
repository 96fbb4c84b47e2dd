"""bench/dialects.py, run briefly so that it cannot rot: every path of both transports runs,
is checked to have travelled as named (frame dialect, body format, SMRF publications) and
gets its line in the table; ``--profile`` prints its profile. No timing assertions: the
figures of so short a run mean nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("native", "native+json", "joynr+msgpack", "joynr+json")


def test_the_dialects_benchmark_runs_every_path_as_named() -> None:
    proc = subprocess.run(
        [sys.executable, "bench/dialects.py", "--messages", "200", "--rounds", "1",
         "--window", "50", "--profile"],
        cwd=ROOT, text=True, capture_output=True, timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "Traceback" not in out + proc.stderr
    assert "WRONG" not in out and "TIMEOUT" not in out, out
    for name in PATHS:
        # the check after the rounds, once per transport
        assert out.count(f"  {name}: websocket {'joynr' if 'joynr' in name else 'native'}, "
                         f"{'json' if 'json' in name else 'msgpack'} bodies") == 2, out
    assert out.count(" published as SMRF: as named") == 4, out  # MQTT's four paths
    lines = out.splitlines()
    for raw in ("raw relay", "raw composed"):  # the raw path's line in its table
        assert sum(line.startswith(f"  {raw} ") for line in lines) == 1, out
    assert out.count("goal joynr's dialect / native >= 0.7: joynr+msgpack ") == 2, out
    assert out.count("=== profile of one joynr+json round") == 2, out
    assert out.count("--- profile, top 25 by tottime ---") == 2, out

"""bench/dialects.py, run briefly so that it cannot rot: every path of both transports runs,
is checked to have travelled as named (frame dialect, body format, SMRF publications) and
gets its line in the table; so do the CC relay paths (websocket only: raw clients through the
CC, their frames forwarded unchanged) with the raw SMRF relay and the relay's ratio;
``--profile`` prints its profile. No timing assertions: the figures of so short a run mean
nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("native", "native+json", "joynr+msgpack", "joynr+json")
RELAYS = {"CC relay native": "native", "CC relay joynr": "joynr"}


def run_bench(*options: str) -> str:
    proc = subprocess.run(
        [sys.executable, "bench/dialects.py", "--messages", "200", "--rounds", "1",
         "--window", "50", *options],
        cwd=ROOT, text=True, capture_output=True, timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "Traceback" not in out + proc.stderr
    assert "WRONG" not in out and "TIMEOUT" not in out, out
    return out


def table_lines(out: str, name: str) -> int:
    """The lines of the tables that are the path's: its name (then a space), figures last."""
    return sum(line.startswith(f"  {name} ") and line[-1].isdigit()
               for line in out.splitlines())


def test_the_dialects_benchmark_runs_every_path_as_named() -> None:
    out = run_bench("--profile")
    for name in PATHS:
        # the check after the rounds, once per transport
        assert out.count(f"  {name}: websocket {'joynr' if 'joynr' in name else 'native'}, "
                         f"{'json' if 'json' in name else 'msgpack'} bodies") == 2, out
    assert out.count(" published as SMRF: as named") == 4, out  # MQTT's four paths
    for raw in ("raw relay", "raw composed", "raw SMRF relay"):  # the raw paths' table lines
        assert table_lines(out, raw) == 1, out
    assert out.count("goal joynr's dialect / native >= 0.7: joynr+msgpack ") == 2, out
    assert out.count("=== profile of one joynr+json round") == 2, out
    assert out.count("--- profile, top 25 by tottime ---") == 2, out


def test_the_cc_relay_paths_run_as_named() -> None:
    out = run_bench("--only", "websocket", "--profile", "--profile-path", "CC relay joynr")
    for name, dialect in RELAYS.items():
        # their check, their round figures and their table line (websocket only)
        assert out.count(f"  {name}: websocket {dialect}, frames forwarded unchanged: "
                         f"as named") == 1, out
        assert out.count(f"   {name} ") == 1, out  # in the round's line
        assert table_lines(out, name) == 1, out
    assert out.count("  CC relay joynr / native: ") == 1, out
    assert out.count("=== profile of one CC relay joynr round") == 1, out
    assert "MQTT" not in out, out

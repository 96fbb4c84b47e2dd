"""bench/fleet.py, run at a tiny size so that it cannot rot: 20 simulated cluster controllers
with 2 providers each against 2 GCD instance processes (PostgreSQL, a mosquitto per backend);
its output must say that no call was lost, that every add was answered without an error and
is visible in every instance, and give its figures beside the raw baseline. No timing
assertions: the figures of so small a storm mean nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(300)
def test_a_tiny_storm_loses_nothing_and_every_add_is_visible_everywhere() -> None:
    proc = subprocess.run(
        [sys.executable, "bench/fleet.py", "--ccs", "20", "--providers-per-cc", "2",
         "--instances", "2", "--seconds", "2", "--touch-interval", "1", "--lookups", "2"],
        cwd=ROOT, text=True, capture_output=True, timeout=280, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "Traceback" not in out + proc.stderr, out + proc.stderr
    assert "FAILURE" not in out, out
    # every call counted: removeStale, 2 adds, 2 lookups, 2 touches per CC
    assert "calls 140, answered 140, lost 0 " in out, out
    assert "adds answered 40/40 (0 of them with an error)," in out, out
    assert "every add visible in every instance: yes" in out, out
    assert re.search(r"visible in instance 0: [\d.]+ s, 1: [\d.]+ s ", out), out
    assert re.search(r"lookups during the storm: 40, found \d+, p50 [\d.]+ ms, p99 [\d.]+ ms",
                     out), out
    assert re.search(r"storm done \(answered, visible everywhere\) +[\d.]+ s +[\d.]+ s +"
                     r"[\d.]+x", out), out
    for name in ("gcd-0", "gcd-1", "mosquitto-0", "mosquitto-1", "postgres", "drivers"):
        assert re.search(rf"  {name} +RSS peak +[\d.]+ MiB +CPU", out), out
    assert "  lost: 0\n" in out, out

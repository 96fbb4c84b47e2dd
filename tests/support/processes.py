"""Watching the output of real processes in tests."""

from __future__ import annotations

import subprocess
import time


def wait_for_line(proc: subprocess.Popen[str], needle: str, timeout_s: float = 20) -> list[str]:
    """The lines ``proc`` printed up to the first one with ``needle``; the process is killed
    and the test fails with its output when the line does not come."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            return lines
    proc.kill()
    raise AssertionError(f"{needle!r} not seen; output:\n{''.join(lines)}")

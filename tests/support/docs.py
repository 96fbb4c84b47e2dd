"""What the documentation shows, run as written: its Python blocks, and pytest on a folder of
tests the way an application runs its own (outside this suite's conftest)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python_blocks(document: Path) -> list[str]:
    """The ```python blocks of a Markdown ``document``, in order."""
    return re.findall(r"```python\n(.*?)```", document.read_text(encoding="utf-8"), re.S)


def plugin_example() -> str:
    """The example test file of docs/testing.md (its one block that defines tests)."""
    (test_file,) = [b for b in python_blocks(ROOT / "docs" / "testing.md")
                    if "async def test_" in b]
    return test_file


def run_pytest(folder: Path, python: str = sys.executable) -> str:
    """pytest (with pytest-asyncio's auto mode) on ``folder``, run in it; its output, the run
    required to pass."""
    done = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto",
         "-o", "asyncio_default_fixture_loop_scope=function", str(folder)],
        cwd=folder, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout

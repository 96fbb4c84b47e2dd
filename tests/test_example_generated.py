"""The example's interface package (examples/radio/generated) is what radio.fidl generates.

The package is generated again from examples/radio/radio.fidl with the command line and must
be byte for byte the checked-in one (so the .fidl and the package never drift apart), and mypy
passes on the example that uses it (the provider on the generated provider base, the consumer
through the generated typed proxy).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pyjoynr.franca.generate import GENERATED_MARK

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "radio"
CHECKED_IN = EXAMPLE / "generated"
MYPY = ROOT / ".venv" / "bin" / "mypy"
REGENERATE = ".venv/bin/python -m pyjoynr.franca -o examples/radio --package generated " \
             "examples/radio/radio.fidl"


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_checked_in_package_is_what_radio_fidl_generates(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pyjoynr.franca", "-o", str(tmp_path), "--package", "generated",
         str(EXAMPLE / "radio.fidl")], capture_output=True, text=True, cwd=ROOT, timeout=120,
        check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    fresh, checked_in = files_of(tmp_path / "generated"), files_of(CHECKED_IN)
    hint = f"examples/radio/generated is not what radio.fidl generates; run: {REGENERATE}"
    assert sorted(checked_in) == sorted(fresh), hint
    for name, data in fresh.items():
        assert checked_in[name] == data, f"{name} differs. {hint}"
        if name.endswith(".py"):
            assert data.decode().startswith(f"{GENERATED_MARK} from radio.fidl -- do not edit.")


def test_mypy_passes_on_the_example(tmp_path: Path) -> None:
    checked = subprocess.run(
        [MYPY, "--cache-dir", str(tmp_path / "mypy-cache"), "examples/radio"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr

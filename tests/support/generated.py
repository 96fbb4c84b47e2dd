"""A package generated from Franca IDL and checked in is what its .fidl files generate now."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def assert_generated_from(sources: Path, checked_in: Path, header: str, tmp_path: Path) -> None:
    """Generate ``sources`` (a .fidl file or folder) with the command line into ``tmp_path``
    and require it byte for byte the ``checked_in`` package, each module starting with
    ``header``; the failure says the command that generates it again."""
    package = checked_in.name
    done = subprocess.run(
        [sys.executable, "-m", "pyjoynr.franca", "-o", str(tmp_path), "--package", package,
         str(sources)], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    fresh, kept = files_of(tmp_path / package), files_of(checked_in)
    regenerate = (f".venv/bin/python -m pyjoynr.franca -o {checked_in.parent.relative_to(ROOT)} "
                  f"--package {package} {sources.relative_to(ROOT)}")
    hint = (f"{checked_in.relative_to(ROOT)} is not what {sources.relative_to(ROOT)} "
            f"generates; run: {regenerate}")
    assert sorted(kept) == sorted(fresh), hint
    for name, data in fresh.items():
        assert kept[name] == data, f"{name} differs. {hint}"
        if name.endswith(".py"):
            assert data.decode().startswith(header), name

"""The package root re-exports the libjoynr API (lazily: ``import pyjoynr`` imports nothing
more, so that ``pyjoynr.pipeline`` on a Spark executor needs nothing else)."""

from __future__ import annotations

import subprocess
import sys

import pyjoynr
import pyjoynr.libjoynr


def test_the_root_offers_exactly_the_libjoynr_api() -> None:
    assert pyjoynr.__all__ == pyjoynr.libjoynr.__all__
    for name in pyjoynr.__all__:
        assert getattr(pyjoynr, name) is getattr(pyjoynr.libjoynr, name), name


def test_importing_the_root_imports_nothing_else() -> None:
    probe = ("import sys, pyjoynr; print(sorted(m for m in sys.modules "
             "if m.startswith('pyjoynr.')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"

"""The modules each program checks before it starts (pyjoynr/runtime/extras.py) are those its
extra of pyproject.toml installs: every distribution of the extra (self-references followed)
gives its top-level modules, as the environment's installed metadata says; and a bare install
needs no module of any extra for the application API.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from pyjoynr.runtime.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _distributions(extra: str) -> set[str]:
    """The distributions ``extra`` installs besides the bare ones, self-references followed."""
    found: set[str] = set()
    for requirement in PROJECT["optional-dependencies"][extra]:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        assert name is not None, requirement
        inner = re.match(r"pyjoynr\[([^\]]+)\]", requirement)
        if inner:
            for other in inner.group(1).split(","):
                found |= _distributions(other.strip())
        else:
            found.add(name.group(0).lower().replace("_", "-"))
    return found


def _modules(distributions: set[str]) -> set[str]:
    """The top-level modules of the distributions (installed here), without private ones."""
    by_module = importlib.metadata.packages_distributions()
    return {module for module, dists in by_module.items()
            if not module.startswith("_")
            and {d.lower().replace("_", "-") for d in dists} & distributions}


def test_each_program_checks_the_modules_its_extra_installs() -> None:
    assert set(EXTRAS) == {"cc", "gcd", "pipeline", "franca", "testing"}
    for extra, modules in EXTRAS.items():
        installed = _modules(_distributions(extra))
        # paho comes with aiomqtt, which is checked; pytest's own helpers are not modules of
        # the plugin's
        assert set(modules) == installed - {"paho", "py", "_pytest"}, extra


def test_the_bare_dependencies_are_none_of_an_extras() -> None:
    bare = {re.match(r"[A-Za-z0-9._-]+", r).group(0).lower()  # type: ignore[union-attr]
            for r in PROJECT["dependencies"]}
    assert bare == {"websockets", "msgpack"}
    for extra in EXTRAS:
        assert not bare & _distributions(extra), extra


def test_the_application_api_imports_no_module_of_an_extra() -> None:
    """``import pyjoynr.libjoynr`` (what ``pyjoynr.connect`` loads) in a fresh interpreter
    loads no module of any extra."""
    every = sorted({m for modules in EXTRAS.values() for m in modules} | {"paho"})
    done = subprocess.run(
        [sys.executable, "-c", "import sys, pyjoynr.libjoynr, pyjoynr; pyjoynr.connect; "
         f"print(sorted(m for m in {every!r} if m in sys.modules))"],
        capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

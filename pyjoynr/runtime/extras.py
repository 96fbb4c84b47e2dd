"""What each program needs beyond a bare install, and how it says so when that is missing.

A bare ``pip install pyjoynr`` is an application's install: the libjoynr runtime
(:func:`pyjoynr.connect`) needs only websockets and msgpack. Each program has an extra of the
distribution (pyproject.toml, ``[project.optional-dependencies]``) with the packages it imports:
``cc`` the cluster controller, ``gcd`` a GCD instance, ``pipeline`` the fleet data pipeline,
``franca`` the Franca IDL generator, ``testing`` the pytest plugin. A program whose extra is
missing says which one to install in one line and exits 2, before it imports any of it (so no
traceback); :data:`EXTRAS` names the modules checked, ``tests/unit/test_extras.py`` holds them
against pyproject.toml.

Standard library only: this runs before anything an extra brings is imported.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__all__ = ["EXTRAS", "missing_modules", "program_name", "require_extra"]

#: the top-level modules each extra brings, by extra (import names, not distribution names)
EXTRAS: dict[str, tuple[str, ...]] = {
    "cc": ("uvloop", "aiomqtt", "amqtt", "h11", "prometheus_client"),
    "gcd": ("uvloop", "aiomqtt", "h11", "prometheus_client", "asyncpg"),
    "pipeline": ("pyspark",),
    "franca": ("lark",),
    "testing": ("pytest", "pytest_asyncio", "uvloop", "aiomqtt", "amqtt", "h11",
                "prometheus_client", "asyncpg"),
}


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (found without importing them)."""
    return [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]


def require_extra(program: str, extra: str) -> None:
    """Exit 2 with one line on stderr naming the extra to install when a module of ``extra``
    is missing; return when all are there."""
    missing = missing_modules(extra)
    if not missing:
        return
    sys.stderr.write(
        f"{program} needs the '{extra}' extra of pyjoynr (missing: {', '.join(missing)}): "
        f"pip install 'pyjoynr[{extra}]', or '/path/to/checkout[{extra}]', or "
        f"'/path/to/pyjoynr-VERSION-....whl[{extra}]'\n")
    raise SystemExit(2)


def program_name(module: str, script: str) -> str:
    """The name the program was called by, for its usage and messages: its console script
    (``script``) or ``python -m module``."""
    called = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return script if called == script else f"python -m {module}"

"""The layers of the package, kept: every module's imports of the project (``import``, ``from
... import``, relative ones, at the top, inside functions and under ``TYPE_CHECKING``, and
``importlib.import_module`` of a literal name) point only where :data:`MAY_IMPORT` allows
(docs/design.md, "Imports point downwards only", says why each part may import what).

Imports under ``TYPE_CHECKING`` count like any other: a type a module names ties its interface
to the module the type comes from (mypy reads it, a move breaks it), so a layer may not reach
upwards for types either."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "pyjoynr"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE

#: the package at the root (its ``__init__``: the application's API)
TOP = "(pyjoynr)"

#: part of the package -> the parts it may import besides itself
MAY_IMPORT: dict[str, frozenset[str]] = {
    # the core: nothing of the project outside itself
    "runtime": frozenset(),
    # thin I/O over the core
    "transports": frozenset({"runtime"}),
    # the programming model (providers, proxies, subscriptions, discovery types) on the core;
    # it does no I/O of its own: the router carries its messages
    "programming": frozenset({"runtime"}),
    # the programs' admin endpoint: reads the figures of the core and the transports; the
    # programs import it, it imports none of them
    "admin": frozenset({"runtime", "transports"}),
    # the programs
    "libjoynr": frozenset({"runtime", "programming", "transports"}),
    "gcd": frozenset({"runtime", "programming", "transports", "admin"}),
    # (the GCD's interface for its link, and the GCD embedded in the CC's process)
    "cluster_controller": frozenset({"runtime", "programming", "transports", "admin",
                                     "gcd"}),
    # beside: the generator uses the core's naming rules (its output: runtime.interface)
    "franca": frozenset({"runtime", "programming"}),
    # beside: an application of the GCD (libjoynr, the GCD's interface)
    "pipeline": frozenset({"runtime", "libjoynr", "gcd"}),
    # beside: the pytest plugin and fixtures start whole programs; nothing imports it
    "testing": frozenset({"runtime", "programming", "transports", "admin", "libjoynr",
                          "gcd", "cluster_controller"}),
    # the application API at the root: libjoynr's names, loaded when first used
    TOP: frozenset({"libjoynr", "runtime"}),
}


#: the I/O flavours of ``transports/``: one sub-package each; a flavour imports no other, and
#: what they share beside them (``inprocess``, ``coalescing``, ``dialects``, ``outbox``) imports
#: none
FLAVOURS = ("websocket", "mqtt", "uds")


@dataclass(frozen=True)
class Violation:
    module: str
    line: int
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported}: {self.rule}"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def part_of(name: str, root: Path) -> str:
    """The part of the package (``runtime``, ``transports``, ...) a dotted name is in; a name
    imported from the root (``from pyjoynr import x``) is a part when a folder or module of
    that name exists, else the root's."""
    parts = name.split(".")
    if len(parts) == 1:
        return TOP
    if (root / parts[1]).is_dir() or (root / f"{parts[1]}.py").is_file():
        return parts[1]
    return TOP


def imports_of(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of every import of the package in the module at ``path``."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            if stem == root.name or (node.level and not node.module):
                # from pyjoynr import runtime / from . import x: each name may be a module
                found += [(node.lineno, f"{stem}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, stem))
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and (getattr(node.func, "attr", None) == "import_module"
                   or getattr(node.func, "id", None) == "import_module")
              and not node.args[0].value.startswith(".")):
            found.append((node.lineno, node.args[0].value))
    return [(line, name) for line, name in found
            if name == root.name or name.startswith(root.name + ".")]


def violations(root: Path = ROOT) -> list[Violation]:
    found: list[Violation] = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        own = part_of(module, root) if module != root.name else TOP
        if own not in MAY_IMPORT:
            found.append(Violation(module, 0, "-", f"{own} has no row in MAY_IMPORT"))
            continue
        for line, name in imports_of(path, root):
            target = part_of(name, root)
            if target == own or target in MAY_IMPORT[own]:
                continue
            allowed = ", ".join(sorted(MAY_IMPORT[own])) or "nothing outside itself"
            found.append(Violation(module, line, name,
                                   f"{own} may import {allowed}; not {target}"))
    return found


def flavour_of(name: str) -> str | None:
    """The I/O flavour a dotted name of ``transports/`` is in (None: shared, or elsewhere)."""
    parts = name.split(".")
    if parts[1:2] == ["transports"] and len(parts) > 2 and parts[2] in FLAVOURS:
        return parts[2]
    return None


def flavour_violations(root: Path = ROOT) -> list[Violation]:
    found: list[Violation] = []
    for path in sorted((root / "transports").rglob("*.py")):
        module = module_name(path, root)
        own = flavour_of(module)
        for line, name in imports_of(path, root):
            target = flavour_of(name)
            if target is not None and target != own:
                found.append(Violation(module, line, name, (
                    f"transports.{own} may not import another flavour ({target})" if own
                    else f"what the flavours share may import none of them ({target})")))
    return found


def test_every_import_keeps_the_layers() -> None:
    assert ROOT.is_dir()
    found = violations()
    assert not found, "imports against the layers:\n" + "\n".join(map(str, found))


def test_the_transport_flavours_stay_apart() -> None:
    assert {p.name for p in (ROOT / "transports").iterdir() if p.is_dir()
            and (p / "__init__.py").is_file()} == set(FLAVOURS)
    found = flavour_violations()
    assert not found, "imports across transport flavours:\n" + "\n".join(map(str, found))


def test_every_part_of_the_package_has_its_rule() -> None:
    parts = {p.name for p in ROOT.iterdir()
             if p.is_dir() and any(p.rglob("*.py"))} | {TOP}
    assert parts == set(MAY_IMPORT)


def test_the_check_sees_every_form_of_import(tmp_path: Path) -> None:
    """A made-up package with one violation in each form: each is named with its line and
    the rule it breaks, and the allowed imports pass."""
    root = tmp_path / PACKAGE
    for part in ("runtime", "transports", "gcd", "libjoynr"):
        (root / part).mkdir(parents=True)
        (root / part / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "runtime" / "core.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import os\n"
        "from . import other\n"                              # runtime itself: allowed
        "if TYPE_CHECKING:\n"
        "    from pyjoynr.transports.mqtt import X\n"        # 5: type-only, still counts
        "def f():\n"
        "    import pyjoynr.gcd.interface\n"                 # 7: inside a function
        "    from .. import libjoynr\n"                      # 8: relative, from the root
        "    import importlib\n"
        "    importlib.import_module('pyjoynr.gcd.service')\n"  # 10: by name
    )
    (root / "transports" / "mqtt.py").write_text(
        "from pyjoynr.runtime import core\n"                 # allowed
        "from ..gcd.interface import GBID\n"                 # 2: relative, upwards
    )
    found = {(v.module, v.line, v.imported) for v in violations(root)}
    assert found == {
        ("pyjoynr.runtime.core", 5, "pyjoynr.transports.mqtt"),
        ("pyjoynr.runtime.core", 7, "pyjoynr.gcd.interface"),
        ("pyjoynr.runtime.core", 8, "pyjoynr.libjoynr"),
        ("pyjoynr.runtime.core", 10, "pyjoynr.gcd.service"),
        ("pyjoynr.transports.mqtt", 2, "pyjoynr.gcd.interface"),
    }
    message = str(next(v for v in violations(root) if v.line == 2))
    assert message == ("pyjoynr.transports.mqtt:2 imports pyjoynr.gcd.interface: "
                       "transports may import runtime; not gcd")


def test_the_check_sees_a_flavour_importing_another(tmp_path: Path) -> None:
    root = tmp_path / PACKAGE
    for part in ("transports", "transports/websocket", "transports/mqtt"):
        (root / part).mkdir(parents=True)
        (root / part / "__init__.py").write_text("")
    (root / "transports" / "coalescing.py").write_text("")
    (root / "transports" / "websocket" / "server.py").write_text(
        "from pyjoynr.transports import coalescing\n"        # shared: allowed
        "from ..mqtt.client import open_session\n")          # 2: another flavour
    (root / "transports" / "inprocess.py").write_text(
        "from pyjoynr.transports.websocket import server\n")  # 1: shared imports a flavour
    assert sorted(map(str, flavour_violations(root))) == [
        "pyjoynr.transports.inprocess:1 imports pyjoynr.transports.websocket: "
        "what the flavours share may import none of them (websocket)",
        "pyjoynr.transports.websocket.server:2 imports pyjoynr.transports.mqtt.client: "
        "transports.websocket may not import another flavour (mqtt)",
    ]

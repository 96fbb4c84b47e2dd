"""Modules compiled with mypyc when they can be, their plain Python source when not.

A few pure modules on the per-message paths (the SMRF codec) are plain, fully typed Python
that mypyc compiles into an extension module beside the source (``smrf_core.py`` ->
``smrf_core.cpython-311-x86_64-linux-gnu.so``); the README's commands build them
(``bin/build-compiled``), and so does the build of a wheel (``setup.py``, a platform wheel),
when a C compiler and Python's headers are there. Python's import
system prefers an extension module to the source of the same name, so a compiled module
that was built from an older source would run old code: each build writes the SHA-256 of
the source it compiled beside the extension module (``<extension>.sha256``), and
:func:`load` imports the extension module only when that digest is the source's. Otherwise,
or when nothing was built, or when the environment variable ``PYJOYNR_COMPILED=0`` asks for
it, it loads the source (under the module's own name, so that every importer gets the same
module) and says why in :data:`FORMS`.

Callers import such a module only through :func:`load` (the facade module does, e.g.
``runtime.smrf``), before anything else imports it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Final

from pyjoynr.runtime.logs import get_logger

__all__ = ["DIGEST_SUFFIX", "ENVIRONMENT_SWITCH", "FORMS", "Form", "load", "load_source",
           "source_digest"]

_log = get_logger(__name__)

#: what a build writes beside an extension module: the digest of the source it compiled
DIGEST_SUFFIX: Final = ".sha256"
#: ``PYJOYNR_COMPILED=0`` loads every such module from its source
ENVIRONMENT_SWITCH: Final = "PYJOYNR_COMPILED"


@dataclass(frozen=True, slots=True)
class Form:
    """How a module was loaded: ``compiled`` or not, and why not (``None`` when it is)."""

    module: str
    compiled: bool
    reason: str | None = None


#: the form of each module loaded through :func:`load`, by module name (for the logs, the
#: status page and the tests)
FORMS: dict[str, Form] = {}


def source_digest(source: Path) -> str:
    """The SHA-256 of a source file's bytes, in hex (as ``sha256sum`` prints it)."""
    return hashlib.sha256(source.read_bytes()).hexdigest()


def load(name: str) -> ModuleType:
    """Import module ``name``: compiled, when its extension module was built from the source
    as it is now; else from its source. Records the form in :data:`FORMS`."""
    if name in sys.modules:
        module = sys.modules[name]
        if name not in FORMS:  # imported directly, around this function: say what it is
            compiled = not str(getattr(module, "__file__", "")).endswith(".py")
            _record(module, Form(name, compiled, None if compiled else
                                 "imported directly, not through runtime.compiled.load"))
        return module
    origin, source = _locate(name)
    if origin.suffix == ".py":
        return _record(importlib.import_module(name),
                       Form(name, False, "not compiled (no extension module was built)"))
    if os.environ.get(ENVIRONMENT_SWITCH, "1") == "0":
        return _record(_from_source(name, source, name),
                       Form(name, False, f"{ENVIRONMENT_SWITCH}=0 asks for the source"))
    digest_file = Path(f"{origin}{DIGEST_SUFFIX}")
    try:
        built_from = digest_file.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        built_from = ""
    if not source.is_file():
        # an installation with the extension module alone: nothing to compare it with
        return _record(importlib.import_module(name), Form(name, True))
    if built_from != source_digest(source):
        return _record(_from_source(name, source, name), Form(
            name, False, f"the extension module {origin.name} was not built from the source "
            f"as it is now (rebuild it: bin/build-compiled)"))
    return _record(importlib.import_module(name), Form(name, True))


def load_source(name: str) -> ModuleType:
    """Module ``name`` from its source, as a module of its own (``<name>__source``) beside
    whatever :func:`load` gave: for comparing the two forms."""
    return _from_source(f"{name}__source", _locate(name)[1], name)


def _locate(name: str) -> tuple[Path, Path]:
    """Where module ``name`` would be imported from (its extension module or its source),
    and where its source is."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ImportError(f"no module named {name!r}")
    origin = Path(spec.origin)
    return origin, origin.parent / (name.rpartition(".")[2] + ".py")


def _from_source(module_name: str, source: Path, package_of: str) -> ModuleType:
    """Execute ``source`` as module ``module_name`` (in the package of ``package_of``),
    registered in ``sys.modules`` first (as an import does: dataclasses look it up)."""
    existing = sys.modules.get(module_name)
    if existing is not None:
        return existing
    spec = importlib.util.spec_from_file_location(module_name, source)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {source}")
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package_of.rpartition(".")[0]
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    package, _, leaf = module_name.rpartition(".")
    if package in sys.modules:  # as an import does: the package's attribute
        setattr(sys.modules[package], leaf, module)
    return module


def _record(module: ModuleType, form: Form) -> ModuleType:
    FORMS[form.module] = form
    if form.compiled:
        _log.debug("%s: compiled", form.module)
    else:
        _log.debug("%s: plain Python: %s", form.module, form.reason)
    return module

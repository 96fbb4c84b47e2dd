"""The modules that run compiled (pyjoynr/runtime/compiled.py), as extension modules of the
wheel: built with mypyc's ``mypycify`` where a C compiler and Python's headers are, which
makes a platform wheel (``cp311-cp311-linux_x86_64``); elsewhere the wheel is pure and its
modules run as plain Python, and the build log says why. Everything else about the package
is in pyproject.toml.

Each compiled module gets, beside its extension module, the SHA-256 of the source it was
built from (``<extension>.sha256``): pyjoynr.runtime.compiled loads the extension module only
when that digest is its source's. ``build_ext --inplace`` (bin/build-compiled, an editable
install) puts both beside the source; an editable install leaves a current build there alone.
``PYJOYNR_COMPILED=0`` at build time makes the pure wheel.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
#: the modules compiled with mypyc (bin/_bootstrap.sh lists them too)
COMPILED = ["pyjoynr/runtime/smrf_core.py"]
DIGEST_SUFFIX = ".sha256"  # pyjoynr.runtime.compiled.DIGEST_SUFFIX


def say(text: str) -> None:
    sys.stderr.write(f"pyjoynr build: {text}\n")


def digest(source: Path) -> str:
    return hashlib.sha256(source.read_bytes()).hexdigest()


def sources() -> dict[str, Path]:
    """The compiled modules' sources by module name."""
    return {path[:-3].replace("/", "."): ROOT / path for path in COMPILED}


def why_not_compiled() -> str | None:
    """Why this machine cannot compile the modules, or ``None`` when it can."""
    if os.environ.get("PYJOYNR_COMPILED", "1") == "0":
        return "PYJOYNR_COMPILED=0 asks for the plain Python form"
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    if shutil.which(shlex.split(compiler)[0]) is None:
        return f"no C compiler ({compiler})"
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():
        return f"no Python.h in {include} (on Debian: python3-dev)"
    try:
        import mypyc.build  # noqa: F401, PLC0415 - a build requirement, absent without isolation
    except ImportError:
        return "mypyc is not installed (it comes with mypy)"
    return None


def placeholders() -> list[Extension]:
    """One extension per compiled module when this machine can compile them (a platform
    wheel); build_ext replaces them with mypyc's (mypycify type-checks the modules, a few
    seconds: only the build runs it, not the metadata steps before it)."""
    reason = why_not_compiled()
    if reason is None:
        return [Extension(path[:-3].replace("/", "."), [path], optional=True)
                for path in COMPILED]
    say(f"WARNING: {', '.join(COMPILED)} not compiled, a pure wheel whose SMRF codec runs as "
        f"plain Python (about three times slower): {reason}")
    return []


class BuildWithDigests(build_ext):
    """setuptools' build_ext with mypyc's extensions, which writes the source's digest beside
    each compiled module, copies it with the module for ``--inplace``, and leaves a current
    in-place build of an editable install alone."""

    #: commands that finalize build_ext for its file lists only: they keep the placeholders
    METADATA_ONLY = frozenset({"egg_info", "dist_info", "sdist"})

    def finalize_options(self) -> None:
        commands = set(self.distribution.commands)
        # an editable install finalizes build_ext for its file lists first, then for the
        # build (in editable mode)
        building = not commands <= self.METADATA_ONLY and (
            self.editable_mode or "editable_wheel" not in commands)
        if self.distribution.ext_modules and building:
            self.distribution.ext_modules = self._mypycify()
        super().finalize_options()

    def _mypycify(self) -> list[Extension]:
        if self.editable_mode and all(self._current_in_place(name) for name in sources()):
            say("the compiled modules beside their sources are current: not built again")
            return []
        from mypyc.build import mypycify  # noqa: PLC0415 - present when why_not_compiled is None

        try:
            # the rest of the package is read for its types only, and its dependencies are
            # not in the build's environment (pip's build isolation): errors there are not ours
            built = mypycify(["--follow-imports=silent", *COMPILED])
        except (Exception, SystemExit) as error:  # mypyc exits on a type error
            say(f"WARNING: mypyc failed, the modules run as plain Python: {error!r}")
            return []
        for extension in built:
            extension.optional = True  # a failing C compiler leaves the plain form
        say(f"compiling {', '.join(COMPILED)} with mypyc")
        return built

    def build_extension(self, ext: Extension) -> None:
        super().build_extension(ext)
        source = sources().get(ext.name)
        built = Path(self.get_ext_fullpath(ext.name))
        if source is not None and built.is_file():
            Path(f"{built}{DIGEST_SUFFIX}").write_text(digest(source) + "\n", encoding="ascii")

    def copy_extensions_to_source(self) -> None:
        super().copy_extensions_to_source()
        for name, source in sources().items():
            built = Path(self.build_lib, self.get_ext_filename(name))
            if Path(f"{built}{DIGEST_SUFFIX}").is_file():
                in_place = source.with_name(built.name)
                shutil.copyfile(f"{built}{DIGEST_SUFFIX}", f"{in_place}{DIGEST_SUFFIX}")

    def _current_in_place(self, name: str) -> bool:
        source = sources()[name]
        in_place = source.with_name(Path(self.get_ext_filename(name)).name)
        try:
            built_from = Path(f"{in_place}{DIGEST_SUFFIX}").read_text(encoding="ascii").strip()
        except OSError:
            return False
        return in_place.is_file() and built_from == digest(source)


setup(ext_modules=placeholders(), cmdclass={"build_ext": BuildWithDigests})

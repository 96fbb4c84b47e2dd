"""``python -m pyjoynr.franca [-o DIR] [--package NAME] [--classpath DIR]... [--add-version-to
package|comment|none] PATH...``: generate a typed Python package from Franca IDL files.

Each PATH is a ``.fidl`` file or a folder searched recursively for ``.fidl`` files; the files
are read in sorted order (so the output does not depend on the order they are named in) with
the files they import. An import of ``classpath:/x.fidl`` is looked for in the ``--classpath``
folders, in the order given. The package ``NAME`` (default ``interfaces``) is written into ``DIR``
(default: the current folder) all or nothing; a package there that was generated before is
replaced, anything else is left alone.

What is left out as joynr's generators leave it out (a union, what an interface that extends
another would inherit) is said on standard error, one ``file:line:column: message`` line each.

Exit status: 0 and a one-line summary on success; 2 and one ``file:line:column: message`` line
per problem (on standard error) when the files cannot be parsed or generated, or a message
when a path or the output cannot be used.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pyjoynr.franca.generate import (
    GenerationError,
    generate,
    generation_notes,
    write_package,
)
from pyjoynr.franca.versions import MODES
from pyjoynr.runtime.extras import program_name, require_extra

# the parser (lark, the franca extra) is imported in main(), after require_extra: without the
# extra the program says which to install instead of a traceback

__all__ = ["main"]

DEFAULT_PACKAGE = "interfaces"


def _prog() -> str:
    """The name the generator was called by: pyjoynr-franca or python -m pyjoynr.franca."""
    return program_name("pyjoynr.franca", "pyjoynr-franca")


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description="Generate a typed Python package declaring the interfaces and types of "
                    "Franca IDL (.fidl) files with this project's runtime API.")
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a .fidl file, or a folder searched recursively for .fidl files")
    parser.add_argument("-o", "--output", default=".", metavar="DIR",
                        help="the folder the package is written into (default: .)")
    parser.add_argument("--package", default=DEFAULT_PACKAGE, metavar="NAME",
                        help=f"the generated package's name (default: {DEFAULT_PACKAGE})")
    parser.add_argument("--classpath", action="append", default=[], metavar="DIR",
                        help="a folder searched for imports of classpath:/name.fidl (repeatable: "
                             "searched in the order given)")
    parser.add_argument("--add-version-to", choices=MODES, default="none",
                        help="joynr's -addVersionTo: 'package' puts the major version of a "
                             "versioned interface or type collection into its types' wire names "
                             "and module (joynr.fleet.v1.Fix in module fleet_v1), so that two "
                             "versions live side by side; 'comment' does so except for "
                             "interfaces whose comment says #noVersionGeneration; 'none' "
                             "(default) leaves names without versions")
    return parser


def fidl_files(paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """The .fidl files the paths name (folders searched recursively), sorted, and the
    problems with paths that name none."""
    found: dict[str, None] = {}  # (in the order named; sorted at the end)
    problems: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            inside = sorted(str(p) for p in path.rglob("*.fidl") if p.is_file())
            if not inside:
                problems.append(f"{raw}: no .fidl files in this folder")
            found.update(dict.fromkeys(inside))
        elif path.is_file():
            found[str(path)] = None
        else:
            problems.append(f"{raw}: no such file or folder")
    return sorted(found), problems


def main(argv: Sequence[str] | None = None) -> int:
    prog = _prog()
    require_extra(prog, "franca")
    from pyjoynr.franca.parser import FrancaError, parse_files  # noqa: PLC0415

    args = _arguments().parse_args(argv)
    files, problems = fidl_files(args.paths)
    problems += [f"{c}: --classpath names no folder" for c in args.classpath
                 if not Path(c).is_dir()]
    if problems:
        sys.stderr.write("".join(f"{p}\n" for p in problems))
        return 2
    try:
        model = parse_files(files, classpath=args.classpath)
        sources = generate(model, args.package, add_version_to=args.add_version_to)
    except (FrancaError, GenerationError) as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    sys.stderr.write("".join(f"{p}: {m}\n" for p, m in generation_notes(model)))
    try:
        target = write_package(sources, args.output)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"{prog}: not written: {exc}\n")
        return 2
    modules = sum(1 for path in sources if path.endswith(".py")) - 1
    counts = ", ".join(_count(n, what) for n, what in (
        (len(model.interfaces), "interface"), (sum(1 for _ in model.declarations()), "type"),
        (modules, "module")))
    sys.stdout.write(f"{prog}: wrote {target} ({counts}) from "
                     f"{_count(len(model.files), 'file')}\n")
    return 0


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


if __name__ == "__main__":
    sys.exit(main())

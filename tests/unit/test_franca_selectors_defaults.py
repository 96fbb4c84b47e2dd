"""Three rules of the Franca generator on .fidl files written here: overloads are named in
Python by their Franca selectors; struct members have joynr's defaults; the package's
``__init__`` re-exports lazily. And what they refuse: a selector given twice, a struct that
holds itself, a member of an enumeration without enumerators."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from pyjoynr.franca.generate import GenerationError, generate
from pyjoynr.franca.parser import FrancaError, parse_files
from pyjoynr.runtime.interface import from_wire, interface_def, lower_camel
from tests.support.generated import imported

ROOT = Path(__file__).resolve().parents[2]
SELECTED = """\
package sel

typeCollection {
    enumeration Colour { RED GREEN }
    struct Inner { Int32 n }
    map Names { String to Int32 }
    struct Outer {
        Int8 a
        UInt64 b
        Float c
        Double d
        Boolean e
        String f
        ByteBuffer g
        Int32[] h
        Names i
        Colour j
        Inner k
        Later l
    }
    struct Later { String s }
}

interface Finder {
    version { major 1 minor 0 }
    method find:byName { in { String name } out { Int32 found } }
    method find { in { Int32 id } out { Int32 found } }
    method find { in { Int32 id String name } out { Int32 found } }
    method find:inBackends { in { String name String[] gbids } out { Int32 found } }
    method addToAll { in { String name } }
}
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("selected")
    fidl = write(folder, "sel.fidl", SELECTED)
    with imported(generate(parse_files([str(fidl)]), "selected_pkg"), folder, "selected_pkg"):
        yield "selected_pkg"


def module(package: str) -> ModuleType:
    return importlib.import_module(f"{package}.sel")


def test_the_parser_keeps_the_selector(tmp_path: Path) -> None:
    model = parse_files([str(write(tmp_path, "sel.fidl", SELECTED))])
    finder = model.interfaces[0]
    assert [(m.name, m.selector) for m in finder.methods] == [
        ("find", "byName"), ("find", None), ("find", None), ("find", "inBackends"),
        ("addToAll", None)]


def test_overloads_are_named_by_their_selectors(package: str) -> None:
    definition = interface_def(module(package).Finder)
    # Python name -> the name on this project's wire, and joynr's
    assert {name: (m.name, lower_camel(m.name), m.param_datatypes)
            for name, m in definition.methods.items()} == {
        "find_by_name": ("find", "find", ["String"]),
        "find": ("find", "find", ["Long"]),
        "find_3": ("find", "find", ["Long", "String"]),
        "find_in_backends": ("find", "find", ["String", "String[]"]),
        "add_to_all": ("add_to_all", "addToAll", ["String"]),
    }
    # the first overload without a selector keeps the name, a later one is numbered by its
    # place among the overloads
    base = module(package).FinderProviderBase
    assert {"find_by_name", "find", "find_3", "find_in_backends"} <= set(vars(base))


def test_a_selector_given_twice_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "twice.fidl", """\
        package twice
        interface I {
            method m:same { in { String a } }
            method m:same { in { Int32 a } }
        }
        """)
    with pytest.raises(FrancaError) as caught:
        parse_files([str(path)])
    assert str(caught.value) == (f"{path}:4:12: method 'm:same': the selector is the same as "
                                 f"its overload's at {path}:3:12")


def test_struct_members_have_joynrs_defaults(package: str) -> None:
    sel = module(package)
    outer = sel.Outer()
    assert (outer.a, outer.b, outer.c, outer.d, outer.e, outer.f, outer.g, outer.h, outer.i,
            outer.j, outer.k, outer.l) == (0, 0, 0.0, 0.0, False, "", b"", [], {},
                                           sel.Colour.RED, sel.Inner(0), sel.Later(""))
    assert type(outer.i) is sel.Names
    # each value its own (no shared mutable default)
    other = sel.Outer()
    other.h.append(1)
    other.k.n = 5
    assert (outer.h, outer.k.n) == ([], 0)
    # a value read from the wire without members has their defaults
    assert from_wire({"f": "given"}, sel.Outer, "outer") == sel.Outer(f="given")


def test_the_init_re_exports_lazily(package: str) -> None:
    pkg = importlib.import_module(package)
    folder = Path(pkg.__file__ or "").parent.parent
    # in a fresh process: importing the package imports none of its modules; a name asked
    # for imports its module
    probe = (f"import sys; sys.path[:0] = [{str(folder)!r}, {str(ROOT)!r}]; "
             f"import {package}; print(f'{package}.sel' in sys.modules); "
             f"from {package} import Outer; print(Outer.__module__); "
             f"print(f'{package}.sel' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", f"{package}.sel", "True"]
    assert pkg.Finder is module(package).Finder
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = pkg.Nothing


def test_what_has_no_default_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "nodefault.fidl", """\
        package nodefault
        typeCollection {
            struct A { B b }
            struct B { C c }
            struct C { A a }
            struct D { D[] ok  Names alsoOk }
            map Names { String to D }
            enumeration Empty { }
            struct E { Empty e }
            struct F extends A { Int32 x }
        }
        """)
    with pytest.raises(GenerationError) as caught:
        generate(parse_files([str(path)]), "pkg")
    assert str(caught.value).splitlines() == [
        f"{path}:3:12: struct A holds itself through its members (not in an array): its "
        "default would never be made",
        f"{path}:4:12: struct B holds itself through its members (not in an array): its "
        "default would never be made",
        f"{path}:5:12: struct C holds itself through its members (not in an array): its "
        "default would never be made",
        f"{path}:9:22: struct E: field e has no default (joynr's: the enumeration's first "
        "enumerator; it has none)",
    ]

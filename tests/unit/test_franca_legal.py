"""Legal Franca that joynr's generator (1.25.0) accepts, generated here as joynr's generators
generate it: the models are tests/franca/oracle/legal_*.fidl (the oracle corpus, compared with
joynr's own output elsewhere); here the project's parser and generator are held to what those
models must give.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyjoynr.franca.generate import GenerationError, generate, generation_notes
from pyjoynr.franca.model import EnumType, Model
from pyjoynr.franca.parser import FrancaError, parse_files
from pyjoynr.runtime.interface import interface_def
from tests.support.generated import imported

ROOT = Path(__file__).resolve().parents[2]
ORACLE = ROOT / "tests" / "franca" / "oracle"


def _model(name: str) -> Model:
    return parse_files([ORACLE / name])


def _problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "m.fidl"
    path.write_text(text)
    with pytest.raises(FrancaError) as caught:
        parse_files([path])
    return [str(p).replace(f"{path}:", "") for p in caught.value.problems]


def test_a_structured_comment_before_error_is_accepted() -> None:
    model = _model("legal_errors.fidl")
    (iface,) = model.interfaces
    errors = {m.name: m.errors.wire_name for m in iface.methods if m.errors is not None}
    assert errors == {
        "inline": "joynr.legal.errors.Comments.InlineErrorEnum",
        "named": "joynr.legal.errors.Failure",
        "extended": "joynr.legal.errors.Comments.ExtendedErrorEnum",
    }
    inline = next(m for m in iface.methods if m.name == "inline").errors
    assert isinstance(inline, EnumType)
    assert [e.name for e in inline.enumerators] == ["FAILED", "TIMED_OUT"]
    assert "InlineErrorEnum" in generate(model, "p")["p/legal_errors.py"]


def franca(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyjoynr.franca", *args], cwd=cwd,
                          capture_output=True, text=True, check=False, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_union_is_skipped_with_a_note_and_the_rest_is_generated(tmp_path: Path) -> None:
    path = ORACLE / "legal_union.fidl"
    files = generate(parse_files([path]), "p")
    text = files["p/legal_unions.py"]
    assert "class Point" in text and "class Canvas:" in text
    assert "class Shape" not in text
    assert "Shape(" not in text and "Shape\"" not in files["p/__init__.py"]
    done = franca("-o", str(tmp_path), "--package", "p", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        f"{path}:8:8: union Shape skipped: unions are not generated (joynr's JavaScript "
        "generator generates nothing for them either); a type or method that uses one is "
        "refused\n")
    assert (tmp_path / "p" / "legal_unions.py").read_text() == text


def test_a_use_of_a_union_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "u.fidl"
    path.write_text("package u\ntypeCollection T {\n  union U { Int32 i String s }\n"
                    "  struct S { U u }\n  typedef D is U\n}\n"
                    "interface I {\n  method m { in { T.U x } }\n}\n")
    with pytest.raises(GenerationError) as caught:
        generate(parse_files([path]), "p")
    why = ("uses union U: unions are not generated (joynr's JavaScript generator writes no "
           "type for one, its Java generator makes it a struct)")
    assert str(caught.value).splitlines() == [
        f"{path}:4:10: struct S {why}", f"{path}:5:11: typedef D {why}",
        f"{path}:7:11: interface I {why}"]


def test_an_interface_that_extends_another_has_its_own_members_only(tmp_path: Path) -> None:
    path = ORACLE / "legal_extends.fidl"
    model = parse_files([path])
    assert generation_notes(model) == [(
        next(i.position for i in model.interfaces if i.name == "Derived"),
        "interface Derived extends Base: generated without Base's attributes, methods and "
        "broadcasts (joynr's generators do not inherit them either); only its own are "
        "declared")]
    with imported(generate(model, "ext_pkg"), tmp_path, "ext_pkg"):
        module = importlib.import_module("ext_pkg.legal_extending")
        derived = interface_def(module.Derived)
        base = interface_def(module.Base)
    assert derived.name == "legal/extending/Derived"
    assert sorted(derived.attributes) == ["label"]
    assert sorted(derived.broadcasts) == ["renamed"]
    assert sorted({m.name for m in derived.methods.values()}) == ["rename"]
    assert sorted(base.attributes) == ["level"]
    done = franca("-o", str(tmp_path), "--package", "q", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "interface Derived extends Base: generated without Base's" in done.stderr


def test_constants_and_enumerator_values_are_evaluated_as_franca_does() -> None:
    model = _model("legal_expressions.fidl")
    (collection,) = model.type_collections
    (level,) = collection.types
    assert isinstance(level, EnumType)
    assert [(e.name, e.value) for e in level.enumerators] == [
        ("LOW", 2), ("MIDDLE", 6), ("HIGH", 11), ("TOP", 21), ("BOTTOM", -1)]
    (iface,) = model.interfaces
    errors = iface.methods[0].errors
    assert errors is not None
    assert [(e.name, e.value) for e in errors.enumerators] == [("TOO_LOW", 1), ("TOO_HIGH", 4)]
    text = generate(model, "p")["p/legal_expressions.py"]
    assert 'LOW = "LOW"' in text and 'TOO_HIGH = "TOO_HIGH"' in text


def test_what_is_no_integer_where_one_is_needed_is_refused(tmp_path: Path) -> None:
    path = ORACLE / "refused" / "enumerator_not_integer.fidl"
    with pytest.raises(FrancaError) as caught:
        parse_files([path])
    assert [str(p).replace(f"{path}:", "") for p in caught.value.problems] == [
        '9:10: enumerator value must be a 64-bit integer, not "x"',
        "10:14: enumerator value must be a 64-bit integer, not 1.5",
        "11:12: enumerator value must be a 64-bit integer, not true",
        "12:10: enumerator value must be a 64-bit integer, not 1.0",
    ]
    assert _problems(tmp_path, (
        "package p\ntypeCollection T {\n"
        "  const Int8 tooBig = 100 * 3\n"
        "  const Int32 loop = loop + 1\n"
        "  const Int32 zero = 1 / (2 - 2)\n"
        "  const Int32 mixed = 1 + true\n"
        "  const Int64 huge = 4294967296 * 4294967296 * 4294967296\n"
        "  enumeration E { A = missing B = -(-7 / 2) C = 0x10 - 0b11 }\n"
        "}\n")) == [
        "3:23: constant tooBig must be an integer from -128 to 127, not 300",
        "4:15: constant loop refers to itself",
        "5:22: division by zero",
        "6:23: '+' cannot be applied to an integer and a Boolean",
        "7:22: the value grows beyond 64 bits",
        "8:23: unknown constant 'missing'",
    ]
    text = "package q\ntypeCollection T {\n  enumeration E { B = -(-7 / 2) C = 0x10 - 0b11 }\n}\n"
    model = parse_files([_write(tmp_path, text)])
    assert [e.value for e in model.type_collections[0].types[0].enumerators] == [3, 13]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ok.fidl"
    path.write_text(text)
    return path

"""Legal Franca that joynr's generator (1.25.0) accepts, generated here as joynr's generators
generate it: the models are tests/franca/oracle/legal_*.fidl (the oracle corpus, compared with
joynr's own output elsewhere); here the project's parser and generator are held to what those
models must give.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyjoynr.franca.generate import generate
from pyjoynr.franca.model import EnumType, Model
from pyjoynr.franca.parser import FrancaError, parse_files

ORACLE = Path(__file__).resolve().parent.parent / "franca" / "oracle"


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

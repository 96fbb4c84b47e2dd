"""The SMRF codec's two forms: compiled with mypyc (what runs here) and its plain Python
source. Both must give the same bytes, the same messages and the same refusals for whatever
they get; and runtime.compiled must load the extension module only when it was built from the
source as it is now."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyjoynr.runtime import compiled, smrf
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.messages import Message, MessageType
from tests.unit.test_smrf import (
    JS_COMPRESSED,
    JS_COMPRESSED_SIGNED,
    JS_PLAIN,
    JS_PLAIN_SIGNED,
    OURS_COMPRESSED,
    OURS_PLAIN,
    as_other_writers_write,
    frames,
    messages,
)

ROOT = Path(__file__).resolve().parents[2]
COMPILED = sys.modules["pyjoynr.runtime.smrf_core"]
SOURCE = compiled.load_source("pyjoynr.runtime.smrf_core")
GOLDEN = (JS_PLAIN, JS_PLAIN_SIGNED, JS_COMPRESSED, JS_COMPRESSED_SIGNED, OURS_PLAIN,
          OURS_COMPRESSED)


def test_the_codec_runs_compiled_here() -> None:
    # the README's commands build it (bin/build-compiled); a machine without a C compiler
    # runs the source, and this test says so
    assert smrf.FORM.compiled, f"runtime.smrf_core is not compiled: {smrf.FORM.reason}"
    assert COMPILED.COMPILED is True
    assert not COMPILED.__file__.endswith(".py")
    assert SOURCE.COMPILED is False
    assert SOURCE.__file__.endswith("smrf_core.py")
    assert smrf.decode is COMPILED.decode and smrf.SmrfError is COMPILED.SmrfError


def outcome(call: Callable[[], Any]) -> object:
    """What a call gives, comparable across the two forms: its result, or the refusal's class
    name, reason, text and message id (the forms' SmrfError classes are not the same
    class)."""
    try:
        return call()
    except ValueError as exc:  # SmrfError, and the FrameError it is
        return (type(exc).__name__, getattr(exc, "reason", None), str(exc),
                getattr(exc, "message_id", None))


def both(name: str, *args: Any, **kwargs: Any) -> object:
    """``name`` called in both forms with the same arguments; asserts they agree."""
    return each(lambda form: getattr(form, name)(*args, **kwargs))


def each(call: Callable[[ModuleType], Any]) -> object:
    """``call`` made with each form's module; asserts they agree and gives what it gave."""
    compiled_gives = outcome(lambda: call(COMPILED))
    source_gives = outcome(lambda: call(SOURCE))
    assert _comparable(compiled_gives) == _comparable(source_gives)
    return compiled_gives


def _comparable(value: object) -> object:
    # an SmrfFrame of either form, as its fields
    if type(value).__name__ == "SmrfFrame":
        return ("SmrfFrame", *(getattr(value, f) for f in
                               ("sender", "recipient", "ttl_ms", "ttl_absolute", "headers",
                                "body", "compressed", "custom_signature")))
    return value


@pytest.mark.parametrize("raw", GOLDEN)
def test_the_golden_frames_decode_alike(raw: bytes) -> None:
    frame = both("decode_smrf", raw)
    assert type(frame).__name__ == "SmrfFrame"
    both("decode", raw, now_ms=1_000)
    for variant in as_other_writers_write(OURS_PLAIN):
        both("decode_smrf", variant)


@given(frames)
def test_frames_encode_alike(frame: Any) -> None:
    # (each form's encoder takes its own SmrfFrame class: the compiled one checks the type)
    fields = _comparable(frame)
    assert isinstance(fields, tuple)
    raw = each(lambda form: form.encode_smrf(form.SmrfFrame(*fields[1:])))
    if isinstance(raw, bytes):
        both("decode_smrf", raw)


@given(messages)
def test_messages_encode_and_decode_alike(message: Message) -> None:
    for compress_above in (None, 100):
        raw = both("encode", message, compress_above)
        assert isinstance(raw, bytes)
        decoded = both("decode", raw, now_ms=5)
        assert isinstance(decoded, Message)
        for variant in as_other_writers_write(raw):
            both("decode", variant, now_ms=5)


@settings(max_examples=400)
@given(messages, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                          min_size=1, max_size=6), st.integers(0, 4))
def test_damaged_frames_give_the_same_refusal_or_message(
        message: Message, flips: list[tuple[int, int]], layout: int) -> None:
    raw = smrf.encode(message, compress_above=None)
    raw = bytearray((raw, *as_other_writers_write(raw))[layout])
    for at, value in flips:
        raw[8 + at % (len(raw) - 8)] = value
    for name in ("decode", "decode_smrf"):
        both(name, bytes(raw), 1 << 16)


@settings(max_examples=400)
@given(st.binary(max_size=400), st.integers(0, 3), st.integers(-3, 3))
def test_random_bytes_give_the_same_refusal_or_message(data: bytes, sig_size: int,
                                                       cut: int) -> None:
    msg_size = max(0, len(data) - sig_size)
    prefixed = (1).to_bytes(2, "little") + (len(data) - msg_size).to_bytes(2, "little") + \
        msg_size.to_bytes(4, "little") + data
    for raw in (data, prefixed, prefixed[:len(prefixed) + cut] if cut < 0 else
                prefixed + bytes(cut)):
        both("decode_smrf", raw)
        both("decode", raw)


def test_the_same_refusals_for_other_types_and_bounds() -> None:
    raw = smrf.encode(Message(MessageType.REQUEST, "s", "r", 10, b"x", "m1",
                              MqttAddress("g", "t")))
    for data in ("a string", bytearray(raw), memoryview(raw), raw[:-1] + b"\x01"):
        both("decode", data)
    both("decode", raw, 10)  # over the size bound


# ---------------------------------------------------------------------- the loader

@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package ``formpkg`` with a module ``mod`` (``VALUE = 1``), importable from
    ``tmp_path``; forgotten again afterwards."""
    folder = tmp_path / "formpkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "mod.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield folder
    for name in [n for n in sys.modules if n == "formpkg" or n.startswith("formpkg.")]:
        del sys.modules[name]
    compiled.FORMS.pop("formpkg.mod", None)


def extension(folder: Path, digest: str | None) -> Path:
    """A file where the import system looks for ``formpkg.mod``'s extension module (not a
    loadable one: importing it fails), with a digest file saying ``digest``."""
    path = folder / f"mod{sysconfig.get_config_var('EXT_SUFFIX')}"
    path.write_bytes(b"not an extension module")
    if digest is not None:
        Path(f"{path}{compiled.DIGEST_SUFFIX}").write_text(digest + "\n")
    return path


def loaded(name: str = "formpkg.mod") -> tuple[ModuleType, compiled.Form]:
    module = compiled.load(name)
    assert sys.modules[name] is module
    return module, compiled.FORMS[name]


def test_without_an_extension_module_the_source_runs(package: Path) -> None:
    module, form = loaded()
    assert module.VALUE == 1
    assert form == compiled.Form("formpkg.mod", False,
                                 "not compiled (no extension module was built)")


@pytest.mark.parametrize("digest", [None, "0" * 64, "not a digest"])
def test_an_extension_module_not_built_from_this_source_is_not_loaded(
        package: Path, digest: str | None) -> None:
    built = extension(package, digest)
    module, form = loaded()
    assert module.VALUE == 1 and module.__file__ == str(package / "mod.py")
    assert not form.compiled and form.reason is not None
    assert built.name in form.reason and "bin/build-compiled" in form.reason
    # the package's attribute is the module, as after an import
    assert sys.modules["formpkg"].mod is module


def test_an_extension_module_built_from_this_source_is_loaded(package: Path) -> None:
    # the stand-in is no extension module: the import that fails shows it was chosen
    extension(package, hashlib.sha256((package / "mod.py").read_bytes()).hexdigest())
    with pytest.raises(ImportError):
        compiled.load("formpkg.mod")


def test_the_environment_switch_loads_the_source(package: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    extension(package, compiled.source_digest(package / "mod.py"))
    monkeypatch.setenv(compiled.ENVIRONMENT_SWITCH, "0")
    module, form = loaded()
    assert module.VALUE == 1
    assert form.reason == f"{compiled.ENVIRONMENT_SWITCH}=0 asks for the source"


def test_a_process_with_the_switch_runs_the_source_codec() -> None:
    script = ("from pyjoynr.runtime import smrf; import pyjoynr.runtime.smrf_core as core; "
              "print(smrf.FORM.compiled, core.COMPILED, core.__file__.endswith('.py'))")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=True,
                            env={**os.environ, compiled.ENVIRONMENT_SWITCH: "0"})
    assert result.stdout.split() == ["False", "False", "True"]


def test_the_source_digest_is_what_sha256sum_prints(tmp_path: Path) -> None:
    # bin/_bootstrap.sh writes the digest with sha256sum; the loader compares with this
    path = tmp_path / "m.py"
    path.write_bytes(b"VALUE = 1\n")
    result = subprocess.run(["sha256sum", str(path)], capture_output=True, text=True,
                            check=True, timeout=30)
    assert compiled.source_digest(path) == result.stdout.split()[0]

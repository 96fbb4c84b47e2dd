"""The application API: the package root re-exports libjoynr's names (lazily: ``import
pyjoynr`` imports nothing more, so that ``pyjoynr.pipeline`` on a Spark executor needs nothing
else); what an application rarely needs is in ``pyjoynr.libjoynr.advanced``; the names that
moved there still resolve from the top, with a DeprecationWarning that names the new place;
``LibjoynrRuntime`` offers the application's methods and its machinery as ``core``; the old
keywords in seconds still work, with a DeprecationWarning naming the one in milliseconds."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import pyjoynr
import pyjoynr.libjoynr
from pyjoynr.libjoynr import LibjoynrConfig, LibjoynrRuntime, advanced, connect
from tests.support.docs import python_blocks

ROOT = Path(__file__).resolve().parents[2]


def test_the_root_offers_exactly_the_libjoynr_api() -> None:
    assert pyjoynr.__all__ == pyjoynr.libjoynr.__all__
    for name in pyjoynr.__all__:
        assert getattr(pyjoynr, name) is getattr(pyjoynr.libjoynr, name), name


def test_the_api_is_small_and_the_rest_is_in_the_advanced_module() -> None:
    api, rest = set(pyjoynr.libjoynr.__all__), set(advanced.__all__)
    assert len(api) == 18
    assert not api & rest
    assert rest >= pyjoynr.libjoynr.MOVED_TO_ADVANCED
    for name in ("RouterSettings", "WebSocketClientSettings", "wire_form_of", "wire_name",
                 "current_origin"):
        assert name in rest and name not in api, name


@pytest.mark.parametrize("module", [pyjoynr, pyjoynr.libjoynr], ids=lambda m: m.__name__)
def test_a_moved_name_resolves_with_a_warning_naming_its_new_place(module: object) -> None:
    for name in sorted(pyjoynr.libjoynr.MOVED_TO_ADVANCED):
        with pytest.warns(DeprecationWarning,
                          match=rf"\.{name} has moved: import it from pyjoynr\.libjoynr\.advanced"
                          ) as caught:
            found = getattr(module, name)
        assert found is getattr(advanced, name), name
        assert caught[0].filename == __file__, "the warning points at the caller"


def test_from_import_of_a_moved_name_warns_too() -> None:
    with pytest.warns(DeprecationWarning, match="pyjoynr.RouterSettings has moved"):
        from pyjoynr import RouterSettings  # noqa: PLC0415
    assert RouterSettings is advanced.RouterSettings


def test_an_unknown_name_is_an_attribute_error_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for module in (pyjoynr, pyjoynr.libjoynr):
            with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
                getattr(module, "NoSuchName")  # noqa: B009
        with pytest.raises(AttributeError):
            getattr(pyjoynr, "__wrapped__")  # noqa: B009


def test_importing_the_root_imports_nothing_else() -> None:
    probe = ("import sys, pyjoynr; print(sorted(m for m in sys.modules "
             "if m.startswith('pyjoynr.')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_star_import_gives_the_api() -> None:
    names: dict[str, object] = {}
    exec("from pyjoynr import *", names)
    assert sorted(n for n in names if n != "__builtins__") == sorted(pyjoynr.libjoynr.__all__)


def test_the_runtime_offers_the_applications_methods_and_its_machinery_as_core() -> None:
    public = {n for n in dir(LibjoynrRuntime) if not n.startswith("_")}
    assert public == {"build_proxy", "client_id", "close", "config", "register_provider",
                      "unregister_provider"}
    runtime = LibjoynrRuntime(connect("ws://127.0.0.1:1/").address, "rt")
    assert isinstance(runtime.core, advanced.LibjoynrCore)
    assert isinstance(runtime.core, advanced.JoynrRuntime)
    assert (runtime.client_id, runtime.config) == ("rt", runtime.core.config)


def test_connect_takes_milliseconds_and_its_old_keyword_in_seconds_with_a_warning() -> None:
    assert connect("ws://127.0.0.1:1/").timeout_ms == 10_000
    assert connect("ws://127.0.0.1:1/", timeout_ms=2_500).timeout_ms == 2_500
    with pytest.warns(DeprecationWarning, match=r"connect\(timeout_s=...\) is deprecated: "
                                                r"pass timeout_ms="):
        assert connect("ws://127.0.0.1:1/", timeout_s=2.5).timeout_ms == 2_500
    with pytest.raises(ValueError, match="timeout_ms must be > 0"):
        connect("ws://127.0.0.1:1/", timeout_ms=0)


def test_the_config_takes_milliseconds_and_its_old_keyword_in_seconds_with_a_warning() -> None:
    assert LibjoynrConfig().reply_grace_ms == 1_000
    with pytest.warns(DeprecationWarning, match=r"LibjoynrConfig\(reply_grace_s=...\) is "
                                                r"deprecated: pass reply_grace_ms="):
        config = LibjoynrConfig(reply_grace_s=0.25)
    assert config.reply_grace_ms == 250
    with pytest.raises(ValueError, match="reply_grace_ms must be an int >= 0"):
        LibjoynrConfig(reply_grace_ms=-1)


def test_mypy_sees_the_api_through_the_root(tmp_path: Path) -> None:
    """An application checked strictly (no implicit re-exports) finds every name at the root
    and the machinery's types behind ``core``."""
    app = tmp_path / "app.py"
    app.write_text(
        "from pyjoynr import " + ", ".join(pyjoynr.libjoynr.__all__) + "\n"
        "from pyjoynr.libjoynr.advanced import RouterSettings\n\n\n"
        "async def main() -> None:\n"
        "    runtime: LibjoynrRuntime = await connect('ws://127.0.0.1:4242/', timeout_ms=5)\n"
        "    runtime.core.router.sweep()\n"
        "    LibjoynrConfig(router=RouterSettings())\n")
    done = subprocess.run(
        [ROOT / ".venv" / "bin" / "mypy", "--strict", "--no-incremental", "--cache-dir",
         str(tmp_path / "cache"), str(app)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _documented(section: str) -> list[str]:
    """The names docs/api.md lists (``- `name`: ...``) under the heading that starts with
    ``section``, up to the next one."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.MULTILINE)
    (body,) = [p for p in parts if p.startswith(section)]
    return re.findall(r"^- `(\w+)`:", body, flags=re.MULTILINE)


def test_the_api_page_documents_exactly_the_exported_names() -> None:
    top = _documented("The application API")
    rest = _documented("What an application rarely needs")
    assert sorted(top) == sorted(pyjoynr.libjoynr.__all__) and len(top) == len(set(top))
    assert sorted(rest) == sorted(advanced.__all__) and len(rest) == len(set(rest))


def test_the_api_page_has_the_readme_example() -> None:
    (example,) = python_blocks(ROOT / "README.md")[:1]
    assert example in python_blocks(ROOT / "docs" / "api.md")


def test_the_websocket_client_settings_are_in_milliseconds() -> None:
    settings = advanced.WebSocketClientSettings()
    assert (settings.ping_interval_ms, settings.ping_timeout_ms, settings.open_timeout_ms,
            settings.reconnect_initial_ms, settings.reconnect_max_ms) == (
        20_000, 20_000, 10_000, 50, 5_000)
    with pytest.raises(ValueError, match="ping_timeout_ms must be > 0"):
        advanced.WebSocketClientSettings(ping_timeout_ms=0)
    with pytest.raises(ValueError, match="need 0 < reconnect_initial_ms <= reconnect_max_ms"):
        advanced.WebSocketClientSettings(reconnect_initial_ms=6_000)

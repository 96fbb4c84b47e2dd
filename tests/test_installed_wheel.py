"""The project as a library: its wheel, built and installed into a fresh virtual environment
outside the checkout, is one top-level package (``pyjoynr``) whose console scripts start the
cluster controller and the GCD with their packaged default configuration, the radio example
runs against it from a folder of its own, and so does the example integration test of
docs/testing.md on the installed pytest plugin; mypy --strict passes on an application's
generated package, on the wheel and on an editable install of the checkout. Installed bare
first (no extra: an application's install), the wheel runs the README's example against a
cluster controller, and each program says in one line which extra it needs and exits 2; the
extras are then added to the same environment (one environment made, not two). Built
where a C compiler and Python's headers are (as here: the suite needs them), the wheel is a
platform wheel whose SMRF codec runs compiled (setup.py).

Building the wheel takes setuptools and mypy (mypyc) and installing it takes the project's
dependencies from pip's index (or its cache), as any user's ``pip install`` does.
"""

from __future__ import annotations

import asyncio
import configparser
import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.admin import cc_process, gcd_process, http_get
from tests.support.docs import plugin_example, python_blocks, run_pytest

ROOT = Path(__file__).resolve().parents[1]
PIP = ["--disable-pip-version-check", "--quiet"]


@dataclass(frozen=True)
class Installed:
    venv: Path
    wheel: Path
    #: a folder outside the checkout, where the programs and the example run
    outside: Path

    def script(self, name: str) -> list[str]:
        return [str(self.venv / "bin" / name)]


def run(args: list[str], cwd: Path, timeout_s: float = 600) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout_s,
                          check=False, env={k: v for k, v in os.environ.items()
                                            if k not in ("PYTHONPATH", "VIRTUAL_ENV")})
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once for the module (by ``bare``), outside the checkout."""
    base = tmp_path_factory.mktemp("dist")
    assert not base.resolve().is_relative_to(ROOT)
    run([sys.executable, "-m", "pip", "wheel", *PIP, "--no-deps", "-w", str(base),
         str(ROOT)], cwd=base)
    (built,) = base.glob("pyjoynr-*.whl")
    return built


def fresh_venv(base: Path) -> Path:
    """A virtual environment of the interpreter the project's own was made from (not of that
    environment), at ``base/venv``."""
    run([sys.executable, "-c", "import sys; assert sys.prefix != sys.base_prefix"], cwd=base)
    base_python = Path(sys.base_prefix) / "bin" / "python3"
    run([str(base_python), "-m", "venv", str(base / "venv")], cwd=base)
    return base / "venv"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel installed with no extra, as an application installs it. The module's one
    virtual environment (made while the wheel builds: neither needs the other): ``installed``
    adds the extras to it once the tests of the bare install (first in the module) have
    run."""
    base = tmp_path_factory.mktemp("wheel")
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="venv") as pool:
        making = pool.submit(fresh_venv, base)
        wheel = build_wheel(tmp_path_factory)
        venv = making.result()
    run([str(venv / "bin" / "python"), "-m", "pip", "install", *PIP, str(wheel)], cwd=base)
    outside = base / "app"
    outside.mkdir()
    return Installed(venv, wheel, outside)


@pytest.fixture(scope="module")
def installed(bare: Installed) -> Installed:
    """The same environment with the testing extra added (the pytest plugin and what it runs
    on: cc and gcd with it) and the franca one (an application's generated code,
    type-checked below), as an application adds an extra to its install."""
    run([str(bare.venv / "bin" / "python"), "-m", "pip", "install", *PIP,
         f"{bare.wheel}[testing,franca]"], cwd=bare.outside)
    return bare


async def test_a_bare_install_runs_the_readme_example(bare: Installed, tmp_path: Path) -> None:
    """No extra: the README's example (the application API) against a cluster controller
    started from the suite's own environment; the bare environment holds the project's two
    dependencies and nothing of an extra."""
    python = str(bare.venv / "bin" / "python")
    listed = run([python, "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
                 cwd=bare.outside)
    names = {line.split("==")[0].lower() for line in listed.split()}
    assert names - {"pip", "setuptools"} == {"pyjoynr", "websockets", "msgpack"}, listed
    (example,) = [b for b in python_blocks(ROOT / "README.md") if "connect(" in b]
    cc = cc_process(tmp_path / "cc")
    try:
        url = (await cc.wait_for(r"libjoynr runtimes connect to (ws://\S+);", 60)).group(1)
        assert 'connect("ws://127.0.0.1:4242/")' in example
        (bare.outside / "readme_example.py").write_text(
            example.replace("ws://127.0.0.1:4242/", url), encoding="utf-8")
        out = await asyncio.to_thread(run, [python, "readme_example.py"], bare.outside, 120)
        assert out == "True FM4\n"
    finally:
        assert await cc.astop() == 0, cc.output()


@pytest.mark.parametrize(("script", "extra", "args"), [
    ("pyjoynr-pipeline", "pipeline", ["--help"]),
    ("pyjoynr-cluster-controller", "cc", ["--help"]),
    ("pyjoynr-gcd", "gcd", []),
    ("pyjoynr-franca", "franca", ["x.fidl"]),
])
def test_a_program_without_its_extra_says_which_in_one_line(
        bare: Installed, script: str, extra: str, args: list[str]) -> None:
    done = subprocess.run([*bare.script(script), *args], cwd=bare.outside, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"{script} needs the '{extra}' extra of pyjoynr ")
    assert f"pip install 'pyjoynr[{extra}]'" in done.stderr


def test_pytest_runs_beside_a_bare_install(bare: Installed) -> None:
    """pytest loads the plugin (an entry point) wherever pyjoynr is installed: without the
    testing extra it loads all the same, and an application's plain tests run. Runs after the
    other tests of the bare install: it adds pytest to it."""
    python = str(bare.venv / "bin" / "python")
    run([python, "-m", "pip", "install", *PIP, "pytest>=8"], cwd=bare.outside)
    folder = bare.outside / "plain-tests"
    folder.mkdir()
    (folder / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    out = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--fixtures",
               str(folder)], cwd=folder, timeout_s=120)
    assert "joynr_cc" in out
    out = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
              cwd=folder, timeout_s=120)
    assert re.search(r"\b1 passed\b", out), out


def test_the_wheel_runs_the_compiled_smrf_codec(installed: Installed) -> None:
    """This machine has a C compiler and Python's headers, so the wheel is a platform wheel
    with the codec's extension modules and the digest of the source they were built from,
    which pyjoynr.runtime.compiled accepts: the installed package runs the compiled form."""
    include = Path(sysconfig.get_paths()["include"])
    assert shutil.which("cc") and (include / "Python.h").is_file(), \
        "the wheel is compiled only where a C compiler and Python's headers are"
    version = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert installed.wheel.name == f"pyjoynr-0.1.0-{version}-{version}-{platform}.whl"
    out = run([str(installed.venv / "bin" / "python"), "-c",
               "from pyjoynr.runtime import smrf; import pyjoynr.runtime.smrf_core as core; "
               "print(smrf.FORM.compiled, smrf.FORM.reason, core.__file__, sep='\\n')"],
              cwd=installed.outside)
    compiled, reason, module = out.splitlines()
    assert (compiled, reason) == ("True", "None"), out
    extension = Path(module)
    assert extension.name.endswith(sysconfig.get_config_var("EXT_SUFFIX"))
    assert extension.parent.is_relative_to(installed.venv), module
    source = extension.parent / "smrf_core.py"
    assert source.read_bytes() == (ROOT / "pyjoynr" / "runtime" / "smrf_core.py").read_bytes()
    assert (Path(f"{extension}.sha256").read_text().strip()
            == hashlib.sha256(source.read_bytes()).hexdigest())


def test_the_wheel_is_one_top_level_package_with_its_defaults(installed: Installed) -> None:
    """One top-level package with its packaged defaults, its console scripts, the
    application API at its root, and its license (the file and the metadata)."""
    site = Path(run([str(installed.venv / "bin" / "python"), "-c",
                     "import pyjoynr, pathlib; print(pathlib.Path(pyjoynr.__file__).parent)"],
                    cwd=installed.outside).strip())
    assert site.name == "pyjoynr" and not site.is_relative_to(ROOT)
    record = next(site.parent.glob("pyjoynr-*.dist-info")) / "RECORD"
    with record.open(newline="") as rows:
        paths = [row[0] for row in csv.reader(rows)]
    tops = {path.split("/")[0] for path in paths if not path.startswith("../")}
    assert tops == {"pyjoynr", record.parent.name}
    assert (record.parent / "top_level.txt").read_text().split() == ["pyjoynr"]
    metadata = (record.parent / "METADATA").read_text(encoding="utf-8")
    assert "\nLicense-Expression: Apache-2.0\n" in metadata
    assert "\nLicense-File: LICENSE\n" in metadata
    assert (record.parent / "licenses" / "LICENSE").read_text(encoding="utf-8") == (
        ROOT / "LICENSE").read_text(encoding="utf-8")
    for name in ("cluster-controller.toml", "gcd.toml", "pipeline.toml",
                 "provisioning.example.toml"):
        assert (site / "config" / name).is_file(), name
    scripts = configparser.ConfigParser()
    scripts.read(record.parent / "entry_points.txt")
    assert dict(scripts["console_scripts"]) == {
        "pyjoynr-cluster-controller": "pyjoynr.cluster_controller.__main__:main",
        "pyjoynr-gcd": "pyjoynr.gcd.__main__:main",
        "pyjoynr-pipeline": "pyjoynr.pipeline.__main__:main",
        "pyjoynr-franca": "pyjoynr.franca.__main__:main"}
    # the application API from the package root
    out = run([str(installed.venv / "bin" / "python"), "-c",
               "from pyjoynr import Provider, connect, interface; print(connect.__module__)"],
              cwd=installed.outside)
    assert out.strip() == "pyjoynr.libjoynr.runtime"


async def test_the_console_scripts_start_the_programs_and_the_example_runs(
        installed: Installed, tmp_path: Path) -> None:
    # the wheel's package, not the checkout's even when pytest runs with it on PYTHONPATH
    cc = cc_process(tmp_path / "cc", command=installed.script("pyjoynr-cluster-controller"),
                    cwd=installed.outside, PYTHONPATH="")
    try:
        url = (await cc.wait_for(r"libjoynr runtimes connect to (ws://\S+);", 60)).group(1)
        broker = (await cc.wait_for(r"embedded MQTT broker .* listening on (\S+)", 5)).group(1)
        started = cc.output()
        # the wheel's compiled SMRF codec, on the status page and not warned about in the log
        status = (await http_get(f"{await cc.admin_url()}/status.json")).json()
        (identity,) = [s for s in status["sections"] if s["id"] == "identity"]
        assert dict(identity["facts"])["SMRF codec"] == "compiled"
        assert "codec's plain Python form" not in started, started
        # the packaged defaults: the embedded broker and GCD are on unless configured off
        assert "embedded GCD" in started or "GCD for joynrdefaultgbid started" in started
        gcd = gcd_process(tmp_path / "gcd", broker_url=broker_url(broker),
                          command=installed.script("pyjoynr-gcd"), cwd=installed.outside,
                          JOYNR_GCD__GCD__INSTANCE_ID="gcd-from-the-wheel", PYTHONPATH="")
        try:
            await gcd.wait_for(r"GCD for joynrdefaultgbid started", 60)
        finally:
            assert await gcd.astop() == 0, gcd.output()
        consumer = await asyncio.to_thread(run_example, installed, url)
        heard = re.search(r"stations heard: (\d+)", consumer)
        assert heard is not None and int(heard.group(1)) >= 1, consumer
    finally:
        assert await cc.astop() == 0, cc.output()


def run_example(installed: Installed, url: str) -> str:
    """The radio example, copied out of the checkout, against the installed package: the
    provider in the background, the consumer to its end; the consumer's output."""
    shutil.copytree(ROOT / "examples", installed.outside / "examples",
                    ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    python = str(installed.venv / "bin" / "python")
    provider = subprocess.Popen(
        [python, "-m", "examples.radio.provider", "--url", url], cwd=installed.outside,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        return run([python, "-m", "examples.radio.consumer", "--url", url],
                   cwd=installed.outside, timeout_s=120)
    finally:
        provider.terminate()
        provider.communicate(timeout=30)


def broker_url(listening: str) -> str:
    """The embedded broker's URL from its log line (``127.0.0.1:PORT`` or a URL)."""
    listening = listening.rstrip(" ,;(")
    return listening if "://" in listening else f"mqtt://{listening}?version=3.1.1"


def test_the_plugins_example_test_passes_on_the_installed_wheel(installed: Installed) -> None:
    folder = installed.outside / "integration-tests"
    folder.mkdir()
    (folder / "test_example.py").write_text(plugin_example(), encoding="utf-8")
    out = run_pytest(folder, str(installed.venv / "bin" / "python"))
    assert re.search(r"\b2 passed\b", out), out


def test_mypy_checks_generated_code_on_the_wheel_and_on_an_editable_install(
        installed: Installed) -> None:
    """An application's package generated from examples/radio/radio.fidl passes ``mypy
    --strict`` run from the application's folder on the environment's pyjoynr: first the
    wheel's, then an editable install of the checkout (``pip install -e``) in its place, a
    plain path in a .pth file that mypy follows (setuptools' import hook for an unspecified
    layout is none: every pyjoynr class was ``Any`` to mypy). Runs last: it replaces the
    module's installation."""
    app = installed.outside / "typed-app"
    app.mkdir()
    python = str(installed.venv / "bin" / "python")
    run([*installed.script("pyjoynr-franca"), "--package", "radio_if", "-o", str(app),
         str(ROOT / "examples" / "radio" / "radio.fidl")], cwd=app)
    (app / "use.py").write_text(
        "from radio_if import RadioProviderBase, RadioStation\n\n\n"
        "class Radio(RadioProviderBase):\n"
        "    async def add_favorite_station(self, station: RadioStation) -> bool:\n"
        "        return bool(station.name)\n")
    mypy = [str(ROOT / ".venv" / "bin" / "mypy"), "--strict", "--python-executable", python,
            "--no-incremental", "radio_if", "use.py"]
    assert "Success" in run(mypy, cwd=app)
    run([python, "-m", "pip", "install", *PIP, "--no-deps", "-e", str(ROOT)], cwd=app)
    site = Path(run([python, "-c", "import pyjoynr, pathlib; print(pathlib.Path("
                     "pyjoynr.__file__).parent)"], cwd=app).strip())
    assert site == ROOT / "pyjoynr"
    assert "Success" in run(mypy, cwd=app)

"""bin/gcd as a real process: start line, a request served over MQTT, signals, bad config."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pyjoynr.gcd.interface import GCD_TOPIC
from pyjoynr.testing.brokers import Mosquitto
from tests.support.processes import wait_for_line

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.network


def start(tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pyjoynr.gcd"], cwd=ROOT, text=True,
        env={**os.environ, "JOYNR_GCD__GCD__SQLITE_PATH": str(tmp_path / "gcd.sqlite"),
             "JOYNR_GCD__ADMIN__PORT": "0", **env},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


async def test_the_gcd_process_starts_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    async with Mosquitto(tmp_path / "broker") as broker:
        proc = start(tmp_path, JOYNR_GCD__GCD__BROKER_URL=broker.url,
                     JOYNR_GCD__GCD__VALID_GBIDS='["joynrdefaultgbid","other"]')
        try:
            lines = wait_for_line(proc, "GCD for joynrdefaultgbid started")
            started = lines[-1]
            assert any("index ready" in line for line in lines[:-1])  # started: loaded
            assert GCD_TOPIC in started and "sqlite store" in started
            assert "valid GBIDs joynrdefaultgbid, other," in started  # both, from the TOML array
            # (the broker is served from the start of the load: connected before or after)
            connected = "MQTT backend joynrdefaultgbid connected"
            if not any(connected in line for line in lines):
                wait_for_line(proc, connected)
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 0, out
    assert "stop requested" in out and "GCD for joynrdefaultgbid stopped" in out
    assert (tmp_path / "gcd.sqlite").exists()


def test_bad_gcd_configuration_exits_with_a_clear_message(tmp_path: Path) -> None:
    proc = start(tmp_path, JOYNR_GCD__GCD__VALID_GBIDS='["other"]')
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2, out
    assert "bad configuration" in out and "not among valid_gbids" in out
    assert "JOYNR_GCD__GCD__VALID_GBIDS" in out


async def test_a_list_in_the_comma_form_stops_the_gcd_naming_the_variable(
        tmp_path: Path) -> None:
    """The one syntax of a list in an environment variable is a TOML array: the comma form
    is refused (exit 2) with a message that names the variable and shows the TOML form."""
    async with Mosquitto(tmp_path / "broker") as broker:
        proc = start(tmp_path, JOYNR_GCD__GCD__BROKER_URL=broker.url,
                     JOYNR_GCD__GCD__VALID_GBIDS="joynrdefaultgbid, other")
        try:
            out, _ = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 2, out
    assert out.strip() == (
        "gcd: bad configuration: JOYNR_GCD__GCD__VALID_GBIDS: a list is written as a TOML "
        "array, e.g. [\"a\", \"b\"]; got 'joynrdefaultgbid, other'"), out
    assert not (tmp_path / "gcd.sqlite").exists()  # stopped before opening its store


def test_shipped_gcd_config_equals_the_documented_defaults() -> None:
    from pyjoynr.gcd.service import DEFAULT_CONFIG, GcdConfig  # noqa: PLC0415

    assert GcdConfig.load(DEFAULT_CONFIG, env={}) == GcdConfig()


def test_help_is_plain_text() -> None:
    proc = subprocess.run([sys.executable, "-m", "pyjoynr.gcd", "--help"], cwd=ROOT, text=True,
                          capture_output=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Global Capabilities Directory" in proc.stdout and "--config" in proc.stdout
    assert "JOYNR_GCD__<SECTION>__<KEY>" in proc.stdout
    for markup in ("``", ":class:", ":mod:", ":meth:"):
        assert markup not in proc.stdout


def test_the_mqtt_settings_of_the_gcd_section_are_checked_when_loaded() -> None:
    from pyjoynr.gcd.service import DEFAULT_CONFIG, GcdConfig  # noqa: PLC0415
    from pyjoynr.runtime.config import ConfigError  # noqa: PLC0415

    for key, value, says in (("MQTT_VERSION", "4.0", "version"),
                             ("BROKER_URL", "http://broker", "scheme")):
        with pytest.raises(ConfigError, match=says):
            GcdConfig.load(DEFAULT_CONFIG, env={f"JOYNR_GCD__GCD__{key}": value})
    section = GcdConfig.load(DEFAULT_CONFIG, env={}).gcd.mqtt_section()
    assert section.backends == {"joynrdefaultgbid": "mqtt://127.0.0.1:1883"}
    assert section.version == "5" and section.session_expiry_s == 0


def test_an_unknown_environment_override_stops_the_gcd(tmp_path: Path) -> None:
    proc = start(tmp_path, JOYNR_GCD__GCD__BROKER="mqtt://127.0.0.1:1")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2, out
    assert "bad configuration" in out and "JOYNR_GCD__GCD__BROKER" in out


async def test_without_serve_while_loading_the_gcd_process_serves_only_after_its_index(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """On PostgreSQL with rows already stored and ``serve_while_loading`` off: the process
    loads them all, then says it is ready (and only then subscribes to its broker). (By
    default it serves from the store meanwhile: tests/test_gcd_serving_while_loading.py.)"""
    from pyjoynr.gcd.postgres_store import PostgresStore  # noqa: PLC0415
    from pyjoynr.gcd.store import StoredEntry  # noqa: PLC0415
    from tests.support.gcd_stores import fresh_postgres_dsn  # noqa: PLC0415

    dsn = await fresh_postgres_dsn(request.config)
    store = PostgresStore(dsn)
    await store.open()
    try:
        await store.add([StoredEntry("joynrdefaultgbid", f"p{n}", "d", "i", 1, 0, 0, "GLOBAL",
                                     True, "[]", 0, 2**53, "", "joynr/cc/x", "x")
                         for n in range(2500)])
    finally:
        await store.close()
    async with Mosquitto(tmp_path / "broker") as broker:
        proc = start(tmp_path, JOYNR_GCD__GCD__BROKER_URL=broker.url,
                     JOYNR_GCD__GCD__STORE="postgres", JOYNR_GCD__GCD__POSTGRES_DSN=dsn,
                     JOYNR_GCD__GCD__SERVE_WHILE_LOADING="false")
        try:
            lines = wait_for_line(proc, "GCD for joynrdefaultgbid started")
            assert not any("from the store" in line for line in lines), lines
            loaded = [line for line in lines if "index ready" in line]
            assert loaded and "2500 rows loaded" in loaded[0], lines
            assert "2500 entries in the index" in lines[-1]
            # loaded before it even connects to its broker (so it serves nothing before)
            connected = wait_for_line(proc, "MQTT backend joynrdefaultgbid connected")
            everything = lines + connected
            first_connected = next(n for n, line in enumerate(everything)
                                   if "MQTT backend joynrdefaultgbid connected" in line)
            assert everything.index(loaded[0]) < first_connected
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 0, out

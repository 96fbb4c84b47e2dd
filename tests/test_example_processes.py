"""The README's example as real processes: a CC, the radio provider and the consumer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pyjoynr.testing.cluster import free_port
from tests.support.processes import wait_for_line

ROOT = Path(__file__).resolve().parents[1]


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, text=True,
                            env={**os.environ, "JOYNR_CC__ADMIN__PORT": "0", **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_provider_and_consumer_talk_through_the_cluster_controller(tmp_path):
    # the default run, as the README shows it: only the URL given
    port = free_port()
    url = f"ws://127.0.0.1:{port}/"
    cc = spawn("-m", "pyjoynr.cluster_controller", env={
        "JOYNR_CC__WEBSOCKET__PORT": str(port),
        "JOYNR_CC__EMBEDDED_BROKER__PORT": "0",
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(tmp_path)})
    provider = consumer = None
    try:
        wait_for_line(cc, "cluster controller cc-")
        provider = spawn("-m", "examples.radio.provider", "--url", url)
        provider_lines = wait_for_line(provider, "registered")
        consumer = spawn("-m", "examples.radio.consumer", "--url", url)
        out, _ = consumer.communicate(timeout=60)
        assert consumer.returncode == 0, out
        assert "add_favorite_station(Oe1) -> True" in out
        assert "current station: FM4" in out
        assert "shuffled" in out
        heard = int(out.split("stations heard: ")[1].split()[0])
        assert heard >= 1, out
        assert "new station in AUSTRIA: Station " in out
        assert "GERMANY:" not in out and "ITALY:" not in out  # only the chosen country

        provider.send_signal(signal.SIGINT)
        p_out, _ = provider.communicate(timeout=30)
        assert provider.returncode == 0, p_out
        assert "consumer says: hello from the consumer" in "".join(provider_lines) + p_out
    finally:
        for proc in (consumer, provider):
            if proc is not None and proc.poll() is None:
                proc.kill()
        cc.send_signal(signal.SIGTERM)
        cc_out, _ = cc.communicate(timeout=30)
    assert cc.returncode == 0, cc_out


def test_provider_and_consumer_on_two_cluster_controllers_find_each_other_through_the_gcd(
        tmp_path: Path) -> None:
    # CC one: the default stack (embedded broker and GCD); CC two: only a cluster controller,
    # whose backend is CC one's broker
    broker_port, port_one, port_two = free_port(), free_port(), free_port()
    one = spawn("-m", "pyjoynr.cluster_controller", env={
        "JOYNR_CC__WEBSOCKET__PORT": str(port_one),
        "JOYNR_CC__EMBEDDED_BROKER__PORT": str(broker_port),
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(tmp_path / "one")})
    two = provider = consumer = None
    try:
        wait_for_line(one, "GCD for joynrdefaultgbid started")
        two = spawn("-m", "pyjoynr.cluster_controller", env={
            "JOYNR_CC__WEBSOCKET__PORT": str(port_two),
            "JOYNR_CC__EMBEDDED_BROKER__ENABLED": "false",
            "JOYNR_CC__EMBEDDED_GCD__ENABLED": "false",
            "JOYNR_CC__MQTT__BACKENDS":
                f'{{joynrdefaultgbid = "mqtt://127.0.0.1:{broker_port}?version=3.1.1"}}',
            "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(tmp_path / "two")})
        wait_for_line(two, "MQTT backend joynrdefaultgbid connected")
        provider = spawn("-m", "examples.radio.provider", "--url",
                         f"ws://127.0.0.1:{port_one}/", "--interval", "0.2")
        wait_for_line(provider, "registered")
        # GERMANY: announced after AUSTRIA in each round, so a broken partition filter shows
        consumer = spawn("-m", "examples.radio.consumer", "--url",
                         f"ws://127.0.0.1:{port_two}/", "--country", "GERMANY")
        out, _ = consumer.communicate(timeout=60)
        assert consumer.returncode == 0, out
        assert "add_favorite_station(Oe1) -> True" in out
        assert "shuffled" in out
        assert int(out.split("stations heard: ")[1].split()[0]) >= 1, out  # multicast via MQTT
        assert "new station in GERMANY: Station " in out
        assert "AUSTRIA:" not in out and "ITALY:" not in out, out
    finally:
        for proc in (consumer, provider, two, one):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()


def test_a_consumer_that_finds_no_radio_says_so_and_fails(tmp_path: Path) -> None:
    port = free_port()
    cc = spawn("-m", "pyjoynr.cluster_controller", env={
        "JOYNR_CC__WEBSOCKET__PORT": str(port),
        "JOYNR_CC__EMBEDDED_BROKER__PORT": "0",
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(tmp_path)})
    try:
        wait_for_line(cc, "cluster controller cc-")
        consumer = spawn("-m", "examples.radio.consumer", "--url", f"ws://127.0.0.1:{port}/",
                         "--domain", "nobody", "--discovery-timeout", "1")
        out, _ = consumer.communicate(timeout=60)
    finally:
        cc.send_signal(signal.SIGTERM)
        cc.communicate(timeout=30)
    assert consumer.returncode == 1, out
    assert "no radio found in domain 'nobody' within 1 s" in out
    assert "Traceback" not in out


PROGRAMS = [["-m", "pyjoynr.cluster_controller"], ["-m", "pyjoynr.gcd"],
            ["-m", "examples.radio.provider"], ["-m", "examples.radio.consumer"]] + [
    [str(path)] for path in sorted((ROOT / "bench").glob("*.py")) if path.name != "_common.py"]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p[-1].rsplit("/", 1)[-1])
def test_help_is_plain_text_for_every_program(program: list[str]) -> None:
    proc = subprocess.run([sys.executable, *program, "--help"], cwd=ROOT, text=True,
                          capture_output=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:")
    for markup in ("``", ":class:", ":mod:", ":meth:", ":func:", ":attr:"):
        assert markup not in proc.stdout, proc.stdout

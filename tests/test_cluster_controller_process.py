"""The cluster controller as a real process: start line, signals, persisted id, bad config."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import wait_for_line

ROOT = Path(__file__).resolve().parents[1]


def start(tmp_path: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pyjoynr.cluster_controller", *args],
        cwd=ROOT,
        env={**os.environ, "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(tmp_path),
             "JOYNR_CC__WEBSOCKET__PORT": "0", "JOYNR_CC__EMBEDDED_BROKER__PORT": "0",
             "JOYNR_CC__ADMIN__PORT": "0", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_starts_says_so_and_stops_gracefully_on_signal(tmp_path, sig):
    proc = start(tmp_path)
    try:
        lines = wait_for_line(proc, "cluster controller cc-")
        started = lines[-1]
        cc_id = (tmp_path / "cluster-controller-id").read_text().strip()
        assert cc_id.startswith("cc-")
        assert cc_id in started
        # the shipped configuration: the embedded broker, the CC's global address on it
        assert any("embedded MQTT broker (amqtt, MQTT 3.1.1) listening" in line
                   for line in lines)
        assert f"MqttAddress('joynrdefaultgbid', 'joynr/cc/{cc_id}')" in started
        # (the embedded GCD is subscribed before the CC's start line; its own backend may
        # connect before or after it)
        if not any("MQTT backend joynrdefaultgbid connected" in line for line in lines):
            wait_for_line(proc, "MQTT backend joynrdefaultgbid connected")
        assert any("GCD for joynrdefaultgbid started" in line for line in lines)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    assert "stop requested" in out
    assert f"cluster controller {cc_id} stopped" in out

    # the id survives a restart
    proc = start(tmp_path)
    try:
        assert cc_id in wait_for_line(proc, "cluster controller cc-")[-1]
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0


def test_embedded_backend_without_the_embedded_broker_is_a_clear_error(tmp_path):
    proc = start(tmp_path, JOYNR_CC__EMBEDDED_BROKER__ENABLED="false")
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 2, out
    assert "bad configuration" in out
    assert "embedded_broker.enabled is false" in out


def test_bad_configuration_exits_with_a_clear_message(tmp_path):
    proc = start(tmp_path, JOYNR_CC__ROUTING__CLEANUP_INTERVAL_S="-1")
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 2
    assert "bad configuration" in out
    assert "cleanup_interval_s must be > 0" in out


def test_an_unknown_environment_override_stops_the_process(tmp_path):
    proc = start(tmp_path, JOYNR_CC__WEBSOCKET__PROT="4243")
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 2, out
    assert "bad configuration" in out
    assert "JOYNR_CC__WEBSOCKET__PROT" in out


@pytest.mark.parametrize("setting", ["WEBSOCKET", "EMBEDDED_BROKER"])
def test_a_port_in_use_names_the_setting_to_change(tmp_path, setting):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        proc = start(tmp_path, **{f"JOYNR_CC__{setting}__PORT": port})
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1, out
    assert f"127.0.0.1:{port}" in out
    assert f"[{setting.lower()}] port" in out and f"JOYNR_CC__{setting}__PORT" in out

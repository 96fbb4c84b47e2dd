"""The harness of joynr's Java runtimes itself (tests/support/java_oracles.py): what it builds is
joynr's generator's code of the example's Franca, its cluster controller listens on loopback
only, and it is stopped by its PID."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from pyjoynr.testing.brokers import Mosquitto
from tests.support.java_oracles import CURRENT, JavaClusterController, JavaOracles


def test_the_radio_is_generated_by_joynrs_generator_from_the_examples_franca(
        java_oracles: JavaOracles) -> None:
    generated = java_oracles.out / CURRENT / "generated-sources" / "joynr" / "joynr" / "example"
    sync = (generated / "RadioSync.java").read_text(encoding="utf-8")
    # every member of examples/radio/radio.fidl, as joynr's Java generator writes it
    for member in ("getCurrentStation()", "setVolume(Integer volume)", "addFavoriteStation(",
                   "shuffleStations(", "describeStation("):
        assert member in sync, member
    assert "void logMessage(" in (generated / "RadioFireAndForget.java").read_text("utf-8")
    assert (generated / "RadioStation.java").is_file()
    assert "WARNING: This file is generated" in sync


async def test_joynrs_cluster_controller_listens_on_loopback_only(
        tmp_path: Path, java_oracles: JavaOracles) -> None:
    async with Mosquitto(tmp_path / "broker") as broker:
        cc = JavaClusterController(java_oracles, tmp_path / "java-cc",
                                   {"joynrdefaultgbid": broker.url})
        await cc.start()
        try:
            listening = cc.listening_addresses()
            assert ("127.0.0.1", cc.port) in listening
            # joynr binds its websocket server to every interface; the preload keeps it here
            assert all(ipaddress.ip_address(address).is_loopback for address, _ in listening), \
                listening
            pid = cc.pid
        finally:
            await cc.stop()
        assert cc.process is not None and cc.process.returncode is not None
        assert not os.path.exists(f"/proc/{pid}")  # noqa: ASYNC240 - one stat

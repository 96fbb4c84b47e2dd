"""Another client taking a cluster controller's MQTT session, on real mosquitto.

A broker gives a client id's session to the newest connection that names it. Any process that
reaches an anonymous broker could so take a cluster controller's (or a GCD's) session, and
with it the messages meant for it. The transport notices (MQTT 5: DISCONNECT 0x8E; MQTT 3.1.1,
where mosquitto closes the socket without a word: two such closes in a row, each right after
connecting), counts it (``mqtt_session_takeovers``), logs it rate-limited, and waits longer
each time before it connects again ([mqtt] takeover_backoff_max_s) instead of fighting the
intruder in a tight loop. A broker that ties client ids to credentials
(``use_username_as_clientid``, docs/operating.md) refuses the intruder.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from pyjoynr.admin.exposition import mqtt_metrics
from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import eventually
from pyjoynr.transports.mqtt.client import MqttSessionError, open_session
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url
from tests.support import mqtt_clients
from tests.support.mqtt_cluster import GBID, mqtt_cc_config

# on both MQTT clients (the native one and aiomqtt; tests/support/mqtt_clients.py)
pytestmark = [pytest.mark.network, pytest.mark.usefixtures("mqtt_client")]

WAIT_S = 10.0
#: how long the intruder keeps taking the session back
FIGHT_S = 6.0


def takeovers_metric(cc: ClusterController) -> float:
    assert cc.mqtt is not None
    for family in mqtt_metrics("joynr_cc", cc.mqtt):
        if family.name.endswith("mqtt_session_takeovers"):
            return sum(s.value for s in family.samples
                       if s.name.endswith("_total") and s.labels["gbid"] == GBID)
    raise AssertionError("no mqtt_session_takeovers metric")


async def intrude(url: str, client_id: str, version: str, until: float) -> int:
    """Connect as ``client_id`` again whenever the session is taken back, until loop time
    ``until``; how many times it connected."""
    loop = asyncio.get_running_loop()
    settings = MqttSettings(version=version, session_expiry_s=0, keepalive_s=5,
                            connect_timeout_s=2.0)
    connected = 0
    while loop.time() < until:
        with contextlib.suppress(MqttSessionError, OSError, TimeoutError):
            async with open_session(parse_broker_url(url), settings,
                                    client_id=client_id) as session:
                connected += 1
                async with asyncio.timeout(max(0.01, until - loop.time())):
                    await session.receive(lambda topic, payload: None)
        await asyncio.sleep(0.01)
    return connected


@pytest.mark.parametrize("version", ["5", "3.1.1"])
async def test_a_taken_session_is_noticed_counted_logged_and_not_fought_in_a_tight_loop(
        tmp_path: Path, version: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pyjoynr.transports.mqtt.transport")
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "broker"))
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-taken", {GBID: broker.url}, mqtt__version=version,
            mqtt__takeover_backoff_max_s="2.0")))  # (reconnect_max_s 0.5 in these tests)
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        backend = cc.mqtt.backends[0]
        before = cc.mqtt.connection_count(GBID)
        loop = asyncio.get_running_loop()
        intruder = await intrude(broker.url, backend.client_id, version,
                                 loop.time() + FIGHT_S)
        assert intruder >= 2  # (it got the session, the CC took it back, it came again)
        assert backend.takeovers >= 1
        assert takeovers_metric(cc) == backend.takeovers
        assert cc.mqtt.counters["mqtt-session-taken-over"] == backend.takeovers
        # without the backoff the CC connects again within 0.05-0.5 s every time: dozens of
        # connections in FIGHT_S; with it, waits of 0.5, 1, 2, 2 ... s
        fought = cc.mqtt.connection_count(GBID) - before
        assert fought <= 8, fought
        lines = [r.getMessage() for r in caplog.records
                 if "took the session of client id" in r.getMessage()]
        assert lines and backend.client_id in lines[0]
        assert len(lines) <= 2  # rate-limited (the first line, then a summary)
        # the intruder gone, the CC gets its session back and keeps it
        await eventually(lambda: cc.mqtt is not None and cc.mqtt.connected(GBID), WAIT_S)
    log = broker.log.read_text(errors="replace")
    assert f"Client {backend.client_id} already connected, closing old connection" in log


async def test_a_gcd_notices_its_taken_session(tmp_path: Path) -> None:
    """The GCD keeps no session (another instance may serve its backend) and backs off the
    same way: its default wait grows from 5 s, so one takeover is what this test sees."""
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "broker"))
        gcd = await stack.enter_async_context(GcdService(GcdSettings(
            gbid=GBID, broker_url=broker.url, sqlite_path=tmp_path / "gcd.sqlite",
            mqtt_client=mqtt_clients.current())))
        await gcd.mqtt.wait_connected(WAIT_S)
        backend = gcd.mqtt.backends[0]
        loop = asyncio.get_running_loop()
        await intrude(broker.url, backend.client_id, "5", loop.time() + 3.0)
        assert backend.takeovers >= 1
        assert gcd.mqtt.counters["mqtt-session-taken-over"] == backend.takeovers
        await eventually(lambda: gcd.mqtt.connected(GBID), 3 * WAIT_S)


async def test_a_broker_tying_client_ids_to_credentials_refuses_the_intruder(
        tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(
            tmp_path / "broker", users={"cc-tied": "cc secret", "other": "other secret"},
            clientid_from_username=True))
        url = f"mqtt://cc-tied:cc%20secret@127.0.0.1:{broker.port}"
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-tied", {GBID: url})))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        backend = cc.mqtt.backends[0]
        settings = MqttSettings(session_expiry_s=0, connect_timeout_s=2.0)
        # anonymous, with the CC's client id (and with its user name as the id): refused
        for client_id in (backend.client_id, "cc-tied"):
            with pytest.raises(MqttSessionError, match=r"not authorized|bad user name"):
                async with open_session(parse_broker_url(broker.url), settings,
                                        client_id=client_id):
                    pass
        # another user naming the CC's client id (or its user name) gets its own session
        other = parse_broker_url(f"mqtt://other:other%20secret@127.0.0.1:{broker.port}")
        for client_id in (backend.client_id, "cc-tied"):
            async with open_session(other, settings, client_id=client_id) as session:
                # what it publishes to the CC's topic reaches the CC, on its one connection
                received = backend.received
                await session.publish(f"{cc.mqtt.own_topic}/probe", b"not a frame", 1, 10)
                await eventually(lambda n=received: backend.received > n, WAIT_S)
        assert cc.mqtt.connection_count(GBID) == 1
        assert backend.takeovers == 0
    assert "already connected, closing old connection" not in broker.log.read_text(
        errors="replace")

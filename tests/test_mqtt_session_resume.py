"""MQTT-4.4.0-1: after a reconnect to a broker that kept the session, the QoS 1 publishes that
were not acknowledged go out again with their original packet ids and DUP set (the native
client); with a clean session they are new publishes. Checked in mosquitto's own packet log."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import eventually
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url
from pyjoynr.transports.mqtt.transport import MqttTransport

pytestmark = pytest.mark.network

GBID = "joynrdefaultgbid"
WAIT_S = 15.0
MESSAGES = 3


def publishes(log: Path, client_id: str) -> list[tuple[int, int]]:
    """(dup, packet id) of each PUBLISH mosquitto received from ``client_id``, in order."""
    pattern = re.compile(rf"Received PUBLISH from {re.escape(client_id)} \(d(\d), q1, r\d, "
                         r"m(\d+),")
    return [(int(d), int(m)) for d, m in pattern.findall(log.read_text(errors="replace"))]


@pytest.mark.parametrize("session_expiry_s", [3600, 0])
async def test_unacknowledged_publishes_go_out_again_as_the_session_says(
        tmp_path: Path, session_expiry_s: int) -> None:
    broker = Mosquitto(tmp_path / "broker", persistence=False, log_packets=True)
    await broker.start()
    tasks = TaskSupervisor("test")
    settings = MqttSettings(client="native", keepalive_s=1, session_expiry_s=session_expiry_s,
                            reconnect_initial_s=0.05, reconnect_max_s=0.2,
                            connect_timeout_s=2.0)
    transport = MqttTransport(MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)),
                              settings, brokers={GBID: parse_broker_url(broker.url)},
                              own_topic="joynr/cc/resume", client_id="resume", tasks=tasks)
    client_id = f"resume-{GBID}"
    backend = transport.backends[0]
    stopped = False
    try:
        await transport.start(WAIT_S)
        assert broker.process is not None
        os.kill(broker.process.pid, signal.SIGSTOP)  # it takes nothing in, acknowledges nothing
        stopped = True
        for i in range(MESSAGES):
            assert transport.send(MqttAddress(GBID, "joynr/cc/elsewhere"), Message(
                MessageType.ONE_WAY, "s", f"r{i}", now_ms() + 60_000, b"x"))
        await eventually(lambda: len(backend.inflight) == MESSAGES, WAIT_S, "in flight")
        first_ids = sorted(item.packet_id for item in backend.inflight.values())
        assert all(first_ids)
        # the client gives the silent broker up (keep-alive), then the broker comes back
        await eventually(lambda: not backend.connected.is_set(), WAIT_S, "connection given up")
        os.kill(broker.process.pid, signal.SIGCONT)
        stopped = False
        await eventually(lambda: transport.published == MESSAGES, WAIT_S, "acknowledged")
        assert backend.connections == 2
        sent = publishes(broker.log, client_id)
        again = sent[-MESSAGES:]  # the last ones: on the second connection
        if session_expiry_s:
            assert again == [(1, pid) for pid in first_ids]
        else:
            assert [dup for dup, _ in again] == [0] * MESSAGES
    finally:
        if stopped and broker.process is not None:
            os.kill(broker.process.pid, signal.SIGCONT)
        await transport.stop()
        await tasks.close()
        await broker.stop()

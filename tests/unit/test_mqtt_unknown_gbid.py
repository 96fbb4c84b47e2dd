"""Messages to a GBID without an MQTT backend: each refused by ``send`` and counted; the
warnings about them are rate-limited by the router's bounded limiter, so made-up GBIDs (an
address comes from a peer) leave no state behind in the transport."""

from __future__ import annotations

import logging

import pytest

from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.logs import RepeatedWarnings
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url
from pyjoynr.transports.mqtt.transport import MqttTransport

GBIDS = 5_000


def held(transport: MqttTransport) -> int:
    """The items the transport's own containers hold."""
    return sum(len(value) for value in vars(transport).values()
               if isinstance(value, (set, dict, list)))


async def test_made_up_gbids_are_counted_and_leave_no_state(
        caplog: pytest.LogCaptureFixture) -> None:
    warnings = RepeatedWarnings()
    router = MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER))
    tasks = TaskSupervisor("test")
    transport = MqttTransport(router, MqttSettings(), client_id="cc-test", own_topic="joynr/cc/t",
                              brokers={"known": parse_broker_url("mqtt://127.0.0.1:1")},
                              tasks=tasks, telemetry=Telemetry(warnings=warnings))
    before = held(transport)
    message = Message(MessageType.ONE_WAY, "sender", "recipient", now_ms() + 60_000, b"x")
    with caplog.at_level(logging.WARNING, logger="pyjoynr.transports.mqtt.transport"):
        sent = [transport.send(MqttAddress(f"made-up-{i}", "joynr/cc/x"), message)
                for i in range(GBIDS)]
    assert not any(sent)
    assert transport.counters["unknown-gbid"] == GBIDS
    assert transport.pending() == 0
    limiter = warnings.limiter
    assert len(limiter) <= limiter.max_keys < GBIDS
    lines = [r for r in caplog.records if "no MQTT backend for GBID" in r.getMessage()]
    assert 1 <= len(lines) <= limiter.max_keys
    assert held(transport) <= before + 1  # nothing kept per GBID (one counter name)
    await tasks.close()

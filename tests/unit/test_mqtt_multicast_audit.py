"""A multicast the MQTT transport publishes on its own (a local provider's, to every backend,
outside the router's route()) is recorded in the process's audit by the transport, through
the telemetry it was handed: one ``delivered`` record per backend that took it."""

from __future__ import annotations

from pyjoynr.runtime.addresses import Address
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url
from pyjoynr.transports.mqtt.transport import MqttTransport


class Hook:
    """An audit hook recording what it is told (runtime.telemetry.RoutingAudit)."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, str]] = []

    def delivered(self, message: Message, hop: Address, queued_ms: int) -> None:
        self.records.append((message.id, "delivered", repr(hop)))

    def decided(self, message: Message, outcome: str, hop: Address | None = None,
                reason: str | None = None, peer: str | None = None) -> None:
        self.records.append((message.id, outcome, repr(hop)))


async def test_a_multicast_published_to_the_backends_is_recorded_once_per_backend() -> None:
    hook = Hook()
    telemetry = Telemetry(audit=hook)
    router = MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER), telemetry=telemetry)
    tasks = TaskSupervisor("test")
    # (not started: what is published waits in each backend's queue; nothing connects)
    brokers = {gbid: parse_broker_url("mqtt://127.0.0.1:1") for gbid in ("one", "two")}
    transport = MqttTransport(router, MqttSettings(), client_id="cc-test",
                              own_topic="joynr/cc/t", brokers=brokers, tasks=tasks,
                              telemetry=telemetry)
    message = Message(MessageType.MULTICAST, "provider", "provider/weather",
                      now_ms() + 60_000, b"x")
    transport.publish_multicast(message)
    assert transport.pending() == 2
    assert sorted(hook.records) == sorted(
        (message.id, "delivered", repr(backend.origin)) for backend in transport.backends)
    assert {outcome for _, outcome, _ in hook.records} == {"delivered"}
    await tasks.close()

"""The MQTT transport picks a message's backend by its address's GBID unless the rule handed
in (``backend_of``) names another; the cluster controller's rule sends a call to the GCD to
the backend its header ``gb`` names. The brokers are not connected here, so what is sent waits
in its backend's queue, where the test counts it."""

from __future__ import annotations

from pyjoynr.cluster_controller.gcd_link import gcd_call_backend
from pyjoynr.gcd.interface import GBID_HEADER, GCD_PARTICIPANT_ID
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url
from pyjoynr.transports.mqtt.transport import MqttTransport

G1, G2 = "g1", "g2"
TO_GCD = MqttAddress(G1, "discoverydirectory_channelid")


def call(recipient: str, headers: dict[str, str]) -> Message:
    return Message(MessageType.ONE_WAY, "s", recipient, now_ms() + 60_000, b"x",
                   custom_headers=headers)


def transport(**kwargs: object) -> tuple[MqttTransport, TaskSupervisor]:
    tasks = TaskSupervisor("test")
    mqtt = MqttTransport(MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)),
                         MqttSettings(),
                         brokers={g: parse_broker_url("mqtt://127.0.0.1:1") for g in (G1, G2)},
                         own_topic="joynr/cc/here", client_id="rule", tasks=tasks,
                         **kwargs)  # type: ignore[arg-type]
    return mqtt, tasks


def test_the_cluster_controllers_rule() -> None:
    assert gcd_call_backend(call(GCD_PARTICIPANT_ID, {GBID_HEADER: G2})) == G2
    assert gcd_call_backend(call(GCD_PARTICIPANT_ID, {})) is None
    assert gcd_call_backend(call(GCD_PARTICIPANT_ID, {"other": G2})) is None
    assert gcd_call_backend(call("somebody", {GBID_HEADER: G2})) is None


async def test_the_rule_handed_in_names_the_backend() -> None:
    mqtt, tasks = transport(backend_of=gcd_call_backend)
    assert mqtt.send(TO_GCD, call(GCD_PARTICIPANT_ID, {GBID_HEADER: G2}))
    assert (mqtt.pending(G1), mqtt.pending(G2)) == (0, 1)
    assert mqtt.send(TO_GCD, call(GCD_PARTICIPANT_ID, {}))  # no header: the address's
    assert mqtt.send(MqttAddress(G1, "elsewhere"), call("somebody", {GBID_HEADER: G2}))
    assert (mqtt.pending(G1), mqtt.pending(G2)) == (2, 1)
    assert not mqtt.send(TO_GCD, call(GCD_PARTICIPANT_ID, {GBID_HEADER: "no-such-gbid"}))
    assert mqtt.counters["unknown-gbid"] == 1
    await tasks.close()


async def test_without_a_rule_the_address_decides() -> None:
    """The transport itself knows no participant and no header (the GCD service's own
    transport is built without a rule)."""
    mqtt, tasks = transport()
    assert mqtt.send(TO_GCD, call(GCD_PARTICIPANT_ID, {GBID_HEADER: G2}))
    assert (mqtt.pending(G1), mqtt.pending(G2)) == (1, 0)
    await tasks.close()

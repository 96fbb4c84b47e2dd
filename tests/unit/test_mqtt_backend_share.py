"""An MQTT backend's queue (here: the broker not connected, so everything waits) holds at most
``max_queued_share_per_connection`` of its messages and bytes from one connection: a flood
from one websocket client is refused beyond its share while other senders still get in, and
the share frees as its messages leave."""

from __future__ import annotations

from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url
from pyjoynr.transports.mqtt.transport import MqttTransport

GBID = "g1"
TO = MqttAddress(GBID, "joynr/cc/far")
FLOODER, OTHER = WebSocketClientAddress("flooder"), WebSocketClientAddress("other")


def message(origin: WebSocketClientAddress | None, body: bytes = b"x",
            expiry_ms: int | None = None) -> Message:
    return Message(MessageType.ONE_WAY, "s", "r",
                   now_ms() + 60_000 if expiry_ms is None else expiry_ms, body, origin=origin)


def transport(**settings: object) -> tuple[MqttTransport, TaskSupervisor]:
    tasks = TaskSupervisor("test")
    mqtt = MqttTransport(MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)),
                         MqttSettings(**settings),  # type: ignore[arg-type]
                         brokers={GBID: parse_broker_url("mqtt://127.0.0.1:1")},
                         own_topic="joynr/cc/here", client_id="share", tasks=tasks)
    return mqtt, tasks


async def test_one_connection_takes_its_share_of_messages_and_the_others_still_get_in() -> None:
    mqtt, tasks = transport(max_queued_per_backend=10, max_queued_share_per_connection=0.5)
    backend = mqtt.backends[0]
    assert [mqtt.send(TO, message(FLOODER)) for _ in range(8)] == [True] * 5 + [False] * 3
    assert mqtt.counters["queue-share-used"] == 3 and backend.share_refusals == 3
    assert all(mqtt.send(TO, message(OTHER)) for _ in range(5))  # its own share
    assert not mqtt.send(TO, message(None))  # (the whole queue is full now)
    assert backend.by_origin == {FLOODER: [5, 5 * backend.queue[0].size],
                                 OTHER: [5, 5 * backend.queue[0].size]}
    await tasks.close()


async def test_the_share_in_bytes_and_freed_as_messages_leave() -> None:
    mqtt, tasks = transport(max_queued_bytes_per_backend=100_000,
                            max_queued_share_per_connection=0.5)
    backend = mqtt.backends[0]
    big = b"x" * 20_000
    # the first message of a connection always fits; then 50,000 bytes are its share
    assert mqtt.send(TO, message(FLOODER, big, expiry_ms=now_ms() - 1))
    assert mqtt.send(TO, message(FLOODER, big, expiry_ms=now_ms() - 1))
    assert not mqtt.send(TO, message(FLOODER, big))
    assert mqtt.send(TO, message(OTHER, big))
    backend.drop_expired()  # the flooder's two expired: its share is free again
    assert FLOODER not in backend.by_origin
    assert backend.bytes == backend.queue[0].size
    assert mqtt.send(TO, message(FLOODER, big))
    await tasks.close()


async def test_a_share_of_one_is_no_limit_of_its_own() -> None:
    mqtt, tasks = transport(max_queued_per_backend=10, max_queued_share_per_connection=1.0)
    assert all(mqtt.send(TO, message(FLOODER)) for _ in range(10))
    assert mqtt.counters["queue-share-used"] == 0
    await tasks.close()

"""The MQTT suite runs on both MQTT clients: the project's own ("native", the default) and
aiomqtt. A test file opts in with ``pytestmark = pytest.mark.usefixtures("mqtt_client")``;
its tests then run once per client (ids ``[native]`` / ``[aiomqtt]``), and every cluster
controller made by :func:`pyjoynr.testing.cluster.cc_config` meanwhile uses that client
(``[mqtt] client``), as does a GCD whose settings take :func:`current`.

:class:`RawPeer`: a bare MQTT 5 client on a test's broker, playing another cluster controller
(e.g. one of joynr's, speaking SMRF) by hand."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass

import aiomqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from pyjoynr.testing import cluster
from pyjoynr.transports.mqtt.settings import CLIENTS


def current() -> str:
    """The client the running test uses (the default outside the parameterised files)."""
    return cluster.MQTT_CLIENT or "native"


@pytest.fixture(params=CLIENTS)
def mqtt_client(request: pytest.FixtureRequest) -> Iterator[str]:
    cluster.MQTT_CLIENT = request.param
    try:
        yield request.param
    finally:
        cluster.MQTT_CLIENT = None


# ====================================================================== a peer on the broker


@dataclass(frozen=True)
class Received:
    """One MQTT message a :class:`RawPeer` received."""

    topic: str
    payload: bytes
    qos: int
    #: MQTT 5 user properties, in order, and the message expiry interval (None: none)
    user_properties: list[tuple[str, str]]
    expiry_s: int | None


class RawPeer:
    """A bare MQTT 5 client (aiomqtt) on a broker, playing another cluster controller by hand
    (joynr's, speaking SMRF, or one of this project): it publishes what a test makes and
    receives on its own topic tree (``<topic>/#``, so joynr's ``<topic>/low`` too) and on the
    topics it subscribes to."""

    def __init__(self, client: aiomqtt.Client, topic: str) -> None:
        self.client = client
        self.topic = topic
        self.inbox: asyncio.Queue[Received] = asyncio.Queue()

    @classmethod
    async def open(cls, stack: AsyncExitStack, port: int, *, timeout_s: float = 10.0
                   ) -> RawPeer:
        name = uuid.uuid4().hex[:12]
        client = aiomqtt.Client("127.0.0.1", port, identifier=f"peer-{name}",
                                protocol=aiomqtt.ProtocolVersion.V5, timeout=timeout_s)
        await asyncio.wait_for(stack.enter_async_context(client), timeout_s)
        peer = cls(client, f"peer/{name}")
        await peer.subscribe(f"{peer.topic}/#")
        reader = asyncio.get_running_loop().create_task(peer._read())

        async def stop_reader() -> None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

        stack.push_async_callback(stop_reader)  # before the client disconnects
        return peer

    async def subscribe(self, topic: str) -> None:
        await asyncio.wait_for(self.client.subscribe(topic, qos=1), 10.0)

    async def _read(self) -> None:
        async for message in self.client.messages:
            payload = message.payload
            assert isinstance(payload, bytes), payload
            properties = message.properties
            self.inbox.put_nowait(Received(
                message.topic.value, payload, int(message.qos),
                [(str(k), str(v)) for k, v in getattr(properties, "UserProperty", [])],
                getattr(properties, "MessageExpiryInterval", None)))

    async def publish(self, topic: str, payload: bytes, *,
                      user_properties: list[tuple[str, str]] | None = None) -> None:
        """Publish with QoS 1: returns once the broker has it."""
        properties = None
        if user_properties:
            properties = Properties(PacketTypes.PUBLISH)
            properties.UserProperty = user_properties
        await asyncio.wait_for(self.client.publish(topic, payload, qos=1,
                                                   properties=properties), 10.0)

    async def receive(self, timeout_s: float = 10.0) -> Received:
        return await asyncio.wait_for(self.inbox.get(), timeout_s)

    async def nothing_received(self, wait_s: float = 0.3) -> None:
        try:
            got = await asyncio.wait_for(self.inbox.get(), wait_s)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected message on {got.topic}: {got.payload[:300]!r}")

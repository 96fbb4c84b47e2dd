"""The write coalescer (transports.coalescing) on a real event loop: the first item of a loop
turn goes out at once unless something waits before it, the rest of the turn waits and goes
out together at its end; and the MQTT client that writes through it, over a real TCP
connection: a burst of packets in one write, and the acknowledgements of a read with the
answers its handler published, in one write, acknowledgements first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pyjoynr.transports.coalescing import TurnCoalescer
from pyjoynr.transports.mqtt.mqtt5 import packets as p
from pyjoynr.transports.mqtt.mqtt5.client import MqttClientProtocol, connect

WAIT_S = 10.0


class Writer:
    """The smallest writer: items wait in a list; ``blocked``: it cannot write at once."""

    def __init__(self) -> None:
        self.waiting: list[str] = []
        self.writes: list[list[str]] = []  # what each write wrote
        self.blocked = False
        self.turn = TurnCoalescer(asyncio.get_running_loop(), self.waiting, self.write_waiting)
        self.ends = 0  # times write_waiting ran

    def write(self, item: str) -> None:
        if self.turn.at_once() and not self.blocked:
            self.writes.append([item])
        else:
            self.waiting.append(item)

    def write_waiting(self) -> None:
        self.ends += 1
        self.writes.append(list(self.waiting))
        self.waiting.clear()


async def test_the_first_item_of_a_turn_goes_at_once_and_the_rest_together_at_its_end() -> None:
    writer = Writer()
    writer.write("a")
    assert writer.writes == [["a"]]  # within the call
    writer.write("b")
    writer.write("c")
    assert writer.writes == [["a"]] and writer.turn.scheduled
    await asyncio.sleep(0)  # the turn ends
    assert writer.writes == [["a"], ["b", "c"]] and not writer.turn.scheduled
    writer.write("d")  # a new turn: at once again
    assert writer.writes == [["a"], ["b", "c"], ["d"]]
    await asyncio.sleep(0)
    assert writer.ends == 1  # (a turn whose items all went out has nothing to write at its end)


async def test_the_first_item_of_a_turn_waits_behind_what_waits_already() -> None:
    writer = Writer()
    writer.blocked = True  # (a full write buffer, say)
    writer.write("a")
    assert writer.writes == [] and writer.waiting == ["a"]
    writer.turn.scheduled = False  # (as if the turn had ended and "a" still waited)
    writer.blocked = False
    writer.write("b")  # the turn's first, but "a" waits: it must not overtake it
    assert writer.writes == [] and writer.waiting == ["a", "b"]
    await asyncio.sleep(0)
    assert writer.writes == [["a", "b"]]


async def test_items_kept_waiting_without_asking_go_out_at_the_end_of_the_turn() -> None:
    writer = Writer()
    writer.waiting.append("ack")
    writer.turn.waits()
    writer.write("answer")  # behind the acknowledgement, in the same write
    await asyncio.sleep(0)
    assert writer.writes == [["ack", "answer"]]
    writer.turn.waits()  # nothing waits: nothing is written
    await asyncio.sleep(0)
    assert writer.writes == [["ack", "answer"]]


# ---------------------------------------------------------------------- the MQTT client


class CountingTransport:
    """The connection's transport, counting its writes."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> object:
        return getattr(self._transport, name)


class Broker:
    """A broker on 127.0.0.1 that accepts one client and then sends what a test asks."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.arrived = asyncio.Event()
        self.writer: asyncio.StreamWriter | None = None
        self.connected = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = p.Decoder("server")
        packets: list[p.Packet] = []
        while not packets:
            packets += decoder.feed(await reader.read(65536))
        assert isinstance(packets[0], p.Connect)
        writer.write(p.encode(p.Connack()))
        self.writer = writer
        self.connected.set()
        while data := await reader.read(65536):
            self.received += data
            self.arrived.set()

    async def wait_for(self, count: int) -> list[p.Packet]:
        """The first ``count`` packets the client sent after CONNECT."""
        async with asyncio.timeout(WAIT_S):
            while True:
                packets = p.Decoder("server").feed(bytes(self.received))
                if len(packets) >= count:
                    return packets
                self.arrived.clear()
                await self.arrived.wait()


def described(packet: p.Packet) -> str:
    if isinstance(packet, p.Puback):
        return f"PUBACK {packet.packet_id}"
    assert isinstance(packet, p.Publish)
    return f"PUBLISH {packet.topic}"


@asynccontextmanager
async def client() -> AsyncIterator[tuple[MqttClientProtocol, CountingTransport, Broker]]:
    broker = Broker()
    server = await asyncio.start_server(broker.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    protocol, connack = await connect("127.0.0.1", port, p.Connect("coalescing"),
                                      timeout_s=WAIT_S, max_packet_size=1 << 20)
    assert connack.reason_code == 0 and protocol.transport is not None
    counting = CountingTransport(protocol.transport)
    protocol.transport = counting  # type: ignore[assignment]
    try:
        yield protocol, counting, broker
    finally:
        await protocol.disconnect()
        server.close()
        await server.wait_closed()


async def test_the_mqtt_client_writes_a_turns_first_packet_at_once_and_the_rest_in_one_write(
) -> None:
    async with client() as (protocol, counting, broker):
        for i in range(4):
            protocol.start_publish(f"t/{i}", b"x", 0, None)
            if i == 0:
                assert len(counting.writes) == 1  # at once, within the call
        assert len(counting.writes) == 1
        await asyncio.sleep(0)  # the turn ends
        assert len(counting.writes) == 2  # ... and the other three went out together
        packets = await broker.wait_for(4)
        assert [described(packet) for packet in packets] == [f"PUBLISH t/{i}"
                                                             for i in range(4)]


async def test_the_acknowledgements_of_a_read_go_out_with_the_answers_it_made() -> None:
    async with client() as (protocol, counting, broker):

        def answer(topic: str, payload: bytes) -> None:
            protocol.start_publish(f"answer/{topic}", payload, 0, None)

        protocol.handler = answer
        await broker.connected.wait()
        assert broker.writer is not None
        broker.writer.write(p.encode(p.Publish("q/1", b"1", 1, 7))
                            + p.encode(p.Publish("q/2", b"2", 1, 8)))
        packets = await broker.wait_for(4)
        # each answer behind the acknowledgement of its request (which waited before it), all
        # four in one write
        assert [described(packet) for packet in packets] == [
            "PUBACK 7", "PUBLISH answer/q/1", "PUBACK 8", "PUBLISH answer/q/2"]
        assert len(counting.writes) == 1

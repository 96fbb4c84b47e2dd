"""The message router with real in-process participants: queues, expiry, errors, multicast."""

from __future__ import annotations

import asyncio

import pytest

from runtime.addresses import Address, InProcessAddress, MqttAddress, WebSocketClientAddress
from runtime.clock import now_ms
from runtime.errors import MessageNotSentError, error_from_wire
from runtime.messages import Message, MessageType
from runtime.payloads import (
    MulticastPublication,
    OneWayRequest,
    Reply,
    Request,
    SubscriptionReply,
    SubscriptionRequest,
    decode_payload,
)
from runtime.router import MessageRouter, RouterSettings
from runtime.routing import PutResult, RoutingTable, RuntimeKind
from tests.support.cluster import eventually
from transports.inprocess import InProcessTransport


class Inbox:
    """An in-process participant that keeps what it receives."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.address = InProcessAddress(self)

    def receive(self, message: Message) -> None:
        self.messages.append(message)


class Gate:
    """A transport that refuses until opened (a connection that is down)."""

    def __init__(self, inbox: Inbox) -> None:
        self.open = False
        self.inbox = inbox
        self.refused = 0

    def send(self, address: Address, message: Message) -> bool:
        if not self.open:
            self.refused += 1
            return False
        self.inbox.receive(message)
        return True


def router(**settings: object) -> MessageRouter:
    r = MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER),
                      RouterSettings(**settings))  # type: ignore[arg-type]
    r.register_transport(InProcessAddress, InProcessTransport())
    return r


def request(sender: str, recipient: str, ttl_ms: int = 5_000, rid: str = "r1") -> Message:
    return Message(MessageType.REQUEST, sender, recipient, now_ms() + ttl_ms,
                   Request(rid, "m").to_body())


def one_way(sender: str, recipient: str, ttl_ms: int = 5_000) -> Message:
    return Message(MessageType.ONE_WAY, sender, recipient, now_ms() + ttl_ms,
                   OneWayRequest("m").to_body())


async def test_unknown_recipient_is_queued_and_flushed_in_order_when_the_route_appears():
    r = router()
    target = Inbox()
    for i in range(3):
        r.route(Message(MessageType.ONE_WAY, "a", "late", now_ms() + 5_000,
                        OneWayRequest(f"m{i}").to_body()))
    assert r.queued("late") == 3
    assert r.add_route("late", target.address, is_globally_visible=False) is PutResult.CREATED
    await eventually(lambda: len(target.messages) == 3)
    assert [decode_payload(OneWayRequest, m.body).method_name for m in target.messages] == [
        "m0", "m1", "m2"]
    assert r.queued() == 0


async def test_expired_message_is_dropped_on_arrival_and_counted(caplog):
    r = router()
    target = Inbox()
    r.add_route("t", target.address, is_globally_visible=False)
    r.route(Message(MessageType.ONE_WAY, "a", "t", now_ms() - 1, b""))
    await asyncio.sleep(0.01)
    assert target.messages == []
    assert r.counters["dropped-expired"] == 1
    assert "expired" in caplog.text


async def test_full_queue_answers_requests_with_message_not_sent():
    r = router(max_queued_per_recipient=2, max_queued_total=3)
    caller = Inbox()
    r.add_route("caller", caller.address, is_globally_visible=False)
    for i in range(3):
        r.route(request("caller", "nobody", rid=f"r{i}"))
    assert r.queued("nobody") == 2
    await eventually(lambda: len(caller.messages) == 1)
    answer = caller.messages[0]
    assert answer.type is MessageType.REPLY
    assert answer.sender == "nobody"
    reply = decode_payload(Reply, answer.body)
    assert reply.request_reply_id == "r2"
    error = error_from_wire(reply.error)
    assert isinstance(error, MessageNotSentError)
    assert "queue full" in str(error)
    # the total bound holds across recipients; one-way messages are just dropped
    r.route(one_way("caller", "other"))
    r.route(one_way("caller", "third"))
    assert r.queued() == 3
    assert r.counters["dropped-queue-full"] == 2


async def test_queued_request_expiring_is_answered_and_subscription_requests_too():
    r = router(sweep_interval_s=0.01)
    r.start()
    try:
        caller = Inbox()
        r.add_route("caller", caller.address, is_globally_visible=False)
        r.route(request("caller", "nobody", ttl_ms=50, rid="late"))
        r.route(Message(MessageType.SUBSCRIPTION_REQUEST, "caller", "nobody", now_ms() + 50,
                        SubscriptionRequest("sub-1", "attr").to_body()))
        r.route(one_way("caller", "nobody", ttl_ms=50))
        await eventually(lambda: len(caller.messages) == 2)
        kinds = {m.type for m in caller.messages}
        assert kinds == {MessageType.REPLY, MessageType.SUBSCRIPTION_REPLY}
        sub_reply = next(m for m in caller.messages if m.type is MessageType.SUBSCRIPTION_REPLY)
        assert decode_payload(SubscriptionReply, sub_reply.body).subscription_id == "sub-1"
        # the answer outlives the request a little, so that the caller still sees it
        assert all(m.expiry_date_ms > now_ms() for m in caller.messages)
        assert r.counters["dropped-expired-in-queue"] == 3
        assert r.queued() == 0
    finally:
        await r.stop()


async def test_refused_sends_are_retried_with_backoff_until_delivered():
    r = router(sweep_interval_s=0.01, retry_initial_s=0.02, retry_max_s=0.05)
    inbox = Inbox()
    gate = Gate(inbox)
    r.register_transport(WebSocketClientAddress, gate)
    r.add_route("c", WebSocketClientAddress("client"), is_globally_visible=False)
    r.start()
    try:
        r.route(one_way("x", "c"))
        assert r.queued("c") == 1
        await eventually(lambda: gate.refused >= 3, what="retries")
        gate.open = True
        await eventually(lambda: len(inbox.messages) == 1, what="delivery")
        assert r.queued() == 0
    finally:
        await r.stop()


async def test_address_without_transport_is_dropped_with_an_answer():
    r = router()
    caller = Inbox()
    r.add_route("caller", caller.address, is_globally_visible=False)
    r.add_route("remote", MqttAddress("g", "t"), is_globally_visible=True)
    r.route(request("caller", "remote"))
    await eventually(lambda: len(caller.messages) == 1)
    assert r.counters["dropped-no-transport"] == 1


async def test_multicast_goes_to_each_next_hop_once_and_never_back():
    r = router()
    inbox = Inbox()
    gate = Gate(inbox)
    gate.open = True
    r.register_transport(WebSocketClientAddress, gate)
    local = Inbox()
    r.add_route("local-sub", local.address, is_globally_visible=False)
    for pid in ("a1", "a2"):
        r.add_route(pid, WebSocketClientAddress("client-a"), is_globally_visible=False)
    r.add_route("b1", WebSocketClientAddress("client-b"), is_globally_visible=False)
    for pid in ("local-sub", "a1", "a2", "b1"):
        r.multicast_receivers.add("prov/news/+", pid)
    body = MulticastPublication("prov/news/eu", ["x"]).to_body()

    r.route(Message(MessageType.MULTICAST, "prov", "prov/news/eu", now_ms() + 5_000, body))
    await eventually(lambda: local.messages)
    assert sorted(m.recipient for m in inbox.messages) == ["prov/news/eu", "prov/news/eu"]
    assert len(local.messages) == 1

    # arriving from client-a: not echoed back to it
    inbox.messages.clear()
    local.messages.clear()
    echo = Message(MessageType.MULTICAST, "prov", "prov/news/eu", now_ms() + 5_000, body,
                   origin=WebSocketClientAddress("client-a"))
    r.route(echo)
    await eventually(lambda: local.messages)
    assert len(inbox.messages) == 1  # only client-b


async def test_remove_routes_at_forgets_participants_and_their_receivers():
    r = router()
    client = WebSocketClientAddress("c")
    r.add_route("p1", client, is_globally_visible=False)
    r.add_route("p2", client, is_globally_visible=False)
    r.multicast_receivers.add("prov/b", "p1")
    assert r.remove_routes_at(client) == ["p1", "p2"]
    assert len(r.multicast_receivers) == 0


@pytest.mark.parametrize("kind", [MessageType.REPLY, MessageType.PUBLICATION])
async def test_answers_to_undeliverable_non_requests_are_not_invented(kind):
    r = router(max_queued_per_recipient=0)
    caller = Inbox()
    r.add_route("caller", caller.address, is_globally_visible=False)
    r.route(Message(kind, "caller", "nobody", now_ms() + 5_000, b"\x80"))
    await asyncio.sleep(0.02)
    assert caller.messages == []
    assert r.counters["dropped-queue-full"] == 1


async def test_a_refused_multicast_hop_is_retried_alone_without_duplicates():
    r = router(sweep_interval_s=0.01, retry_initial_s=0.02, retry_max_s=0.05)
    down_inbox = Inbox()
    down = Gate(down_inbox)  # client-b's connection is down for now
    r.register_transport(WebSocketClientAddress, down)
    local = Inbox()
    r.add_route("local-sub", local.address, is_globally_visible=False)
    r.add_route("b1", WebSocketClientAddress("client-b"), is_globally_visible=False)
    for pid in ("local-sub", "b1"):
        r.multicast_receivers.add("prov/news", pid)
    r.start()
    try:
        r.route(Message(MessageType.MULTICAST, "prov", "prov/news", now_ms() + 5_000,
                        MulticastPublication("prov/news", ["x"]).to_body()))
        await eventually(lambda: local.messages and down.refused >= 2, what="retries")
        down.open = True
        await eventually(lambda: down_inbox.messages, what="delivery to the hop that was down")
        await asyncio.sleep(0.1)
        assert len(down_inbox.messages) == 1
        assert len(local.messages) == 1  # the hop that took it at once does not get it again
        assert r.queued() == 0
    finally:
        await r.stop()

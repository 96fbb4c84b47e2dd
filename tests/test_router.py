"""The message router without an event loop: queues, expiry, retries, errors, multicast.

The router is driven here as its driver drives it (``route``, ``sweep``, ``purge``) with a clock
the test sets, and hands messages to recording transports.
"""

from __future__ import annotations

import logging

import pytest

from pyjoynr.runtime.addresses import (
    Address,
    InProcessAddress,
    MqttAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.errors import MessageNotSentError, error_from_wire
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import (
    MulticastPublication,
    OneWayRequest,
    Reply,
    Request,
    SubscriptionReply,
    SubscriptionRequest,
    decode_payload,
)
from pyjoynr.runtime.router import MessageRouter, RouterSettings
from pyjoynr.runtime.routing import PutResult, RoutingTable, RuntimeKind
from pyjoynr.runtime.rules import ReplyRoute
from pyjoynr.runtime.telemetry import Telemetry

T0 = 1_700_000_000_000  # the clock's start: epoch ms


class Clock:
    """The router's clock, set by the test."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


class Recorder:
    """A transport that records what it is handed, and refuses while closed (a connection
    that is down)."""

    def __init__(self, *, open: bool = True) -> None:
        self.open = open
        self.sent: list[tuple[Address, Message]] = []
        self.refused = 0

    def send(self, address: Address, message: Message) -> bool:
        if not self.open:
            self.refused += 1
            return False
        self.sent.append((address, message))
        return True

    def to(self, address: Address) -> list[Message]:
        return [m for a, m in self.sent if a == address]


class Multicasts:
    """A recording link to global multicast."""

    def __init__(self) -> None:
        self.published: list[Message] = []
        self.subscribed: list[tuple[str, str]] = []
        self.unsubscribed: list[tuple[str, str]] = []

    def publish_multicast(self, message: Message) -> None:
        self.published.append(message)

    def subscribe_multicast(self, gbid: str, topic: str) -> None:
        self.subscribed.append((gbid, topic))

    def unsubscribe_multicast(self, gbid: str, topic: str) -> None:
        self.unsubscribed.append((gbid, topic))


class Rig:
    """A cluster controller's (or, with ``parent``, a libjoynr runtime's) router with a
    recording transport for every address type."""

    def __init__(self, parent: Address | None = None, *, with_mqtt: bool = True,
                 **settings: object) -> None:
        self.clock = Clock()
        kind = RuntimeKind.LIBJOYNR if parent is not None else RuntimeKind.CLUSTER_CONTROLLER
        #: the router's counters, limit of repeated warnings and audit hook
        self.telemetry = Telemetry()
        self.router = MessageRouter(RoutingTable(kind),
                                    RouterSettings(**settings),  # type: ignore[arg-type]
                                    parent=parent, clock_ms=self.clock,
                                    telemetry=self.telemetry)
        self.local = Recorder()  # participants in this process
        self.clients = Recorder()  # websocket connections
        self.mqtt = Recorder()
        self.router.register_transport(InProcessAddress, self.local)
        self.router.register_transport(WebSocketClientAddress, self.clients)
        self.router.register_transport(WebSocketAddress, self.clients)
        if with_mqtt:
            self.router.register_transport(MqttAddress, self.mqtt)

    def participant(self, pid: str) -> InProcessAddress:
        address = InProcessAddress(object())
        assert self.router.add_route(pid, address, is_globally_visible=False).accepted
        return address

    def message(self, kind: MessageType, sender: str, recipient: str, *, ttl_ms: int = 5_000,
                body: bytes = b"\x80", origin: Address | None = None) -> Message:
        return Message(kind, sender, recipient, self.clock.now + ttl_ms, body, origin=origin)

    def request(self, sender: str, recipient: str, *, ttl_ms: int = 5_000, rid: str = "r1",
                origin: Address | None = None) -> Message:
        return self.message(MessageType.REQUEST, sender, recipient, ttl_ms=ttl_ms,
                            body=Request(rid, "m").to_body(), origin=origin)

    def one_way(self, sender: str, recipient: str, *, ttl_ms: int = 5_000, method: str = "m",
                origin: Address | None = None) -> Message:
        return self.message(MessageType.ONE_WAY, sender, recipient, ttl_ms=ttl_ms,
                            body=OneWayRequest(method).to_body(), origin=origin)


def not_sent_error(answer: Message) -> MessageNotSentError:
    reply = decode_payload(Reply, answer.body)
    error = error_from_wire(reply.error)
    assert isinstance(error, MessageNotSentError)
    return error


# ====================================================================== queues


def test_unknown_recipient_is_queued_and_flushed_in_order_when_the_route_appears():
    rig = Rig()
    r = rig.router
    for i in range(3):
        assert r.route(rig.one_way("a", "late", method=f"m{i}"))
    assert r.queued("late") == 3
    assert rig.local.sent == []
    target = InProcessAddress(object())
    assert r.add_route("late", target, is_globally_visible=False) is PutResult.CREATED
    assert [decode_payload(OneWayRequest, m.body).method_name
            for m in rig.local.to(target)] == ["m0", "m1", "m2"]
    assert r.queued() == 0


def test_expired_message_is_dropped_on_arrival_and_counted(caplog):
    rig = Rig()
    r = rig.router
    target = rig.participant("t")
    message = rig.one_way("a", "t", ttl_ms=-1)
    assert r.route(message) is False
    assert rig.local.to(target) == []
    assert rig.telemetry.counters["dropped-expired"] == 1
    assert any("dropped" in line and message.id in line and "expired" in line
               for line in caplog.messages)


def test_a_message_expiring_right_now_is_still_routed():
    rig = Rig()
    target = rig.participant("t")
    assert rig.router.route(rig.one_way("a", "t", ttl_ms=0))
    assert len(rig.local.to(target)) == 1


def test_full_queue_answers_requests_with_message_not_sent():
    rig = Rig(max_queued_per_recipient=2, max_queued_total=3)
    r = rig.router
    caller = rig.participant("caller")
    for i in range(3):
        r.route(rig.request("caller", "nobody", rid=f"r{i}"))
    assert r.queued("nobody") == 2
    [answer] = rig.local.to(caller)
    assert answer.type is MessageType.REPLY
    assert answer.sender == "nobody"
    assert decode_payload(Reply, answer.body).request_reply_id == "r2"
    assert "queue full" in str(not_sent_error(answer))
    # the total bound holds across recipients; one-way messages are just dropped
    assert r.route(rig.one_way("caller", "other"))
    assert r.route(rig.one_way("caller", "third")) is False
    assert r.queued() == 3
    assert rig.telemetry.counters["dropped-queue-full"] == 2
    assert len(rig.local.to(caller)) == 1


def test_queued_request_expiring_is_answered_and_subscription_requests_too():
    rig = Rig()
    r = rig.router
    caller = rig.participant("caller")
    r.route(rig.request("caller", "nobody", ttl_ms=50, rid="late"))
    r.route(rig.message(MessageType.SUBSCRIPTION_REQUEST, "caller", "nobody", ttl_ms=50,
                        body=SubscriptionRequest("sub-1", "attr").to_body()))
    r.route(rig.one_way("caller", "nobody", ttl_ms=50))
    r.sweep(T0 + 50)  # expiring now: not yet expired
    assert r.queued() == 3
    rig.clock.now = T0 + 51
    r.sweep()
    answers = rig.local.to(caller)
    assert {m.type for m in answers} == {MessageType.REPLY, MessageType.SUBSCRIPTION_REPLY}
    sub_reply = next(m for m in answers if m.type is MessageType.SUBSCRIPTION_REPLY)
    assert decode_payload(SubscriptionReply, sub_reply.body).subscription_id == "sub-1"
    # the answer outlives the request, so that the caller still sees it
    assert all(m.expiry_date_ms == T0 + 51 + r.settings.error_reply_ttl_ms for m in answers)
    assert rig.telemetry.counters["dropped-expired-in-queue"] == 3
    assert r.queued() == 0


def test_sweep_takes_the_time_it_is_given():
    rig = Rig()
    r = rig.router
    r.route(rig.one_way("a", "nobody", ttl_ms=100))
    r.sweep(T0 + 99)
    assert r.queued() == 1
    r.sweep(T0 + 101)  # the router's own clock still says T0
    assert r.queued() == 0
    assert rig.telemetry.counters["dropped-expired-in-queue"] == 1


def test_refused_sends_are_retried_with_backoff_until_delivered():
    rig = Rig(retry_initial_ms=20, retry_max_ms=50)
    r = rig.router
    gate = Recorder(open=False)
    r.register_transport(WebSocketClientAddress, gate)
    client = WebSocketClientAddress("client")
    r.add_route("c", client, is_globally_visible=False)
    assert r.route(rig.one_way("x", "c"))
    assert (gate.refused, r.queued("c"), rig.telemetry.counters["send-refused"]) == (1, 1, 1)

    # retries at +0, then after 20, 40, 50, 50 ms (the longest wait) of the router's clock
    retried_at = []
    for t in range(0, 211):
        before = gate.refused
        r.sweep(T0 + t)
        if gate.refused > before:
            retried_at.append(t)
    assert retried_at == [0, 20, 60, 110, 160, 210]
    assert r.queued("c") == 1

    gate.open = True
    r.sweep(T0 + 259)
    assert gate.sent == []  # the backoff holds
    r.sweep(T0 + 260)
    assert [a for a, _ in gate.sent] == [client]
    assert r.queued() == 0


def test_transport_ready_retries_at_once():
    rig = Rig()
    r = rig.router
    rig.clients.open = False
    client = WebSocketClientAddress("client")
    r.add_route("c", client, is_globally_visible=False)
    r.route(rig.one_way("x", "c"))
    r.sweep()  # a retry: the next one waits for the backoff
    rig.clients.open = True
    r.transport_ready()
    assert len(rig.clients.to(client)) == 1
    assert r.queued() == 0


def test_address_without_transport_is_dropped_with_an_answer():
    rig = Rig(with_mqtt=False)
    r = rig.router
    caller = rig.participant("caller")
    r.add_route("remote", MqttAddress("g", "t"), is_globally_visible=True)
    assert r.route(rig.request("caller", "remote")) is False
    assert len(rig.local.to(caller)) == 1
    assert rig.telemetry.counters["dropped-no-transport"] == 1


@pytest.mark.parametrize("kind", [MessageType.REPLY, MessageType.PUBLICATION])
def test_answers_to_undeliverable_non_requests_are_not_invented(kind):
    rig = Rig(max_queued_per_recipient=0)
    r = rig.router
    caller = rig.participant("caller")
    assert r.route(rig.message(kind, "caller", "nobody")) is False
    assert rig.local.to(caller) == []
    assert rig.telemetry.counters["dropped-queue-full"] == 1


# ====================================================================== forwarding rules


@pytest.mark.parametrize("kind", [MessageType.REQUEST, MessageType.ONE_WAY, MessageType.REPLY])
def test_a_message_from_mqtt_is_not_relayed_to_mqtt_and_reads_as_dropped(kind, caplog):
    rig = Rig()
    r = rig.router
    caller_cc = MqttAddress("g", "cc/other")
    r.add_route("behind-mqtt", MqttAddress("g", "cc/third"), is_globally_visible=True)
    message = rig.message(kind, "remote-caller", "behind-mqtt", origin=caller_cc)
    assert r.route(message) is False
    assert rig.mqtt.sent == []
    assert rig.telemetry.counters["dropped-refused-relay"] == 1
    assert rig.telemetry.counters["answered-not-sent"] == 0  # no answer goes out for it either
    assert any(message.id in line and "not relayed" in line for line in caplog.messages)
    # made in this process, the same message goes out
    assert r.route(rig.message(kind, "local", "behind-mqtt"))
    assert len(rig.mqtt.sent) == 1


def test_a_queued_message_from_mqtt_is_not_relayed_when_its_route_turns_out_to_be_mqtt():
    rig = Rig()
    r = rig.router
    assert r.route(rig.one_way("remote", "later", origin=MqttAddress("g", "cc/a")))
    assert r.queued("later") == 1
    r.learn_reply_to(ReplyRoute("later", MqttAddress("g", "cc/b"), T0 + 60_000))
    assert rig.mqtt.sent == []
    assert r.queued() == 0
    assert rig.telemetry.counters["dropped-refused-relay"] == 1


def test_libjoynr_drops_and_answers_a_message_from_its_cc_that_has_no_route_here():
    cc = WebSocketAddress("ws", "127.0.0.1", 4242, "/")
    rig = Rig(parent=cc)
    r = rig.router
    request = rig.request("far-caller", "gone", origin=cc)
    assert r.route(request) is False
    assert rig.telemetry.counters["dropped-no-route"] == 1
    # not sent back to the CC as such: the CC gets the error answer for the caller
    [(address, answer)] = rig.clients.sent
    assert address == cc and answer.type is MessageType.REPLY
    assert answer.recipient == "far-caller"
    assert "no route" in str(not_sent_error(answer))
    # what this runtime makes itself goes to the CC
    assert r.route(rig.one_way("local", "anyone"))
    assert rig.clients.sent[-1][0] == cc


def test_multicast_goes_to_each_next_hop_once_and_never_back():
    rig = Rig()
    r = rig.router
    local = rig.participant("local-sub")
    for pid in ("a1", "a2"):
        r.add_route(pid, WebSocketClientAddress("client-a"), is_globally_visible=False)
    r.add_route("b1", WebSocketClientAddress("client-b"), is_globally_visible=False)
    for pid in ("local-sub", "a1", "a2", "b1"):
        r.multicast_receivers.add("prov/news/+", pid)
    body = MulticastPublication("prov/news/eu", ["x"]).to_body()

    assert r.route(rig.message(MessageType.MULTICAST, "prov", "prov/news/eu", body=body))
    assert sorted(a.id for a, _ in rig.clients.sent) == ["client-a", "client-b"]
    assert len(rig.local.to(local)) == 1

    # arriving from client-a: not echoed back to it
    rig.clients.sent.clear()
    rig.local.sent.clear()
    r.route(rig.message(MessageType.MULTICAST, "prov", "prov/news/eu", body=body,
                        origin=WebSocketClientAddress("client-a")))
    assert [a for a, _ in rig.clients.sent] == [WebSocketClientAddress("client-b")]
    assert len(rig.local.to(local)) == 1
    assert rig.telemetry.counters["multicast"] == 2


def test_libjoynr_multicast_goes_to_the_cc_unless_it_came_from_there():
    cc = WebSocketAddress("ws", "127.0.0.1", 4242, "/")
    rig = Rig(parent=cc)
    r = rig.router
    local = rig.participant("local-sub")
    r.multicast_receivers.add("prov/news", "local-sub")
    r.route(rig.message(MessageType.MULTICAST, "prov", "prov/news"))
    assert [a for a, _ in rig.clients.sent] == [cc]
    r.route(rig.message(MessageType.MULTICAST, "prov", "prov/news", origin=cc))
    assert len(rig.clients.sent) == 1
    assert len(rig.local.to(local)) == 2


@pytest.mark.parametrize(("provider", "visible", "origin", "published"), [
    ("local", True, None, True),
    ("client", True, WebSocketClientAddress("c"), True),
    ("local", False, None, False),  # not globally visible
    ("mqtt", True, None, False),  # the provider is behind MQTT itself
    ("local", True, MqttAddress("g", "cc/me"), False),  # it came from MQTT
    ("none", True, None, False),  # the sender is not routed here
])
def test_multicasts_are_published_to_the_backends_by_the_providers_place(
        provider, visible, origin, published):
    rig = Rig()
    r = rig.router
    link = Multicasts()
    r.register_global_multicast(link)
    address = {"local": InProcessAddress(object()), "client": WebSocketClientAddress("c"),
               "mqtt": MqttAddress("g", "cc/other")}.get(provider)
    if address is not None:
        r.add_route("prov", address, is_globally_visible=visible)
    message = rig.message(MessageType.MULTICAST, "prov", "prov/news", origin=origin)
    r.route(message)
    assert link.published == ([message] if published else [])


def test_a_refused_multicast_hop_is_retried_alone_without_duplicates():
    rig = Rig(retry_initial_ms=20, retry_max_ms=50)
    r = rig.router
    down = Recorder(open=False)  # client-b's connection is down for now
    r.register_transport(WebSocketClientAddress, down)
    local = rig.participant("local-sub")
    r.add_route("b1", WebSocketClientAddress("client-b"), is_globally_visible=False)
    for pid in ("local-sub", "b1"):
        r.multicast_receivers.add("prov/news", pid)
    r.route(rig.message(MessageType.MULTICAST, "prov", "prov/news",
                        body=MulticastPublication("prov/news", ["x"]).to_body()))
    r.sweep(T0)
    assert down.refused == 2
    down.open = True
    r.sweep(T0 + 20)
    for t in range(21, 200):
        r.sweep(T0 + t)
    assert len(down.sent) == 1
    assert len(rig.local.to(local)) == 1  # the hop that took it at once does not get it again
    assert r.queued() == 0


# ====================================================================== routes and receivers


def test_remove_routes_at_forgets_participants_and_their_receivers():
    rig = Rig()
    r = rig.router
    client = WebSocketClientAddress("c")
    r.add_route("p1", client, is_globally_visible=False)
    r.add_route("p2", client, is_globally_visible=False)
    r.multicast_receivers.add("prov/b", "p1")
    assert r.remove_routes_at(client) == ["p1", "p2"]
    assert len(r.multicast_receivers) == 0


def test_purge_removes_expired_routes_and_their_receivers_but_not_sticky_ones():
    rig = Rig()
    r = rig.router
    link = Multicasts()
    r.register_global_multicast(link)
    r.add_route("provider", MqttAddress("g", "cc/other"), is_globally_visible=True,
                expiry_date_ms=T0 + 10_000)
    r.add_route("short", WebSocketClientAddress("c"), is_globally_visible=False,
                expiry_date_ms=T0 + 100)
    r.add_route("sticky", MqttAddress("g", "gcd"), is_globally_visible=True,
                expiry_date_ms=T0, is_sticky=True)
    r.add_multicast_receiver("provider/news", "short", "provider")
    assert link.subscribed == [("g", "provider/news")]
    assert r.purge(T0 + 100) == []
    assert r.purge() == []  # the router's clock: T0
    assert r.purge(T0 + 101) == ["short"]
    assert len(r.multicast_receivers) == 0
    assert link.unsubscribed == [("g", "provider/news")]
    assert {pid for pid, _ in r.routing_entries()} == {"provider", "sticky"}
    rig.clock.now = T0 + 10_001
    assert r.purge() == ["provider"]


def test_a_receiver_of_a_provider_behind_mqtt_subscribes_in_its_backend_once():
    rig = Rig()
    r = rig.router
    link = Multicasts()
    r.register_global_multicast(link)
    r.add_route("provider", MqttAddress("g2", "cc/other"), is_globally_visible=True)
    r.add_route("local-provider", InProcessAddress(object()), is_globally_visible=True)
    r.add_multicast_receiver("provider/news", "sub", "provider")
    r.add_multicast_receiver("provider/news", "sub", "provider")
    r.add_multicast_receiver("local-provider/news", "sub", "local-provider")
    assert link.subscribed == [("g2", "provider/news")]
    r.remove_multicast_receiver("provider/news", "sub")
    assert link.unsubscribed == [("g2", "provider/news")]


def test_learned_reply_to_delivers_what_waited_and_does_not_override_local_routes(caplog):
    rig = Rig()
    r = rig.router
    caplog.set_level(logging.DEBUG, logger="pyjoynr.runtime.router")
    r.route(rig.one_way("p", "caller"))
    route = ReplyRoute("caller", MqttAddress("g", "cc/caller"), T0 + 1_000)
    assert r.learn_reply_to(route) is PutResult.CREATED
    assert [a for a, _ in rig.mqtt.sent] == [route.address]
    assert r.route_of("caller").expiry_date_ms == T0 + 1_000
    rig.participant("local")
    assert r.learn_reply_to(ReplyRoute("local", route.address, T0)) is (
        PutResult.REJECTED_PRECEDENCE)
    assert "not learned" in caplog.text

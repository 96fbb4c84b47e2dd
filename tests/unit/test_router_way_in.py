"""The router's way in: ``receive(message, inlet)`` runs admission, replyTo learning, counting,
auditing and rate-limited logging for every kind of connection; ``refuse_frame`` counts and logs
what did not decode. Driven without an event loop, with a clock the test sets; and the check
that no module outside the router reaches into its table, audit hook or limit of warnings."""

from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path

import pytest

from pyjoynr.runtime import rules
from pyjoynr.runtime.addresses import (
    Address,
    InProcessAddress,
    MqttAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.inlets import Inlet, InletKind, SeenMessages
from pyjoynr.runtime.logs import RepeatedWarnings
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.records import DROPPED, REFUSED
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingSettings, RoutingTable, RuntimeKind
from pyjoynr.runtime.telemetry import Telemetry

T0 = 1_700_000_000_000
ROOT = Path(__file__).resolve().parents[2]
CLIENT = WebSocketClientAddress("client-a")
OTHER = WebSocketClientAddress("client-b")
BACKEND = MqttAddress("g1", "joynr/cc/me")
log = logging.getLogger("pyjoynr.test.way_in")


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[Address, Message]] = []

    def send(self, address: Address, message: Message) -> bool:
        self.sent.append((address, message))
        return True


class Hook:
    """An audit hook recording what it is told."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, str | None, str | None]] = []

    def delivered(self, message: Message, hop: Address, queued_ms: int) -> None:
        self.records.append((message.id, "delivered", None, None))

    def decided(self, message: Message, outcome: str, hop: Address | None = None,
                reason: str | None = None, peer: str | None = None) -> None:
        self.records.append((message.id, outcome, reason, peer))


class Rig:
    def __init__(self) -> None:
        self.now = T0
        self.warnings = RepeatedWarnings()
        self.audit = Hook()
        self.telemetry = Telemetry(warnings=self.warnings, audit=self.audit)
        self.router = MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER),
                                    clock_ms=lambda: self.now,
                                    telemetry=self.telemetry)
        self.out = Recorder()
        for kind in (InProcessAddress, WebSocketClientAddress, MqttAddress):
            self.router.register_transport(kind, self.out)
        self.provider = InProcessAddress(object())
        self.router.add_route("provider", self.provider, is_globally_visible=True)
        self.counters: Counter[str] = Counter()

    def client_inlet(self, signature: bytes | None = None) -> Inlet:
        return Inlet(InletKind.CLIENT, CLIENT, "websocket client client-a from 127.0.0.1:1",
                     "client client-a", self.counters, peer="client client-a from 127.0.0.1",
                     signature=signature, log_fields={"clientId": "client-a"}, logger=log)

    def backend_inlet(self, accepted: list[Message] | None = None, window: int = 100
                      ) -> Inlet:
        return Inlet(InletKind.BACKEND, BACKEND, "MQTT backend g1", "backend g1",
                     self.counters, peer="backend g1", gbid="g1", seen=SeenMessages(window),
                     routing=RoutingSettings(reply_to_grace_ms=1_000),
                     accepted=None if accepted is None else accepted.append, logger=log)

    def message(self, mid: str, sender: str = "sender", recipient: str = "provider", *,
                kind: MessageType = MessageType.ONE_WAY, origin: Address | None = CLIENT,
                ttl_ms: int = 60_000, reply_to: Address | None = None,
                signature: bytes | None = None) -> Message:
        return Message(kind, sender, recipient, self.now + ttl_ms, b"x", id=mid, origin=origin,
                       reply_to=reply_to, custom_signature=signature)

    def delivered(self) -> list[str]:
        return [m.id for _, m in self.out.sent]


def test_a_client_speaks_only_for_its_own_participants() -> None:
    rig = Rig()
    inlet = rig.client_inlet()
    rig.router.add_route("mine", CLIENT, is_globally_visible=False)
    rig.router.add_route("theirs", OTHER, is_globally_visible=False)
    assert rig.router.receive(rig.message("ok", "mine"), inlet)
    assert rig.router.receive(rig.message("new", "not-yet-routed"), inlet)  # a call: accepted
    assert not rig.router.receive(rig.message("spoofed", "theirs"), inlet)
    assert not rig.router.receive(rig.message("answer", "nobody", kind=MessageType.REPLY),
                                  inlet)
    assert rig.delivered() == ["ok", "new"]
    assert rig.counters == {rules.SPOOFED_SENDER: 1, rules.UNROUTED_SENDER: 1}
    assert ("spoofed", REFUSED, rules.SPOOFED_SENDER, "client client-a from 127.0.0.1") in (
        rig.audit.records)
    assert not rig.telemetry.counters["dropped-spoofed-sender"]  # counted where it arrived


def test_a_signed_connection_takes_only_messages_signed_with_its_owner_id() -> None:
    rig = Rig()
    inlet = rig.client_inlet(signature=b"alice")
    assert rig.router.receive(rig.message("signed", signature=b"alice"), inlet)
    assert not rig.router.receive(rig.message("unsigned"), inlet)
    assert not rig.router.receive(rig.message("other", signature=b"bob"), inlet)
    assert rig.delivered() == ["signed"]
    assert rig.counters == {rules.BAD_OWNER: 2}


def test_refusals_are_logged_rate_limited_with_the_inlets_name_and_fields(caplog) -> None:
    rig = Rig()
    inlet = rig.client_inlet()
    rig.router.add_route("theirs", OTHER, is_globally_visible=False)
    with caplog.at_level(logging.WARNING, logger=log.name):
        for i in range(50):
            rig.router.receive(rig.message(f"s{i}", "theirs"), inlet)
    assert rig.counters[rules.SPOOFED_SENDER] == 50
    lines = [r for r in caplog.records if r.name == log.name]
    assert len(lines) == 1  # the first in full; the rest counted
    text = lines[0].getMessage()
    assert text.startswith("websocket client client-a from 127.0.0.1:1: refused "
                           "(spoofed-sender): ONE_WAY s0")
    assert lines[0].clientId == "client-a"
    assert lines[0].messageId == "s0"
    assert rig.warnings.suppressed == 49


def test_from_a_backend_duplicates_expired_messages_and_relays_are_refused() -> None:
    rig = Rig()
    inlet = rig.backend_inlet()
    rig.router.add_route("behind-mqtt", MqttAddress("g2", "joynr/cc/other"),
                         is_globally_visible=True)
    first = rig.message("m1", origin=BACKEND)
    assert rig.router.receive(first, inlet)
    assert not rig.router.receive(rig.message("m1", origin=BACKEND), inlet)  # again
    assert not rig.router.receive(rig.message("old", origin=BACKEND, ttl_ms=-1), inlet)
    assert not rig.router.receive(rig.message("relay", recipient="behind-mqtt",
                                              origin=BACKEND), inlet)
    assert rig.delivered() == ["m1"]
    assert rig.counters == {rules.DUPLICATE: 1, rules.EXPIRED: 1, rules.REFUSED_RELAY: 1}
    assert ("m1", DROPPED, rules.DUPLICATE, None) in rig.audit.records
    # a refused message is not remembered: the same id may come again and be accepted
    assert rig.router.receive(rig.message("old", origin=BACKEND), inlet)


def test_a_request_from_a_backend_teaches_its_reply_route_before_it_is_routed() -> None:
    rig = Rig()
    accepted: list[Message] = []
    inlet = rig.backend_inlet(accepted)
    reply_to = MqttAddress("g1", "joynr/cc/caller")
    request = rig.message("rq", "caller", kind=MessageType.REQUEST, origin=BACKEND,
                          reply_to=reply_to)
    assert rig.router.receive(request, inlet)
    entry = rig.router.route_of("caller")
    assert entry is not None and entry.address == reply_to
    assert entry.expiry_date_ms == request.expiry_date_ms + 1_000  # the inlet's grace
    assert rig.router.routing_counts().learned == 1
    assert accepted == [request]  # told before routing
    no_reply_to = rig.message("rq2", "caller2", kind=MessageType.REQUEST, origin=BACKEND)
    assert not rig.router.receive(no_reply_to, inlet)
    assert rig.counters == {rules.NO_REPLY_TO: 1}
    assert accepted == [request]  # (not told of what was refused)


def test_a_multicast_from_a_backend_comes_only_from_a_provider_behind_mqtt() -> None:
    rig = Rig()
    inlet = rig.backend_inlet()
    rig.router.add_route("remote", MqttAddress("g1", "joynr/cc/other"), is_globally_visible=True)
    rig.router.add_multicast_receiver("remote/news", "provider", "remote")
    rig.router.add_multicast_receiver("provider/news", "provider", "provider")
    ok = rig.message("m-ok", "remote", "remote/news", kind=MessageType.MULTICAST,
                     origin=BACKEND)
    forged = rig.message("m-local", "provider", "provider/news", kind=MessageType.MULTICAST,
                         origin=BACKEND)
    assert rig.router.receive(ok, inlet)
    assert not rig.router.receive(forged, inlet)
    assert rig.delivered() == ["m-ok"]
    assert rig.counters == {rules.FOREIGN_MULTICAST: 1}


def test_what_arrives_from_the_parent_is_routed_as_it_is() -> None:
    rig = Rig()
    parent = Inlet(InletKind.PARENT, BACKEND, "the cluster controller",
                   "the cluster controller", rig.counters, logger=log)
    assert rig.router.receive(rig.message("p1", "anyone", origin=BACKEND), parent)
    assert rig.delivered() == ["p1"]
    assert not rig.counters


def test_a_frame_that_does_not_decode_is_counted_and_logged(caplog) -> None:
    rig = Rig()
    inlet = rig.client_inlet()
    with caplog.at_level(logging.WARNING, logger=log.name):
        rig.router.refuse_frame(inlet, "not-msgpack", "the frame is no msgpack map")
        rig.router.refuse_frame(inlet, "not-msgpack", "the frame is no msgpack map")
    assert rig.counters == {"not-msgpack": 2}
    assert [r.getMessage() for r in caplog.records if r.name == log.name] == [
        "websocket client client-a from 127.0.0.1:1: refused (not-msgpack): the frame is no "
        "msgpack map"]
    assert not rig.audit.records  # no message, no record


def test_the_duplicate_window_is_bounded_and_forgets_expired_ids_first() -> None:
    seen = SeenMessages(10)
    for i in range(10):
        seen.add(f"old-{i}", T0 - 1 if i < 5 else T0 + 60_000, T0)
    assert len(seen) == 10
    seen.add("new", T0 + 60_000, T0)  # full: the five expired ones go
    assert len(seen) == 6 and "new" in seen and "old-0" not in seen and "old-9" in seen
    for i in range(20):
        seen.add(f"more-{i}", T0 + 60_000, T0)
        assert len(seen) <= 10
    with pytest.raises(ValueError, match="duplicate window"):
        SeenMessages(0)


def test_no_module_outside_the_router_reaches_into_its_table_audit_or_warnings() -> None:
    """The router's table, audit hook and limit of warnings are its own: no other module of
    the package names them (they are private; this catches a reach-around by name)."""
    reach = re.compile(r"\b_?router\w*\.(_?table|_?audit|_?warnings|_?limiter)\b|"
                       r"\.router\.(_\w+)")
    offenders = []
    for path in sorted((ROOT / "pyjoynr").rglob("*.py")):
        if path.name == "router.py" and path.parent.name == "runtime":
            continue
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            if reach.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []

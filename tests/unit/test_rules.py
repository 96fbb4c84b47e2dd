"""The admission and forwarding rules (runtime.rules), as data: one table per rule.

Each table lists its cases literally (inputs and the expected outcome: ``None`` or the reason
code); the expectations are written here, not derived from the implementation.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass

import pytest

from runtime import rules
from runtime.addresses import (
    Address,
    InProcessAddress,
    MqttAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from runtime.messages import REQUEST_TYPES, Message, MessageType
from runtime.routing import NO_EXPIRY_MS, PutResult, RoutingEntry
from runtime.rules import (
    BAD_REPLY_TO,
    EXPIRED,
    EXPIRED_IN_QUEUE,
    FOREIGN_NEXT_HOP,
    NO_REPLY_TO,
    NO_ROUTE,
    NOT_A_CLIENT_ADDRESS,
    NOT_OWNER,
    QUEUE_FULL,
    REFUSED_RELAY,
    REMOTE_CALLER,
    REPLY_TO_NOT_LEARNED,
    SPOOFED_SENDER,
    Notice,
    Refusal,
    ReplyRoute,
)

NOW = 1_700_000_000_000
GBID = "joynrdefaultgbid"

SKELETON = object()
LOCAL = InProcessAddress(SKELETON)
CLIENT_A = WebSocketClientAddress("client-a")
CLIENT_B = WebSocketClientAddress("client-b")
CC_WS = WebSocketAddress("ws", "127.0.0.1", 4242, "/")
OTHER_WS = WebSocketAddress("ws", "127.0.0.1", 4343, "/")
ME = MqttAddress(GBID, "cc/me")  # this CC's global address
PEER = MqttAddress(GBID, "cc/peer")  # another CC
PEER_OTHER_GBID = MqttAddress("gbid2", "cc/peer")

ADDRESSES: dict[str, Address] = {
    "local": LOCAL, "client-a": CLIENT_A, "client-b": CLIENT_B, "cc-ws": CC_WS,
    "other-ws": OTHER_WS, "me": ME, "peer": PEER, "peer-gbid2": PEER_OTHER_GBID,
}


def entry(address: Address | None, *, visible: bool = False) -> RoutingEntry | None:
    return None if address is None else RoutingEntry(address, visible, NO_EXPIRY_MS, False)


def message(kind: MessageType = MessageType.REQUEST, *, expiry: int = NOW + 1_000,
            reply_to: Address | None = PEER, sender: str = "caller") -> Message:
    return Message(kind, sender, "prov", expiry, reply_to=reply_to)


def reason(outcome: object) -> str | None:
    if outcome is None:
        return None
    assert isinstance(outcome, Refusal | Notice), outcome
    return outcome.reason


# ====================================================================== the module


def test_the_rules_are_pure():
    tree = ast.parse(inspect.getsource(rules))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "collections", "dataclasses", "typing", "runtime"}
    from_runtime = {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        "runtime")}
    assert from_runtime <= {"runtime.addresses", "runtime.messages", "runtime.routing"}


def test_reason_codes_are_distinct_short_counter_keys():
    codes = [EXPIRED, EXPIRED_IN_QUEUE, QUEUE_FULL, SPOOFED_SENDER, REFUSED_RELAY, NO_ROUTE,
             NO_REPLY_TO, BAD_REPLY_TO, REPLY_TO_NOT_LEARNED, REMOTE_CALLER, NOT_OWNER,
             FOREIGN_NEXT_HOP, NOT_A_CLIENT_ADDRESS]
    assert len(set(codes)) == len(codes)
    assert all(code == code.lower() and " " not in code and len(code) <= 32 for code in codes)
    assert set(codes) == {getattr(rules, name) for name in rules.__all__ if name.isupper()}


def test_outcomes_are_immutable_values():
    refusal = Refusal(EXPIRED, "x")
    assert refusal == Refusal(EXPIRED, "x", answer=False)
    with pytest.raises(AttributeError):
        refusal.reason = "other"  # type: ignore[misc]


# ====================================================================== time and queues

EXPIRY_CASES = [
    # expiry, now, outcome
    (NOW + 1, NOW, None),
    (NOW, NOW, None),  # up to and including the expiry date
    (NOW - 1, NOW, EXPIRED),
    (0, NOW, EXPIRED),
    (-(2**63), NOW, EXPIRED),
    (NO_EXPIRY_MS, NOW, None),
]


@pytest.mark.parametrize(("expiry", "now", "expected"), EXPIRY_CASES)
def test_check_expiry(expiry, now, expected):
    outcome = rules.check_expiry(expiry, now)
    assert reason(outcome) == expected
    if outcome is not None:
        assert outcome.detail == f"expired {now - expiry} ms ago"
        assert outcome.answer is False  # the caller's own deadline has passed too


@pytest.mark.parametrize(("expiry", "now", "expected"), EXPIRY_CASES)
def test_check_queued(expiry, now, expected):
    outcome = rules.check_queued(expiry, now)
    assert reason(outcome) == (None if expected is None else EXPIRED_IN_QUEUE)
    if outcome is not None:
        assert outcome.answer is True  # a waiting request's sender is told


@pytest.mark.parametrize(("here", "total", "max_here", "max_total", "expected"), [
    (0, 0, 1, 1, None),
    (0, 0, 0, 10, QUEUE_FULL),  # no queueing at all
    (4, 9, 5, 10, None),  # the last place
    (5, 9, 5, 10, QUEUE_FULL),  # the recipient's queue is full
    (0, 10, 5, 10, QUEUE_FULL),  # all queues together are full
    (5, 10, 5, 10, QUEUE_FULL),
])
def test_admit_to_queue(here, total, max_here, max_total, expected):
    outcome = rules.admit_to_queue(here, total, max_per_recipient=max_here,
                                   max_total=max_total, why="no route yet")
    assert reason(outcome) == expected
    if outcome is not None:
        assert outcome.detail == "queue full (no route yet)"
        assert outcome.answer is True


# ====================================================================== admission


@pytest.mark.parametrize(("sender_at", "origin", "expected"), [
    (None, CLIENT_A, None),  # a sender nobody claimed yet (a proxy before add_next_hop)
    (CLIENT_A, CLIENT_A, None),
    (WebSocketClientAddress("client-a"), CLIENT_A, None),  # equal, not the same object
    (CLIENT_B, CLIENT_A, SPOOFED_SENDER),
    (LOCAL, CLIENT_A, SPOOFED_SENDER),  # a participant of the CC itself
    (PEER, CLIENT_A, SPOOFED_SENDER),  # a participant behind MQTT
])
def test_admit_from_client(sender_at, origin, expected):
    outcome = rules.admit_from_client(entry(sender_at), origin)
    assert reason(outcome) == expected
    if outcome is not None:
        assert outcome.detail == f"the sender is routed to {sender_at!r}"


@dataclass(frozen=True)
class BackendCase:
    kind: MessageType
    recipient_at: Address | None
    expired: bool

    @property
    def id(self) -> str:
        at = next((k for k, a in ADDRESSES.items() if a == self.recipient_at), "unrouted")
        return f"{self.kind.name}-{at}-{'expired' if self.expired else 'fresh'}"


# recipient's place -> outcome for a fresh non-multicast message
BACKEND_BY_PLACE = {None: None, LOCAL: None, CLIENT_A: None, PEER: REFUSED_RELAY,
                    PEER_OTHER_GBID: REFUSED_RELAY}
BACKEND_CASES = [BackendCase(kind, at, expired) for kind in MessageType
                 for at in BACKEND_BY_PLACE for expired in (False, True)]


@pytest.mark.parametrize("case", BACKEND_CASES, ids=lambda c: c.id)
def test_admit_from_backend(case: BackendCase):
    m = message(case.kind, expiry=NOW - 1 if case.expired else NOW)
    outcome = rules.admit_from_backend(m, entry(case.recipient_at), NOW)
    if case.expired:
        expected = EXPIRED  # checked first: nothing else is looked at
    elif case.kind is MessageType.MULTICAST:
        expected = None  # a multicast id names no participant; receivers are local
    else:
        expected = BACKEND_BY_PLACE[case.recipient_at]
    assert reason(outcome) == expected
    if expected == REFUSED_RELAY:
        assert "not relayed" in outcome.detail and repr(case.recipient_at) in outcome.detail
        assert outcome.answer is False


@pytest.mark.parametrize(("origin", "serves_remote", "expected"), [
    (None, False, None),  # this process
    (LOCAL, False, None),
    (CLIENT_A, False, None),
    (CC_WS, False, None),  # (a libjoynr runtime's provider called through its CC)
    (PEER, False, REMOTE_CALLER),
    (ME, False, REMOTE_CALLER),
    (None, True, None),
    (CLIENT_A, True, None),
    (PEER, True, None),  # application providers serve callers of other CCs
])
def test_admit_caller(origin, serves_remote, expected):
    outcome = rules.admit_caller(origin, serves_remote)
    assert reason(outcome) == expected
    if outcome is not None:
        assert outcome.detail == "serves local participants only"


# ====================================================================== identity


@pytest.mark.parametrize(("caller", "participant_at", "expected"), [
    (None, None, None),  # this process may act for anyone
    (None, CLIENT_B, None),
    (CLIENT_A, CLIENT_A, None),
    (CLIENT_A, WebSocketClientAddress("client-a"), None),
    (CLIENT_A, None, NOT_OWNER),  # not routed anywhere: not the caller's
    (CLIENT_A, CLIENT_B, NOT_OWNER),
    (CLIENT_A, LOCAL, NOT_OWNER),
    (CLIENT_A, PEER, NOT_OWNER),
    (PEER, PEER, None),  # (callers over MQTT are refused before: admit_caller)
])
def test_check_owner(caller, participant_at, expected):
    outcome = rules.check_owner(caller, entry(participant_at))
    assert reason(outcome) == expected
    if outcome is not None:
        assert "not routed to the caller" in outcome.detail


@pytest.mark.parametrize(("address", "caller", "expected"), [
    (CLIENT_A, None, None),  # this process registers a client's participant
    (CLIENT_B, None, None),
    (LOCAL, None, NOT_A_CLIENT_ADDRESS),
    (PEER, None, NOT_A_CLIENT_ADDRESS),
    (CC_WS, None, NOT_A_CLIENT_ADDRESS),
    (CLIENT_A, CLIENT_A, None),  # a client, for its own connection
    (WebSocketClientAddress("client-a"), CLIENT_A, None),
    (CLIENT_B, CLIENT_A, FOREIGN_NEXT_HOP),
    (PEER, CLIENT_A, FOREIGN_NEXT_HOP),
    (CC_WS, CLIENT_A, FOREIGN_NEXT_HOP),
    (ME, CLIENT_A, FOREIGN_NEXT_HOP),
])
def test_check_next_hop(address, caller, expected):
    outcome = rules.check_next_hop(address, caller)
    assert reason(outcome) == expected
    if expected == FOREIGN_NEXT_HOP:
        assert outcome.detail == f"{address!r} is not the caller's own address {caller!r}"
    if expected == NOT_A_CLIENT_ADDRESS:
        assert outcome.detail == "only WebSocketClientAddresses are accepted"


# ====================================================================== replyTo

GRACE = 30_000
MAX_TTL = 86_400_000


@pytest.mark.parametrize("kind", [k for k in MessageType if k not in REQUEST_TYPES])
def test_reply_route_learns_nothing_from_what_is_not_a_request(kind):
    for reply_to in (None, PEER, CLIENT_A):
        assert rules.reply_route(message(kind, reply_to=reply_to), gbid=GBID, now_ms=NOW,
                                 grace_ms=GRACE, max_ttl_ms=MAX_TTL) is None


@pytest.mark.parametrize("kind", sorted(REQUEST_TYPES, key=lambda k: k.name))
@pytest.mark.parametrize(("reply_to", "gbid", "expected"), [
    (PEER, GBID, ReplyRoute("caller", PEER, NOW + 1_000 + GRACE)),
    # the backend it arrived from, whatever the replyTo says
    (PEER, "gbid2", ReplyRoute("caller", PEER_OTHER_GBID, NOW + 1_000 + GRACE)),
    (MqttAddress("whatever", "cc/peer"), GBID, ReplyRoute("caller", PEER,
                                                          NOW + 1_000 + GRACE)),
    (None, GBID, NO_REPLY_TO),
    (CLIENT_A, GBID, NO_REPLY_TO),
    (CC_WS, GBID, NO_REPLY_TO),
])
def test_reply_route_of_a_request(kind, reply_to, gbid, expected):
    outcome = rules.reply_route(message(kind, reply_to=reply_to), gbid=gbid, now_ms=NOW,
                                grace_ms=GRACE, max_ttl_ms=MAX_TTL)
    if isinstance(expected, ReplyRoute):
        assert outcome == expected
    else:
        assert reason(outcome) == expected
        assert outcome.detail == (f"a request without an MQTT replyTo ({reply_to!r}) cannot "
                                  "be answered")


@pytest.mark.parametrize(("expiry", "max_ttl", "grace", "learned_until"), [
    (NOW + 1_000, MAX_TTL, GRACE, NOW + 1_000 + GRACE),
    (NOW + MAX_TTL, MAX_TTL, GRACE, NOW + MAX_TTL + GRACE),  # just within the maximum
    (NOW + MAX_TTL + 1, MAX_TTL, GRACE, NOW + MAX_TTL + GRACE),  # capped
    (10**15, MAX_TTL, GRACE, NOW + MAX_TTL + GRACE),  # the sender wants years
    (NO_EXPIRY_MS, MAX_TTL, GRACE, NOW + MAX_TTL + GRACE),
    (NO_EXPIRY_MS, NO_EXPIRY_MS, GRACE, NO_EXPIRY_MS),  # no cap: never past "no expiry"
    (NO_EXPIRY_MS - 10, NO_EXPIRY_MS, GRACE, NO_EXPIRY_MS),
    (NOW - 1, MAX_TTL, GRACE, NOW - 1 + GRACE),  # (expired ones are refused before)
    (NOW + 1_000, MAX_TTL, 0, NOW + 1_000),
])
def test_reply_route_expiry(expiry, max_ttl, grace, learned_until):
    outcome = rules.reply_route(message(expiry=expiry), gbid=GBID, now_ms=NOW, grace_ms=grace,
                                max_ttl_ms=max_ttl)
    assert isinstance(outcome, ReplyRoute)
    assert outcome.expiry_date_ms == learned_until


ROUTE = ReplyRoute("caller", PEER, NOW)


@pytest.mark.parametrize(("result", "expected", "kind"), [
    (PutResult.CREATED, None, None),
    (PutResult.MERGED, None, None),
    (PutResult.REPLACED, None, None),
    (PutResult.REJECTED_INVALID, BAD_REPLY_TO, Refusal),  # it names this CC itself
    (PutResult.REJECTED_STICKY, REPLY_TO_NOT_LEARNED, Notice),  # a provisioned route wins
    (PutResult.REJECTED_PRECEDENCE, REPLY_TO_NOT_LEARNED, Notice),  # a local route wins
])
def test_reply_route_learned(result, expected, kind):
    assert set(PutResult) == {PutResult.CREATED, PutResult.MERGED, PutResult.REPLACED,
                              PutResult.REJECTED_INVALID, PutResult.REJECTED_STICKY,
                              PutResult.REJECTED_PRECEDENCE}
    outcome = rules.reply_route_learned(result, ROUTE)
    assert reason(outcome) == expected
    if kind is not None:
        assert type(outcome) is kind
    if expected == BAD_REPLY_TO:
        assert outcome.detail == (f"replyTo {PEER!r} cannot be used (it is this cluster "
                                  "controller's own address)")
    if expected == REPLY_TO_NOT_LEARNED:
        assert outcome.detail == f"replyTo not learned: {result.reason}"


@pytest.mark.parametrize("kind", list(MessageType), ids=lambda k: k.name)
@pytest.mark.parametrize("reply_to", [None, ME, PEER, CLIENT_A, MqttAddress("gbid2", "cc/me")],
                         ids=["none", "me", "peer", "client", "me-other-gbid"])
def test_outgoing_reply_to(kind, reply_to):
    outcome = rules.outgoing_reply_to(message(kind, reply_to=reply_to), ME)
    if kind in REQUEST_TYPES and reply_to != ME:
        assert outcome == ME  # answered here, whatever the local sender wrote
    else:
        assert outcome is None  # kept as it is


# ====================================================================== forwarding

# origin, next hop -> outcome, for a cluster controller (no parent)
FORWARD_CC = {
    (None, LOCAL): None, (None, CLIENT_A): None, (None, PEER): None,
    (LOCAL, CLIENT_A): None, (LOCAL, PEER): None,
    (CLIENT_A, LOCAL): None, (CLIENT_A, CLIENT_B): None, (CLIENT_A, CLIENT_A): None,
    (CLIENT_A, PEER): None,
    (PEER, LOCAL): None, (PEER, CLIENT_A): None,
    (PEER, PEER): REFUSED_RELAY,  # back where it came from
    (PEER, MqttAddress(GBID, "cc/third")): REFUSED_RELAY,
    (PEER, PEER_OTHER_GBID): REFUSED_RELAY,  # into another backend
    (ME, PEER): REFUSED_RELAY,
}
# origin, next hop -> outcome, for a libjoynr runtime whose CC is CC_WS
FORWARD_LIBJOYNR = {
    (None, LOCAL): None, (None, CC_WS): None,
    (LOCAL, CC_WS): None,
    (CC_WS, LOCAL): None,
    (CC_WS, CC_WS): NO_ROUTE,  # from the CC, and no route here: it would loop
    (WebSocketAddress("ws", "127.0.0.1", 4242, "/"), CC_WS): NO_ROUTE,  # equal addresses
    (OTHER_WS, CC_WS): None,
    (CC_WS, OTHER_WS): None,
}


@pytest.mark.parametrize(("parent", "origin", "next_hop", "expected"), [
    *[(None, o, h, e) for (o, h), e in FORWARD_CC.items()],
    *[(CC_WS, o, h, e) for (o, h), e in FORWARD_LIBJOYNR.items()],
])
def test_check_forward(parent, origin, next_hop, expected):
    outcome = rules.check_forward(origin, next_hop, parent)
    assert reason(outcome) == expected
    if expected == REFUSED_RELAY:
        assert "not relayed" in outcome.detail and repr(next_hop) in outcome.detail
        assert outcome.answer is False
    if expected == NO_ROUTE:
        assert outcome.detail == "no route for a message from the cluster controller"
        assert outcome.answer is True


@pytest.mark.parametrize(("receivers", "origin", "parent", "hops"), [
    ([], None, None, set()),
    ([LOCAL, CLIENT_A, CLIENT_A, CLIENT_B], None, None, {LOCAL, CLIENT_A, CLIENT_B}),  # once
    ([LOCAL, CLIENT_A, CLIENT_B], CLIENT_A, None, {LOCAL, CLIENT_B}),  # never back
    ([LOCAL, CLIENT_A], PEER, None, {LOCAL, CLIENT_A}),
    ([LOCAL], None, CC_WS, {LOCAL, CC_WS}),  # the CC serves the other runtimes
    ([LOCAL], LOCAL, CC_WS, {CC_WS}),
    ([LOCAL], CC_WS, CC_WS, {LOCAL}),  # not back to the CC it came from
    ([], CC_WS, CC_WS, set()),
    ([CC_WS], CC_WS, CC_WS, set()),
])
def test_multicast_hops(receivers, origin, parent, hops):
    assert rules.multicast_hops(receivers, origin, parent) == hops


@pytest.mark.parametrize(("origin", "provider_at", "visible", "published"), [
    (None, LOCAL, True, True),
    (None, CLIENT_A, True, True),
    (CLIENT_A, CLIENT_A, True, True),
    (LOCAL, LOCAL, True, True),
    (None, LOCAL, False, False),  # not globally visible
    (None, CLIENT_A, False, False),
    (None, PEER, True, False),  # the provider is behind MQTT: its own CC publishes
    (PEER, LOCAL, True, False),  # it came from MQTT: no echo
    (ME, CLIENT_A, True, False),
    (None, None, True, False),  # the sender is not routed here
    (CLIENT_A, None, True, False),
])
def test_publishes_globally(origin, provider_at, visible, published):
    assert rules.publishes_globally(origin, entry(provider_at, visible=visible)) is published


@pytest.mark.parametrize(("provider_at", "gbid"), [
    (None, None),
    (LOCAL, None),
    (CLIENT_A, None),
    (PEER, GBID),
    (PEER_OTHER_GBID, "gbid2"),
])
def test_multicast_backend(provider_at, gbid):
    assert rules.multicast_backend(entry(provider_at, visible=True)) == gbid

"""The admission and forwarding rules (runtime.rules), as data: one table per rule.

Each table lists its cases literally (inputs and the expected outcome: ``None`` or the reason
code); the expectations are written here, not derived from the implementation.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from dataclasses import dataclass

import pytest

from pyjoynr.runtime import rules
from pyjoynr.runtime.addresses import (
    Address,
    InProcessAddress,
    MqttAddress,
    UdsClientAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.messages import REQUEST_TYPES, Message, MessageType
from pyjoynr.runtime.routing import NO_EXPIRY_MS, PutResult, RoutingEntry
from pyjoynr.runtime.rules import (
    BAD_MULTICAST_RECEIVER,
    BAD_OWNER,
    BAD_REPLY_TO,
    CLAIMED_FROM_DEAD,
    DUPLICATE,
    EXPIRED,
    EXPIRED_IN_QUEUE,
    FOREIGN_MULTICAST,
    FOREIGN_NEXT_HOP,
    FORGED_MULTICAST,
    NO_REPLY_TO,
    NO_ROUTE,
    NOT_A_CLIENT_ADDRESS,
    NOT_OWNER,
    PARTICIPANT_IN_USE,
    QUEUE_FULL,
    QUEUE_SHARE_USED,
    QUEUE_WAIT_EXCEEDED,
    REFUSED_RELAY,
    REMOTE_CALLER,
    REPLY_TO_NOT_LEARNED,
    SPOOFED_SENDER,
    UNROUTED_SENDER,
    VANISHED_PROVIDER_KEPT,
    Notice,
    Queued,
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
    assert imported <= {"__future__", "collections", "dataclasses", "typing", "pyjoynr"}
    from_runtime = {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        "pyjoynr.")}
    # (multicast ids are parsed by runtime.multicast, pure as well)
    assert from_runtime <= {"pyjoynr.runtime.addresses", "pyjoynr.runtime.messages",
                            "pyjoynr.runtime.multicast", "pyjoynr.runtime.routing"}


def test_reason_codes_are_distinct_short_counter_keys():
    codes = [EXPIRED, EXPIRED_IN_QUEUE, QUEUE_FULL, QUEUE_SHARE_USED, QUEUE_WAIT_EXCEEDED,
             SPOOFED_SENDER, REFUSED_RELAY, NO_ROUTE,
             NO_REPLY_TO, BAD_REPLY_TO, REPLY_TO_NOT_LEARNED, REMOTE_CALLER, NOT_OWNER,
             FOREIGN_NEXT_HOP, NOT_A_CLIENT_ADDRESS, UNROUTED_SENDER, FORGED_MULTICAST,
             FOREIGN_MULTICAST, PARTICIPANT_IN_USE, CLAIMED_FROM_DEAD, VANISHED_PROVIDER_KEPT,
             BAD_MULTICAST_RECEIVER, BAD_OWNER, DUPLICATE]
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


@pytest.mark.parametrize(("expiry", "queued_at", "now", "max_wait", "expected"), [
    # the sender's expiry ends the wait ...
    (NOW - 1, NOW - 10, NOW, 60_000, EXPIRED_IN_QUEUE),
    (NOW, NOW - 10, NOW, 60_000, None),
    # ... and so does the longest wait of any message, whatever the expiry
    (NO_EXPIRY_MS, NOW - 60_000, NOW, 60_000, None),  # up to and including the longest wait
    (NO_EXPIRY_MS, NOW - 60_001, NOW, 60_000, QUEUE_WAIT_EXCEEDED),
    (NOW + 10**12, NOW - 60_001, NOW, 60_000, QUEUE_WAIT_EXCEEDED),  # 10^12 ms: 31 years
    (NOW + 1_000, NOW - 60_001, NOW, 60_000, QUEUE_WAIT_EXCEEDED),
    (NOW - 1, NOW - 60_001, NOW, 60_000, EXPIRED_IN_QUEUE),  # expired first: says so
    (NOW + 1_000, NOW, NOW, 1, None),
])
def test_check_queued_caps_the_wait(expiry, queued_at, now, max_wait, expected):
    outcome = rules.check_queued(expiry, now, queued_at_ms=queued_at, max_wait_ms=max_wait)
    assert reason(outcome) == expected
    if outcome is not None:
        assert outcome.answer is True
    if expected == QUEUE_WAIT_EXCEEDED:
        assert outcome.detail == (f"waited {now - queued_at} ms for a route or a connection, "
                                  f"longer than a queue keeps any message ({max_wait} ms)")


#: 5 messages / 1000 bytes per recipient, 10 messages / 2000 bytes in all, half of it per
#: sending connection
@dataclass(frozen=True)
class RouterLimits:
    """The router's queue limits, as its settings name them (runtime.router.RouterSettings)."""

    per_recipient: int
    total: int
    bytes_per_recipient: int
    bytes_total: int
    origin_share: float = 1.0

    def origin_limits(self) -> Queued:
        return rules.origin_share_of(self.total, self.bytes_total, self.origin_share)


def admit_to_router_queue(size: int, recipient: Queued, total: Queued, origin: Queued | None,
                          limits: RouterLimits, *, why: str) -> rules.Refusal | None:
    """The rule asked as the router's queues ask it (runtime.queues over one shared budget
    with a share per connection)."""
    return rules.queue_admission(
        size, recipient, Queued(limits.per_recipient, limits.bytes_per_recipient), why=why,
        total=total, total_limits=Queued(limits.total, limits.bytes_total), origin=origin,
        share=None if origin is None else limits.origin_limits())


LIMITS = RouterLimits(per_recipient=5, total=10, bytes_per_recipient=1000, bytes_total=2000,
                      origin_share=0.5)


@pytest.mark.parametrize(("size", "queued", "limits", "expected"), [
    # size, ((messages, bytes) of: the recipient's queue, all queues, the sender's connection)
    (100, ((0, 0), (0, 0), (0, 0)), LIMITS, None),
    (100, ((0, 0), (0, 0), None), LIMITS, None),  # made in this process: no share of its own
    (100, ((4, 400), (9, 900), (4, 400)), LIMITS, None),  # the last place
    # counted in messages
    (100, ((5, 500), (5, 500), (0, 0)), LIMITS, QUEUE_FULL),  # the recipient's queue is full
    (100, ((0, 0), (10, 1000), (0, 0)), LIMITS, QUEUE_FULL),  # all queues are full
    (100, ((0, 0), (9, 900), (5, 500)), LIMITS, QUEUE_SHARE_USED),  # the sender's share is used
    (100, ((0, 0), (9, 900), None), LIMITS, None),  # ... which this process has not
    # counted in bytes
    (101, ((1, 900), (1, 900), (1, 900)), LIMITS, QUEUE_FULL),  # over the recipient's bytes
    (100, ((1, 900), (1, 900), (0, 0)), LIMITS, None),  # exactly the recipient's bytes
    (1500, ((0, 0), (0, 0), (0, 0)), LIMITS, None),  # more than a share, alone in its share
    (1500, ((0, 0), (1, 100), (1, 100)), LIMITS, QUEUE_SHARE_USED),  # ... but not beside another
    (1500, ((0, 0), (1, 100), None), LIMITS, None),  # this process has no share of its own
    (2001, ((0, 0), (0, 0), None), LIMITS, QUEUE_FULL),  # more than all queues may hold
    (101, ((0, 0), (1, 1900), None), LIMITS, QUEUE_FULL),  # over the bytes of all queues
    (101, ((0, 0), (1, 1000), (1, 900)), LIMITS, QUEUE_SHARE_USED),  # over the sender's bytes
    (100, ((0, 0), (1, 1000), (1, 900)), LIMITS, None),  # exactly the sender's bytes
    # no share of its own: a connection may take everything
    (100, ((0, 0), (9, 900), (9, 900)), dataclasses.replace(LIMITS, origin_share=1.0), None),
    # a tiny share is still one message
    (100, ((0, 0), (0, 0), (0, 0)), dataclasses.replace(LIMITS, origin_share=0.01), None),
    (100, ((0, 0), (1, 100), (1, 100)), dataclasses.replace(LIMITS, origin_share=0.01),
     QUEUE_SHARE_USED),
    # no queueing at all
    (1, ((0, 0), (0, 0), (0, 0)), dataclasses.replace(LIMITS, per_recipient=0), QUEUE_FULL),
    (1, ((0, 0), (0, 0), (0, 0)), dataclasses.replace(LIMITS, total=0), QUEUE_FULL),
])
def test_admission_to_the_routers_queues(size, queued, limits, expected):
    here, total, origin = queued
    outcome = admit_to_router_queue(size, Queued(*here), Queued(*total),
                                    None if origin is None else Queued(*origin), limits,
                                    why="no route yet")
    assert reason(outcome) == expected
    if outcome is not None:
        assert outcome.answer is True  # a waiting request's sender is told
        assert "(no route yet)" in outcome.detail
    if expected == QUEUE_SHARE_USED:
        assert outcome.detail.startswith("queue full for its connection (no route yet): its "
                                         f"messages hold {origin[0]} message(s), {origin[1]} "
                                         "bytes of all queues, its share is ")


def test_queue_share_of_a_connection():
    assert LIMITS.origin_limits() == Queued(5, 1000)
    assert dataclasses.replace(LIMITS, origin_share=0.01).origin_limits() == Queued(1, 20)
    assert dataclasses.replace(LIMITS, origin_share=1.0).origin_limits() == Queued(10, 2000)
    assert rules.origin_share_of(10, 2000, 0.5) == LIMITS.origin_limits()


@pytest.mark.parametrize(("origin", "size", "expected"), [
    (Queued(0, 0), 5000, False),     # holding nothing: one message of any size
    (Queued(4, 500), 500, False),    # up to the share exactly
    (Queued(4, 500), 501, True),     # one byte beyond
    (Queued(5, 10), 1, True),        # as many messages as the share
    (Queued(1, 1000), 1, True),      # the bytes are taken already
])
def test_the_one_rule_of_a_connections_share(origin, size, expected):
    """The router's queues and an MQTT backend's queue ask this one rule."""
    assert rules.exceeds_share(origin, size, Queued(5, 1000)) is expected
    refusal = admit_to_router_queue(size, Queued(0, 0), Queued(0, 0), origin, LIMITS, why="w")
    assert (refusal is not None and refusal.reason == QUEUE_SHARE_USED) is expected


# ====================================================================== admission


@pytest.mark.parametrize(("sender_at", "origin", "expected"), [
    (CLIENT_A, CLIENT_A, None),
    (WebSocketClientAddress("client-a"), CLIENT_A, None),  # equal, not the same object
    (CLIENT_B, CLIENT_A, SPOOFED_SENDER),
    (LOCAL, CLIENT_A, SPOOFED_SENDER),  # a participant of the CC itself
    (PEER, CLIENT_A, SPOOFED_SENDER),  # a participant behind MQTT
])
def test_admit_from_client_by_the_senders_route(sender_at, origin, expected):
    # a request: the sender's route alone decides
    outcome = rules.admit_from_client(message(), entry(sender_at), origin)
    assert reason(outcome) == expected
    if outcome is not None:
        assert outcome.detail == f"the sender is routed to {sender_at!r}"


#: message type -> accepted with a sender that has no route at all?
UNROUTED_ACCEPTED = {
    # what a participant sends as a caller: the Routing proxy's first call registers itself
    MessageType.REQUEST: True,
    MessageType.ONE_WAY: True,
    MessageType.SUBSCRIPTION_REQUEST: True,
    MessageType.BROADCAST_SUBSCRIPTION_REQUEST: True,
    MessageType.MULTICAST_SUBSCRIPTION_REQUEST: True,
    MessageType.SUBSCRIPTION_STOP: True,
    # what a provider sends: it was registered before anything reached it
    MessageType.REPLY: False,
    MessageType.SUBSCRIPTION_REPLY: False,
    MessageType.PUBLICATION: False,
    MessageType.MULTICAST: False,
}


@pytest.mark.parametrize("kind", list(MessageType), ids=lambda k: k.name)
def test_admit_from_client_unrouted_sender_by_message_type(kind):
    assert set(UNROUTED_ACCEPTED) == set(MessageType)
    recipient = "prov/new_station" if kind is MessageType.MULTICAST else "prov"
    m = Message(kind, "prov", recipient, NOW)
    outcome = rules.admit_from_client(m, None, CLIENT_A)
    assert reason(outcome) == (None if UNROUTED_ACCEPTED[kind] else UNROUTED_SENDER)
    # routed to the connection: every type is accepted; routed elsewhere: none
    assert rules.admit_from_client(m, entry(CLIENT_A), CLIENT_A) is None
    assert reason(rules.admit_from_client(m, entry(CLIENT_B), CLIENT_A)) == SPOOFED_SENDER


@pytest.mark.parametrize(("sender", "multicast_id", "sender_at", "expected"), [
    ("prov", "prov/new_station", CLIENT_A, None),
    ("prov", "prov/new_station/eu/de", CLIENT_A, None),
    ("prov", "prov/new_station", None, UNROUTED_SENDER),  # a provider not registered here
    ("prov", "prov/new_station", CLIENT_B, SPOOFED_SENDER),  # routed to another client
    ("prov", "prov/new_station", LOCAL, SPOOFED_SENDER),
    ("mine", "prov/new_station", CLIENT_A, FORGED_MULTICAST),  # another provider's id
    ("pro", "prov/new_station", CLIENT_A, FORGED_MULTICAST),  # a prefix is not the provider
    ("prov", "prov", CLIENT_A, FORGED_MULTICAST),  # no broadcast name
    ("prov", "provx/new_station", CLIENT_A, FORGED_MULTICAST),
])
def test_admit_from_client_multicast(sender, multicast_id, sender_at, expected):
    m = Message(MessageType.MULTICAST, sender, multicast_id, NOW)
    outcome = rules.admit_from_client(m, entry(sender_at), CLIENT_A)
    assert reason(outcome) == expected
    if expected == FORGED_MULTICAST:
        assert outcome.detail == (f"the sender {sender!r} is not the provider of multicast "
                                  f"{multicast_id!r}")


@pytest.mark.parametrize(("sender", "multicast_id", "expected"), [
    ("prov", "prov/b", None),
    ("prov", "prov/b/p1/p2", None),
    ("other", "prov/b", FORGED_MULTICAST),
    ("prov/b", "prov/b/x", None),  # (multicast ids refuse a '/' in the provider: not built)
    ("", "/b", None),  # (an empty sender is refused when the frame is decoded)
    ("prov", "prov", FORGED_MULTICAST),
    ("prov", "prov-b", FORGED_MULTICAST),
])
def test_check_multicast_sender(sender, multicast_id, expected):
    outcome = rules.check_multicast_sender(Message(MessageType.MULTICAST, sender,
                                                   multicast_id, NOW))
    assert reason(outcome) == expected


@pytest.mark.parametrize(("multicast_id", "provider"), [
    ("prov/b", "prov"), ("prov/b/p1/p2", "prov"), ("prov", "prov"), ("", ""),
])
def test_multicast_provider(multicast_id, provider):
    assert rules.multicast_provider(multicast_id) == provider


@pytest.mark.parametrize(("sender", "provider_at", "expected"), [
    ("prov", PEER, None),  # a provider behind MQTT: its own CC published it
    ("prov", PEER_OTHER_GBID, None),
    ("prov", LOCAL, FOREIGN_MULTICAST),  # this CC's own provider: a forgery from outside
    ("prov", CLIENT_A, FOREIGN_MULTICAST),  # a provider of a local runtime: the same
    ("prov", None, FOREIGN_MULTICAST),  # unknown here: no receiver asked a backend for it
    ("other", PEER, FORGED_MULTICAST),  # the sender must be the provider, checked first
    ("other", LOCAL, FORGED_MULTICAST),
])
def test_admit_multicast_from_backend(sender, provider_at, expected):
    m = Message(MessageType.MULTICAST, sender, "prov/new_station/eu", NOW)
    outcome = rules.admit_multicast_from_backend(m, entry(provider_at, visible=True))
    assert reason(outcome) == expected
    if expected == FOREIGN_MULTICAST:
        assert "prov" in outcome.detail
        assert outcome.answer is False


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


@pytest.mark.parametrize(("caller", "participant_at", "owner"), [
    (None, CLIENT_B, None),  # this process: never contested (the table decides)
    (None, None, None),
    (CLIENT_A, None, None),  # no route yet: the first claim wins
    (CLIENT_A, CLIENT_A, None),  # a client re-adding its own route
    (CLIENT_A, WebSocketClientAddress("client-a"), None),
    (CLIENT_A, CLIENT_B, CLIENT_B),  # another connection's: its liveness decides
    (CLIENT_A, LOCAL, None),  # in-process: the table's precedence refuses it
    (CLIENT_A, PEER, None),  # behind MQTT (an old GCD entry): a local client replaces it
])
def test_contested_owner(caller, participant_at, owner):
    assert rules.contested_owner(caller, entry(participant_at)) == owner


@pytest.mark.parametrize(("alive", "expected", "kind"), [
    (True, PARTICIPANT_IN_USE, Refusal),  # its owner lives: nobody else takes it
    (False, CLAIMED_FROM_DEAD, Notice),  # its owner is gone: a provider restarted elsewhere
])
def test_check_claim(alive, expected, kind):
    outcome = rules.check_claim("prov", CLIENT_B, alive)
    assert isinstance(outcome, kind)
    assert outcome.reason == expected
    assert "prov" in outcome.detail and repr(CLIENT_B) in outcome.detail


@pytest.mark.parametrize(("address", "caller", "expected"), [
    (CLIENT_A, None, None),  # this process registers a client's participant
    (CLIENT_B, None, None),
    (UdsClientAddress("client-u"), None, None),  # a client of the Unix domain socket
    (UdsClientAddress("client-a"), CLIENT_A, FOREIGN_NEXT_HOP),  # same id, other transport
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
        assert outcome.detail == ("only WebSocketClientAddresses and UdsClientAddresses are "
                                  "accepted")


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


# ====================================================================== vanished providers


@pytest.mark.parametrize(("registered_again", "routed_at", "expected", "detail"), [
    (False, None, None, None),  # gone for good: removed (locally and from the GCD)
    (True, None, VANISHED_PROVIDER_KEPT, "registered again"),  # restarted after a crash
    (True, CLIENT_B, VANISHED_PROVIDER_KEPT, "registered again"),
    (False, CLIENT_A, VANISHED_PROVIDER_KEPT, "routed again"),  # reconnected, same entry
    (False, LOCAL, VANISHED_PROVIDER_KEPT, "routed again"),
])
def test_vanished_provider(registered_again, routed_at, expected, detail):
    outcome = rules.vanished_provider(registered_again, entry(routed_at))
    assert reason(outcome) == expected
    if outcome is not None:
        assert isinstance(outcome, Notice)
        assert detail in outcome.detail


# ====================================================================== multicast receivers

OWNED = RoutingEntry(CLIENT_A, False, NO_EXPIRY_MS, False)


@pytest.mark.parametrize(("multicast_id", "caller", "entry", "expected", "detail"), [
    ("prov/news", CLIENT_A, OWNED, None, ""),
    ("prov/news/AT/+/*", CLIENT_A, OWNED, None, ""),
    ("prov/news", None, None, None, ""),  # this process acts for any participant
    ("other/news", CLIENT_A, OWNED, BAD_MULTICAST_RECEIVER,
     "multicast id does not belong to the provider"),
    ("provnews", CLIENT_A, OWNED, BAD_MULTICAST_RECEIVER,
     "multicast id does not belong to the provider"),
    ("prov/news/*/AT", CLIENT_A, OWNED, BAD_MULTICAST_RECEIVER, "bad multicast id: "),
    ("prov/", CLIENT_A, OWNED, BAD_MULTICAST_RECEIVER, "bad multicast id: "),
    ("prov/news", CLIENT_B, OWNED, NOT_OWNER,
     "multicast receiver sub-1 is not a participant of the caller"),
    ("prov/news", CLIENT_A, None, NOT_OWNER,
     "multicast receiver sub-1 is not a participant of the caller"),
])
def test_a_multicast_receiver_is_of_the_provider_and_the_callers(
        multicast_id, caller, entry, expected, detail):
    refusal = rules.check_multicast_receiver(multicast_id, "sub-1", "prov", caller, entry)
    assert (None if refusal is None else refusal.reason) == expected
    if refusal is not None:
        assert refusal.detail.startswith(detail)


"""The record schemas of runtime/records.py: audit v1 and routing snapshot v1 (docs/records.md)."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.runtime import records
from pyjoynr.runtime.addresses import (
    InProcessAddress,
    MqttAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.audit import encode
from pyjoynr.runtime.messages import MessageType
from pyjoynr.runtime.routing import NO_EXPIRY_MS, RoutingEntry

DOC_AUDIT_KEYS = ["v", "ts", "proc", "id", "type", "sender", "recipient", "hop", "gbid", "bytes",
                  "outcome", "reason", "peer", "queued_ms"]
DOC_SNAPSHOT_KEYS = ["v", "taken_ms", "proc", "participant_id", "kind", "address", "gbid",
                     "topic", "global", "expiry_ms", "sticky"]


class Skeleton:
    """Stands for the object behind an in-process address (any object will do)."""


def test_versions_and_field_names_are_the_documented_ones():
    assert records.AUDIT_SCHEMA_VERSION == 1
    assert records.SNAPSHOT_SCHEMA_VERSION == 1
    assert list(records.AUDIT_FIELDS) == DOC_AUDIT_KEYS
    assert list(records.SNAPSHOT_FIELDS) == DOC_SNAPSHOT_KEYS
    assert records.OUTCOMES == ("delivered", "queued", "dropped", "refused")


def test_audit_record_has_exactly_the_fields_in_order():
    record = records.audit_record(
        ts=1_700_000_000_123, proc="cc-1", message_id="m-1", message_type="rq", sender="a",
        recipient="b", hop="mqtt", gbid="g1", size=374, outcome="delivered", queued_ms=0)
    assert list(record) == DOC_AUDIT_KEYS
    assert record == {"v": 1, "ts": 1_700_000_000_123, "proc": "cc-1", "id": "m-1",
                      "type": "rq", "sender": "a", "recipient": "b", "hop": "mqtt",
                      "gbid": "g1", "bytes": 374, "outcome": "delivered", "reason": None,
                      "peer": None, "queued_ms": 0}


def test_audit_record_escapes_the_peer_and_refuses_unknown_outcomes():
    record = records.audit_record(
        ts=1, proc="cc", message_id="m", message_type="o", sender="s", recipient="r",
        hop=None, gbid=None, size=1, outcome="refused", reason="spoofed-sender",
        peer="client x\nforged line\x1b[2J")
    assert record["peer"] == "client x\\nforged line\\x1b[2J"
    with pytest.raises(ValueError, match="outcome"):
        records.audit_record(ts=1, proc="cc", message_id="m", message_type="o", sender="s",
                             recipient="r", hop=None, gbid=None, size=1, outcome="lost")


TEXT = st.text(min_size=1, max_size=40)
OPTIONAL = st.none() | TEXT


@st.composite
def audit_args(draw: st.DrawFn) -> dict[str, object]:
    return {
        "ts": draw(st.integers(0, 2**53)),
        "proc": draw(TEXT),
        "message_id": draw(TEXT),
        "message_type": draw(st.sampled_from([t.value for t in MessageType])),
        "sender": draw(TEXT),
        "recipient": draw(TEXT),
        "hop": draw(st.none() | st.sampled_from(["inprocess", "websocket", "mqtt"])),
        "gbid": draw(OPTIONAL),
        "size": draw(st.integers(0, 2**31)),
        "outcome": draw(st.sampled_from(records.OUTCOMES)),
        "reason": draw(OPTIONAL),
        "peer": draw(OPTIONAL),
        "queued_ms": draw(st.none() | st.integers(0, 2**40)),
    }


@given(audit_args())
def test_audit_line_is_the_record_as_json_in_field_order(args):
    line = records.audit_line(**args)  # type: ignore[arg-type]
    assert "\n" not in line and line.isascii()
    decoded = json.loads(line)
    assert decoded == records.audit_record(**args)  # type: ignore[arg-type]
    assert list(decoded) == DOC_AUDIT_KEYS


@given(st.lists(audit_args(), min_size=1, max_size=20), st.integers(1, 3),
       st.integers(1, 400))
def test_the_writers_encoder_makes_the_same_lines(many, max_cached, max_cached_chars):
    # a tiny cache: combinations are forgotten and built again as the encoder goes
    encoder = records.AuditLineEncoder("proc-x", max_cached=max_cached,
                                       max_cached_chars=max_cached_chars)
    for drawn in many:
        args = {**drawn, "proc": "proc-x"}
        positional = [args[k] for k in ("ts", "message_id", "message_type", "sender",
                                        "recipient", "hop", "gbid", "size", "outcome",
                                        "reason", "peer", "queued_ms")]
        assert encoder.line(*positional) == records.audit_line(**args)  # type: ignore[arg-type]


def test_the_encoders_caches_are_bounded_whatever_the_network_sends():
    encoder = records.AuditLineEncoder("p", max_cached=100, max_cached_chars=50_000)
    for n in range(2_000):  # senders and peers of 500 characters, all different
        encoder.line(n, f"m{n}", "o", f"{n:0>500}", "r", None, None, 1, "refused",
                     "spoofed-sender", f"client {n:0>500}", None)
        combinations, chars = encoder.cached
        assert combinations <= 2 * 100 and chars <= 50_000


def test_outcome_of_a_reason():
    for reason in ("expired", "expired-in-queue", "queue-full", "queue-share-used",
                   "queue-wait-exceeded", "no-transport", "duplicate", "no-route",
                   "unpublishable", "too-big"):
        assert records.outcome_of(reason) == "dropped", reason
    for reason in ("spoofed-sender", "refused-relay", "forged-multicast", "foreign-multicast",
                   "unrouted-sender", "no-reply-to", "bad-reply-to"):
        assert records.outcome_of(reason) == "refused", reason


def test_address_kinds_texts_and_gbids():
    skeleton = Skeleton()
    cases = [
        (InProcessAddress(skeleton), "inprocess", "inprocess:Skeleton", None),
        (WebSocketClientAddress("client-7"), "websocket", "client-7", None),
        (WebSocketAddress("ws", "127.0.0.1", 4242, "/"), "websocket-client",
         "ws://127.0.0.1:4242/", None),
        (MqttAddress("gbid-a", "joynr/cc/cc-2"), "mqtt", "gbid-a/joynr/cc/cc-2", "gbid-a"),
    ]
    for address, kind, text, gbid in cases:
        assert records.address_kind(address) == kind
        assert records.address_text(address) == text
        assert records.address_gbid(address) == gbid
    assert records.address_gbid(None) is None


def test_file_names():
    # 2023-11-14T22:13:20Z
    assert records.utc_stamp(1_700_000_000_999) == "20231114T221320Z"
    assert (records.audit_file_name("cc-1", 1_700_000_000_000, 7)
            == "audit-cc-1-20231114T221320Z-000007.jsonl.gz")
    assert (records.audit_file_name("gcd-g/1 ü:x", 1_700_000_000_000, 123456)
            == "audit-gcd-g_1___x-20231114T221320Z-123456.jsonl.gz")
    assert records.file_process_id("a.B_c-9") == "a.B_c-9"
    assert (records.snapshot_file_name("cc/1", 1_700_000_000_000)
            == "routing-cc_1-20231114T221320Z-000.jsonl.gz")
    assert (records.snapshot_file_name("cc/1", 1_700_000_000_042)
            == "routing-cc_1-20231114T221320Z-042.jsonl.gz")


def test_snapshot_records_of_each_address_kind():
    skeleton = Skeleton()
    entries = [
        ("p-mqtt", RoutingEntry(MqttAddress("g2", "joynr/cc/x"), True, NO_EXPIRY_MS, True)),
        ("p-ws", RoutingEntry(WebSocketClientAddress("rt-1"), False, 1_700_000_123_456, False)),
        ("p-in", RoutingEntry(InProcessAddress(skeleton), True, NO_EXPIRY_MS, False)),
        ("p-parent", RoutingEntry(WebSocketAddress("wss", "h", 443, "/j"), False, 5, False)),
    ]
    rows = [json.loads(line) for line in records.snapshot_lines(42, "cc-1", entries)]
    assert [list(row) for row in rows] == [DOC_SNAPSHOT_KEYS] * 4
    assert rows == [
        {"v": 1, "taken_ms": 42, "proc": "cc-1", "participant_id": "p-mqtt", "kind": "mqtt",
         "address": "g2/joynr/cc/x", "gbid": "g2", "topic": "joynr/cc/x", "global": True,
         "expiry_ms": NO_EXPIRY_MS, "sticky": True},
        {"v": 1, "taken_ms": 42, "proc": "cc-1", "participant_id": "p-ws", "kind": "websocket",
         "address": "rt-1", "gbid": None, "topic": None, "global": False,
         "expiry_ms": 1_700_000_123_456, "sticky": False},
        {"v": 1, "taken_ms": 42, "proc": "cc-1", "participant_id": "p-in", "kind": "inprocess",
         "address": "inprocess:Skeleton", "gbid": None, "topic": None, "global": True,
         "expiry_ms": NO_EXPIRY_MS, "sticky": False},
        {"v": 1, "taken_ms": 42, "proc": "cc-1", "participant_id": "p-parent",
         "kind": "websocket-client", "address": "wss://h:443/j", "gbid": None, "topic": None,
         "global": False, "expiry_ms": 5, "sticky": False},
    ]
    assert rows[0] == records.snapshot_record(taken_ms=42, proc="cc-1",
                                              participant_id="p-mqtt", entry=entries[0][1])


def test_the_writers_encoding_of_waiting_records():
    """The tuples the hot path keeps become the documented lines (delivered, and the rest)."""
    encoder = records.AuditLineEncoder("cc-9")
    hop = MqttAddress("g1", "joynr/cc/cc-2")
    pending = [
        # delivered: (time ns, id, type, sender, recipient, hop, bytes, queued_ms)
        (1_700_000_000_123_999_999, "m1", MessageType.REQUEST, "a", "b", hop, 300, 12),
        # the rest: ... + (gbid, outcome, reason, peer)
        (1_700_000_000_200_000_000, "m2", MessageType.ONE_WAY, "a", "c", None, 10, None,
         "g7", "refused", "no-reply-to", "backend g7"),
        (1_700_000_000_300_000_000, "m3", MessageType.ONE_WAY, "a", "c", None, 10, None,
         None, "queued", None, None),
    ]
    lines = encode(encoder, pending)
    assert all(line.endswith("\n") for line in lines)
    decoded = [json.loads(line) for line in lines]
    assert decoded == [
        records.audit_record(ts=1_700_000_000_123, proc="cc-9", message_id="m1",
                             message_type="rq", sender="a", recipient="b", hop="mqtt",
                             gbid="g1", size=300, outcome="delivered", queued_ms=12),
        records.audit_record(ts=1_700_000_000_200, proc="cc-9", message_id="m2",
                             message_type="o", sender="a", recipient="c", hop=None, gbid="g7",
                             size=10, outcome="refused", reason="no-reply-to",
                             peer="backend g7"),
        records.audit_record(ts=1_700_000_000_300, proc="cc-9", message_id="m3",
                             message_type="o", sender="a", recipient="c", hop=None, gbid=None,
                             size=10, outcome="queued"),
    ]
    # one gzip member per batch: a file of members is one gzip stream to a reader
    blob = gzip.compress("".join(lines[:1]).encode()) + gzip.compress("".join(lines[1:]).encode())
    assert gzip.decompress(blob).decode() == "".join(lines)

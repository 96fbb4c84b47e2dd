"""The wire codec (runtime.messages): round trips, raw-frame reuse and every refusal of
decode_frame, with its reason code and a message that names the problem."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.runtime import smrf
from pyjoynr.runtime.addresses import (
    Address,
    MqttAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.messages import (
    DEFAULT_MAX_FRAME_BYTES,
    INT64_MAX,
    MAX_HEADER_LENGTH,
    MAX_HEADERS,
    MAX_ID_LENGTH,
    MESSAGE_OVERHEAD_BYTES,
    REQUEST_TYPES,
    WIRE_VERSION,
    Effort,
    FrameError,
    Message,
    MessageType,
    decode_frame,
    encode_frame,
    held_bytes,
    new_message_id,
    random_id,
    with_reply_to,
)

WS_PREFIX = "joynr.system.RoutingTypes."
REPLY_TO_ADDRESSES: list[Address] = [
    MqttAddress("joynrdefaultgbid", "cc/4711/replyto"),
    MqttAddress("", "topic-in-unnamed-backend"),
    WebSocketClientAddress("libjoynr-1"),
    WebSocketAddress("ws", "127.0.0.1", 4242, "/"),
    WebSocketAddress("wss", "::1", 443, "/joynr"),
]

_DELETE = object()


def frame_dict(**changes: Any) -> dict[str, Any]:
    """A valid frame as a dict, with fields replaced (or removed with ``_DELETE``)."""
    data: dict[str, Any] = {
        "v": 1,
        "t": "rq",
        "id": "msg-1",
        "s": "sender-pid",
        "r": "recipient-pid",
        "x": 1_700_000_000_000,
        "b": b"\x80",
    }
    for key, value in changes.items():
        if value is _DELETE:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def pack(data: Any) -> bytes:
    return msgpack.packb(data, use_bin_type=True)


def refused(raw: Any, reason: str, *fragments: str, max_bytes: int = DEFAULT_MAX_FRAME_BYTES
            ) -> FrameError:
    with pytest.raises(FrameError) as caught:
        decode_frame(raw, max_bytes)
    error = caught.value
    assert error.reason == reason, f"{error.reason} ({error}) instead of {reason}"
    text = str(error)
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"
    return error


def full_message(message_type: MessageType, reply_to: Address | None) -> Message:
    return Message(
        type=message_type,
        sender="provider-or-proxy",
        recipient="provider/bcast/p1" if message_type is MessageType.MULTICAST else "other",
        expiry_date_ms=1_800_000_000_000,
        body=b"\x82\xa1a\x01\xa1b\xc4\x00",
        reply_to=reply_to,
        effort=Effort.BEST_EFFORT,
        custom_headers={"trace": "abc-123", "z-empty": "", "ümlaut": "väl"},
        compressed=True,
    )


# ---------------------------------------------------------------------- round trips


def test_there_are_ten_message_types_with_their_wire_codes() -> None:
    assert {t.value for t in MessageType} == {
        "rq", "rp", "o", "arq", "brq", "mrq", "srp", "sst", "p", "m"}
    assert {MessageType.REQUEST, MessageType.SUBSCRIPTION_REQUEST,
            MessageType.BROADCAST_SUBSCRIPTION_REQUEST,
            MessageType.MULTICAST_SUBSCRIPTION_REQUEST} == REQUEST_TYPES


@pytest.mark.parametrize("message_type", list(MessageType), ids=lambda t: t.value)
@pytest.mark.parametrize("reply_to", REPLY_TO_ADDRESSES, ids=repr)
def test_round_trip_with_every_optional_field(message_type: MessageType, reply_to: Address
                                              ) -> None:
    message = full_message(message_type, reply_to)
    raw = encode_frame(message)
    decoded = decode_frame(raw)
    assert decoded == message
    assert decoded.type is message_type
    assert decoded.reply_to == reply_to and type(decoded.reply_to) is type(reply_to)
    assert decoded.effort is Effort.BEST_EFFORT
    assert decoded.custom_headers == {"trace": "abc-123", "z-empty": "", "ümlaut": "väl"}
    assert decoded.compressed is True
    assert decoded.body == message.body
    assert decoded.id == message.id
    assert decoded.origin is None

    wire = msgpack.unpackb(raw, raw=False)
    assert wire == {
        "v": WIRE_VERSION, "t": message_type.value, "id": message.id, "s": message.sender,
        "r": message.recipient, "x": message.expiry_date_ms, "b": message.body,
        "re": reply_to.to_dict(), "ef": "BEST_EFFORT", "h": message.custom_headers, "z": True,
    }


@pytest.mark.parametrize("message_type", list(MessageType), ids=lambda t: t.value)
def test_round_trip_without_optional_fields_leaves_them_off_the_wire(
        message_type: MessageType) -> None:
    message = Message(type=message_type, sender="s", recipient="r", expiry_date_ms=0)
    raw = encode_frame(message)
    assert set(msgpack.unpackb(raw, raw=False)) == {"v", "t", "id", "s", "r", "x", "b"}
    decoded = decode_frame(raw)
    assert decoded == message
    assert decoded.reply_to is None
    assert decoded.effort is Effort.NORMAL
    assert decoded.custom_headers == {}
    assert decoded.compressed is False
    assert decoded.body == b""


def test_explicit_defaults_on_the_wire_are_accepted() -> None:
    decoded = decode_frame(pack(frame_dict(ef="NORMAL", h={}, z=False, re=None)))
    assert decoded.effort is Effort.NORMAL
    assert decoded.custom_headers == {}
    assert decoded.compressed is False
    assert decoded.reply_to is None


def test_missing_body_is_refused() -> None:
    # the body is a fixed field of the frame (docs/wire.md), even when it is empty
    with pytest.raises(FrameError) as caught:
        decode_frame(pack(frame_dict(b=_DELETE)))
    assert caught.value.reason == "missing-field"
    assert decode_frame(pack(frame_dict(b=b""))).body == b""


@pytest.mark.parametrize(
    ("key", "value", "attribute", "expected"),
    [("ef", "BEST_EFFORT", "effort", Effort.BEST_EFFORT),
     ("h", {"k": "v"}, "custom_headers", {"k": "v"}),
     ("z", True, "compressed", True),
     ("re", {"_typeName": WS_PREFIX + "WebSocketClientAddress", "id": "c"}, "reply_to",
      WebSocketClientAddress("c"))],
)
def test_optional_field_is_read(
        key: str, value: Any, attribute: str, expected: Any) -> None:
    data = frame_dict(**{key: value})
    assert getattr(decode_frame(pack(data)), attribute) == expected


@pytest.mark.parametrize(("key", "value"), [("ef", "FAST"), ("h", {"k": 1}), ("z", 1),
                                            ("re", {"_typeName": "nope"})])
def test_optional_field_is_checked(key: str, value: Any) -> None:
    with pytest.raises(FrameError) as caught:
        decode_frame(pack(frame_dict(**{key: value})))
    assert caught.value.reason in {"bad-field", "bad-reply-to"}


def test_unknown_keys_are_ignored() -> None:
    decoded = decode_frame(pack(frame_dict(future_field=[1, 2, {"x": None}], q="?")))
    assert decoded.id == "msg-1"
    assert decoded.recipient == "recipient-pid"


def test_message_ids_are_unique_and_default() -> None:
    ids = {new_message_id() for _ in range(1000)}
    assert len(ids) == 1000
    a = Message(type=MessageType.REQUEST, sender="s", recipient="r", expiry_date_ms=1)
    b = Message(type=MessageType.REQUEST, sender="s", recipient="r", expiry_date_ms=1)
    assert a.id != b.id
    assert a.is_request_type
    assert not Message(type=MessageType.REPLY, sender="s", recipient="r",
                       expiry_date_ms=1).is_request_type
    assert a.describe() == f"REQUEST {a.id} s -> r"


# ---------------------------------------------------------------------- raw reuse


def test_encode_frame_returns_the_raw_frame_of_a_decoded_message() -> None:
    # a frame with a key this version does not know: re-encoding would lose it
    raw = pack(frame_dict(extension={"k": "v"}))
    decoded = decode_frame(raw)
    assert decoded.raw == raw
    again = encode_frame(decoded)
    assert again == raw
    assert msgpack.unpackb(again, raw=False)["extension"] == {"k": "v"}


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview], ids=lambda w: w.__name__)
def test_decode_accepts_every_binary_type_and_keeps_bytes(wrap: Any) -> None:
    raw = pack(frame_dict())
    decoded = decode_frame(wrap(raw))
    assert type(decoded.raw) is bytes
    assert decoded.raw == raw
    assert encode_frame(decoded) == raw


def test_encode_frame_does_not_change_the_message() -> None:
    message = full_message(MessageType.REQUEST, REPLY_TO_ADDRESSES[0])
    before = dataclasses.replace(message)
    first = encode_frame(message)
    assert message.raw is None
    assert message == before
    assert encode_frame(message) == first


def test_a_decoded_message_carries_its_origin_and_frame() -> None:
    raw = pack(frame_dict())
    origin = WebSocketClientAddress("c")
    message = decode_frame(raw, origin=origin)
    assert message.origin is origin
    assert message.raw == raw
    assert encode_frame(message) is message.raw


def test_held_bytes_counts_the_body_the_frames_kept_and_the_overhead() -> None:
    message = full_message(MessageType.REQUEST, None)
    assert held_bytes(message) == len(message.body) + MESSAGE_OVERHEAD_BYTES
    native = decode_frame(encode_frame(message))
    assert native.raw is not None
    assert held_bytes(native) == len(native.body) + len(native.raw) + MESSAGE_OVERHEAD_BYTES
    joynr = smrf.decode(smrf.encode(dataclasses.replace(message, compressed=False)))
    assert joynr.raw_smrf is not None
    assert held_bytes(joynr) == len(joynr.body) + len(joynr.raw_smrf) + MESSAGE_OVERHEAD_BYTES
    both = dataclasses.replace(native, raw_smrf=b"x" * 1000)
    assert held_bytes(both) == held_bytes(native) + 1000


def test_encode_frame_uses_its_own_frame_only() -> None:
    message = full_message(MessageType.REQUEST, REPLY_TO_ADDRESSES[0])
    joynr = smrf.decode(smrf.encode(message))
    assert joynr.raw_smrf is not None and joynr.raw is None
    frame = encode_frame(joynr)
    assert frame != joynr.raw_smrf and decode_frame(frame) == joynr


def test_raw_and_origin_do_not_take_part_in_equality() -> None:
    raw = pack(frame_dict())
    a, b = decode_frame(raw), decode_frame(raw)
    b = dataclasses.replace(b, origin=WebSocketClientAddress("c"), raw=None,
                            raw_smrf=b"an smrf frame")
    assert a == b
    assert "raw_smrf" not in repr(b) and "an smrf frame" not in repr(b)


# ---------------------------------------------------------------------- refusals: envelope


@pytest.mark.parametrize("value", ["a text frame", 42, None, ["list"], {"v": 1}],
                         ids=lambda v: type(v).__name__)
def test_not_binary(value: Any) -> None:
    refused(value, "not-binary", "binary", type(value).__name__)


def test_oversized() -> None:
    raw = pack(frame_dict(b=b"x" * 200))
    refused(raw, "oversized", str(len(raw)), "exceeds", "100", max_bytes=100)
    # exactly the limit is fine
    assert decode_frame(raw, max_bytes=len(raw)).body == b"x" * 200
    refused(raw, "oversized", str(len(raw)), max_bytes=len(raw) - 1)


def test_oversized_is_checked_before_parsing() -> None:
    refused(b"\xc1" * 101, "oversized", max_bytes=100)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\xc1",  # never used in msgpack
        b"\xde\xad\xbe\xef garbage",
        b"\x81\xa1v",  # map of one entry, value missing
        b"\xdb\xff\xff\xff\xff",  # str32 announcing 4 GiB
        b"\x81\x01\x02",  # map with an int key (strict_map_key)
    ],
    ids=["empty", "reserved-byte", "garbage", "map-missing-value", "huge-str", "int-key"],
)
def test_not_msgpack(raw: bytes) -> None:
    refused(raw, "not-msgpack", "not valid msgpack")


@pytest.mark.parametrize("cut", [1, 2, 5, 20])
def test_truncated(cut: int) -> None:
    raw = pack(frame_dict())
    refused(raw[:-cut], "not-msgpack", "not valid msgpack")


@pytest.mark.parametrize("tail", [b"\x00", b"\xc0", pack({"v": 1}), b"garbage"])
def test_trailing_garbage(tail: bytes) -> None:
    refused(pack(frame_dict()) + tail, "not-msgpack", "not valid msgpack")


def test_deep_nesting_is_refused_not_crashing() -> None:
    refused(b"\x91" * 100_000 + b"\xc0", "not-msgpack")


@pytest.mark.parametrize(
    ("value", "type_name"),
    [([1, 2], "list"), (7, "int"), ("map?", "str"), (None, "NoneType"), (b"b", "bytes"),
     (1.5, "float"), (True, "bool")],
)
def test_not_a_map(value: Any, type_name: str) -> None:
    refused(pack(value), "not-a-map", "msgpack map", type_name)


# ---------------------------------------------------------------------- refusals: fixed fields


@pytest.mark.parametrize("version", [_DELETE, 0, 2, -1, "1", 1.0, True, None, [1], b"\x01"],
                         ids=repr)
def test_unknown_or_wrong_typed_version(version: Any) -> None:
    error = refused(pack(frame_dict(v=version)), "unknown-version", "unsupported frame version")
    assert error.message_id == "msg-1"


@pytest.mark.parametrize("message_type", [_DELETE, None, "", "xx", "RQ", "init", "request", 1,
                                          ["rq"], b"rq", "r" * 1000], ids=repr)
def test_unknown_or_wrong_typed_type(message_type: Any) -> None:
    error = refused(pack(frame_dict(t=message_type)), "unknown-type", "unknown message type")
    assert len(str(error)) < 100  # hostile input is cut short in the message
    assert error.message_id == "msg-1"


STR_FIELDS = [("id", "message id"), ("s", "sender"), ("r", "recipient")]


@pytest.mark.parametrize(("key", "name"), STR_FIELDS)
@pytest.mark.parametrize("value", [_DELETE, None], ids=["absent", "nil"])
def test_missing_str_field(key: str, name: str, value: Any) -> None:
    refused(pack(frame_dict(**{key: value})), "missing-field", name, repr(key))


@pytest.mark.parametrize(("key", "name"), STR_FIELDS)
@pytest.mark.parametrize(("value", "type_name"),
                         [(5, "int"), (b"bytes", "bytes"), (["a"], "list"), ({"a": "b"}, "dict"),
                          (1.5, "float"), (True, "bool")])
def test_wrong_typed_str_field(key: str, name: str, value: Any, type_name: str) -> None:
    refused(pack(frame_dict(**{key: value})), "bad-field", name, "must be a string", type_name)


@pytest.mark.parametrize(("key", "name"), STR_FIELDS)
@pytest.mark.parametrize("value", ["", "a" * (MAX_ID_LENGTH + 1), "é" * (MAX_ID_LENGTH + 1)],
                         ids=["empty", "too-long", "too-long-unicode"])
def test_empty_or_too_long_str_field(key: str, name: str, value: str) -> None:
    refused(pack(frame_dict(**{key: value})), "bad-field", name, f"1..{MAX_ID_LENGTH}")


@pytest.mark.parametrize(("key", "attribute"), [("id", "id"), ("s", "sender"),
                                                ("r", "recipient")])
def test_str_field_of_maximal_length_is_accepted(key: str, attribute: str) -> None:
    value = "a" * MAX_ID_LENGTH
    assert getattr(decode_frame(pack(frame_dict(**{key: value}))), attribute) == value


def test_refusal_names_the_message_id_when_it_is_known() -> None:
    assert refused(pack(frame_dict(s=5)), "bad-field").message_id == "msg-1"
    assert refused(pack(frame_dict(x="soon")), "bad-field").message_id == "msg-1"
    assert refused(pack(frame_dict(id=5)), "bad-field").message_id is None
    assert refused(pack(frame_dict(id="x" * 600, v=9)), "unknown-version").message_id is None
    assert refused(pack([1]), "not-a-map").message_id is None


@pytest.mark.parametrize("expiry", [_DELETE, None, "1700000000000", 1.5, 1e12, True, False,
                                    [1], b"\x01"], ids=repr)
def test_expiry_not_an_int(expiry: Any) -> None:
    refused(pack(frame_dict(x=expiry)), "bad-field", "expiry", "int")


@pytest.mark.parametrize("expiry", [-1, -(2**63), INT64_MAX + 1, 2**64 - 1])
def test_expiry_outside_int64(expiry: int) -> None:
    refused(pack(frame_dict(x=expiry)), "bad-field", "expiry", str(expiry), "outside")


@pytest.mark.parametrize("expiry", [0, 1, INT64_MAX])
def test_expiry_bounds_are_accepted(expiry: int) -> None:
    assert decode_frame(pack(frame_dict(x=expiry))).expiry_date_ms == expiry


@pytest.mark.parametrize(("body", "type_name"),
                         [("text body", "str"), (5, "int"), ([b"x"], "list"), ({}, "dict"),
                          (None, "NoneType"), (True, "bool")])
def test_body_not_binary(body: Any, type_name: str) -> None:
    refused(pack(frame_dict(b=body)), "bad-field", "body", "binary", type_name)


# ---------------------------------------------------------------------- refusals: optional fields


BAD_REPLY_TO: list[tuple[str, Any, str]] = [
    ("not-a-map", ["joynr.system.RoutingTypes.MqttAddress", "g", "t"], "must be a map"),
    ("str", "ws://127.0.0.1:4242/", "must be a map"),
    ("int", 5, "must be a map"),
    ("bool", False, "must be a map"),
    ("empty-map", {}, "_typeName"),
    ("no-type-name", {"brokerUri": "g", "topic": "t"}, "_typeName"),
    ("type-name-not-str", {"_typeName": 5}, "_typeName"),
    ("unknown-type", {"_typeName": "joynr.system.RoutingTypes.CarrierPigeon"}, "unknown"),
    ("short-type-name", {"_typeName": "MqttAddress", "brokerUri": "g", "topic": "t"}, "unknown"),
    ("inprocess", {"_typeName": WS_PREFIX + "InProcessAddress"}, "non-transmittable"),
    ("mqtt-missing-topic", {"_typeName": WS_PREFIX + "MqttAddress", "brokerUri": "g"},
     "missing"),
    ("mqtt-missing-broker", {"_typeName": WS_PREFIX + "MqttAddress", "topic": "t"}, "missing"),
    ("mqtt-extra-field", {"_typeName": WS_PREFIX + "MqttAddress", "brokerUri": "g",
                          "topic": "t", "qos": 1}, "unexpected"),
    ("mqtt-empty-topic", {"_typeName": WS_PREFIX + "MqttAddress", "brokerUri": "g",
                          "topic": ""}, "empty"),
    ("mqtt-topic-int", {"_typeName": WS_PREFIX + "MqttAddress", "brokerUri": "g",
                        "topic": 5}, "string"),
    ("mqtt-broker-nil", {"_typeName": WS_PREFIX + "MqttAddress", "brokerUri": None,
                         "topic": "t"}, "string"),
    ("mqtt-topic-too-long", {"_typeName": WS_PREFIX + "MqttAddress", "brokerUri": "g",
                             "topic": "t" * 1025}, "longer"),
    ("wsc-missing-id", {"_typeName": WS_PREFIX + "WebSocketClientAddress"}, "missing"),
    ("wsc-empty-id", {"_typeName": WS_PREFIX + "WebSocketClientAddress", "id": ""}, "empty"),
    ("wsc-id-bytes", {"_typeName": WS_PREFIX + "WebSocketClientAddress", "id": b"x"}, "string"),
    ("wsc-id-too-long", {"_typeName": WS_PREFIX + "WebSocketClientAddress", "id": "i" * 1025},
     "longer"),
    ("wsc-extra-field", {"_typeName": WS_PREFIX + "WebSocketClientAddress", "id": "x",
                         "host": "h"}, "unexpected"),
    ("ws-bad-protocol", {"_typeName": WS_PREFIX + "WebSocketAddress", "protocol": "HTTP",
                         "host": "h", "port": 80}, "protocol"),
    ("ws-protocol-int", {"_typeName": WS_PREFIX + "WebSocketAddress", "protocol": 1,
                         "host": "h", "port": 80}, "protocol"),
    ("ws-port-zero", {"_typeName": WS_PREFIX + "WebSocketAddress", "protocol": "WS",
                      "host": "h", "port": 0}, "port"),
    ("ws-port-too-big", {"_typeName": WS_PREFIX + "WebSocketAddress", "protocol": "WS",
                         "host": "h", "port": 65536}, "port"),
    ("ws-port-str", {"_typeName": WS_PREFIX + "WebSocketAddress", "protocol": "WS",
                     "host": "h", "port": "80"}, "port"),
    ("ws-port-bool", {"_typeName": WS_PREFIX + "WebSocketAddress", "protocol": "WS",
                      "host": "h", "port": True}, "port"),
    ("ws-empty-host", {"_typeName": WS_PREFIX + "WebSocketAddress", "protocol": "WS",
                       "host": "", "port": 80}, "host"),
    ("ws-path-int", {"_typeName": WS_PREFIX + "WebSocketAddress", "protocol": "WS",
                     "host": "h", "port": 80, "path": 5}, "path"),
    ("ws-missing-port", {"_typeName": WS_PREFIX + "WebSocketAddress", "protocol": "WS",
                         "host": "h"}, "missing"),
    ("ws-extra-field", {"_typeName": WS_PREFIX + "WebSocketAddress", "protocol": "WS",
                        "host": "h", "port": 80, "id": "x"}, "unexpected"),
]


@pytest.mark.parametrize(("reply_to", "fragment"), [(r, f) for _, r, f in BAD_REPLY_TO],
                         ids=[name for name, _, _ in BAD_REPLY_TO])
def test_bad_reply_to(reply_to: Any, fragment: str) -> None:
    error = refused(pack(frame_dict(re=reply_to)), "bad-reply-to", "replyTo", fragment)
    assert error.message_id == "msg-1"


def test_reply_to_with_bytes_keys_is_refused() -> None:
    reply_to = {"_typeName": WS_PREFIX + "WebSocketClientAddress", "id": "x", b"id": "y"}
    refused(pack(frame_dict(re=reply_to)), "bad-reply-to", "unexpected")


@pytest.mark.parametrize("effort", ["FAST", "best_effort", "", "NORMAL ", 1, True, ["BEST_EFFORT"],
                                    b"BEST_EFFORT"], ids=repr)
def test_unknown_effort(effort: Any) -> None:
    refused(pack(frame_dict(ef=effort)), "bad-field", "effort")


@pytest.mark.parametrize(
    "headers",
    [
        ["k", "v"],
        "k=v",
        5,
        {b"k": "v"},
        {"k": b"v"},
        {"k": 1},
        {"k": None},
        {"k": ["v"]},
        {f"k{i}": "v" for i in range(MAX_HEADERS + 1)},
        {"k": "v" * MAX_HEADER_LENGTH},
        {"k" * (MAX_HEADER_LENGTH + 1): ""},
    ],
    ids=["list", "str", "int", "bytes-key", "bytes-value", "int-value", "nil-value",
         "list-value", "too-many", "too-long-value", "too-long-key"],
)
def test_bad_custom_headers(headers: Any) -> None:
    refused(pack(frame_dict(h=headers)), "bad-field", "custom headers", "'h'")


def test_custom_headers_at_their_limits_are_accepted() -> None:
    many = {f"k{i}": "v" for i in range(MAX_HEADERS)}
    assert decode_frame(pack(frame_dict(h=many))).custom_headers == many
    long = {"k": "v" * (MAX_HEADER_LENGTH - 1)}
    assert decode_frame(pack(frame_dict(h=long))).custom_headers == long


@pytest.mark.parametrize("compressed", [1, 0, "true", "", [True], b"\x01"], ids=repr)
def test_compressed_not_a_bool(compressed: Any) -> None:
    refused(pack(frame_dict(z=compressed)), "bad-field", "compressed", "bool")


def test_fields_are_checked_in_order() -> None:
    # the first problem is the one reported
    refused(pack(frame_dict(v=2, t="xx", s=5)), "unknown-version")
    refused(pack(frame_dict(t="xx", s=5)), "unknown-type")
    refused(pack(frame_dict(s=5, x="x")), "bad-field", "sender")


# ---------------------------------------------------------------------- properties

_msgpack_scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False) | st.text(max_size=20) | st.binary(max_size=20)
)
_msgpack_values = st.recursive(
    _msgpack_scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=5) | st.binary(max_size=5), children, max_size=4),
    max_leaves=12,
)
_KEYS = ["v", "t", "id", "s", "r", "x", "re", "ef", "h", "z", "b"]


@given(st.binary(max_size=300))
def test_decode_of_arbitrary_bytes_raises_only_frame_error(raw: bytes) -> None:
    try:
        message = decode_frame(raw)
    except FrameError as exc:
        assert exc.reason in {"not-msgpack", "not-a-map", "unknown-version", "unknown-type",
                              "missing-field", "bad-field", "bad-reply-to"}
        assert str(exc)
    else:
        assert isinstance(message, Message)


@given(st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=4), _msgpack_values,
                       max_size=12))
def test_decode_of_arbitrary_maps_raises_only_frame_error(data: dict[str, Any]) -> None:
    try:
        decode_frame(pack(data))
    except FrameError as exc:
        assert exc.reason != "not-msgpack"
        assert str(exc)


@given(st.dictionaries(st.sampled_from(_KEYS), _msgpack_values, min_size=1, max_size=4))
def test_decode_of_a_valid_frame_with_arbitrary_fields_raises_only_frame_error(
        changes: dict[str, Any]) -> None:
    # starts from a valid frame, so that the later checks are reached too
    try:
        message = decode_frame(pack(frame_dict(**changes)))
    except FrameError as exc:
        assert exc.reason in {"unknown-version", "unknown-type", "missing-field", "bad-field",
                              "bad-reply-to"}
    else:
        assert encode_frame(message) == pack(frame_dict(**changes))


_ids = st.text(min_size=1, max_size=MAX_ID_LENGTH)
_messages = st.builds(
    Message,
    type=st.sampled_from(list(MessageType)),
    sender=_ids,
    recipient=_ids,
    expiry_date_ms=st.integers(min_value=0, max_value=INT64_MAX),
    body=st.binary(max_size=64),
    id=_ids,
    reply_to=st.none() | st.sampled_from(REPLY_TO_ADDRESSES),
    effort=st.sampled_from(list(Effort)),
    custom_headers=st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=5),
    compressed=st.booleans(),
)


@given(_messages)
def test_any_valid_message_round_trips(message: Message) -> None:
    frame = encode_frame(message)
    decoded = decode_frame(frame)
    assert decoded == message
    assert decoded.raw == frame


def test_random_ids_are_32_hex_digits_and_never_repeat_across_batches() -> None:
    ids = [random_id() for _ in range(3 * 256 + 7)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 and i == i.lower() for i in ids)


def test_a_forked_child_does_not_hand_out_its_parents_random_ids() -> None:
    random_id()  # a batch is in the pool, shared by the child at the fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids through the pipe, then out at once
        try:
            os.write(write_end, " ".join(random_id() for _ in range(5)).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child = set(pipe.read().split())
    os.waitpid(pid, 0)
    parent = {random_id() for _ in range(5)}
    assert len(child) == 5 and not child & parent


def test_with_reply_to_is_replace_of_the_reply_to_without_the_frames_for_every_field():
    """with_reply_to makes the copy with the constructor: every field of Message (a field
    added later too: the table must name it) is the one dataclasses.replace gives."""
    values: dict[str, Any] = {
        "type": MessageType.REQUEST, "sender": "proxy-1", "recipient": "provider-1",
        "expiry_date_ms": 1_900_000_000_000, "body": b"body", "id": "message-1",
        "reply_to": WebSocketClientAddress("client-1"), "effort": Effort.BEST_EFFORT,
        "custom_headers": {"k": "v"}, "compressed": True,
        "origin": WebSocketClientAddress("client-1"), "raw": b"frame",
        "custom_signature": b"signature", "raw_smrf": b"smrf frame", "creator": "app-1",
    }
    assert {f.name for f in dataclasses.fields(Message)} == set(values)
    message = Message(**values)
    address = MqttAddress("joynrdefaultgbid", "joynr/cc/me")
    copy = with_reply_to(message, address)
    expected = dataclasses.replace(message, reply_to=address, raw=None, raw_smrf=None)
    for f in dataclasses.fields(Message):
        assert getattr(copy, f.name) == getattr(expected, f.name), f.name
    assert copy.reply_to is address and copy.raw is None and copy.raw_smrf is None
    assert message.raw == b"frame"  # the original is unchanged

"""The SMRF codec (runtime.smrf): golden frames of the smrf test message (made by the smrf npm
package and pinned from this codec), the Message mapping, every refusal with its reason code,
and properties: round trips; truncated, flipped and random bytes give a refusal or a frame."""

from __future__ import annotations

import dataclasses
import json
import os
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyjoynr.runtime.addresses import MqttAddress, WebSocketAddress, WebSocketClientAddress
from pyjoynr.runtime.messages import INT64_MAX, MAX_HEADERS, Effort, Message, MessageType
from pyjoynr.runtime.smrf import (
    DEFAULT_COMPRESS_ABOVE_BYTES,
    MAX_SMRF_HEADERS,
    SmrfError,
    SmrfFrame,
    decode,
    decode_smrf,
    encode,
    encode_smrf,
    frame_from_message,
    message_from_frame,
)
from pyjoynr.runtime.smrf_core import LAYOUTS_CACHED, _layout

# The smrf test message (sender, recipient, two headers, relative ttl 1234567, body 0..99) as
# the smrf npm package 0.3.3 writes it: plain, compressed, custom-signed with b"owner-id".
JS_PLAIN = bytes.fromhex(
    "010000002001000020000000000000000000160020001c001800100007000500060000000c00080016000000"
    "00000000180000007c00000087d6120000000000cc000000d400000064000000000102030405060708090a0b"
    "0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334353637"
    "38393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60616263"
    "020000003400000004000000dcffffff08000000100000000600000076616c7565320000040000006b657932"
    "0000000008000c00080004000800000008000000100000000600000076616c7565310000040000006b657931"
    "000000000600000073656e646572000009000000726563697069656e74000000"
)
JS_PLAIN_SIGNED = bytes.fromhex(
    "01000800200100002000000000000000180020001c001800100007000400060000000c000800050018000000"
    "00010000180000007c00000087d6120000000000cc000000d400000064000000000102030405060708090a0b"
    "0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334353637"
    "38393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60616263"
    "020000003400000004000000dcffffff08000000100000000600000076616c7565320000040000006b657932"
    "0000000008000c00080004000800000008000000100000000600000076616c7565310000040000006b657931"
    "000000000600000073656e646572000009000000726563697069656e740000006f776e65722d6964"
)
JS_COMPRESSED = bytes.fromhex(
    "010000002801000020000000000000000000160020001c001800100007000400060005000c00080016000000"
    "00010000180000008400000087d6120000000000d4000000dc0000006c000000789c6360646266616563e7e0"
    "e4e2e6e1e5e3171014121611151397909492969195935750545256515553d7d0d4d2d6d1d5d3373034323631"
    "3533b7b0b4b2b6b1b5b37770747276717573f7f0f4f2f6f1f5f30f080c0a0e090d0b8f888c8a8e898d8b4f48"
    "4c4a06008b7c1357020000003400000004000000dcffffff08000000100000000600000076616c7565320000"
    "040000006b6579320000000008000c00080004000800000008000000100000000600000076616c7565310000"
    "040000006b657931000000000600000073656e646572000009000000726563697069656e74000000"
)
JS_COMPRESSED_SIGNED = bytes.fromhex(
    "01000800280100001c0000001800240020001c0014000b0007000a00090010000c0008001800000000000000"
    "01010000180000008400000087d6120000000000d4000000dc0000006c000000789c6360646266616563e7e0"
    "e4e2e6e1e5e3171014121611151397909492969195935750545256515553d7d0d4d2d6d1d5d3373034323631"
    "3533b7b0b4b2b6b1b5b37770747276717573f7f0f4f2f6f1f5f30f080c0a0e090d0b8f888c8a8e898d8b4f48"
    "4c4a06008b7c1357020000003400000004000000dcffffff08000000100000000600000076616c7565320000"
    "040000006b6579320000000008000c00080004000800000008000000100000000600000076616c7565310000"
    "040000006b657931000000000600000073656e646572000009000000726563697069656e740000006f776e65"
    "722d6964"
)

# The same message as this codec writes it (pinned: any change to the layout shows here).
OURS_PLAIN = bytes.fromhex(
    "01000000200100001c000000180024000400080014001c001d001e001f000c0010002000180000004c000000"
    "58000000200000008c00000087d6120000000000000000000000000008000c00040008000200000008000000"
    "10000000140000003000000038000000200000003c0000004400000009000000726563697069656e74000000"
    "0600000073656e6465720000040000006b657931000000000600000076616c7565310000040000006b657932"
    "000000000600000076616c756532000064000000000102030405060708090a0b0c0d0e0f1011121314151617"
    "18191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f40414243"
    "4445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60616263"
)
OURS_COMPRESSED = bytes.fromhex(
    "01000000280100001c000000180024000400080014001c001d001e001f000c0010002000180000004c000000"
    "58000000200000008c00000087d6120000000000000000010000000008000c00040008000200000008000000"
    "10000000140000003000000038000000200000003c0000004400000009000000726563697069656e74000000"
    "0600000073656e6465720000040000006b657931000000000600000076616c7565310000040000006b657932"
    "000000000600000076616c75653200006c000000789c6360646266616563e7e0e4e2e6e1e5e3171014121611"
    "151397909492969195935750545256515553d7d0d4d2d6d1d5d33730343236313533b7b0b4b2b6b1b5b37770"
    "747276717573f7f0f4f2f6f1f5f30f080c0a0e090d0b8f888c8a8e898d8b4f484c4a06008b7c1357"
)

TEST_MESSAGE = SmrfFrame(
    sender="sender",
    recipient="recipient",
    ttl_ms=1234567,
    ttl_absolute=False,
    headers=(("key1", "value1"), ("key2", "value2")),
    body=bytes(range(100)),
)


def flatbuffer_flags(frame: bytes) -> dict[str, int | None]:
    """The Message table's bool fields as stored (None: not stored), read by hand from the
    layout the schema defines (independent of runtime.smrf's reader)."""
    buf = frame[8:]
    (root,) = struct.unpack_from("<I", buf, 0)
    (soffset,) = struct.unpack_from("<i", buf, root)
    vtable = root - soffset
    (vtable_size,) = struct.unpack_from("<H", buf, vtable)
    flags: dict[str, int | None] = {}
    for slot, name in ((3, "ttlAbsolute"), (4, "isSigned"), (5, "isEncrypted"),
                       (6, "isCompressed"), (9, "isCustomSigned")):
        entry = 4 + 2 * slot
        offset = struct.unpack_from("<H", buf, vtable + entry)[0] if entry < vtable_size else 0
        flags[name] = buf[root + offset] if offset else None
    return flags


# ---------------------------------------------------------------------- golden frames


@pytest.mark.parametrize(("raw", "compressed", "signature"), [
    (JS_PLAIN, False, None),
    (JS_PLAIN_SIGNED, False, b"owner-id"),
    (JS_COMPRESSED, True, None),
    (JS_COMPRESSED_SIGNED, True, b"owner-id"),
], ids=["plain", "signed", "compressed", "compressed-signed"])
def test_frames_of_the_smrf_npm_package_decode(raw: bytes, compressed: bool,
                                               signature: bytes | None) -> None:
    assert decode_smrf(raw) == dataclasses.replace(
        TEST_MESSAGE, compressed=compressed, custom_signature=signature)


@pytest.mark.parametrize(("golden", "compressed"), [(OURS_PLAIN, False),
                                                     (OURS_COMPRESSED, True)],
                         ids=["plain", "compressed"])
def test_the_test_message_encodes_byte_exact(golden: bytes, compressed: bool) -> None:
    raw = encode_smrf(dataclasses.replace(TEST_MESSAGE, compressed=compressed))
    assert raw.hex() == golden.hex()
    version, sig_size, msg_size = struct.unpack_from("<HHI", raw)
    assert (version, sig_size, len(raw)) == (1, 0, 8 + msg_size)
    assert msg_size % 8 == 0
    # isSigned/isEncrypted default to true in the schema: they must be stored as false
    assert flatbuffer_flags(raw) == {"ttlAbsolute": 0, "isSigned": 0, "isEncrypted": 0,
                                     "isCompressed": int(compressed), "isCustomSigned": 0}
    # the body is stored as a zlib stream when compressed
    stored = zlib.compress(TEST_MESSAGE.body) if compressed else TEST_MESSAGE.body
    assert struct.pack("<I", len(stored)) + stored in raw
    assert decode_smrf(raw) == dataclasses.replace(TEST_MESSAGE, compressed=compressed)


def test_a_custom_signature_is_appended_and_counted_in_the_prefix() -> None:
    raw = encode_smrf(dataclasses.replace(TEST_MESSAGE, custom_signature=b"owner-id"))
    version, sig_size, msg_size = struct.unpack_from("<HHI", raw)
    assert (version, sig_size, len(raw)) == (1, 8, 8 + msg_size + 8)
    assert raw.endswith(b"owner-id")
    assert raw[:-8] == OURS_PLAIN[:2] + b"\x08\x00" + OURS_PLAIN[4:64] + b"\x00\x00\x00\x00\x01" \
        + OURS_PLAIN[69:]
    assert flatbuffer_flags(raw)["isCustomSigned"] == 1
    assert decode_smrf(raw).custom_signature == b"owner-id"
    empty = decode_smrf(encode_smrf(dataclasses.replace(TEST_MESSAGE, custom_signature=b"")))
    assert empty.custom_signature == b""


def test_ten_bytes_0_to_9_are_refused() -> None:
    with pytest.raises(SmrfError) as caught:
        decode_smrf(bytes(range(10)))
    assert caught.value.reason == "unknown-version"


# ---------------------------------------------------------------------- the Message mapping

REPLY_TO = MqttAddress("joynrdefaultgbid", "joynr/cc/4711")


def full_message(**changes: object) -> Message:
    message = Message(
        type=MessageType.REQUEST, sender="proxy-pid", recipient="provider-pid",
        expiry_date_ms=1_800_000_000_000, body=b'{"_typeName":"joynr.Request"}',
        id="msg-1", reply_to=REPLY_TO, effort=Effort.BEST_EFFORT,
        custom_headers={"z4": "rrid-1", "gb": "joynrdefaultgbid", "ümlaut": "väl"},
        custom_signature=b"owner",
    )
    return dataclasses.replace(message, **changes)  # type: ignore[arg-type]


def test_a_message_maps_to_joynr_headers_and_back() -> None:
    message = full_message()
    raw = encode(message)
    frame = decode_smrf(raw)
    assert (frame.sender, frame.recipient, frame.ttl_ms, frame.ttl_absolute) == (
        "proxy-pid", "provider-pid", 1_800_000_000_000, True)
    headers = dict(frame.headers)
    assert headers == {"t": "rq", "id": "msg-1", "ef": "BEST_EFFORT", "c-z4": "rrid-1",
                       "c-gb": "joynrdefaultgbid", "c-ümlaut": "väl", "re": headers["re"]}
    assert json.loads(headers["re"]) == {
        "_typeName": "joynr.system.RoutingTypes.MqttAddress",
        "brokerUri": "joynrdefaultgbid", "topic": "joynr/cc/4711"}
    assert [key for key, _ in frame.headers] == sorted(headers, key=str.encode)
    assert frame.custom_signature == b"owner"
    decoded = decode(raw)
    assert decoded == message
    assert decoded.raw is None and decoded.custom_signature == b"owner"
    assert flatbuffer_flags(raw)["ttlAbsolute"] == 1


@pytest.mark.parametrize("reply_to", [REPLY_TO, WebSocketClientAddress("client-1"),
                                      WebSocketAddress("wss", "::1", 443, "/joynr"), None],
                         ids=repr)
@pytest.mark.parametrize("message_type", list(MessageType), ids=lambda t: t.value)
def test_every_type_and_reply_to_round_trips(message_type: MessageType, reply_to: object
                                             ) -> None:
    message = full_message(type=message_type, reply_to=reply_to, effort=Effort.NORMAL,
                           custom_headers={}, custom_signature=None)
    frame = decode_smrf(encode(message))
    assert {key for key, _ in frame.headers} == {"t", "id"} | ({"re"} if reply_to else set())
    assert decode(encode(message)) == message


def test_a_relative_ttl_becomes_an_expiry_date() -> None:
    raw = encode_smrf(SmrfFrame("s", "r", 5000, False, (("t", "o"), ("id", "m1"))))
    assert decode(raw, now_ms=1_000_000).expiry_date_ms == 1_005_000
    huge = encode_smrf(SmrfFrame("s", "r", INT64_MAX, False, (("t", "o"), ("id", "m1"))))
    assert decode(huge, now_ms=1_000_000).expiry_date_ms == INT64_MAX


def test_unknown_headers_are_read_and_dropped() -> None:
    raw = encode_smrf(SmrfFrame("s", "r", 5, True, (("t", "o"), ("id", "m1"), ("cr", "x"))))
    assert decode(raw) == Message(MessageType.ONE_WAY, "s", "r", 5, b"", "m1")


# ---------------------------------------------------------------------- raw_smrf reuse


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview], ids=lambda w: w.__name__)
def test_decode_keeps_the_frame_and_encode_sends_it_again(wrap: Any) -> None:
    # headers in joynr's order (not sorted) and one this project drops: re-encoding would
    # change the bytes, forwarding must not
    raw = encode_smrf(SmrfFrame("s", "r", 1_800_000_000_000, True, (
        ("t", "o"), ("id", "m1"), ("cr", "creator"), ("c-k", "v")), b'{"a":1}',
        custom_signature=b"owner"))
    message = decode(wrap(raw))
    assert type(message.raw_smrf) is bytes and message.raw_smrf == raw
    assert message.raw is None  # the msgpack frame's field is not this one
    assert encode(message) == raw
    assert encode(message) is message.raw_smrf
    rebuilt = encode(dataclasses.replace(message, raw_smrf=None))
    assert rebuilt != raw and decode(rebuilt) == message


def test_a_changed_message_is_encoded_anew_when_raw_smrf_is_cleared() -> None:
    message = decode(encode(full_message()))
    assert message.raw_smrf is not None
    changed = dataclasses.replace(message, reply_to=None, raw=None, raw_smrf=None)
    assert decode(encode(changed)) == changed != message


def test_a_frame_with_a_relative_ttl_is_not_kept() -> None:
    # sent again as it is, a relative ttl would start anew at the next hop
    raw = encode_smrf(SmrfFrame("s", "r", 5000, False, (("t", "o"), ("id", "m1"))))
    message = decode(raw, now_ms=1_000_000)
    assert message.raw_smrf is None
    again = decode_smrf(encode(message))
    assert (again.ttl_absolute, again.ttl_ms) == (True, 1_005_000)


def test_raw_smrf_is_not_compared_nor_shown() -> None:
    message = decode(encode(full_message()))
    assert message == full_message()
    assert "raw_smrf" not in repr(message)


def test_encode_does_not_use_the_msgpack_frame() -> None:
    from pyjoynr.runtime.messages import decode_frame, encode_frame  # noqa: PLC0415

    native = decode_frame(encode_frame(full_message(custom_signature=None)))
    assert native.raw is not None and native.raw_smrf is None
    raw = encode(native)
    assert raw[:2] == b"\x01\x00" and decode(raw) == native


def test_a_reply_to_with_a_lone_surrogate_is_refused() -> None:
    # JSON may escape one; no frame could carry it on (UTF-8 has no encoding for it)
    reply_to = ('{"_typeName":"joynr.system.RoutingTypes.MqttAddress","brokerUri":"b",'
                '"topic":"t\\ud800"}')
    raw = encode_smrf(SmrfFrame("s", "r", 5, True, (("t", "o"), ("id", "m1"),
                                                    ("re", reply_to))))
    with pytest.raises(SmrfError) as caught:
        decode(raw)
    assert caught.value.reason == "bad-reply-to"
    assert "UTF-8" in str(caught.value)


def test_an_empty_reply_to_is_none() -> None:
    # joynr's Java libjoynr writes what its cluster controller's getReplyToAddress answered:
    # "" from a cluster controller without a backend (this project's); the frame is kept as is
    raw = encode_smrf(SmrfFrame("s", "r", 5, True, (("t", "rq"), ("id", "m1"), ("re", ""))))
    message = decode(raw)
    assert message.reply_to is None and message.type is MessageType.REQUEST
    assert encode(message) == raw


def test_bodies_above_the_threshold_are_compressed_when_it_pays() -> None:
    small = full_message(body=b"a" * DEFAULT_COMPRESS_ABOVE_BYTES)
    large = full_message(body=b"a" * (DEFAULT_COMPRESS_ABOVE_BYTES + 1))
    noise = full_message(body=os.urandom(DEFAULT_COMPRESS_ABOVE_BYTES * 2))
    assert not decode_smrf(encode(small)).compressed
    assert decode_smrf(encode(large)).compressed
    assert len(encode(large)) < 1000 < DEFAULT_COMPRESS_ABOVE_BYTES
    assert not decode_smrf(encode(noise)).compressed
    assert decode(encode(large)) == dataclasses.replace(large, compressed=True)
    assert not decode_smrf(encode(large, compress_above=None)).compressed
    assert decode_smrf(encode(full_message(body=b"ab", compressed=True))).compressed
    assert decode(encode(full_message(body=b"ab", compressed=True))).body == b"ab"


# ---------------------------------------------------------------------- refusals

PLAIN = OURS_PLAIN
MESSAGE_FRAME = encode(full_message(custom_signature=None))


def patched(raw: bytes, at: int, data: bytes) -> bytes:
    return raw[:at] + data + raw[at + len(data):]


def with_headers(*headers: tuple[str, str], sender: str = "s", ttl: int = 5) -> bytes:
    return encode_smrf(SmrfFrame(sender, "r", ttl, True, headers))


LIMIT = 8192


def zip_bomb() -> bytes:
    frame = encode_smrf(SmrfFrame("s", "r", 5, True, (), b"\0" * (LIMIT * 4), compressed=True))
    return frame


REFUSALS = [
    ("not-binary", "x", decode_smrf),
    ("oversized", b"\0" * (LIMIT + 1), decode_smrf),
    ("truncated", PLAIN[:7], decode_smrf),
    ("truncated", PLAIN[:-1], decode_smrf),
    ("unknown-version", patched(PLAIN, 0, b"\x02"), decode_smrf),
    ("bad-size", PLAIN + b"\0", decode_smrf),
    ("bad-flatbuffer", patched(PLAIN, 8, b"\xff\xff\x00\x00"), decode_smrf),  # root offset
    ("bad-flatbuffer", patched(PLAIN, 8, b"\x1d"), decode_smrf),  # misaligned root
    ("bad-flatbuffer", patched(PLAIN, 36, b"\x00\x7f"), decode_smrf),  # soffset of the table
    ("bad-flatbuffer", patched(PLAIN, 12, b"\xff\x00"), decode_smrf),  # vtable size
    ("bad-flatbuffer", patched(PLAIN, 44, b"\xff\xff\x00\x00"), decode_smrf),  # sender offset
    ("bad-flatbuffer", patched(PLAIN, 20, b"\x15"), decode_smrf),  # misaligned ttlMs
    ("bad-flatbuffer", patched(PLAIN, 142, b"\x01"), decode_smrf),  # string not NUL-ended
    ("bad-flatbuffer", patched(PLAIN, 80, b"\x64"), decode_smrf),  # header vector count
    ("bad-utf8", patched(PLAIN, 136, b"\xff"), decode_smrf),
    ("encrypted", patched(PLAIN, 66, b"\x01"), decode_smrf),
    ("signed", patched(PLAIN, 65, b"\x01"), decode_smrf),
    ("bad-signature", patched(PLAIN, 2, b"\x02") + b"xx", decode_smrf),
    ("bad-compression", patched(PLAIN, 67, b"\x01"), decode_smrf),
    ("bad-compression", patched(OURS_COMPRESSED, len(OURS_COMPRESSED) - 1, b"\x00"),
     decode_smrf),
    ("oversized", zip_bomb(), decode_smrf),
    ("missing-field", patched(PLAIN, 18, b"\x00\x00"), decode_smrf),  # no sender
    ("bad-field", with_headers(*((f"k{i}", "v") for i in range(MAX_SMRF_HEADERS + 1))),
     decode_smrf),
    ("missing-field", with_headers(("id", "m1")), decode),
    ("missing-field", with_headers(("t", "rq")), decode),
    ("unknown-type", with_headers(("t", "RQ"), ("id", "m1")), decode),
    ("bad-field", with_headers(("t", "rq"), ("id", "")), decode),
    ("bad-field", with_headers(("t", "rq"), ("id", "m1"), sender=""), decode),
    ("bad-field", with_headers(("t", "rq"), ("id", "m1"), ttl=-1), decode),
    ("bad-field", with_headers(("t", "rq"), ("id", "m1"), ("ef", "LOW")), decode),
    ("bad-field", with_headers(("t", "rq"), ("id", "m1"), ("id", "m2")), decode),
    ("bad-field", with_headers(("t", "rq"), ("id", "m1"),
                               *((f"c-{i}", "v") for i in range(MAX_HEADERS + 1))), decode),
    ("bad-field", with_headers(("t", "rq"), ("id", "m1"), ("c-k", "v" * 5000)), decode),
    ("bad-reply-to", with_headers(("t", "rq"), ("id", "m1"), ("re", "{")), decode),
    ("bad-reply-to", with_headers(("t", "rq"), ("id", "m1"), ("re", '{"_typeName":"x"}')),
     decode),
]


@pytest.mark.parametrize(("reason", "raw", "decoder"), REFUSALS,
                         ids=[f"{i}-{r[0]}" for i, r in enumerate(REFUSALS)])
def test_refusals_carry_their_reason(reason: str, raw: bytes, decoder: object) -> None:
    with pytest.raises(SmrfError) as caught:
        decoder(raw, LIMIT)  # type: ignore[operator]
    assert caught.value.reason == reason, f"{caught.value.reason} ({caught.value})"
    assert isinstance(caught.value, ValueError)


def test_the_refused_message_names_the_message_id() -> None:
    with pytest.raises(SmrfError) as caught:
        decode(with_headers(("t", "rq"), ("id", "m1"), sender=""))
    assert caught.value.message_id == "m1"


# ---------------------------------------------------------------------- properties

texts = st.text(max_size=40)
frames = st.builds(
    SmrfFrame,
    sender=texts, recipient=texts,
    ttl_ms=st.integers(-(2**63), 2**63 - 1),
    ttl_absolute=st.booleans(),
    headers=st.lists(st.tuples(texts, texts), max_size=8).map(
        lambda pairs: tuple(sorted(pairs, key=lambda kv: kv[0].encode()))),
    body=st.binary(max_size=600),
    compressed=st.booleans(),
    custom_signature=st.none() | st.binary(max_size=64),
)
ids = st.text(min_size=1, max_size=40)
messages = st.builds(
    Message,
    type=st.sampled_from(list(MessageType)),
    sender=ids, recipient=ids, id=ids,
    expiry_date_ms=st.integers(0, INT64_MAX),
    body=st.binary(max_size=600),
    reply_to=st.sampled_from([None, REPLY_TO, WebSocketClientAddress("c-1")]),
    effort=st.sampled_from(list(Effort)),
    custom_headers=st.dictionaries(st.text(max_size=20), st.text(max_size=20), max_size=6),
    compressed=st.booleans(),
    custom_signature=st.none() | st.binary(max_size=64),
)


def same_frame_sorted(frame: SmrfFrame) -> SmrfFrame:
    return dataclasses.replace(frame, headers=tuple(
        sorted(frame.headers, key=lambda kv: (kv[0].encode(), kv[1].encode()))))


@given(frames)
def test_frames_round_trip(frame: SmrfFrame) -> None:
    raw = encode_smrf(frame)
    assert same_frame_sorted(decode_smrf(raw)) == same_frame_sorted(frame)


@given(messages)
def test_messages_round_trip(message: Message) -> None:
    assert decode(encode(message, compress_above=None)) == message


def decodes_or_refuses(raw: bytes) -> None:
    for decoder in (decode_smrf, decode):
        try:
            decoder(raw, 1 << 16)
        except SmrfError as exc:
            assert exc.reason and " " not in exc.reason


@settings(max_examples=60)
@given(messages)
def test_every_truncation_is_refused(message: Message) -> None:
    raw = encode(message)
    for end in range(len(raw)):
        with pytest.raises(SmrfError):
            decode_smrf(raw[:end])


@settings(max_examples=500)
@given(messages, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                          min_size=1, max_size=6))
def test_flipped_bytes_give_a_refusal_or_a_message(message: Message,
                                                   flips: list[tuple[int, int]]) -> None:
    raw = bytearray(encode(message))
    for at, value in flips:
        raw[8 + at % (len(raw) - 8)] = value  # the prefix is checked exactly anyway
    decodes_or_refuses(bytes(raw))


@settings(max_examples=500)
@given(st.binary(max_size=400), st.integers(0, 3))
def test_random_bytes_give_a_refusal_or_a_message(data: bytes, sig_size: int) -> None:
    decodes_or_refuses(data)
    # behind a valid prefix, so that the FlatBuffer reader gets them
    msg_size = max(0, len(data) - sig_size)
    decodes_or_refuses(struct.pack("<HHI", 1, len(data) - msg_size, msg_size) + data)


# ---------------------------------------------------------------------- the per-message paths
# decode and encode go straight between bytes and Message; they must give exactly what the
# frame layer and the mapping give (decode_smrf + message_from_frame, frame_from_message +
# encode_smrf), on this codec's frames and on frames laid out as joynr's other writers lay
# them out. Those are made here by rewriting this codec's frames (its fixed layout: Message
# vtable at FlatBuffer offset 4, table at 28, Header vtable at 64, headers vector at 72).

def frame_layer_message(raw: bytes, **options: Any) -> Message:
    return message_from_frame(decode_smrf(raw), raw_smrf=raw, **options)


def set_flatbuffer(raw: bytes, at: int, fmt: str, *values: int) -> bytes:
    """``raw`` with ``values`` packed at FlatBuffer offset ``at``."""
    data = bytearray(raw)
    struct.pack_into(fmt, data, 8 + at, *values)
    return bytes(data)


def without_field(raw: bytes, slot: int) -> bytes:
    """The Message field of ``slot`` left out (its vtable entry 0), as writers leave out
    fields with their default (JavaScript: ttlAbsolute) or empty ones (C++: the body)."""
    return set_flatbuffer(raw, 4 + 4 + 2 * slot, "<H", 0)


def header_tables(raw: bytes) -> list[int]:
    """Where the Header tables are (FlatBuffer offsets), in the vector's order."""
    count = struct.unpack_from("<I", raw, 8 + 72)[0]
    return [76 + 4 * i + struct.unpack_from("<I", raw, 8 + 76 + 4 * i)[0]
            for i in range(count)]


def headers_reversed(raw: bytes) -> bytes:
    """The headers vector in the reverse order: unsorted, as joynr's JavaScript runtime
    writes its headers (in the order they were set)."""
    for i, table in enumerate(reversed(header_tables(raw))):
        raw = set_flatbuffer(raw, 76 + 4 * i, "<I", table - (76 + 4 * i))
    return raw


def own_header_vtables(raw: bytes, vtable: tuple[int, ...] = (10, 12, 4, 8, 0)) -> bytes:
    """Every Header table but the first with a vtable of its own, ``vtable`` (default: the
    same fields with one more entry, absent, as a newer schema's writer would have), placed
    after the FlatBuffer's end (a negative soffset)."""
    version, sig_size, msg_size = struct.unpack_from("<HHI", raw)
    flatbuffer, signature = bytearray(raw[8:8 + msg_size]), raw[8 + msg_size:]
    for table in header_tables(raw)[1:]:
        at = len(flatbuffer)
        flatbuffer += struct.pack(f"<{len(vtable)}H", *vtable)
        struct.pack_into("<i", flatbuffer, table, table - at)
    flatbuffer += bytes(-len(flatbuffer) % 8)
    return struct.pack("<HHI", version, sig_size, len(flatbuffer)) + flatbuffer + signature


def as_other_writers_write(raw: bytes) -> list[bytes]:
    """``raw`` as joynr's other writers could lay the same frame out."""
    return [
        headers_reversed(raw),
        without_field(raw, 3),  # ttlAbsolute: its default, true
        own_header_vtables(raw),
        own_header_vtables(headers_reversed(without_field(raw, 3))),
    ]


@given(messages)
def test_encode_writes_what_the_frame_layer_writes(message: Message) -> None:
    for compress_above in (None, 100):
        raw = encode(message, compress_above=compress_above)
        assert raw == encode_smrf(frame_from_message(message, compress_above))
        assert decode(raw) == dataclasses.replace(
            message, compressed=frame_from_message(message, compress_above).compressed)


@given(messages)
def test_decode_reads_what_the_frame_layer_reads(message: Message) -> None:
    raw = encode(message, compress_above=None)
    for variant in (raw, *as_other_writers_write(raw)):
        decoded = decode(variant)
        assert decoded == frame_layer_message(variant) == message
        assert decoded.raw_smrf == variant
    if not message.body and not message.compressed:  # C++ leaves an empty body out
        assert decode(without_field(raw, 8)) == message


@settings(max_examples=300)
@given(messages, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                          min_size=1, max_size=4), st.integers(0, 4))
def test_decode_refuses_what_the_frame_layer_refuses(
        message: Message, flips: list[tuple[int, int]], layout: int) -> None:
    raw = encode(message, compress_above=None)
    data = bytearray((raw, *as_other_writers_write(raw))[layout])
    for at, value in flips:
        data[8 + at % (len(data) - 8)] = value
    flipped = bytes(data)
    try:
        expected = frame_layer_message(flipped, now_ms=5)
    except SmrfError as exc:
        with pytest.raises(SmrfError) as caught:
            decode(flipped, now_ms=5)
        assert (caught.value.reason, caught.value.message_id) == (exc.reason, exc.message_id)
    else:
        decoded = decode(flipped, now_ms=5)
        assert decoded == expected and decoded.raw_smrf == expected.raw_smrf


def test_frames_of_joynrs_other_writers_decode_to_the_message() -> None:
    message = full_message(body=b"")
    raw = encode(message)
    for variant in (*as_other_writers_write(raw), without_field(raw, 8)):
        assert variant != raw
        assert decode(variant) == message
    unsorted = decode_smrf(headers_reversed(raw)).headers
    assert [key for key, _ in unsorted] == sorted((key for key, _ in unsorted),
                                                  key=str.encode, reverse=True)


def test_a_header_table_of_another_vtable_is_checked_anew() -> None:
    # the reader keeps the previous header's checked vtable; a table with another one must
    # not pass on that: here the value lies outside the second table's 12 bytes
    raw = encode(full_message(custom_signature=None))
    assert decode(own_header_vtables(raw)) == full_message(custom_signature=None)
    with pytest.raises(SmrfError) as caught:
        decode_smrf(own_header_vtables(raw, (8, 12, 4, 12)))
    assert caught.value.reason == "bad-flatbuffer"
    assert "Header field 1" in str(caught.value)


def test_a_header_table_of_the_same_vtable_is_still_bounded() -> None:
    # the second header's table moved to the FlatBuffer's last 4 bytes, with the shared
    # vtable: its 12 bytes would end outside the FlatBuffer
    raw = encode(full_message(custom_signature=None))
    msg_size = struct.unpack_from("<I", raw, 4)[0]
    last = msg_size - 4
    moved = set_flatbuffer(raw, last, "<i", last - 64)
    moved = set_flatbuffer(moved, 80, "<I", last - 80)
    with pytest.raises(SmrfError) as caught:
        decode_smrf(moved)
    assert caught.value.reason == "bad-flatbuffer"
    assert "Header table size 12 is invalid" in str(caught.value)


def test_a_kept_table_layout_holds_only_at_the_same_alignment() -> None:
    # the Message table moved 4 bytes on (4 zero bytes before it): the same vtable bytes, but
    # ttlMs (8 bytes wide) is then misaligned
    raw = encode(full_message(custom_signature=None))
    version, sig_size, msg_size = struct.unpack_from("<HHI", raw)
    flatbuffer = bytearray(raw[8:8 + 28] + bytes(4) + raw[8 + 28:])
    struct.pack_into("<I", flatbuffer, 0, 32)  # the root
    struct.pack_into("<i", flatbuffer, 32, 28)  # the table's soffset to its vtable at 4
    shifted = struct.pack("<HHI", version, sig_size, msg_size + 4) + flatbuffer
    assert decode(raw) == full_message(custom_signature=None)  # its layout is kept now
    for _ in range(2):
        with pytest.raises(SmrfError) as caught:
            decode(shifted)
        assert caught.value.reason == "bad-flatbuffer"
        assert "Message field 2" in str(caught.value)  # ttlMs
    assert _layout.cache_info().currsize <= LAYOUTS_CACHED


def test_a_refused_table_layout_is_refused_again() -> None:
    bad_vtable = patched(PLAIN, 20, b"\x15")  # a misaligned ttlMs
    for _ in range(3):
        with pytest.raises(SmrfError) as caught:
            decode_smrf(bad_vtable)
        assert caught.value.reason == "bad-flatbuffer"


def test_a_reply_to_is_read_once_and_a_bad_one_refused_each_time() -> None:
    one, two = (decode(encode(full_message(id=f"m{i}"))) for i in range(2))
    assert one.reply_to == REPLY_TO and one.reply_to is two.reply_to
    assert encode(full_message(reply_to=WebSocketClientAddress("c-9"))) == encode_smrf(
        frame_from_message(full_message(reply_to=WebSocketClientAddress("c-9"))))
    bad = with_headers(("t", "rq"), ("id", "m1"), ("re", '{"_typeName":"x"}'))
    for _ in range(2):
        with pytest.raises(SmrfError) as caught:
            decode(bad)
        assert caught.value.reason == "bad-reply-to"

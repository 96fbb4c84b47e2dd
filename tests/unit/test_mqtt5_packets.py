"""transports.mqtt.mqtt5.packets: encode/decode round trips (property-based), known bytes, and
hostile input: every malformed packet is a ProtocolViolation with its reason, and random bytes
never raise anything else."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.transports.mqtt.mqtt5 import packets as p
from pyjoynr.transports.mqtt.mqtt5.packets import (
    V5,
    V311,
    Connack,
    Connect,
    Decoder,
    Disconnect,
    Pingreq,
    Pingresp,
    ProtocolViolation,
    Puback,
    Publish,
    Suback,
    Subscribe,
    Unsuback,
    Unsubscribe,
    encode,
)

# ---------------------------------------------------------------------- strategies

text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=20)
topic_name = text.filter(lambda t: t and "+" not in t and "#" not in t)
u16 = st.integers(1, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
pair = st.tuples(text, text)


def _value(pid: int) -> st.SearchStrategy[Any]:
    kind = p.PROPERTIES[pid][1]
    if pid in (p.SUBSCRIPTION_ID,):
        return st.integers(1, p.MAX_VARINT)
    if pid in p._BOOLEAN:
        return st.integers(0, 1)
    if pid in p._NONZERO:
        return st.integers(1, 0xFFFF if kind == p._U16 else 0xFFFFFFFF)
    return {p._BYTE: st.integers(0, 255), p._U16: st.integers(0, 0xFFFF), p._U32: u32,
            p._UTF8: text, p._BINARY: st.binary(max_size=20)}.get(kind, pair)


def properties(ptype: int, exclude: frozenset[int] = frozenset()) -> st.SearchStrategy[Any]:
    allowed = sorted(pid for pid, (_, _, where) in p.PROPERTIES.items()
                     if ptype in where and pid not in exclude)
    single = {pid: _value(pid) for pid in allowed if pid not in p._REPEATABLE}
    repeat = {pid: st.lists(_value(pid), min_size=1, max_size=3)
              for pid in allowed if pid in p._REPEATABLE}
    return st.fixed_dictionaries({}, optional={**single, **repeat})


def publishes(version: int, role: str) -> st.SearchStrategy[Publish]:
    props = (properties(p.PUBLISH, frozenset({p.TOPIC_ALIAS}) if role == "client"
                        else frozenset()) if version == V5 else st.just({}))
    return st.builds(
        lambda topic, payload, qos, pid, dup, retain, pr: Publish(
            topic, payload, qos, pid if qos else 0, dup and qos > 0, retain, pr),
        topic_name, st.binary(max_size=300), st.integers(0, 1), u16, st.booleans(),
        st.booleans(), props)


def server_packets(version: int) -> st.SearchStrategy[Any]:
    """What a server sends (the client role decodes these)."""
    v5 = version == V5
    none = st.just({})
    return st.one_of(
        st.builds(lambda sp, code, pr: Connack(sp and code == 0, code, pr), st.booleans(),
                  st.sampled_from(sorted(p.CONNACK_CODES if v5 else p.CONNACK_CODES_311)),
                  properties(p.CONNACK) if v5 else none),
        publishes(version, "client"),
        st.builds(Puback, u16, st.sampled_from(sorted(p.PUBACK_CODES)) if v5 else st.just(0),
                  properties(p.PUBACK) if v5 else none),
        st.builds(Suback, u16, st.lists(st.sampled_from(
            sorted(p.SUBACK_CODES if v5 else {0, 1, 2, 0x80})), min_size=1, max_size=4),
            properties(p.SUBACK) if v5 else none),
        st.builds(Unsuback, u16, st.lists(st.sampled_from(sorted(p.UNSUBACK_CODES)),
                                          min_size=1, max_size=4) if v5 else st.just([]),
                  properties(p.UNSUBACK) if v5 else none),
        st.just(Pingresp()),
        st.builds(Disconnect, st.sampled_from(sorted(p.DISCONNECT_CODES)) if v5 else st.just(0),
                  properties(p.DISCONNECT) if v5 else none),
    )


def client_packets(version: int) -> st.SearchStrategy[Any]:
    """What a client sends (the server role decodes these; CONNECT first)."""
    v5 = version == V5
    none = st.just({})
    return st.one_of(
        publishes(version, "server"),
        st.builds(Puback, u16, st.sampled_from(sorted(p.PUBACK_CODES)) if v5 else st.just(0),
                  properties(p.PUBACK) if v5 else none),
        st.builds(Subscribe, u16, st.lists(st.tuples(
            text, st.integers(0, 2 if not v5 else 0x3F).filter(lambda o: o & 3 != 3)),
            min_size=1, max_size=3), properties(p.SUBSCRIBE) if v5 else none),
        st.builds(Unsubscribe, u16, st.lists(text, min_size=1, max_size=3),
                  properties(p.UNSUBSCRIBE) if v5 else none),
        st.just(Pingreq()),
        st.builds(Disconnect, st.sampled_from(sorted(p.DISCONNECT_CODES)) if v5 else st.just(0),
                  properties(p.DISCONNECT) if v5 else none),
    )


def connects(version: int) -> st.SearchStrategy[Connect]:
    return st.builds(Connect, text, st.booleans(), st.integers(0, 0xFFFF),
                     st.none() | text, st.none() | st.binary(max_size=20),
                     properties(p.CONNECT) if version == V5 else st.just({}),
                     st.just(version))


versions = st.sampled_from([V5, V311])


# ---------------------------------------------------------------------- round trips


@given(versions.flatmap(lambda v: st.tuples(st.just(v), st.lists(server_packets(v),
                                                                 max_size=6))),
       st.data())
def test_server_packets_round_trip_in_any_chunking(case, data):
    version, packets = case
    wire = b"".join(encode(packet, version) for packet in packets)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=5)))
    decoder = Decoder("client", version)
    got = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        got += decoder.feed(wire[start:end])
    assert got == packets
    assert decoder.buffered == 0


@given(versions.flatmap(lambda v: st.tuples(connects(v), st.lists(client_packets(v),
                                                                  max_size=6))))
def test_client_packets_round_trip(case):
    connect, packets = case
    decoder = Decoder("server")
    wire = encode(connect) + b"".join(encode(packet, connect.version) for packet in packets)
    assert decoder.feed(wire) == [connect, *packets]
    assert decoder.version == connect.version


@given(st.integers(0, p.MAX_VARINT))
def test_varint_round_trip_and_shortest_form(value):
    data = p.encode_varint(value)
    assert len(data) == (1 if value < 128 else 2 if value < 16384
                         else 3 if value < 2_097_152 else 4)
    body = p._Body(data, 0, len(data), "test")
    assert body.varint("value") == value
    body.done()


def test_known_bytes():
    # MQTT 3.1.1 CONNECT of client "c", clean session, keep-alive 60 (from the specification's
    # layout); PINGREQ; a QoS 1 PUBLISH with packet id 10
    assert encode(Connect("c", keepalive=60, version=V311)) == (
        b"\x10\x0d\x00\x04MQTT\x04\x02\x00\x3c\x00\x01c")
    assert encode(Pingreq()) == b"\xc0\x00"
    assert encode(Publish("a/b", b"hi", 1, 10), V311) == b"\x32\x09\x00\x03a/b\x00\x0ahi"
    # MQTT 5: the same with an empty property block; a success PUBACK is its short form
    assert encode(Publish("a/b", b"hi", 1, 10)) == b"\x32\x0a\x00\x03a/b\x00\x0a\x00hi"
    assert encode(Puback(10)) == b"\x40\x02\x00\x0a"
    assert encode(Puback(10, 0x10)) == b"\x40\x04\x00\x0a\x10\x00"
    # a remaining length of 321 takes two bytes: 0xC1 0x02
    big = encode(Publish("t", b"x" * 318, 0), V311)
    assert big[:3] == b"\x30\xc1\x02"


def test_encode_publish_equals_the_generic_encoder():
    for version in (V5, V311):
        for qos in (0, 1):
            for size in (0, 100, 200, 20_000):
                packet = Publish("joynr/cc/x/y", b"p" * size, qos, 7 if qos else 0,
                                 properties={p.MESSAGE_EXPIRY: 60} if version == V5 else {})
                fast = p.encode_publish(p._utf8(packet.topic), packet.payload, qos,
                                        packet.packet_id,
                                        p.encode_properties(packet.properties)
                                        if version == V5 else b"")
                assert fast == encode(packet, version)


# ---------------------------------------------------------------------- hostile input

CONNACK_OK = encode(Connack())


def refused(data: bytes, version: int = V5, max_packet_size: int = 1 << 20) -> str:
    decoder = Decoder("client", version, max_packet_size)
    with pytest.raises(ProtocolViolation) as info:
        decoder.feed(data)
    # a spent decoder refuses everything after, with the same reason
    with pytest.raises(ProtocolViolation):
        decoder.feed(CONNACK_OK)
    return info.value.reason


MALFORMED = {
    # fixed header and remaining length
    "reserved packet type 0": (b"\x00\x00", "bad-packet-type"),
    "CONNECT from a server": (encode(Connect("x")), "bad-packet-type"),
    "SUBSCRIBE from a server": (encode(Subscribe(1, [("a", 1)])), "bad-packet-type"),
    "PUBREC (QoS 2)": (b"\x50\x02\x00\x01", "qos2-unsupported"),
    "PUBREL (QoS 2)": (b"\x62\x02\x00\x01", "qos2-unsupported"),
    "AUTH": (b"\xf0\x00", "auth-unsupported"),
    "remaining length of five bytes": (b"\x30\xff\xff\xff\xff\x01", "bad-remaining-length"),
    "remaining length not shortest": (b"\xd0\x80\x00", "bad-remaining-length"),
    "oversized packet": (b"\x30\xff\xff\xff\x7f", "packet-too-large"),
    "PINGRESP with flags": (b"\xd1\x00", "bad-flags"),
    "PUBACK with flags": (b"\x42\x02\x00\x01", "bad-flags"),
    "PINGRESP with a body": (b"\xd0\x01\x00", "trailing-bytes"),
    # CONNACK
    "CONNACK truncated": (b"\x20\x01\x00", "truncated"),
    "CONNACK bad ack flags": (b"\x20\x03\x02\x00\x00", "bad-flags"),
    "CONNACK unknown reason code": (b"\x20\x03\x00\x01\x00", "bad-reason-code"),
    "CONNACK session present on failure": (b"\x20\x03\x01\x87\x00", "bad-flags"),
    "CONNACK properties past the end": (b"\x20\x03\x00\x00\x05", "truncated"),
    "CONNACK unknown property id": (b"\x20\x05\x00\x00\x02\x7f\x00", "bad-property"),
    "CONNACK property not allowed there": (b"\x20\x08\x00\x00\x05\x02\x00\x00\x00\x01",
                                           "bad-property"),
    "CONNACK receive maximum 0": (b"\x20\x06\x00\x00\x03\x21\x00\x00", "bad-property"),
    "CONNACK maximum QoS 2": (b"\x20\x05\x00\x00\x02\x24\x02", "bad-property"),
    "CONNACK property twice": (b"\x20\x09\x00\x00\x06\x21\x00\x01\x21\x00\x01",
                               "bad-property"),
    "CONNACK property id not shortest": (b"\x20\x06\x00\x00\x03\xa1\x00\x01", "bad-varint"),
    "CONNACK property value truncated": (b"\x20\x05\x00\x00\x02\x21\x00", "truncated"),
    "CONNACK bad UTF-8 in a property": (b"\x20\x07\x00\x00\x04\x12\x00\x01\xff",
                                        "bad-utf8"),
    "CONNACK U+0000 in a property": (b"\x20\x07\x00\x00\x04\x12\x00\x01\x00", "bad-utf8"),
    "CONNACK trailing bytes": (b"\x20\x04\x00\x00\x00\x00", "trailing-bytes"),
    # PUBLISH
    "PUBLISH QoS 3": (b"\x36\x06\x00\x01t\x00\x01\x00", "bad-qos"),
    "PUBLISH QoS 2 (never subscribed)": (b"\x34\x06\x00\x01t\x00\x01\x00", "bad-qos"),
    "PUBLISH DUP on QoS 0": (b"\x38\x04\x00\x01t\x00", "bad-flags"),
    "PUBLISH topic length past the end": (b"\x30\x03\x00\x09t", "truncated"),
    "PUBLISH no topic length": (b"\x30\x01\x00", "truncated"),
    "PUBLISH packet id missing": (b"\x32\x04\x00\x01t\x00", "truncated"),
    "PUBLISH packet id 0": (b"\x32\x06\x00\x01t\x00\x00\x00", "bad-packet-id"),
    "PUBLISH topic not UTF-8": (b"\x30\x04\x00\x01\xc3\x00", "bad-utf8"),
    "PUBLISH wildcard topic": (b"\x30\x04\x00\x01#\x00", "bad-topic"),
    "PUBLISH empty topic": (b"\x30\x03\x00\x00\x00", "bad-topic"),
    "PUBLISH no property length": (b"\x30\x03\x00\x01t", "truncated"),
    "PUBLISH properties past the end": (b"\x30\x05\x00\x01t\x09\x02", "truncated"),
    "PUBLISH unknown property": (b"\x30\x06\x00\x01t\x02\x00\x00", "bad-property"),
    "PUBLISH CONNACK-only property": (b"\x30\x07\x00\x01t\x03\x21\x00\x05", "bad-property"),
    "PUBLISH topic alias (none allowed)": (b"\x30\x07\x00\x01t\x03\x23\x00\x01",
                                           "topic-alias"),
    "PUBLISH subscription id 0": (b"\x30\x06\x00\x01t\x02\x0b\x00", "bad-property"),
    "PUBLISH payload format 2": (b"\x30\x06\x00\x01t\x02\x01\x02", "bad-property"),
    # acknowledgements
    "PUBACK truncated": (b"\x40\x01\x00", "truncated"),
    "PUBACK packet id 0": (b"\x40\x02\x00\x00", "bad-packet-id"),
    "PUBACK unknown reason code": (b"\x40\x03\x00\x01\x05", "bad-reason-code"),
    "PUBACK properties past the end": (b"\x40\x04\x00\x01\x00\x03", "truncated"),
    "SUBACK without reason codes": (b"\x90\x03\x00\x01\x00", "truncated"),
    "SUBACK unknown reason code": (b"\x90\x04\x00\x01\x00\x03", "bad-reason-code"),
    "UNSUBACK without reason codes": (b"\xb0\x03\x00\x01\x00", "truncated"),
    "UNSUBACK unknown reason code": (b"\xb0\x04\x00\x01\x00\x05", "bad-reason-code"),
    "DISCONNECT unknown reason code": (b"\xe0\x01\x05", "bad-reason-code"),
    "DISCONNECT property not allowed": (b"\xe0\x05\x00\x03\x21\x00\x01", "bad-property"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_packets_are_refused_with_their_reason(name):
    data, reason = MALFORMED[name]
    assert refused(data) == reason
    # behind a good packet: that one is returned, the violation is kept and raised next
    decoder = Decoder("client", V5, 1 << 20)
    assert decoder.feed(CONNACK_OK + data) == [Connack()]
    assert decoder.violation is not None and decoder.violation.reason == reason
    with pytest.raises(ProtocolViolation):
        decoder.feed(CONNACK_OK)
    # split into single bytes
    decoder = Decoder("client", V5, 1 << 20)
    with pytest.raises(ProtocolViolation) as info:
        for i in range(len(data)):
            decoder.feed(data[i:i + 1])
    assert info.value.reason == reason


MALFORMED_311 = {
    "CONNACK return code 6": (b"\x20\x02\x00\x06", "bad-reason-code"),
    "SUBACK reason code 0x87": (b"\x90\x03\x00\x01\x87", "bad-reason-code"),
    "UNSUBACK with reason codes": (b"\xb0\x03\x00\x01\x00", "trailing-bytes"),
    "PUBACK with a reason code": (b"\x40\x03\x00\x01\x00", "trailing-bytes"),
    "DISCONNECT from a 3.1.1 server with a body": (b"\xe0\x01\x00", "trailing-bytes"),
    "AUTH in 3.1.1": (b"\xf0\x00", "bad-packet-type"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED_311))
def test_malformed_311_packets_are_refused(name):
    data, reason = MALFORMED_311[name]
    assert refused(data, V311) == reason


def test_oversized_packet_refused_from_its_header_before_its_body():
    decoder = Decoder("client", V5, max_packet_size=1000)
    header = b"\x30" + p.encode_varint(5000)
    with pytest.raises(ProtocolViolation) as info:
        decoder.feed(header)  # no byte of the body yet
    assert info.value.reason == "packet-too-large"
    assert info.value.code == p.PACKET_TOO_LARGE
    # a packet of exactly the limit passes
    packet = encode(Publish("t", b"x" * (1000 - 7), 0))
    assert len(packet) == 1000
    assert Decoder("client", V5, max_packet_size=1000).feed(packet)[0].payload == b"x" * 993
    with pytest.raises(ProtocolViolation):
        Decoder("client", V5, max_packet_size=999).feed(packet[:3])


def test_partial_packets_are_buffered_only_up_to_their_size():
    decoder = Decoder("client", V5, max_packet_size=100)
    packet = encode(Publish("t", b"y" * 50, 1, 3))
    assert decoder.feed(packet[:30]) == []
    assert decoder.buffered == 30
    assert decoder.feed(packet[30:] + packet[:1]) == [Publish("t", b"y" * 50, 1, 3)]
    assert decoder.buffered == 1


@given(st.binary(max_size=200), versions)
def test_random_bytes_raise_nothing_but_protocol_violations(data, version):
    for role in ("client", "server"):
        decoder = Decoder(role, version, max_packet_size=150)
        try:
            packets = decoder.feed(data)
        except ProtocolViolation as exc:
            assert exc.reason and str(exc)
            assert 0x80 <= exc.code <= 0xA2
        else:
            assert all(hasattr(packet, "type") for packet in packets)


@given(st.lists(server_packets(V5), min_size=1, max_size=3), st.data())
def test_mutated_packets_raise_nothing_but_protocol_violations(packets, data):
    wire = bytearray(b"".join(encode(packet) for packet in packets))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(wire) - 1))
        wire[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(wire)))
    decoder = Decoder("client", V5, max_packet_size=2000)
    try:
        decoder.feed(bytes(wire[:cut]))
        decoder.feed(bytes(wire[cut:]))
    except ProtocolViolation:
        pass

"""The pure parts of the MQTT frame dialects (transports.mqtt.dialect, the dialect settings):
which dialect a payload is in, the topic a message is published to, the user properties of a
joynr publish, the bounded memory of each topic's dialect."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.runtime import smrf
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import Message, MessageType, encode_frame
from pyjoynr.transports.mqtt.dialect import (
    JOYNR,
    NATIVE,
    DialectMemory,
    frame_dialect,
    publish_topic,
    user_properties,
)
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url


def message(kind: MessageType = MessageType.REQUEST, body: bytes = b"\x93\x01\x02\x03",
            **fields: object) -> Message:
    return Message(kind, "sender-1", "recipient-1", now_ms() + 60_000, body,
                   reply_to=MqttAddress("gbid", "joynr/cc/x"), **fields)  # type: ignore[arg-type]


# ====================================================================== dialect of a payload


@pytest.mark.parametrize("kind", list(MessageType))
def test_an_smrf_frame_is_joynr_and_a_native_frame_native(kind: MessageType) -> None:
    one = message(kind, custom_headers={"gb": "g1"})
    assert frame_dialect(smrf.encode(one)) == JOYNR
    assert frame_dialect(encode_frame(one)) == NATIVE


@pytest.mark.parametrize("payload", [b"", b"\x01", b"\x00\x01", b"\x02\x00", b"\x01\x01",
                                     b"\x81\xa1v\x01", b"garbage", b"{}"])
def test_what_does_not_start_with_smrf_version_1_is_read_as_native(payload: bytes) -> None:
    # (the native decoder then refuses what is no msgpack map, with its own reason)
    assert frame_dialect(payload) == NATIVE


@given(st.binary())
def test_joynr_exactly_when_the_payload_starts_with_01_00(payload: bytes) -> None:
    assert (frame_dialect(payload) == JOYNR) is payload.startswith(b"\x01\x00")


@given(st.binary(max_size=64))
def test_no_native_frame_starts_like_smrf(body: bytes) -> None:
    # a native frame is a msgpack map: its first byte is 0x80-0x8f, 0xde or 0xdf
    frame = encode_frame(message(body=body))
    assert frame[0] in range(0x80, 0x90) or frame[0] in (0xDE, 0xDF)
    assert frame_dialect(frame) == NATIVE


# ====================================================================== topics


def test_joynr_unicast_goes_to_low_and_multicast_to_its_topic() -> None:
    assert publish_topic("joynr/cc/x", JOYNR, multicast=False) == "joynr/cc/x/low"
    assert publish_topic("provider-1/news/eu", JOYNR, multicast=True) == "provider-1/news/eu"
    # joynr's C++ GCD address already ends with /low/<participantId>: that gets /low again
    assert (publish_topic("discoverydirectory_channelid/low/capabilitiesdirectory_participantid",
                          JOYNR, multicast=False)
            == "discoverydirectory_channelid/low/capabilitiesdirectory_participantid/low")


@pytest.mark.parametrize("multicast", [False, True])
def test_native_goes_to_the_topic_itself(multicast: bool) -> None:
    assert publish_topic("joynr/cc/x", NATIVE, multicast=multicast) == "joynr/cc/x"


# ====================================================================== user properties


def test_each_custom_header_is_a_c_prefixed_user_property_in_order() -> None:
    headers = {"gb": "joynrdefaultgbid", "z4": "v", "c-x": "already prefixed is kept as is"}
    assert user_properties(headers) == (("c-gb", "joynrdefaultgbid"), ("c-z4", "v"),
                                        ("c-c-x", "already prefixed is kept as is"))


def test_headers_with_an_empty_key_or_value_are_left_out() -> None:
    assert user_properties({"": "v", "k": "", "ok": "1"}) == (("c-ok", "1"),)
    assert user_properties({}) == ()


def test_the_user_properties_match_the_smrf_custom_headers() -> None:
    one = message(custom_headers={"gb": "g2", "trace": "abc"})
    frame = smrf.decode_smrf(smrf.encode(one))
    assert set(user_properties(one.custom_headers)) <= set(frame.headers)


# ====================================================================== dialect memory


def test_a_topic_not_remembered_speaks_the_backends_dialect() -> None:
    for default in (NATIVE, JOYNR):
        memory = DialectMemory(default, 10)
        assert memory.dialect_of("anything") == default


def test_the_dialect_a_topic_last_spoke_is_used() -> None:
    memory = DialectMemory(NATIVE, 10)
    memory.note("a", JOYNR)
    assert memory.dialect_of("a") == JOYNR and memory.dialect_of("b") == NATIVE
    memory.note("a", NATIVE)  # it spoke native again
    assert memory.dialect_of("a") == NATIVE
    assert len(memory) == 0  # (the default is not kept)


def test_the_memory_is_bounded_and_forgets_the_topic_noted_longest_ago() -> None:
    memory = DialectMemory(NATIVE, 3)
    for topic in ("a", "b", "c"):
        memory.note(topic, JOYNR)
    memory.note("a", JOYNR)  # noted again: now the newest
    memory.note("d", JOYNR)  # makes room: "b" goes
    assert len(memory) == 3 and memory.forgotten == 1
    assert [memory.dialect_of(t) for t in "abcd"] == [JOYNR, NATIVE, JOYNR, JOYNR]


@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.sampled_from((NATIVE, JOYNR))),
                max_size=60), st.integers(1, 5))
def test_the_memory_never_holds_more_than_its_bound(notes: list[tuple[str, str]],
                                                    bound: int) -> None:
    memory = DialectMemory(JOYNR, bound)
    last: dict[str, str] = {}
    for topic, dialect in notes:
        memory.note(topic, dialect)
        last[topic] = dialect
        assert len(memory) <= bound
        # the topic just noted is always answered in its dialect
        assert memory.dialect_of(topic) == dialect
    # a topic either speaks what it last spoke, or was forgotten (then the default)
    assert all(memory.dialect_of(t) in (d, JOYNR) for t, d in last.items())


def test_the_memory_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="dialect must be one of native, joynr"):
        DialectMemory("smrf", 1)
    with pytest.raises(ValueError, match="bound must be >= 1"):
        DialectMemory(NATIVE, 0)


# ====================================================================== settings


def test_the_dialect_setting_defaults_to_native_and_is_checked() -> None:
    assert MqttSettings().dialect == NATIVE
    assert MqttSettings(dialect="joynr").dialect == JOYNR
    with pytest.raises(ValueError, match="dialect must be one of native, joynr, not 'SMRF'"):
        MqttSettings(dialect="SMRF")


def test_a_backends_url_may_name_its_dialect() -> None:
    url = parse_broker_url("mqtt://127.0.0.1:1883?dialect=joynr&version=5")
    assert (url.dialect, url.version) == (JOYNR, "5")
    assert str(url) == "mqtt://127.0.0.1:1883?version=5&dialect=joynr"
    assert parse_broker_url(str(url)) == url
    assert parse_broker_url("mqtt://127.0.0.1:1883").dialect is None
    settings = MqttSettings(dialect="native", backends={
        "a": "mqtt://127.0.0.1:1", "b": "mqtt://127.0.0.1:2?dialect=joynr"})
    assert [settings.dialect_of(parse_broker_url(u)) for u in settings.backends.values()] == [
        NATIVE, JOYNR]
    assert MqttSettings(dialect="joynr").dialect_of(parse_broker_url("mqtt://h:1")) == JOYNR
    with pytest.raises(ValueError, match="dialect must be one of native, joynr"):
        parse_broker_url("mqtt://127.0.0.1:1883?dialect=smrf")
    with pytest.raises(ValueError, match="dialect must be one of native, joynr"):
        MqttSettings(backends={"a": "mqtt://127.0.0.1:1?dialect=x"})

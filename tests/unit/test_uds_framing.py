"""joynr's Unix domain socket frames (transports.uds.framing): written as joynr's runtimes
write them, read back in any cut of the stream, and what cannot be read refused with its
reason before the payload is held."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.runtime.messages import FrameError
from pyjoynr.transports.uds.framing import (
    INIT_COOKIE,
    MESSAGE_COOKIE,
    FrameReader,
    frame,
    frames,
    init_frame,
)


def test_a_frame_is_cookie_big_endian_length_and_payload() -> None:
    # byte for byte as joynr's MagicCookieUtil and UdsFrameBufferV1 write them
    assert init_frame(b'{"id":"x"}') == b"MJI1\x00\x00\x00\x0a" + b'{"id":"x"}'
    assert frame(b"abc") == b"MJM1\x00\x00\x00\x03abc"
    assert frames([b"a", b"", b"bc"]) == (b"MJM1\x00\x00\x00\x01a" + b"MJM1\x00\x00\x00\x00"
                                          + b"MJM1\x00\x00\x00\x02bc")
    assert INIT_COOKIE == b"MJI1" and MESSAGE_COOKIE == b"MJM1"


@given(st.lists(st.binary(max_size=300), max_size=8), st.lists(st.integers(1, 64), min_size=1))
def test_frames_are_read_back_whatever_the_stream_is_cut_into(payloads: list[bytes],
                                                             cuts: list[int]) -> None:
    stream = init_frame(b"hello") + b"".join(frame(p) for p in payloads)
    reader = FrameReader(1024)
    got: list[tuple[bool, bytes]] = []
    offset = i = 0
    while offset < len(stream):
        step = cuts[i % len(cuts)]
        got += reader.feed(stream[offset:offset + step])
        offset += step
        i += 1
    assert got == [(True, b"hello"), *((False, p) for p in payloads)]
    assert reader.buffered == 0 and not reader.mid_frame


@given(st.binary(min_size=8, max_size=64))
def test_any_bytes_are_read_or_refused_with_a_reason(data: bytes) -> None:
    reader = FrameReader(16)
    try:
        for is_init, payload in reader.feed(data):
            assert len(payload) <= 16
            assert is_init or data[:4] == INIT_COOKIE
    except FrameError as exc:
        assert exc.reason in ("bad-cookie", "oversized-closed", "bad-init")
    assert reader.buffered <= 16 + 8


@pytest.mark.parametrize(("data", "reason"), [
    (b"MJM1\x00\x00\x00\x00", "bad-cookie"),  # a message frame before the init frame
    (b"XXXX\x00\x00\x00\x00", "bad-cookie"),
    (b"MJM1" + struct.pack(">I", 2**32 - 1), "bad-cookie"),
    (b"MJI1" + struct.pack(">I", 1025), "bad-init"),  # an init frame over 1 KiB, told from
])                                                     # the header
def test_what_cannot_be_read_is_refused_with_its_reason(data: bytes, reason: str) -> None:
    with pytest.raises(FrameError) as info:
        FrameReader(1024).feed(data)
    assert info.value.reason == reason


def test_a_message_frame_over_the_limit_is_refused_from_its_header() -> None:
    reader = FrameReader(1024)
    reader.feed(init_frame(b"a"))
    with pytest.raises(FrameError) as info:
        reader.feed(b"MJM1" + struct.pack(">I", 2**32 - 1))
    assert info.value.reason == "oversized-closed"


def test_the_init_cookie_after_the_init_frame_is_refused() -> None:
    reader = FrameReader(1024)
    assert reader.feed(init_frame(b"a")) == [(True, b"a")]
    with pytest.raises(FrameError) as info:
        reader.feed(init_frame(b"b"))
    assert info.value.reason == "bad-cookie"


def test_a_frame_begun_is_held_until_complete() -> None:
    reader = FrameReader(1024, expect_init=False)
    assert reader.feed(frame(b"abcdef")[:10]) == []
    assert reader.mid_frame and reader.buffered == 10
    assert reader.feed(b"cdef") == [(False, b"abcdef")]
    assert not reader.mid_frame


def test_a_runtime_writes_joynrs_frames_on_the_socket_unless_told_otherwise() -> None:
    from pyjoynr.libjoynr import LibjoynrConfig  # noqa: PLC0415
    from pyjoynr.libjoynr.advanced import UdsClientSettings  # noqa: PLC0415

    assert LibjoynrConfig().uds_settings.dialect == "joynr"  # as joynr's runtimes
    native = LibjoynrConfig(uds=UdsClientSettings(dialect="native"))
    assert native.uds_settings.dialect == "native"
    # joynr's dialect brings joynr's frames, whatever the socket's settings say
    forced = LibjoynrConfig(dialect="joynr", uds=UdsClientSettings(dialect="native",
                                                                  max_queued=5))
    assert forced.uds_settings == UdsClientSettings(dialect="joynr", max_queued=5)
    with pytest.raises(ValueError, match="dialect must be one of"):
        UdsClientSettings(dialect="smrf")
    with pytest.raises(TypeError, match="uds must be UdsClientSettings"):
        LibjoynrConfig(uds="unix:///x")  # type: ignore[arg-type]

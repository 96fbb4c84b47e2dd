"""The connection's own reader of binary frames with websockets' parser behind it
(transports/websocket/framing.py: FrameReader), against websockets' parser alone (the oracle):
random sequences of frames of every kind, well-formed and not, split at random points into
the reads a connection receives, must give the same messages and events per read, the same
bytes to send (pongs, close frames, the end of the stream), the same close codes and reasons
and the same errors, on a server's side (masked frames) and on a client's (unmasked)."""

from __future__ import annotations

import struct
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.frames import OP_BINARY, Frame
from websockets.protocol import CLIENT, CLOSED, OPEN, SERVER, Protocol
from websockets.utils import apply_mask

from pyjoynr.transports.websocket.framing import (
    FrameReader,
    binary_frames,
    fast_reading_supported,
    read_binary_frames,
)

#: the connections' limit in these tests: small, so that frames over it are cheap to make
MAX_SIZE = 300

#: (opcode, fin) of the frames drawn; with RSV bits, wrong masks and lengths besides
KINDS = {
    "binary": (0x2, True), "text": (0x1, True), "ping": (0x9, True), "pong": (0xA, True),
    "close": (0x8, True), "first-fragment": (0x2, False), "first-text-fragment": (0x1, False),
    "continuation": (0x0, False), "last-continuation": (0x0, True),
    "fragmented-ping": (0x9, False), "bad-opcode": (0x3, True), "bad-control-opcode": (0xB, True),
}


@st.composite
def frames(draw: st.DrawFn, masked: bool) -> bytes:
    """One frame's bytes: mostly well-formed binary frames (as joynr sends them), and every
    other kind, with an RSV bit, the wrong mask bit, a length in a longer form than needed,
    a length over the limit or a control frame too long now and then."""
    kind = draw(st.sampled_from(["binary"] * 6 + sorted(KINDS) + ["close-payload", "garbage"]))
    if kind == "garbage":
        return draw(st.binary(min_size=1, max_size=12))
    if kind == "close-payload":
        opcode, fin = 0x8, True
        code = draw(st.sampled_from([1000, 1001, 1008, 1011, 3000, 4999, 999, 1005, 1015, 5000]))
        reason = draw(st.sampled_from([b"", b"bye", "gr\u00fc\u00df".encode(), b"\xff\xfe"]))
        payload = draw(st.sampled_from([struct.pack("!H", code) + reason, b"", b"\x03"]))
    else:
        opcode, fin = KINDS[kind]
        if kind == "text":
            payload = draw(st.sampled_from([b"hello", b"\xc3\x28", b""]))
        elif draw(st.integers(0, 3)) == 0:
            # a payload that looks like binary frames: read as frames if the reader took the
            # middle of a frame for a frame boundary
            inner = draw(st.lists(st.binary(max_size=20), min_size=1, max_size=3))
            payload = b"".join(binary_frames(inner, _Masks() if masked else None))
        else:
            payload = draw(st.binary(max_size=40) | st.binary(min_size=120, max_size=MAX_SIZE + 20))
    head1 = (0x80 if fin else 0) | opcode
    if draw(st.integers(0, 19)) == 0:
        head1 |= draw(st.sampled_from([0x40, 0x20, 0x10]))  # an RSV bit
    mask_bit = masked if draw(st.integers(0, 24)) else not masked  # now and then the wrong one
    n = len(payload)
    declared = n
    if draw(st.integers(0, 29)) == 0:
        declared = draw(st.sampled_from([MAX_SIZE + 1, 65536, 1 << 40, (1 << 63) + 5]))
    form = draw(st.sampled_from(["short", "short", "short", "16", "64"]))
    if declared < 126 and form == "short":
        header = struct.pack("!BB", head1, declared | (0x80 if mask_bit else 0))
    elif declared < 65536 and form != "64":
        header = struct.pack("!BBH", head1, 126 | (0x80 if mask_bit else 0), declared)
    else:
        header = struct.pack("!BBQ", head1, 127 | (0x80 if mask_bit else 0), declared)
    if mask_bit:
        key = draw(st.just(b"\0\0\0\0") | st.binary(min_size=4, max_size=4))
        return header + key + apply_mask(payload, key)
    return header + payload


@st.composite
def streams(draw: st.DrawFn, masked: bool) -> tuple[list[tuple[bytes, str | None]], bool]:
    """A stream of frames split into reads at random points (each with what this end does
    before it), and whether it ends (EOF) after them; sometimes cut inside its last frame."""
    data = b"".join(draw(st.lists(frames(masked), min_size=1, max_size=12)))
    if draw(st.booleans()):
        data = data[:draw(st.integers(0, len(data)))]
    cuts = sorted(set(draw(st.lists(st.integers(0, len(data)), max_size=8))))
    reads = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    reads = [r for r in reads if r]
    # now and then this end closes (close()) or fails the connection (no pong in time)
    # before a read
    actions = draw(st.lists(st.sampled_from([None] * 8 + ["close", "fail"]),
                            min_size=len(reads), max_size=len(reads)))
    return list(zip(reads, actions, strict=True)), draw(st.booleans())


def sent_frames(writes: list[bytes], side: Any) -> list[Any]:
    """What a protocol object wrote, comparable although a client masks with random keys:
    each frame as (opcode, fin, payload), the end of the stream as "EOF"."""
    out: list[Any] = []
    for data in writes:
        if not data:
            out.append("EOF")
            continue
        reader = Protocol(CLIENT if side is SERVER else SERVER, max_size=None)
        reader.receive_data(data)
        out += [(e.opcode, e.fin, bytes(e.data)) for e in reader.events_received()]
    return out


def received(events: list[Any]) -> list[Any]:
    """Events as comparable values: a binary message read by the own reader as websockets'
    parser gives it (a final binary frame)."""
    return [(OP_BINARY, True, e) if type(e) is bytes else (e.opcode, e.fin, bytes(e.data))
            for e in events]


def outcome(protocol: Protocol) -> tuple[Any, ...]:
    exc = protocol.parser_exc
    return (protocol.state, protocol.close_rcvd, protocol.close_sent, protocol.cur_size,
            type(exc), str(exc) if exc is not None else None)


def run(reads: list[tuple[bytes, str | None]], eof: bool, side: Any, *,
        own: bool) -> tuple[list[Any], FrameReader]:
    protocol = Protocol(side, state=OPEN, max_size=MAX_SIZE)
    reader = FrameReader(protocol)
    steps: list[Any] = []
    for data, action in reads:
        if action == "close" and protocol.state is OPEN:
            protocol.send_close(1000, "bye")
        elif action == "fail" and protocol.state is not CLOSED:
            protocol.fail(1011, "keepalive ping timeout")
        if own:
            events = received(reader.feed(data))
        else:
            protocol.receive_data(data)
            events = received(protocol.events_received())
        steps.append((events, sent_frames(protocol.data_to_send(), side), outcome(protocol)))
    if eof:
        if own:
            reader.feed_eof()
        else:
            protocol.receive_eof()
        steps.append(([], sent_frames(protocol.data_to_send(), side), outcome(protocol)))
    return steps, reader


@pytest.mark.parametrize("side", [SERVER, CLIENT], ids=["server-reads-masked", "client-reads"])
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_own_reader_with_websockets_behind_it_reads_as_websockets_alone(
        side: Any, data: st.DataObject) -> None:
    reads, eof = data.draw(streams(masked=side is SERVER))
    expected, _ = run(reads, eof, side, own=False)
    got, _ = run(reads, eof, side, own=True)
    assert got == expected


@pytest.mark.parametrize("side", [SERVER, CLIENT], ids=["server-reads-masked", "client-reads"])
def test_binary_frames_are_read_by_the_own_reader_across_reads(side: Any) -> None:
    """The usual traffic (binary frames of every length class, the reads cutting through
    them) is read by the own reader, not by websockets' parser; a ping in between goes to
    websockets and is answered, and the frames after it are read again by the own reader."""
    payloads = [bytes([i]) * n for i, n in enumerate([0, 1, 125, 126, 200, 65535, 65536])]
    parts = binary_frames(payloads, None if side is CLIENT else _Masks())
    stream = b"".join(parts)
    ping = Frame(0x9, b"hi").serialize(mask=side is SERVER)  # type: ignore[arg-type]
    protocol = Protocol(side, state=OPEN, max_size=1 << 20)
    reader = FrameReader(protocol)
    assert reader.enabled and fast_reading_supported(protocol)
    got: list[Any] = []
    for at in range(0, len(stream), 7000):  # reads of 7,000 bytes cut through the frames
        got += reader.feed(stream[at:at + 7000])
    assert got == payloads and reader.frames_read == len(payloads)
    got = reader.feed(ping + stream)
    assert [type(e) for e in got] == [Frame] * (1 + len(payloads))  # websockets read the rest
    assert sent_frames(protocol.data_to_send(), side) == [(0xA, True, b"hi")]
    got = reader.feed(stream)
    assert got == payloads and reader.frames_read == 2 * len(payloads)


@pytest.mark.parametrize("side", [SERVER, CLIENT], ids=["server-reads-masked", "client-reads"])
def test_a_frame_websockets_is_in_the_middle_of_is_left_to_it(side: Any) -> None:
    """A pong cut after its header, whose payload is a binary frame's bytes: websockets has
    nothing buffered then but stands inside a frame, so the next read is its, not the own
    reader's (which would read the pong's payload as a message)."""
    masked = side is SERVER
    inner = b"".join(binary_frames([b"not a message"], _Masks() if masked else None))
    # (a client's pong masked with a key of zeros: its payload on the wire is that frame)
    pong = (bytes((0x8A, 0x80 | len(inner))) + bytes(4) + inner if masked
            else bytes((0x8A, len(inner))) + inner)
    cut = 6 if masked else 2  # its header (and key): consumed by websockets' parser
    protocol = Protocol(side, state=OPEN, max_size=MAX_SIZE)
    reader = FrameReader(protocol)
    first = reader.feed(pong[:cut])
    assert first == [] and not protocol.reader.buffer
    rest = reader.feed(pong[cut:] + b"".join(binary_frames([b"msg"], _Masks() if masked
                                                             else None)))
    assert received(rest) == [(0xA, True, inner), (OP_BINARY, True, b"msg")]
    assert protocol.state is OPEN and reader.frames_read == 0


@pytest.mark.parametrize("side", [SERVER, CLIENT], ids=["server-reads-masked", "client-reads"])
@pytest.mark.parametrize("declared", [MAX_SIZE, MAX_SIZE + 1, 65536, 1 << 40])
@pytest.mark.parametrize("form", ["16", "64"])
def test_a_header_cut_anywhere_is_decided_where_websockets_decides(
        side: Any, declared: int, form: str) -> None:
    """A binary frame's header (a length in 16 or 64 bits, over the limit or not, the
    masking key) cut at every two points: websockets' parser refuses a length over the limit as
    soon as the length is there, before the key; the own reader must not wait for more."""
    if form == "16" and declared >= 65536:
        return
    masked = side is SERVER
    mask_bit = 0x80 if masked else 0
    header = (struct.pack("!BBH", 0x82, 126 | mask_bit, declared) if form == "16"
              else struct.pack("!BBQ", 0x82, 127 | mask_bit, declared))
    stream = header + (bytes(4) if masked else b"") + bytes(min(declared, 8))
    for first in range(1, len(stream)):
        for second in range(first, len(stream) + 1):  # (== first: two reads, not three)
            cuts = [0, first, second, len(stream)]
            reads = [(stream[a:b], None) for a, b in pairwise(cuts) if b > a]
            for eof in (False, True):
                expected, _ = run(reads, eof, side, own=False)
                got, _ = run(reads, eof, side, own=True)
                assert got == expected, (first, second, eof)


class _Masks:
    """Masking keys that are not all zeros (so that a frame read unmasked would differ)."""

    def next(self) -> bytes:
        return b"\x01\x02\x03\x04"


def test_read_binary_frames_says_where_it_stopped_and_what_a_begun_frame_needs() -> None:
    frame = b"".join(binary_frames([b"abc"]))
    out: list[Any] = []
    assert read_binary_frames(frame + frame, 0, masked=False, max_size=10, payloads=out) == (10, 0)
    assert out == [b"abc", b"abc"]
    assert read_binary_frames(frame[:1], 0, masked=False, max_size=10, payloads=out) == (0, 2)
    assert read_binary_frames(frame[:3], 0, masked=False, max_size=10, payloads=out) == (0, 5)
    # masked: the key counts; a frame over the limit and a text frame are not read
    assert read_binary_frames(b"\x82\xfe\x01", 0, masked=True, max_size=10,
                              payloads=out) == (0, 4)  # the length first, then the key
    assert read_binary_frames(b"\x82\xfe\x00\x05", 0, masked=True, max_size=10,
                              payloads=out) == (0, 13)
    assert read_binary_frames(frame, 0, masked=False, max_size=2, payloads=out) == (0, 0)
    assert read_binary_frames(b"\x81\x00", 0, masked=False, max_size=2, payloads=out) == (0, 0)
    assert read_binary_frames(frame, 0, masked=True, max_size=10, payloads=out) == (0, 0)
    assert len(out) == 2

"""The binary data frames the connections write themselves, read back by websockets' own
parser (the oracle), and compared byte for byte with websockets' own writer where no mask
makes them differ."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.frames import OP_BINARY, Frame
from websockets.protocol import CLIENT, SERVER, Protocol

from pyjoynr.transports.websocket.framing import MaskSource, binary_frames

#: every length class of the header: 7 bits, 16 bits, 64 bits, and their edges
LENGTHS = [0, 1, 125, 126, 127, 1000, 65535, 65536, 70_000]


def read_back(parts: list[bytes], *, from_client: bool) -> list[bytes]:
    """The binary messages websockets reads from these bytes, on the receiving side (a server
    reads a client's frames and requires them masked; a client requires them unmasked)."""
    reader = Protocol(SERVER if from_client else CLIENT, max_size=None)
    reader.receive_data(b"".join(parts))
    events = reader.events_received()
    assert reader.state.name == "OPEN", reader.data_to_send()  # (else: failed, a close frame)
    assert all(isinstance(e, Frame) and e.opcode is OP_BINARY and e.fin for e in events)
    return [bytes(e.data) for e in events if isinstance(e, Frame)]


@pytest.mark.parametrize("length", LENGTHS)
def test_a_servers_frame_is_the_bytes_websockets_writes(length: int) -> None:
    payload = bytes(range(256)) * (length // 256) + bytes(length % 256)
    ours = b"".join(binary_frames([payload]))
    assert ours == Frame(OP_BINARY, payload).serialize(mask=False)
    assert read_back([ours], from_client=False) == [payload]


@pytest.mark.parametrize("length", LENGTHS)
def test_a_clients_frame_is_masked_and_reads_back_as_sent(length: int) -> None:
    payload = b"\x5a" * length
    parts = binary_frames([payload], MaskSource())
    header, key, masked = parts
    assert header[1] & 0x80 and len(key) == 4
    assert length < 8 or masked != payload  # (a mask of zeros is possible, not likely)
    assert read_back(parts, from_client=True) == [payload]
    # websockets' client writes the same header
    assert Frame(OP_BINARY, payload).serialize(mask=True)[:len(header)] == header


def test_an_unmasked_frame_from_a_client_is_refused_by_the_oracle() -> None:
    """(The oracle tells masked from unmasked: a server fails a connection whose client does
    not mask.)"""
    reader = Protocol(SERVER, max_size=None)
    reader.receive_data(b"".join(binary_frames([b"payload"])))
    assert reader.events_received() == [] and reader.state.name == "CLOSING"
    # its close frame: 1002, protocol error
    assert reader.data_to_send()[0][2:4] == (1002).to_bytes(2, "big")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=70_000), max_size=8), st.booleans())
def test_any_batch_reads_back_in_order(payloads: list[bytes], from_client: bool) -> None:
    parts = binary_frames(payloads, MaskSource(keys=3) if from_client else None)
    assert read_back(parts, from_client=from_client) == payloads


def test_masking_keys_are_drawn_in_blocks_and_never_handed_out_twice() -> None:
    source = MaskSource(keys=16)
    keys = [source.next() for _ in range(16 * 5 + 3)]
    assert all(type(k) is bytes and len(k) == 4 for k in keys)
    # 332 bytes of the system's random source: a repeated key would be a bug, not chance
    # (p < 1e-5 for 83 keys of 32 bits)
    assert len(set(keys)) == len(keys)
    with pytest.raises(ValueError, match="keys must be >= 1"):
        MaskSource(keys=0)

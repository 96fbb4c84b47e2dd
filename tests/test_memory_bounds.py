"""Hostile loads against a cluster controller process: its memory (RSS) stays bounded.

The cluster controller runs as a subprocess (``python -m pyjoynr.cluster_controller``, the shipped
configuration with the embedded broker and GCD, ports chosen freely), so that the resident set
size read from ``/proc/<pid>/status`` is the CC's alone. Each test reads it once the CC is up,
sends its load, waits until the CC has taken all of it, and reads it again: the peak resident
set size (VmHWM), so that what the load cost while it was being handled counts too.

The bounds stated here are far below what the same loads cost before the queues, the
fragment reassembly and the embedded broker were bounded (figures in the comments).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiomqtt
import pytest
from websockets.asyncio.client import connect as ws_connect

from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import INT64_MAX, Message, MessageType, encode_frame
from pyjoynr.transports.dialects import encode_init
from tests.support.processes import wait_for_line

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024
log = logging.getLogger(__name__)  # the figures: pytest -o log_cli=true --log-cli-level=INFO


def rss_bytes(pid: int, field: str = "VmHWM") -> int:
    """The peak resident set size of process ``pid`` so far (VmHWM; VmRSS: the current)."""
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
    assert match, status
    return int(match.group(1)) * 1024


class CcProcess:
    """A cluster controller process; ``ws_url``, ``broker_port`` and ``id`` from its log."""

    def __init__(self, tmp_path: Path, **env: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pyjoynr.cluster_controller"],
            cwd=ROOT,
            env={**os.environ, "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(tmp_path),
                 "JOYNR_CC__WEBSOCKET__PORT": "0", "JOYNR_CC__EMBEDDED_BROKER__PORT": "0",
                 "JOYNR_CC__ADMIN__PORT": "0",
                 **env},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = wait_for_line(self.proc, "started: libjoynr runtimes connect to")
        text = "".join(lines)
        broker = re.search(r"embedded MQTT broker .* listening on mqtt://127\.0\.0\.1:(\d+)",
                           text)
        ws = re.search(r"(ws://127\.0\.0\.1:\d+/)", text)
        cc_id = re.search(r"cluster controller (cc-[0-9a-f-]+)", text)
        assert broker and ws and cc_id, text
        self.broker_port = int(broker.group(1))
        self.ws_url = ws.group(1)
        self.id = cc_id.group(1)

    @property
    def rss(self) -> int:
        """The peak RSS so far."""
        return rss_bytes(self.proc.pid)

    def stop(self) -> str:
        self.proc.terminate()
        try:
            out, _ = self.proc.communicate(timeout=20)
        finally:
            self.proc.kill()
        return out


@pytest.fixture
def cc_process(tmp_path: Path) -> Iterator[CcProcess]:
    process = CcProcess(tmp_path)
    try:
        yield process
    finally:
        process.stop()


async def settled_rss(cc: CcProcess) -> int:
    """RSS after the CC's start-up work (GCD, removeStale, first sweeps) has settled."""
    await asyncio.sleep(1.0)
    return cc.rss


# ====================================================================== 4. queues by bytes


async def test_queued_messages_are_bounded_by_bytes(cc_process: CcProcess) -> None:
    """100 one-way messages of 3 MB for recipients nobody registered: they wait in the
    router's queues, bounded by bytes (64 MiB in all, half of it per sending connection), not
    only by count. Before: 39 MB -> 626 MB RSS (bounded by count only, all 100 waited)."""
    cc = cc_process
    before = await settled_rss(cc)
    body = os.urandom(3 * MB)  # incompressible, as a hostile client would send
    async with ws_connect(cc.ws_url, max_size=None, compression=None) as ws:
        await ws.send(encode_init(f"hostile-{uuid.uuid4().hex[:8]}"))
        for i in range(100):
            message = Message(MessageType.ONE_WAY, f"hostile-sender-{i}", f"nobody-{i}",
                              now_ms() + 600_000, body)
            await ws.send(encode_frame(message))
        # the CC handles a connection's messages in order: once the pong is back, it has
        # taken all 100
        await asyncio.wait_for(await ws.ping(), 60)
        loaded = cc.rss
    growth = loaded - before
    log.info("queues: peak RSS %.0f MB before, %.0f MB after 100 x 3 MB (+%.0f MB)",
             before / MB, loaded / MB, growth / MB)
    # 32 MiB of queued messages (each holds its frame and its body, ~6 MB for a 3 MB
    # message) plus the allocator's slack for the frames read and dropped
    assert growth < 100 * MB, f"RSS grew by {growth / MB:.0f} MB"


# ====================================================================== 5. fragments


def client_frame(opcode: int, fin: bool, payload: bytes) -> bytes:
    """A masked client frame (mask 0: the payload stays as it is), payload < 126 bytes."""
    assert len(payload) < 126
    return bytes([(0x80 if fin else 0) | opcode, 0x80 | len(payload)]) + b"\0\0\0\0" + payload


async def raw_websocket(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A websocket connection by hand: the opening handshake, nothing else."""
    match = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
    assert match
    host, port, path = match.group(1), int(match.group(2)), match.group(3)
    reader, writer = await asyncio.open_connection(host, port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                 f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                 "Sec-WebSocket-Version: 13\r\n\r\n".encode())
    response = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert response.startswith(b"HTTP/1.1 101"), response
    return reader, writer


async def close_code(reader: asyncio.StreamReader, timeout_s: float = 60) -> int | None:
    """Read the server's frames until its close frame; its code (None: closed without one)."""
    async with asyncio.timeout(timeout_s):
        while True:
            try:
                head = await reader.readexactly(2)
            except asyncio.IncompleteReadError:
                return None
            length = head[1] & 0x7F
            if length == 126:
                length = int.from_bytes(await reader.readexactly(2), "big")
            elif length == 127:
                length = int.from_bytes(await reader.readexactly(8), "big")
            payload = await reader.readexactly(length)
            if head[0] & 0x0F == 0x8:
                return int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None


def fragmented(count: int, size: int) -> bytes:
    """One binary message in ``count`` fragments of ``size`` bytes each."""
    first = client_frame(0x2, False, b"x" * size)
    middle = client_frame(0x0, False, b"x" * size)
    last = client_frame(0x0, True, b"x" * size)
    return first + middle * (count - 2) + last


@pytest.mark.parametrize("size", [1, 2])
async def test_a_message_in_a_million_fragments_is_refused(cc_process: CcProcess,
                                                           size: int) -> None:
    """One message of 1,000,000 fragments of one or two bytes (7 or 8 MB on the wire): the CC
    keeps only the bytes and closes the connection (1009) after max_fragments_per_message
    (4096). Before: every fragment was kept as an object of its own (two-byte fragments: peak
    RSS +135 MB here; one-byte ones are CPython's cached bytes objects), the whole message was
    reassembled and the connection stayed (until its keep-alive failed, 1011)."""
    cc = cc_process
    before = await settled_rss(cc)
    reader, writer = await raw_websocket(cc.ws_url)
    init = encode_init(f"fragments-{uuid.uuid4().hex[:8]}")
    writer.write(client_frame(0x2, True, init))
    writer.write(fragmented(1_000_000, size))
    with contextlib.suppress(ConnectionError):  # closed by the CC while still being written
        await writer.drain()
    code = await close_code(reader)
    writer.close()
    loaded = cc.rss
    growth = loaded - before
    log.info("fragments: peak RSS %.0f MB before, %.0f MB after (+%.0f MB)", before / MB,
             loaded / MB, growth / MB)
    assert code == 1009
    assert growth < 20 * MB, f"RSS grew by {growth / MB:.0f} MB"


# ====================================================================== 8. embedded broker


async def test_an_oversized_publish_never_reaches_the_cc_through_the_embedded_broker(
        cc_process: CcProcess) -> None:
    """A 20 MB publish to the CC's topic on the embedded broker: the broker closes the
    publisher's connection when the fixed header announces it (its limit is the CC's
    [mqtt] max_message_bytes plus room for topic and properties), before reading the body.
    Before: amqtt took it and passed it on, and the CC received it (RSS +128 MB)."""
    cc = cc_process
    before = await settled_rss(cc)
    refused = False
    async with aiomqtt.Client("127.0.0.1", cc.broker_port, identifier="hostile-publisher",
                              protocol=aiomqtt.ProtocolVersion.V311, timeout=10) as client:
        try:
            await client.publish(f"joynr/cc/{cc.id}/hostile", os.urandom(20 * MB), qos=1,
                                 timeout=5)
        except aiomqtt.MqttError:
            refused = True
    loaded = cc.rss
    growth = loaded - before
    log.info("embedded broker: peak RSS %.0f MB before, %.0f MB after a 20 MB publish "
             "(+%.0f MB)", before / MB, loaded / MB, growth / MB)
    out = cc.stop()
    assert refused, "the broker acknowledged a 20 MB publish"
    assert "announced a packet of 20971" in out, out[-3000:]
    assert "MQTT: refused (oversized)" not in out  # the CC never received it
    assert growth < 10 * MB, f"RSS grew by {growth / MB:.0f} MB"


# ====================================================================== 6. expiry, in a process


async def test_messages_with_absurd_expiries_do_not_outlive_the_longest_wait(
        tmp_path: Path) -> None:
    """Messages that expire at INT64_MAX, for recipients nobody registers, leave the queues
    after max_queue_wait_ms (here 1 s) and their memory with them."""
    cc = CcProcess(tmp_path, JOYNR_CC__ROUTER__MAX_QUEUE_WAIT_MS="1000")
    try:
        before = await settled_rss(cc)
        body = os.urandom(100 * 1024)
        async with ws_connect(cc.ws_url, max_size=None, compression=None) as ws:
            await ws.send(encode_init(f"forever-{uuid.uuid4().hex[:8]}"))
            for i in range(20):
                await ws.send(encode_frame(Message(MessageType.ONE_WAY, f"forever-{i}",
                                                   f"nobody-{i}", INT64_MAX, body)))
            await asyncio.wait_for(await ws.ping(), 60)
        await asyncio.sleep(2.0)
        out = cc.stop()
    finally:
        cc.proc.kill()
    # the first drop is logged in full (the others are counted: rate-limited warnings)
    assert "longer than a queue keeps any message (1000 ms)" in out, out[-3000:]
    assert "'dropped-queue-wait-exceeded': 20" in out, out[-3000:]
    assert before > 0

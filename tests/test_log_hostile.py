"""Hostile input aimed at the cluster controller's log, against real CCs.

A raw websocket client and a raw MQTT client (through a real mosquitto) send strings with a
forged log line and terminal escapes, and floods of malformed frames. The log is what a real
handler writes (a StreamHandler on the root logger, in the programs' format, into a StringIO):

- log injection: no forged line appears; the strings are there, escaped;
- log amplification: a flood of one peer writes the first refusal in full and then summaries
  whose counts add up to the flood, while the counters count every refused frame.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import logging
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import msgpack
import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import encode_frame
from tests.support.radio import Country, Station
from tests.test_mqtt_hostile import mqtt_of, start_scene
from tests.test_websocket_hostile import (
    Legit,
    RawClient,
    assert_attacker_still_routed,
    build_legit,
    registered_raw,
    start_cc,
    valid_frame,
)

pytestmark = pytest.mark.network

WAIT_S = 5.0
FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"  # the programs' format
#: what a real line of that format starts with
REAL_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL)"
                       r" +[\w.]+: ")
FORGED_LINE = "1999-12-31 23:59:59,999 CRITICAL cluster_controller: FORGED admin login"
#: a newline, a complete log line of the programs' format, and terminal escapes
HOSTILE = f"hostile\n{FORGED_LINE}\r\x1b[2K\x1b[31m"
ESCAPED = "hostile\\n1999-12-31 23:59:59,999 CRITICAL cluster_controller: FORGED admin login" \
          "\\r\\x1b[2K\\x1b[31m"
SUMMARY = re.compile(r"(\d+) more '([\w-]+)' from (.+) in the last \d+ s \(repeats are counted, "
                     r"not logged\)$", re.M)


@pytest.fixture
def log_text(caplog: pytest.LogCaptureFixture) -> Iterator[io.StringIO]:
    """Everything the process logs at INFO and above, as a real handler writes it."""
    caplog.set_level(logging.INFO)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield stream
    finally:
        root.removeHandler(handler)


def assert_no_forged_line(text: str) -> None:
    lines = text.splitlines()
    assert lines, "nothing was logged"
    for line in lines:
        # every line is a real one (or a traceback's, which would not mention the forgery)
        assert REAL_LINE.match(line) or "FORGED" not in line, f"forged line: {line!r}"
        assert not line.startswith(FORGED_LINE[:10]), f"forged line: {line!r}"
    assert "\x1b" not in text and "\r" not in text


def warning_lines(text: str, logger: str) -> list[str]:
    return [line for line in text.splitlines()
            if REAL_LINE.match(line) and f" WARNING {logger}: " in line]


def total_refused(lines: list[str], reason: str, peer: str) -> int:
    """How many refusals ``lines`` account for: one per line in full, plus the summaries'."""
    total = 0
    for line in lines:
        summary = SUMMARY.search(line)
        if summary is None:
            total += 1
        else:
            assert (summary.group(2), summary.group(3)) == (reason, peer), line
            total += int(summary.group(1))
    return total


# ====================================================================== websocket


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


@pytest.fixture
async def cc(stack: AsyncExitStack, tmp_path: Path) -> ClusterController:
    return await start_cc(stack, tmp_path)


@pytest.fixture
async def legit(stack: AsyncExitStack, cc: ClusterController, log_text: io.StringIO) -> Legit:
    return await build_legit(stack, cc)


async def test_websocket_strings_cannot_forge_log_lines(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        log_text: io.StringIO) -> None:
    # a client id (logged when it connects), a message id with a spoofed sender (refused by
    # the server) and an expired one (dropped by the router); connections are logged
    # rate-limited per host: the window of the legitimate clients' lines is closed first, so
    # that the raw client's line is logged in full
    cc.warnings.flush(now=time.monotonic() + cc.warnings.limiter.interval_s)
    raw = await RawClient.open(stack, cc.websocket_address.url, f"raw-{HOSTILE}")
    await raw.register()
    spoofed, _ = raw.radio_request(legit, Station("spoofed", Country.AUSTRIA),
                                   sender=legit.proxy.participant_id)
    spoofed = dataclasses.replace(spoofed, id=f"spoofed-{HOSTILE}", raw=None)
    expired, _ = raw.radio_request(legit, Station("expired", Country.AUSTRIA),
                                   expiry_date_ms=now_ms() - 1000)
    expired = dataclasses.replace(expired, id=f"expired-{HOSTILE}", raw=None)
    await raw.send(encode_frame(spoofed))
    await raw.send(encode_frame(expired))
    await assert_attacker_still_routed(raw, legit)
    assert cc.websocket.counters["spoofed-sender"] == 1
    assert cc.telemetry.counters["dropped-expired"] == 1

    text = log_text.getvalue()
    assert_no_forged_line(text)
    lines = text.splitlines()
    assert any(" INFO    pyjoynr.transports.websocket.server: " in line and f"raw-{ESCAPED}" in line
               for line in lines), text
    assert any(" WARNING pyjoynr.transports.websocket.server: " in line
               and f"spoofed-{ESCAPED}" in line for line in lines), text
    assert any(" WARNING pyjoynr.runtime.router: " in line and f"expired-{ESCAPED}" in line
               for line in lines), text


FLOOD = 5000


async def test_a_websocket_flood_of_bad_frames_writes_a_bounded_log(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        log_text: io.StringIO) -> None:
    raw = await registered_raw(stack, cc)
    before = cc.websocket.counters.copy()
    logged_before = len(log_text.getvalue())
    bad = msgpack.packb(valid_frame(s=42), use_bin_type=True)  # bad-field: sender
    for _ in range(FLOOD):
        await raw.send(bad)
    await assert_attacker_still_routed(raw, legit)  # frames are handled in order: all refused

    assert cc.websocket.counters - before == {"bad-field": FLOOD}  # every one counted
    lines = warning_lines(log_text.getvalue(), "pyjoynr.transports.websocket.server")
    assert 1 <= len(lines) <= 2, lines  # the first in full (and a summary if a minute passed)
    assert "refused" in lines[0] and raw.client_id in lines[0] and "sender" in lines[0]
    # the summary of the flood, as the router's sweep writes it once the interval is over
    cc.warnings.flush(now=time.monotonic() + cc.warnings.limiter.interval_s)
    lines = warning_lines(log_text.getvalue(), "pyjoynr.transports.websocket.server")
    assert SUMMARY.search(lines[-1]), lines
    assert total_refused(lines, "bad-field", f"client {raw.client_id}") == FLOOD
    assert len(log_text.getvalue()) - logged_before < 5_000  # bytes, for 5,000 refusals
    await legit.still_works()


# ====================================================================== MQTT


async def test_mqtt_strings_cannot_forge_log_lines(
        stack: AsyncExitStack, tmp_path: Path, log_text: io.StringIO) -> None:
    scene = await start_scene(stack, tmp_path)
    two = scene.two
    message, _ = scene.raw.radio_request(scene.pair, Station("hostile", Country.AUSTRIA),
                                         reply_to=None)
    no_reply_to = encode_frame(dataclasses.replace(message, id=f"no-reply-{HOSTILE}", raw=None))
    data = msgpack.unpackb(no_reply_to)
    bad_expiry = msgpack.packb({**data, "id": f"bad-expiry-{HOSTILE}", "x": "tomorrow"},
                               use_bin_type=True)
    bad_sender = msgpack.packb({**data, "id": f"bad-sender-{HOSTILE}", "s": f"s-{HOSTILE}",
                                "r": 42}, use_bin_type=True)
    await scene.publish(two, [no_reply_to, bad_expiry, bad_sender])
    await scene.raw_is_served()
    counters = mqtt_of(two).counters
    assert (counters["no-reply-to"], counters["bad-field"]) == (1, 2)

    text = log_text.getvalue()
    assert_no_forged_line(text)
    lines = warning_lines(text, "pyjoynr.transports.mqtt.transport")
    assert any(f"no-reply-{ESCAPED}" in line for line in lines), text
    assert any(f"bad-expiry-{ESCAPED}" in line for line in lines), text


MQTT_FLOOD = 1000


async def test_an_mqtt_flood_of_bad_payloads_writes_a_bounded_log(
        stack: AsyncExitStack, tmp_path: Path, log_text: io.StringIO) -> None:
    scene = await start_scene(stack, tmp_path)
    two = scene.two
    mqtt = mqtt_of(two)
    before = mqtt.counters.copy()
    garbage = [b"\xc1 not msgpack " + str(n).encode() for n in range(MQTT_FLOOD)]
    await scene.publish(two, garbage)
    await scene.raw_is_served()

    assert mqtt.counters - before == {"not-msgpack": MQTT_FLOOD}
    lines = warning_lines(log_text.getvalue(), "pyjoynr.transports.mqtt.transport")
    assert 1 <= len(lines) <= 2, lines
    assert "refused (not-msgpack)" in lines[0]
    two.warnings.flush(now=time.monotonic() + two.warnings.limiter.interval_s)
    lines = warning_lines(log_text.getvalue(), "pyjoynr.transports.mqtt.transport")
    assert SUMMARY.search(lines[-1]), lines
    assert total_refused(lines, "not-msgpack", "backend joynrdefaultgbid") == MQTT_FLOOD
    await scene.still_works()


async def test_the_summaries_are_written_by_the_router_sweep(
        stack: AsyncExitStack, tmp_path: Path, log_text: io.StringIO) -> None:
    """No flush by hand: with a short interval, the housekeeping's sweep writes the summary."""
    cc = await start_cc(stack, tmp_path)
    legit = await build_legit(stack, cc)
    clock = [time.monotonic()]
    cc.warnings.clock = lambda: clock[0]
    raw = await registered_raw(stack, cc)
    logged_before = len(log_text.getvalue())
    bad = msgpack.packb(valid_frame(s=42), use_bin_type=True)
    for _ in range(10):
        await raw.send(bad)
    await assert_attacker_still_routed(raw, legit)
    clock[0] += cc.warnings.limiter.interval_s + 1  # the interval is over
    deadline = time.monotonic() + WAIT_S
    while not SUMMARY.search(log_text.getvalue()[logged_before:]):
        assert time.monotonic() < deadline, "no summary written by the sweep"
        await asyncio.sleep(0.02)
    lines = warning_lines(log_text.getvalue(), "pyjoynr.transports.websocket.server")
    assert total_refused(lines, "bad-field", f"client {raw.client_id}") == 10

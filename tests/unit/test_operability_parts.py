"""The parts of the admin endpoint that need no process: latency histograms, the recent lines
ring, JSON log lines, the sticky count of the routing table, the router's outcomes per type,
probes, health answers, the page's security policy, the settings."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import logging
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.admin.health import Check, Probe, health_reply
from pyjoynr.admin.page import CONTENT_SECURITY_POLICY, page_reply
from pyjoynr.admin.settings import AdminSettings, is_loopback
from pyjoynr.runtime.addresses import InProcessAddress, MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.logs import (
    JsonFormatter,
    RecentLines,
    RepeatedWarnings,
    get_logger,
    message_fields,
)
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.metrics import LatencyHistogram, LatencyHistograms
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.telemetry import Telemetry
from tests.test_router import T0, Clock, Recorder

# ---------------------------------------------------------------------- histograms


def test_a_value_on_a_bound_counts_in_that_bucket_and_the_buckets_are_cumulative() -> None:
    histogram = LatencyHistogram((0.001, 0.01, 0.1))
    for value in (0.0005, 0.001, 0.002, 0.01, 5.0):
        histogram.observe(value)
    snap = histogram.snapshot()
    assert snap.buckets == ((0.001, 2), (0.01, 4), (0.1, 4), (float("inf"), 5))
    assert snap.count == 5 and snap.total_s == pytest.approx(5.0135)
    assert snap.quantile_s(0.5) == 0.01  # the bucket's bound, not the value
    assert snap.quantile_s(0.99) == float("inf")
    assert LatencyHistogram().snapshot().quantile_s(0.5) is None


def test_bounds_must_ascend_and_histograms_per_label_are_made_on_first_use() -> None:
    with pytest.raises(ValueError, match="ascending"):
        LatencyHistogram((0.1, 0.01))
    histograms = LatencyHistograms((1.0,))
    histograms.observe("touch", 0.5)
    histograms.observe("add", 2.0)
    assert [(label, h.count) for label, h in histograms.items()] == [("add", 1), ("touch", 1)]


# ---------------------------------------------------------------------- recent lines, logs


def test_the_recent_lines_are_bounded_in_lines_and_bytes_and_escaped() -> None:
    ring = RecentLines(max_lines=3, max_bytes=10_000)
    for i in range(5):
        ring.add(logging.WARNING, "x", "r", "peer", f"line {i}\n<b>")
    assert [line.text for line in ring.newest_first()] == [
        "line 4\\n<b>", "line 3\\n<b>", "line 2\\n<b>"]
    small = RecentLines(max_lines=100, max_bytes=600)
    for _ in range(50):
        small.add(logging.WARNING, "x", "r", "peer", "y" * 200)
    assert small.bytes <= 600 and len(small) == 2 and small.added == 50
    huge = RecentLines()
    huge.add(logging.WARNING, "x", "r", "p", "z" * 1_000_000)
    assert huge.bytes < 2_000  # one line is cut to its limit


def test_repeated_warnings_keep_what_they_write_first_lines_and_summaries() -> None:
    now = [0.0]
    warnings = RepeatedWarnings(interval_s=60, clock=lambda: now[0])
    logger = get_logger("tests.ops.recent")
    logger.setLevel(logging.INFO)
    for _ in range(5):
        warnings.warning(logger, "bad-field", "client x", "refused %s", "<frame>")
    now[0] = 61.0
    warnings.flush()
    lines = list(warnings.recent.newest_first())
    assert [(line.reason, line.text) for line in lines] == [
        ("bad-field", "4 more 'bad-field' from client x in the last 61 s"),
        ("bad-field", "refused <frame>")]
    assert lines[0].level == "WARNING" and lines[1].peer == "client x"


def _record(logger: str, msg: str, *args: object, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord(logger, logging.WARNING, __file__, 1, msg, args, None)
    record.__dict__.update(extra)
    return record


def test_a_json_line_is_one_line_with_the_fields_the_call_gave() -> None:
    message = Message(type=MessageType.ONE_WAY, sender="a\u2028b\nc", recipient="r\u00e9",
                      expiry_date_ms=1, body=b"")
    line = JsonFormatter().format(_record("pyjoynr.runtime.router", "dropped %s: %s", "x\ny", "why",
                                          **message_fields(message)))
    assert "\n" not in line and "\u2028" not in line and line.isascii()
    data = json.loads(line)
    assert data["level"] == "WARNING" and data["logger"] == "pyjoynr.runtime.router"
    assert data["message"] == "dropped x\ny: why"
    assert (data["messageId"], data["sender"], data["recipient"]) == (
        message.id, "a\u2028b\nc", "r\u00e9")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", data["time"])
    assert "participantId" not in data


def test_a_json_line_carries_the_traceback_of_an_exception() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.ops.json")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("failed", extra={"participantId": "p-1"})
    finally:
        logger.removeHandler(handler)
    (line,) = stream.getvalue().splitlines()
    data = json.loads(line)
    assert data["participantId"] == "p-1" and "ValueError: boom" in data["exception"]


def test_repeated_warnings_pass_the_extra_fields_to_the_record(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    warnings = RepeatedWarnings()
    warnings.warning(get_logger("tests.ops.extra"), "r", "p", "dropped %s", "m",
                     extra={"messageId": "m-1"})
    (record,) = [r for r in caplog.records if r.name == "tests.ops.extra"]
    assert record.__dict__["messageId"] == "m-1"


# ---------------------------------------------------------------------- routing, router


@given(st.lists(st.tuples(st.sampled_from(["put", "remove", "purge"]),
                          st.integers(0, 5), st.integers(0, 2), st.booleans(),
                          st.integers(0, 30)), max_size=60))
def test_the_sticky_count_is_the_number_of_sticky_entries(ops: list[tuple[str, int, int, bool,
                                                                           int]]) -> None:
    table = RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)
    addresses = [MqttAddress("g", "t1"), WebSocketClientAddress("c1"), MqttAddress("g", "t2")]
    for op, pid, address, sticky, expiry in ops:
        if op == "put":
            table.put(f"p{pid}", addresses[address], is_globally_visible=True,
                      expiry_date_ms=expiry, is_sticky=sticky)
        elif op == "remove":
            table.remove(f"p{pid}")
        else:
            table.purge(expiry)
        entries = dict(table.items())
        assert table.sticky_count == sum(entry.is_sticky for entry in entries.values())
        by_type: dict[str, int] = {}
        for entry in entries.values():
            name = type(entry.address).__name__
            by_type[name] = by_type.get(name, 0) + 1
        assert table.count_by_address_type() == by_type


def test_the_router_counts_each_routed_message_by_type_and_outcome() -> None:
    clock = Clock()
    telemetry = Telemetry()
    router = MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER), clock_ms=clock,
                           telemetry=telemetry)
    statistics = telemetry.statistics  # (counted there, read there)
    local = Recorder()
    router.register_transport(InProcessAddress, local)

    def one_way(recipient: str, expiry: int = T0 + 10_000) -> Message:
        return Message(type=MessageType.ONE_WAY, sender="s", recipient=recipient,
                       expiry_date_ms=expiry, body=b"")

    router.route(one_way("later"))  # no route yet: queued
    router.route(one_way("gone", expiry=T0 - 1))  # expired: dropped
    router.add_route("later", InProcessAddress(object()), is_globally_visible=False)
    # (the queued message went out: routed again, forwarded)
    assert statistics.routed_by_type[MessageType.ONE_WAY] == 3
    assert statistics.routed == 3
    assert {o: statistics.outcomes[o][MessageType.ONE_WAY] for o in statistics.outcomes} == {
        "forwarded": 1, "queued": 1, "dropped": 1}
    assert statistics.outcomes["forwarded"][MessageType.REQUEST] == 0


# ---------------------------------------------------------------------- probes, health


async def test_a_probe_is_shared_by_callers_at_the_same_time_and_reused_for_its_age() -> None:
    runs: list[int] = []
    release = asyncio.Event()

    async def run() -> str | None:
        runs.append(1)
        await release.wait()
        return None if len(runs) == 1 else "down"

    now = [0.0]
    probe = Probe("x", run, timeout_s=5, max_age_s=10, clock=lambda: now[0])
    callers = [asyncio.create_task(probe()) for _ in range(5)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*callers) == [None] * 5
    assert len(runs) == 1
    now[0] = 9.0
    assert await probe() is None and len(runs) == 1
    now[0] = 10.0
    assert await probe() == "down" and len(runs) == 2


async def test_a_probe_that_hangs_or_raises_says_why() -> None:
    async def hang() -> str | None:
        await asyncio.sleep(60)
        return None

    async def fail() -> str | None:
        raise ConnectionRefusedError("refused")

    assert await Probe("h", hang, timeout_s=0.05, max_age_s=0)() == "no answer within 0.05 s"
    assert await Probe("f", fail, timeout_s=1, max_age_s=0)() == (
        "ConnectionRefusedError: refused")


def test_health_answers_200_or_503_with_every_reason() -> None:
    ok = health_reply("ready", [Check("a", True, "fine")])
    assert ok.status == 200 and json.loads(ok.body)["reasons"] == []
    bad = health_reply("ready", [Check("a", True, "fine"), Check("b", False, "down: why")])
    body = json.loads(bad.body)
    assert bad.status == 503 and body["status"] == "not ready"
    assert body["reasons"] == ["b: down: why"]


# ---------------------------------------------------------------------- page, settings


def test_the_page_allows_exactly_its_own_script_and_style_and_embeds_json_inertly() -> None:
    reply = page_reply({"title": "</script><script>alert(1)</script>", "sections": []})
    html = reply.body.decode()
    assert "</script><script>alert(1)" not in html
    assert "\\u003c/script\\u003e" in html
    script = re.search(r"<script>(.*?)</script>", html, re.S).group(1)  # type: ignore[union-attr]
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)  # type: ignore[union-attr]
    for text in (script, style):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    assert dict(reply.headers)["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_admin_settings_are_checked_and_loopback_is_recognised() -> None:
    assert AdminSettings().host == "127.0.0.1" and AdminSettings().loopback
    for bad in ({"port": 70000}, {"max_connections": 0}, {"request_timeout_s": 0},
                {"max_request_head_bytes": 10}, {"status_max_rows": 0}, {"host": ""}):
        with pytest.raises(ValueError):
            AdminSettings(**bad)  # type: ignore[arg-type]
    assert [is_loopback(h) for h in ("localhost", "127.0.0.2", "::1", "[::1]", "0.0.0.0",
                                      "example.org", "10.0.0.1")] == [
        True, True, True, True, False, False, False]

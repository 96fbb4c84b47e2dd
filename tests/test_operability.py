"""Operability of the cluster controller on real connections and brokers: start-up with the
embedded GCD, discovery when the GCD does not answer, providers of vanished runtimes; the
admin endpoint of real cluster controller and GCD processes (metrics counted exactly, health
with reasons, the status page in Chromium, hostile requests) and their JSON log lines."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import (
    ApplicationError,
    DiscoveryError,
    DiscoveryQos,
    DiscoveryScope,
    JoynrTimeoutError,
    LibjoynrConfig,
    ProviderQos,
    ProviderScope,
    connect,
)
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import Message, MessageType, encode_frame
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import cc_config, eventually, free_port
from tests.support.admin import (
    ARTIFACTS,
    Answer,
    Metrics,
    ProgramProcess,
    cc_process,
    eventually_async,
    gcd_process,
    health,
    http_get,
    raw_exchange,
    scrape,
    status_line,
)
from tests.support.browser import headless_chromium
from tests.support.mqtt_cluster import GBID, WAIT_S, mqtt_cc_config
from tests.support.radio import Radio, RadioProvider

#: how long a runtime waits for its first connection
WAIT_MS = int(WAIT_S * 1000)
GLOBAL = ProviderQos(scope=ProviderScope.GLOBAL)


def embedded_stack_config(data_dir: Path, **overrides: Any) -> Any:
    """The shipped stack: embedded broker (any free port), embedded GCD, the CC."""
    return cc_config(data_dir, embedded_broker__enabled="true", embedded_broker__port="0",
                     mqtt__backends='{joynrdefaultgbid = "embedded"}',
                     embedded_gcd__enabled="true", **overrides)


# ====================================================================== start-up


async def test_a_fresh_start_with_the_embedded_gcd_is_ready_at_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The embedded GCD is subscribed before the CC's link to it speaks: removeStale and the
    first global registration succeed at the first attempt."""
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="pyjoynr.gcd.provider")  # its line of each call
    async with ClusterController(embedded_stack_config(tmp_path)) as cc:
        assert cc.gcd is not None
        pid = await cc.runtime.register_provider("fresh.start", RadioProvider(), qos=GLOBAL,
                                                 await_global_registration=True)
        assert [row.participant_id for row in
                await cc.gcd.store.find_participant(pid, now_ms())] == [pid]
        await eventually(lambda: any("removeStale" in r.getMessage() for r in caplog.records
                                     if r.name == "pyjoynr.gcd.provider"),
                         timeout_s=30, what="removeStale served by the GCD")
    failures = [r.getMessage() for r in caplog.records
                if r.levelno >= logging.WARNING and "GCD" in r.getMessage()]
    assert failures == []


# ====================================================================== GCD silent


@pytest.fixture
async def cc_without_gcd(tmp_path: Path) -> AsyncIterator[ClusterController]:
    """A CC on a real broker where no GCD listens: its GCD calls get no answer."""
    async with Mosquitto(tmp_path / "broker") as broker, ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-no-gcd", {GBID: broker.url})) as cc:
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        yield cc


@pytest.mark.parametrize("scope", [DiscoveryScope.LOCAL_THEN_GLOBAL, DiscoveryScope.GLOBAL_ONLY])
async def test_build_proxy_ends_with_its_discovery_timeout_when_the_gcd_is_silent(
        cc_without_gcd: ClusterController, scope: DiscoveryScope) -> None:
    """The discovery timeout is the caller's: the CC answers within it that the GCD did not
    answer, and build_proxy raises a DiscoveryError saying so (not a bare timeout after the
    runtime's system time to live of 10 s)."""
    async with connect(cc_without_gcd.websocket_address.url, timeout_ms=WAIT_MS) as runtime:
        with pytest.raises(DiscoveryError) as raised:
            await runtime.build_proxy(Radio, "nowhere", discovery_qos=DiscoveryQos(
                discovery_timeout_ms=1500, discovery_scope=scope))
    assert "the GCD did not answer lookup test/Radio within" in str(raised.value)
    # the CC's answer reached the caller: nothing of it expired on the way
    counters = cc_without_gcd.telemetry.counters
    assert [key for key in counters if "expired" in key] == [], counters


async def test_a_fixed_participant_lookup_ends_with_its_discovery_timeout_too(
        cc_without_gcd: ClusterController) -> None:
    from pyjoynr.libjoynr.advanced import Arbitration  # noqa: PLC0415

    async with connect(cc_without_gcd.websocket_address.url, timeout_ms=WAIT_MS) as runtime:
        with pytest.raises(DiscoveryError, match="the GCD did not answer lookup somebody"):
            await runtime.build_proxy(Radio, "nowhere", arbitration=Arbitration.fixed(
                "somebody"), discovery_qos=DiscoveryQos(discovery_timeout_ms=1500))


async def test_an_awaited_global_registration_is_answered_within_the_callers_time(
        cc_without_gcd: ClusterController) -> None:
    """The sibling: register_provider(await_global_registration=True) with the GCD silent
    gets the CC's INTERNAL_ERROR within the runtime's system time to live."""
    config = LibjoynrConfig(system_ttl_ms=2_000)
    async with connect(cc_without_gcd.websocket_address.url, config=config,
                       timeout_ms=WAIT_MS) as runtime:
        try:
            await runtime.register_provider("silent", RadioProvider(), qos=GLOBAL,
                                            await_global_registration=True)
        except JoynrTimeoutError as exc:
            pytest.fail(f"the CC's answer did not arrive in time: {exc}")
        except ApplicationError as exc:
            assert exc.error == "INTERNAL_ERROR"
            assert "the GCD did not answer add" in exc.message
        else:
            pytest.fail("registered although the GCD did not answer")


# ====================================================================== vanished runtimes


async def test_the_providers_of_a_vanished_runtime_leave_the_gcd_after_the_grace_period(
        tmp_path: Path) -> None:
    """A runtime that registered providers and disappears without unregistering them: after
    [discovery] vanished_provider_grace_s its registrations are removed, locally and from
    the GCD (they are no longer touched, found or routed)."""
    async with ClusterController(embedded_stack_config(
            tmp_path, discovery__vanished_provider_grace_s="0.2")) as cc:
        assert cc.gcd is not None
        runtime = await connect(cc.websocket_address.url, timeout_ms=WAIT_MS)
        global_pid = await runtime.register_provider("vanishing", RadioProvider(), qos=GLOBAL,
                                                     await_global_registration=True)
        local_pid = await runtime.register_provider("vanishing", RadioProvider())
        assert await cc.gcd.store.find_participant(global_pid, now_ms()) != []
        await runtime.core.stop()  # gone, nothing unregistered

        async def in_gcd() -> bool:
            assert cc.gcd is not None
            return await cc.gcd.store.find_participant(global_pid, now_ms()) != []

        for _ in range(500):
            if not await in_gcd():
                break
            await asyncio.sleep(0.02)
        assert not await in_gcd()
        assert cc.discovery.entries() == []
        assert cc.discovery.global_participants() == []  # no longer touched
        assert cc.discovery.counters["vanished-provider-removed"] == 2
        assert not cc.router.has_route(local_pid)


async def test_a_restarted_runtime_keeps_its_providers_registered(tmp_path: Path) -> None:
    """A provider process crashes and restarts in a new runtime within the grace
    period and re-registers under its participantId; its registration is kept."""
    async with ClusterController(embedded_stack_config(
            tmp_path, discovery__vanished_provider_grace_s="3.0")) as cc:
        assert cc.gcd is not None
        crashed = await connect(cc.websocket_address.url, timeout_ms=WAIT_MS)
        pid = await crashed.register_provider("restarting", RadioProvider(), qos=GLOBAL,
                                              await_global_registration=True)
        await crashed.core.stop()
        async with connect(cc.websocket_address.url, timeout_ms=WAIT_MS) as restarted:
            await restarted.register_provider("restarting", RadioProvider(), qos=GLOBAL,
                                              participant_id=pid,
                                              await_global_registration=True)
            await eventually(lambda: cc.discovery.counters["vanished-provider-kept"] == 1,
                             timeout_s=20, what="the grace period's end")
            assert cc.discovery.counters["vanished-provider-removed"] == 0
            assert [e.participant_id for e in cc.discovery.entries()] == [pid]
            assert await cc.gcd.store.find_participant(pid, now_ms()) != []
            proxy = await restarted.build_proxy(Radio, "restarting", ttl_ms=5_000)
            assert proxy.provider_participant_id == pid


# ====================================================================== benchmarks


async def test_benchmark_ccs_without_a_gcd_do_not_call_one(tmp_path: Path) -> None:
    """The benchmarks run MQTT backends without a GCD: their CCs must not call one (each
    unanswered call was a warning in the middle of the figures)."""
    from bench._common import cc_config as bench_cc_config  # noqa: PLC0415

    async with Mosquitto(tmp_path / "broker") as broker:
        backends = f'{{{GBID} = "{broker.url}"}}'
        config = bench_cc_config(str(tmp_path / "cc"), mqtt__backends=backends)
        async with ClusterController(config) as cc:
            assert cc.mqtt is not None
            assert cc.gcd_link is None
        with_gcd = bench_cc_config(str(tmp_path / "cc"), discovery__gcd="true",
                                   mqtt__backends=backends)
        assert with_gcd.discovery.gcd is True  # discovery_first_call runs one


# ====================================================================== the admin endpoint
# (real processes: python -m pyjoynr.cluster_controller, python -m pyjoynr.gcd; real HTTP requests)

HOSTILE_ID = '<img src=x onerror="window.pwned=1">&amp;"quoted"'
GARBAGE = b"\xc1\xde\xad\xbe\xef not msgpack"


def _cc_backend_env(broker_url: str, **env: str) -> dict[str, str]:
    """A CC process whose one backend is ``broker_url`` (no embedded broker or GCD)."""
    return {"JOYNR_CC__EMBEDDED_BROKER__ENABLED": "false",
            "JOYNR_CC__EMBEDDED_GCD__ENABLED": "false",
            "JOYNR_CC__MQTT__BACKENDS": f'{{{GBID} = "{broker_url}"}}',
            "JOYNR_CC__MQTT__RECONNECT_MAX_S": "0.5", **env}


async def _ws_url(proc: ProgramProcess) -> str:
    return (await proc.wait_for(r"libjoynr runtimes connect to (ws://\S+);")).group(1)


def _check(answer: Answer, name: str) -> dict[str, Any]:
    checks = {c["name"]: c for c in answer.json()["checks"]}
    assert name in checks, answer.json()
    return checks[name]


async def _send_frames(ws_url: str, client_id: str, frames: list[bytes]) -> None:
    """A raw websocket client: the init frame, then ``frames``; it stays until they are read."""
    from websockets.asyncio.client import connect as ws_connect  # noqa: PLC0415

    from pyjoynr.transports.dialects import encode_init  # noqa: PLC0415

    async with ws_connect(ws_url, compression=None) as ws:
        await ws.send(encode_init(client_id))
        for frame in frames:
            await ws.send(frame)
        await ws.ping()  # (answered after the frames before it were read)


async def test_readiness_of_cc_and_gcd_processes_follows_broker_and_gcd_and_metrics_count(
        tmp_path: Path) -> None:
    """A CC and a GCD process start before their broker exists: both are live, neither is
    ready, and the reasons say why; once the broker runs both become ready. The metrics count
    what happened: the CC's GCD calls and the GCD's requests (a global registration: exactly
    one add), the broker connections; a broker restart shows as disconnected, then as one
    reconnect."""
    port = free_port()
    broker_url = f"mqtt://127.0.0.1:{port}"
    gcd = gcd_process(tmp_path, broker_url)
    cc = cc_process(tmp_path / "cc", **_cc_backend_env(
        broker_url, JOYNR_CC__ADMIN__PROBE_MAX_AGE_S="0.2", JOYNR_CC__ADMIN__PROBE_TIMEOUT_S="1"))
    try:
        cc_admin, gcd_admin = await cc.admin_url(), await gcd.admin_url()
        ws_url = await _ws_url(cc)
        assert (await health(cc_admin, "live")).status == 200
        assert (await health(gcd_admin, "live")).status == 200

        ready = await health(cc_admin, "ready")
        assert ready.status == 503 and ready.json()["ok"] is False
        mqtt = _check(ready, "MQTT")
        assert mqtt["ok"] is False
        assert f"default backend {GBID} not connected to {broker_url}" in mqtt["detail"]
        gcd_check = _check(ready, "GCD")
        assert gcd_check["ok"] is False and "default MQTT backend" in gcd_check["detail"]
        assert any(reason.startswith("MQTT: ") for reason in ready.json()["reasons"])

        gcd_ready = await eventually_async(  # (its index loads at start-up, then it waits)
            lambda: _gcd_waits_for_broker(gcd_admin), "the GCD loaded, without broker")
        assert gcd_ready.status == 503
        assert "not connected to" in _check(gcd_ready, "GCD broker")["detail"]
        assert _check(gcd_ready, "GCD store")["ok"] is True

        async with Mosquitto(tmp_path / "broker", port=port) as broker:
            for admin in (cc_admin, gcd_admin):
                await eventually_async(lambda a=admin: _is_ready(a), f"{admin} ready", 40)
            ready = await health(cc_admin, "ready")
            assert ready.json()["reasons"] == []
            assert _check(ready, "GCD")["ok"] is True
            # removeStale of the CC's start, retried until the GCD answered: answered once
            await eventually_async(lambda: _sample(
                cc_admin, "joynr_cc_gcd_calls_total", method="removeStale", outcome="ok"),
                "removeStale answered")

            before_cc, before_gcd = await scrape(cc_admin), await scrape(gcd_admin)
            async with connect(ws_url, timeout_ms=WAIT_MS) as runtime:
                await runtime.register_provider("ops", RadioProvider(), qos=GLOBAL,
                                                await_global_registration=True)
                after_cc, after_gcd = await scrape(cc_admin), await scrape(gcd_admin)
            add = ("joynr_cc_gcd_calls_total", {"method": "add", "outcome": "ok"})
            assert after_cc[add] - before_cc[add] == 1
            assert after_cc["joynr_cc_gcd_call_latency_seconds_count", {"method": "add"}] == 1
            add_in_backends = ("joynr_gcd_requests_total",
                               {"method": "add_in_backends", "outcome": "ok"})
            assert after_gcd[add_in_backends] - before_gcd[add_in_backends] == 1
            assert after_gcd["joynr_gcd_store_latency_seconds_count",
                             {"operation": "add"}] == 1
            assert after_gcd["joynr_gcd_index_loaded"] == 1
            assert after_gcd["joynr_gcd_index_rows"] == 1
            assert after_gcd.has("joynr_gcd_sync_catch_ups_total")
            assert after_gcd.has("joynr_gcd_sync_watermark")
            assert after_gcd["joynr_gcd_mqtt_connected", {"gbid": GBID}] == 1
            published = after_cc["joynr_cc_mqtt_published_total", {"gbid": GBID}]
            assert published >= 2  # removeStale and add at least (QoS 1, acknowledged)
            assert after_cc["joynr_cc_mqtt_publish_latency_seconds_count",
                            {"gbid": GBID}] == published
            assert after_cc["joynr_cc_mqtt_connected", {"gbid": GBID}] == 1
            assert after_cc["joynr_cc_mqtt_connections_total", {"gbid": GBID}] == 1
            assert after_cc["joynr_cc_mqtt_reconnects_total", {"gbid": GBID}] == 0
            assert after_cc["joynr_cc_mqtt_connect_failures_total", {"gbid": GBID}] >= 1
            await asyncio.to_thread(_gcd_page_shows_the_add, gcd_admin)

            # the broker goes away: disconnected, not ready; back: one reconnect
            await broker.stop()
            await eventually_async(lambda: _sample_is(
                cc_admin, 0, "joynr_cc_mqtt_connected", gbid=GBID), "disconnected")
            ready = await health(cc_admin, "ready")
            assert ready.status == 503 and _check(ready, "MQTT")["ok"] is False
            await broker.start()
            await eventually_async(lambda: _sample_is(
                cc_admin, 1, "joynr_cc_mqtt_connected", gbid=GBID), "reconnected", 40)
            m = await scrape(cc_admin)
            assert m["joynr_cc_mqtt_reconnects_total", {"gbid": GBID}] == 1
            assert m["joynr_cc_mqtt_connections_total", {"gbid": GBID}] == 2
            await eventually_async(lambda: _is_ready(cc_admin), "ready again", 40)

            # the GCD goes away: the CC's probe is not answered
            assert await gcd.astop() == 0
            ready = await eventually_async(lambda: _not_ready(cc_admin), "GCD missed", 30)
            gcd_check = _check(ready, "GCD")
            assert gcd_check["ok"] is False and "does not answer" in gcd_check["detail"]
            assert [r for r in ready.json()["reasons"] if not r.startswith("GCD: ")] == []
            m = await scrape(cc_admin)
            assert m["joynr_cc_gcd_reachable"] == 0
            assert m["joynr_cc_gcd_calls_total", {"method": "probe", "outcome": "timeout"}] >= 1
    finally:
        codes = await cc.astop(), await gcd.astop()
    assert codes == (0, 0), cc.output()[-3000:] + gcd.output()[-3000:]


def _gcd_page_shows_the_add(admin_url: str) -> None:
    """The GCD's status page in Chromium: its title, ready, the add_in_backends request counted."""
    with headless_chromium() as driver:
        driver.get(f"{admin_url}/status")
        assert driver.title.startswith(f"GCD for {GBID}, instance ")
        deadline = time.monotonic() + 20
        while "add_in_backends" not in _text(driver, "section-gcd-requests"):
            assert time.monotonic() < deadline, _text(driver, "sections")
            time.sleep(0.1)
        assert _text(driver, "ready") == "ready"
        ARTIFACTS.mkdir(exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / "status-page-gcd.png"))


async def _is_ready(admin_url: str) -> bool:
    return (await health(admin_url, "ready")).status == 200


async def _gcd_waits_for_broker(admin_url: str) -> Answer | None:
    answer = await health(admin_url, "ready")
    return answer if _check(answer, "GCD index")["ok"] else None


async def _sample(admin_url: str, name: str, **labels: str) -> float:
    return (await scrape(admin_url))[name, labels]


async def _sample_is(admin_url: str, value: float, name: str, **labels: str) -> bool:
    return await _sample(admin_url, name, **labels) == value


async def test_metrics_of_a_cc_process_count_exactly_what_the_test_did(tmp_path: Path) -> None:
    """Ten hostile frames: the refusal counter rises by exactly ten. Twenty-five one-way calls:
    twenty-five more ONE_WAY messages routed and forwarded. The gauges follow the runtimes."""
    cc = cc_process(tmp_path)
    try:
        admin, ws_url = await cc.admin_url(), await _ws_url(cc)
        refused = ("joynr_cc_refusals_total", {"component": "websocket",
                                               "reason": "not-msgpack"})
        before = await scrape(admin)
        assert before.types["joynr_cc_refusals"] == "counter"
        assert before.types["joynr_cc_mqtt_publish_latency_seconds"] == "histogram" or not \
            before.has("joynr_cc_mqtt_connected", gbid=GBID)  # (no MQTT here)
        await _send_frames(ws_url, "attacker", [GARBAGE] * 10)
        after = await eventually_async(lambda: _scrape_when(admin, refused, before[refused] + 10),
                                       "ten refusals counted")
        assert after[refused] - before[refused] == 10

        async with connect(ws_url, timeout_ms=WAIT_MS) as provider_rt, \
                connect(ws_url, timeout_ms=WAIT_MS) as consumer_rt:
            provider = RadioProvider()
            await provider_rt.register_provider("count", provider)
            proxy = await consumer_rt.build_proxy(Radio, "count", ttl_ms=10_000)
            m = await scrape(admin)
            assert m["joynr_cc_websocket_clients"] == 2
            assert m["joynr_cc_websocket_clients_by_dialect", {"dialect": "native"}] == 2
            assert m["joynr_cc_websocket_clients_by_dialect", {"dialect": "joynr"}] == 0
            routed = ("joynr_cc_messages_routed_total", {"type": "ONE_WAY"})
            forwarded = ("joynr_cc_messages_total", {"type": "ONE_WAY", "outcome": "forwarded"})
            for i in range(25):
                await proxy.note(f"note {i}")
            await eventually(lambda: len(provider.notes) == 25, what="25 notes")
            later = await scrape(admin)
            assert later[routed] - m[routed] == 25
            assert later[forwarded] - m[forwarded] == 25
            assert later["joynr_cc_messages_total", {"type": "ONE_WAY", "outcome": "dropped"}] \
                == m["joynr_cc_messages_total", {"type": "ONE_WAY", "outcome": "dropped"}]
            assert later[refused] == after[refused]  # nothing else was refused
            entries = later.labelled("joynr_cc_routing_entries_by_address")
            assert entries[frozenset({("address_type", "WebSocketClientAddress")})] >= 1
        gone = await eventually_async(lambda: _scrape_when(
            admin, ("joynr_cc_websocket_clients", {}), 0), "the runtimes gone")
        # the shipped stack's sticky routes: Routing, Discovery and the (embedded) GCD
        assert gone["joynr_cc_routing_entries", {"kind": "sticky"}] == 3
    finally:
        assert await cc.astop() == 0, cc.output()[-3000:]


async def _scrape_when(admin_url: str, key: tuple[str, dict[str, str]], value: float
                       ) -> Metrics | None:
    metrics = await scrape(admin_url)
    return metrics if metrics[key] == value else None


async def test_the_status_page_in_chromium_shows_the_live_cluster_controller(
        tmp_path: Path) -> None:
    """The page, in headless Chromium, against a running CC process: its identity, the
    connected runtimes with their participant counts (as the process reports them, and as
    the test registered them), a refusal; a runtime that connects later appears without a
    reload; a hostile client id and participant id are shown as text (nothing of them runs);
    when the process is gone the page says so. A screenshot is kept in test-artifacts/."""
    cc = cc_process(tmp_path)
    try:
        admin, ws_url = await cc.admin_url(), await _ws_url(cc)
        cc_id = (tmp_path / "cluster-controller-id").read_text().strip()
        hostile_frame = encode_frame(Message(
            type=MessageType.ONE_WAY, sender=HOSTILE_ID, recipient=f"to {HOSTILE_ID}",
            expiry_date_ms=now_ms() - 60_000, body=b"\x80"))
        await _send_frames(ws_url, "refused-sender", [hostile_frame])
        async with connect(ws_url, client_id="radio-rt", timeout_ms=WAIT_MS) as radios, \
                connect(ws_url, client_id=HOSTILE_ID, timeout_ms=WAIT_MS) as hostile:
            # a runtime's own participants (its proxies of the CC's system providers), then
            # the providers it registers
            base = _participants((await http_get(f"{admin}/status.json")).json())
            for domain in ("one", "two", "three"):
                await radios.register_provider(domain, RadioProvider())
            await hostile.register_provider("hostile", RadioProvider())
            counts = _participants((await http_get(f"{admin}/status.json")).json())
            assert counts["radio-rt"] == base["radio-rt"] + 3
            assert counts[HOSTILE_ID] == base[HOSTILE_ID] + 1
            page = await http_get(f"{admin}/status")
            assert page.status == 200
            assert "script-src 'sha256-" in page.headers["content-security-policy"]
            assert HOSTILE_ID.encode() not in page.body  # embedded as JSON with <, >, & escaped

            async def late_runtime() -> None:
                async with connect(ws_url, client_id="late-rt", timeout_ms=WAIT_MS) as late:
                    await late.register_provider("late", RadioProvider())
                    await asyncio.to_thread(_wait_for_row, driver, "late-rt")

            with headless_chromium() as driver:
                await asyncio.to_thread(driver.get, f"{admin}/status")
                rows = await asyncio.to_thread(_runtime_rows, driver, {"radio-rt", HOSTILE_ID})
                assert rows["radio-rt"]["participants"] == str(counts["radio-rt"])
                assert rows[HOSTILE_ID]["participants"] == str(counts[HOSTILE_ID])
                assert driver.title == f"cluster controller {cc_id}"
                assert _fact(driver, "id") == cc_id
                assert _text(driver, "ready") == "ready"
                recent = _text(driver, "section-recent")
                assert f"to {HOSTILE_ID}" in recent  # the refusal, its ids as text
                assert driver.execute_script("return document.images.length") == 0
                assert driver.execute_script("return window.pwned === undefined") is True
                refusals = _text(driver, "section-refusals")
                assert "websocket" in refusals or "router" in refusals
                await late_runtime()
                ARTIFACTS.mkdir(exist_ok=True)
                driver.save_screenshot(str(ARTIFACTS / "status-page-cluster-controller.png"))
                assert (ARTIFACTS / "status-page-cluster-controller.png").stat().st_size > 0
                assert await cc.astop() == 0
                stale = await asyncio.to_thread(_wait_for_stale, driver)
                assert "No answer from the process since" in stale
    finally:
        cc.stop()


def _participants(status: dict[str, Any]) -> dict[str, int]:
    section = next(s for s in status["sections"] if s["id"] == "runtimes")
    columns = section["columns"]
    return {row[0]: row[columns.index("participants")] for row in section["rows"]}


#: the runtimes table as the page shows it, read at once (the page redraws as it refreshes)
_READ_RUNTIMES = """
return Array.from(document.querySelectorAll("#section-runtimes tbody tr")).map(
  (tr) => Object.fromEntries(Array.from(tr.querySelectorAll("td")).map(
    (td) => [td.dataset.column, td.textContent])));
"""


def _runtime_rows(driver: Any, ids: set[str], timeout_s: float = 20.0) -> dict[str, dict[str,
                                                                                         str]]:
    """The runtimes table as the page shows it, once it holds every one of ``ids``."""
    deadline = time.monotonic() + timeout_s
    rows: dict[str, dict[str, str]] = {}
    while time.monotonic() < deadline:
        rows = {row["client id"]: row for row in driver.execute_script(_READ_RUNTIMES)
                if "client id" in row}
        if ids <= set(rows):
            return rows
        time.sleep(0.1)
    raise AssertionError(f"the page shows the runtimes {sorted(rows)}, not {sorted(ids)}")


def _text(driver: Any, element_id: str) -> str:
    return str(driver.execute_script(
        "return document.getElementById(arguments[0]).textContent", element_id))


def _wait_for_row(driver: Any, client_id: str) -> None:
    _runtime_rows(driver, {client_id})


def _fact(driver: Any, name: str) -> str:
    return str(driver.execute_script(
        "return document.querySelector(`dd[data-fact=\"${arguments[0]}\"]`).textContent",
        name))


def _wait_for_stale(driver: Any, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if driver.execute_script("return !document.getElementById('stale').hidden"):
            return _text(driver, "stale")
        time.sleep(0.1)
    raise AssertionError("the page did not say that the process is gone")


HEAD_OK = b"Host: 127.0.0.1\r\n"
#: (reason counted, request bytes, status answered)
HOSTILE_REQUESTS: list[tuple[str, bytes, int]] = [
    ("oversized-head", b"GET /metrics HTTP/1.1\r\n" + HEAD_OK + b"X-Big: " + b"a" * 20_000
     + b"\r\n\r\n", 431),
    ("bad-request", b"\x16\x03\x01\x02\x00 a TLS hello, not HTTP\r\n\r\n", 400),
    ("method-not-allowed", b"POST /metrics HTTP/1.1\r\n" + HEAD_OK
     + b"Content-Length: 0\r\n\r\n", 405),
    ("request-body", b"GET /metrics HTTP/1.1\r\n" + HEAD_OK
     + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 413),
    ("not-found", b"GET /../../etc/passwd?\x1b[2J HTTP/1.1\r\n" + HEAD_OK + b"\r\n", 400),
    ("not-found", b"GET /etc/passwd HTTP/1.1\r\n" + HEAD_OK + b"\r\n", 404),
    ("bad-host", b"GET /status.json HTTP/1.1\r\nHost: rebound.example:4280\r\n\r\n", 421),
]


async def test_the_admin_endpoint_refuses_hostile_requests_counts_each_and_goes_on(
        tmp_path: Path) -> None:
    """Oversized heads, non-HTTP bytes, other methods, bodies, unknown paths, a foreign Host,
    a request that never completes, more connections than allowed: each is answered with its
    status (or closed), counted once under its reason and logged; idle keep-alive connections
    are closed without a count; the endpoint goes on answering."""
    cc = cc_process(tmp_path, JOYNR_CC__EMBEDDED_BROKER__ENABLED="false",
                    JOYNR_CC__EMBEDDED_GCD__ENABLED="false", JOYNR_CC__MQTT__BACKENDS="{}",
                    JOYNR_CC__ADMIN__REQUEST_TIMEOUT_S="2.0",
                    JOYNR_CC__ADMIN__MAX_CONNECTIONS="3")
    try:
        admin = await cc.admin_url()
        expected: dict[str, int] = {}
        for reason, request, status in HOSTILE_REQUESTS:
            answer = await raw_exchange(admin, request)
            assert status_line(answer).startswith(f"HTTP/1.1 {status} "), (reason, answer[:200])
            if status != 400 or reason == "bad-request":
                expected[reason] = expected.get(reason, 0) + 1
            else:  # (h11 refuses the control character in the target: a bad request)
                expected["bad-request"] = expected.get("bad-request", 0) + 1

        # a request that never completes: 408 after the timeout; an idle connection: closed
        answer = await raw_exchange(admin, b"GET /metrics HTTP/1.1\r\n" + HEAD_OK)
        assert status_line(answer).startswith("HTTP/1.1 408 ")
        expected["timeout"] = 1
        assert await raw_exchange(admin, b"") == b""  # idle: no answer, no count

        # more connections than allowed: the fourth is closed at once
        idle = [await asyncio.open_connection(*_host_port(admin)) for _ in range(3)]
        reader, writer = await asyncio.open_connection(*_host_port(admin))
        writer.write(b"GET /health/live HTTP/1.1\r\n" + HEAD_OK + b"\r\n")
        try:
            closed = await asyncio.wait_for(reader.read(-1), 5)
        except ConnectionResetError:  # closed with the request unread: the kernel resets
            closed = b""
        assert closed == b""
        writer.close()
        expected["too-many-connections"] = 1
        for idle_reader, idle_writer in idle:  # served now, then closed: their slots free
            idle_writer.write(b"GET /health/live HTTP/1.1\r\n" + HEAD_OK
                              + b"Connection: close\r\n\r\n")
            assert status_line(await asyncio.wait_for(idle_reader.read(-1), 5)) == (
                "HTTP/1.1 200 OK")
            idle_writer.close()

        # keep-alive and pipelining, HEAD, the loopback names: all answered
        answer = await raw_exchange(admin, b"GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n"
                                    b"HEAD /metrics HTTP/1.1\r\nHost: [::1]:1\r\n"
                                    b"Connection: close\r\n\r\n")
        assert answer.count(b"HTTP/1.1 200 OK") == 2
        assert answer.endswith(b"\r\n\r\n")  # HEAD: headers only

        metrics = await eventually_async(lambda: _admin_refusals_settled(admin, expected),
                                         "the refusals counted")
        refusals = {dict(labels)["reason"]: value for labels, value
                    in metrics.labelled("joynr_cc_refusals_total").items()
                    if dict(labels)["component"] == "admin"}
        assert refusals == expected
        assert (await http_get(f"{admin}/status")).status == 200
        assert (await health(admin, "ready")).status == 200
        # logged: the first refusal of each reason (rate-limited per reason and client)
        logged = [line for line in cc.output().splitlines()
                  if "refused a request of 127.0.0.1" in line]
        assert len(logged) == len(expected), logged
        assert "\x1b" not in cc.output()  # the escape sequence of the target was escaped
    finally:
        assert await cc.astop() == 0, cc.output()[-3000:]


def _host_port(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


async def _admin_refusals_settled(admin_url: str, expected: dict[str, int]) -> Metrics | None:
    metrics = await scrape(admin_url)
    total = sum(v for labels, v in metrics.labelled("joynr_cc_refusals_total").items()
                if dict(labels)["component"] == "admin")
    return metrics if total >= sum(expected.values()) else None


async def test_json_log_lines_of_a_cc_process_carry_the_ids(tmp_path: Path) -> None:
    """[logging] format = "json": every line the process writes is one JSON object with time,
    level, logger and message; a refused message's line has its id, sender and recipient as
    fields (a newline in the sender stays inside the line), a provider's lines its
    participantId, a websocket client's lines its clientId. (At DEBUG: a provider's
    registration is a DEBUG line; the runtime connects first, since connections are logged
    rate-limited per host.)"""
    cc = cc_process(tmp_path, JOYNR_CC__LOGGING__FORMAT="json", JOYNR_CC__LOGGING__LEVEL="DEBUG")
    try:
        ws_url = await _ws_url(cc)
        async with connect(ws_url, client_id="json-rt", timeout_ms=WAIT_MS) as runtime:
            pid = await runtime.register_provider("json", RadioProvider(), qos=GLOBAL,
                                                  await_global_registration=True)
        await cc.wait_for(r'"clientId": "json-rt"')
        frame = Message(type=MessageType.ONE_WAY, sender=f"spoofer\n{HOSTILE_ID}",
                        recipient="nobody", expiry_date_ms=now_ms() - 60_000, body=b"\x80")
        await _send_frames(ws_url, "json-attacker", [encode_frame(frame)])
        await cc.wait_for(r'"sender": "spoofer')
    finally:
        assert await cc.astop() == 0, cc.output()[-3000:]
    import json  # noqa: PLC0415

    lines = [json.loads(line) for line in cc.output().splitlines()]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    refused = [line for line in lines if line.get("messageId") == frame.id]
    assert refused, [line for line in lines if line["level"] == "WARNING"]
    assert refused[0]["sender"] == frame.sender and refused[0]["recipient"] == "nobody"
    assert "\\n" in refused[0]["message"] and "\n" not in refused[0]["message"]
    by_pid = {line["logger"] for line in lines if line.get("participantId") == pid}
    assert "pyjoynr.cluster_controller.gcd_link" in by_pid  # (the GCD's line of an add: DEBUG)
    assert any(line.get("clientId") == "json-rt" and "connected" in line["message"]
               for line in lines)
    assert lines[-1]["message"].startswith("cluster controller") or any(
        "stopped" in line["message"] for line in lines)


async def _not_ready(admin_url: str) -> Answer | None:
    answer = await health(admin_url, "ready")
    return answer if answer.status == 503 else None


async def test_an_admin_port_in_use_stops_the_process_with_the_setting_to_change(
        tmp_path: Path) -> None:
    import socket  # noqa: PLC0415

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cc = cc_process(tmp_path, JOYNR_CC__ADMIN__PORT=str(port))
        gcd = gcd_process(tmp_path, "mqtt://127.0.0.1:1", JOYNR_GCD__ADMIN__PORT=str(port))
        codes = await cc.exited(), await gcd.exited()
    assert codes == (1, 1), cc.output() + gcd.output()
    assert f"cannot listen for the admin endpoint on 127.0.0.1:{port}" in cc.output()
    assert "JOYNR_CC__ADMIN__PORT" in cc.output() and "JOYNR_GCD__ADMIN__PORT" in gcd.output()


async def test_the_smrf_codec_form_is_on_the_status_page_and_a_plain_one_in_the_log(
        tmp_path: Path) -> None:
    """A CC process says which form of the SMRF codec it runs: compiled (as built by the
    README's commands) on its status page; the plain Python form (asked for with
    PYJOYNR_COMPILED=0) on its status page with the reason, and as a warning in its log."""
    for switch, expected in (("1", "compiled"),
                             ("0", "plain Python: PYJOYNR_COMPILED=0 asks for the source")):
        cc = cc_process(tmp_path / switch, PYJOYNR_COMPILED=switch)
        try:
            admin = await cc.admin_url()
            await _ws_url(cc)
            status = (await http_get(f"{admin}/status.json")).json()
            (identity,) = [s for s in status["sections"] if s["id"] == "identity"]
            assert dict(identity["facts"])["SMRF codec"] == expected
        finally:
            assert await cc.astop() == 0, cc.output()[-3000:]
        warned = "SMRF frames are read and written by the codec's plain Python form"
        assert (warned in cc.output()) is (switch == "0"), cc.output()[-3000:]

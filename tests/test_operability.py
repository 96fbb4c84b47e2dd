"""Operability of the cluster controller on real connections and brokers: start-up with the
embedded GCD, discovery when the GCD does not answer, providers of vanished runtimes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cluster_controller.controller import ClusterController
from libjoynr import (
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
from runtime.clock import now_ms
from tests.support.brokers import Mosquitto
from tests.support.cluster import cc_config, eventually
from tests.support.mqtt_cluster import GBID, WAIT_S, mqtt_cc_config
from tests.support.radio import Radio, RadioProvider

GLOBAL = ProviderQos(scope=ProviderScope.GLOBAL)


def embedded_stack_config(data_dir: Path, **overrides: Any) -> Any:
    """The shipped stack: embedded broker (any free port), embedded GCD, the CC."""
    return cc_config(data_dir, embedded_broker__enabled="true", embedded_broker__port="0",
                     mqtt__backends='{joynrdefaultgbid = "embedded"}',
                     embedded_gcd__enabled="true", **overrides)


# ====================================================================== point 12: start-up


async def test_a_fresh_start_with_the_embedded_gcd_is_ready_at_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The embedded GCD is subscribed before the CC's link to it speaks: removeStale and the
    first global registration succeed at the first attempt."""
    caplog.set_level(logging.INFO)
    async with ClusterController(embedded_stack_config(tmp_path)) as cc:
        assert cc.gcd is not None
        pid = await cc.runtime.register_provider("fresh.start", RadioProvider(), qos=GLOBAL,
                                                 await_global_registration=True)
        assert [row.participant_id for row in
                await cc.gcd.store.find_participant(pid, now_ms())] == [pid]
        await eventually(lambda: any("removeStale" in r.getMessage() for r in caplog.records
                                     if r.name == "gcd.provider"),
                         timeout_s=30, what="removeStale served by the GCD")
    failures = [r.getMessage() for r in caplog.records
                if r.levelno >= logging.WARNING and "GCD" in r.getMessage()]
    assert failures == []


# ====================================================================== point 10: GCD silent


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
    async with connect(cc_without_gcd.websocket_address.url, timeout_s=WAIT_S) as runtime:
        with pytest.raises(DiscoveryError) as raised:
            await runtime.build_proxy(Radio, "nowhere", discovery_qos=DiscoveryQos(
                discovery_timeout_ms=1500, discovery_scope=scope))
    assert "the GCD did not answer lookup test/Radio within" in str(raised.value)
    # the CC's answer reached the caller: nothing of it expired on the way
    counters = cc_without_gcd.router.counters
    assert [key for key in counters if "expired" in key] == [], counters


async def test_a_fixed_participant_lookup_ends_with_its_discovery_timeout_too(
        cc_without_gcd: ClusterController) -> None:
    from libjoynr import Arbitration  # noqa: PLC0415

    async with connect(cc_without_gcd.websocket_address.url, timeout_s=WAIT_S) as runtime:
        with pytest.raises(DiscoveryError, match="the GCD did not answer lookup somebody"):
            await runtime.build_proxy(Radio, "nowhere", arbitration=Arbitration.fixed(
                "somebody"), discovery_qos=DiscoveryQos(discovery_timeout_ms=1500))


async def test_an_awaited_global_registration_is_answered_within_the_callers_time(
        cc_without_gcd: ClusterController) -> None:
    """The sibling: register_provider(await_global_registration=True) with the GCD silent
    gets the CC's INTERNAL_ERROR within the runtime's system time to live."""
    config = LibjoynrConfig(system_ttl_ms=2_000)
    async with connect(cc_without_gcd.websocket_address.url, config=config,
                       timeout_s=WAIT_S) as runtime:
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


# ====================================================================== point 13: vanished


async def test_the_providers_of_a_vanished_runtime_leave_the_gcd_after_the_grace_period(
        tmp_path: Path) -> None:
    """A runtime that registered providers and disappears without unregistering them: after
    [discovery] vanished_provider_grace_s its registrations are removed, locally and from
    the GCD (they are no longer touched, found or routed)."""
    async with ClusterController(embedded_stack_config(
            tmp_path, discovery__vanished_provider_grace_s="0.2")) as cc:
        assert cc.gcd is not None
        runtime = await connect(cc.websocket_address.url, timeout_s=WAIT_S)
        global_pid = await runtime.register_provider("vanishing", RadioProvider(), qos=GLOBAL,
                                                     await_global_registration=True)
        local_pid = await runtime.register_provider("vanishing", RadioProvider())
        assert await cc.gcd.store.find_participant(global_pid, now_ms()) != []
        await runtime.stop()  # gone, nothing unregistered

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
        assert local_pid not in cc.routing_table


async def test_a_restarted_runtime_keeps_its_providers_registered(tmp_path: Path) -> None:
    """Seed 002's crash scenario: the provider restarts in a new runtime within the grace
    period and re-registers under its participantId; its registration is kept."""
    async with ClusterController(embedded_stack_config(
            tmp_path, discovery__vanished_provider_grace_s="3.0")) as cc:
        assert cc.gcd is not None
        crashed = await connect(cc.websocket_address.url, timeout_s=WAIT_S)
        pid = await crashed.register_provider("restarting", RadioProvider(), qos=GLOBAL,
                                              await_global_registration=True)
        await crashed.stop()
        async with connect(cc.websocket_address.url, timeout_s=WAIT_S) as restarted:
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


# ====================================================================== point 15: benchmarks


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

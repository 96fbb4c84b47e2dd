"""Operability of the cluster controller on real connections and brokers: start-up with the
embedded GCD, discovery when the GCD does not answer, providers of vanished runtimes."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from cluster_controller.controller import ClusterController
from libjoynr import ProviderQos, ProviderScope
from runtime.clock import now_ms
from tests.support.cluster import cc_config, eventually
from tests.support.radio import RadioProvider

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

"""The periodic cleanup job, on a real event loop with the real clock."""

from __future__ import annotations

import asyncio
import logging

import pytest

from runtime.addresses import MqttAddress
from runtime.clock import now_ms
from runtime.housekeeping import RoutingTableCleaner
from runtime.routing import RoutingTable, RuntimeKind

A = MqttAddress("g", "cc/caller")


async def wait_for(condition, timeout_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


async def test_cleaner_removes_expired_entries_periodically_but_not_sticky_ones(caplog):
    table = RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)
    start = now_ms()
    table.put("short", A, is_globally_visible=True, expiry_date_ms=start + 100)
    table.put("long", A, is_globally_visible=True, expiry_date_ms=start + 60_000)
    table.put("sticky", A, is_globally_visible=True, expiry_date_ms=start, is_sticky=True)
    purged: list[str] = []
    caplog.set_level(logging.INFO, logger="runtime.housekeeping")
    async with RoutingTableCleaner(table, interval_s=0.02, on_purged=purged.extend) as cleaner:
        assert cleaner.running
        await wait_for(lambda: "short" not in table)
        assert now_ms() > start + 100
        runs = cleaner.runs
        await wait_for(lambda: cleaner.runs >= runs + 3)
    assert not cleaner.running
    assert purged == ["short"]
    assert set(table) == {"long", "sticky"}
    assert cleaner.purged_total == 1
    assert "removed 1 expired entry" in caplog.text


async def test_cleaner_survives_a_failing_callback(caplog):
    table = RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)
    table.put("a", A, is_globally_visible=True, expiry_date_ms=0)
    table.put("b", A, is_globally_visible=True, expiry_date_ms=now_ms() + 150)

    def explode(_: list[str]) -> None:
        raise RuntimeError("boom")

    async with RoutingTableCleaner(table, interval_s=0.02, on_purged=explode):
        await wait_for(lambda: len(table) == 0)
    assert "routing table cleanup failed" in caplog.text


async def test_stop_is_idempotent_and_start_twice_keeps_one_task():
    cleaner = RoutingTableCleaner(RoutingTable(RuntimeKind.LIBJOYNR), interval_s=10)
    cleaner.start()
    task = cleaner._task
    cleaner.start()
    assert cleaner._task is task
    await cleaner.stop()
    await cleaner.stop()
    assert task.cancelled()


@pytest.mark.parametrize("interval", [0, -1])
def test_interval_must_be_positive(interval):
    with pytest.raises(ValueError, match="interval"):
        RoutingTableCleaner(RoutingTable(RuntimeKind.LIBJOYNR), interval_s=interval)

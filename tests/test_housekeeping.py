"""The router's driver, on a real event loop with the real clock: periodic sweep and purge
through the process's task supervisor."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pyjoynr.runtime.addresses import Address, MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.housekeeping import RouterHousekeeping
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import OneWayRequest
from pyjoynr.runtime.router import MessageRouter, RouterSettings
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry

A = MqttAddress("g", "cc/caller")


async def wait_for(condition, timeout_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


class Gate:
    """A transport that refuses until opened (a connection that is down); ``fail`` makes
    it raise instead."""

    def __init__(self) -> None:
        self.open = False
        self.fail = False
        self.sent: list[Message] = []
        self.refused = 0

    def send(self, address: Address, message: Message) -> bool:
        if self.fail:
            raise RuntimeError("boom")
        if not self.open:
            self.refused += 1
            return False
        self.sent.append(message)
        return True


def one_way(recipient: str, ttl_ms: int) -> Message:
    return Message(MessageType.ONE_WAY, "x", recipient, now_ms() + ttl_ms,
                   OneWayRequest("m").to_body())


@pytest.fixture
async def tasks():
    supervisor = TaskSupervisor("test")
    yield supervisor
    await supervisor.close()


def make_router(telemetry: Telemetry | None = None, **settings: object) -> MessageRouter:
    return MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER),
                         RouterSettings(**settings),  # type: ignore[arg-type]
                         telemetry=telemetry)


async def test_purge_removes_expired_routes_periodically_but_not_sticky_ones(caplog, tasks):
    router = make_router()
    start = now_ms()
    router.add_route("short", A, is_globally_visible=True, expiry_date_ms=start + 100)
    router.add_route("long", A, is_globally_visible=True, expiry_date_ms=start + 60_000)
    router.add_route("sticky", A, is_globally_visible=True, expiry_date_ms=start,
                     is_sticky=True)
    router.multicast_receivers.add("prov/news", "short")
    caplog.set_level(logging.INFO, logger="pyjoynr.runtime.housekeeping")
    housekeeping = RouterHousekeeping(router, tasks, purge_interval_s=0.02)
    housekeeping.start()
    assert housekeeping.running
    await wait_for(lambda: not router.has_route("short"))
    assert now_ms() > start + 100
    runs = housekeeping.runs
    await wait_for(lambda: housekeeping.runs >= runs + 3)
    await housekeeping.stop()
    assert not housekeeping.running
    assert {pid for pid, _ in router.routing_entries()} == {"long", "sticky"}
    assert len(router.multicast_receivers) == 0  # the purged participant's receiver went too
    assert housekeeping.purged_total == 1
    assert "removed 1 expired entry" in caplog.text


async def test_sweep_drops_expired_messages_and_retries_refused_sends(tasks):
    telemetry = Telemetry()
    router = make_router(telemetry, sweep_interval_ms=10, retry_initial_ms=20,
                         retry_max_ms=50)
    gate = Gate()
    router.register_transport(WebSocketClientAddress, gate)
    router.add_route("c", WebSocketClientAddress("client"), is_globally_visible=False)
    router.route(one_way("nobody", ttl_ms=50))
    router.route(one_way("c", ttl_ms=10_000))
    assert router.queued() == 2
    housekeeping = RouterHousekeeping(router, tasks)
    housekeeping.start()
    await wait_for(lambda: router.queued("nobody") == 0 and gate.refused >= 3)
    assert telemetry.counters["dropped-expired-in-queue"] == 1
    gate.open = True
    await wait_for(lambda: len(gate.sent) == 1)
    assert router.queued() == 0
    await housekeeping.stop()


async def test_a_failing_round_is_logged_and_the_next_one_runs(caplog, tasks):
    router = make_router(sweep_interval_ms=10)
    gate = Gate()
    router.register_transport(WebSocketClientAddress, gate)
    router.add_route("c", WebSocketClientAddress("client"), is_globally_visible=False)
    router.route(one_way("c", ttl_ms=10_000))  # refused: the sweep retries it
    gate.fail = True  # ... and the retry raises
    housekeeping = RouterHousekeeping(router, tasks)
    housekeeping.start()
    await wait_for(lambda: "router-sweep failed" in caplog.text)
    gate.fail = False
    router.route(one_way("c", ttl_ms=10_000))  # refused again, queued
    gate.open = True
    await wait_for(lambda: len(gate.sent) == 1)  # delivered by a later round
    assert housekeeping.running
    await housekeeping.stop()


async def test_stop_is_idempotent_and_start_twice_keeps_one_pair_of_tasks(tasks):
    housekeeping = RouterHousekeeping(make_router(), tasks, purge_interval_s=10)
    housekeeping.start()
    assert len(tasks) == 2
    housekeeping.start()
    assert len(tasks) == 2
    await housekeeping.stop()
    await housekeeping.stop()
    assert len(tasks) == 0
    assert not housekeeping.running


@pytest.mark.parametrize("interval", [0, -1])
def test_intervals_must_be_positive(interval):
    with pytest.raises(ValueError, match="purge interval"):
        RouterHousekeeping(make_router(), TaskSupervisor("t"), purge_interval_s=interval)
    with pytest.raises(ValueError, match="sweep interval"):
        RouterHousekeeping(make_router(sweep_interval_ms=interval), TaskSupervisor("t"))

"""Provider code runs inside a task, as asyncio code expects, however the call arrives.

``asyncio.timeout`` and ``asyncio.current_task()`` need a current task. The provider methods
used here (tests/support/radio.py: ``bounded``, ``bounded_note``) read the current task, enter
a timeout before they wait for anything and let a second one end a long sleep: a request and
a one-way call, from a libjoynr runtime through a cluster controller to another libjoynr
runtime over websocket, across two cluster controllers through mosquitto, and inside the
cluster controller's own runtime. The CallRunner that runs them is tested on its own below.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.programming.calls import Call, CallRunner
from pyjoynr.testing.brokers import Mosquitto
from tests.support.mqtt_cluster import GBID, WAIT_S, MqttPair, start_pair
from tests.support.radio import Radio, RadioProvider

IN_A_TASK = "in a task, timed out"


class CheckingRadioProvider(RadioProvider):
    """Its attribute accessors need a task too."""

    async def get_volume(self) -> int:
        if asyncio.current_task() is None:
            raise RuntimeError("no current task")
        return int(self.get_attribute("volume"))

    async def set_current_station(self, value: str) -> None:
        async with asyncio.timeout(1.0):
            await asyncio.sleep(0)
        self.set_attribute("current_station", value)


async def check_request(proxy: Any) -> None:
    assert await proxy.bounded(0.05) == IN_A_TASK


async def check_one_way(proxy: Any, provider: RadioProvider) -> None:
    await proxy.bounded_note("one-way")
    await asyncio.wait_for(provider.noted.wait(), WAIT_S)
    assert provider.notes == [f"one-way: {IN_A_TASK}"]


@pytest.fixture
async def websocket_pair(cc, runtimes) -> tuple[Any, RadioProvider]:
    """A provider in one libjoynr runtime, its proxy in another, both on ``cc``."""
    provider_rt, consumer = await runtimes(), await runtimes()
    provider = CheckingRadioProvider()
    await provider_rt.register_provider("tasks", provider)
    return await consumer.build_proxy(Radio, "tasks", ttl_ms=5_000), provider


async def test_request_over_websocket(websocket_pair) -> None:
    await check_request(websocket_pair[0])


async def test_one_way_over_websocket(websocket_pair) -> None:
    await check_one_way(*websocket_pair)


async def test_attribute_accessors_over_websocket(websocket_pair) -> None:
    proxy = websocket_pair[0]
    assert await proxy.volume.get() == 7
    await proxy.current_station.set("Oe1")
    assert await proxy.current_station.get() == "Oe1"


async def test_calls_run_side_by_side(cc, runtimes) -> None:
    """A call that waits keeps its task; the calls after it do not wait for it."""
    provider_rt, consumer = await runtimes(), await runtimes()
    provider = RadioProvider()
    await provider_rt.register_provider("side-by-side", provider)
    proxy = await consumer.build_proxy(Radio, "side-by-side", ttl_ms=120_000)
    slow = asyncio.ensure_future(proxy.slow(60.0))  # its provider call sleeps for a minute
    results = await asyncio.gather(*(proxy.bounded(0.05) for _ in range(5)))
    assert results == [IN_A_TASK] * 5
    assert not slow.done()
    slow.cancel()


async def test_in_the_cluster_controllers_own_runtime(cc) -> None:
    provider = RadioProvider()
    await cc.runtime.register_provider("cc-tasks", provider)
    proxy = await cc.runtime.build_proxy(Radio, "cc-tasks", ttl_ms=5_000)
    await check_request(proxy)
    await check_one_way(proxy, provider)


@pytest.fixture
async def mqtt_pair(tmp_path: Path) -> AsyncIterator[MqttPair]:
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
        yield await start_pair(stack, tmp_path, {GBID: broker.url})


@pytest.mark.network
async def test_request_over_mqtt_across_two_cluster_controllers(mqtt_pair: MqttPair) -> None:
    await check_request(await mqtt_pair.proxy())


@pytest.mark.network
async def test_one_way_over_mqtt_across_two_cluster_controllers(mqtt_pair: MqttPair) -> None:
    await check_one_way(await mqtt_pair.proxy(), mqtt_pair.provider)


# ---------------------------------------------------------------------- the CallRunner


def new_runner(name: str = "test") -> CallRunner[Call]:
    """A runner whose items are the calls themselves; a discarded one is closed."""
    return CallRunner(name, lambda call: call, lambda call: call[0].close())


def call_of(coro: Any, what: str, context: contextvars.Context | None = None) -> Call:
    return coro, contextvars.copy_context() if context is None else context, what


async def test_calls_that_do_not_wait_share_one_task() -> None:
    runner = new_runner("test")
    seen: list[tuple[int, asyncio.Task[object] | None]] = []

    async def call(n: int) -> None:
        seen.append((n, asyncio.current_task()))

    for n in range(3):
        runner.submit(call_of(call(n), f"call {n}"))
    assert seen == []  # nothing runs inside receive(): the calls wait for their task
    await asyncio.sleep(0)
    assert [n for n, _ in seen] == [0, 1, 2]
    tasks = {task for _, task in seen}
    assert len(tasks) == 1 and None not in tasks
    await runner.close()


async def test_a_waiting_call_keeps_its_task_and_the_next_ones_get_another() -> None:
    runner = new_runner("test")
    release = asyncio.Event()
    order: list[str] = []
    tasks: dict[str, asyncio.Task[object] | None] = {}

    async def waits() -> None:
        tasks["waits-before"] = asyncio.current_task()
        await release.wait()
        tasks["waits-after"] = asyncio.current_task()
        order.append("waits")

    async def quick(name: str) -> None:
        tasks[name] = asyncio.current_task()
        order.append(name)

    runner.submit(call_of(waits(), "waits"))
    runner.submit(call_of(quick("a"), "a"))
    runner.submit(call_of(quick("b"), "b"))
    for _ in range(3):
        await asyncio.sleep(0)
    assert order == ["a", "b"]  # not behind the waiting call
    assert len(runner) == 1
    release.set()
    for _ in range(3):
        await asyncio.sleep(0)
    assert order == ["a", "b", "waits"]
    assert tasks["waits-before"] is tasks["waits-after"]
    assert tasks["a"] is tasks["b"] is not tasks["waits-before"]
    assert len(runner) == 0
    await runner.close()


async def test_each_call_has_its_own_context() -> None:
    runner = new_runner("test")
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[str] = []

    async def call() -> None:
        seen.append(var.get())
        var.set("changed by the call")

    for value in ("first", "second"):
        context = contextvars.copy_context()
        context.run(var.set, value)
        runner.submit(call_of(call(), value, context))
    await asyncio.sleep(0)
    assert seen == ["first", "second"]
    assert var.get() == "unset"
    await runner.close()


async def test_a_failing_call_is_logged_and_the_others_run(caplog) -> None:
    runner = new_runner("test runner")
    done: list[str] = []

    async def fails() -> None:
        raise RuntimeError("broken")

    async def fails_later() -> None:
        await asyncio.sleep(0)
        raise RuntimeError("broken later")

    async def works() -> None:
        done.append("works")

    for coro, what in ((fails(), "fails"), (fails_later(), "fails later"), (works(), "works")):
        runner.submit(call_of(coro, what))
    for _ in range(3):
        await asyncio.sleep(0)
    assert done == ["works"]
    failures = sorted(r.getMessage() for r in caplog.records
                      if r.name == "pyjoynr.programming.calls")
    assert failures == ["test runner: fails failed", "test runner: fails later failed"]
    await runner.close()


async def test_close_cancels_running_calls_and_discards_waiting_ones() -> None:
    runner = new_runner("test")
    cancelled = asyncio.Event()
    started: list[str] = []

    async def waits() -> None:
        started.append("waits")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def never() -> None:
        started.append("never")

    runner.submit(call_of(waits(), "waits"))
    await asyncio.sleep(0)
    assert started == ["waits"]
    runner.submit(call_of(never(), "never"))
    await runner.close()
    assert cancelled.is_set()
    assert len(runner) == 0
    late = never()
    runner.submit(call_of(late, "late"))  # closed: dropped and discarded
    await asyncio.sleep(0)
    assert started == ["waits"]
    assert late.cr_frame is None  # closed, never run


async def test_wait_done_waits_for_the_calls_taken_and_those_taken_meanwhile() -> None:
    """A graceful stop finishes what it took: wait_done returns only once every call
    submitted before it, and during it, has ended (none cancelled)."""
    runner = new_runner("test")
    release = [asyncio.Event(), asyncio.Event()]
    ended: list[str] = []

    async def waits(n: int) -> None:
        await release[n].wait()
        ended.append(f"waits {n}")

    async def quick() -> None:
        ended.append("quick")

    await runner.wait_done()  # nothing to wait for
    runner.submit(call_of(waits(0), "waits 0"))
    runner.submit(call_of(quick(), "quick"))
    assert len(runner) == 2
    waiter = asyncio.create_task(runner.wait_done())
    for _ in range(3):
        await asyncio.sleep(0)
    assert ended == ["quick"] and len(runner) == 1 and not waiter.done()
    runner.submit(call_of(waits(1), "waits 1"))  # taken while stopping
    release[0].set()
    for _ in range(3):
        await asyncio.sleep(0)
    assert ended == ["quick", "waits 0"] and not waiter.done()
    release[1].set()
    await asyncio.wait_for(waiter, 5)
    assert ended == ["quick", "waits 0", "waits 1"] and len(runner) == 0
    # a bounded wait that runs out leaves the call running, for close() to cancel
    runner.submit(call_of(waits(0), "waits again"))
    release[0].clear()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(runner.wait_done(), 0.05)
    assert len(runner) == 1
    await runner.close()
    assert len(runner) == 0

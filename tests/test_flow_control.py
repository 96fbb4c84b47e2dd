"""Senders are slowed down rather than losing messages; what cannot be kept is reported."""

from __future__ import annotations

import pytest

from pyjoynr.libjoynr import LibjoynrConfig
from pyjoynr.libjoynr.advanced import MessageNotSentError, RouterSettings
from pyjoynr.testing.cluster import eventually
from tests.support.radio import Radio, RadioProvider


async def test_a_burst_of_one_way_calls_arrives_complete(cc, runtimes):
    provider_rt, consumer = await runtimes(), await runtimes()
    provider = RadioProvider()
    await provider_rt.register_provider("d", provider)
    proxy = await consumer.build_proxy(Radio, "d", ttl_ms=60_000)
    # more than the client's outgoing queue (10,000) and its router queue (1,000) together
    n = 15_000
    for i in range(n):
        await proxy.note(str(i))
    await eventually(lambda: len(provider.notes) == n, timeout_s=60, what="all notes")
    assert provider.notes[:3] == ["0", "1", "2"]
    assert provider.notes[-1] == str(n - 1)
    assert not consumer.core.telemetry.counters["dropped-queue-full"]
    assert not cc.telemetry.counters["dropped-queue-full"]


async def test_a_one_way_call_that_cannot_be_kept_raises(cc, runtimes):
    provider_rt = await runtimes()
    await provider_rt.register_provider("d", RadioProvider())
    consumer = await runtimes(
        config=LibjoynrConfig(router=RouterSettings(max_queued_per_recipient=3)))
    proxy = await consumer.build_proxy(Radio, "d", ttl_ms=60_000)
    await consumer.core.transport.stop()  # disconnected: calls wait in the router's queue
    for i in range(3):
        await proxy.note(f"kept-{i}")
    with pytest.raises(MessageNotSentError, match="queue full"):
        await proxy.note("one too many")
    assert consumer.core.telemetry.counters["dropped-queue-full"] == 1

"""A libjoynr runtime acts only for its own participants: directory and shutdown behaviour."""

from __future__ import annotations

import pytest

from pyjoynr.libjoynr import ProviderQos, connect
from pyjoynr.libjoynr.advanced import ProviderRuntimeError
from pyjoynr.programming.discovery_types import DiscoveryEntry, Version
from pyjoynr.runtime.clock import now_ms
from pyjoynr.testing.cluster import ClusterController, cc_config, eventually
from tests.support.radio import Radio, RadioProvider


def entry_for(pid: str) -> DiscoveryEntry:
    now = now_ms()
    return DiscoveryEntry(Version(1, 2), "d", "test/Radio", pid, ProviderQos(), now,
                          now + 60_000)


async def test_a_runtime_cannot_register_or_remove_another_runtimes_provider(cc, runtimes):
    owner, intruder = await runtimes(), await runtimes()
    pid = await owner.register_provider("d", RadioProvider())
    with pytest.raises(ProviderRuntimeError, match="not routed to the caller"):
        await intruder.core.remote.discovery.add(entry_for(pid))
    with pytest.raises(ProviderRuntimeError, match="not routed to the caller"):
        await intruder.core.remote.discovery.remove(pid)
    with pytest.raises(ProviderRuntimeError, match="not routed to the caller"):
        await intruder.core.remote.discovery.add(entry_for("never-registered"))
    assert [e.participant_id for e in cc.discovery.entries()] == [pid]
    # the owner itself may
    await owner.core.remote.discovery.remove(pid)
    assert cc.discovery.entries() == []


async def test_shutdown_writes_what_is_queued_for_clients_before_closing(tmp_path):
    cc = ClusterController(cc_config(tmp_path))
    await cc.start()
    provider_rt = await connect(cc.websocket_address.url)
    try:
        provider = RadioProvider()
        await provider_rt.register_provider("d", provider)
        proxy = await cc.runtime.build_proxy(Radio, "d")  # a consumer inside the CC
        for i in range(2_000):  # one-way calls do not yield: all wait in the CC's outbox
            await proxy.note(f"n{i}")
        assert cc.websocket.pending_to(provider_rt.client_id) > 1_000
        await cc.stop()
        await eventually(lambda: len(provider.notes) == 2_000, what="all notes written")
        assert provider.notes == [f"n{i}" for i in range(2_000)]
    finally:
        await provider_rt.core.stop()

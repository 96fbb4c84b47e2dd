"""What one websocket connection's registrations cost a cluster controller in memory, measured
with tracemalloc, and the total at the defaults of [connection_bounds].

Usage: .venv/bin/python bench/connection_bounds_memory.py [--count N]

An in-process cluster controller (no MQTT) and one libjoynr runtime connected over websocket;
the runtime calls the cluster controller's Routing and Discovery providers directly (through
``runtime.remote``), so that it keeps nothing of what it registers: what stays allocated after
a full collection is what the cluster controller holds. Each kind is measured on its own,
``--count`` times: routes (add_next_hop: routing table entry, its index, the connection's
quota), providers (Discovery add of a LOCAL entry: the entry, the quota), multicast receivers
(add_multicast_receiver: the receiver index, the quota) and subscriptions (the quota's entry
of a subscription id, all the cluster controller keeps of a subscription request). Ids are
uuid4 strings, as libjoynr runtimes make them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyjoynr.libjoynr import LibjoynrRuntime, ProviderQos, connect
from pyjoynr.programming.discovery_types import DiscoveryEntry, Version
from pyjoynr.runtime.addresses import WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.multicast import make_multicast_id
from pyjoynr.runtime.quotas import KINDS, SUBSCRIPTIONS, ConnectionBounds
from pyjoynr.testing.cluster import ClusterController, cc_config
from tests.support.radio import RadioProvider  # (the test suite's example interface)


async def held(count: int, make: Callable[[int], Awaitable[object]]) -> float:
    """Bytes that stay allocated per call of ``make``."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(count):
        await make(i)
    gc.collect()
    return (tracemalloc.get_traced_memory()[0] - before) / count


async def measure(cc: ClusterController, rt: LibjoynrRuntime, count: int) -> dict[str, float]:
    """Bytes each kind of registration stays allocated for (see the module docstring)."""
    remote = rt.core.remote
    provider = await rt.register_provider("bench", RadioProvider())
    subscriber = str(uuid.uuid4())
    await remote.add_next_hop(subscriber, False)
    quotas = cc.quotas
    client = WebSocketClientAddress(rt.client_id)

    async def route(i: int) -> None:
        await remote.add_next_hop(str(uuid.uuid4()), False)

    async def entry(i: int) -> None:
        pid = str(uuid.uuid4())
        await remote.add_next_hop(pid, False)
        now = now_ms()
        await remote.discovery.add(DiscoveryEntry(
            Version(1, 0), "com.example.vehicle.domain", "vehicle/Radio", pid,
            ProviderQos(), now, now + 3_600_000))

    async def receiver(i: int) -> None:
        pattern = make_multicast_id(provider, "newStation", [f"p{i}"], for_subscription=True)
        await remote.add_multicast_receiver(pattern, subscriber, provider)

    async def subscription(i: int) -> None:
        quotas.admit(SUBSCRIPTIONS, client, str(uuid.uuid4()))

    tracemalloc.start()
    try:
        return {"route": await held(count, route),
                "provider (with its route)": await held(count, entry),
                "multicast receiver": await held(count, receiver),
                "subscription": await held(count, subscription)}
    finally:
        tracemalloc.stop()


async def main(count: int) -> None:
    # bounds out of the way: what is measured is what one registration costs
    wide = {f"connection_bounds__max_{kind}_per_{per}": 10 * count
            for kind in KINDS for per in ("connection", "owner")}
    with tempfile.TemporaryDirectory() as tmp:
        config = cc_config(Path(tmp), admin__enabled="false", **wide)
        async with ClusterController(config) as cc, connect(cc.websocket_address) as rt:
            figures = await measure(cc, rt, count)
    bounds = ConnectionBounds()
    at_defaults = {
        "route": bounds.max_routes_per_connection,
        "provider (with its route)": bounds.max_providers_per_connection,
        "multicast receiver": bounds.max_multicast_receivers_per_connection,
        "subscription": bounds.max_subscriptions_per_connection,
    }
    total = 0.0
    print(f"{'kind':28} {'bytes each':>10} {'default bound':>14} {'MiB at the bound':>17}")
    for kind, each in figures.items():
        bound = at_defaults[kind]
        total += each * bound
        print(f"{kind:28} {each:10.0f} {bound:14,d} {each * bound / 2**20:17.1f}")
    print(f"one connection at every default bound: {total / 2**20:.1f} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=2_000)
    asyncio.run(main(parser.parse_args().count))

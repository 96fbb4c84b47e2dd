"""A GCD instance serves while its index loads at start-up: lookups read the store meanwhile.

The load is held up by a real obstacle: in SQLite, a store whose load waits at a gate before
its first batch; in PostgreSQL, another session holding an exclusive lock on the version row's
table, which the load's first statement reads (lookups read only the entries, so they pass).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import asyncpg
import pytest

from pyjoynr.admin.health import Probe
from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.changes import LoadBatch
from pyjoynr.gcd.interface import GCD_DOMAIN
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory as Gcd
from pyjoynr.gcd.operability import gcd_ready_checks
from pyjoynr.gcd.postgres_store import PostgresStore
from pyjoynr.gcd.provider import GcdProvider
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.gcd.store import StoredEntry, StoreError
from pyjoynr.gcd.sync import Synchronizer, SyncSettings
from pyjoynr.programming.discovery_types import (
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.system_interfaces import address_to_json
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import ApplicationError, ProviderRuntimeError
from pyjoynr.testing.brokers import Mosquitto
from tests.support import mqtt_clients
from tests.support.gcd_stores import fresh_postgres_dsn
from tests.support.mqtt_cluster import mqtt_cc_config
from tests.test_gcd_service import gcd_provisioning

G1 = "joynrdefaultgbid"
WAIT_S = 10.0


def row(pid: str, domain: str = "vehicle") -> StoredEntry:
    return StoredEntry(G1, pid, domain, "test/Radio", 1, 0, 0, "GLOBAL", False, "[]",
                       now_ms(), now_ms() + 3_600_000, "", "joynr/cc/cc-1", "cc-1")


def entry(pid: str) -> GlobalDiscoveryEntry:
    return GlobalDiscoveryEntry(
        Version(1, 0), "vehicle", "test/Radio", pid, ProviderQos(scope=ProviderScope.GLOBAL),
        now_ms(), now_ms() + 60_000, "", address_to_json(MqttAddress("ignored", "joynr/cc/x")))


class _GatedStore(SqliteStore):
    """A SQLite store whose load waits for :attr:`gate` before it hands out anything."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.gate = asyncio.Event()

    async def load(self, batch_size: int = 10_000) -> AsyncIterator[LoadBatch | int]:
        await self.gate.wait()
        async for item in super().load(batch_size):
            yield item


@pytest.fixture
async def gated(tmp_path: Path) -> AsyncIterator[_GatedStore]:
    store = _GatedStore(tmp_path / "gcd.sqlite")
    await store.open()
    try:
        await store.add_changes([row(f"p{i}") for i in range(5)])
        yield store
    finally:
        await store.close()


@contextlib.asynccontextmanager
async def _starting(store: _GatedStore, settings: SyncSettings | None = None
                    ) -> AsyncIterator[tuple[Synchronizer, GcdProvider, asyncio.Future[None]]]:
    """A synchroniser starting on ``store`` (its load held at the gate), its provider, and the
    start; at the end the gate opens, the start ends and the synchroniser stops."""
    sync = Synchronizer(store, settings=settings)
    provider = GcdProvider(store, G1, [G1], sync=sync)
    loading = asyncio.ensure_future(sync.start())
    try:
        yield sync, provider, loading
    finally:
        store.gate.set()
        with contextlib.suppress(Exception):
            await loading
        await sync.stop()


async def test_lookups_and_writes_are_served_from_the_store_while_the_index_loads(
        gated: _GatedStore) -> None:
    async with _starting(gated, SyncSettings(batch_size=2)) as (sync, provider, loading):
        await sync.wait_serving(WAIT_S)
        assert sync.serving_from_store and not sync.ready and not loading.done()
        stats = sync.stats()
        assert stats.serving_from_store and not stats.ready and stats.rows_loaded == 0
        found = await provider.lookup(["vehicle"], "test/Radio")
        assert sorted(e.participant_id for e in found) == [f"p{i}" for i in range(5)]
        one = await provider.lookup_participant("p3")
        assert one.participant_id == "p3" and one.domain == "vehicle"
        # a write is taken while the index loads, and read back at once from the store
        await provider.add_in_backends(entry("new"), [G1])
        assert (await provider.lookup_participant("new")).participant_id == "new"
        await provider.remove_participants(["p0"])
        found = await provider.lookup(["vehicle"], "test/Radio")
        assert "p0" not in {e.participant_id for e in found}
        assert provider.store_lookups == 4 and len(sync.index) == 0
        gated.gate.set()
        await asyncio.wait_for(loading, WAIT_S)
        assert sync.ready and not sync.serving_from_store
        # what was written while the index loaded is in it: answered from the index now
        assert sorted(e.participant_id for e in sync.index.find(["vehicle"], "test/Radio",
                                                                now_ms())) == [
            "new", "p1", "p2", "p3", "p4"]
        assert (await provider.lookup_participant("new")).participant_id == "new"
        assert provider.store_lookups == 4
        assert sync.stats().rows_loaded == len(sync.index) == 5


async def test_without_serve_while_loading_nothing_is_answered_before_the_index_is_ready(
        gated: _GatedStore) -> None:
    async with _starting(gated, SyncSettings(serve_while_loading=False)) as (
            sync, provider, loading):
        with pytest.raises(TimeoutError):
            await sync.wait_serving(0.2)
        assert not sync.serving_from_store and not sync.ready
        with pytest.raises(ProviderRuntimeError, match="not loaded yet"):
            await provider.lookup(["vehicle"], "test/Radio")
        with pytest.raises(ApplicationError, match="not loaded yet"):
            await provider.add_in_backends(entry("refused"), [G1])
        gated.gate.set()
        await asyncio.wait_for(loading, WAIT_S)
        await sync.wait_serving(WAIT_S)
        assert len(await provider.lookup(["vehicle"], "test/Radio")) == 5
        assert provider.store_lookups == 0


async def test_a_store_that_fails_a_lookup_while_the_index_loads_is_a_storage_failure(
        gated: _GatedStore) -> None:
    async with _starting(gated) as (sync, provider, _):
        await sync.wait_serving(WAIT_S)
        await gated.close()  # the store goes away under the loading instance
        with pytest.raises(ProviderRuntimeError, match="storage failure"):
            await provider.lookup(["vehicle"], "test/Radio")
        assert provider.store_failures


# ---------------------------------------------------------------------- the service, over MQTT


def _hold_load(service: GcdService) -> asyncio.Event:
    """Hold the service's start-up load before its first read until the event is set (the
    store's own load then runs as it is)."""
    store, gate = service.store, asyncio.Event()
    real_load = store.load  # type: ignore[attr-defined]

    async def held(batch_size: int = 10_000) -> AsyncIterator[LoadBatch | int]:
        await gate.wait()
        async for item in real_load(batch_size):
            yield item

    store.load = held  # type: ignore[attr-defined]
    return gate


async def _filled_postgres(request: pytest.FixtureRequest, pids: list[str]) -> str:
    dsn = await fresh_postgres_dsn(request.config)
    store = PostgresStore(dsn)
    await store.open()
    try:
        await store.add_changes([row(pid) for pid in pids])
    finally:
        await store.close()
    return dsn


async def _answers() -> str | None:
    return None


async def _serving(stack: AsyncExitStack, tmp_path: Path, dsn: str
                   ) -> tuple[Mosquitto, GcdService, asyncio.Event, asyncio.Future[None]]:
    """A broker, and a GCD instance on ``dsn`` started with its load held (open the gate to
    let it go on), serving from the store and connected: the broker, the service, the gate
    and the start."""
    broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
    service = GcdService(GcdSettings(
        gbid=G1, broker_url=broker.url, valid_gbids=(G1,), store="postgres", postgres_dsn=dsn,
        mqtt_client=mqtt_clients.current(), data_dir=tmp_path / "gcd", sync_stats_interval_s=0))
    gate = _hold_load(service)
    starting = asyncio.ensure_future(service.start())
    stack.callback(gate.set)
    await asyncio.wait_for(service.sync.wait_serving(), WAIT_S)
    await service.mqtt.wait_connected(WAIT_S)
    return broker, service, gate, starting


@pytest.mark.network
@pytest.mark.usefixtures("mqtt_client")
async def test_a_restarted_instance_answers_over_mqtt_before_its_index_is_loaded(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pids = [f"stored-{i}" for i in range(20)]
    dsn = await _filled_postgres(request, pids)
    async with AsyncExitStack() as stack:
        broker, service, gate, starting = await _serving(stack, tmp_path, dsn)
        stack.push_async_callback(service.stop)
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-serving", {G1: broker.url},
            discovery__provisioning_file=str(gcd_provisioning(tmp_path / "prov.toml")))))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        gcd = await cc.runtime.build_proxy(Gcd, GCD_DOMAIN, ttl_ms=5_000)
        found = await gcd.lookup(["vehicle"], "test/Radio")
        assert sorted(e.participant_id for e in found) == sorted(pids)
        assert not service.sync.ready and service.serving and not starting.done()
        assert service.provider.store_lookups == 1
        checks = {c.name: c for c in await gcd_ready_checks(
            service, Probe("the store", _answers, timeout_s=5, max_age_s=0))}
        index = checks["GCD index"]
        assert not index.ok and not index.required and "from the store" in index.detail
        # the load goes on: start() returns, the index answers
        gate.set()
        await asyncio.wait_for(starting, WAIT_S)
        assert service.sync.ready and len(service.sync.index) == len(pids)
        assert len(await gcd.lookup(["vehicle"], "test/Radio")) == len(pids)
        assert service.provider.store_lookups == 1


@pytest.mark.network
@pytest.mark.usefixtures("mqtt_client")
async def test_a_load_that_fails_after_serving_began_stops_everything_it_started(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    dsn = await _filled_postgres(request, ["p"])
    async with AsyncExitStack() as stack:
        _, service, gate, starting = await _serving(stack, tmp_path, dsn)
        conn = await asyncpg.connect(dsn)  # the table goes: the load fails
        try:
            await conn.execute("DROP TABLE discovery_entries")
        finally:
            await conn.close()
        gate.set()
        with pytest.raises(StoreError):
            await asyncio.wait_for(starting, WAIT_S)
        assert not service.serving
        assert not any(b.connected.is_set() for b in service.mqtt.backends)
        assert service.tasks.closed

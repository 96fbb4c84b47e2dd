"""A GCD cluster: several instances on one PostgreSQL, each answering from its in-memory index
(docs/discovery.md). Real PostgreSQL, real notifications (LISTEN/NOTIFY), real brokers and cluster
controllers where it says so.

Most tests drive instances without MQTT (tests/support/sync_harness.py: provider +
synchroniser + own connection pool + notifier), with the timers switched off so that each
step is the test's; the notification channel and the store can be held or made faulty there
(a wrapper around the real ones, never a replacement).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.changes import LoadBatch, bucket_of
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.gcd.store import StoredEntry
from pyjoynr.gcd.sync import Synchronizer, SyncSettings
from pyjoynr.libjoynr import DiscoveryQos, DiscoveryScope, ProviderQos, ProviderScope
from pyjoynr.libjoynr import connect as joynr_connect
from pyjoynr.programming.discovery_types import GlobalDiscoveryEntry, Version
from pyjoynr.programming.discovery_types import ProviderQos as GcdQos
from pyjoynr.programming.system_interfaces import address_to_json
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import ApplicationError
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.postgres import PostgresServer
from tests.support import mqtt_clients
from tests.support.examples import examples
from tests.support.gcd_stores import fresh_postgres_dsn
from tests.support.mqtt_cluster import WAIT_S, mqtt_cc_config
from tests.support.radio import RadioProvider
from tests.support.sync_harness import Instance, store_rows

pytestmark = pytest.mark.network

G1, G2 = "GBID1", "GBID2"
#: bounded waits: polls of 20 ms
POLLS = 500


def entry(pid: str, *, domain: str = "d", cc: str = "cc-1", expiry_ms: int | None = None
          ) -> GlobalDiscoveryEntry:
    now = now_ms()
    return GlobalDiscoveryEntry(
        Version(1, 0), domain, "test/I", pid, GcdQos(scope=ProviderScope.GLOBAL), now,
        expiry_ms if expiry_ms is not None else now + 3_600_000, "",
        address_to_json(MqttAddress("ignored", f"joynr/cc/{cc}")))


def index_rows(instance: Instance) -> dict[tuple[str, str], tuple[StoredEntry, int]]:
    return {e.key: (e, v) for e, v in instance.index.rows()}


async def equals_store(instance: Instance) -> bool:
    return index_rows(instance) == await store_rows(instance.pg)  # type: ignore[arg-type]


async def eventually(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``condition`` (bounded: POLLS x 20 ms)."""
    for _ in range(POLLS):
        if await condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"not within {POLLS * 0.02:.0f} s: {what}")


async def all_equal_store(instances: list[Instance]) -> bool:
    for instance in instances:
        if not await equals_store(instance):
            return False
    return True


def refs_match_keys(instance: Instance) -> None:
    """Every shared parameter object is referenced by exactly the keys that use it."""
    index = instance.index
    users: dict[int, int] = {}
    objects = {}
    for e, _ in index.rows():
        params = index.shared_params_of(e.gbid, e.participant_id)
        assert params is not None
        users[id(params)] = users.get(id(params), 0) + 1
        objects[id(params)] = params
    held = list(index.shared_params())
    assert {id(p) for p in held} == set(objects)
    for params in held:
        assert params.refs == users[id(params)]
    figures = index.stats()
    assert figures.param_refs == len(index) == sum(users.values())


@pytest.fixture
async def dsn(request: pytest.FixtureRequest) -> str:
    return await fresh_postgres_dsn(request.config)


@pytest.fixture
async def cluster(dsn: str) -> AsyncIterator[Callable[..., Awaitable[Instance]]]:
    """``await cluster(name, **options)``: a started instance on the test's database."""
    started: list[Instance] = []

    async def make(name: str, **options: Any) -> Instance:
        instance = await Instance(dsn, name, **options).start()
        started.append(instance)
        return instance

    try:
        yield make
    finally:
        for instance in reversed(started):
            await instance.stop()


def same_bucket_pid(pid: str, gbid: str = G1) -> str:
    """Another participantId whose key (gbid, it) is in the bucket of (gbid, pid)."""
    bucket = bucket_of(gbid, pid)
    for i in range(1_000_000):
        other = f"{pid}-twin-{i}"
        if bucket_of(gbid, other) == bucket:
            return other
    raise AssertionError("no twin found")


# ====================================================================== through MQTT, with CCs


@pytest.mark.usefixtures("mqtt_client")
async def test_a_write_on_any_instance_is_visible_in_the_lookups_of_all_through_mqtt(
        tmp_path: Path, dsn: str) -> None:
    """Three GCD instances (two in backend 1 sharing its requests, one in backend 2), two
    brokers, one PostgreSQL; two cluster controllers with runtimes register and look up."""
    async with AsyncExitStack() as stack:
        brokers = {g: await stack.enter_async_context(Mosquitto(tmp_path / g)) for g in (G1, G2)}
        gcds = []
        for n, gbid in enumerate((G1, G1, G2)):
            service = await stack.enter_async_context(GcdService(GcdSettings(
                gbid=gbid, broker_url=brokers[gbid].url, valid_gbids=[G1, G2],
                store="postgres", postgres_dsn=dsn, shared_subscription_group="gcd",
                client_id=f"gcd-{n}", catch_up_interval_s=60, repair_interval_s=60,
                mqtt_client=mqtt_clients.current())))
            await service.mqtt.wait_connected(WAIT_S)
            gcds.append(service)
        one = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "one", "cc-one", {G1: brokers[G1].url, G2: brokers[G2].url})))
        two = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "two", "cc-two", {G2: brokers[G2].url})))
        for cc in (one, two):
            assert cc.mqtt is not None
            await cc.mqtt.wait_connected(WAIT_S)
        rt_one = await joynr_connect(one.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
        stack.push_async_callback(rt_one.close)
        rt_two = await joynr_connect(two.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
        stack.push_async_callback(rt_two.close)
        domain = f"cluster.{uuid.uuid4().hex[:8]}"
        qos = DiscoveryQos(discovery_scope=DiscoveryScope.GLOBAL_ONLY)

        async def in_every_index(pid: str, present: bool) -> bool:
            return all(bool(g.sync.index.find_participant(pid, now_ms())) == present
                       for g in gcds)

        # written through a backend-1 instance, seen by all three, found from CC two
        pid_one = await rt_one.register_provider(domain, RadioProvider(),
                                                 qos=ProviderQos(scope=ProviderScope.GLOBAL),
                                                 await_global_registration=True)
        await eventually(lambda: in_every_index(pid_one, True), "registration seen by all")
        found = await two.discovery.lookup([domain], "test/Radio", qos)
        assert [e.participant_id for e in found] == [pid_one]
        # written through the backend-2 instance, seen by all three, found from CC one
        pid_two = await rt_two.register_provider(domain, RadioProvider(),
                                                 qos=ProviderQos(scope=ProviderScope.GLOBAL),
                                                 await_global_registration=True)
        await eventually(lambda: in_every_index(pid_two, True), "second registration")
        found = await one.discovery.lookup([domain], "test/Radio", qos)
        assert sorted(e.participant_id for e in found) == sorted([pid_one, pid_two])
        # a removal, the same way
        await rt_two.unregister_provider(pid_two)
        await eventually(lambda: in_every_index(pid_two, False), "removal seen by all")
        found = await one.discovery.lookup([domain], "test/Radio", qos)
        assert [e.participant_id for e in found] == [pid_one]
        # the others learnt it by notification (their timers are at 60 s)
        assert all(g.sync.stats().notifications_received > 0 for g in gcds)
        assert all(g.stats()["index_rows"] == len(g.sync.index) for g in gcds)


# ====================================================================== convergence per mechanism


@pytest.mark.parametrize("mode", ["notifications-only", "timer-only", "repair-only"])
async def test_instances_converge_by_each_mechanism_alone(
        cluster: Callable[..., Awaitable[Instance]], mode: str) -> None:
    options: dict[str, Any] = {
        "notifications-only": dict(notifications=True, settings=SyncSettings(
            catch_up_interval_s=0, repair_interval_s=0, stats_interval_s=0)),
        "timer-only": dict(notifications=False, settings=SyncSettings(
            catch_up_interval_s=0.05, repair_interval_s=0, stats_interval_s=0)),
        "repair-only": dict(notifications=False, settings=SyncSettings(
            catch_up_interval_s=0, repair_interval_s=0.05, stats_interval_s=0)),
    }[mode]
    instances = [await cluster(name, **options) for name in ("a", "b", "c")]
    a, b, c = instances
    await a.provider.add_in_backends(entry("p1"), [G1, G2])
    await b.provider.add_in_backends(entry("p2", cc="cc-2"), [G2])
    await c.provider.add_entries([entry("p3"), entry("p4", cc="cc-2")])
    await eventually(lambda: all_equal_store(instances), f"{mode}: adds everywhere")
    await a.provider.remove_in_backends("p1", [G2])
    await b.provider.touch("cc-1")
    await c.provider.remove_stale("cc-2", now_ms() + 1)
    await eventually(lambda: all_equal_store(instances), f"{mode}: changes everywhere")
    assert {p for _, p in index_rows(a)} == {"p1", "p3"}
    figures = [i.sync.stats() for i in instances]
    if mode == "repair-only":
        assert all(f.catch_ups == 1 for f in figures)  # the start-up's, nothing since
        assert sum(f.keys_repaired for f in figures) > 0
    else:
        assert all(f.keys_repaired == 0 for f in figures)
    if mode == "notifications-only":
        assert all(f.notifications_received > 0 for f in figures)
    for instance in instances:
        refs_match_keys(instance)


# ====================================================================== property: faulty channel


OPS = st.lists(st.tuples(st.integers(0, 2),
                         st.sampled_from(["add", "add_both", "remove", "remove_own",
                                          "touch", "remove_stale"]),
                         st.sampled_from(["k0", "k1", "k2"]),
                         st.sampled_from(["cc-1", "cc-2"]),
                         st.booleans()),
               min_size=1, max_size=10)
FAULTS = st.fixed_dictionaries({
    "drop": st.sampled_from([0.0, 0.3, 1.0]),
    "duplicate": st.sampled_from([0.0, 0.5]),
    "max_delay_s": st.sampled_from([0.0, 0.02]),
})


async def _apply_op(instance: Instance, op: str, key: str, cc: str) -> None:
    provider = instance.provider
    try:
        if op == "add":
            await provider.add(entry(key, cc=cc, domain=cc))
        elif op == "add_both":
            await provider.add_in_backends(entry(key, cc=cc), [G1, G2])
        elif op == "remove":
            await provider.remove_in_backends(key, [G1, G2])
        elif op == "remove_own":
            await provider.remove(key)
        elif op == "touch":
            await provider.touch(cc)
        else:
            await provider.remove_stale(cc, now_ms() + 1)
    except ApplicationError as exc:
        assert exc.error in ("NO_ENTRY_FOR_PARTICIPANT", "NO_ENTRY_FOR_SELECTED_BACKENDS")


async def _scenario(config: pytest.Config, ops: list[tuple[int, str, str, str, bool]],
                    faults: dict[str, float], seed: int) -> None:
    dsn = await fresh_postgres_dsn(config)
    instances: list[Instance] = []
    try:
        for n in range(3):
            instances.append(await Instance(dsn, f"i{n}", faults=faults, seed=seed + n,
                                            own_gbid=(G1, G1, G2)[n]).start())
        pending: list[Awaitable[None]] = []
        for who, op, key, cc, concurrent in ops:
            pending.append(_apply_op(instances[who], op, key, cc))
            if not concurrent:
                await asyncio.gather(*pending)
                pending = []
        await asyncio.gather(*pending)
        # quiescence: delayed notifications delivered, the woken catch-ups done
        for instance in instances:
            await eventually(lambda i=instance: _no_delayed(i), "delayed notifications")
            await instance.sync.settled(10)
        for instance in instances:
            await instance.sync.catch_up()  # what the timer does
            assert await equals_store(instance)
            assert await instance.sync.repair() == 0
            assert await instance.sync.repair() == 0
            refs_match_keys(instance)
    finally:
        for instance in instances:
            await instance.stop()


async def _no_delayed(instance: Instance) -> bool:
    return not any(t.get_name() == "faulty-notification" and not t.done()
                   for t in asyncio.all_tasks())


# the same examples every run (derandomized): the first 8 in the suite, more in a soak run
# (PYJOYNR_SOAK=3: 24, tests/support/examples.py)
@settings(max_examples=examples(8), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=OPS, faults=FAULTS, seed=st.integers(0, 1000))
def test_any_write_sequence_through_a_faulty_channel_leaves_every_index_equal_to_the_store(
        pytestconfig: pytest.Config, ops: list[tuple[int, str, str, str, bool]],
        faults: dict[str, float], seed: int) -> None:
    asyncio.run(_scenario(pytestconfig, ops, faults, seed))


# ========================================================== the synchronisation's hazards


async def test_repair_racing_writes_undoes_nothing(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    """Hazard 3: the repair's store snapshot is held open while writes land; nothing of them
    is undone when it is applied."""
    a = await cluster("a")
    b = await cluster("b", notifications=False, held=True)
    gone, late, own = "p", same_bucket_pid("p"), same_bucket_pid("p-own")
    await a.provider.add(entry(gone))  # b does not know it: its bucket differs
    assert b.held is not None
    b.held.hold.add("rows_in_buckets")
    repair = asyncio.ensure_future(b.sync.repair())
    await b.held.waiting.wait()  # the snapshot S has `gone`
    await a.provider.remove(gone)  # after S: deleted ...
    await a.provider.add(entry(late))  # ... and a row added in the same bucket
    await b.sync.catch_up()
    await b.provider.add(entry(own))  # and b's own write
    b.held.release()
    await repair
    keys = {p for _, p in index_rows(b)}
    assert gone not in keys and {late, own} <= keys
    assert await equals_store(b)
    assert await b.sync.repair() == 0
    refs_match_keys(b)


async def test_concurrent_registration_from_notification_repair_and_api_counted_once(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    """Hazard 2: one registration reaching an instance by its notification, a repair and its
    own API at once counts one reference per key."""
    a = await cluster("a")
    b = await cluster("b", faults={}, held=True)
    assert b.faulty is not None and b.held is not None
    b.faulty.holding = True
    registration = entry("k")
    await a.provider.add_in_backends(registration, [G1, G2])  # one params object, two keys
    b.held.hold.add("rows_in_buckets")
    repair = asyncio.ensure_future(b.sync.repair())
    await b.held.waiting.wait()
    await b.provider.add_in_backends(registration, [G1, G2])  # the API, same parameters
    b.faulty.release()  # the notification(s)
    await b.sync.settled(10)
    b.held.release()  # the repair
    await repair
    await b.sync.catch_up()
    for instance in (a, b):
        figures = instance.index.stats()
        assert (figures.shared_params, figures.param_refs, len(instance.index)) == (1, 2, 2)
        refs_match_keys(instance)
    await a.provider.remove_in_backends("k", [G1])
    await b.sync.catch_up()
    assert (b.index.stats().shared_params, b.index.stats().param_refs) == (1, 1)
    await b.provider.remove_in_backends("k", [G2])
    assert (b.index.stats().shared_params, b.index.stats().param_refs) == (0, 0)
    await a.sync.catch_up()
    assert (a.index.stats().shared_params, a.index.stats().param_refs) == (0, 0)


async def test_two_instances_writing_one_key_converge_to_the_stored_winner(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    """Hazard 5: two instances write one key at once, again and again; every instance ends
    with the row the store kept, not its own losing one."""
    instances = [await cluster("a", held=True), await cluster("b"), await cluster("c")]
    a, b, _ = instances
    # the loser's answer comes late: a's write committed first, b's after it, and a learns
    # b's (by notification) before its own write returns
    assert a.held is not None
    a.held.hold.add("add_changes")
    losing = asyncio.ensure_future(a.provider.add(entry("k", domain="a-first")))
    await a.held.waiting.wait()
    await b.provider.add(entry("k", domain="b-second"))
    await eventually(lambda: _domain_is(a, "k", "b-second"), "a heard of b's write")
    a.held.release()
    await losing
    assert [e.domain for e in a.index.find_participant("k", now_ms())] == ["b-second"]
    # and many rounds at once
    for i in range(15):
        await asyncio.gather(a.provider.add(entry("k", domain=f"a{i}")),
                             b.provider.add(entry("k", domain=f"b{i}")))
    await eventually(lambda: all_equal_store(instances), "one winner everywhere")
    stored = await store_rows(a.pg)  # type: ignore[arg-type]
    winner = stored[(G1, "k")][0].domain
    for instance in instances:
        assert [e.domain for e in instance.index.find_participant("k", now_ms())] == [winner]
        refs_match_keys(instance)


async def _domain_is(instance: Instance, pid: str, domain: str) -> bool:
    return [e.domain for e in instance.index.find_participant(pid, now_ms())] == [domain]


async def test_notification_connection_lost_and_back_catches_up_at_once(
        cluster: Callable[..., Awaitable[Instance]], dsn: str) -> None:
    """Hazard 6: notifications lost while the listening connection is down are made up for
    by a catch-up as soon as it is back (no timer, no repair here)."""
    a = await cluster("a", notifications=False)
    b = await cluster("b", faults={"drop": 1.0})  # it hears nothing ...
    assert b.faulty is not None
    await a.provider.add(entry("missed"))
    await a.provider.remove("missed")
    await a.provider.add(entry("missed-too"))
    await eventually(lambda: _heard(b, 3), "the notifications arrived (and were dropped)")
    assert not b.index.find_participant("missed-too", now_ms())
    # ... until its listening connection is lost and comes back
    conn = await asyncpg.connect(dsn)
    try:
        killed = await conn.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = 'joynr-gcd-listen' AND datname = current_database()")
    finally:
        await conn.close()
    assert killed == 1
    await eventually(lambda: _has(b, "missed-too"), "caught up after the reconnect")
    assert b.sync.stats().reconnects == 1
    assert await equals_store(b)


async def _heard(instance: Instance, count: int) -> bool:
    assert instance.faulty is not None
    return instance.faulty.received >= count


async def _has(instance: Instance, pid: str) -> bool:
    return bool(instance.index.find_participant(pid, now_ms()))


async def test_a_late_delete_after_a_re_add_does_not_kill_the_row(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    """Hazard 4: a catch-up that read a deletion is applied after the key was added again (by
    this instance): the row stays."""
    a = await cluster("a")
    b = await cluster("b", notifications=False, held=True)
    await a.provider.add(entry("k"))
    await b.sync.catch_up()
    assert b.held is not None
    await a.provider.remove("k")
    b.held.hold.add("changes_since")
    catching_up = asyncio.ensure_future(b.sync.catch_up())
    await b.held.waiting.wait()  # its batch has the deletion
    await b.provider.add(entry("k", domain="again"))
    b.held.release()
    await catching_up
    assert [e.domain for e in await b.provider.lookup(["again"], "test/I")] == ["again"]
    await a.sync.catch_up()
    assert await equals_store(a) and await equals_store(b)
    assert await b.sync.repair() == 0


async def test_a_missed_delete_is_repaired(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    """Hazard 1: a deletion an instance never heard of (no notification, no catch-up) is
    repaired, and the shared parameters it used are released under the right key."""
    a = await cluster("a")
    b = await cluster("b", notifications=False)
    await a.provider.add_in_backends(entry("zombie"), [G1, G2])
    await b.sync.catch_up()
    assert b.index.stats().param_refs == 2
    await a.provider.remove_in_backends("zombie", [G1])
    assert len(b.index) == 2
    assert await b.sync.repair() == 1
    assert [e.gbid for e in b.index.find_participant("zombie", now_ms())] == [G2]
    assert (b.index.stats().shared_params, b.index.stats().param_refs) == (1, 1)
    refs_match_keys(b)
    assert await b.sync.repair() == 0
    assert b.sync.stats().keys_repaired == 1


# ====================================================================== restart, outage


async def test_an_instance_restarted_mid_traffic_catches_up(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    a = await cluster("a")
    b = await cluster("b")
    c = await cluster("c")
    rng = random.Random(11)
    stop = asyncio.Event()

    async def traffic() -> int:
        n = 0
        while not stop.is_set() and n < 400:
            key = f"t{rng.randrange(20)}"
            if rng.random() < 0.6:
                await a.provider.add_in_backends(entry(key, domain=str(n)), [G1, G2])
            else:
                await a.provider.remove(key)
            n += 1
        return n

    writer = asyncio.ensure_future(traffic())
    await eventually(lambda: _has_rows(b, 5), "traffic under way")
    await b.stop()
    restarted = await cluster("b-again")
    await eventually(lambda: _has_rows(restarted, 1), "the restarted instance loaded")
    stop.set()
    written = await writer
    assert written > 0
    await eventually(lambda: all_equal_store([a, restarted, c]), "all caught up")
    for instance in (a, restarted, c):
        refs_match_keys(instance)


async def _has_rows(instance: Instance, n: int) -> bool:
    return len(instance.index) >= n


async def test_a_database_outage(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Writes fail with INTERNAL_ERROR and leave nothing; lookups are answered from the
    index; catch-up fails, is counted, and the stale age shows; after the database is back,
    the instances catch up by themselves."""
    caplog.set_level(logging.INFO, logger="pyjoynr.gcd.sync")
    fast = SyncSettings(catch_up_interval_s=0.05, repair_interval_s=0, stats_interval_s=0.2)
    async with PostgresServer() as server:
        dsn = await server.create_database("outage")
        a = await Instance(dsn, "a", settings=fast).start()
        b = await Instance(dsn, "b", settings=fast).start()
        try:
            await a.provider.add_in_backends(entry("before"), [G1])
            await eventually(lambda: _has(b, "before"), "b has it")
            await server.stop()
            with pytest.raises(ApplicationError) as raised:
                await a.provider.add_in_backends(entry("during"), [G1])
            assert raised.value.error == "INTERNAL_ERROR"
            for instance in (a, b):
                found = await instance.provider.lookup_in_backends(["d"], "test/I", [G1])
                assert [e.participant_id for e in found] == ["before"]
            await eventually(lambda: _failing(b), "catch-up failures counted")
            stale = b.sync.stats()
            assert stale.last_catch_up_age_s is not None and stale.last_catch_up_age_s > 0.1
            assert any("catch-up failed" in r.getMessage() for r in caplog.records)

            async def stale_age_logged() -> bool:
                return any(r.getMessage().startswith("b sync:") and
                           "last_catch_up_age=0.0s" not in r.getMessage() and
                           " failures=0 " not in r.getMessage() for r in caplog.records)

            await eventually(stale_age_logged, "the periodic line shows the failures and age")
            await server.start()
            await a.provider.add_in_backends(entry("after"), [G1])
            await eventually(lambda: _has(b, "after"), "b caught up after the outage")
            rows = await store_rows(a.pg)  # type: ignore[arg-type]
            assert {p for _, p in rows} == {"before", "after"}  # nothing half-written
            assert await equals_store(a) and await equals_store(b)
            assert b.sync.stats().last_catch_up_age_s is not None
            assert any("caught up again" in r.getMessage() for r in caplog.records)
        finally:
            await a.stop()
            await b.stop()


async def _failing(instance: Instance) -> bool:
    figures = instance.sync.stats()
    return figures.catch_up_failures >= 2 and (figures.last_catch_up_age_s or 0) > 0.1


# ====================================================================== paging, reload, purges


async def test_catch_up_pages_through_batches_cut_short_by_whole_versions(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    """Each write here changes two rows; with batches of 3 changes the store cuts every batch
    before a version's group (2 changes, fewer than the limit): catch-up goes on anyway."""
    a = await cluster("a")
    b = await cluster("b", notifications=False, settings=SyncSettings(
        catch_up_interval_s=0, repair_interval_s=0, stats_interval_s=0, batch_size=3))
    for n in range(6):
        await a.provider.add_in_backends(entry(f"p{n}"), [G1, G2])
    assert await b.sync.catch_up() == 12
    assert await equals_store(b)


async def test_an_instance_behind_the_tombstone_retention_reloads(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    a = await cluster("a", settings=SyncSettings(
        catch_up_interval_s=0, repair_interval_s=0, stats_interval_s=0,
        tombstone_retention_s=0.001))
    b = await cluster("b", notifications=False)
    await a.provider.add_in_backends(entry("stays"), [G1])
    await a.provider.add_in_backends(entry("goes"), [G1])
    await b.sync.catch_up()
    await a.provider.remove_in_backends("goes", [G1])
    await eventually(lambda: _purged_tombstones(a), "a tombstone purged")
    before = b.index
    assert await _has(b, "goes")
    await b.sync.catch_up()  # too far behind: reloads
    assert b.index is not before and not await _has(b, "goes")
    assert await equals_store(b)
    assert b.sync.stats().reloads == 1


def _scanned_by_the_collector(obj: object) -> bool:
    return any(o is obj for generation in range(3) for o in gc.get_objects(generation))


async def test_a_loaded_or_reloaded_index_is_left_out_of_the_collectors_scans(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    """A full collection walks every object it tracks. An index keeps its rows in columns (no
    tracked object per row: tests/unit/test_gcd_index.py), and what it holds is frozen out of
    the scans once loaded at start-up and by a reload, and scanned again once the instance
    stops."""
    a = await cluster("a", settings=SyncSettings(
        catch_up_interval_s=0, repair_interval_s=0, stats_interval_s=0,
        tombstone_retention_s=0.001))
    await a.provider.add_in_backends(entry("loaded"), [G1])
    await a.provider.add_in_backends(entry("goes"), [G1])
    b = await cluster("b", notifications=False)
    assert await _has(b, "loaded")
    assert not _scanned_by_the_collector(b.index)
    await a.provider.add_in_backends(entry("later"), [G1])
    await b.sync.catch_up()
    assert await _has(b, "later") and not _scanned_by_the_collector(b.index)
    await a.provider.remove_in_backends("goes", [G1])
    await eventually(lambda: _purged_tombstones(a), "a tombstone purged")
    before = b.index
    await b.sync.catch_up()  # too far behind: reloads
    assert b.sync.stats().reloads == 1 and b.index is not before
    assert not _scanned_by_the_collector(b.index)
    reloaded = b.index
    await b.sync.stop()
    assert _scanned_by_the_collector(reloaded)


class _LoadWatched(SqliteStore):
    """A SQLite store noting, each time its load hands out an item, whether the cyclic
    collector runs meanwhile."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.collector_on: list[bool] = []

    async def load(self, batch_size: int = 10_000) -> AsyncIterator[LoadBatch | int]:
        async for item in super().load(batch_size):
            self.collector_on.append(gc.isenabled())
            yield item


async def test_the_collector_is_paused_for_the_whole_load_then_runs_again(
        tmp_path: Path) -> None:
    """Paused per batch only, it ran between batches and walked the growing index again every
    quarter of growth (some 20 full collections at a million rows)."""
    store = _LoadWatched(tmp_path / "gcd.sqlite")
    await store.open()
    try:
        await store.add_changes([StoredEntry(G1, f"p{i}", "d", "test/I", 1, 0, 0, "GLOBAL",
                                             False, "[]", 0, now_ms() + 3_600_000, "",
                                             "joynr/cc/cc-1", "cc-1") for i in range(7)])
        sync = Synchronizer(store, settings=SyncSettings(batch_size=2))
        assert gc.isenabled()
        await sync.start()
        try:
            assert len(sync.index) == 7
            assert store.collector_on == [False] * 5  # 4 batches, then the version
            assert gc.isenabled()
        finally:
            await sync.stop()
    finally:
        await store.close()


async def _purged_tombstones(instance: Instance) -> bool:
    return (await instance.sync.purge_tombstones() > 0
            or instance.sync.stats().tombstones_purged > 0)  # or its timer did


async def test_the_expiry_purge_runs_once_and_the_others_drop_the_rows_by_catch_up(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    instances = [await cluster(name) for name in ("a", "b", "c")]
    a, _, c = instances
    await a.provider.add_in_backends(entry("short", expiry_ms=now_ms() + 100), [G1, G2])
    await a.provider.add_in_backends(entry("long"), [G1])
    # c holds the rows whether or not "short" has expired by the time they reach it (under
    # load that may take longer than its 100 ms): present rows, not found ones
    await eventually(lambda: _has_rows(c, 3), "c has them")
    await eventually(lambda: _not_has(c, "short"), "expired: no longer found before any purge")
    assert len(c.index) == 3  # hidden, not gone
    purged = await asyncio.gather(*(i.provider.purge_expired() for i in instances))
    assert sum(purged) == 2  # two rows, purged once (the others: nothing left, or locked out)
    await eventually(lambda: all_equal_store(instances), "the others dropped them")
    assert all(len(i.index) == 1 for i in instances)
    for instance in instances:
        refs_match_keys(instance)


async def _not_has(instance: Instance, pid: str) -> bool:
    return not await _has(instance, pid)


@pytest.mark.usefixtures("mqtt_client")
async def test_the_embedded_gcd_answers_from_its_index(tmp_path: Path) -> None:
    """The GCD embedded in a cluster controller (SQLite, no peers, no notifier) serves from its
    index too: with its store closed, a global lookup is still answered."""
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "broker"))
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-embedded", {"joynrdefaultgbid": broker.url},
            embedded_gcd__enabled="true")))
        assert cc.gcd is not None
        await cc.gcd.mqtt.wait_connected(WAIT_S)
        assert cc.gcd.sync.notifier is None and cc.gcd.sync.ready
        pid = await cc.runtime.register_provider(
            "embedded.domain", RadioProvider(), qos=ProviderQos(scope=ProviderScope.GLOBAL),
            await_global_registration=True)
        assert [e.participant_id for e in cc.gcd.sync.index.find_participant(pid, now_ms())] \
            == [pid]
        await cc.gcd.store.close()
        found = await cc.discovery.lookup(["embedded.domain"], "test/Radio", DiscoveryQos(
            discovery_scope=DiscoveryScope.GLOBAL_ONLY))
        assert [e.participant_id for e in found] == [pid]
        await cc.gcd.store.open()


def test_the_cluster_settings_are_checked() -> None:
    for bad, says in ((dict(cluster_name="Bad-Name"), "cluster_name"),
                      (dict(cluster_name=""), "cluster_name"),
                      (dict(catch_up_interval_s=-1), "catch_up_interval_s"),
                      (dict(repair_interval_s=-0.5), "repair_interval_s"),
                      (dict(tombstone_retention_s=0), "tombstone_retention_s"),
                      (dict(sync_stats_interval_s=-1), "stats_interval_s")):
        with pytest.raises(ValueError, match=says):
            GcdSettings(**bad)  # type: ignore[arg-type]
    assert GcdSettings(catch_up_interval_s=0, repair_interval_s=0).sync_settings() == \
        SyncSettings(catch_up_interval_s=0, repair_interval_s=0)


async def test_a_lookup_that_finds_nothing_catches_up_once_before_it_answers(
        cluster: Callable[..., Awaitable[Instance]]) -> None:
    """Registered through one instance, found through another before any notification,
    timer or repair told it (all off here): the miss catches up."""
    a = await cluster("a")
    b = await cluster("b", notifications=False)
    await a.provider.add_in_backends(entry("new"), [G1])
    assert not await _has(b, "new")
    found = await b.provider.lookup_participant_in("new", [G1])
    assert found.participant_id == "new"
    assert [e.participant_id for e in await b.provider.lookup(["d"], "test/I")] == ["new"]
    with pytest.raises(ApplicationError):
        await b.provider.lookup_participant_in("nobody", [G1])  # still a miss, answered

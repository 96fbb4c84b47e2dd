"""PostgresStore beyond the store contract: a database shared by several GCD instances,
concurrent writers, and a server that goes away mid-run and comes back.

The shared-database tests use the session's PostgreSQL server (tests/support/gcd_stores.py);
the tests that stop the server run one of their own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import random
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest

from pyjoynr.gcd.changes import Change, ChangeBatch
from pyjoynr.gcd.postgres_store import _PURGE_LOCK_KEY, PostgresNotifier, PostgresStore, channel_of
from pyjoynr.gcd.store import GcdStore, RemoveOutcome, StoredEntry, StoreError
from pyjoynr.testing.cluster import free_port
from pyjoynr.testing.postgres import PostgresServer
from tests.support.gcd_stores import STORE_KINDS, fresh_postgres_dsn

pytestmark = pytest.mark.network

NOW = 1_800_000_000_000
LATER = NOW + 3_600_000


def row(pid: str, gbid: str = "g1", *, cc: str = "cc-1", expiry: int = LATER,
        **changes: object) -> StoredEntry:
    entry = StoredEntry(
        gbid=gbid, participant_id=pid, domain="vehicle", interface_name="test/Radio",
        major_version=1, minor_version=2, priority=5, scope="GLOBAL", supports_on_change=True,
        custom_parameters="[]", last_seen_ms=NOW, expiry_ms=expiry, public_key_id="",
        topic=f"joynr/cc/{cc}", cluster_controller_id=cc,
    )
    return dataclasses.replace(entry, **changes)  # type: ignore[arg-type]


@pytest.fixture
async def dsn(request: pytest.FixtureRequest) -> str:
    """A new database on the session's PostgreSQL server."""
    return await fresh_postgres_dsn(request.config)


@pytest.fixture
async def two_stores(dsn: str) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two stores (two GCD instances) on the same database."""
    first, second = PostgresStore(dsn, max_size=5), PostgresStore(dsn, max_size=5)
    await asyncio.gather(first.open(), second.open())
    try:
        yield first, second
    finally:
        await asyncio.gather(first.close(), second.close())


# -- one database, several GCD instances -------------------------------------------------------


async def test_two_stores_on_one_database_see_each_others_writes(
        two_stores: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = two_stores
    await a.add([row("p1", "g1"), row("p1", "g2"), row("p2")])
    assert [e.gbid for e in await b.find_participant("p1", NOW)] == ["g1", "g2"]
    assert await b.count() == 3

    assert await b.touch("cc-1", ["p1"], NOW + 7, LATER + 7) == 2
    assert {e.last_seen_ms for e in await a.find_participant("p1", NOW)} == {NOW + 7}

    assert await b.remove("p1", ["g1"], NOW) is RemoveOutcome.REMOVED
    assert await a.remove("p1", ["g1"], NOW) is RemoveOutcome.NOT_IN_ALL_SELECTED
    assert [(e.participant_id, e.gbid) for e in await a.find(["vehicle"], "test/Radio", NOW)
            ] == [("p1", "g2"), ("p2", "g1")]
    assert await a.remove_in_backends(["p2"], "g1") == 1
    assert await b.count() == 1


async def test_instances_opening_together_create_the_schema_once(dsn: str) -> None:
    stores = [PostgresStore(dsn, max_size=2) for _ in range(6)]
    await asyncio.gather(*(s.open() for s in stores))  # concurrent CREATE ... IF NOT EXISTS
    try:
        await stores[0].add([row("p1")])
        assert [await s.count() for s in stores] == [1] * 6
    finally:
        await asyncio.gather(*(s.close() for s in stores))


async def test_concurrent_operations_of_two_stores_end_consistent(
        two_stores: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = two_stores
    removed = [f"r{i:03}" for i in range(100)]  # in g1 and g2; both stores remove them
    upserted = [f"u{i:02}" for i in range(50)]  # both stores write them, differently
    touched = [f"t{i:02}" for i in range(50)]  # both stores touch them
    await a.add([row(p, g, cc="cc-r") for p in removed for g in ("g1", "g2")]
                + [row(p, cc="cc-t") for p in touched])

    def version(pid: str, store: str) -> StoredEntry:
        return row(pid, cc="cc-u", priority=1 if store == "a" else 2, domain=f"from-{store}")

    a_ops: list[Callable[[], Awaitable[object]]] = []
    b_ops: list[Callable[[], Awaitable[object]]] = []
    a_removes: dict[str, RemoveOutcome] = {}
    b_removes: dict[str, RemoveOutcome] = {}

    async def remove(store: PostgresStore, pid: str, gbids: list[str],
                     outcomes: dict[str, RemoveOutcome]) -> None:
        outcomes[pid] = await store.remove(pid, gbids, NOW)

    for pid in removed:
        # a removes the participant from both GBIDs, b from g1 only
        a_ops.append(lambda pid=pid: remove(a, pid, ["g1", "g2"], a_removes))
        b_ops.append(lambda pid=pid: remove(b, pid, ["g1"], b_removes))
    for i in range(0, 50, 5):
        # overlapping batches in opposite orders: the store must not deadlock on them
        batch = upserted[i:i + 10]
        a_ops.append(lambda batch=batch: a.add([version(p, "a") for p in batch]))
        b_ops.append(lambda batch=batch: b.add([version(p, "b") for p in reversed(batch)]))
    touch_values = {NOW + k for k in range(1, 81)}
    for k in range(1, 41):
        a_ops.append(lambda k=k: a.touch("cc-t", None, NOW + k, LATER + k))
        b_ops.append(lambda k=k: b.touch("cc-t", touched[k % 50: k % 50 + 10],
                                         NOW + 40 + k, LATER + 40 + k))
    for k in range(50):
        a_ops.append(lambda: a.find(["vehicle", "from-a", "from-b"], "test/Radio", NOW))
        b_ops.append(lambda k=k: b.find_participant(removed[k], NOW))
    assert len(a_ops) == len(b_ops) == 200
    random.Random(7).shuffle(a_ops)
    random.Random(8).shuffle(b_ops)

    async def run(op: Callable[[], Awaitable[object]]) -> object:
        return await op()

    began = time.monotonic()
    results = await asyncio.gather(*(run(op) for pair in zip(a_ops, b_ops, strict=True)
                                     for op in pair))
    elapsed = time.monotonic() - began
    assert elapsed < 20, f"400 concurrent operations took {elapsed:.1f} s"
    assert all(not isinstance(r, BaseException) for r in results)

    # removes: as if one ran after the other - never a half-removed participant
    for pid in removed:
        left = [e.gbid for e in await a.find_participant(pid, NOW)]
        outcome = (a_removes[pid], b_removes[pid], left)
        assert outcome in [
            (RemoveOutcome.REMOVED, RemoveOutcome.NO_PARTICIPANT, []),  # a first
            (RemoveOutcome.NOT_IN_ALL_SELECTED, RemoveOutcome.REMOVED, ["g2"]),  # b first
        ], pid
    # upserts: each row is wholly one store's version, never a mix
    for pid in upserted:
        (entry,) = await b.find_participant(pid, NOW)
        assert entry in (version(pid, "a"), version(pid, "b")), entry
    # touches: every row has the values of one touch, and touch counted its rows
    for entry in await a.find(["vehicle"], "test/Radio", NOW):
        if entry.cluster_controller_id == "cc-t":
            assert entry.last_seen_ms in touch_values
            assert entry.expiry_ms == entry.last_seen_ms - NOW + LATER
    remaining_g2 = sum(1 for pid in removed
                       if a_removes[pid] is RemoveOutcome.NOT_IN_ALL_SELECTED)
    assert await a.count() == await b.count() == len(touched) + len(upserted) + remaining_g2


async def test_overlapping_writes_in_opposite_orders_never_deadlock(
        two_stores: tuple[PostgresStore, PostgresStore], caplog: pytest.LogCaptureFixture
        ) -> None:
    """Multi-row writes lock rows in one order (the primary key), whatever order the caller
    gives: not one deadlock, so not one retry (with the rows locked in the callers' orders
    this workload deadlocks several times and runs into the command timeout)."""
    a, b = two_stores
    keys = [f"s{i:04}" for i in range(200)]
    await a.add([row(k) for k in keys])
    operations: list[Awaitable[object]] = []
    for j in range(10):
        operations += [a.add([row(k, priority=j) for k in keys]),
                       b.add([row(k, priority=100 + j) for k in reversed(keys)]),
                       a.touch("cc-1", list(reversed(keys)), NOW + j, LATER + j),
                       b.touch("cc-1", None, NOW + j, LATER + j),
                       b.remove_in_backends(list(reversed(keys[::7])), "g2"),
                       a.remove_stale("cc-1", NOW - 1)]
    with caplog.at_level(logging.DEBUG, logger="pyjoynr.gcd.postgres_store"):
        results = await asyncio.gather(*operations, return_exceptions=True)
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert [r.getMessage() for r in caplog.records if "again" in r.getMessage()] == []
    assert await b.count() == len(keys)


# -- the same semantics as SQLite where the SQL dialects differ --------------------------------


@pytest.mark.parametrize("store", STORE_KINDS, indirect=True)
async def test_the_last_of_duplicate_keys_in_one_add_wins(store: GcdStore) -> None:
    await store.add([row("p1", priority=1), row("p2"), row("p1", priority=3)])
    assert [(e.participant_id, e.priority) for e in await store.find_participant("p1", NOW)
            ] == [("p1", 3)]
    assert await store.count() == 2


@pytest.mark.parametrize("store", STORE_KINDS, indirect=True)
async def test_order_is_by_code_point_whatever_the_collation(store: GcdStore) -> None:
    pids = ["b", "B", "a", "Z", "é", "_x", "a-1", "a1", "ä"]
    await store.add([row(p) for p in pids] + [row("a", "G"), row("a", "g")])
    found = [(e.participant_id, e.gbid) for e in await store.find(["vehicle"], "test/Radio",
                                                                   NOW)]
    assert found == sorted([(p, "g1") for p in pids] + [("a", "G"), ("a", "g")])


async def test_a_rejected_row_leaves_nothing_of_the_add(dsn: str) -> None:
    store = PostgresStore(dsn)
    await store.open()
    try:
        await store.add([row("kept")])
        batch = [row(f"p{i:03}") for i in range(300)]
        for bad in (row("zz", major_version=2**40), row("zz", domain="nul\x00byte")):
            with pytest.raises(StoreError, match="add of 301 rows failed"):
                await store.add([*batch, bad])
            assert await store.count() == 1
    finally:
        await store.close()


async def test_a_closed_store_raises_store_error(dsn: str) -> None:
    store = PostgresStore(dsn)
    await store.open()
    await store.close()
    with pytest.raises(StoreError, match="not open"):
        await store.count()


async def test_a_statement_that_waits_too_long_fails_and_the_store_goes_on(dsn: str) -> None:
    store = PostgresStore(dsn, command_timeout=0.5)
    await store.open()
    try:
        await store.add([row("p1")])
        blocker = await asyncpg.connect(dsn)
        try:
            locking = blocker.transaction()
            await locking.start()
            await blocker.execute("SELECT 1 FROM discovery_entries FOR UPDATE")
            for name, operation in [("touch", lambda: store.touch("cc-1", None, NOW + 1, LATER)),
                                    ("remove", lambda: store.remove("p1", ["g1"], NOW))]:
                began = time.monotonic()
                with pytest.raises(StoreError, match="timed out"):
                    await operation()
                elapsed = time.monotonic() - began
                assert 0.4 < elapsed < 2, f"{name} failed after {elapsed:.2f} s"
            await locking.rollback()
        finally:
            await blocker.close()
        assert await store.touch("cc-1", None, NOW + 2, LATER) == 1
        assert await store.remove("p1", ["g1"], NOW) is RemoveOutcome.REMOVED
    finally:
        await store.close()


async def test_remove_stale_with_nothing_stale_waits_for_no_writer(dsn: str) -> None:
    """A fleet reconnecting at once calls removeStale once per cluster controller, mostly with
    nothing stale: such a call must not take the cluster's version (the meta row, which every
    writer of every instance locks first), or each would queue the others' writes behind it.
    With the meta row held by another writer it answers at once; with something stale it
    waits for that writer and deletes, at a version of its own."""
    store = PostgresStore(dsn, command_timeout=2.0)
    await store.open()
    try:
        await store.add([row("p1", cc="cc-1"), row("p2", cc="cc-2")])
        blocker = await asyncpg.connect(dsn)
        try:
            locking = blocker.transaction()
            await locking.start()
            await blocker.execute("SELECT 1 FROM discovery_meta FOR UPDATE")
            # cc-1's row was seen at NOW: nothing of it is older than NOW; cc-3 has no rows
            assert await store.remove_stale("cc-1", NOW) == 0
            assert await store.remove_stale_changes("cc-3", NOW + 1) == []
            stale = asyncio.ensure_future(store.remove_stale_changes("cc-2", NOW + 1))
            await asyncio.sleep(0.2)
            assert not stale.done()  # it deletes: it waits for the version
            await locking.rollback()
        finally:
            await blocker.close()
        changes = await stale
        assert [(c.gbid, c.participant_id, c.entry) for c in changes] == [("g1", "p2", None)]
        assert await store.count() == 1
    finally:
        await store.close()


async def test_connections_the_server_ends_are_replaced_unnoticed(dsn: str) -> None:
    """An administrator (or a failover) ends the pool's connections: the next operations
    run on new ones, without an error."""
    store = PostgresStore(dsn, min_size=3, max_size=3)
    await store.open()
    admin = await asyncpg.connect(dsn)
    try:
        await asyncio.gather(*(store.count() for _ in range(6)))  # all 3 connections made
        for _ in range(3):
            ended = await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                "WHERE application_name = 'joynr-gcd'")
            assert ended == 3
            await store.add([row("p1")])
            assert await asyncio.gather(*(store.count() for _ in range(6))) == [1] * 6
    finally:
        await admin.close()
        await store.close()


# -- the server goes away and comes back -------------------------------------------------------


async def test_open_fails_quickly_without_a_server() -> None:
    store = PostgresStore(f"postgresql://postgres@127.0.0.1:{free_port()}/gcd")
    began = time.monotonic()
    with pytest.raises(StoreError, match="cannot connect"):
        await store.open()
    assert time.monotonic() - began < 3


async def wait_for_lock_waiter(dsn: str, timeout_s: float = 10) -> None:
    """Until a session waits on a lock in an add (an INSERT into discovery_entries, or the
    session's function that does it)."""
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        deadline = time.monotonic() + timeout_s
        while not await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND (query LIKE 'INSERT INTO discovery_entries%' "
                "OR query LIKE 'SELECT pg_temp.joynr_gcd_v1_add(%')"):
            assert time.monotonic() < deadline, "the add never waited on the row lock"
            await asyncio.sleep(0.02)
    finally:
        await conn.close()


async def kill_server(pg: PostgresServer, mode: str) -> None:
    """``fast``: pg_ctl stop -m fast; ``immediate``: SIGQUIT to the postmaster, which ends
    every backend at once with no shutdown checkpoint (a crash: recovery on the next start)."""
    if mode == "fast":
        await pg.stop()
        return
    pid_file = pg.data_dir / "postmaster.pid"
    os.kill(int(pid_file.read_text().split()[0]), signal.SIGQUIT)
    deadline = time.monotonic() + 15
    while pid_file.exists():
        assert time.monotonic() < deadline, "the postmaster did not exit on SIGQUIT"
        await asyncio.sleep(0.05)
    await pg.stop()  # nothing runs any more: marks the server as stopped


async def expect_store_error_quickly(operation: Callable[[], Awaitable[object]], name: str,
                                     limit_s: float = 2.0) -> None:
    began = time.monotonic()
    with pytest.raises(StoreError):
        await operation()
    elapsed = time.monotonic() - began
    assert elapsed < limit_s, f"{name} took {elapsed:.2f} s to fail while the server is down"


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_server_down_fails_fast_rolls_back_and_recovers(mode: str, tmp_path: Path
                                                              ) -> None:
    async with PostgresServer() as pg:
        dsn = await pg.create_database("gcd")
        store = PostgresStore(dsn, command_timeout=5, connect_timeout=3)
        await store.open()
        try:
            base = [row(f"n{i:04}") for i in range(0, 2000, 100)]  # n0000, n0100, ...
            await store.add(base)

            # an add of 2000 rows that is stuck halfway: another session locks n1000
            blocker = await asyncpg.connect(dsn)
            try:
                # the test server commits asynchronously (synchronous_commit=off): make the
                # base rows survive the crash of an immediate stop
                await blocker.execute("CHECKPOINT")
                locking = blocker.transaction()
                await locking.start()
                await blocker.execute("SELECT 1 FROM discovery_entries WHERE gbid = 'g1' "
                                      "AND participant_id = 'n1000' FOR UPDATE")
                big = [row(f"n{i:04}", priority=9) for i in range(2000)]
                adding = asyncio.ensure_future(store.add(big))
                await wait_for_lock_waiter(dsn)  # n0000..n0999 written, not committed
                began = time.monotonic()
                await kill_server(pg, mode)
                with pytest.raises(StoreError):
                    await adding
                assert time.monotonic() - began < 10
            finally:
                blocker.terminate()

            # while the server is down, every operation fails at once
            operations: dict[str, Callable[[], Awaitable[object]]] = {
                "add": lambda: store.add([row("x")]),
                "find": lambda: store.find(["vehicle"], "test/Radio", NOW),
                "find_participant": lambda: store.find_participant("n0000", NOW),
                "remove": lambda: store.remove("n0000", ["g1"], NOW),
                "remove_in_backends": lambda: store.remove_in_backends(["n0000"], "g1"),
                "touch": lambda: store.touch("cc-1", None, NOW, LATER),
                "remove_stale": lambda: store.remove_stale("cc-1", NOW),
                "purge_expired": lambda: store.purge_expired(NOW),
                "count": store.count,
            }
            for name, operation in operations.items():
                await expect_store_error_quickly(operation, name)

            # back again: the same store works, and the stuck add left nothing behind
            await pg.start()
            assert await store.count() == len(base)
            assert {e.priority for e in await store.find(["vehicle"], "test/Radio", NOW)
                    } == {5}
            await store.add(big)
            assert await store.count() == 2000
            assert await store.remove("n0000", ["g1"], NOW) is RemoveOutcome.REMOVED
        finally:
            await store.close()


async def test_adds_racing_the_shutdown_are_all_or_nothing() -> None:
    """Without a lock to hold them, stop the server while large adds run: after the restart
    each one is either wholly there, or not at all."""
    async with PostgresServer() as pg:
        dsn = await pg.create_database("gcd")
        store = PostgresStore(dsn, max_size=4)
        await store.open()
        try:
            size = 5_000
            batches = {f"g{k}": [row(f"b{i:05}", f"g{k}") for i in range(size)]
                       for k in range(5)}
            await store.add(batches["g0"])  # committed before the stop
            adds = {gbid: asyncio.ensure_future(store.add(rows))
                    for gbid, rows in batches.items() if gbid != "g0"}
            await asyncio.sleep(0.02)
            await pg.stop()
            outcomes = dict(zip(adds, await asyncio.gather(*adds.values(),
                                                           return_exceptions=True),
                                strict=True))
            assert all(o is None or isinstance(o, StoreError) for o in outcomes.values()
                       ), outcomes
            await pg.start()

            found = Counter(e.gbid for e in await store.find(["vehicle"], "test/Radio", NOW))
            assert found["g0"] == size
            for gbid, outcome in outcomes.items():
                # a failed add may still have committed (the connection can be lost after
                # COMMIT reached the server), but never in part
                assert found[gbid] in (0, size), found
                if outcome is None:
                    assert found[gbid] == size, found
            assert await store.count() == sum(found.values())
        finally:
            await store.close()


# -- the reasons of StoreError -----------------------------------------------------------------


async def test_no_server_is_reason_unreachable() -> None:
    store = PostgresStore(f"postgresql://postgres@127.0.0.1:{free_port()}/gcd")
    with pytest.raises(StoreError) as raised:
        await store.open()
    assert raised.value.reason == "unreachable"
    assert "unreachable" not in str(raised.value)  # a code, not part of the message


async def test_a_statement_that_waits_too_long_is_reason_timeout(dsn: str) -> None:
    store = PostgresStore(dsn, command_timeout=0.3)
    await store.open()
    blocker = await asyncpg.connect(dsn)
    try:
        await store.add([row("p1")])
        async with blocker.transaction():
            await blocker.execute("SELECT 1 FROM discovery_entries FOR UPDATE")
            with pytest.raises(StoreError) as raised:
                await store.touch("cc-1", None, NOW + 1, LATER)
        assert raised.value.reason == "timeout"
    finally:
        await blocker.close()
        await store.close()


# -- versions, notifications, the purge lock (gcd.changes.VersionedStore) ----------------------


async def wait_for_waiters(dsn: str, count: int, done: Callable[[], bool] = lambda: False,
                           timeout_s: float = 10) -> None:
    """Until ``count`` sessions of the database wait on a lock (or ``done()``)."""
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        deadline = time.monotonic() + timeout_s
        while not done() and await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()") < count:
            assert time.monotonic() < deadline, f"{count} sessions never waited on a lock"
            await asyncio.sleep(0.02)
    finally:
        await conn.close()


async def test_sequence_gap_a_lower_version_cannot_commit_after_a_higher_one(
        dsn: str, two_stores: tuple[PostgresStore, PostgresStore]) -> None:
    """T1 (instance a) takes version 2 and then waits (on a row another session holds); T2
    (instance b) writes another key meanwhile. T2 cannot take version 3 and commit it while
    version 2 is still open - a reader would move its watermark past 2 and never see it - so
    it waits; a reader in between sees neither; after both, a reader sees both, in order."""
    a, b = two_stores
    await a.add_changes([row("held")])                                      # version 1
    blocker = await asyncpg.connect(dsn)
    try:
        holding = blocker.transaction()
        await holding.start()
        await blocker.execute("SELECT 1 FROM discovery_entries WHERE participant_id = 'held' "
                              "FOR UPDATE")
        t1 = asyncio.ensure_future(a.touch_changes("cc-1", ["held"], NOW + 1, LATER + 1))
        await wait_for_waiters(dsn, 1, t1.done)
        assert not t1.done()  # T1 took its version and waits for the row
        t2 = asyncio.ensure_future(b.add_changes([row("late")]))
        await wait_for_waiters(dsn, 2, t2.done)
        assert not t2.done(), "T2 committed while T1 (a lower version) was still open"
        assert await b.changes_since(1) == ChangeBatch([], 1)
        assert await a.current_version() == 1
        await holding.rollback()
        first, second = await asyncio.wait_for(asyncio.gather(t1, t2), 10)
    finally:
        await blocker.close()
    assert [(c.version, c.participant_id) for c in first] == [(2, "held")]
    assert [(c.version, c.participant_id) for c in second] == [(3, "late")]
    caught_up = await a.changes_since(1)
    assert [(c.version, c.participant_id) for c in caught_up.changes] == [(2, "held"),
                                                                         (3, "late")]
    assert caught_up.up_to == 3


async def test_a_notification_is_delivered_at_commit_and_never_for_a_rollback(dsn: str) -> None:
    store = PostgresStore(dsn, cluster="north")
    await store.open()
    listener = await asyncpg.connect(dsn)
    heard: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    try:
        await listener.add_listener(
            "gcd_north", lambda _c, _pid, channel, payload: heard.put_nowait((channel, payload)))
        added = await store.add_changes([row("p1"), row("p2")])
        assert await asyncio.wait_for(heard.get(), 10) == ("gcd_north", str(added[0].version))
        # nothing changed (rolled back), refused, failed: no notification for any of them
        assert await store.remove_changes("p1", ["g1", "g9"], NOW) == (
            RemoveOutcome.NOT_IN_ALL_SELECTED, [])
        assert await store.touch_changes("cc-9", None, NOW, LATER) == []
        with pytest.raises(StoreError):
            await store.add_changes([row("p3"), row("p4", priority=2**63)])
        removed = await store.remove_in_changes(["p1"], "g1")
        # the next one heard is the remove's: notifications come in commit order
        assert await asyncio.wait_for(heard.get(), 10) == ("gcd_north", str(removed[0].version))
        assert removed[0].version == added[0].version + 1  # no version spent in between
        assert heard.empty()
    finally:
        await listener.close()
        await store.close()


def test_the_channel_is_named_after_a_valid_cluster_name() -> None:
    assert channel_of("default") == "gcd_default"
    assert PostgresStore("postgresql://x/y", cluster="eu_1").channel == "gcd_eu_1"
    for bad in ("", "EU", "a-b", "a b", 'x"; DROP TABLE', "x" * 41, "ü"):
        with pytest.raises(ValueError, match="cluster name"):
            channel_of(bad)
        with pytest.raises(ValueError, match="cluster name"):
            PostgresNotifier("postgresql://x/y", cluster=bad)


async def test_the_expiry_purge_runs_on_one_instance_at_a_time(
        dsn: str, two_stores: tuple[PostgresStore, PostgresStore]) -> None:
    a, b = two_stores
    await a.add_changes([row("old", expiry=NOW - 1), row("new")])           # version 1
    other = await asyncpg.connect(dsn)
    try:
        # another instance purging: it holds the lock in its transaction
        async with other.transaction():
            assert await other.fetchval("SELECT pg_try_advisory_xact_lock($1)",
                                        _PURGE_LOCK_KEY)
            assert await a.purge_expired_changes(NOW) is None
            assert await b.purge_expired_changes(NOW) is None
            assert await a.purge_expired(NOW) == 0
            assert await b.current_version() == 1  # no version spent
        purged = await b.purge_expired_changes(NOW)
        assert purged == [Change(2, "g1", "old", None)]
        assert await a.purge_expired_changes(NOW) == []
        # the purge left a tombstone: the others drop the row through catch-up
        assert (await a.changes_since(1)).changes == purged
    finally:
        await other.close()


async def test_the_notifier_hears_versions_ignores_garbage_and_catches_a_reconnect(
        dsn: str) -> None:
    store = PostgresStore(dsn, cluster="c1")
    await store.open()
    notifier = store.notifier(ping_interval_s=0.5)
    versions: asyncio.Queue[int] = asyncio.Queue()
    reconnected = asyncio.Event()
    admin = await asyncpg.connect(dsn)
    try:
        await notifier.start(versions.put_nowait, reconnected.set)
        assert notifier.listening
        for payload in ("junk", "", "-1", "1.5", "9" * 30):
            await admin.execute("SELECT pg_notify('gcd_c1', $1)", payload)
        await admin.execute("SELECT pg_notify('gcd_other', '77')")  # another cluster
        added = await store.add_changes([row("p1")])
        assert await asyncio.wait_for(versions.get(), 10) == added[0].version
        assert (notifier.received, notifier.ignored) == (1, 5)

        ended = await admin.fetchval(
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
            "WHERE application_name = 'joynr-gcd-listen'")
        assert ended == 1
        await asyncio.wait_for(reconnected.wait(), 20)
        assert notifier.reconnects == 1 and notifier.listening
        touched = await store.touch_changes("cc-1", None, NOW + 1, LATER)
        assert await asyncio.wait_for(versions.get(), 10) == touched[0].version
    finally:
        await notifier.stop()
        await admin.close()
        await store.close()
    assert not notifier.listening


async def test_a_notifier_started_without_a_server_listens_once_it_is_there() -> None:
    async with PostgresServer() as pg:
        dsn = await pg.create_database("gcd")
        await pg.stop()
        notifier = PostgresNotifier(dsn, reconnect_max_s=0.2, connect_timeout=1)
        versions: asyncio.Queue[int] = asyncio.Queue()
        reconnected = asyncio.Event()
        await notifier.start(versions.put_nowait, reconnected.set)
        try:
            assert not notifier.listening
            await pg.start()
            await asyncio.wait_for(reconnected.wait(), 20)
            store = PostgresStore(dsn)
            await store.open()
            try:
                added = await store.add_changes([row("p1")])
                assert await asyncio.wait_for(versions.get(), 10) == added[0].version
            finally:
                await store.close()
        finally:
            await notifier.stop()

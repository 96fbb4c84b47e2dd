"""Group commit of the PostgreSQL store's writes (gcd.group_commit, PostgresStore): concurrent
adds and touches of one instance go into one transaction at one version, yet every caller gets
exactly its own changes, one write's failure fails no other, no version is skipped and the
row hashes stay those of gcd.changes - on one instance and on several sharing a database.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Hashable
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from pyjoynr.gcd.changes import Change, row_hash
from pyjoynr.gcd.group_commit import GroupCommitter
from pyjoynr.gcd.postgres_store import PostgresStore
from pyjoynr.gcd.store import StoredEntry, StoreError
from tests.support.gcd_stores import fresh_postgres_dsn

NOW = 1_800_000_000_000
LATER = NOW + 3_600_000


def row(pid: str, gbid: str = "g1", *, cc: str = "cc-1", **changes: object) -> StoredEntry:
    entry = StoredEntry(
        gbid=gbid, participant_id=pid, domain="vehicle", interface_name="test/Radio",
        major_version=1, minor_version=2, priority=5, scope="GLOBAL", supports_on_change=True,
        custom_parameters="[]", last_seen_ms=NOW, expiry_ms=LATER, public_key_id="",
        topic=f"joynr/cc/{cc}", cluster_controller_id=cc)
    return dataclasses.replace(entry, **changes)  # type: ignore[arg-type]


# -- GroupCommitter alone (no database) ----------------------------------------------------------

class Recorder:
    """Runs groups and single writes of ints; a write of a negative number fails."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.groups: list[list[int]] = []
        self.alone: list[int] = []
        self.gate = gate

    async def group(self, kind: str, writes: list[int]) -> list[str]:
        self.groups.append(writes)
        if self.gate is not None:
            await self.gate.wait()
        if any(w < 0 for w in writes):
            raise StoreError("a refused value", reason="database")
        return [f"{kind}:{w}" for w in writes]

    async def one(self, kind: str, write: int) -> str:
        self.alone.append(write)
        if self.gate is not None:
            await self.gate.wait()
        if write < 0:
            raise StoreError("a refused value", reason="database")
        return f"{kind}:{write}"


def committer(recorder: Recorder, max_rows: int = 2_000) -> GroupCommitter[int, str]:
    return GroupCommitter(recorder.group, recorder.one,
                          shared=lambda exc: getattr(exc, "reason", None) == "not-open",
                          max_rows=max_rows)


async def submit_all(groups: GroupCommitter[int, str],
                     writes: list[tuple[str, frozenset[Hashable], int]]
                     ) -> list[str | BaseException]:
    return await asyncio.gather(*(groups.submit(kind, claims, 1, w)
                                  for kind, claims, w in writes), return_exceptions=True)


async def test_writes_waiting_together_form_one_group_and_each_gets_its_result() -> None:
    recorder = Recorder()
    results = await submit_all(committer(recorder),
                               [("add", frozenset([i]), i) for i in range(1, 6)])
    assert results == [f"add:{i}" for i in range(1, 6)]
    # the first runs at once, alone; the others waited meanwhile and go together
    assert recorder.alone == [1]
    assert recorder.groups == [[2, 3, 4, 5]]


async def test_writes_whose_claims_meet_or_of_another_kind_wait_for_the_next_group() -> None:
    recorder = Recorder()
    results = await submit_all(committer(recorder), [
        ("add", frozenset(["k0"]), 0),
        ("add", frozenset(["k1"]), 1), ("add", frozenset(["k1", "k2"]), 2),  # k1 twice
        ("touch", frozenset(["cc"]), 3), ("add", frozenset(["k3"]), 4),
        ("touch", frozenset(["cc"]), 5)])
    assert results == ["add:0", "add:1", "add:2", "touch:3", "add:4", "touch:5"]
    # 0 alone; then 1 and 4 (2 meets 1, 3 and 5 are touches); then 2; then 3, then 5 (the
    # same cluster controller as 3)
    assert recorder.groups == [[1, 4]]
    assert recorder.alone == [0, 2, 3, 5]


async def test_a_group_holds_at_most_max_rows() -> None:
    recorder = Recorder()
    groups = committer(recorder, max_rows=2)
    results = await submit_all(groups, [("add", frozenset([i]), i) for i in range(7)])
    assert results == [f"add:{i}" for i in range(7)]
    assert recorder.alone == [0]
    assert recorder.groups == [[1, 2], [3, 4], [5, 6]]


async def test_a_failed_group_runs_each_write_alone_and_only_the_bad_one_fails() -> None:
    recorder = Recorder()
    groups = committer(recorder)
    results = await submit_all(groups, [("add", frozenset([i]), w)
                                        for i, w in enumerate([1, 2, -3, 4, 5])])
    assert results[:2] == ["add:1", "add:2"] and results[3:] == ["add:4", "add:5"]
    assert isinstance(results[2], StoreError)
    assert recorder.groups == [[2, -3, 4, 5]]
    assert recorder.alone == [1, 2, -3, 4, 5]
    assert groups.stats.groups_failed == 1


async def test_a_failure_common_to_all_fails_the_group_without_running_it_again() -> None:
    class Closed(Recorder):
        async def group(self, kind: str, writes: list[int]) -> list[str]:
            self.groups.append(writes)
            raise StoreError("closed", reason="not-open")

    recorder = Closed()
    results = await submit_all(committer(recorder), [("add", frozenset([i]), i)
                                                     for i in range(1, 4)])
    assert results[0] == "add:1"
    assert all(isinstance(r, StoreError) and r.reason == "not-open" for r in results[1:])
    assert recorder.alone == [1]


async def test_a_caller_cancelled_while_waiting_takes_its_write_out() -> None:
    gate = asyncio.Event()
    recorder = Recorder(gate)
    groups = committer(recorder)
    first = asyncio.ensure_future(groups.submit("add", frozenset([1]), 1, 1))
    second = asyncio.ensure_future(groups.submit("add", frozenset([2]), 1, 2))
    third = asyncio.ensure_future(groups.submit("add", frozenset([3]), 1, 3))
    await asyncio.sleep(0)
    assert groups.waiting == 2  # the first runs
    second.cancel()
    gate.set()
    assert await first == "add:1" and await third == "add:3"
    assert second.cancelled()
    assert recorder.alone == [1, 3]  # the second never ran


# -- the PostgreSQL store ----------------------------------------------------------------------

pytestmark = pytest.mark.network


@pytest.fixture
async def dsn(request: pytest.FixtureRequest) -> str:
    return await fresh_postgres_dsn(request.config)


@pytest.fixture(params=[True, False], ids=["functions", "transactions"])
async def store(request: pytest.FixtureRequest, dsn: str) -> AsyncIterator[PostgresStore]:
    """A store that writes through the session's functions, or with transactions."""
    store = PostgresStore(dsn, max_size=8, session_functions=request.param)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def stored_hashes(dsn: str) -> list[tuple[str, str, int, int]]:
    conn = await asyncpg.connect(dsn)
    try:
        return [(r[0], r[1], r[2], r[3]) for r in await conn.fetch(
            "SELECT gbid, participant_id, version, row_hash FROM discovery_entries")]
    finally:
        await conn.close()


async def assert_row_hashes_are_those_of_gcd_changes(dsn: str) -> None:
    rows = await stored_hashes(dsn)
    assert rows
    for gbid, pid, version, hashed in rows:
        assert hashed == row_hash(gbid, pid, version), (gbid, pid, version)


async def test_concurrent_adds_share_a_version_and_each_caller_gets_its_own_changes(
        store: PostgresStore, dsn: str) -> None:
    adds = [[row(f"p{i:02}"), row(f"p{i:02}", "g2")] for i in range(12)]
    answers = await asyncio.gather(*(store.add_changes(list(reversed(a))) for a in adds))
    for add, changes in zip(adds, answers, strict=True):
        assert [(c.key, c.entry) for c in changes] == [(e.key, e) for e in add]
        assert len({c.version for c in changes}) == 1
    versions = sorted({c.version for changes in answers for c in changes})
    assert versions == [1, 2], "the first add alone, the others waited and went together"
    assert store._groups.stats.groups == 1 and store._groups.stats.grouped_writes == 11
    assert await store.current_version() == 2
    assert await store.count() == 24
    await assert_row_hashes_are_those_of_gcd_changes(dsn)


async def test_a_value_the_database_refuses_fails_its_add_alone(store: PostgresStore) -> None:
    bad = row("bad", domain="nul\x00byte")
    writes = [[row("first")], [row("a")], [row("b"), bad], [row("c")], [row("d")]]
    results = await asyncio.gather(*(store.add_changes(w) for w in writes),
                                   return_exceptions=True)
    assert isinstance(results[2], StoreError) and results[2].reason == "database"
    assert "add of 2 rows failed" in str(results[2])
    for write, changes in zip(writes, results, strict=True):
        if write is not writes[2]:
            assert isinstance(changes, list)
            assert [c.entry for c in changes] == write
    assert store._groups.stats.groups_failed == 1
    # the failed group spent no version: the versions are those of the adds that committed
    versions = {c.version for r in results if isinstance(r, list) for c in r}
    assert versions == set(range(1, await store.current_version() + 1))
    assert sorted(e.participant_id for e in await store.find(["vehicle"], "test/Radio", NOW)
                  ) == ["a", "c", "d", "first"]


async def test_concurrent_touches_each_get_their_own_rows(store: PostgresStore, dsn: str
                                                          ) -> None:
    await store.add_changes([row(f"p{i}", cc=f"cc-{i % 4}") for i in range(20)]
                            + [row("p0", "g2", cc="cc-0")])
    # the first runs alone at once (and finds nothing); the others wait and group
    touches = [store.touch_changes("cc-8", None, NOW, LATER),
               store.touch_changes("cc-0", None, NOW + 1, LATER + 1),
               store.touch_changes("cc-1", None, NOW + 2, LATER + 2),
               store.touch_changes("cc-2", ["p2", "p6", "p2", "p3"], NOW + 3, LATER + 3),
               store.touch_changes("cc-3", ["p3"], NOW + 4, LATER + 4),
               store.touch_changes("cc-9", None, NOW + 5, LATER + 5),
               store.touch_changes("cc-0", ["p4"], NOW + 6, LATER + 6)]
    first, *answers = await asyncio.gather(*touches)
    assert first == []
    keys = [[c.key for c in changes] for changes in answers]
    assert keys == [
        [("g1", "p0"), ("g1", "p12"), ("g1", "p16"), ("g1", "p4"), ("g1", "p8"), ("g2", "p0")],
        [("g1", f"p{i}") for i in sorted(str(i) for i in range(1, 20, 4))],
        [("g1", "p2"), ("g1", "p6")],
        [("g1", "p3")],
        [],
        [("g1", "p4")]]
    for k, changes in enumerate(answers):
        for change in changes:
            assert change.entry is not None
            if k < 5:
                assert change.entry.last_seen_ms == NOW + 1 + k
                assert change.entry.expiry_ms == LATER + 1 + k
    # the cc-0 touches never share a version: their rows (p4) would be at one version twice
    assert answers[0][0].version != answers[5][0].version
    assert answers[5][0].entry is not None and answers[5][0].entry.last_seen_ms == NOW + 6
    await assert_row_hashes_are_those_of_gcd_changes(dsn)


async def test_a_touch_that_finds_nothing_spends_no_version(store: PostgresStore) -> None:
    await store.add_changes([row("p1")])
    results = await asyncio.gather(*(store.touch_changes(f"cc-{i}", None, NOW, LATER)
                                     for i in range(5, 10)))
    assert results == [[]] * 5
    assert await store.current_version() == 1


async def test_many_writers_on_three_instances_skip_no_version_and_converge(dsn: str) -> None:
    """Adds, touches and removes from 30 writers over three instances: every version up to
    the store's is the version of some caller's changes (none skipped, none empty), each key's
    latest change is what the store holds, and the row hashes are right."""
    stores = [PostgresStore(dsn, max_size=6, session_functions=k != 2) for k in range(3)]
    await asyncio.gather(*(s.open() for s in stores))
    try:
        answers: list[Change] = []

        async def writer(k: int) -> None:
            store = stores[k % 3]
            for i in range(20):
                pid = f"p{(k * 7 + i) % 60:02}"
                answers.extend(await store.add_changes([row(pid, cc=f"cc-{k % 5}",
                                                            priority=k * 100 + i)]))
                if i % 3 == 0:
                    answers.extend(await store.touch_changes(f"cc-{(k + i) % 5}", None,
                                                             NOW + i, LATER + i))
                if i % 7 == 0:
                    answers.extend((await store.remove_changes(pid, ["g1"], NOW))[1])

        await asyncio.gather(*(writer(k) for k in range(30)))
        current = await stores[0].current_version()
        assert sorted({c.version for c in answers}) == list(range(1, current + 1))
        assert sum(s._groups.stats.groups for s in stores) > 0
        latest: dict[tuple[str, str], Change] = {}
        for change in sorted(answers, key=lambda c: c.version):
            latest[change.key] = change
        stored = {e.key: e for e in await stores[1].find(["vehicle"], "test/Radio", NOW)}
        assert stored == {k: c.entry for k, c in latest.items() if c.entry is not None}
        await assert_row_hashes_are_those_of_gcd_changes(dsn)
    finally:
        await asyncio.gather(*(s.close() for s in stores))


async def test_without_the_right_to_temporary_objects_the_store_writes_with_transactions(
        dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    admin = await asyncpg.connect(dsn)
    database = urlsplit(dsn).path.lstrip("/")
    role = f"no_temp_{database}"
    try:
        await admin.execute(f'CREATE ROLE "{role}" LOGIN')
        await admin.execute(f'REVOKE TEMPORARY ON DATABASE "{database}" FROM PUBLIC')
        await admin.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"')
        setup = PostgresStore(dsn)
        await setup.open()  # the schema, made by its owner
        await setup.close()
        await admin.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"')
        parts = urlsplit(dsn)
        netloc = f"{role}@{parts.hostname}:{parts.port}"
        store = PostgresStore(urlunsplit(parts._replace(netloc=netloc)))
        await store.open()
        try:
            with caplog.at_level(logging.WARNING, logger="pyjoynr.gcd.postgres_store"):
                added = await store.add_changes([row("p1")])
                touched = await store.touch_changes("cc-1", None, NOW + 1, LATER + 1)
            assert [c.version for c in added + touched] == [1, 2]
            assert any("cannot create the session's functions" in r.getMessage()
                       for r in caplog.records)
        finally:
            await store.close()
    finally:
        await admin.close()

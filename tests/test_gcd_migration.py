"""The upgrade path: a store opened on a database written by the previous version (rows without
versions, no tombstone or meta table) migrates it in one transaction, without losing a row, and
opening it again changes nothing. On both stores, with a few thousand rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg
import pytest

from pyjoynr.gcd.changes import Digest, VersionedStore, bucket_of, row_hash
from pyjoynr.gcd.postgres_store import PostgresStore
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.gcd.store import COLUMNS, StoredEntry
from tests.support.gcd_stores import STORE_KINDS, fresh_postgres_dsn

NOW = 1_800_000_000_000
ROWS = 3_000

#: the schema of the previous version (gcd/store.py at a10d56b), as it wrote its databases
PREVIOUS_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS discovery_entries (
        gbid TEXT NOT NULL,
        participant_id TEXT NOT NULL,
        domain TEXT NOT NULL,
        interface_name TEXT NOT NULL,
        major_version INTEGER NOT NULL,
        minor_version INTEGER NOT NULL,
        priority BIGINT NOT NULL,
        scope TEXT NOT NULL,
        supports_on_change BOOLEAN NOT NULL,
        custom_parameters TEXT NOT NULL,
        last_seen_ms BIGINT NOT NULL,
        expiry_ms BIGINT NOT NULL,
        public_key_id TEXT NOT NULL,
        topic TEXT NOT NULL,
        cluster_controller_id TEXT NOT NULL,
        PRIMARY KEY (gbid, participant_id)
    )""",
    "CREATE INDEX IF NOT EXISTS discovery_entries_domain_interface "
    "ON discovery_entries (domain, interface_name)",
    "CREATE INDEX IF NOT EXISTS discovery_entries_participant_expiry "
    "ON discovery_entries (participant_id, expiry_ms)",
    "CREATE INDEX IF NOT EXISTS discovery_entries_cluster_controller "
    "ON discovery_entries (cluster_controller_id)",
    "CREATE INDEX IF NOT EXISTS discovery_entries_expiry ON discovery_entries (expiry_ms)",
)


def old_rows() -> list[StoredEntry]:
    return [StoredEntry(
        gbid=f"g{i % 3}", participant_id=f"p{i:05}", domain=f"d{i % 7}",
        interface_name="test/Radio", major_version=1, minor_version=i % 5, priority=i - 1000,
        scope="GLOBAL", supports_on_change=i % 2 == 0, custom_parameters='[["k", "v"]]',
        last_seen_ms=NOW + i, expiry_ms=NOW + 3_600_000 + i, public_key_id="",
        topic=f"joynr/cc/cc-{i % 11}", cluster_controller_id=f"cc-{i % 11}",
    ) for i in range(ROWS)]


async def previous_version_database(kind: str, tmp_path: Path, config: pytest.Config
                                    ) -> tuple[VersionedStore, VersionedStore]:
    """A database written by the previous version, and two (unopened) stores on it."""
    rows = [tuple(getattr(e, c) for c in COLUMNS) for e in old_rows()]
    insert = f"INSERT INTO discovery_entries ({', '.join(COLUMNS)}) VALUES "
    if kind == "sqlite":
        path = tmp_path / "gcd.sqlite"
        conn = sqlite3.connect(path)
        with conn:
            for statement in PREVIOUS_SCHEMA:
                conn.execute(statement)
            conn.executemany(insert + f"({', '.join('?' * len(COLUMNS))})", rows)
        conn.close()
        return SqliteStore(path), SqliteStore(path)
    dsn = await fresh_postgres_dsn(config)
    pg = await asyncpg.connect(dsn)
    try:
        for statement in PREVIOUS_SCHEMA:
            await pg.execute(statement)
        await pg.executemany(
            insert + f"({', '.join(f'${i}' for i in range(1, len(COLUMNS) + 1))})", rows)
    finally:
        await pg.close()
    return PostgresStore(dsn), PostgresStore(dsn)


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_a_database_of_the_previous_version_is_migrated_without_losing_a_row(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    first, again = await previous_version_database(kind, tmp_path, request.config)
    expected = old_rows()
    await first.open()
    try:
        assert await first.count() == ROWS
        assert await first.current_version() == 1
        loaded = [item async for item in first.load(batch_size=1_000)]
        assert loaded[-1] == 1
        rows = [r for batch in loaded[:-1] if not isinstance(batch, int) for r in batch.entries()]
        assert sorted(rows, key=lambda r: r[0].key) == sorted(
            ((e, 1) for e in expected), key=lambda r: r[0].key)
        digests: dict[int, Digest] = {}
        for entry in expected:
            bucket = bucket_of(*entry.key)
            digests[bucket] = digests.get(bucket, Digest()).plus(1, row_hash(*entry.key, 1))
        assert await first.digests() == digests
        assert [c.version for c in (await first.changes_since(0)).changes] == [1] * ROWS
        # the migrated store works as a new one: versions, tombstones
        assert [c.version for c in await first.remove_in_changes(["p00000"], "g0")] == [2]
        assert (await first.changes_since(1)).changes[0].entry is None
        found = await first.find(["d3"], "test/Radio", NOW)
        assert found == sorted((e for e in expected if e.domain == "d3"),
                               key=lambda e: (e.participant_id, e.gbid))
    finally:
        await first.close()
    # opening it again migrates nothing: same rows, same versions, the counter goes on
    await again.open()
    try:
        assert await again.count() == ROWS - 1
        assert await again.current_version() == 2
        assert [c.version for c in await again.add_changes(expected[:1])] == [3]
        assert len((await again.changes_since(2)).changes) == 1
    finally:
        await again.close()


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_a_migrated_database_has_the_schema_of_a_new_one(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    migrated, _ = await previous_version_database(kind, tmp_path, request.config)
    await migrated.open()
    await migrated.close()
    if kind == "sqlite":
        new = SqliteStore(tmp_path / "new.sqlite")
        await new.open()
        await new.close()

        def schema(path: Path) -> list[tuple[str, str]]:
            conn = sqlite3.connect(path)
            try:
                # SQLite quotes a renamed table's name in its CREATE statement
                return sorted((name, " ".join(sql.replace('"discovery_entries"',
                                                          "discovery_entries").split()))
                              for name, sql in conn.execute(
                                  "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"))
            finally:
                conn.close()

        assert schema(tmp_path / "gcd.sqlite") == schema(tmp_path / "new.sqlite")
    else:
        assert isinstance(migrated, PostgresStore)
        new_dsn = await fresh_postgres_dsn(request.config)
        new = PostgresStore(new_dsn)
        await new.open()
        await new.close()

        async def schema(dsn: str) -> list[tuple[object, ...]]:
            conn = await asyncpg.connect(dsn)
            try:
                columns = await conn.fetch(
                    "SELECT table_name, column_name, data_type, is_nullable, column_default "
                    "FROM information_schema.columns WHERE table_schema = 'public' "
                    "ORDER BY table_name, column_name")
                indexes = await conn.fetch("SELECT indexname, indexdef FROM pg_indexes "
                                           "WHERE schemaname = 'public' ORDER BY indexname")
                return [tuple(r) for r in [*columns, *indexes]]
            finally:
                await conn.close()

        assert await schema(migrated.dsn) == await schema(new_dsn)

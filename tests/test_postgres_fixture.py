"""The PostgreSQL test server: it runs, keeps its data over a restart, makes databases."""

from __future__ import annotations

import os
import pwd
import time
from pathlib import Path

import asyncpg
import pytest

from pyjoynr.testing.postgres import PostgresServer, find_bin_dir

pytestmark = pytest.mark.network


def server_owner(pg: PostgresServer) -> int:
    """The uid the postmaster runs as."""
    pid = int((pg.data_dir / "postmaster.pid").read_text().split()[0])
    return Path(f"/proc/{pid}").stat().st_uid


async def test_server_accepts_connections_and_queries() -> None:
    began = time.monotonic()
    async with PostgresServer() as pg:
        startup_s = time.monotonic() - began
        assert startup_s < 15, f"server start took {startup_s:.1f} s"
        assert pg.dsn == f"postgresql://postgres@127.0.0.1:{pg.port}/postgres"
        connection = await asyncpg.connect(pg.dsn)
        try:
            await connection.execute("CREATE TABLE entries (id int PRIMARY KEY, name text)")
            await connection.executemany("INSERT INTO entries VALUES ($1, $2)",
                                         [(1, "one"), (2, "two")])
            rows = await connection.fetch("SELECT id, name FROM entries ORDER BY id")
            assert [tuple(r) for r in rows] == [(1, "one"), (2, "two")]
            assert await connection.fetchval("SHOW fsync") == "off"
        finally:
            await connection.close()
        # PostgreSQL refuses root: as root, the server runs as the postgres user
        expected = pwd.getpwnam("postgres").pw_uid if os.geteuid() == 0 else os.geteuid()
        assert server_owner(pg) == expected
        base = pg.base
        assert base is not None and base.is_dir()
    assert not base.exists(), "leaving the block deletes the data directory"


async def test_stop_and_start_again_keeps_port_and_data() -> None:
    async with PostgresServer() as pg:
        port = pg.port
        connection = await asyncpg.connect(pg.dsn)
        await connection.execute("CREATE TABLE kept (v text)")
        await connection.execute("INSERT INTO kept VALUES ('before restart')")
        await connection.close()

        await pg.stop()
        with pytest.raises(OSError):  # nothing listens while it is down
            await asyncpg.connect(pg.dsn, timeout=2)
        await pg.start()

        assert pg.port == port
        connection = await asyncpg.connect(pg.dsn)
        try:
            assert await connection.fetchval("SELECT v FROM kept") == "before restart"
        finally:
            await connection.close()


async def test_create_database_gives_a_separate_database() -> None:
    async with PostgresServer() as pg:
        dsn = await pg.create_database("gcd_test")
        assert dsn == f"postgresql://postgres@127.0.0.1:{pg.port}/gcd_test"
        connection = await asyncpg.connect(dsn)
        try:
            assert await connection.fetchval("SELECT current_database()") == "gcd_test"
            await connection.execute("CREATE TABLE only_here (v int)")
        finally:
            await connection.close()
        connection = await asyncpg.connect(pg.dsn)
        try:
            assert await connection.fetchval("SELECT to_regclass('only_here')") is None
        finally:
            await connection.close()


async def test_missing_installation_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setattr("pyjoynr.testing.postgres.POSTGRES_ROOT", tmp_path / "nowhere")
    with pytest.raises(RuntimeError, match="apt-get install -y postgresql"):
        find_bin_dir()
    server = PostgresServer()
    with pytest.raises(RuntimeError, match="not installed"):
        await server.start()
    assert server.base is None and not server.running

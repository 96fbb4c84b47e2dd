"""Fresh GCD stores of every kind for tests (``store`` fixture, parametrized by kind).

``postgres`` stores live on ONE throwaway PostgreSQL server per test session, started by the
first test that needs it (:func:`shared_postgres`) and stopped when pytest finishes; every
store gets a database of its own (:func:`fresh_postgres_dsn`), so tests stay independent and
fast (a new database takes about 0.15 s, a new server about 1.5 s).
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pyjoynr.gcd.postgres_store import PostgresStore
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.gcd.store import GcdStore
from pyjoynr.testing.postgres import PostgresServer

#: every store implementation; the contract tests run on each
STORE_KINDS = ["sqlite", "postgres"]


class _SharedPostgres:
    """The session's PostgreSQL server: started once, on first use; stopped at pytest's end."""

    server: PostgresServer | None = None
    failure: str | None = None
    names = itertools.count(1)


async def shared_postgres(config: pytest.Config) -> PostgresServer:
    """The test session's PostgreSQL server, started now if it is not running yet.

    The server is a separate process, so one started on one test's event loop serves the
    tests of every other loop; ``config`` stops it and deletes its directory at the end."""
    shared = _SharedPostgres
    if shared.server is not None:
        return shared.server
    if shared.failure is not None:  # do not try again in every test: fail at once
        raise RuntimeError(f"the session's PostgreSQL server did not start: {shared.failure}")
    server = PostgresServer()
    try:
        await server.start()
    except Exception as exc:
        shared.failure = f"{type(exc).__name__}: {exc}"
        raise
    shared.server = server

    def stop() -> None:
        shared.server = None
        asyncio.run(server.close())

    config.add_cleanup(stop)
    return server


async def fresh_postgres_dsn(config: pytest.Config) -> str:
    """The DSN of a new, empty database on the session's PostgreSQL server."""
    server = await shared_postgres(config)
    return await server.create_database(f"gcd_{os.getpid()}_{next(_SharedPostgres.names)}")


async def make_store(kind: str, tmp_path: Path, config: pytest.Config | None = None
                     ) -> AsyncIterator[GcdStore]:
    """A fresh, open store of ``kind``; ``postgres`` needs pytest's ``config``."""
    if kind == "sqlite":
        store: GcdStore = SqliteStore(tmp_path / "gcd.sqlite")
    elif kind == "postgres":
        if config is None:
            raise ValueError("a postgres store needs pytest's config (request.config)")
        store = PostgresStore(await fresh_postgres_dsn(config))
    else:
        raise ValueError(f"unknown store kind {kind}")
    await store.open()
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[GcdStore]:
    async for made in make_store(request.param, tmp_path, request.config):
        yield made

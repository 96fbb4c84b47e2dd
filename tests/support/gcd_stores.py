"""Fresh GCD stores of every kind for tests (``store`` fixture, parametrized by kind)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from runtime.gcd_store import GcdStore, SqliteStore

#: every store implementation; the contract tests run on each
STORE_KINDS = ["sqlite"]


async def make_store(kind: str, tmp_path: Path) -> AsyncIterator[GcdStore]:
    if kind == "sqlite":
        store: GcdStore = SqliteStore(tmp_path / "gcd.sqlite")
    else:
        raise ValueError(f"unknown store kind {kind}")
    await store.open()
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[GcdStore]:
    async for made in make_store(request.param, tmp_path):
        yield made

"""Controllable parts around a real GCD cluster's synchronisation, for tests.

- :class:`FaultyNotifier` wraps a real :class:`~gcd.changes.Notifier` (PostgreSQL LISTEN) and
  drops, duplicates, reorders or delays what it delivers - what a notification channel may do
  (notifications are wake-ups, never data).
- :class:`HeldStore` wraps a real versioned store: every call goes to it, but a call named in
  ``hold`` waits, after the store has answered (its snapshot taken, or its write committed),
  until the test releases it - the "store snapshot held open while writes land" of the
  hazard tests, or a write whose answer is slow.
- :class:`Instance`: one GCD instance without MQTT (a provider, its synchroniser, its own
  store connection pool and notifier) on a shared PostgreSQL database.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any, cast

from pyjoynr.gcd.changes import Notifier, VersionedStore
from pyjoynr.gcd.index import DirectoryIndex
from pyjoynr.gcd.postgres_store import PostgresNotifier, PostgresStore
from pyjoynr.gcd.provider import GcdProvider
from pyjoynr.gcd.store import StoredEntry
from pyjoynr.gcd.sync import Synchronizer, SyncSettings
from pyjoynr.runtime.tasks import TaskSupervisor

GBIDS = ["GBID1", "GBID2"]


class FaultyNotifier:
    """A notifier that passes on what ``inner`` delivers, each notification dropped with
    probability ``drop``, delivered twice with ``duplicate``, delayed up to ``max_delay_s``
    (which reorders them), or held until :meth:`release` while :attr:`holding`."""

    def __init__(self, inner: Notifier, tasks: TaskSupervisor, *, seed: int = 0,
                 drop: float = 0.0, duplicate: float = 0.0, max_delay_s: float = 0.0) -> None:
        self.inner = inner
        self.tasks = tasks
        self.rng = random.Random(seed)
        self.drop = drop
        self.duplicate = duplicate
        self.max_delay_s = max_delay_s
        self.holding = False
        self.held: list[int] = []
        self.received = 0
        self.dropped = 0
        self._on_version: Callable[[int], None] = lambda v: None

    async def start(self, on_version: Callable[[int], None],
                    on_reconnected: Callable[[], None]) -> None:
        self._on_version = on_version
        await self.inner.start(self._received, on_reconnected)

    async def stop(self) -> None:
        await self.inner.stop()

    def _received(self, version: int) -> None:
        self.received += 1
        if self.rng.random() < self.drop:
            self.dropped += 1
            return
        copies = 2 if self.rng.random() < self.duplicate else 1
        for _ in range(copies):
            if self.holding:
                self.held.append(version)
            elif self.max_delay_s > 0:
                delay = self.rng.uniform(0, self.max_delay_s)
                self.tasks.spawn(self._later(delay, version), name="faulty-notification")
            else:
                self._on_version(version)

    async def _later(self, delay_s: float, version: int) -> None:
        await asyncio.sleep(delay_s)
        self._on_version(version)

    def release(self, *, reverse: bool = True) -> None:
        """Deliver what was held (newest first by default: reordered)."""
        held, self.held = self.held, []
        self.holding = False
        for version in (reversed(held) if reverse else held):
            self._on_version(version)


class HeldStore:
    """``store`` with some calls held open after they answered (see the module docstring)."""

    def __init__(self, store: VersionedStore) -> None:
        self.store = store
        self.hold: set[str] = set()
        #: set when a held call has its answer and waits
        self.waiting = asyncio.Event()
        self._gate = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.store, name)
        if name not in ("changes_since", "rows_in_buckets", "digests", "add_changes"):
            return attribute

        async def call(*args: Any, **kwargs: Any) -> Any:
            answer = await attribute(*args, **kwargs)
            if name in self.hold:
                self.hold.discard(name)
                self.waiting.set()
                await self._gate.wait()
                self._gate.clear()
                self.waiting.clear()
            return answer

        return call

    def release(self) -> None:
        self._gate.set()


class Instance:
    """One GCD instance (no MQTT): provider + synchroniser on its own pool of ``dsn``."""

    def __init__(self, dsn: str, name: str, *, own_gbid: str = "GBID1",
                 notifications: bool = True, settings: SyncSettings | None = None,
                 faults: dict[str, float] | None = None, seed: int = 0, held: bool = False,
                 cluster: str = "default") -> None:
        self.name = name
        self.tasks = TaskSupervisor(name)
        self.pg = PostgresStore(dsn, cluster=cluster, min_size=1, max_size=4)
        self.held = HeldStore(cast(VersionedStore, self.pg)) if held else None
        store = cast(VersionedStore, self.held if self.held is not None else self.pg)
        self.store = store
        self.faulty: FaultyNotifier | None = None
        notifier: Notifier | None = None
        if notifications:
            notifier = PostgresNotifier(dsn, cluster=cluster)
            if faults is not None:
                self.faulty = FaultyNotifier(notifier, self.tasks, seed=seed, **faults)
                notifier = self.faulty
        self.sync = Synchronizer(store, notifier=notifier, tasks=self.tasks,
                                 settings=settings or SyncSettings(
                                     catch_up_interval_s=0, repair_interval_s=0,
                                     stats_interval_s=0), name=name)
        self.provider = GcdProvider(store, own_gbid, GBIDS, sync=self.sync)

    @property
    def index(self) -> DirectoryIndex:
        return self.sync.index

    async def start(self) -> Instance:
        await self.pg.open()
        await self.sync.start()
        return self

    async def stop(self) -> None:
        await self.sync.stop()
        await self.tasks.close()
        await self.pg.close()


async def store_rows(store: VersionedStore) -> dict[tuple[str, str], tuple[StoredEntry, int]]:
    """Every row of the store with its version, by key."""
    rows: dict[tuple[str, str], tuple[StoredEntry, int]] = {}
    async for item in store.load():
        if not isinstance(item, int):
            for entry, version in item.entries():
                rows[entry.key] = (entry, version)
    return rows

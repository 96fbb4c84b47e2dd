"""The synchroniser of one GCD instance: :class:`Synchronizer` keeps the instance's in-memory
:class:`~gcd.index.DirectoryIndex` equal to the shared :class:`~gcd.changes.VersionedStore`.

What it does (docs/discovery.md, "A GCD cluster"; the rules of versions and changes are
in :mod:`gcd.changes`):

- **Start-up** (:meth:`Synchronizer.start`): listen for notifications first (so that nothing
  committed during the load goes unheard), stream ``store.load()`` into a fresh index in
  batches, ``finish_load(snapshot)``, then catch up. Only then is the synchroniser
  :attr:`~Synchronizer.ready` and are lookups answered from the index (:class:`NotReady`
  before). Meanwhile, with ``serve_while_loading`` (the default), the synchroniser is
  :attr:`~Synchronizer.serving_from_store` from the moment it listens: the instance answers
  lookups by reading the store itself (:class:`~gcd.provider.GcdProvider`), so a restarted
  instance serves again within a second, whatever the size of its index. Writes go to the
  store as always; what they commit after the load's snapshot reaches the new index by the
  catch-up that ends the load. Without it the instance answers nothing before it is ready.
- **Catch-up** (:meth:`Synchronizer.catch_up`): ``changes_since(W)`` until a batch is
  complete, each batch applied in version order (``apply_batch`` moves the watermark W). A
  store that answers :class:`~gcd.changes.TooFarBehind` (tombstones after W purged) makes the
  instance reload: a new index is loaded beside the current one, which keeps answering
  lookups until the new one has caught up and replaces it.
- **Wake-ups**: a notification (``on_version``) or a reconnect of the notification connection
  (``on_reconnected``) only wakes the catch-up worker: one catch-up runs at a time, and one
  more runs after it when it was woken meanwhile (wake-ups coalesce). A notification of a
  version the index has already reached wakes nothing. The catch-up timer
  (``catch_up_interval_s``) wakes it too, without any notification.
- **The writer's own changes**: what a write committed is applied at once
  (:meth:`apply_own`), without moving W (a lower version may still be in flight elsewhere).
- **Drift repair** (:meth:`repair`, every ``repair_interval_s``): compare the store's bucket
  digests with the index's, fetch the rows of the differing buckets at a snapshot S and let
  the index repair them (it never changes a key it knows at a version above S).
- **Purges**: tombstones older than the retention (:meth:`purge_tombstones`); expired rows
  (:meth:`purge_expired`, one instance of the cluster at a time, the store's lock; the others
  drop the rows through catch-up).
- **Outage**: a store error in catch-up or repair is counted and logged (the first of a run
  as a warning), the timers try again; lookups keep being answered from the index; the age
  of the last successful catch-up is in :meth:`stats` and in the periodic log line.

- **The cyclic garbage collector**: a loaded index holds its rows in columns (no object the
  collector tracks per row, :mod:`gcd.index`), but the process around it may hold many
  long-lived objects, and a full collection walks them all each time enough new objects have
  survived since the last one. Once the index is loaded (and after a reload has replaced
  it) the process's heap is frozen (``gc.freeze``; collected just before the start-up load,
  after a reload): collections leave what is alive then alone; it is still freed by
  reference counting when it goes (the index holds no reference cycles).
  :meth:`Synchronizer.stop` unfreezes it again. While a load runs the collector is paused
  (for the whole load, not per batch: the driver's rows of a batch are objects too).
  Cyclic garbage made meanwhile (the load itself makes none) waits: after a reload for the
  collection before the freeze; at start-up, where the heap is frozen right after the load,
  until the instance reloads or stops.

Everything periodic runs in tasks of the instance's :class:`~runtime.tasks.TaskSupervisor`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pyjoynr.gcd.changes import (
    Change,
    Digest,
    LoadBatch,
    Notifier,
    TooFarBehind,
    VersionedStore,
)
from pyjoynr.gcd.index import DirectoryIndex
from pyjoynr.gcd.params import Found
from pyjoynr.gcd.store import StoredEntry, StoreError
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.tasks import TaskSupervisor

__all__ = ["NotReady", "SyncSettings", "SyncStats", "Synchronizer"]

log = get_logger(__name__)

#: rows a load takes into its index per turn of the event loop (a few milliseconds: the
#: lookups served meanwhile wait at most that long for a turn)
_LOAD_SLICE = 1_000
#: the same for a load by columns (a row costs a fraction of a row's step there)
_COLUMN_SLICE = 5_000
#: how many buckets one ``rows_in_buckets`` call of a repair asks for at most
_REPAIR_CHUNK = 256
#: how often a repair fetches rows again whose snapshot a catch-up overtook
_REPAIR_ATTEMPTS = 3
#: how long a lookup waits at most for a catch-up (of a version it was notified of, or after
#: a miss); a healthy catch-up takes about a millisecond
FRESHNESS_WAIT_S = 0.5


class NotReady(Exception):
    """The index has not been loaded yet (or no more: the synchroniser stopped)."""


@dataclass(frozen=True)
class SyncSettings:
    """How one instance keeps its index in sync. An interval of 0 switches that timer off
    (the convergence tests switch off one mechanism at a time); ``notifications`` is used by
    the service to decide whether it listens at all."""

    #: seconds between two catch-ups without a notification (0: only when notified)
    catch_up_interval_s: float = 5.0
    #: seconds between two drift repairs (0: none)
    repair_interval_s: float = 60.0
    #: seconds a tombstone is kept; an instance further behind reloads
    tombstone_retention_s: float = 3600.0
    #: seconds between two log lines of the figures (0: none)
    stats_interval_s: float = 60.0
    #: rows per batch of the start-up load, changes per catch-up query
    batch_size: int = 10_000
    #: answer lookups from the store while the start-up load runs (False: answer nothing
    #: before the index is ready)
    serve_while_loading: bool = True

    def __post_init__(self) -> None:
        for name in ("catch_up_interval_s", "repair_interval_s", "stats_interval_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0 (0: off), got {getattr(self, name)!r}")
        if not self.tombstone_retention_s > 0:
            raise ValueError("tombstone_retention_s must be > 0, got "
                             f"{self.tombstone_retention_s!r}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")


@dataclass(frozen=True, slots=True)
class SyncStats:
    """The figures an operator sees of the synchronisation, at one moment."""

    ready: bool
    #: the start-up load is under way and lookups are answered from the store meanwhile
    serving_from_store: bool
    #: rows of the start-up load (or of a reload) taken so far; the index's rows once done
    rows_loaded: int
    #: the index's watermark W (every change up to it is reflected)
    watermark: int
    notifications_received: int
    reconnects: int
    #: changes applied by catch-up (and reloads) / from this instance's own writes
    changes_applied: int
    own_changes_applied: int
    catch_ups: int
    catch_up_failures: int
    #: the newest version known (notified or seen) minus the watermark
    catch_up_lag_versions: int
    #: from the first unserved wake-up to the end of the catch-up that served it (last one)
    catch_up_lag_ms: float
    #: seconds since the last successful catch-up (None: never)
    last_catch_up_age_s: float | None
    reloads: int
    repair_runs: int
    repair_failures: int
    #: buckets that differed / keys the index changed, over all repairs
    buckets_repaired: int
    keys_repaired: int
    index_rows: int
    #: rows the store held when they were last counted: at the last drift repair (its
    #: digests) or load; None: not counted yet. A count, not a live figure: see its age
    store_rows_checked: int | None
    #: seconds since that count (None: not counted yet)
    store_rows_checked_age_s: float | None
    #: rows of the index right after that count (the repair's or the load's result), to be
    #: compared with it; the live index figure is ``index_rows``
    index_rows_checked: int | None
    shared_parameter_objects: int
    shared_parameter_references: int
    expired_purged: int
    tombstones_purged: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One log line of every figure."""
        age = "never" if self.last_catch_up_age_s is None else f"{self.last_catch_up_age_s:.1f}s"
        checked = ("never" if self.store_rows_checked_age_s is None else
                   f"{self.store_rows_checked}/{self.index_rows_checked}"
                   f"@{self.store_rows_checked_age_s:.0f}s_ago")
        return (f"ready={self.ready} serving_from_store={self.serving_from_store} "
                f"rows_loaded={self.rows_loaded} watermark={self.watermark} "
                f"notifications={self.notifications_received} reconnects={self.reconnects} "
                f"applied={self.changes_applied} own={self.own_changes_applied} "
                f"catch_ups={self.catch_ups} failures={self.catch_up_failures} "
                f"lag={self.catch_up_lag_versions}v/{self.catch_up_lag_ms:.1f}ms "
                f"last_catch_up_age={age} reloads={self.reloads} "
                f"repairs={self.repair_runs} repair_failures={self.repair_failures} "
                f"keys_repaired={self.keys_repaired} index_rows={self.index_rows} "
                f"store/index_rows_checked={checked} "
                f"shared_params={self.shared_parameter_objects}"
                f"/{self.shared_parameter_references}refs expired_purged={self.expired_purged} "
                f"tombstones_purged={self.tombstones_purged}")


def _freeze_heap(name: str, why: str, *, collect: bool = True) -> None:
    """Collect once (unless ``collect`` is false: the caller collected before it loaded), then
    take everything alive out of the cyclic collector's scans (see the module docstring);
    logged with its duration."""
    began = time.monotonic()
    if collect:
        gc.unfreeze()  # (what an earlier freeze kept and has died since is collected now)
        gc.collect()
    gc.freeze()
    log.info("%s: %s: %d objects taken out of the garbage collector's scans in %.2f s", name,
             why, gc.get_freeze_count(), time.monotonic() - began)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a load. A load makes objects that stay (rows,
    shared parameters, index slots); collections triggered while they are made would
    traverse the growing index again and again for nothing. (When another pause ends first,
    the collector runs again early: only slower, never wrong.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Synchronizer:
    """Keeps ``self.index`` equal to ``store`` (see the module docstring).

    ``notifier``: the wake-ups of the cluster (None: no peers, e.g. the embedded SQLite GCD,
    or notifications switched off). ``tasks``: the supervisor of the instance; the timers run
    there (None: no timers at all - a passive synchroniser that catches up only when asked,
    as in tests that drive every step). ``index_factory`` makes an empty index (start-up and
    reloads)."""

    def __init__(self, store: VersionedStore, *, notifier: Notifier | None = None,
                 tasks: TaskSupervisor | None = None,
                 settings: SyncSettings | None = None,
                 index_factory: Callable[[], DirectoryIndex] = DirectoryIndex,
                 name: str = "GCD",
                 wall_clock_ms: Callable[[], int] | None = None) -> None:
        self.store = store
        self.notifier = notifier
        self.tasks = tasks
        self.settings = settings or SyncSettings()
        self.name = name
        self._index_factory = index_factory
        self._wall_ms = wall_clock_ms or (lambda: int(time.time() * 1000))
        self.index: DirectoryIndex = index_factory()
        self._ready = asyncio.Event()
        # set while the start-up load runs with serve_while_loading, and once ready
        self._serving = asyncio.Event()
        self._rows_loaded = 0
        self._started = False
        self._stopped = False
        self._start_lock = asyncio.Lock()
        self._listening = False
        # the catch-up worker: woken by notifications, reconnects and the timer
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._worker: asyncio.Task[None] | None = None
        self._timers: list[asyncio.Task[None]] = []
        self._first_unserved_wake: float | None = None
        self._catching_up = asyncio.Lock()
        self._repairing = asyncio.Lock()
        # figures
        self._notifications = 0
        self._reconnects = 0
        self._applied = 0
        self._own_applied = 0
        self._catch_ups = 0
        self._catch_up_failures = 0
        self._failing_since: float | None = None
        self._newest_known = 0
        self._newest_notified = 0
        # lookups waiting for a catch-up that began after their wake-up: (wake count, future)
        self._wakes = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._lag_ms = 0.0
        self._last_ok: float | None = None
        self._reloads = 0
        self._repair_runs = 0
        self._repair_failures = 0
        self._buckets_repaired = 0
        self._keys_repaired = 0
        #: the last count of the store's rows: (rows, index rows then, monotonic time)
        self._rows_checked: tuple[int, int, float] | None = None
        self._expired_purged = 0
        self._tombstones_purged = 0

    # ------------------------------------------------------------------ life cycle

    @property
    def ready(self) -> bool:
        """The index is loaded and has caught up once: lookups may be answered from it."""
        return self._ready.is_set() and not self._stopped

    @property
    def serving(self) -> bool:
        """Lookups are answered: from the index once it is ready, or from the store while the
        start-up load runs with ``serve_while_loading`` (:attr:`serving_from_store`)."""
        return self._serving.is_set() and not self._stopped

    @property
    def serving_from_store(self) -> bool:
        """The start-up load is under way with ``serve_while_loading``: the index is not ready,
        and lookups are to be answered by reading the store (GcdProvider does)."""
        return self.serving and not self._ready.is_set()

    @property
    def started(self) -> bool:
        return self._started

    @property
    def rows_loaded(self) -> int:
        """Rows taken by the running load so far (after a load: the rows it took)."""
        return self._rows_loaded

    async def wait_ready(self, timeout_s: float | None = None) -> None:
        await asyncio.wait_for(self._ready.wait(), timeout_s)

    async def wait_serving(self, timeout_s: float | None = None) -> None:
        """Until lookups can be answered: from the store while the start-up load runs (with
        ``serve_while_loading``), or from the index once ready."""
        await asyncio.wait_for(self._serving.wait(), timeout_s)

    async def start(self) -> None:
        """Listen, load, catch up, then ready; then the timers. A store error propagates (the
        instance cannot run without its index); :meth:`start` may then be called again."""
        async with self._start_lock:
            if self._ready.is_set():
                return
            if self._stopped:
                raise NotReady(f"{self.name}: the synchroniser was stopped")
            self._started = True
            began = time.monotonic()
            if self.notifier is not None and not self._listening:
                await self.notifier.start(self.on_version, self.on_reconnected)
                self._listening = True
            # collected before the load rather than after it: a collection walks every object
            # (a second per million rows loaded), and the load and its catch-up make no
            # cyclic garbage (the collector is paused meanwhile: see _load)
            gc.collect()
            if self.settings.serve_while_loading:
                self._serving.set()
                log.info("%s: loading the index; lookups are answered from the store "
                         "meanwhile", self.name)
            try:
                self.index = await self._load()
                await self._catch_up_now()
            except BaseException:
                self._serving.clear()
                raise
            _freeze_heap(self.name, "index loaded", collect=False)
            self._ready.set()
            self._serving.set()
            log.info("%s: index ready: %d rows loaded and caught up to version %d in %.2f s",
                     self.name, len(self.index), self.index.watermark,
                     time.monotonic() - began)
            self._start_timers()

    def _start_timers(self) -> None:
        tasks = self.tasks
        if tasks is None:
            return
        s = self.settings
        self._worker = tasks.spawn(self._catch_up_worker(), name="gcd-catch-up")
        if s.catch_up_interval_s > 0:
            self._timers.append(tasks.spawn(
                self._periodic(s.catch_up_interval_s, self._timer_wake), name="gcd-catch-up-timer"))
        if s.repair_interval_s > 0:
            self._timers.append(tasks.spawn(
                self._periodic(s.repair_interval_s, self._repair_round), name="gcd-repair"))
        # tombstones: a few times per retention, at most every minute, at least every second
        purge_s = min(60.0, max(1.0, s.tombstone_retention_s / 4))
        self._timers.append(tasks.spawn(
            self._periodic(purge_s, self._purge_tombstones_round), name="gcd-tombstone-purge"))
        if s.stats_interval_s > 0:
            self._timers.append(tasks.spawn(
                self._periodic(s.stats_interval_s, self._log_stats), name="gcd-sync-stats"))

    async def stop(self) -> None:
        """Stop listening, end the timers, drop the index (shutdown). Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        if self.notifier is not None and self._listening:
            try:
                await self.notifier.stop()
            except Exception:
                log.exception("%s: stopping the notifier failed", self.name)
            self._listening = False
        if self.tasks is not None:
            for task in [*self._timers, self._worker]:
                await self.tasks.cancel(task)
        self._timers.clear()
        self._worker = None
        self._release_waiters()
        figures = self.stats().line()
        rows = len(self.index)
        self.index.clear()
        gc.unfreeze()  # (the collector scans all again: what died meanwhile is collected)
        log.info("%s: synchroniser stopped, index of %d rows dropped; %s", self.name, rows,
                 figures)

    async def _periodic(self, interval_s: float, job: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                result = job()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                log.exception("%s: periodic %s failed; next round in %.1f s", self.name,
                              getattr(job, "__name__", job), interval_s)

    # ------------------------------------------------------------------ load

    async def _load(self) -> DirectoryIndex:
        """A new index holding the whole store at one snapshot, caught up to it."""
        index = self._index_factory()
        snapshot: int | None = None
        rows = self._rows_loaded = 0
        with _collector_paused():
            async for item in self.store.load(self.settings.batch_size):
                if isinstance(item, int):
                    snapshot = item
                    continue
                if item.groups is not None:  # (rows grouped by profile: PostgreSQL)
                    for part in item.groups.split(_COLUMN_SLICE):
                        index.load(part)
                        rows += len(part)
                        self._rows_loaded = rows
                        await asyncio.sleep(0)  # (as below)
                    continue
                records = item.records
                for start in range(0, len(records), _LOAD_SLICE):
                    index.load(LoadBatch(records[start:start + _LOAD_SLICE])
                               if len(records) > _LOAD_SLICE else item)
                    rows += min(_LOAD_SLICE, len(records) - start)
                    self._rows_loaded = rows
                    # let lookups through (of the current index, or of the store while the
                    # start-up load runs)
                    await asyncio.sleep(0)
            if snapshot is None:
                raise StoreError(f"{self.name}: the store's load yielded no snapshot version")
            index.finish_load(snapshot)
        self._rows_checked = (rows, len(index), time.monotonic())
        self._newest_known = max(self._newest_known, snapshot)
        return index

    async def reload(self) -> None:
        """Load the whole store again beside the current index, which keeps answering until
        the new one has caught up and replaces it."""
        log.warning("%s: too far behind (watermark %d, tombstones after it purged): reloading",
                    self.name, self.index.watermark)
        new = await self._load()
        await self._catch_up_index(new)
        self.index = new
        self._reloads += 1
        _freeze_heap(self.name, "index reloaded")

    # ------------------------------------------------------------------ catch-up

    def on_version(self, version: int) -> None:
        """A notification: another instance committed ``version``."""
        self._notifications += 1
        self._newest_known = max(self._newest_known, version)
        self._newest_notified = max(self._newest_notified, version)
        if version > self.index.watermark:
            self.wake()

    def on_reconnected(self) -> None:
        """The notification connection came back: notifications may have been missed."""
        self._reconnects += 1
        log.info("%s: notification connection back: catching up", self.name)
        self.wake()

    def _timer_wake(self) -> None:
        self.wake()

    def wake(self) -> None:
        """Ask for a catch-up (coalesced: at most one runs, one more after it)."""
        if self._first_unserved_wake is None:
            self._first_unserved_wake = time.monotonic()
        self._wakes += 1
        self._idle.clear()
        self._wake.set()

    async def _catch_up_worker(self) -> None:
        while True:
            if not self._wake.is_set():
                self._idle.set()
            await self._wake.wait()
            self._wake.clear()
            served = self._first_unserved_wake
            self._first_unserved_wake = None
            began = self._wakes  # every wake-up up to this one is served by this catch-up
            try:
                await self._catch_up_now()
            except Exception as exc:
                if not isinstance(exc, StoreError):  # a defect: say so, keep the worker
                    log.exception("%s: catch-up failed", self.name)
                self._release_waiters(began)
                # counted and logged in _catch_up_now; the timer (or the next notification)
                # tries again. Wake-ups that came meanwhile are not lost (_wake).
                if self._first_unserved_wake is None:
                    self._first_unserved_wake = served
            else:
                self._release_waiters(began)
                if served is not None:
                    self._lag_ms = (time.monotonic() - served) * 1000

    def _release_waiters(self, served: int | None = None) -> None:
        """Release the lookups whose wake-up the catch-up that ended has served (all: None)."""
        keep = []
        for wake, waiter in self._waiters:
            if served is None or wake <= served:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                keep.append((wake, waiter))
        self._waiters = keep

    async def _fresh(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) for a catch-up that begins after now and ends."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((self._wakes, waiter))
        await asyncio.wait({waiter}, timeout=timeout_s)

    async def notified_applied(self, timeout_s: float = FRESHNESS_WAIT_S) -> None:
        """Wait (at most ``timeout_s``) until a version this instance was notified of is
        reflected in the index: a lookup that arrives after another instance's write was
        announced sees that write. At once when nothing notified is pending (the common
        case), when no catch-up worker runs, or while the store is failing."""
        if (self._newest_notified <= self.index.watermark or self._worker is None
                or self._failing_since is not None):
            return
        await self._fresh(timeout_s)

    async def catch_up_on_miss(self, timeout_s: float = FRESHNESS_WAIT_S) -> None:
        """A lookup found nothing: catch up (through the worker, coalesced with any other
        wake-up) and wait at most ``timeout_s`` for it, so that an entry registered through
        another instance just before is found even when its notification has not arrived
        yet. At once when no worker runs or while the store is failing (the index answers)."""
        if self._worker is None or self._failing_since is not None:
            return
        self.wake()
        await self._fresh(timeout_s)

    async def settled(self, timeout_s: float | None = None) -> None:
        """Wait until the catch-up worker has nothing to do (tests; bounded by ``timeout_s``)."""
        await asyncio.wait_for(self._idle.wait(), timeout_s)

    async def catch_up(self) -> int:
        """Catch up now (once the index is loaded); how many changes were applied."""
        if not self._ready.is_set():
            raise NotReady(f"{self.name}: the index is not loaded")
        return await self._catch_up_now()

    async def _catch_up_now(self) -> int:
        async with self._catching_up:
            try:
                try:
                    applied = await self._catch_up_index(self.index)
                except TooFarBehind:
                    await self.reload()
                    applied = len(self.index)  # a reload applies everything
            except StoreError as exc:
                self._catch_up_failures += 1
                now = time.monotonic()
                if self._failing_since is None:
                    self._failing_since = now
                    log.warning("%s: catch-up failed (%s): %s; lookups are answered from the "
                                "index (watermark %d) and the catch-up is tried again",
                                self.name, exc.reason, exc, self.index.watermark)
                else:
                    log.debug("%s: catch-up failed again (%s): %s", self.name, exc.reason, exc)
                raise
            now = time.monotonic()
            if self._failing_since is not None:
                log.info("%s: caught up again after %.1f s of failures (%d failed attempts)",
                         self.name, now - self._failing_since, self._catch_up_failures)
                self._failing_since = None
            self._last_ok = now
            self._catch_ups += 1
            return applied

    async def _catch_up_index(self, index: DirectoryIndex) -> int:
        limit = self.settings.batch_size
        applied = 0
        while True:
            batch = await self.store.changes_since(index.watermark, limit)
            applied += index.apply_batch(batch)
            self._newest_known = max(self._newest_known, batch.up_to)
            # complete when the store's version is beyond the last change (or there is none);
            # a batch that ends at its last change's version may have been cut by the limit
            # (never inside one version's group, so it can be much shorter than the limit)
            if not batch.changes or batch.up_to > batch.changes[-1].version:
                break
        self._applied += applied
        return applied

    # ------------------------------------------------------------------ own writes

    def apply_own(self, changes: Sequence[Change]) -> int:
        """Apply what this instance's write committed (at once, without moving W). While the
        start-up load runs (serving from the store) nothing is applied: the index being
        loaded gets these changes from its snapshot or from the catch-up that ends the load."""
        applied = 0 if self.serving_from_store else self.index.apply(changes)
        for change in changes:
            self._newest_known = max(self._newest_known, change.version)
        self._own_applied += applied
        return applied

    # ------------------------------------------------------------------ lookups

    def find(self, domains: Sequence[str], interface_name: str, now_ms: int
             ) -> list[StoredEntry]:
        self._check_ready()
        return self.index.find(domains, interface_name, now_ms)

    def find_participant(self, participant_id: str, now_ms: int) -> list[StoredEntry]:
        self._check_ready()
        return self.index.find_participant(participant_id, now_ms)

    def find_shared(self, domains: Sequence[str], interface_name: str, now_ms: int
                    ) -> list[Found]:
        """:meth:`find` as looked-up rows (DirectoryIndex.find_shared)."""
        self._check_ready()
        return self.index.find_shared(domains, interface_name, now_ms)

    def find_participant_shared(self, participant_id: str, now_ms: int
                                ) -> list[Found]:
        self._check_ready()
        return self.index.find_participant_shared(participant_id, now_ms)

    def _check_ready(self) -> None:
        if not self.ready:
            raise NotReady(f"{self.name}: the directory is not loaded yet")

    # ------------------------------------------------------------------ drift repair

    async def _repair_round(self) -> None:
        # a failure is counted and logged by repair(); the next round tries again
        with contextlib.suppress(StoreError):
            await self.repair()

    async def repair(self) -> int:
        """Compare digests, repair the differing buckets; how many keys the index changed."""
        if not self._ready.is_set():
            raise NotReady(f"{self.name}: the index is not loaded")
        async with self._repairing:
            try:
                stored = await self.store.digests()
                index = self.index
                mine = index.digests()
                differing = sorted(b for b in set(stored) | set(mine)
                                   if stored.get(b, _EMPTY) != mine.get(b, _EMPTY))
                counted = sum(d.count for d in stored.values())
                repaired = 0
                for i in range(0, len(differing), _REPAIR_CHUNK):
                    chunk = differing[i:i + _REPAIR_CHUNK]
                    repaired += await self._repair_buckets(index, chunk)
                self._rows_checked = (counted, len(index), time.monotonic())
            except StoreError as exc:
                self._repair_failures += 1
                log.warning("%s: drift repair failed (%s): %s", self.name, exc.reason, exc)
                raise
            self._repair_runs += 1
            self._buckets_repaired += len(differing)
            self._keys_repaired += repaired
            if repaired:
                log.warning("%s: drift repair: %d bucket(s) differed, %d key(s) repaired",
                            self.name, len(differing), repaired)
            elif differing:
                log.debug("%s: drift repair: %d bucket(s) differed (changes in flight), "
                          "nothing to repair", self.name, len(differing))
            return repaired

    async def _repair_buckets(self, index: DirectoryIndex, buckets: list[int]) -> int:
        """Repair ``buckets`` from the store's rows at a snapshot S, but only when S is not
        older than the index's watermark W: the index has applied every change up to W and
        forgets the versions of deletions once W passes them, so rows of an older snapshot
        could bring back a key deleted between S and W. When a catch-up moved W past S while
        the rows were fetched, they are fetched again (a few times; else the next round)."""
        for _ in range(_REPAIR_ATTEMPTS):
            rows = await self.store.rows_in_buckets(buckets)
            if rows.snapshot >= index.watermark:
                return index.repair(rows, buckets)
            log.debug("%s: repair snapshot %d older than the watermark %d: fetching again",
                      self.name, rows.snapshot, index.watermark)
        return 0

    # ------------------------------------------------------------------ purges

    async def purge_expired(self, now_ms: int) -> int | None:
        """The expiry purge (one instance of the cluster at a time): delete the rows expired at
        ``now_ms`` and drop them here at once; None when another instance purges."""
        changes = await self.store.purge_expired_changes(now_ms)
        if changes is None:
            return None
        self.apply_own(changes)
        self._expired_purged += len(changes)
        return len(changes)

    async def _purge_tombstones_round(self) -> None:
        try:
            await self.purge_tombstones()
        except StoreError as exc:
            log.warning("%s: purging tombstones failed (%s): %s", self.name, exc.reason, exc)

    async def purge_tombstones(self) -> int:
        """Drop the tombstones older than the retention; how many."""
        older_than = self._wall_ms() - int(self.settings.tombstone_retention_s * 1000)
        purged = await self.store.purge_tombstones(older_than)
        self._tombstones_purged += purged
        return purged

    # ------------------------------------------------------------------ figures

    def stats(self) -> SyncStats:
        index = self.index
        watermark = index.watermark
        figures = index.stats()
        checked = self._rows_checked
        return SyncStats(
            ready=self.ready, serving_from_store=self.serving_from_store,
            rows_loaded=self._rows_loaded, watermark=watermark,
            notifications_received=self._notifications, reconnects=self._reconnects,
            changes_applied=self._applied, own_changes_applied=self._own_applied,
            catch_ups=self._catch_ups, catch_up_failures=self._catch_up_failures,
            catch_up_lag_versions=max(0, self._newest_known - watermark),
            catch_up_lag_ms=self._lag_ms,
            last_catch_up_age_s=(None if self._last_ok is None
                                 else time.monotonic() - self._last_ok),
            reloads=self._reloads, repair_runs=self._repair_runs,
            repair_failures=self._repair_failures, buckets_repaired=self._buckets_repaired,
            keys_repaired=self._keys_repaired, index_rows=len(index),
            store_rows_checked=None if checked is None else checked[0],
            store_rows_checked_age_s=None if checked is None else time.monotonic() - checked[2],
            index_rows_checked=None if checked is None else checked[1],
            shared_parameter_objects=figures.shared_params,
            shared_parameter_references=figures.param_refs, expired_purged=self._expired_purged,
            tombstones_purged=self._tombstones_purged)

    def _log_stats(self) -> None:
        log.info("%s sync: %s", self.name, self.stats().line())


_EMPTY = Digest()

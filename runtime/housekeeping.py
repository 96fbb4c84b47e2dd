"""Periodic purge of expired routing entries, for the runtimes' event loops."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from types import TracebackType

from runtime.clock import now_ms
from runtime.routing import RoutingTable

__all__ = ["DEFAULT_PURGE_INTERVAL_S", "RoutingTableCleaner"]

log = logging.getLogger(__name__)

DEFAULT_PURGE_INTERVAL_S = 60.0


class RoutingTableCleaner:
    """Calls ``table.purge(now)`` every ``interval_s`` seconds while started.

    Use as ``async with RoutingTableCleaner(table):`` or with ``start()`` / ``await stop()``.
    ``on_purged`` is called with the removed participantIds after each purge that removed some
    (the router uses it to drop what it keeps per participant).
    """

    def __init__(
        self,
        table: RoutingTable,
        interval_s: float = DEFAULT_PURGE_INTERVAL_S,
        *,
        clock_ms: Callable[[], int] = now_ms,
        on_purged: Callable[[list[str]], None] | None = None,
    ) -> None:
        if not interval_s > 0:
            raise ValueError(f"purge interval must be > 0 seconds, got {interval_s!r}")
        self.table = table
        self.interval_s = interval_s
        self._clock_ms = clock_ms
        self._on_purged = on_purged
        self._task: asyncio.Task[None] | None = None
        self.runs = 0
        self.purged_total = 0

    def run_once(self) -> list[str]:
        removed = self.table.purge(self._clock_ms())
        self.runs += 1
        if removed:
            self.purged_total += len(removed)
            log.info(
                "routing table cleanup: removed %d expired entr%s (%d left), e.g. %s",
                len(removed),
                "y" if len(removed) == 1 else "ies",
                len(self.table),
                ", ".join(removed[:3]),
            )
            if self._on_purged is not None:
                self._on_purged(removed)
        return removed

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                self.run_once()
            except Exception:  # a failing callback must not end the cleanup for good
                log.exception(
                    "routing table cleanup failed; trying again in %.1f s", self.interval_s
                )

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self.running:
            return
        self._task = asyncio.get_running_loop().create_task(
            self._loop(), name="routing-table-cleanup"
        )
        log.debug("routing table cleanup every %.1f s", self.interval_s)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def __aenter__(self) -> RoutingTableCleaner:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

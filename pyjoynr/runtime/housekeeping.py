"""The driver of a router's timers: :class:`RouterHousekeeping`.

The router (:mod:`runtime.router`) decides from the messages and the time it is given and runs
no timers. Each process that has a router gives it one driver, which runs two periodic jobs
through the process's :class:`~runtime.tasks.TaskSupervisor`:

- the sweep, every ``router.settings.sweep_interval_ms``: queued messages that expired are
  dropped, refused sends whose backoff has passed are retried (``router.sweep``);
- the purge, every ``purge_interval_s``: expired routes (learned replyTo routes, routes of
  directory answers) leave the routing table, and the router forgets the multicast receivers
  of those participants (``router.purge``).

A round that fails is logged by the supervisor and the next one runs all the same.
"""

from __future__ import annotations

import asyncio

from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.tasks import TaskSupervisor

__all__ = ["DEFAULT_PURGE_INTERVAL_S", "RouterHousekeeping"]

log = get_logger(__name__)

DEFAULT_PURGE_INTERVAL_S = 60.0


class RouterHousekeeping:
    """Runs ``router.sweep`` and ``router.purge`` periodically while started.

    ``start()`` / ``await stop()``; both are idempotent. ``runs`` and ``purged_total`` count
    the purges done and the routes they removed.
    """

    def __init__(self, router: MessageRouter, tasks: TaskSupervisor, *,
                 purge_interval_s: float = DEFAULT_PURGE_INTERVAL_S) -> None:
        if not purge_interval_s > 0:
            raise ValueError(f"purge interval must be > 0 seconds, got {purge_interval_s!r}")
        sweep_interval_ms = router.settings.sweep_interval_ms
        if not sweep_interval_ms > 0:
            raise ValueError(f"sweep interval must be > 0 ms, got {sweep_interval_ms!r}")
        self.router = router
        self.purge_interval_s = purge_interval_s
        self._supervisor = tasks
        self._sweeper: asyncio.Task[None] | None = None
        self._purger: asyncio.Task[None] | None = None
        self.runs = 0
        self.purged_total = 0

    @property
    def running(self) -> bool:
        return self._sweeper is not None and not self._sweeper.done()

    def start(self) -> None:
        if self.running:
            return
        tasks = self._supervisor
        self._sweeper = tasks.every(self.router.settings.sweep_interval_ms / 1000,
                                    self.router.sweep, name="router-sweep")
        self._purger = tasks.every(self.purge_interval_s, self.purge, name="routing-table-purge")
        log.debug("router sweep every %d ms, routing table purge every %.1f s",
                  self.router.settings.sweep_interval_ms, self.purge_interval_s)

    async def stop(self) -> None:
        sweeper, purger = self._sweeper, self._purger
        self._sweeper = self._purger = None
        await self._supervisor.cancel(sweeper)
        await self._supervisor.cancel(purger)

    def purge(self) -> list[str]:
        """One purge, now (by the router's clock)."""
        removed = self.router.purge()
        self.runs += 1
        if removed:
            self.purged_total += len(removed)
            log.info(
                "routing table cleanup: removed %d expired entr%s (%d left), e.g. %s",
                len(removed),
                "y" if len(removed) == 1 else "ies",
                self.router.route_count,
                ", ".join(removed[:3]),
            )
        return removed

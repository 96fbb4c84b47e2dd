"""One owner for the background tasks of a process: :class:`TaskSupervisor`.

Every long-lived or fire-and-forget task of a component (a connection loop, a periodic sweep, a
retry in the background) is started through the supervisor of its process, which

- keeps a strong reference to it (asyncio keeps only weak ones, so an unreferenced task can be
  garbage-collected mid-flight);
- logs a task that fails (never one that is cancelled), with the task's name;
- runs periodic jobs (:meth:`every`), logging a failing round and going on with the next;
- stops everything at shutdown (:meth:`close`): each task is cancelled until it is done. Python
  3.11's ``asyncio.wait_for`` can swallow a cancellation that arrives as the awaited call
  completes, so one ``cancel()`` is not always enough.

Components receive the supervisor of their process (or make a child one with :meth:`child`,
closed with them) instead of creating tasks of their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from pyjoynr.runtime.logs import get_logger

__all__ = ["TaskSupervisor"]

log = get_logger(__name__)

T = TypeVar("T")

#: how long close() waits between two cancellations of a task that is still running
_CANCEL_POLL_S = 0.5


class TaskSupervisor:
    """The background tasks of one process or component (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: set[asyncio.Task[Any]] = set()
        self._children: list[TaskSupervisor] = []
        self._closed = False

    def __len__(self) -> int:
        return len(self._tasks) + sum(len(child) for child in self._children)

    @property
    def closed(self) -> bool:
        return self._closed

    def child(self, name: str) -> TaskSupervisor:
        """A supervisor for one component: closed with this one, or on its own before."""
        child = TaskSupervisor(f"{self.name}/{name}")
        self._children.append(child)
        return child

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
        """Run ``coro`` as a task owned by this supervisor."""
        if self._closed:
            coro.close()
            raise RuntimeError(f"task supervisor {self.name} is closed: cannot start {name}")
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def every(self, interval_s: float, job: Callable[[], object], *, name: str
              ) -> asyncio.Task[None]:
        """Call ``job()`` every ``interval_s`` seconds (first after one interval). A round that
        raises is logged; the next round runs all the same."""
        if not interval_s > 0:
            raise ValueError(f"{name}: interval must be > 0 seconds, got {interval_s!r}")

        async def periodic() -> None:
            while True:
                await asyncio.sleep(interval_s)
                try:
                    job()
                except Exception:
                    log.exception("%s: periodic job %s failed; next round in %.1f s",
                                  self.name, name, interval_s)

        return self.spawn(periodic(), name=name)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("%s: task %s failed", self.name, task.get_name(), exc_info=exc)

    async def cancel(self, task: asyncio.Task[Any] | None) -> None:
        """Cancel one task and wait until it is done."""
        if task is None:
            return
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=_CANCEL_POLL_S)

    async def close(self) -> None:
        """Cancel every task (children first) and wait until all are done. Idempotent."""
        self._closed = True
        for child in self._children:
            await child.close()
        while self._tasks:
            for task in list(self._tasks):
                await self.cancel(task)
                self._tasks.discard(task)

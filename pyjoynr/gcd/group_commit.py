"""Group commit: concurrent writes of one store instance that wait at the same moment are
committed together, in one transaction that takes one version.

A write is :class:`GroupWrite`: its ``kind`` (only writes of one kind go into one group), what
it ``claims`` (keys, or a cluster controller's id: two writes whose claims meet never go into
one group, so that no key is changed twice at one version, each write's changes stay its own
and one statement never has to change a row twice) and its ``size`` (rows; a group holds at
most ``max_rows`` rows, but always at least one write).

:class:`GroupCommitter` queues the writes submitted to it and runs at most ``max_groups``
groups at a time: whenever fewer run, the writes waiting form the next group - the first write
waiting, and every later one of its kind whose claims meet none of the group's, as long as the
rows fit - so that a lone write is not delayed at all, and under load the writes that arrived
while a group ran go together into the next one. A write left out (another kind, a claim met,
too many rows) waits for the next group; the first write waiting always goes into the next
group, so none waits for ever.

``run_group(kind, writes)`` commits a group of two or more writes and answers each write's
result, in order. When it raises, nothing of the group is written (one transaction) - or, when
the connection was lost at commit, everything was: the writes must be idempotent in what they
leave (the store groups adds and touches only) - and each write of the group runs again alone
(``run_alone``, concurrently), so that the failure of one write never fails another: each
caller gets its own write's outcome. Only a failure that ``shared(exc)`` declares common to
every write (the store is not open, the server cannot be reached) fails the whole group at
once. A group of one write is run alone directly.

A caller cancelled while its write waits takes the write out of the queue; cancelled while the
group runs, it no longer waits for the outcome, but the write may still be committed.

Pure asyncio; no I/O of its own.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pyjoynr.runtime.logs import get_logger

__all__ = ["GroupCommitter", "GroupStats", "GroupWrite"]

log = get_logger(__name__)

P = TypeVar("P")
R = TypeVar("R")


@dataclass(eq=False, slots=True)
class GroupWrite(Generic[P, R]):
    """One write waiting to be committed: ``payload`` is what the store needs to run it."""

    kind: str
    claims: frozenset[Hashable]
    size: int
    payload: P
    future: asyncio.Future[R] = field(init=False)


@dataclass(slots=True)
class GroupStats:
    """What the group commit did, for an operator and the tests."""

    #: groups of two or more writes run / the writes in them
    groups: int = 0
    grouped_writes: int = 0
    #: writes run alone: a group of one, or again after their group failed
    alone: int = 0
    #: groups that failed and whose writes ran again alone
    groups_failed: int = 0
    #: the most writes one group held
    largest_group: int = 0


class GroupCommitter(Generic[P, R]):
    """Queues writes and commits them in groups (see the module docstring)."""

    def __init__(self, run_group: Callable[[str, list[P]], Awaitable[list[R]]],
                 run_alone: Callable[[str, P], Awaitable[R]], *,
                 shared: Callable[[BaseException], bool], max_groups: int = 1,
                 max_rows: int = 2_000, name: str = "group-commit") -> None:
        if max_groups < 1 or max_rows < 1:
            raise ValueError("max_groups and max_rows must be at least 1")
        self._run_group = run_group
        self._run_alone = run_alone
        self._shared = shared
        self.max_groups = max_groups
        self.max_rows = max_rows
        self.name = name
        self.stats = GroupStats()
        self._waiting: deque[GroupWrite[P, R]] = deque()
        self._running: set[asyncio.Task[None]] = set()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def submit(self, kind: str, claims: frozenset[Hashable], size: int, payload: P) -> R:
        """Commit the write (in a group, or alone) and answer its result; raises its error."""
        write: GroupWrite[P, R] = GroupWrite(kind, claims, size, payload)
        write.future = asyncio.get_running_loop().create_future()
        self._waiting.append(write)
        self._start_groups()
        try:
            return await write.future
        except asyncio.CancelledError:
            # still waiting: it is dropped when the next group forms (future cancelled)
            write.future.cancel()
            raise

    async def drain(self) -> None:
        """Wait until every group that runs now has ended (for close())."""
        while self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    def _start_groups(self) -> None:
        while len(self._running) < self.max_groups:
            group = self._next_group()
            if not group:
                return
            task = asyncio.create_task(self._run(group), name=self.name)
            self._running.add(task)
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        if not task.cancelled() and task.exception() is not None:  # a bug: never lose it
            log.error("%s: a group ended with an error", self.name,
                      exc_info=task.exception())
        self._start_groups()

    def _next_group(self) -> list[GroupWrite[P, R]]:
        """The first write waiting (not cancelled) and every later one that fits with it."""
        waiting = self._waiting
        while waiting and waiting[0].future.done():
            waiting.popleft()
        if not waiting:
            return []
        first = waiting.popleft()
        group = [first]
        claimed: set[Hashable] = set(first.claims)
        rows = first.size
        left: deque[GroupWrite[P, R]] = deque()
        while waiting:
            write = waiting.popleft()
            if write.future.done():
                continue
            if (write.kind == first.kind and rows + write.size <= self.max_rows
                    and claimed.isdisjoint(write.claims)):
                group.append(write)
                claimed.update(write.claims)
                rows += write.size
            else:
                left.append(write)
        self._waiting = left
        return group

    async def _run(self, group: list[GroupWrite[P, R]]) -> None:
        if len(group) == 1:
            await self._alone(group[0])
            return
        stats = self.stats
        stats.groups += 1
        stats.grouped_writes += len(group)
        stats.largest_group = max(stats.largest_group, len(group))
        try:
            results = await self._run_group(group[0].kind, [w.payload for w in group])
        except asyncio.CancelledError:
            for write in group:
                write.future.cancel()
            raise
        except Exception as exc:
            if self._shared(exc):
                for write in group:
                    if not write.future.done():
                        write.future.set_exception(exc)
                return
            stats.groups_failed += 1
            log.debug("%s: a group of %d writes failed (%s); each runs again alone",
                      self.name, len(group), exc)
            await asyncio.gather(*(self._alone(w) for w in group))
            return
        for write, result in zip(group, results, strict=True):
            if not write.future.done():
                write.future.set_result(result)

    async def _alone(self, write: GroupWrite[P, R]) -> None:
        if write.future.done():  # its caller went away before it ran
            return
        self.stats.alone += 1
        try:
            result = await self._run_alone(write.kind, write.payload)
        except asyncio.CancelledError:
            write.future.cancel()
            raise
        except Exception as exc:
            if not write.future.done():
                write.future.set_exception(exc)
            return
        if not write.future.done():
            write.future.set_result(result)

"""Running application code inside tasks: :class:`CallRunner`.

Provider methods (requests, one-way calls, attribute getters and setters) and a proxy's async
subscription callbacks are application code, and asyncio code expects to run inside a task:
``asyncio.timeout``, ``asyncio.current_task()``, task groups and cancellation all need one. A
task per call costs about as much as a small call itself, so a runner shares tasks between
calls without taking that away from any of them:

- a submitted call waits in a queue; one *drainer* task runs the queued calls one after the
  other, each in the ``contextvars.Context`` it was submitted with;
- a call that completes without waiting for anything (most calls) needs no task of its own:
  the drainer goes on with the next one;
- a call that waits keeps the drainer it started in for itself until it ends: that task is
  its task for its whole life (the one ``asyncio.timeout`` cancels and ``current_task()``
  returns), and a new drainer takes the calls queued after it. Calls never wait behind one
  that waits.

A drainer that has run out of calls waits for the next one (waking it costs less than
starting a task), so calls that do not wait cost no task at all, and a burst of them (one read
from a socket) one wake-up. Each call still starts one loop iteration after it was submitted,
never inside the transport callback that delivered it.

The runner owns its tasks: :meth:`CallRunner.close` cancels them and discards the calls that
have not started; :meth:`CallRunner.wait_done` waits for them to end instead (a graceful stop:
the calls already taken are finished and answered). A failing call is logged, with what it was.
"""

from __future__ import annotations

import asyncio
import contextvars
import types
from collections import deque
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, TypeVar

from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.tasks import TaskSupervisor

__all__ = ["Call", "CallRunner"]

log = get_logger(__name__)

T = TypeVar("T")

#: a call to run: the coroutine, the context to run it in, what it is (for log lines)
Call = tuple[Coroutine[Any, Any, Any], contextvars.Context, str]


@types.coroutine
def _drive(coro: Coroutine[Any, Any, Any], context: contextvars.Context, awaited: Any
           ) -> Generator[Any, Any, None]:
    """Go on with ``coro``, already started, in the current task: pass on what it awaits
    (the task waits for it), feed results and exceptions (cancellation included) back in,
    every step in ``context``. This is what ``await`` does, plus the context."""
    while True:
        try:
            value = yield awaited
        except BaseException as exc:
            try:
                awaited = context.run(coro.throw, exc)
            except StopIteration:
                return
        else:
            try:
                awaited = context.run(coro.send, value)
            except StopIteration:
                return


class CallRunner(Generic[T]):
    """Runs calls inside tasks of its own supervisor (see the module docstring).

    What is queued is an item of the owner's (a message, say); ``start(item)``, run by the
    drainer when the item's turn comes, makes the call of it: the coroutine, the context to
    run it in and what it is (for log lines), or None when there is nothing to run. So a
    queued call holds no coroutine, context or arguments yet (a long queue of them would keep
    the garbage collector busy). ``discard(item)`` is called for items that never start."""

    def __init__(self, name: str, start: Callable[[T], Call | None],
                 discard: Callable[[T], None] | None = None) -> None:
        #: names the owner in log lines (e.g. ``provider <participantId>``)
        self.name = name
        self._start = start
        self._discard = discard
        self._queue: deque[T] = deque()
        #: the task that takes the next call, and what it waits on while there is none
        self._drainer: asyncio.Task[None] | None = None
        self._idle: asyncio.Future[None] | None = None
        self._tasks = TaskSupervisor(name)
        self._closed = False
        #: calls that wait, each in a task of its own (see __len__)
        self._running = 0
        #: resolved when no call is queued or running any more (see wait_done)
        self._done: asyncio.Future[None] | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        """Calls not finished: queued ones and those waiting in a task of their own; 0 when
        :meth:`wait_done` would return at once."""
        return len(self._queue) + self._running

    async def wait_done(self) -> None:
        """Wait until every call submitted so far has ended, and those submitted meanwhile
        (returns when none is queued or waiting). Unbounded: the caller bounds it, then
        :meth:`close` ends what is left."""
        while len(self):
            done = self._done
            if done is None or done.done():
                done = self._done = asyncio.get_running_loop().create_future()
            await asyncio.shield(done)  # (one waiter's timeout is not the others')

    def _settled(self) -> None:
        """Wake :meth:`wait_done` when nothing is queued or waiting any more."""
        done = self._done
        if done is not None and not self._queue and not self._running:
            self._done = None
            if not done.done():
                done.set_result(None)

    def submit(self, item: T) -> None:
        """Start ``item``'s call inside a task, soon (in submission order with the other
        calls that do not wait)."""
        if self._closed:
            log.warning("%s: a call dropped: closed", self.name)
            if self._discard is not None:
                self._discard(item)
            return
        self._queue.append(item)
        idle = self._idle
        if idle is not None:
            self._idle = None
            idle.set_result(None)
        elif self._drainer is None:
            self._drainer = self._tasks.spawn(self._drain(), name="calls")

    async def _drain(self) -> None:
        """Run the queued calls; wait for more while there are none (an idle drainer costs
        less to wake than a new task costs to start)."""
        queue, start = self._queue, self._start
        task = asyncio.current_task()
        assert task is not None
        loop = task.get_loop()
        while True:
            while queue:
                item = queue.popleft()
                what = "a call"
                try:
                    call = start(item)
                    if call is None:
                        continue
                    coro, context, what = call
                    awaited = context.run(coro.send, None)
                except StopIteration:
                    if task.cancelling():
                        return self._hand_over()  # the call cancelled this task: let it be
                    continue  # done without waiting: on with the next call
                except asyncio.CancelledError:
                    if task.cancelling():
                        return self._hand_over()
                    continue  # the call ended cancelled (it raised CancelledError itself)
                except Exception:
                    log.exception("%s: %s failed", self.name, what)
                    continue
                # the call waits: this task stays with it to its end; another takes over
                self._running += 1
                self._hand_over()
                try:
                    await _drive(coro, context, awaited)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("%s: %s failed", self.name, what)
                finally:
                    self._running -= 1
                    self._settled()
                return None
            self._settled()
            idle = self._idle = loop.create_future()
            await idle

    def _hand_over(self) -> None:
        """This drainer takes no more calls: a new one takes those queued, if any."""
        self._drainer = None
        if self._queue and not self._closed:
            self._drainer = self._tasks.spawn(self._drain(), name="calls")
        else:
            self._settled()

    async def close(self) -> None:
        """Discard the calls that have not started, cancel the running ones and wait until
        they have ended. Idempotent; calls submitted afterwards are dropped (logged)."""
        self._closed = True
        self._drainer = self._idle = None
        while self._queue:
            item = self._queue.popleft()
            if self._discard is not None:
                self._discard(item)
        await self._tasks.close()
        self._settled()

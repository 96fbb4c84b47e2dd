"""Writes gathered per event-loop turn: the one rule of the project's connection writers.

A writer (a websocket connection's outbox, an MQTT connection) asks its :class:`TurnCoalescer`
about each item it is to write (a message, a packet):

- the first item of a loop turn goes out at once, within the call that made it (no latency
  added), unless something already waits before it (it must not overtake that); an item the
  writer cannot write at once (its transport's buffer is full, say) waits like the others;
- the later items of the turn wait, and a callback scheduled at the first one (loop.call_soon,
  not a task) writes every item waiting when it runs, together: one system call for a burst.

The writer keeps what differs: where waiting items are kept (an outbox: a bounded queue; an
MQTT connection: a list of packets), how one item is written at once, and how the waiting ones
are written together (in batches, stopping while the transport's write buffer is full; or
joined into one write).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sized

__all__ = ["TurnCoalescer"]


class TurnCoalescer:
    """The rule above for one writer. ``waiting``: where the writer keeps the items that wait
    (the same object for the writer's life); ``write_waiting()`` writes them, called at the end
    of a turn that had an item when any waits (the writer may call it itself too, e.g. when its
    write buffer drained).

    ``scheduled`` is True from the first item of a turn until its end: while it is, every item
    waits (a writer may test it before asking :meth:`at_once`, which says no then)."""

    __slots__ = ("_call_soon", "_end", "_waiting", "_write_waiting", "scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop, waiting: Sized,
                 write_waiting: Callable[[], None]) -> None:
        self._call_soon = loop.call_soon
        self._end = self._end_of_turn  # (bound once)
        self._waiting = waiting
        self._write_waiting = write_waiting
        self.scheduled = False

    def at_once(self) -> bool:
        """Asked for each item: True when the writer is to write it now (the turn's first, none
        waiting before it); False when it waits (the writer keeps it, last, with the others).
        The turn's first item schedules the end of the turn."""
        if self.scheduled:
            return False
        self.scheduled = True
        self._call_soon(self._end)
        return not self._waiting

    def waits(self) -> None:
        """The writer kept items waiting without asking (e.g. acknowledgements that go out
        with the answers of the same turn): the end of the turn writes them."""
        if not self.scheduled:
            self.scheduled = True
            self._call_soon(self._end)

    def _end_of_turn(self) -> None:
        self.scheduled = False
        if self._waiting:
            self._write_waiting()

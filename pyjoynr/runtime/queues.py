"""Bounded queues: the one primitive behind every queue of messages in a process.

Pure: no asyncio, no sockets, no logging. The router's queues (one per recipient), a websocket
connection's outbox and an MQTT backend's queue are each a :class:`BoundedQueue`; the router's
queues share one :class:`QueueBudget`, an MQTT backend's queue has one of its own (for the
share of each connection).

A :class:`BoundedQueue` keeps items in order, each with the bytes it holds (about:
runtime.messages.held_bytes) and the connection it came from (its ``origin``; None: made in this
process). It takes an item only as :func:`runtime.rules.queue_admission` allows: fewer than its
``max_messages`` wait in it and their bytes fit in its ``max_bytes`` (while it holds nothing it
takes one item of any size); the queues sharing its budget hold together fewer messages and
bytes than the budget's; and the item's origin holds less than its share of the budget.
:meth:`BoundedQueue.admit` answers with the rule's refusal (or None), :meth:`BoundedQueue.offer`
admits and queues in one call, :meth:`BoundedQueue.push` queues what was admitted.

An item holds its place (in the queue's bytes, the budget and its origin's share) until it is
released. What :meth:`BoundedQueue.drain`, :meth:`BoundedQueue.clear` and
:meth:`BoundedQueue.remove_if` take out is released with it; what :meth:`BoundedQueue.popleft`
takes out keeps its hold until :meth:`BoundedQueue.release`: an MQTT backend's message in
flight holds its bytes until the broker acknowledged it (:meth:`BoundedQueue.putback` queues
such items again, first), and so does one that never waited (``offer(at_once=True)``: published
at once).

The decision is the rule's: on every item the queue compares the numbers it keeps with limits
it computed once (no objects made on the way of an admitted item), and asks
:func:`runtime.rules.queue_admission` whenever those comparisons do not all pass, so that every
refusal (its reason and detail) is the rule's; a test holds the comparisons equal to the rule
for any state.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator
from itertools import islice
from typing import ClassVar, Generic, TypeVar

from pyjoynr.runtime import rules
from pyjoynr.runtime.addresses import Address

__all__ = ["BoundedQueue", "QueueBudget"]

T = TypeVar("T")

#: where an item came from: the address of a connection (None: made in this process)
Origin = Address

_UNBOUNDED = sys.maxsize


def _no_origin(item: object) -> None:
    return None


class QueueBudget:
    """What several bounded queues share: all their messages and bytes together (``messages``,
    ``bytes``) within ``max_messages`` and ``max_bytes`` (None: no total of their own), and what
    the messages from each origin hold of them (``by_origin``: origin -> [messages, bytes]),
    each origin within ``share`` (None: no share of its own; see
    :func:`runtime.rules.origin_share_of`).

    Holdings are kept per origin whether or not a share limits them (they are read for the
    status page and metrics); an origin holding nothing has no entry."""

    __slots__ = ("_max_bytes", "_max_messages", "_share_bytes", "_share_messages", "by_origin",
                 "bytes", "max_bytes", "max_messages", "messages", "share")

    def __init__(self, max_messages: int | None = None, max_bytes: int | None = None, *,
                 share: rules.Queued | None = None) -> None:
        if (max_messages is not None and max_messages < 0) or (
                max_bytes is not None and max_bytes < 0):
            raise ValueError("queue limits must be >= 0")
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.share = share
        # the same, as numbers compared on every item
        self._max_messages = _UNBOUNDED if max_messages is None else max_messages
        self._max_bytes = _UNBOUNDED if max_bytes is None else max_bytes
        self._share_messages = _UNBOUNDED if share is None else share.messages
        self._share_bytes = _UNBOUNDED if share is None else share.bytes
        self.messages = 0
        self.bytes = 0
        self.by_origin: dict[Origin, list[int]] = {}

    def held_by(self, origin: Origin) -> rules.Queued:
        """What the messages from ``origin`` hold."""
        held = self.by_origin.get(origin)
        return rules.Queued() if held is None else rules.Queued(held[0], held[1])

    def take(self, size: int, origin: Origin | None) -> None:
        """One more item of ``size`` bytes from ``origin`` is held."""
        self.messages += 1
        self.bytes += size
        if origin is not None:
            held = self.by_origin.get(origin)
            if held is None:
                self.by_origin[origin] = [1, size]
            else:
                held[0] += 1
                held[1] += size


class BoundedQueue(Generic[T]):
    """Items waiting in order, bounded as the module docstring says.

    ``size_of`` and ``origin_of`` tell the bytes an item holds and where it came from; they
    are asked when items leave in bulk (:meth:`drain`, :meth:`clear`, :meth:`remove_if`).
    Where an item is named with its size and origin (:meth:`offer`, :meth:`push`,
    :meth:`release`, ...), those must be what they tell of it.

    Readable: :attr:`items` (the items waiting, in order, the same deque for the queue's
    life: read it, change it only through the methods here), ``len(queue)``, iteration and
    ``queue[i]`` likewise; :attr:`taken` (items taken out and still held), :attr:`holds` and
    :attr:`bytes` (what its items hold, those waiting and those taken)."""

    __slots__ = ("budget", "bytes", "items", "max_bytes", "max_messages", "origin_of",
                 "size_of", "taken")

    #: what a refusal's detail calls this queue
    name: ClassVar[str] = "the queue"

    def __init__(self, max_messages: int, max_bytes: int, budget: QueueBudget | None = None,
                 *, size_of: Callable[[T], int],
                 origin_of: Callable[[T], Origin | None] = _no_origin) -> None:
        if max_messages < 0 or max_bytes < 0:
            raise ValueError("queue limits must be >= 0")
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.budget = budget
        self.size_of = size_of
        self.origin_of = origin_of
        self.items: deque[T] = deque()
        #: items taken out (popleft, offer at_once) and not released yet
        self.taken = 0
        #: the bytes its items hold, those waiting and those taken
        self.bytes = 0

    # ------------------------------------------------------------------ reading

    @property
    def holds(self) -> int:
        """The items it holds: those waiting and those taken."""
        return len(self.items) + self.taken

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __getitem__(self, index: int) -> T:
        return self.items[index]

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {len(self.items)} waiting, {self.taken} taken, "
                f"{self.bytes} bytes>")

    # ------------------------------------------------------------------ admission

    def admit(self, size: int, origin: Origin | None = None, why: str = "") -> (
            rules.Refusal | None):
        """May an item of ``size`` bytes from ``origin`` wait here (``why``: for the refusal's
        detail)? None: yes; else the rule's refusal."""
        items = self.items
        if len(items) >= self.max_messages or (
                self.bytes + size > self.max_bytes and (items or self.taken)):
            return self.refusal(size, origin, why)
        budget = self.budget
        if budget is not None:
            if budget.messages >= budget._max_messages or (
                    budget.bytes + size > budget._max_bytes):
                return self.refusal(size, origin, why)
            if origin is not None:
                held = budget.by_origin.get(origin)
                if held is not None and (held[0] >= budget._share_messages
                                         or held[1] + size > budget._share_bytes):
                    return self.refusal(size, origin, why)
        return None

    def refusal(self, size: int, origin: Origin | None = None, why: str = "") -> (
            rules.Refusal | None):
        """The rule's answer for an item of ``size`` bytes from ``origin`` (what :meth:`admit`
        asks when its comparisons do not all pass)."""
        waiting = len(self.items)
        queue = rules.Queued(waiting, self.bytes)
        limits = rules.Queued(self.max_messages, self.max_bytes)
        holds = waiting + self.taken if self.taken else None
        budget = self.budget
        if budget is None:
            return rules.queue_admission(size, queue, limits, why=why, holds=holds,
                                         name=self.name)
        bounded = budget.max_messages is not None or budget.max_bytes is not None
        return rules.queue_admission(
            size, queue, limits, why=why, holds=holds,
            total=rules.Queued(budget.messages, budget.bytes),
            total_limits=rules.Queued(budget._max_messages, budget._max_bytes) if bounded
            else None,
            origin=None if origin is None else budget.held_by(origin), share=budget.share,
            name=self.name)

    def offer(self, item: T, size: int, origin: Origin | None = None, why: str = "", *,
              at_once: bool = False) -> rules.Refusal | None:
        """Queue ``item`` (``size`` bytes, from ``origin``), last, if :meth:`admit` lets it
        in; the refusal if not. ``at_once``: it goes on at once instead of waiting (published
        now, say): admitted and held as if it was queued and taken out (:meth:`popleft`) at
        once, until :meth:`release`."""
        # (admit() and push() in one, without a call on the way of an admitted item)
        items = self.items
        if len(items) >= self.max_messages or (
                self.bytes + size > self.max_bytes and (items or self.taken)):
            return self._ask_rule(item, size, origin, why, at_once)
        budget = self.budget
        if budget is not None:
            if budget.messages >= budget._max_messages or (
                    budget.bytes + size > budget._max_bytes):
                return self._ask_rule(item, size, origin, why, at_once)
            if origin is not None:
                by_origin = budget.by_origin
                held = by_origin.get(origin)
                if held is None:
                    by_origin[origin] = [1, size]
                elif held[0] >= budget._share_messages or (
                        held[1] + size > budget._share_bytes):
                    return self._ask_rule(item, size, origin, why, at_once)
                else:
                    held[0] += 1
                    held[1] += size
            budget.messages += 1
            budget.bytes += size
        if at_once:
            self.taken += 1
        else:
            items.append(item)
        self.bytes += size
        return None

    def _ask_rule(self, item: T, size: int, origin: Origin | None, why: str, at_once: bool
                  ) -> rules.Refusal | None:
        """:meth:`offer` when the queue's comparisons do not all pass: the rule decides."""
        refusal = self.refusal(size, origin, why)
        if refusal is None:  # (the rule has the last word)
            self.push(item, size, origin)
            if at_once:
                self.items.pop()
                self.taken += 1
        return refusal

    # ------------------------------------------------------------------ in and out

    def push(self, item: T, size: int, origin: Origin | None = None) -> None:
        """Queue ``item``, admitted before (:meth:`admit`), last."""
        self.items.append(item)
        self.bytes += size
        budget = self.budget
        if budget is not None:
            budget.take(size, origin)

    def popleft(self) -> T:
        """The first item, out of the queue; it keeps its hold until :meth:`release` (IndexError
        when none waits)."""
        item = self.items.popleft()
        self.taken += 1
        return item

    def release(self, size: int, origin: Origin | None = None) -> None:
        """An item taken out (:meth:`popleft`, ``offer(at_once=True)``) is gone for good: its
        hold ends."""
        self.taken -= 1
        self.bytes -= size
        budget = self.budget
        if budget is not None:
            budget.messages -= 1
            budget.bytes -= size
            if origin is not None:
                by_origin = budget.by_origin
                held = by_origin[origin]
                held[0] -= 1
                held[1] -= size
                if not held[0]:
                    del by_origin[origin]

    def putback(self, items: Iterable[T]) -> None:
        """Items taken out and still held go back to the front, in their order."""
        back = list(items)
        self.items.extendleft(reversed(back))
        self.taken -= len(back)

    def drain(self) -> list[T]:
        """Every waiting item, in order, out of the queue and released."""
        gone = list(self.items)
        self.clear()
        return gone

    def clear(self) -> None:
        """Every waiting item out of the queue and released."""
        items = self.items
        if self.budget is None and not self.taken:
            self.bytes = 0  # nothing else is held: all at once
        else:
            self._release_all(items)
        items.clear()

    def remove_if(self, leaves: Callable[[T], bool]) -> list[T]:
        """The waiting items for which ``leaves`` is true, out of the queue (the others keep
        their order) and released."""
        items = self.items
        gone: list[T] = []
        kept: list[T] | None = None  # (made at the first that leaves)
        for i, item in enumerate(items):
            if leaves(item):
                if kept is None:
                    kept = list(islice(items, i))
                gone.append(item)
            elif kept is not None:
                kept.append(item)
        if kept is not None:
            items.clear()
            items.extend(kept)
            self._release_all(gone)
        return gone

    def _release_all(self, items: Collection[T]) -> None:
        """``items``, out of the queue, are gone for good."""
        size_of = self.size_of
        budget = self.budget
        if budget is None:
            self.bytes -= sum(map(size_of, items))
            return
        origin_of, by_origin = self.origin_of, budget.by_origin
        total = 0
        for item in items:
            size = size_of(item)
            total += size
            origin = origin_of(item)
            if origin is not None:
                held = by_origin[origin]
                held[0] -= 1
                held[1] -= size
                if not held[0]:
                    del by_origin[origin]
        self.bytes -= total
        budget.messages -= len(items)
        budget.bytes -= total

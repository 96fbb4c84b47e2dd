"""The bounded-queue primitive (runtime.queues): its limits in messages and bytes, the one item
of any size an empty queue takes, the totals several queues share, each origin's share, holds
kept while an item is taken out and given back on release; and, for random sequences of those
operations on queues sharing a budget, that its accounting equals what is held, is never
negative, and that every admission is runtime.rules.queue_admission's decision."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pyjoynr.runtime import rules
from pyjoynr.runtime.addresses import Address, WebSocketClientAddress
from pyjoynr.runtime.queues import BoundedQueue, QueueBudget

A, B = WebSocketClientAddress("a"), WebSocketClientAddress("b")


@dataclass(frozen=True)
class Item:
    n: int
    size: int
    origin: Address | None = None


def size_of(item: Item) -> int:
    return item.size


def origin_of(item: Item) -> Address | None:
    return item.origin


def queue(max_messages: int = 3, max_bytes: int = 100, budget: QueueBudget | None = None
          ) -> BoundedQueue[Item]:
    return BoundedQueue(max_messages, max_bytes, budget, size_of=size_of, origin_of=origin_of)


def offer(q: BoundedQueue[Item], n: int, size: int, origin: Address | None = None, **kw: bool
          ) -> str | None:
    refusal = q.offer(Item(n, size, origin), size, origin, "test", **kw)
    return None if refusal is None else refusal.reason


def test_a_queue_is_bounded_in_messages_and_in_bytes() -> None:
    q = queue(max_messages=3, max_bytes=100)
    assert [offer(q, i, 10) for i in range(4)] == [None, None, None, rules.QUEUE_FULL]
    q = queue(max_messages=3, max_bytes=100)
    assert [offer(q, 0, 60), offer(q, 1, 40), offer(q, 2, 1)] == [None, None, rules.QUEUE_FULL]
    assert (len(q), q.bytes) == (2, 100)
    refusal = q.admit(1, why="no route yet")
    assert refusal is not None and refusal.detail == (
        "queue full (no route yet): the queue holds 2 message(s), 100 bytes")


def test_an_empty_queue_takes_one_item_of_any_size_and_only_one() -> None:
    q = queue(max_bytes=100)
    assert offer(q, 0, 10_000) is None
    assert offer(q, 1, 1) == rules.QUEUE_FULL
    q.drain()
    assert offer(q, 2, 1) is None and q.bytes == 1
    assert queue(max_messages=0).admit(1) is not None  # a queue of none takes none


def test_queues_sharing_a_budget_count_together_and_take_only_what_fits() -> None:
    budget = QueueBudget(4, 150)
    one, two = queue(budget=budget), queue(budget=budget)
    assert [offer(one, 0, 50), offer(two, 1, 50), offer(two, 2, 50)] == [None, None, None]
    assert offer(one, 3, 1) == rules.QUEUE_FULL  # 150 bytes held by all: nothing more fits
    refusal = one.admit(1, why="w")
    assert refusal is not None and "all queues hold 3 message(s), 150 bytes" in refusal.detail
    assert (budget.messages, budget.bytes) == (3, 150)
    assert offer(queue(budget=QueueBudget(4, 150)), 4, 151) == rules.QUEUE_FULL  # even alone
    two.drain()
    assert (budget.messages, budget.bytes) == (1, 50)
    assert [offer(one, 5, 1), offer(two, 6, 1), offer(two, 7, 1)] == [None, None, None]
    assert offer(one, 8, 1) == rules.QUEUE_FULL  # 4 messages in all


def test_each_origin_holds_at_most_its_share_and_holding_nothing_takes_one_of_any_size() -> None:
    budget = QueueBudget(10, 1000, share=rules.origin_share_of(10, 1000, 0.5))
    one, two = queue(5, 1000, budget), queue(5, 1000, budget)
    assert offer(one, 0, 600, A) is None  # more than its share of bytes, but alone
    assert offer(two, 1, 1, A) == rules.QUEUE_SHARE_USED
    assert offer(two, 2, 1, B) is None and offer(two, 3, 1) is None  # others still get in
    assert budget.by_origin == {A: [1, 600], B: [1, 1]}
    refusal = two.admit(1, A, "w")
    assert refusal is not None and refusal.detail == (
        "queue full for its connection (w): its messages hold 1 message(s), 600 bytes of all "
        "queues, its share is 5 message(s), 500 bytes")
    one.drain()
    assert A not in budget.by_origin  # an origin holding nothing has no entry
    assert [offer(one, i, 1, A) for i in range(6)] == [None] * 5 + [rules.QUEUE_FULL]
    assert offer(two, 9, 1, A) == rules.QUEUE_SHARE_USED  # 5 messages: its share


def test_an_item_taken_out_keeps_its_hold_until_released() -> None:
    budget = QueueBudget(share=rules.origin_share_of(4, 200, 0.5))
    q = queue(4, 100, budget)
    assert offer(q, 0, 40, A) is None and offer(q, 1, 30, A) is None
    first = q.popleft()
    assert (len(q), q.taken, q.holds, q.bytes) == (1, 1, 2, 70)  # still held
    assert budget.by_origin == {A: [2, 70]}
    assert offer(q, 2, 1, A) == rules.QUEUE_SHARE_USED  # (2 messages: its share)
    q.release(first.size, first.origin)
    assert (q.taken, q.bytes, budget.by_origin) == (0, 30, {A: [1, 30]})
    second = q.popleft()
    # nothing waits, but what is taken still holds bytes: the queue is not empty
    assert offer(q, 3, 71) == rules.QUEUE_FULL
    q.putback([second])  # (a publish not acknowledged goes out again, first)
    assert (list(q), q.taken, q.bytes) == ([second], 0, 30)


def test_an_item_that_goes_on_at_once_is_admitted_and_held_as_if_taken_out() -> None:
    q = queue(1, 100, QueueBudget())
    assert offer(q, 0, 500, A, at_once=True) is None
    assert (len(q), q.taken, q.bytes) == (0, 1, 500)
    assert offer(q, 1, 1) == rules.QUEUE_FULL  # over its bytes: it holds the first
    q.release(500, A)
    assert (q.taken, q.bytes, q.budget and q.budget.by_origin) == (0, 0, {})


def test_what_leaves_in_bulk_is_released() -> None:
    budget = QueueBudget(100, 10_000)
    q = queue(10, 1000, budget)
    for i in range(6):
        offer(q, i, 10 + i, A if i % 2 else B)
    gone = q.remove_if(lambda item: item.n % 3 == 0)
    assert [item.n for item in gone] == [0, 3] and [item.n for item in q] == [1, 2, 4, 5]
    assert (q.bytes, budget.bytes, budget.by_origin) == (
        11 + 12 + 14 + 15, 52, {A: [2, 26], B: [2, 26]})
    assert q.remove_if(lambda item: False) == [] and len(q) == 4
    assert [item.n for item in q.drain()] == [1, 2, 4, 5]
    assert (q.bytes, budget.messages, budget.bytes, budget.by_origin) == (0, 0, 0, {})


def test_limits_must_not_be_negative() -> None:
    with pytest.raises(ValueError):
        queue(max_messages=-1)
    with pytest.raises(ValueError):
        QueueBudget(max_bytes=-1)


# ---------------------------------------------------------------------- random sequences


class AskingQueue(BoundedQueue[Item]):
    """Remembers every answer of the rule it had to ask for."""

    __slots__ = ("answers",)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.answers: list[rules.Refusal | None] = []

    def refusal(self, size: int, origin: Address | None = None, why: str = ""
                ) -> rules.Refusal | None:
        answer = super().refusal(size, origin, why)
        self.answers.append(answer)
        return answer


ORIGINS = st.sampled_from([None, A, B])
QUEUES = st.integers(0, 2)


class SharedQueues(RuleBasedStateMachine):
    """Three small queues sharing a budget with totals and a share per origin, beside a model
    of what each one holds; every admission is checked against the rule, asked with the
    model's numbers."""

    LIMITS = rules.Queued(4, 100)
    TOTAL = rules.Queued(8, 220)
    SHARE = rules.origin_share_of(8, 220, 0.5)

    def __init__(self) -> None:
        super().__init__()
        self.budget = QueueBudget(self.TOTAL.messages, self.TOTAL.bytes, share=self.SHARE)
        self.queues = [AskingQueue(self.LIMITS.messages, self.LIMITS.bytes, self.budget,
                                   size_of=size_of, origin_of=origin_of) for _ in range(3)]
        self.waiting: list[list[Item]] = [[], [], []]
        self.taken: list[list[Item]] = [[], [], []]
        self.n = 0

    def held(self) -> list[Item]:
        return [item for items in (*self.waiting, *self.taken) for item in items]

    def expected(self, i: int, size: int, origin: Address | None) -> rules.Refusal | None:
        waiting, taken = self.waiting[i], self.taken[i]
        held = self.held()
        mine = [item for item in held if origin is not None and item.origin == origin]
        return rules.queue_admission(
            size, rules.Queued(len(waiting), sum(x.size for x in waiting + taken)),
            self.LIMITS, why="w", holds=len(waiting) + len(taken) if taken else None,
            total=rules.Queued(len(held), sum(x.size for x in held)), total_limits=self.TOTAL,
            origin=None if origin is None else rules.Queued(len(mine),
                                                             sum(x.size for x in mine)),
            share=self.SHARE, name="the queue")

    @rule(i=QUEUES, size=st.integers(0, 130), origin=ORIGINS, at_once=st.booleans())
    def offer(self, i: int, size: int, origin: Address | None, at_once: bool) -> None:
        self.n += 1
        item = Item(self.n, size, origin)
        expected = self.expected(i, size, origin)
        assert self.queues[i].offer(item, size, origin, "w", at_once=at_once) == expected
        if expected is None:
            (self.taken if at_once else self.waiting)[i].append(item)

    @rule(i=QUEUES, size=st.integers(0, 130), origin=ORIGINS)
    def admit(self, i: int, size: int, origin: Address | None) -> None:
        assert self.queues[i].admit(size, origin, "w") == self.expected(i, size, origin)

    @precondition(lambda self: any(self.waiting))
    @rule(data=st.data())
    def popleft(self, data: st.DataObject) -> None:
        i = data.draw(st.sampled_from([i for i in range(3) if self.waiting[i]]))
        item = self.queues[i].popleft()
        assert item == self.waiting[i].pop(0)
        self.taken[i].append(item)

    @precondition(lambda self: any(self.taken))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        i = data.draw(st.sampled_from([i for i in range(3) if self.taken[i]]))
        item = self.taken[i].pop(data.draw(st.integers(0, len(self.taken[i]) - 1)))
        self.queues[i].release(item.size, item.origin)

    @rule(i=QUEUES)
    def putback(self, i: int) -> None:
        self.queues[i].putback(self.taken[i])
        self.waiting[i][:0] = self.taken[i]
        self.taken[i] = []

    @rule(i=QUEUES, modulus=st.integers(1, 3))
    def remove_if(self, i: int, modulus: int) -> None:
        gone = self.queues[i].remove_if(lambda item: item.n % modulus == 0)
        assert gone == [item for item in self.waiting[i] if item.n % modulus == 0]
        self.waiting[i] = [item for item in self.waiting[i] if item.n % modulus != 0]

    @rule(i=QUEUES)
    def drain(self, i: int) -> None:
        assert self.queues[i].drain() == self.waiting[i]
        self.waiting[i] = []

    @invariant()
    def accounting_is_what_is_held(self) -> None:
        held = self.held()
        assert (self.budget.messages, self.budget.bytes) == (len(held),
                                                             sum(x.size for x in held))
        by_origin: dict[Address, list[int]] = {}
        for item in held:
            if item.origin is not None:
                counts = by_origin.setdefault(item.origin, [0, 0])
                counts[0] += 1
                counts[1] += item.size
        assert self.budget.by_origin == by_origin
        for q, waiting, taken in zip(self.queues, self.waiting, self.taken, strict=True):
            assert list(q) == waiting and q.taken == len(taken)
            assert q.bytes == sum(x.size for x in waiting + taken) >= 0
            assert q.holds == len(waiting) + len(taken)
        assert all(n > 0 and b >= 0 for n, b in self.budget.by_origin.values())

    @invariant()
    def the_rule_is_asked_only_to_refuse(self) -> None:
        """The queue's own comparisons admit everything the rule admits: it asks the rule
        only for items the rule then refuses."""
        for q in self.queues:
            assert all(answer is not None for answer in q.answers)


TestSharedQueues = SharedQueues.TestCase

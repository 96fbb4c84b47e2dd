"""A subscription as an async iterator: :class:`Updates`.

``proxy.attr.updates(qos)`` and ``proxy.bc.updates(partitions, qos=..., filter_parameters=...)``
(programming/proxies.py) return one::

    async for station in proxy.current_station.updates(OnChangeSubscriptionQos()):
        ...                                   # each published value, in order
        if station == "FM4":
            break                             # ends the subscription

    async with proxy.new_station.updates(["AT"]) as updates:
        async for station in updates:         # ends at the end of the block, at the latest
            ...

- It subscribes when it is first iterated (``__anext__``) or entered (``async with``), and
  raises there what ``subscribe`` raises (then it is over).
- It yields an attribute's values; a broadcast's value itself when the broadcast has one output,
  the tuple of its values otherwise (``()`` for none).
- The errors of the subscription are raised from ``__anext__``: PublicationMissedError when
  publications are missed (QoS ``alert_after_interval_ms``), the provider's error when a
  publication carries one. The subscription stays live: iterating again goes on; but a
  SubscriptionError of the provider (it ended the subscription, say it was unregistered) is
  raised and then iteration stops.
- It stops (StopAsyncIteration) at the subscription's expiry date and when the subscription is
  ended otherwise (``updates.subscription.unsubscribe()``, the proxy closed, its runtime
  stopped), after the values already received.
- It ends the subscription when the iteration is left:

  - ``break`` or an exception out of an ``async for`` over ``proxy.attr.updates(...)`` itself:
    the Updates is dropped, and the async generator inside it is closed by asyncio's hooks for
    async generators, in a task of asyncio's: soon, not at once (an Updates kept in a variable
    lives on until it is dropped or closed);
  - the end of an ``async with`` block, and ``await updates.aclose()``: at once (also while
    another task waits in ``__anext__``, which then stops);
  - a cancelled ``__anext__`` (the consuming task cancelled, or a timeout around one
    ``__anext__``): as for any async generator, a cancellation ends it, at once. To wait with a
    deadline and go on, put ``asyncio.timeout`` around the whole loop, or use ``subscribe``
    with a callback.
- Values arrive as the proxy receives them and wait for the consumer in a buffer of at most
  ``max_buffered`` (default 100) values and errors: when it is full the oldest is dropped
  (the newest are kept) and counted in :attr:`Updates.dropped`.

No task of its own: the values are put into the buffer by the proxy's (synchronous) callbacks,
and the consumer's task waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from types import AsyncGeneratorType, TracebackType
from typing import Any, Final, cast

from pyjoynr.programming.subscribers import Subscription
from pyjoynr.runtime.errors import JoynrError
from pyjoynr.runtime.logs import get_logger

__all__ = ["Updates"]

#: subscribes with a callback for values and one for errors; returns the live subscription
Subscribe = Callable[[Callable[..., Any], Callable[[JoynrError], Any]], Awaitable[Subscription]]

log = get_logger(__name__)

_READY: Final = object()  # what the generator yields once it has subscribed
_END: Final = object()  # what the buffer gives when nothing more will come


class _Raised:
    """An error to raise from ``__anext__``, in the buffer among the values."""

    __slots__ = ("error",)

    def __init__(self, error: JoynrError) -> None:
        self.error = error


class _Buffer:
    """What the subscription's callbacks fill and the generator takes from. Holds no reference
    to the generator or to the Updates (the subscription, kept by the proxy, holds this): so an
    abandoned Updates is freed, and its generator closed."""

    __slots__ = ("closed", "dropped", "ended", "items", "single", "subscription", "waiter")

    def __init__(self, single: bool, max_buffered: int) -> None:
        self.single = single
        self.items: deque[Any] = deque(maxlen=max_buffered)
        self.dropped = 0
        #: nothing more will come (the subscription has ended)
        self.ended = False
        #: the consumer is done (aclose): what is buffered is not given out any more
        self.closed = False
        self.subscription: Subscription | None = None
        self.waiter: asyncio.Future[None] | None = None

    def push(self, *values: Any) -> None:
        """The subscription's callback."""
        self._add(values[0] if self.single else values)

    def fail(self, error: JoynrError) -> None:
        """The subscription's on_error."""
        self._add(_Raised(error))

    def _add(self, item: Any) -> None:
        items = self.items
        if len(items) == items.maxlen:
            self.dropped += 1
        items.append(item)
        self._wake()

    def end(self) -> None:
        """The subscription's on_end."""
        self.ended = True
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def attach(self, subscription: Subscription) -> None:
        self.subscription = subscription
        subscription.on_end = self.end
        if not subscription.active:
            self.end()

    async def take(self) -> Any:
        """The next value or error; _END when nothing more will come."""
        while True:
            if self.closed:
                return _END
            if self.items:
                return self.items.popleft()
            if self.ended:
                return _END
            waiter = self.waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self.waiter = None

    async def close(self) -> None:
        """Nothing more is wanted: end the subscription (if it is live). Idempotent. The
        subscription is gone here at once; when its provider or the routers cannot be told
        (the connection is down, say), that is logged, not raised."""
        self.closed = True
        self.end()
        subscription = self.subscription
        if subscription is not None and subscription.active:
            try:
                await subscription.unsubscribe()
            except JoynrError as exc:
                log.warning("the end of the subscription %s to %s was not told: %s",
                            subscription.subscription_id, subscription.name, exc)


async def _run(buffer: _Buffer, subscribe: Subscribe) -> AsyncGenerator[Any, None]:
    """Subscribe, then yield what the buffer gives; the subscription ends with it."""
    try:
        if buffer.subscription is None and not buffer.closed:
            buffer.attach(await subscribe(buffer.push, buffer.fail))
        yield _READY
        while True:
            item = await buffer.take()
            if item is _END:
                return
            yield item
    finally:
        await buffer.close()


class Updates:
    """A subscription's publications as an async iterator and async context manager (see the
    module docstring). Made by the proxy's ``updates(...)``; ``subscribe`` subscribes with a
    value callback and an error callback."""

    def __init__(self, subscribe: Subscribe, *, single: bool = True,
                 max_buffered: int = 100) -> None:
        if type(max_buffered) is not int or max_buffered < 1:
            raise ValueError(f"max_buffered must be an int >= 1, got {max_buffered!r}")
        self._buffer = _Buffer(single, max_buffered)
        self._generator = cast(AsyncGeneratorType[Any, None], _run(self._buffer, subscribe))
        self._started = False

    def __repr__(self) -> str:
        return (f"Updates({self._buffer.subscription!r}, buffered={len(self._buffer.items)}, "
                f"dropped={self.dropped})")

    @property
    def subscription(self) -> Subscription | None:
        """The subscription, once subscribed (None before)."""
        return self._buffer.subscription

    @property
    def dropped(self) -> int:
        """How many values (and errors) were dropped because the buffer was full."""
        return self._buffer.dropped

    @property
    def max_buffered(self) -> int:
        maxlen = self._buffer.items.maxlen
        assert maxlen is not None
        return maxlen

    def __aiter__(self) -> Updates:
        return self

    async def __anext__(self) -> Any:
        self._started = True
        while True:
            item = await self._generator.__anext__()
            if item is _READY:
                continue
            if type(item) is _Raised:
                raise item.error
            return item

    async def __aenter__(self) -> Updates:
        """Subscribe now (if not yet)."""
        if not self._started:
            self._started = True
            # _READY, or what subscribe raised; nothing after aclose (iteration then stops)
            with contextlib.suppress(StopAsyncIteration):
                await self._generator.__anext__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the subscription and the iteration (a waiting ``__anext__`` stops).
        Idempotent."""
        await self._buffer.close()
        if not self._generator.ag_running:
            await self._generator.aclose()

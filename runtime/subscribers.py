"""The proxy side of subscriptions: what a proxy's ``subscribe`` returns.

:class:`Subscription` is one live subscription of a proxy (an attribute's, or a broadcast's);
``await unsubscribe()`` ends it. The proxy (runtime/proxies.py) makes it and delivers its
publications; the provider side is runtime/subscriptions.py.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from runtime.errors import JoynrError

__all__ = ["Subscription"]


class Subscription:
    """A live subscription of a proxy (attribute on-change or broadcast); ``await
    unsubscribe()`` ends it. Made by the proxy, which passes how to end it."""

    def __init__(self, subscription_id: str, name: str, callback: Callable[..., Any],
                 types: tuple[Any, ...], end: Callable[[Subscription], Awaitable[None]], *,
                 multicast_pattern: str | None = None,
                 on_error: Callable[[JoynrError], Any] | None = None) -> None:
        self.subscription_id = subscription_id
        #: the attribute's or broadcast's name
        self.name = name
        #: called with the typed values of each publication (may be async)
        self.callback = callback
        #: the declared types of those values
        self.types = types
        #: a broadcast's multicast id pattern (partitions); None for an attribute
        self.multicast_pattern = multicast_pattern
        #: called with the provider's error when a publication carries one
        self.on_error = on_error
        #: False once ended: no more callbacks
        self.active = True
        self._end = end

    def __repr__(self) -> str:
        return (f"Subscription({self.subscription_id!r}, {self.name!r}, "
                f"active={self.active})")

    async def unsubscribe(self) -> None:
        """End it: no more callbacks, the provider (and the routers) are told. Idempotent."""
        if self.active:
            self.active = False
            await self._end(self)

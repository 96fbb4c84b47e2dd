"""The proxy side of subscriptions: what a proxy's ``subscribe`` returns.

:class:`Subscription` is one live subscription of a proxy: to an attribute, to a selective
broadcast (unicast publications the provider's filters let through) or to a non-selective
broadcast (a multicast). The proxy (programming/proxies.py) makes it, confirms it and delivers its
publications; the provider side is programming/subscriptions.py.

Besides delivering, a subscription keeps two loop timers (``call_later``; no task):

- missed publications: when its QoS has ``alert_after_ms`` > 0 (a keep-alive or periodic one)
  and it has an ``on_error``, that gets a :class:`~runtime.errors.PublicationMissedError` when
  no publication (a value or an error) came for that long since the subscription was confirmed
  or the last publication, and again every interval while none comes. A publication only
  notes its time (:meth:`Subscription.touch`); the timer looks at it when it fires, so a
  publication costs no timer of its own.
- expiry: at ``qos.expiry_date_ms`` (not 0) the subscription ends on the proxy's side,
  silently (no more callbacks, no subscription stop: its provider ends it at the same date; a
  multicast receiver is removed).

Both are cancelled when the subscription ends, by whatever means (unsubscribe, expiry, an error
publication carrying a ``SubscriptionError``, a refused update, the proxy closing or its
runtime stopping); then :attr:`Subscription.on_end` is called, once.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pyjoynr.programming.subscription_qos import MulticastSubscriptionQos, SubscriptionQos
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import JoynrError, SubscriptionError

__all__ = ["Subscription", "SubscriptionOwner"]

#: a timer that fires this much (s) before the publication it waits for was due counts as due
#: (loop timers may fire up to the clock's resolution early)
_EARLY_S = 0.001


class SubscriptionOwner(Protocol):
    """What a subscription needs of the proxy that made it."""

    async def end_subscription(self, subscription: Subscription) -> None:
        """It was unsubscribed (already inactive): forget it, tell its provider."""
        ...

    async def update_subscription(self, subscription: Subscription,
                                  qos: SubscriptionQos | None,
                                  filter_parameters: Mapping[str, str] | None) -> None:
        """Ask its provider for new terms (see :meth:`Subscription.update`)."""
        ...

    def subscription_lapsed(self, subscription: Subscription) -> None:
        """Its expiry date has come: end it on this side, silently."""
        ...

    def publication_missed(self, subscription: Subscription) -> None:
        """No publication for ``qos.alert_after_ms``: tell its ``on_error``."""
        ...


class Subscription:
    """A live subscription of a proxy; ``await unsubscribe()`` ends it, ``await
    update(qos)`` changes its terms. Made by the proxy (its :class:`SubscriptionOwner`)."""

    def __init__(self, subscription_id: str, name: str, callback: Callable[..., Any],
                 types: tuple[Any, ...], owner: SubscriptionOwner, *,
                 qos: SubscriptionQos | None = None,
                 multicast_pattern: str | None = None,
                 filter_parameters: Mapping[str, str] | None = None,
                 on_error: Callable[[JoynrError], Any] | None = None) -> None:
        self.subscription_id = subscription_id
        #: the attribute's or broadcast's name
        self.name = name
        #: called with the typed values of each publication (may be async)
        self.callback = callback
        #: the declared types of those values
        self.types = types
        #: its terms (a multicast's: a MulticastSubscriptionQos, its expiry date only)
        self.qos: SubscriptionQos = qos if qos is not None else MulticastSubscriptionQos()
        #: a non-selective broadcast's multicast id pattern (partitions); None for an attribute
        #: or a selective broadcast
        self.multicast_pattern = multicast_pattern
        #: a selective broadcast's filter parameters; None for any other subscription
        self.filter_parameters: dict[str, str] | None = (
            None if filter_parameters is None else dict(filter_parameters))
        #: called with the provider's error when a publication carries one, and with a
        #: PublicationMissedError when publications are missed (see the module docstring)
        self.on_error = on_error
        # whether ``callback`` is a coroutine function, found once per callback (asked per
        # publication; inspect's answer costs more than a delivery's other steps)
        self._checked_callback: Callable[..., Any] | None = None
        self._callback_async = False
        #: called once, with no arguments, when the subscription has ended (by any means)
        self.on_end: Callable[[], Any] | None = None
        #: False once ended: no more callbacks
        self.active = True
        self._owner = owner
        self._loop: asyncio.AbstractEventLoop | None = None
        self._alert: asyncio.TimerHandle | None = None
        self._expiry: asyncio.TimerHandle | None = None
        #: loop time of the last publication (or of the confirmation, or of the last alert)
        self._mark = 0.0
        self._updating: asyncio.Lock | None = None

    def callback_is_async(self) -> bool:
        """Whether :attr:`callback` is a coroutine function (``async def``)."""
        callback = self.callback
        if callback is not self._checked_callback:
            self._checked_callback = callback
            self._callback_async = inspect.iscoroutinefunction(callback)
        return self._callback_async

    def __repr__(self) -> str:
        return (f"Subscription({self.subscription_id!r}, {self.name!r}, "
                f"active={self.active})")

    @property
    def selective(self) -> bool:
        """A selective broadcast's subscription (filter parameters, unicast publications)."""
        return self.filter_parameters is not None

    async def unsubscribe(self) -> None:
        """End it: no more callbacks, the provider (and the routers) are told. Idempotent."""
        if self.active:
            self.finish()
            await self._owner.end_subscription(self)

    async def update(self, qos: SubscriptionQos | None = None, *,
                     filter_parameters: Mapping[str, str] | None = None) -> None:
        """New terms, under the same subscription id: ``qos`` (None: the current one) and, for
        a selective broadcast, ``filter_parameters`` (None: the current ones).

        An attribute's or a selective broadcast's subscription sends a new subscription
        request and waits for its reply (then the timers start again, from now); the provider
        publishes under the new terms from then on (an attribute's current value at once).
        A refusal ends the subscription (as joynr's runtimes do; a subscription stop is sent in
        case the provider kept the old terms) and raises the provider's error; no reply in
        time raises JoynrTimeoutError and keeps the old terms here.

        A non-selective broadcast's subscription only has an expiry date, kept by this proxy:
        ``qos`` must be a MulticastSubscriptionQos (changed here, nothing is sent) and
        ``filter_parameters`` None, else TypeError. Updates of one subscription run one after
        the other; SubscriptionError once it has ended."""
        if self._updating is None:
            self._updating = asyncio.Lock()
        async with self._updating:
            if not self.active:
                raise SubscriptionError(
                    f"subscription {self.subscription_id} to {self.name} has ended",
                    self.subscription_id)
            await self._owner.update_subscription(self, qos, filter_parameters)

    # ------------------------------------------------------------------ for the proxy

    def start_timers(self) -> None:
        """(Re)start the missed-publication and expiry timers, from now (the proxy calls it
        when the subscription is confirmed, and after an update)."""
        self._cancel_timers()
        if not self.active:
            return
        loop = self._loop = asyncio.get_running_loop()
        alert_ms = self.qos.alert_after_ms
        if alert_ms > 0 and self.on_error is not None:
            self._mark = loop.time()
            self._alert = loop.call_later(alert_ms / 1000, self._check_alert)
        expiry = self.qos.expiry_date_ms
        if expiry:
            self._expiry = loop.call_later(max(expiry - now_ms(), 0) / 1000, self._lapse)

    def touch(self) -> None:
        """A publication (a value or an error) arrived: the missed-publication timer starts
        again from now."""
        if self._alert is not None and self._loop is not None:
            self._mark = self._loop.time()

    def finish(self) -> None:
        """Mark it ended (inactive, timers cancelled) and call :attr:`on_end`, once. The proxy
        does the rest (forgets it; tells the provider or the routers as the case may be)."""
        if not self.active:
            return
        self.active = False
        self._cancel_timers()
        on_end, self.on_end = self.on_end, None
        if on_end is not None:
            on_end()

    def _cancel_timers(self) -> None:
        for timer in (self._alert, self._expiry):
            if timer is not None:
                timer.cancel()
        self._alert = self._expiry = None

    def _check_alert(self) -> None:
        self._alert = None
        loop = self._loop
        if not self.active or loop is None:
            return
        interval_s = self.qos.alert_after_ms / 1000
        now = loop.time()
        remaining = self._mark + interval_s - now
        if remaining > _EARLY_S:  # a publication came meanwhile: wait for the rest
            self._alert = loop.call_later(remaining, self._check_alert)
            return
        self._mark = now
        self._alert = loop.call_later(interval_s, self._check_alert)
        self._owner.publication_missed(self)

    def _lapse(self) -> None:
        self._expiry = None
        self.lapse()

    def lapse(self) -> None:
        """End it on this side only, silently (its expiry date has come, or its provider ended
        it): no more callbacks, no subscription stop; a multicast receiver is removed."""
        if self.active:
            self._owner.subscription_lapsed(self)

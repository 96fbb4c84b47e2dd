"""Subscriptions: their quality of service, the provider side and the proxy side.

- :class:`AttributeSubscriptionQos`: an on-change subscription's terms, as sent in the request.
- :class:`OnChangePublisher`: the provider side of on-change attribute subscriptions of one
  provider participant. It accepts a subscription request (one subscriber per subscription id:
  another participant reusing an id is refused), publishes the current value at once and every
  change afterwards, never more often than the subscriber's minimum interval (a change within
  the interval is sent when it has passed, and only the latest one), and ends a subscription
  on the subscriber's stop or at its expiry date.
- the proxy side (:class:`~runtime.subscribers.Subscription`) is in runtime/subscribers.py.

Broadcasts are not subscriptions here: they are multicasts, which the routers deliver to the
receivers registered for them (see runtime/multicast.py); a provider only acknowledges them.

Bodies come in either format (runtime/bodies.py): a subscription request or stop is read in
its own, and its subscription reply and the publications of the subscription are written in
the format of the request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.bodies import BodyFormat, decode_body, encode_body, format_of, schema_of
from runtime.clock import now_ms
from runtime.errors import JoynrError, MethodInvocationError, ProviderRuntimeError
from runtime.interface import InterfaceDef, to_wire
from runtime.logs import get_logger, peer_of
from runtime.messages import Message, MessageType
from runtime.payloads import (
    PAYLOAD_TYPES,
    PayloadError,
    Publication,
    SubscriptionReply,
    SubscriptionRequest,
    SubscriptionStop,
    answer_to,
)
from runtime.router import MessageRouter

__all__ = [
    "AttributeSubscriptionQos",
    "OnChangePublisher",
    "answer_subscription",
]

log = get_logger(__name__)


@dataclass(frozen=True)
class AttributeSubscriptionQos:
    """On-change subscription: publications at most every ``min_interval_ms``, each living
    ``publication_ttl_ms``; the subscription ends at ``expiry_date_ms`` (0: never)."""

    #: the shortest time between two publications (ms); 0: every change
    min_interval_ms: int = 0
    #: how long one publication lives on its way (ms)
    publication_ttl_ms: int = 10_000
    #: when the subscription ends (ms since the epoch); 0: never
    expiry_date_ms: int = 0

    def to_wire(self) -> dict[str, int]:
        return {"min_interval_ms": self.min_interval_ms,
                "publication_ttl_ms": self.publication_ttl_ms,
                "expiry_date_ms": self.expiry_date_ms}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> AttributeSubscriptionQos:
        values = {k: data.get(k, getattr(cls(), k)) for k in ("min_interval_ms",
                                                               "publication_ttl_ms",
                                                               "expiry_date_ms")}
        if not all(type(v) is int and v >= 0 for v in values.values()):
            raise PayloadError("subscription qos values must be non-negative ints")
        return cls(**values)


def answer_subscription(router: MessageRouter, message: Message, subscription_id: str | None,
                        error: JoynrError | None) -> None:
    """Answer a subscription request (of any kind), in its body format: accepted, or refused
    with ``error``. ``subscription_id`` None: read it from the request (no answer if it does
    not decode)."""
    fmt = format_of(message.body)
    if subscription_id is None:
        cls = PAYLOAD_TYPES.get(message.type, SubscriptionRequest)
        try:
            subscription_id = decode_body(cls, message.body).subscription_id  # type: ignore[attr-defined]
        except PayloadError:
            return
    reply = SubscriptionReply(subscription_id=subscription_id,
                              error=None if error is None else error.to_wire())
    try:
        body = encode_body(reply, fmt)
    except PayloadError as exc:  # (an id no JSON can hold; it came in JSON, so not expected)
        router.warnings.warning(log, "unencodable-answer", peer_of(message.origin),
                                "subscription reply to %s not written: %s",
                                message.describe(), exc)
        return
    router.route(answer_to(message, reply, body=body))


# ====================================================================== provider side


@dataclass
class _OnChange:
    """One accepted on-change subscription (loop clock seconds for the interval)."""

    subscription_id: str
    subscriber: str
    attribute: str
    qos: AttributeSubscriptionQos
    #: the body format of the request, in which its publications are written
    body_format: BodyFormat = BodyFormat.MSGPACK
    last_sent: float = -1e18
    #: the publication waiting for the minimum interval to pass, and its value
    deferred: asyncio.TimerHandle | None = None
    deferred_value: Any = None


class OnChangePublisher:
    """The on-change attribute subscriptions of one provider participant (see the module
    docstring). ``values`` is the provider's attribute values (read when a subscription
    starts)."""

    def __init__(self, router: MessageRouter, participant_id: str, definition: InterfaceDef,
                 values: Mapping[str, Any]) -> None:
        self.router = router
        self.participant_id = participant_id
        self.definition = definition
        self.values = values
        self._subscriptions: dict[str, _OnChange] = {}

    @property
    def subscription_ids(self) -> list[str]:
        """The ids of the live subscriptions."""
        return list(self._subscriptions)

    def subscribe(self, message: Message) -> None:
        """A subscription request: answer it, then publish the current value (if any)."""
        fmt = format_of(message.body)
        try:
            request = decode_body(SubscriptionRequest, message.body,
                                  schema=schema_of(self.definition))
            qos = AttributeSubscriptionQos.from_wire(request.qos)
        except PayloadError as exc:
            self.router.counters["dropped-bad-subscription-request"] += 1
            self.router.warnings.warning(log, "bad-subscription-request",
                                         peer_of(message.origin),
                                         "provider %s: bad subscription request %s: %s",
                                         self.participant_id, message.id, exc)
            return
        attr = self.definition.attributes.get(request.subscribe_to_name)
        if attr is None or not attr.notifiable:
            answer_subscription(self.router, message, request.subscription_id,
                                MethodInvocationError(
                                    f"no notifiable attribute {request.subscribe_to_name}"))
            return
        old = self._subscriptions.get(request.subscription_id)
        if old is not None and old.subscriber != message.sender:
            answer_subscription(self.router, message, request.subscription_id,
                                ProviderRuntimeError("subscription id in use"))
            return
        if old is not None:
            self._drop(old)
        subscription = _OnChange(request.subscription_id, message.sender, attr.name, qos, fmt)
        self._subscriptions[subscription.subscription_id] = subscription
        answer_subscription(self.router, message, request.subscription_id, None)
        if attr.name in self.values:
            self._publish(subscription, self.values[attr.name])

    def stop(self, message: Message) -> None:
        """A subscription stop: honoured only from the subscriber itself."""
        try:
            stop = decode_body(SubscriptionStop, message.body)
        except PayloadError as exc:
            self.router.counters["dropped-bad-subscription-stop"] += 1
            self.router.warnings.warning(log, "bad-subscription-stop", peer_of(message.origin),
                                         "provider %s: bad subscription stop %s: %s",
                                         self.participant_id, message.id, exc)
            return
        subscription = self._subscriptions.get(stop.subscription_id)
        if subscription is not None and subscription.subscriber == message.sender:
            self._drop(subscription)

    def attribute_changed(self, name: str, value: Any) -> None:
        for subscription in list(self._subscriptions.values()):
            if subscription.attribute == name:
                self._publish(subscription, value)

    def close(self) -> None:
        """End every subscription (no more publications)."""
        for subscription in list(self._subscriptions.values()):
            self._drop(subscription)

    def _drop(self, subscription: _OnChange) -> None:
        self._subscriptions.pop(subscription.subscription_id, None)
        if subscription.deferred is not None:
            subscription.deferred.cancel()
            subscription.deferred = None

    def _publish(self, subscription: _OnChange, value: Any) -> None:
        qos = subscription.qos
        if qos.expiry_date_ms and now_ms() > qos.expiry_date_ms:
            self._drop(subscription)
            return
        loop = asyncio.get_running_loop()
        wait = subscription.last_sent + qos.min_interval_ms / 1000 - loop.time()
        if wait > 0:  # too soon: send the latest value when the minimum interval has passed
            subscription.deferred_value = value
            if subscription.deferred is None:
                subscription.deferred = loop.call_later(wait, self._publish_deferred,
                                                        subscription)
            return
        subscription.last_sent = loop.time()
        publication = Publication(subscription_id=subscription.subscription_id,
                                  response=[to_wire(value)])
        if subscription.body_format is BodyFormat.MSGPACK:
            body = publication.to_body()
        else:
            try:
                body = encode_body(publication, subscription.body_format,
                                   types=[self.definition.attributes[subscription.attribute].type])
            except PayloadError as exc:
                self.router.warnings.warning(
                    log, "unencodable-publication", f"attribute {subscription.attribute}",
                    "provider %s: publication of %s for %s not written: %s",
                    self.participant_id, subscription.attribute, subscription.subscription_id,
                    exc)
                return
        self.router.route(Message(
            type=MessageType.PUBLICATION, sender=self.participant_id,
            recipient=subscription.subscriber,
            expiry_date_ms=now_ms() + qos.publication_ttl_ms, body=body,
        ))

    def _publish_deferred(self, subscription: _OnChange) -> None:
        subscription.deferred = None
        value, subscription.deferred_value = subscription.deferred_value, None
        if self._subscriptions.get(subscription.subscription_id) is subscription:
            self._publish(subscription, value)

"""The proxy side: :class:`Proxy`, what applications call, and :class:`ProxyEndpoint`, the
participant of one proxy (what runs behind its InProcessAddress).

- ``await proxy.method(...)`` sends a request and waits for the reply until the message's
  expiry date plus the runtime's reply grace (then JoynrTimeoutError) and returns its value
  (the tuple of the out arguments for a method declared with ``@outputs``); a one-way method only
  sends (MessageNotSentError when the message cannot even be queued) and then waits while the
  way to the cluster controller is congested (flow control);
- attributes (:class:`AttributeHandle`): ``await proxy.attr.get()``, ``await
  proxy.attr.set(value)``, ``await proxy.attr.subscribe(callback, qos=None, on_error=None)``
  and ``proxy.attr.updates(qos=None, *, max_buffered=100)``;
- broadcasts (:class:`BroadcastHandle`): ``await proxy.bc.subscribe(callback, partitions=(), *,
  qos=None, filter_parameters=None, on_error=None)`` and ``proxy.bc.updates(partitions=(), *,
  qos=None, filter_parameters=None, max_buffered=100)``;
- the endpoint matches replies to calls and delivers publications and multicasts to the live
  subscriptions. Synchronous callbacks run at once; async ones run inside tasks of the
  endpoint's :class:`~programming.calls.CallRunner`, ended when the proxy is closed.

Subscriptions (:class:`~programming.subscribers.Subscription`; QoS classes in
programming/subscription_qos.py):

- an attribute's ``qos`` is an OnChangeSubscriptionQos (or its subclass
  OnChangeWithKeepAliveSubscriptionQos) or a PeriodicSubscriptionQos; None means
  ``AttributeSubscriptionQos()`` (every change); any other type is a TypeError. The
  subscription request carries ``qos.to_wire()``; ``subscribe`` returns once the provider has
  accepted it (its error otherwise, e.g. SubscriptionError);
- a selective broadcast (``broadcast(selective=True, ...)``) is subscribed with a broadcast
  subscription request (``brq``) carrying ``filter_parameters`` (a mapping of str to str, None:
  none; values of another type: TypeError; when the broadcast declares filter parameter names,
  a non-empty mapping lacking one of them is a ValueError here, as joynr's JavaScript proxy
  checks) and an on-change ``qos`` (any OnChangeSubscriptionQos; None:
  ``OnChangeSubscriptionQos(min_interval_ms=0)``; another type: TypeError). It has no
  partitions (TypeError). Its publications come as unicast publications carrying the
  broadcast's values;
- a non-selective broadcast is a multicast: the runtime registers the proxy as a receiver of
  the multicast id pattern (partitions) before it asks the provider; ``qos`` may be a
  MulticastSubscriptionQos, whose expiry date this proxy keeps (another type: TypeError);
  ``filter_parameters`` is a TypeError;
- a QoS with ``alert_after_ms`` > 0 (keep-alive, periodic) makes ``on_error`` get a
  PublicationMissedError when no publication came for that long, and again every interval
  while none comes; at ``qos.expiry_date_ms`` the subscription ends here, silently (no
  subscription stop; a multicast receiver is removed); an error publication carrying a
  SubscriptionError (the provider ended it, say it was unregistered) goes to ``on_error`` and
  ends the subscription; other errors of publications go to ``on_error`` only. An expiry date
  already past when subscribing: SubscriptionError (from the provider, or from this proxy for a
  multicast);
- ``await subscription.update(qos, filter_parameters=...)`` changes the terms under the same id
  (see :meth:`~programming.subscribers.Subscription.update`);
- ``updates(...)`` returns an :class:`~programming.updates.Updates`: the subscription as an async
  iterator (see programming/updates.py).

Bodies (runtime/bodies.py): a proxy writes its requests, subscription requests and stops in
its :attr:`Proxy.body_format` (msgpack for a provider of this project, JSON for one of joynr's
runtimes; its runtime chooses), and the endpoint reads replies, subscription replies,
publications and multicasts in whatever format they come (a JSON body typed by the method or
subscription it answers). A proxy subscribes to a broadcast under joynr's name of it
(``newStation`` for ``new_station``), the name every provider publishes it under.

joynr's dialect (the runtime's :attr:`ProxyHost.joynr_dialect`, for a cluster controller of
joynr's, which routes answers by the replyTo of the requests): the requests (``rq``, ``arq``,
``brq``, ``mrq``) to a provider that is not local carry the runtime's reply-to address and
nothing else does (the native dialect puts it on every message but one-way requests); a
non-selective broadcast subscription only registers the proxy as a multicast receiver and is
complete then, without a multicast subscription request on the wire, and its end only removes
the receiver (no subscription stop), as joynr's proxies do. The native dialect does the same
for a provider of joynr's runtimes (one whose discovery entry has no ``pyjoynr-body``
parameter): joynr's Java runtime knows no multicast subscription request and drops one
unanswered. A selective broadcast is subscribed with a ``brq`` in both dialects.

A proxy is made by its runtime (``build_proxy``), which it reaches through :class:`ProxyHost`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol, cast

from pyjoynr.programming.calls import Call, CallRunner
from pyjoynr.programming.subscribers import Subscription
from pyjoynr.programming.subscription_qos import (
    AttributeSubscriptionQos,
    MulticastSubscriptionQos,
    OnChangeSubscriptionQos,
    PeriodicSubscriptionQos,
    SubscriptionQos,
)
from pyjoynr.programming.updates import Updates
from pyjoynr.runtime import joynr_json
from pyjoynr.runtime.addresses import Address, InProcessAddress
from pyjoynr.runtime.bodies import BodyFormat, decode_body, encode_body, format_of, schema_of
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import (
    JoynrError,
    JoynrTimeoutError,
    MessageNotSentError,
    ProviderRuntimeError,
    PublicationMissedError,
    SubscriptionError,
    error_from_wire,
)
from pyjoynr.runtime.interface import (
    PLAIN_TYPES,
    BroadcastDef,
    InterfaceDef,
    MethodDef,
    ValueTypeError,
    from_wire,
    to_wire,
)
from pyjoynr.runtime.joynr_json import reply_types
from pyjoynr.runtime.logs import RepeatedWarnings, get_logger, peer_of
from pyjoynr.runtime.messages import REQUEST_TYPES, Message, MessageType, new_message_id, random_id
from pyjoynr.runtime.multicast import make_multicast_id, matches
from pyjoynr.runtime.payloads import (
    BroadcastSubscriptionRequest,
    MulticastPublication,
    MulticastSubscriptionRequest,
    OneWayRequest,
    Payload,
    PayloadError,
    Publication,
    Reply,
    Request,
    SubscriptionReply,
    SubscriptionRequest,
    SubscriptionStop,
    decode_payload,
)
from pyjoynr.runtime.tasks import TaskSupervisor

__all__ = ["AttributeHandle", "BroadcastHandle", "Proxy", "ProxyBuilder", "ProxyEndpoint",
           "ProxyHost"]

log = get_logger(__name__)

# enum members as module constants for the per-message paths (cheaper to look up in 3.11)
_ONE_WAY, _REQUEST, _REPLY = MessageType.ONE_WAY, MessageType.REQUEST, MessageType.REPLY
_MSGPACK, _JSON = BodyFormat.MSGPACK, BodyFormat.JSON

#: the message types a proxy puts the reply-to address on: native dialect, and joynr's dialect
#: towards a provider that is not local (towards a local one: none)
_NATIVE_REPLY_TO: frozenset[MessageType] = frozenset(MessageType) - {_ONE_WAY}
_JOYNR_REPLY_TO: frozenset[MessageType] = REQUEST_TYPES


#: what a reply's future is answered with when its time is up (Proxy._await_answer)
_EXPIRED: Any = object()


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(_EXPIRED)


class ProxyHost(Protocol):
    """What a proxy needs from its runtime."""

    #: the address replies to this runtime's requests come back to (None: the router's own)
    reply_to_address: Address | None
    #: milliseconds a caller waits for a reply beyond the request's expiry date
    reply_grace_ms: int
    #: the runtime speaks joynr's dialect: replyTo and broadcast subscriptions as joynr's
    #: runtimes do (see the module docstring)
    joynr_dialect: bool

    def route(self, message: Message) -> bool:
        """Send ``message`` on its way (the runtime's router: MessageRouter.route)."""
        ...

    async def flow_control(self) -> None: ...
    async def add_multicast_receiver(self, pattern: str, subscriber: str, provider: str
                                     ) -> None: ...
    async def remove_multicast_receiver(self, pattern: str, subscriber: str, provider: str
                                        ) -> None: ...
    async def forget_proxy(self, proxy: Proxy) -> None: ...


class ProxyBuilder(Protocol):
    """What builds a proxy: an application's LibjoynrRuntime, or a JoynrRuntime (the
    ``build_*_proxy`` functions of generated code take either)."""

    async def build_proxy(self, interface: type, domain: str | list[str], *args: Any,
                          **options: Any) -> Proxy: ...


class ProxyEndpoint:
    """The participant of one proxy: replies, subscription replies, publications, multicasts."""

    def __init__(self, participant_id: str, warn: Callable[..., object] | None = None,
                 counters: Counter[str] | None = None) -> None:
        """``warn``: writes a rate-limited log line (the process's telemetry's ``warn``: its
        limit of repeated warnings); ``counters``: where refused messages are counted (the
        telemetry's, ``dropped-<reason>``)."""
        self.participant_id = participant_id
        self.warn = warn if warn is not None else RepeatedWarnings().warning
        self.counters: Counter[str] = counters if counters is not None else Counter()
        self.address = InProcessAddress(self)
        #: the calls waiting for their reply: answered with the Reply of a msgpack body, or
        #: with a JSON body parsed and checked (joynr_json.parse; the proxy, which knows the
        #: method, reads it typed)
        self.replies: dict[str, asyncio.Future[Reply | dict[str, Any]]] = {}
        self.subscription_replies: dict[str, asyncio.Future[SubscriptionReply]] = {}
        self.subscriptions: dict[str, Subscription] = {}
        #: runs async subscription callbacks inside tasks (owns them)
        self.callbacks: CallRunner[_Callback] = CallRunner(f"proxy {participant_id}",
                                                           _start_callback, _discard_callback)
        #: the few tasks of its own: removing a multicast receiver when a subscription ends
        #: on its own (expiry, the provider's error)
        self.tasks = TaskSupervisor(f"proxy {participant_id}")

    def receive(self, message: Message) -> None:
        body = message.body
        try:
            if message.type is _REPLY:
                answer: Reply | dict[str, Any]
                if format_of(body) is _MSGPACK:
                    reply = answer = decode_payload(Reply, body)
                else:  # read untyped here, typed by the proxy from the same parse
                    answer = joynr_json.parse(Reply, body)
                    reply = cast(Reply, joynr_json.decode_parsed(Reply, answer))
                future = self.replies.pop(reply.request_reply_id, None)
                if future is not None and not future.done():
                    future.set_result(answer)
            elif message.type is MessageType.SUBSCRIPTION_REPLY:
                sreply = decode_body(SubscriptionReply, body)
                sfuture = self.subscription_replies.pop(sreply.subscription_id, None)
                if sfuture is not None and not sfuture.done():
                    sfuture.set_result(sreply)
            elif message.type is MessageType.PUBLICATION:
                parsed = joynr_json.parse(Publication, body) if format_of(body) is _JSON else None
                publication = (decode_payload(Publication, body) if parsed is None
                               else cast(Publication, joynr_json.decode_parsed(Publication,
                                                                               parsed)))
                subscription = self.subscriptions.get(publication.subscription_id)
                # a multicast's values come as multicasts; its provider's error (it ended the
                # subscription) may come as a publication
                if subscription is not None and (subscription.multicast_pattern is None
                                                 or publication.error is not None):
                    if publication.response is not None and parsed is not None:
                        publication = cast(Publication, joynr_json.decode_parsed(
                            Publication, parsed, types=subscription.types))
                    self._deliver(subscription, publication.response, publication.error)
            elif message.type is MessageType.MULTICAST:
                parsed = (joynr_json.parse(MulticastPublication, body)
                          if format_of(body) is _JSON else None)
                multicast = (decode_payload(MulticastPublication, body) if parsed is None
                             else cast(MulticastPublication, joynr_json.decode_parsed(
                                 MulticastPublication, parsed)))
                typed: dict[tuple[Any, ...], list[Any]] = {}  # JSON: values by declared types
                for subscription in list(self.subscriptions.values()):
                    pattern = subscription.multicast_pattern
                    if pattern is not None and matches(pattern, message.recipient):
                        values: list[Any] | None = multicast.response
                        if parsed is not None:
                            values = typed.get(subscription.types)
                            if values is None:
                                values = cast(MulticastPublication, joynr_json.decode_parsed(
                                    MulticastPublication, parsed, types=subscription.types)
                                              ).response
                                typed[subscription.types] = values
                        self._deliver(subscription, values, None)
            else:
                self.warn(log, "ignored", peer_of(message.origin),
                          "proxy %s: ignored %s", self.participant_id,
                          message.describe())
        except PayloadError as exc:
            self.counters["dropped-bad-payload"] += 1
            self.warn(log, "bad-payload", peer_of(message.origin),
                      "proxy %s: refused %s: %s", self.participant_id,
                      message.describe(), exc)

    def _deliver(self, subscription: Subscription, response: list[Any] | None,
                 error: dict[str, Any] | None) -> None:
        if not subscription.active:
            return
        subscription.touch()
        try:
            if error is not None:
                failure = error_from_wire(error)
                self.report(subscription, failure)
                if (isinstance(failure, SubscriptionError)
                        and not isinstance(failure, PublicationMissedError)):
                    subscription.lapse()  # the provider ended it
                return
            values = response or []
            if len(values) != len(subscription.types):
                raise ValueTypeError(f"{subscription.name}: {len(values)} values")
            typed = [from_wire(v, tp, subscription.name)
                     for v, tp in zip(values, subscription.types, strict=True)]
            self._call(subscription.callback, typed, subscription,
                       subscription.callback_is_async())
        except ValueTypeError as exc:
            self.counters["dropped-bad-publication"] += 1
            self.warn(log, "bad-publication", f"subscription {subscription.name}",
                      "proxy %s: publication for %s refused: %s",
                      self.participant_id, subscription.name, exc)
        except Exception:  # once per publication a provider sends: rate-limited
            self.counters["callback-failed"] += 1
            self.warn(log, "callback-failed", f"subscription {subscription.name}",
                      "proxy %s: subscription callback for %s failed", self.participant_id,
                      subscription.name, level=logging.ERROR, exc_info=True)

    def report(self, subscription: Subscription, error: JoynrError) -> None:
        """Pass ``error`` to the subscription's ``on_error`` (if it has one)."""
        on_error = subscription.on_error
        if on_error is None:
            return
        try:
            self._call(on_error, (error,), subscription)
        except Exception:  # once per error a provider sends: rate-limited
            self.counters["callback-failed"] += 1
            self.warn(log, "error-callback-failed", f"subscription {subscription.name}",
                      "proxy %s: error callback for %s failed", self.participant_id,
                      subscription.name, level=logging.ERROR, exc_info=True)

    def _call(self, callback: Callable[..., Any], args: Sequence[Any],
              subscription: Subscription, is_async: bool | None = None) -> None:
        """A synchronous callback runs now; an async one (or one that returns an awaitable)
        inside a task of :attr:`callbacks`. ``is_async``: whether ``callback`` is a coroutine
        function, when the caller knows (None: found here)."""
        if inspect.iscoroutinefunction(callback) if is_async is None else is_async:
            self.callbacks.submit((callback, args, subscription.name))
            return
        result = callback(*args)
        if inspect.isawaitable(result):
            self.callbacks.submit((_wait_for, (result,), subscription.name))

    async def close(self) -> None:
        """End the subscriptions here (timers cancelled, iterators stopped; nothing sent) and
        cancel the callbacks and tasks still running."""
        for subscription in list(self.subscriptions.values()):
            subscription.finish()
        self.subscriptions.clear()
        await self.callbacks.close()
        await self.tasks.close()


#: an async callback to call: the function, its arguments, the subscription's name
_Callback = tuple[Callable[..., Any], Sequence[Any], str]


def _start_callback(item: _Callback) -> Call:
    callback, args, name = item
    return callback(*args), contextvars.copy_context(), f"callback for {name}"


def _discard_callback(item: _Callback) -> None:
    for arg in item[1]:
        if inspect.iscoroutine(arg):
            arg.close()  # an awaitable a callback returned, never awaited


async def _wait_for(awaitable: Awaitable[Any]) -> None:
    await awaitable


class AttributeHandle:
    """``proxy.<attribute>``: get, set, subscribe to it (see the module docstring)."""

    def __init__(self, name: str, proxy: Proxy) -> None:
        self._name = name
        self._proxy = proxy

    async def get(self) -> Any:
        return await self._proxy._call_accessor(f"get_{self._name}", ())

    async def set(self, value: Any) -> None:
        await self._proxy._call_accessor(f"set_{self._name}", (value,))

    async def subscribe(self, callback: Callable[[Any], Any],
                        qos: SubscriptionQos | None = None,
                        on_error: Callable[[JoynrError], Any] | None = None) -> Subscription:
        """Subscribe: ``callback(value)`` for each publication, ``on_error(error)`` for the
        provider's errors and missed publications; returns once the provider has accepted."""
        return await self._proxy._subscribe_attribute(self._name, callback, qos, on_error)

    def updates(self, qos: SubscriptionQos | None = None, *,
                max_buffered: int = 100) -> Updates:
        """The attribute's publications as an async iterator of its values (subscribes when
        first iterated or entered; see programming/updates.py). TypeError for a ``qos`` that
        :meth:`subscribe` refuses, at once."""
        checked = _attribute_qos(qos)
        proxy, name = self._proxy, self._name

        async def subscribe(callback: Callable[..., Any],
                            on_error: Callable[[JoynrError], Any]) -> Subscription:
            return await proxy._subscribe_attribute(name, callback, checked, on_error)
        return Updates(subscribe, single=True, max_buffered=max_buffered)


class BroadcastHandle:
    """``proxy.<broadcast>``: subscribe to it (see the module docstring)."""

    def __init__(self, name: str, proxy: Proxy) -> None:
        self._name = name
        self._proxy = proxy

    async def subscribe(self, callback: Callable[..., Any],
                        partitions: Sequence[str] = (), *,
                        qos: SubscriptionQos | None = None,
                        filter_parameters: Mapping[str, str] | None = None,
                        on_error: Callable[[JoynrError], Any] | None = None) -> Subscription:
        """Subscribe: ``callback(*values)`` for each publication (the broadcast's values, in
        their declared order), ``on_error(error)`` for the provider's errors; returns once the
        subscription is in place."""
        return await self._proxy._subscribe_broadcast(
            self._name, callback, partitions, qos=qos, filter_parameters=filter_parameters,
            on_error=on_error)

    def updates(self, partitions: Sequence[str] = (), *,
                qos: SubscriptionQos | None = None,
                filter_parameters: Mapping[str, str] | None = None,
                max_buffered: int = 100) -> Updates:
        """The broadcast's publications as an async iterator (subscribes when first iterated
        or entered; see programming/updates.py): the value itself for a broadcast with one output,
        the tuple of its values otherwise. What :meth:`subscribe` refuses is refused here, at
        once (TypeError, ValueError)."""
        proxy, name = self._proxy, self._name
        broadcast = proxy._definition.broadcasts[name]
        _broadcast_terms(broadcast, partitions, qos, filter_parameters)

        async def subscribe(callback: Callable[..., Any],
                            on_error: Callable[[JoynrError], Any]) -> Subscription:
            return await proxy._subscribe_broadcast(
                name, callback, partitions, qos=qos, filter_parameters=filter_parameters,
                on_error=on_error)
        return Updates(subscribe, single=len(broadcast.outputs) == 1,
                       max_buffered=max_buffered)


def _out_arguments(method: MethodDef, response: list[Any] | None) -> tuple[Any, ...]:
    """The typed values of a reply to a method with several out arguments, as a tuple."""
    values = response or []
    if len(values) != len(method.outputs):
        raise ProviderRuntimeError(f"{method.name}: the reply carries {len(values)} values, "
                                   f"{len(method.outputs)} out arguments declared")
    try:
        return tuple(from_wire(v, tp, f"{method.name} {name}")
                     for v, (name, tp) in zip(values, method.outputs, strict=True))
    except ValueTypeError as exc:
        raise ProviderRuntimeError(f"bad reply: {exc}") from None


def _attribute_qos(qos: SubscriptionQos | None) -> SubscriptionQos:
    """An attribute subscription's QoS, checked (see the module docstring)."""
    if qos is None:
        return AttributeSubscriptionQos()
    if not isinstance(qos, (OnChangeSubscriptionQos, PeriodicSubscriptionQos)):
        raise TypeError("an attribute subscription's qos is an OnChangeSubscriptionQos, "
                        "OnChangeWithKeepAliveSubscriptionQos or PeriodicSubscriptionQos, not "
                        f"{type(qos).__name__}")
    return qos


def _refuse_expired(qos: SubscriptionQos, name: str, subscription_id: str | None) -> None:
    """SubscriptionError when ``qos``'s expiry date has passed (a multicast's terms, which no
    provider checks)."""
    if qos.expired(now_ms()):
        raise SubscriptionError(f"the expiry date {qos.expiry_date_ms} of the subscription to "
                                f"{name} lies in the past", subscription_id)


def _selective_qos(qos: SubscriptionQos | None) -> SubscriptionQos:
    if qos is None:
        return OnChangeSubscriptionQos(min_interval_ms=0)
    if not isinstance(qos, OnChangeSubscriptionQos):
        raise TypeError("a selective broadcast subscription's qos is an "
                        f"OnChangeSubscriptionQos, not {type(qos).__name__}")
    return qos


def _multicast_qos(qos: SubscriptionQos | None) -> SubscriptionQos:
    if qos is None:
        return MulticastSubscriptionQos()
    if not isinstance(qos, MulticastSubscriptionQos):
        raise TypeError("a (non-selective) broadcast subscription's qos is a "
                        f"MulticastSubscriptionQos, not {type(qos).__name__}")
    return qos


def _filter_parameters(broadcast: BroadcastDef,
                       given: Mapping[str, str] | None) -> dict[str, str]:
    """A selective broadcast's filter parameters, checked (see the module docstring)."""
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise TypeError(f"filter_parameters is a mapping of str to str, not "
                        f"{type(given).__name__}")
    for key, value in given.items():
        if type(key) is not str or type(value) is not str:
            raise TypeError(f"filter parameter {key!r}: names and values are str, not "
                            f"{type(key).__name__} / {type(value).__name__}")
    expected = broadcast.filter_parameters
    missing = [name for name in expected if name not in given]
    if given and missing:
        raise ValueError(f"the filter parameters of broadcast {broadcast.name} lack "
                         f"{', '.join(missing)} (expected: {', '.join(expected)})")
    return dict(given)


def _broadcast_terms(broadcast: BroadcastDef, partitions: Sequence[str],
                     qos: SubscriptionQos | None, filter_parameters: Mapping[str, str] | None
                     ) -> tuple[SubscriptionQos, dict[str, str] | None, list[str]]:
    """(qos, filter parameters (None: a multicast), partitions) of a broadcast subscription,
    checked (see the module docstring)."""
    if isinstance(partitions, str) or not all(type(p) is str for p in partitions):
        raise TypeError("partitions is a sequence of str")
    if broadcast.selective:
        if partitions:
            raise TypeError(f"broadcast {broadcast.name} is selective: it has no partitions "
                            "(its filter parameters choose what a subscriber gets)")
        return (_selective_qos(qos), _filter_parameters(broadcast, filter_parameters), [])
    if filter_parameters is not None:
        raise TypeError(f"broadcast {broadcast.name} is not selective: it has no filter "
                        "parameters (subscribe to partitions of it)")
    return _multicast_qos(qos), None, list(partitions)


class _Owner:
    """What the subscriptions of a proxy call it for (programming.subscribers.SubscriptionOwner):
    kept apart from the proxy, whose public names are the interface's."""

    __slots__ = ("_proxy",)

    def __init__(self, proxy: Proxy) -> None:
        self._proxy = proxy

    async def end_subscription(self, subscription: Subscription) -> None:
        await self._proxy._end(subscription, tell_provider=True)

    async def update_subscription(self, subscription: Subscription,
                                  qos: SubscriptionQos | None,
                                  filter_parameters: Mapping[str, str] | None) -> None:
        await self._proxy._update(subscription, qos, filter_parameters)

    def subscription_lapsed(self, subscription: Subscription) -> None:
        self._proxy._lapse(subscription)

    def publication_missed(self, subscription: Subscription) -> None:
        self._proxy._endpoint.report(subscription, PublicationMissedError(
            f"no publication of {subscription.name} for "
            f"{subscription.qos.alert_after_ms} ms (alert_after_interval_ms)",
            subscription.subscription_id))


class Proxy:
    """Calls a provider: ``await proxy.method(...)``, ``proxy.attr.get()/set()/subscribe()/
    updates()``, ``proxy.broadcast.subscribe()/updates()`` (see the module docstring). Built by
    ``JoynrRuntime.build_proxy``.

    The interface's members are found by name; the proxy's own public names (``close``,
    ``subscriptions``, ``participant_id``, ``provider_participant_id``, ``ttl_ms``,
    ``body_format``, ``provider_is_local``, ``with_ttl``) come first.
    """

    def __init__(self, host: ProxyHost, definition: InterfaceDef, provider_id: str,
                 endpoint: ProxyEndpoint, ttl_ms: int, *,
                 body_format: BodyFormat = BodyFormat.MSGPACK,
                 provider_is_local: bool = False,
                 provider_is_joynrs: bool = False,
                 custom_headers: Mapping[str, str] | None = None) -> None:
        self._host = host
        self._definition = definition
        self.provider_participant_id = provider_id
        self.participant_id = endpoint.participant_id
        self._endpoint = endpoint
        self.ttl_ms = ttl_ms
        #: the format of the bodies this proxy writes (what its provider reads)
        self.body_format = body_format
        #: the provider is registered at the same cluster controller (its discovery entry's
        #: isLocal): in joynr's dialect, requests to it carry no replyTo
        self.provider_is_local = provider_is_local
        #: the provider is one of joynr's runtimes (its entry has no ``pyjoynr-body``)
        self.provider_is_joynrs = provider_is_joynrs
        #: custom headers of every message this proxy sends (joynr prefixes them c- on its
        #: wire); answers echo them
        self.custom_headers: dict[str, str] = dict(custom_headers or {})
        joynr = host.joynr_dialect
        self._joynr = joynr
        #: a non-selective broadcast is subscribed by the multicast receiver alone (no
        #: ``mrq``, no stop): in joynr's dialect, and to a provider of joynr's runtimes in
        #: either (joynr's Java runtime has no MulticastSubscriptionRequest and drops one)
        self._receiver_only = joynr or provider_is_joynrs
        self._reply_to_kinds = (_NATIVE_REPLY_TO if not joynr
                                else frozenset() if provider_is_local else _JOYNR_REPLY_TO)
        self._owner = _Owner(self)

    def __getattr__(self, name: str) -> Any:
        definition = self.__dict__.get("_definition")
        if definition is None:
            raise AttributeError(name)
        method = definition.methods.get(name)
        if method is not None:
            # a plain function returning _invoke's coroutine: awaited as an ``async def``
            # would be, without a coroutine of its own per call
            def call(*args: Any) -> Coroutine[Any, Any, Any]:
                return self._invoke(method, args)
            call.__name__ = name
            self.__dict__[name] = call  # found directly from now on
            return call
        if name in definition.attributes:
            return AttributeHandle(name, self)
        if name in definition.broadcasts:
            return BroadcastHandle(name, self)
        raise AttributeError(f"{definition.name} has no method, attribute or broadcast {name}")

    def with_ttl(self, ttl_ms: int) -> Proxy:
        """This proxy with another time to live for its calls (same provider, same endpoint):
        for one call with a deadline of its own, without changing :attr:`ttl_ms` for others."""
        return Proxy(self._host, self._definition, self.provider_participant_id, self._endpoint,
                     ttl_ms, body_format=self.body_format,
                     provider_is_local=self.provider_is_local,
                     provider_is_joynrs=self.provider_is_joynrs,
                     custom_headers=self.custom_headers)

    def with_headers(self, headers: Mapping[str, str]) -> Proxy:
        """This proxy with further custom headers on the messages it sends (same provider,
        same endpoint); e.g. ``gb``, the backend a GCD call is for."""
        return Proxy(self._host, self._definition, self.provider_participant_id, self._endpoint,
                     self.ttl_ms, body_format=self.body_format,
                     provider_is_local=self.provider_is_local,
                     provider_is_joynrs=self.provider_is_joynrs,
                     custom_headers={**self.custom_headers, **headers})

    async def _call_accessor(self, name: str, args: tuple[Any, ...]) -> Any:
        method = self._definition.accessors.get(name)
        if method is None:
            raise AttributeError(f"{name} is not available (read-only attribute?)")
        return await self._invoke(method, args)

    def _body(self, payload: Payload) -> bytes:
        """``payload`` in this proxy's body format; TypeError for values it cannot hold."""
        if self.body_format is _MSGPACK:
            return payload.to_body()
        try:
            return encode_body(payload, self.body_format, schema=schema_of(self._definition))
        except PayloadError as exc:
            raise TypeError(f"{type(payload).__name__} cannot be written as joynr JSON: {exc}"
                            ) from None

    def _message(self, kind: MessageType, body: bytes) -> Message:
        return Message(
            kind, self.participant_id, self.provider_participant_id, now_ms() + self.ttl_ms,
            body, new_message_id(),
            self._host.reply_to_address if kind in self._reply_to_kinds else None,
            custom_headers=dict(self.custom_headers) if self.custom_headers else {},
        )

    async def _invoke(self, method: MethodDef, args: tuple[Any, ...]) -> Any:
        if len(args) != len(method.params):
            raise TypeError(f"{method.name}() takes {len(method.params)} arguments")
        params = [a if type(a) in PLAIN_TYPES else to_wire(a) for a in args]
        if method.one_way:
            body = self._body(OneWayRequest(method.name, params, method.param_datatypes))
            message = self._message(_ONE_WAY, body)
            if not self._host.route(message):
                raise MessageNotSentError(
                    f"one-way {method.name}() to {self.provider_participant_id} not sent "
                    f"(message {message.id}: queue full or expired; see the log)")
            await self._host.flow_control()
            return None
        rid = random_id()
        body = self._body(Request(rid, method.name, params, method.param_datatypes))
        reply = await self._await_answer(self._endpoint.replies, rid,
                                         self._message(_REQUEST, body),
                                         f"{method.name}()")
        if type(reply) is dict:  # a JSON reply, read typed by the method it answers
            try:
                reply = joynr_json.decode_parsed(Reply, reply, types=reply_types(method),
                                                 error_enum=method.error_enum)
            except PayloadError as exc:
                raise ProviderRuntimeError(f"bad reply: {exc}") from None
        if reply.error is not None:
            raise error_from_wire(reply.error)
        if method.outputs:
            return _out_arguments(method, reply.response)
        if method.returns is type(None) or method.returns is None:
            return None
        if not reply.response:
            raise ProviderRuntimeError(f"{method.name}: the reply carries no value")
        try:
            return from_wire(reply.response[0], method.returns, f"{method.name} result")
        except ValueTypeError as exc:
            raise ProviderRuntimeError(f"bad reply: {exc}") from None

    async def _await_answer(self, waiting: dict[str, asyncio.Future[Any]], key: str,
                            message: Message, what: str) -> Any:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        waiting[key] = future
        self._host.route(message)
        deadline_s = (message.expiry_date_ms - now_ms() + self._host.reply_grace_ms) / 1000
        # a timer that answers the future with _EXPIRED: the caller wakes as soon as either
        # comes (as with asyncio.timeout, one loop iteration sooner than with wait_for), without
        # asyncio.timeout's task cancellation and its three getpid system calls per call
        timer = loop.call_later(max(deadline_s, 0.001), _expire, future)
        try:
            answer = await future
        finally:
            timer.cancel()
            waiting.pop(key, None)
        if answer is _EXPIRED:
            raise JoynrTimeoutError(
                f"no answer to {what} from {self.provider_participant_id} within "
                f"{self.ttl_ms} ms")
        return answer

    async def _subscribe_attribute(self, name: str, callback: Callable[[Any], Any],
                                   qos: SubscriptionQos | None,
                                   on_error: Callable[[JoynrError], Any] | None
                                   ) -> Subscription:
        attr = self._definition.attributes[name]
        checked = _attribute_qos(qos)
        sid = random_id()
        body = self._body(SubscriptionRequest(sid, name, checked.to_wire()))
        subscription = Subscription(sid, name, callback, (attr.type,), self._owner,
                                    qos=checked, on_error=on_error)
        self._endpoint.subscriptions[sid] = subscription
        await self._confirm(subscription, self._message(MessageType.SUBSCRIPTION_REQUEST, body))
        return subscription

    async def _subscribe_broadcast(self, name: str, callback: Callable[..., Any],
                                   partitions: Sequence[str], *,
                                   qos: SubscriptionQos | None,
                                   filter_parameters: Mapping[str, str] | None,
                                   on_error: Callable[[JoynrError], Any] | None
                                   ) -> Subscription:
        broadcast = self._definition.broadcasts[name]
        checked, filters, parts = _broadcast_terms(broadcast, partitions, qos,
                                                   filter_parameters)
        types = tuple(tp for _, tp in broadcast.outputs)
        sid = random_id()
        if filters is not None:  # selective: a subscription request of its own
            body = self._body(BroadcastSubscriptionRequest(sid, name, checked.to_wire(),
                                                           filters))
            subscription = Subscription(sid, name, callback, types, self._owner, qos=checked,
                                        filter_parameters=filters, on_error=on_error)
            self._endpoint.subscriptions[sid] = subscription
            await self._confirm(subscription,
                                self._message(MessageType.BROADCAST_SUBSCRIPTION_REQUEST, body))
            return subscription
        _refuse_expired(checked, name, None)
        # every provider (joynr's and this project's) publishes a broadcast under joynr's name
        # of it
        spelled = schema_of(self._definition).joynr_name(name)
        pattern = make_multicast_id(self.provider_participant_id, spelled, parts,
                                    for_subscription=True)
        mrq = (None if self._receiver_only else self._body(MulticastSubscriptionRequest(
            sid, name, pattern, {} if qos is None else checked.to_wire(), parts)))
        subscription = Subscription(sid, name, callback, types, self._owner, qos=checked,
                                    multicast_pattern=pattern, on_error=on_error)
        self._endpoint.subscriptions[sid] = subscription
        try:
            await self._host.add_multicast_receiver(pattern, self.participant_id,
                                                    self.provider_participant_id)
        except BaseException:
            self._forget(subscription)
            with contextlib.suppress(JoynrError):  # what the runtime noted of it
                await self._host.remove_multicast_receiver(pattern, self.participant_id,
                                                           self.provider_participant_id)
            raise
        if mrq is None:
            # joynr's proxies send no multicast subscription request: the receiver is all
            subscription.start_timers()
            return subscription
        await self._confirm(subscription,
                            self._message(MessageType.MULTICAST_SUBSCRIPTION_REQUEST, mrq))
        return subscription

    async def _confirm(self, subscription: Subscription, message: Message) -> None:
        """Send a subscription request and wait for its reply; then the subscription's timers
        start. Its error (or none in time): the subscription is forgotten, the error raised."""
        try:
            reply = await self._await_answer(self._endpoint.subscription_replies,
                                             subscription.subscription_id, message,
                                             f"subscription to {subscription.name}")
            if reply.error is not None:
                raise error_from_wire(reply.error)
        except BaseException:
            await self._end(subscription, tell_provider=False)
            raise
        subscription.start_timers()

    async def _update(self, subscription: Subscription, qos: SubscriptionQos | None,
                      filter_parameters: Mapping[str, str] | None) -> None:
        """New terms for a subscription (Subscription.update says what happens)."""
        name, sid = subscription.name, subscription.subscription_id
        if subscription.multicast_pattern is not None:
            if filter_parameters is not None:
                raise TypeError(f"broadcast {name} is not selective: it has no filter "
                                "parameters")
            if qos is None:
                return
            if not isinstance(qos, MulticastSubscriptionQos):
                raise TypeError(f"the subscription to broadcast {name} (not selective) only "
                                "has an expiry date: update it with a MulticastSubscriptionQos,"
                                f" not {type(qos).__name__}")
            _refuse_expired(qos, name, sid)
            subscription.qos = qos
            subscription.start_timers()
            return
        payload: Payload
        if subscription.filter_parameters is not None:
            broadcast = self._definition.broadcasts[name]
            checked = subscription.qos if qos is None else _selective_qos(qos)
            filters = (subscription.filter_parameters if filter_parameters is None
                       else _filter_parameters(broadcast, filter_parameters))
            payload = BroadcastSubscriptionRequest(sid, name, checked.to_wire(), filters)
        else:
            if filter_parameters is not None:
                raise TypeError(f"{name} is an attribute: it has no filter parameters")
            checked = subscription.qos if qos is None else _attribute_qos(qos)
            filters = None
            payload = SubscriptionRequest(sid, name, checked.to_wire())
        message = self._message(payload.message_type, self._body(payload))
        reply = await self._await_answer(self._endpoint.subscription_replies, sid, message,
                                         f"update of the subscription to {name}")
        if not subscription.active:
            return  # ended meanwhile
        if reply.error is not None:
            # joynr's runtimes drop a subscription whose update is refused; the stop is for a
            # provider that kept the old terms
            await self._end(subscription, tell_provider=True)
            raise error_from_wire(reply.error)
        subscription.qos = checked
        if filters is not None:
            subscription.filter_parameters = filters
        subscription.start_timers()

    def _forget(self, subscription: Subscription) -> None:
        """It has ended: no more callbacks, gone from the endpoint."""
        subscription.finish()
        if self._endpoint.subscriptions.get(subscription.subscription_id) is subscription:
            del self._endpoint.subscriptions[subscription.subscription_id]

    def _lapse(self, subscription: Subscription) -> None:
        """It has ended on its own (expiry, its provider's error): forgotten here without a
        word to the provider; its multicast receiver, if any, is removed in a task."""
        self._forget(subscription)
        if subscription.multicast_pattern is not None and not self._endpoint.tasks.closed:
            self._endpoint.tasks.spawn(self._remove_receiver(subscription),
                                       name=f"end of the subscription to {subscription.name}")

    async def _remove_receiver(self, subscription: Subscription) -> None:
        pattern = subscription.multicast_pattern
        if pattern is None:
            return
        try:
            await self._host.remove_multicast_receiver(pattern, self.participant_id,
                                                       self.provider_participant_id)
        except JoynrError as exc:
            self._endpoint.warn(
                log, "receiver-not-removed", f"subscription {subscription.name}",
                "proxy %s: multicast receiver %s not removed: %s", self.participant_id,
                pattern, exc)

    async def _end(self, subscription: Subscription, *, tell_provider: bool) -> None:
        self._forget(subscription)
        if subscription.multicast_pattern is not None:
            await self._host.remove_multicast_receiver(
                subscription.multicast_pattern, self.participant_id,
                self.provider_participant_id)
            if self._receiver_only:
                return  # the provider was never told of it (joynr's proxies send no stop)
        if tell_provider:
            body = self._body(SubscriptionStop(subscription.subscription_id))
            self._host.route(self._message(MessageType.SUBSCRIPTION_STOP, body))

    @property
    def subscriptions(self) -> list[Subscription]:
        return list(self._endpoint.subscriptions.values())

    async def close(self) -> None:
        """Unsubscribe everything, remove this proxy's routing entries, end its callbacks."""
        for subscription in self.subscriptions:
            await subscription.unsubscribe()
        try:
            await self._host.forget_proxy(self)
        finally:
            await self._endpoint.close()

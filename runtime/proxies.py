"""The proxy side: :class:`Proxy`, what applications call, and :class:`ProxyEndpoint`, the
participant of one proxy (what runs behind its InProcessAddress).

- ``await proxy.method(...)`` sends a request and waits for the reply until the message's
  expiry date plus the runtime's reply grace (then JoynrTimeoutError); a one-way method only
  sends (MessageNotSentError when the message cannot even be queued) and then waits while the
  way to the cluster controller is congested (flow control);
- ``proxy.attr.get()`` / ``set(value)`` / ``subscribe(on_change, qos)`` for attributes,
  ``proxy.broadcast.subscribe(callback, partitions)`` for broadcasts (multicasts: the runtime
  registers the proxy as a receiver of the multicast id pattern before it asks the provider);
- the endpoint matches replies to calls and delivers publications and multicasts to the live
  subscriptions. Synchronous callbacks run at once; async ones run inside tasks of the
  endpoint's :class:`~runtime.calls.CallRunner`, ended when the proxy is closed.

Bodies (runtime/bodies.py): a proxy writes its requests, subscription requests and stops in
its :attr:`Proxy.body_format` (msgpack for a provider of this project, JSON for one of joynr's
runtimes; its runtime chooses), and the endpoint reads replies, subscription replies,
publications and multicasts in whatever format they come (a JSON body typed by the method or
subscription it answers). A proxy subscribes to a broadcast under joynr's name of it
(``newStation`` for ``new_station``), the name every provider publishes it under.

joynr's dialect (the runtime's :attr:`ProxyHost.joynr_dialect`, for a cluster controller of
joynr's, which routes answers by the replyTo of the requests): the requests (``rq``, ``arq``,
``mrq``) to a provider that is not local carry the runtime's reply-to address and nothing else
does (the native dialect puts it on every message but one-way requests); a broadcast
subscription only registers the proxy as a multicast receiver and is complete then, without a
multicast subscription request on the wire, and its end only removes the receiver (no
subscription stop), as joynr's proxies do.

A proxy is made by its runtime (``build_proxy``), which it reaches through :class:`ProxyHost`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, cast

from runtime import joynr_json
from runtime.addresses import Address, InProcessAddress
from runtime.bodies import BodyFormat, decode_body, encode_body, format_of, schema_of
from runtime.calls import Call, CallRunner
from runtime.clock import now_ms
from runtime.errors import (
    JoynrError,
    JoynrTimeoutError,
    MessageNotSentError,
    ProviderRuntimeError,
    error_from_wire,
)
from runtime.interface import InterfaceDef, MethodDef, ValueTypeError, from_wire, to_wire
from runtime.joynr_json import reply_types
from runtime.logs import RepeatedWarnings, get_logger, peer_of
from runtime.messages import REQUEST_TYPES, Message, MessageType, new_message_id, random_id
from runtime.multicast import make_multicast_id, matches
from runtime.payloads import (
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
from runtime.router import MessageRouter
from runtime.subscribers import Subscription
from runtime.subscription_qos import AttributeSubscriptionQos

__all__ = ["AttributeHandle", "BroadcastHandle", "Proxy", "ProxyEndpoint", "ProxyHost"]

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

    router: MessageRouter
    #: the address replies to this runtime's requests come back to (None: the router's own)
    reply_to_address: Address | None
    #: seconds a caller waits for a reply beyond the request's expiry date
    reply_grace_s: float
    #: the runtime speaks joynr's dialect: replyTo and broadcast subscriptions as joynr's
    #: runtimes do (see the module docstring)
    joynr_dialect: bool

    async def flow_control(self) -> None: ...
    async def add_multicast_receiver(self, pattern: str, subscriber: str, provider: str
                                     ) -> None: ...
    async def remove_multicast_receiver(self, pattern: str, subscriber: str, provider: str
                                        ) -> None: ...
    async def forget_proxy(self, proxy: Proxy) -> None: ...


class ProxyEndpoint:
    """The participant of one proxy: replies, subscription replies, publications, multicasts."""

    def __init__(self, participant_id: str, warnings: RepeatedWarnings | None = None,
                 counters: Counter[str] | None = None) -> None:
        """``warnings``: the rate limit of the process's repeated warnings (its router's);
        ``counters``: where refused messages are counted (its router's, ``dropped-<reason>``)."""
        self.participant_id = participant_id
        self.warnings = warnings if warnings is not None else RepeatedWarnings()
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
                if subscription is not None and subscription.multicast_pattern is None:
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
                self.warnings.warning(log, "ignored", peer_of(message.origin),
                                      "proxy %s: ignored %s", self.participant_id,
                                      message.describe())
        except PayloadError as exc:
            self.counters["dropped-bad-payload"] += 1
            self.warnings.warning(log, "bad-payload", peer_of(message.origin),
                                  "proxy %s: refused %s: %s", self.participant_id,
                                  message.describe(), exc)

    def _deliver(self, subscription: Subscription, response: list[Any] | None,
                 error: dict[str, Any] | None) -> None:
        if not subscription.active:
            return
        try:
            if error is not None:
                if subscription.on_error is not None:
                    self._call(subscription.on_error, (error_from_wire(error),), subscription)
                return
            values = response or []
            if len(values) != len(subscription.types):
                raise ValueTypeError(f"{subscription.name}: {len(values)} values")
            typed = [from_wire(v, tp, subscription.name)
                     for v, tp in zip(values, subscription.types, strict=True)]
            self._call(subscription.callback, typed, subscription)
        except ValueTypeError as exc:
            self.counters["dropped-bad-publication"] += 1
            self.warnings.warning(log, "bad-publication", f"subscription {subscription.name}",
                                  "proxy %s: publication for %s refused: %s",
                                  self.participant_id, subscription.name, exc)
        except Exception:
            log.exception("proxy %s: subscription callback for %s failed", self.participant_id,
                          subscription.name)

    def _call(self, callback: Callable[..., Any], args: Sequence[Any],
              subscription: Subscription) -> None:
        """A synchronous callback runs now; an async one (or one that returns an awaitable)
        inside a task of :attr:`callbacks`."""
        if inspect.iscoroutinefunction(callback):
            self.callbacks.submit((callback, args, subscription.name))
            return
        result = callback(*args)
        if inspect.isawaitable(result):
            self.callbacks.submit((_wait_for, (result,), subscription.name))

    async def close(self) -> None:
        """Cancel the callbacks still running."""
        await self.callbacks.close()


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


_Accessor = Callable[[str, tuple[Any, ...]], Awaitable[Any]]


class AttributeHandle:
    """``proxy.<attribute>``: get, set, subscribe to changes. Made by the proxy with its own
    ways to call an accessor and to subscribe."""

    def __init__(self, name: str, call_accessor: _Accessor,
                 subscribe: Callable[..., Awaitable[Subscription]]) -> None:
        self._name = name
        self._call_accessor = call_accessor
        self._subscribe = subscribe

    async def get(self) -> Any:
        return await self._call_accessor(f"get_{self._name}", ())

    async def set(self, value: Any) -> None:
        await self._call_accessor(f"set_{self._name}", (value,))

    async def subscribe(self, on_change: Callable[[Any], Any],
                        qos: AttributeSubscriptionQos | None = None,
                        on_error: Callable[[JoynrError], Any] | None = None) -> Subscription:
        return await self._subscribe(self._name, on_change, qos, on_error)


class BroadcastHandle:
    """``proxy.<broadcast>``: subscribe (to some partitions). Made by the proxy with its own
    way to subscribe."""

    def __init__(self, name: str, subscribe: Callable[..., Awaitable[Subscription]]) -> None:
        self._name = name
        self._subscribe = subscribe

    async def subscribe(self, callback: Callable[..., Any],
                        partitions: list[str] | tuple[str, ...] = ()) -> Subscription:
        return await self._subscribe(self._name, callback, list(partitions))


class Proxy:
    """Calls a provider: ``await proxy.method(...)``, ``proxy.attr.get()/set()/subscribe()``,
    ``proxy.broadcast.subscribe(callback, partitions)``. Built by ``JoynrRuntime.build_proxy``.

    The interface's members are found by name; the proxy's own public names (``close``,
    ``subscriptions``, ``participant_id``, ``provider_participant_id``, ``ttl_ms``,
    ``body_format``, ``provider_is_local``, ``with_ttl``) come first.
    """

    def __init__(self, host: ProxyHost, definition: InterfaceDef, provider_id: str,
                 endpoint: ProxyEndpoint, ttl_ms: int, *,
                 body_format: BodyFormat = BodyFormat.MSGPACK,
                 provider_is_local: bool = False,
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
        #: custom headers of every message this proxy sends (joynr prefixes them c- on its
        #: wire); answers echo them
        self.custom_headers: dict[str, str] = dict(custom_headers or {})
        joynr = host.joynr_dialect
        self._joynr = joynr
        self._reply_to_kinds = (_NATIVE_REPLY_TO if not joynr
                                else frozenset() if provider_is_local else _JOYNR_REPLY_TO)

    def __getattr__(self, name: str) -> Any:
        definition = self.__dict__.get("_definition")
        if definition is None:
            raise AttributeError(name)
        method = definition.methods.get(name)
        if method is not None:
            async def call(*args: Any) -> Any:
                return await self._invoke(method, args)
            call.__name__ = name
            self.__dict__[name] = call  # found directly from now on
            return call
        if name in definition.attributes:
            return AttributeHandle(name, self._call_accessor, self._subscribe_attribute)
        if name in definition.broadcasts:
            return BroadcastHandle(name, self._subscribe_broadcast)
        raise AttributeError(f"{definition.name} has no method, attribute or broadcast {name}")

    def with_ttl(self, ttl_ms: int) -> Proxy:
        """This proxy with another time to live for its calls (same provider, same endpoint):
        for one call with a deadline of its own, without changing :attr:`ttl_ms` for others."""
        return Proxy(self._host, self._definition, self.provider_participant_id, self._endpoint,
                     ttl_ms, body_format=self.body_format,
                     provider_is_local=self.provider_is_local,
                     custom_headers=self.custom_headers)

    def with_headers(self, headers: Mapping[str, str]) -> Proxy:
        """This proxy with further custom headers on the messages it sends (same provider,
        same endpoint); e.g. ``gb``, the backend a GCD call is for."""
        return Proxy(self._host, self._definition, self.provider_participant_id, self._endpoint,
                     self.ttl_ms, body_format=self.body_format,
                     provider_is_local=self.provider_is_local,
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
        params = [to_wire(a) for a in args]
        if method.one_way:
            body = self._body(OneWayRequest(method.name, params, method.param_datatypes))
            message = self._message(_ONE_WAY, body)
            if not self._host.router.route(message):
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
        self._host.router.route(message)
        deadline_s = (message.expiry_date_ms - now_ms()) / 1000 + self._host.reply_grace_s
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
                                   qos: AttributeSubscriptionQos | None,
                                   on_error: Callable[[JoynrError], Any] | None
                                   ) -> Subscription:
        attr = self._definition.attributes[name]
        qos = qos or AttributeSubscriptionQos()
        sid = random_id()
        subscription = Subscription(sid, name, callback, (attr.type,), self._unsubscribe,
                                    on_error=on_error)
        self._endpoint.subscriptions[sid] = subscription
        body = self._body(SubscriptionRequest(sid, name, qos.to_wire()))
        await self._confirm(subscription, self._message(MessageType.SUBSCRIPTION_REQUEST, body))
        return subscription

    async def _subscribe_broadcast(self, name: str, callback: Callable[..., Any],
                                   partitions: list[str]) -> Subscription:
        broadcast = self._definition.broadcasts[name]
        # every provider (joynr's and this project's) publishes a broadcast under joynr's name
        # of it
        spelled = schema_of(self._definition).joynr_name(name)
        pattern = make_multicast_id(self.provider_participant_id, spelled, partitions,
                                    for_subscription=True)
        sid = random_id()
        subscription = Subscription(sid, name, callback,
                                    tuple(tp for _, tp in broadcast.outputs), self._unsubscribe,
                                    multicast_pattern=pattern)
        self._endpoint.subscriptions[sid] = subscription
        try:
            await self._host.add_multicast_receiver(pattern, self.participant_id,
                                                    self.provider_participant_id)
        except BaseException:
            subscription.active = False
            self._endpoint.subscriptions.pop(sid, None)
            with contextlib.suppress(JoynrError):  # what the runtime noted of it
                await self._host.remove_multicast_receiver(pattern, self.participant_id,
                                                           self.provider_participant_id)
            raise
        if self._joynr:
            # joynr's proxies send no multicast subscription request: the receiver is all
            return subscription
        body = self._body(MulticastSubscriptionRequest(sid, name, pattern, {}, partitions))
        await self._confirm(subscription,
                            self._message(MessageType.MULTICAST_SUBSCRIPTION_REQUEST, body))
        return subscription

    async def _confirm(self, subscription: Subscription, message: Message) -> None:
        try:
            reply = await self._await_answer(self._endpoint.subscription_replies,
                                             subscription.subscription_id, message,
                                             f"subscription to {subscription.name}")
            if reply.error is not None:
                raise error_from_wire(reply.error)
        except BaseException:
            subscription.active = False
            await self._end(subscription, tell_provider=False)
            raise

    async def _unsubscribe(self, subscription: Subscription) -> None:
        await self._end(subscription, tell_provider=True)

    async def _end(self, subscription: Subscription, *, tell_provider: bool) -> None:
        self._endpoint.subscriptions.pop(subscription.subscription_id, None)
        if subscription.multicast_pattern is not None:
            await self._host.remove_multicast_receiver(
                subscription.multicast_pattern, self.participant_id,
                self.provider_participant_id)
            if self._joynr:
                return  # the provider was never told of it (joynr's proxies send no stop)
        if tell_provider:
            body = self._body(SubscriptionStop(subscription.subscription_id))
            self._host.router.route(self._message(MessageType.SUBSCRIPTION_STOP, body))

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

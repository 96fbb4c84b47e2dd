"""Providers and proxies at the message level: what runs behind an InProcessAddress.

- :class:`Provider` is the base class of provider implementations; :class:`ProviderSkeleton`
  turns requests, one-way calls and subscription requests into calls on it, and its attribute
  changes and broadcasts into publications and multicasts.
- :class:`ProxyEndpoint` is the participant of one proxy: it matches replies to calls and
  delivers publications and multicasts to subscriptions. :class:`Proxy` is what applications
  call.

Input from the network is hostile: a request with a body that does not decode, an unknown
method or parameters of the wrong types is answered with a MethodInvocation error; nothing
raises out of ``receive``.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import types
import uuid
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from runtime.addresses import Address, InProcessAddress
from runtime.clock import now_ms
from runtime.errors import (
    ApplicationError,
    JoynrError,
    JoynrTimeoutError,
    MessageNotSentError,
    MethodInvocationError,
    ProviderRuntimeError,
    error_from_wire,
)
from runtime.interface import (
    _PLAIN,
    InterfaceDef,
    MethodDef,
    ValueTypeError,
    from_wire,
    interface_def,
    to_wire,
)
from runtime.messages import REQUEST_TYPES, Message, MessageType, new_message_id
from runtime.multicast import make_multicast_id, matches
from runtime.payloads import (
    MulticastPublication,
    MulticastSubscriptionRequest,
    OneWayRequest,
    PayloadError,
    Publication,
    Reply,
    Request,
    SubscriptionReply,
    SubscriptionRequest,
    SubscriptionStop,
    answer_to,
    decode_payload,
    make_error_answer,
)
from runtime.rules import Refusal, admit_caller

if TYPE_CHECKING:
    from runtime.joynr_runtime import JoynrRuntime

__all__ = [
    "AttributeSubscriptionQos",
    "Provider",
    "ProviderSkeleton",
    "Proxy",
    "ProxyEndpoint",
    "Subscription",
    "current_origin",
]

log = logging.getLogger(__name__)

_origin: contextvars.ContextVar[Address | None] = contextvars.ContextVar("joynr_origin",
                                                                        default=None)


def current_origin() -> Address | None:
    """Inside a provider method: the address the request arrived from (None: this process)."""
    return _origin.get()


@dataclass
class AttributeSubscriptionQos:
    """On-change subscription: publications at most every ``min_interval_ms``, each living
    ``publication_ttl_ms``; the subscription ends at ``expiry_date_ms`` (0: never)."""

    min_interval_ms: int = 0
    publication_ttl_ms: int = 10_000
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


# ====================================================================== provider side


class Provider:
    """Base class of provider implementations.

    Subclass with ``interface=``: ``class RadioProvider(Provider, interface=Radio)``, implement
    the interface's methods as ``async def``. Attributes are kept here: ``set_attribute`` stores
    a value and publishes it to on-change subscribers; define ``get_<name>`` / ``set_<name>``
    to compute or check values yourself. ``fire`` sends a broadcast.
    """

    interface: type
    #: False: only participants of this cluster controller (in-process, websocket) may call it;
    #: calls that arrive over MQTT are refused (the CC's own Routing and Discovery providers)
    serves_remote_callers: ClassVar[bool] = True

    def __init_subclass__(cls, *, interface: type | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if interface is not None:
            cls.interface = interface

    def __init__(self, **initial_attributes: Any) -> None:
        self._definition = interface_def(type(self).interface)
        unknown = set(initial_attributes) - set(self._definition.attributes)
        if unknown:
            raise TypeError(f"unknown attributes {sorted(unknown)}")
        self._attribute_values: dict[str, Any] = dict(initial_attributes)
        self._skeletons: list[ProviderSkeleton] = []

    def get_attribute(self, name: str) -> Any:
        if name not in self._attribute_values:
            raise ProviderRuntimeError(f"attribute {name} has no value yet")
        return self._attribute_values[name]

    def set_attribute(self, name: str, value: Any) -> None:
        """Store an attribute value and publish it to its on-change subscribers."""
        if name not in self._definition.attributes:
            raise AttributeError(f"{self._definition.name} has no attribute {name}")
        self._attribute_values[name] = value
        for skeleton in self._skeletons:
            skeleton.attribute_changed(name, value)

    def fire(self, broadcast_name: str, *values: Any, partitions: list[str] | tuple[str, ...] = (),
             ttl_ms: int = 10_000) -> None:
        """Send a broadcast to every subscriber whose partitions match."""
        definition = self._definition.broadcasts.get(broadcast_name)
        if definition is None:
            raise AttributeError(f"{self._definition.name} has no broadcast {broadcast_name}")
        if len(values) != len(definition.outputs):
            raise TypeError(f"broadcast {broadcast_name} takes {len(definition.outputs)} values")
        if not self._skeletons:
            raise RuntimeError("the provider is not registered")
        for skeleton in self._skeletons:
            skeleton.fire(broadcast_name, list(values), list(partitions), ttl_ms)


_Bound = tuple[MethodDef, Callable[..., Any]]


@types.coroutine
def _resume(coro: Coroutine[Any, Any, None], awaited: Any) -> Generator[Any, Any, None]:
    """Drive an already started coroutine under a Task: pass on what it awaits (the Task
    waits for it), feed back results and exceptions (cancellation included)."""
    while True:
        try:
            value = yield awaited
        except BaseException as exc:
            try:
                awaited = coro.throw(exc)
            except StopIteration:
                return
        else:
            try:
                awaited = coro.send(value)
            except StopIteration:
                return


@dataclass
class _AttributeSubscription:
    subscription_id: str
    subscriber: str
    attribute: str
    qos: AttributeSubscriptionQos
    last_sent: float = -1e18
    deferred: asyncio.TimerHandle | None = None


class ProviderSkeleton:
    """The participant of one registered provider."""

    def __init__(self, runtime: JoynrRuntime, provider: Provider, participant_id: str) -> None:
        self.runtime = runtime
        self.provider = provider
        self.participant_id = participant_id
        self.definition: InterfaceDef = provider._definition
        self.address = InProcessAddress(self)
        self._subscriptions: dict[str, _AttributeSubscription] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._methods = self._method_table()

    def _method_table(self) -> dict[tuple[str, tuple[str, ...]], _Bound]:
        table: dict[tuple[str, tuple[str, ...]], _Bound] = {}
        provider = self.provider
        for name, method in self.definition.methods.items():
            impl = getattr(provider, name, None)
            if impl is None or not inspect.iscoroutinefunction(impl):
                raise TypeError(f"{type(provider).__name__} does not implement async {name}()")
            table[(method.name, tuple(method.param_datatypes))] = (method, impl)
        for accessor in self.definition.accessors.values():
            kind, name = accessor.name.split("_", 1)
            impl = self._getter(name) if kind == "get" else self._setter(name)
            table[(accessor.name, tuple(accessor.param_datatypes))] = (accessor, impl)
        return table

    def _getter(self, name: str) -> Callable[[], Any]:
        custom = getattr(self.provider, f"get_{name}", None)
        if custom is not None and inspect.iscoroutinefunction(custom):
            return custom

        async def get() -> Any:
            return self.provider.get_attribute(name)
        return get

    def _setter(self, name: str) -> Callable[[Any], Any]:
        custom = getattr(self.provider, f"set_{name}", None)
        if custom is not None and inspect.iscoroutinefunction(custom):
            return custom

        async def set_(value: Any) -> None:
            self.provider.set_attribute(name, value)
        return set_

    # ------------------------------------------------------------------ incoming

    def receive(self, message: Message) -> None:
        kind = message.type
        refusal = admit_caller(message.origin, self.provider.serves_remote_callers)
        if refusal is not None:
            self._refuse_remote(message, refusal)
        elif kind is MessageType.ONE_WAY:
            self._one_way(message)
        elif kind is MessageType.REQUEST:
            self._spawn(self._invoke(message), contextvars.copy_context(), "request")
        elif kind is MessageType.SUBSCRIPTION_REQUEST:
            self._subscribe_attribute(message)
        elif kind is MessageType.MULTICAST_SUBSCRIPTION_REQUEST:
            self._ack_multicast_subscription(message)
        elif kind is MessageType.BROADCAST_SUBSCRIPTION_REQUEST:
            self._answer_subscription(message, None, MethodInvocationError(
                "selective broadcasts are not supported; subscribe to the multicast"))
        elif kind is MessageType.SUBSCRIPTION_STOP:
            self._stop_subscription(message)
        else:
            log.warning("provider %s: ignored %s", self.participant_id, message.describe())

    def _refuse_remote(self, message: Message, refusal: Refusal) -> None:
        log.warning("provider %s %s: refused %s from %r", self.participant_id, refusal.detail,
                    message.describe(), message.origin)
        error = ProviderRuntimeError(
            f"{self.definition.name} of this cluster controller serves its local participants "
            "only")
        if message.type in REQUEST_TYPES:
            try:
                answer = make_error_answer(message, error, expiry_date_ms=message.expiry_date_ms)
            except PayloadError:
                return
            self.runtime.router.route(answer)

    def _spawn(self, coro: Coroutine[Any, Any, Any], context: contextvars.Context,
               what: str) -> None:
        """Run a coroutine eagerly in ``context``; it becomes a Task only if it suspends
        (most calls complete at once, and a Task per call costs as much as the call)."""
        try:
            awaited = context.run(coro.send, None)
        except StopIteration:
            return
        except Exception:
            log.exception("provider %s: %s failed", self.participant_id, what)
            return
        task = asyncio.get_running_loop().create_task(_resume(coro, awaited), context=context)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("provider %s: a call failed", self.participant_id,
                      exc_info=task.exception())

    def _one_way(self, message: Message) -> None:
        """Fire and forget: decode and check here, then run the provider's method itself."""
        try:
            payload = decode_payload(OneWayRequest, message.body)
            _, impl, args = self._prepare(payload)
        except (PayloadError, JoynrError) as exc:
            log.warning("provider %s: one-way call %s refused: %s", self.participant_id,
                        message.id, exc)
            return
        context = contextvars.copy_context()
        context.run(_origin.set, message.origin)
        self._spawn(impl(*args), context, f"one-way {payload.method_name}")

    async def _invoke(self, message: Message) -> None:
        try:
            payload = decode_payload(Request, message.body)
        except PayloadError as exc:
            log.warning("provider %s: bad request %s: %s", self.participant_id, message.id, exc)
            return
        try:
            method, impl, args = self._prepare(payload)
            reply = Reply(payload.request_reply_id,
                          response=await self._call(method, impl, args, message.origin))
        except JoynrError as exc:
            reply = Reply(payload.request_reply_id, error=exc.to_wire())
        self.runtime.router.route(answer_to(message, reply))

    def _prepare(self, payload: Request | OneWayRequest
                 ) -> tuple[MethodDef, Callable[..., Any], list[Any]]:
        """The method and its typed arguments; MethodInvocationError if they do not fit."""
        found = self._methods.get((payload.method_name, tuple(payload.param_datatypes)))
        if found is None:
            raise MethodInvocationError(
                f"{self.definition.name} v{self.definition.version[0]}.{self.definition.version[1]}"
                f" has no method {payload.method_name}({', '.join(payload.param_datatypes)})")
        method, impl = found
        params = payload.params
        if len(params) != len(method.params):
            raise MethodInvocationError(f"{method.name} takes {len(method.params)} parameters")
        args = []
        for value, (name, tp) in zip(params, method.params, strict=True):
            if type(value) is tp and tp in _PLAIN:
                args.append(value)  # the common case, without building a label
                continue
            try:
                args.append(from_wire(value, tp, f"{method.name}({name})"))
            except ValueTypeError as exc:
                raise MethodInvocationError(f"wrong parameter: {exc}") from None
        return method, impl, args

    async def _call(self, method: MethodDef, impl: Callable[..., Any], args: list[Any],
                    origin: Address | None) -> list[Any]:
        token = _origin.set(origin)
        try:
            result = await impl(*args)
        except ApplicationError as exc:
            if method.error_enum is None or exc.error not in method.error_enum.__members__:
                raise ProviderRuntimeError(f"{method.name} raised an unmodelled error "
                                           f"{exc.error}") from None
            raise
        except JoynrError:
            raise
        except Exception as exc:
            log.exception("provider %s: %s failed", self.participant_id, method.name)
            raise ProviderRuntimeError(f"{method.name} failed: {type(exc).__name__}: {exc}"
                                       ) from None
        finally:
            _origin.reset(token)
        if method.returns is type(None) or method.returns is None:
            return []
        return [to_wire(result)]

    # ------------------------------------------------------------------ subscriptions

    def _answer_subscription(self, message: Message, subscription_id: str | None,
                             error: JoynrError | None) -> None:
        if subscription_id is None:
            try:
                subscription_id = decode_payload(SubscriptionRequest, message.body).subscription_id
            except PayloadError:
                return
        reply = SubscriptionReply(subscription_id=subscription_id,
                                  error=None if error is None else error.to_wire())
        self.runtime.router.route(answer_to(message, reply))

    def _subscribe_attribute(self, message: Message) -> None:
        try:
            request = decode_payload(SubscriptionRequest, message.body)
            qos = AttributeSubscriptionQos.from_wire(request.qos)
        except PayloadError as exc:
            log.warning("provider %s: bad subscription request %s: %s", self.participant_id,
                        message.id, exc)
            return
        attr = self.definition.attributes.get(request.subscribe_to_name)
        if attr is None or not attr.notifiable:
            self._answer_subscription(message, request.subscription_id, MethodInvocationError(
                f"no notifiable attribute {request.subscribe_to_name}"))
            return
        old = self._subscriptions.get(request.subscription_id)
        if old is not None and old.subscriber != message.sender:
            self._answer_subscription(message, request.subscription_id, ProviderRuntimeError(
                "subscription id in use"))
            return
        subscription = _AttributeSubscription(request.subscription_id, message.sender,
                                              attr.name, qos)
        self._subscriptions[subscription.subscription_id] = subscription
        self._answer_subscription(message, request.subscription_id, None)
        if attr.name in self.provider._attribute_values:
            self._publish(subscription, self.provider._attribute_values[attr.name])

    def _ack_multicast_subscription(self, message: Message) -> None:
        try:
            request = decode_payload(MulticastSubscriptionRequest, message.body)
        except PayloadError as exc:
            log.warning("provider %s: bad multicast subscription %s: %s", self.participant_id,
                        message.id, exc)
            return
        error = None
        if request.subscribe_to_name not in self.definition.broadcasts:
            error = MethodInvocationError(f"no broadcast {request.subscribe_to_name}")
        self._answer_subscription(message, request.subscription_id, error)

    def _stop_subscription(self, message: Message) -> None:
        try:
            stop = decode_payload(SubscriptionStop, message.body)
        except PayloadError:
            return
        subscription = self._subscriptions.get(stop.subscription_id)
        if subscription is not None and subscription.subscriber == message.sender:
            self._drop_subscription(subscription)

    def _drop_subscription(self, subscription: _AttributeSubscription) -> None:
        self._subscriptions.pop(subscription.subscription_id, None)
        if subscription.deferred is not None:
            subscription.deferred.cancel()

    def attribute_changed(self, name: str, value: Any) -> None:
        for subscription in list(self._subscriptions.values()):
            if subscription.attribute == name:
                self._publish(subscription, value)

    def _publish(self, subscription: _AttributeSubscription, value: Any) -> None:
        qos = subscription.qos
        if qos.expiry_date_ms and now_ms() > qos.expiry_date_ms:
            self._drop_subscription(subscription)
            return
        loop = asyncio.get_running_loop()
        wait = subscription.last_sent + qos.min_interval_ms / 1000 - loop.time()
        if wait > 0:  # too soon: send the latest value when the minimum interval has passed
            if subscription.deferred is not None:
                subscription.deferred.cancel()
            subscription.deferred = loop.call_later(
                wait, lambda: self._publish(subscription, self.provider._attribute_values.get(
                    subscription.attribute, value)))
            return
        subscription.deferred = None
        subscription.last_sent = loop.time()
        publication = Publication(subscription_id=subscription.subscription_id,
                                  response=[to_wire(value)])
        self.runtime.router.route(Message(
            type=MessageType.PUBLICATION, sender=self.participant_id,
            recipient=subscription.subscriber,
            expiry_date_ms=now_ms() + qos.publication_ttl_ms, body=publication.to_body(),
        ))

    def fire(self, name: str, values: list[Any], partitions: list[str], ttl_ms: int) -> None:
        multicast_id = make_multicast_id(self.participant_id, name, partitions)
        body = MulticastPublication(multicast_id=multicast_id,
                                    response=[to_wire(v) for v in values]).to_body()
        self.runtime.router.route(Message(
            type=MessageType.MULTICAST, sender=self.participant_id, recipient=multicast_id,
            expiry_date_ms=now_ms() + ttl_ms, body=body,
        ))

    def close(self) -> None:
        for subscription in list(self._subscriptions.values()):
            self._drop_subscription(subscription)
        for task in self._tasks:
            task.cancel()


# ====================================================================== proxy side


@dataclass
class Subscription:
    """A live subscription of a proxy; ``await unsubscribe()`` ends it."""

    subscription_id: str
    proxy: Proxy
    name: str
    callback: Callable[..., Any]
    types: tuple[Any, ...]
    multicast_pattern: str | None = None
    on_error: Callable[[JoynrError], Any] | None = None
    active: bool = True

    async def unsubscribe(self) -> None:
        if self.active:
            self.active = False
            await self.proxy._unsubscribe(self)


class ProxyEndpoint:
    """The participant of one proxy: replies, subscription replies, publications, multicasts."""

    def __init__(self, participant_id: str) -> None:
        self.participant_id = participant_id
        self.address = InProcessAddress(self)
        self.replies: dict[str, asyncio.Future[Reply]] = {}
        self.subscription_replies: dict[str, asyncio.Future[SubscriptionReply]] = {}
        self.subscriptions: dict[str, Subscription] = {}
        self._callback_tasks: set[asyncio.Future[Any]] = set()

    def receive(self, message: Message) -> None:
        try:
            if message.type is MessageType.REPLY:
                reply = decode_payload(Reply, message.body)
                future = self.replies.pop(reply.request_reply_id, None)
                if future is not None and not future.done():
                    future.set_result(reply)
            elif message.type is MessageType.SUBSCRIPTION_REPLY:
                sreply = decode_payload(SubscriptionReply, message.body)
                sfuture = self.subscription_replies.pop(sreply.subscription_id, None)
                if sfuture is not None and not sfuture.done():
                    sfuture.set_result(sreply)
            elif message.type is MessageType.PUBLICATION:
                publication = decode_payload(Publication, message.body)
                subscription = self.subscriptions.get(publication.subscription_id)
                if subscription is not None and subscription.multicast_pattern is None:
                    self._deliver(subscription, publication.response, publication.error)
            elif message.type is MessageType.MULTICAST:
                multicast = decode_payload(MulticastPublication, message.body)
                for subscription in list(self.subscriptions.values()):
                    pattern = subscription.multicast_pattern
                    if pattern is not None and matches(pattern, message.recipient):
                        self._deliver(subscription, multicast.response, None)
            else:
                log.warning("proxy %s: ignored %s", self.participant_id, message.describe())
        except PayloadError as exc:
            log.warning("proxy %s: refused %s: %s", self.participant_id, message.describe(), exc)

    def _deliver(self, subscription: Subscription, response: list[Any] | None,
                 error: dict[str, Any] | None) -> None:
        if not subscription.active:
            return
        try:
            if error is not None:
                if subscription.on_error is not None:
                    subscription.on_error(error_from_wire(error))
                return
            values = response or []
            if len(values) != len(subscription.types):
                raise ValueTypeError(f"{subscription.name}: {len(values)} values")
            typed = [from_wire(v, tp, subscription.name)
                     for v, tp in zip(values, subscription.types, strict=True)]
            result = subscription.callback(*typed)
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._callback_tasks.add(task)
                task.add_done_callback(self._callback_tasks.discard)
        except ValueTypeError as exc:
            log.warning("proxy %s: publication for %s refused: %s", self.participant_id,
                        subscription.name, exc)
        except Exception:
            log.exception("proxy %s: subscription callback for %s failed", self.participant_id,
                          subscription.name)


class _AttributeHandle:
    def __init__(self, proxy: Proxy, name: str) -> None:
        self._proxy, self._name = proxy, name

    async def get(self) -> Any:
        return await self._proxy._call_accessor(f"get_{self._name}", ())

    async def set(self, value: Any) -> None:
        await self._proxy._call_accessor(f"set_{self._name}", (value,))

    async def subscribe(self, on_change: Callable[[Any], Any],
                        qos: AttributeSubscriptionQos | None = None,
                        on_error: Callable[[JoynrError], Any] | None = None) -> Subscription:
        return await self._proxy._subscribe_attribute(self._name, on_change, qos, on_error)


class _BroadcastHandle:
    def __init__(self, proxy: Proxy, name: str) -> None:
        self._proxy, self._name = proxy, name

    async def subscribe(self, callback: Callable[..., Any],
                        partitions: list[str] | tuple[str, ...] = ()) -> Subscription:
        return await self._proxy._subscribe_multicast(self._name, callback, list(partitions))


class Proxy:
    """Calls a provider: ``await proxy.method(...)``, ``proxy.attr.get()/set()/subscribe()``,
    ``proxy.broadcast.subscribe(callback, partitions)``. Built by ``JoynrRuntime.build_proxy``.
    """

    def __init__(self, runtime: JoynrRuntime, definition: InterfaceDef, provider_id: str,
                 endpoint: ProxyEndpoint, ttl_ms: int) -> None:
        self._runtime = runtime
        self._definition = definition
        self.provider_participant_id = provider_id
        self.participant_id = endpoint.participant_id
        self._endpoint = endpoint
        self.ttl_ms = ttl_ms

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
            return _AttributeHandle(self, name)
        if name in definition.broadcasts:
            return _BroadcastHandle(self, name)
        raise AttributeError(f"{definition.name} has no method, attribute or broadcast {name}")

    async def _call_accessor(self, name: str, args: tuple[Any, ...]) -> Any:
        method = self._definition.accessors.get(name)
        if method is None:
            raise AttributeError(f"{name} is not available (read-only attribute?)")
        return await self._invoke(method, args)

    def _message(self, kind: MessageType, body: bytes) -> Message:
        return Message(
            kind, self.participant_id, self.provider_participant_id, now_ms() + self.ttl_ms,
            body, new_message_id(),
            None if kind is MessageType.ONE_WAY else self._runtime.reply_to_address,
        )

    async def _invoke(self, method: MethodDef, args: tuple[Any, ...]) -> Any:
        if len(args) != len(method.params):
            raise TypeError(f"{method.name}() takes {len(method.params)} arguments")
        params = [to_wire(a) for a in args]
        if method.one_way:
            body = OneWayRequest(method.name, params, method.param_datatypes).to_body()
            message = self._message(MessageType.ONE_WAY, body)
            if not self._runtime.router.route(message):
                raise MessageNotSentError(
                    f"one-way {method.name}() to {self.provider_participant_id} not sent "
                    f"(message {message.id}: queue full or expired; see the log)")
            await self._runtime.flow_control()
            return None
        rid = uuid.uuid4().hex
        body = Request(rid, method.name, params, method.param_datatypes).to_body()
        reply = await self._await_answer(self._endpoint.replies, rid,
                                         self._message(MessageType.REQUEST, body),
                                         f"{method.name}()")
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
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        waiting[key] = future
        self._runtime.router.route(message)
        deadline_s = (message.expiry_date_ms - now_ms()) / 1000 + self._runtime.reply_grace_s
        try:
            return await asyncio.wait_for(future, max(deadline_s, 0.001))
        except TimeoutError:
            raise JoynrTimeoutError(
                f"no answer to {what} from {self.provider_participant_id} within "
                f"{self.ttl_ms} ms") from None
        finally:
            waiting.pop(key, None)

    async def _subscribe_attribute(self, name: str, callback: Callable[[Any], Any],
                                   qos: AttributeSubscriptionQos | None,
                                   on_error: Callable[[JoynrError], Any] | None) -> Subscription:
        attr = self._definition.attributes[name]
        qos = qos or AttributeSubscriptionQos()
        sid = uuid.uuid4().hex
        subscription = Subscription(sid, self, name, callback, (attr.type,), on_error=on_error)
        self._endpoint.subscriptions[sid] = subscription
        body = SubscriptionRequest(sid, name, qos.to_wire()).to_body()
        await self._confirm(subscription, self._message(MessageType.SUBSCRIPTION_REQUEST, body))
        return subscription

    async def _subscribe_multicast(self, name: str, callback: Callable[..., Any],
                                   partitions: list[str]) -> Subscription:
        broadcast = self._definition.broadcasts[name]
        pattern = make_multicast_id(self.provider_participant_id, name, partitions,
                                    for_subscription=True)
        sid = uuid.uuid4().hex
        subscription = Subscription(sid, self, name, callback,
                                    tuple(tp for _, tp in broadcast.outputs),
                                    multicast_pattern=pattern)
        self._endpoint.subscriptions[sid] = subscription
        await self._runtime._add_multicast_receiver(pattern, self.participant_id,
                                                    self.provider_participant_id)
        body = MulticastSubscriptionRequest(sid, name, pattern, {}, partitions).to_body()
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
            await self._unsubscribe(subscription, tell_provider=False)
            raise

    async def _unsubscribe(self, subscription: Subscription, *, tell_provider: bool = True
                           ) -> None:
        self._endpoint.subscriptions.pop(subscription.subscription_id, None)
        if subscription.multicast_pattern is not None:
            await self._runtime._remove_multicast_receiver(
                subscription.multicast_pattern, self.participant_id,
                self.provider_participant_id)
        if tell_provider:
            body = SubscriptionStop(subscription.subscription_id).to_body()
            self._runtime.router.route(self._message(MessageType.SUBSCRIPTION_STOP, body))

    @property
    def subscriptions(self) -> list[Subscription]:
        return list(self._endpoint.subscriptions.values())

    async def close(self) -> None:
        """Unsubscribe everything and remove this proxy's routing entries."""
        for subscription in self.subscriptions:
            await subscription.unsubscribe()
        await self._runtime._forget_proxy(self)

"""The provider side: :class:`Provider`, what applications subclass, and
:class:`ProviderSkeleton`, the participant of one registered provider (what runs behind its
InProcessAddress).

The skeleton turns messages into calls on the provider and the provider's attribute changes and
broadcasts into publications and multicasts:

- a request or a one-way call runs the provider's method (an attribute's get and set are
  methods too) inside a task, as asyncio code expects (``asyncio.timeout``,
  ``asyncio.current_task()``); calls share tasks through a :class:`~programming.calls.CallRunner`
  and never wait behind one another. A request is answered with the result or the error (a
  method with several out arguments, ``@outputs``, returns their tuple: the reply carries
  them in order); one-way calls are not answered;
- inside a provider method, :func:`current_origin` tells where the call arrived from;
- attribute subscriptions (on change, on change with keep-alive, periodic) and selective
  broadcast subscriptions are kept by a :class:`~programming.subscriptions.SubscriptionPublisher`
  (:attr:`ProviderSkeleton.publisher`; its module docstring has the rules); the provider's
  ``get_<name>`` calls of periodic and keep-alive publications and its broadcast filters run
  inside the call runner, as its methods do. When the skeleton closes (the provider is
  unregistered, the runtime stops), each live subscription gets an error publication carrying
  a SubscriptionError and ends;
- a non-selective broadcast is a multicast (:meth:`ProviderSkeleton.fire`); its subscription
  requests (``mrq``) are only acknowledged (refused with a SubscriptionError for a broadcast
  that is unknown or selective); a selective one is published to each subscriber whose filter
  parameters the provider's filters let through (:meth:`Provider.add_broadcast_filter`);
- a provider may give a method a *wire-form twin* (:func:`wire_form_of`): calls that arrive
  as messages run the twin, which returns the answer already in its wire form, so the typed
  result is neither built nor converted (a directory answering from its rows); direct
  Python calls of the method are unchanged;
- on this project's msgpack wire a method is also found by its joynr name (``addToAll`` for
  ``add_to_all``), and a provider may serve a form an earlier declaration of its interface had
  (:func:`earlier_form`), so that runtimes of earlier versions keep working;
- a provider that does not serve remote callers (the cluster controller's own Routing and
  Discovery providers) refuses calls that arrive over MQTT: requests get a ProviderRuntime
  error, everything else is dropped (logged).

Bodies come in either format (runtime/bodies.py): every request, one-way call, subscription
request and stop is read in its own format (a JSON one with the interface's joynr schema, which
picks the overload by joynr's method name and parameter datatypes), and every answer is written
in the format of its request. Multicasts (broadcasts) are written in the skeleton's
``multicast_body`` format (JSON unless the runtime says otherwise: their receivers may be
joynr's runtimes), under joynr's name of the broadcast (``newStation`` for ``new_station``).

Input from the network is hostile: a request with a body that does not decode, an unknown
method or parameters of the wrong types is answered with a MethodInvocation error; a provider
method that raises something other than a JoynrError is answered with a ProviderRuntime error
(an ApplicationError only if the method declares that error); a subscription request that
does not decode is refused as programming/subscriptions.py says; nothing raises out of
:meth:`ProviderSkeleton.receive`.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from pyjoynr.programming.calls import Call, CallRunner
from pyjoynr.programming.subscriptions import (
    BroadcastFilter,
    SubscriptionPublisher,
    answer_subscription,
)
from pyjoynr.runtime.addresses import Address, InProcessAddress
from pyjoynr.runtime.bodies import (
    BodyFormat,
    decode_body,
    encode_body,
    format_of,
    make_error_answer,
    schema_of,
)
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import (
    ApplicationError,
    JoynrError,
    MethodInvocationError,
    ProviderRuntimeError,
    SubscriptionError,
)
from pyjoynr.runtime.interface import (
    EXACT_TYPES,
    InterfaceDef,
    MethodDef,
    ValueTypeError,
    from_wire,
    interface_def,
    member_joynr_name,
    to_wire,
    widened_datatype,
)
from pyjoynr.runtime.joynr_json import JoynrSchema, reply_types
from pyjoynr.runtime.logs import get_logger, peer_of
from pyjoynr.runtime.messages import REQUEST_TYPES, Message, MessageType
from pyjoynr.runtime.multicast import make_multicast_id
from pyjoynr.runtime.payloads import (
    MulticastPublication,
    MulticastSubscriptionRequest,
    OneWayRequest,
    PayloadError,
    Reply,
    Request,
    answer_to,
)
from pyjoynr.runtime.rules import Refusal, admit_caller
from pyjoynr.runtime.telemetry import Telemetry

__all__ = ["Provider", "ProviderSkeleton", "current_creator", "current_deadline_ms",
           "current_origin", "current_request",
           "earlier_form", "wire_form_of"]

log = get_logger(__name__)

# enum members as module constants for the per-message paths (cheaper to look up in 3.11)
_ONE_WAY, _REQUEST = MessageType.ONE_WAY, MessageType.REQUEST
_MSGPACK, _JSON = BodyFormat.MSGPACK, BodyFormat.JSON

_origin: contextvars.ContextVar[Address | None] = contextvars.ContextVar("joynr_origin",
                                                                        default=None)


def current_origin() -> Address | None:
    """Inside a provider method: the address the request arrived from (None: this process)."""
    return _origin.get()


_request: contextvars.ContextVar[Message | None] = contextvars.ContextVar("joynr_request",
                                                                          default=None)


def current_request() -> Message | None:
    """Inside a provider method: the request or one-way request it serves (None: a direct
    call)."""
    return _request.get()


def current_creator() -> str | None:
    """Inside a provider method: the user id the request came from, as the router's way in
    named it (runtime.messages ``Message.creator``: a client certificate's CN, a Unix peer's
    user, a configured name, "" for none); None: this process, or a direct call."""
    request = _request.get()
    return None if request is None else request.creator


_deadline: contextvars.ContextVar[int | None] = contextvars.ContextVar("joynr_deadline",
                                                                      default=None)


def current_deadline_ms() -> int | None:
    """Inside a provider method: the expiry date (epoch ms) of the request it answers; an
    answer sent after it is dropped. None outside a request (e.g. a direct call)."""
    return _deadline.get()


F = TypeVar("F", bound=Callable[..., Any])

#: the attribute a wire-form twin carries: the Python name of the method it stands in for
_TWIN_OF = "__joynr_wire_form_of__"


def wire_form_of(method_name: str) -> Callable[[F], F]:
    """Mark an ``async def`` of a provider as the wire-form twin of its interface method
    ``method_name`` (the Python name, e.g. ``lookup_in_backends``).

    The twin takes the method's typed arguments and must return exactly what
    :func:`~runtime.interface.to_wire` makes of the method's result (dicts, lists, str, int,
    float, bool, bytes, None; for a method with several out arguments, the list of what it
    makes of each), and raise what the method raises. A call that arrives as a
    message runs the twin and its result is sent as it is; a direct Python call of the
    method runs the method. Checked when the class is made: the interface must have the
    method, and a method has at most one twin."""

    def mark(twin: F) -> F:
        if not inspect.iscoroutinefunction(twin):
            raise TypeError(f"the wire-form twin of {method_name} must be an async def")
        setattr(twin, _TWIN_OF, method_name)
        return twin

    return mark


#: the attribute a method serving an earlier form carries: that form's declaration
_EARLIER_FORM = "__joynr_earlier_form__"


def earlier_form(method_name: str, *params: tuple[str, Any]) -> Callable[[F], F]:
    """Mark an ``async def`` of a provider as serving calls in a form an earlier declaration
    of its interface had on this project's msgpack wire: method ``method_name`` with the typed
    parameters ``params`` (``("address", dict[str, Any])``, ...), so that runtimes written
    against that declaration keep working. Only this project's msgpack requests reach it, and
    only when the interface declares no method of that name and parameter types; it is no
    joynr overload."""
    definition = MethodDef(method_name, tuple(params), None)

    def mark(fn: F) -> F:
        setattr(fn, _EARLIER_FORM, definition)
        return fn
    return mark


class Provider:
    """Base class of provider implementations.

    Subclass with ``interface=``: ``class RadioProvider(Provider, interface=Radio)``, implement
    the interface's methods as ``async def``. Attributes are kept here: ``set_attribute`` stores
    a value and publishes it to on-change subscribers; define ``get_<name>`` / ``set_<name>``
    (``async def``) to compute or check values yourself (``get_<name>`` also gives the values
    of periodic and keep-alive publications). ``fire`` sends a broadcast;
    ``add_broadcast_filter`` adds a filter of a selective one.

    A provider can be registered more than once (in several domains, or runtimes): each
    registration is a :class:`ProviderSkeleton`, which the runtime attaches here.
    """

    interface: type
    #: False: only participants of this cluster controller (in-process, websocket) may call it;
    #: calls that arrive over MQTT are refused (the CC's own Routing and Discovery providers)
    serves_remote_callers: ClassVar[bool] = True
    #: interface method (Python name) -> the attribute name of its wire-form twin
    wire_forms: ClassVar[Mapping[str, str]] = MappingProxyType({})
    #: the methods serving an earlier form (:func:`earlier_form`): attribute -> that form
    earlier_forms: ClassVar[Mapping[str, MethodDef]] = MappingProxyType({})

    def __init_subclass__(cls, *, interface: type | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if interface is not None:
            cls.interface = interface
        twins = dict(cls.wire_forms)
        for attribute, value in vars(cls).items():
            method_name = getattr(value, _TWIN_OF, None)
            if method_name is None:
                continue
            if twins.get(method_name, attribute) != attribute:
                raise TypeError(f"{cls.__name__}: {method_name} has two wire-form twins, "
                                f"{twins[method_name]} and {attribute}")
            twins[method_name] = attribute
        for method_name, attribute in list(twins.items()):
            if method_name in vars(cls) and attribute not in vars(cls):
                # the method is overridden here, its inherited twin is not: the override wins
                del twins[method_name]
        if twins and getattr(cls, "interface", None) is not None:
            methods = interface_def(cls.interface).methods
            unknown = sorted(name for name in twins if name not in methods)
            if unknown:
                raise TypeError(f"{cls.__name__}: wire-form twins of methods its interface "
                                f"does not have: {', '.join(unknown)}")
        cls.wire_forms = MappingProxyType(twins)
        forms = dict(cls.earlier_forms)
        for attribute, value in vars(cls).items():
            earlier = getattr(value, _EARLIER_FORM, None)
            if earlier is not None:
                forms[attribute] = earlier
        cls.earlier_forms = MappingProxyType(forms)

    def __init__(self, **initial_attributes: Any) -> None:
        self._definition = interface_def(type(self).interface)
        unknown = set(initial_attributes) - set(self._definition.attributes)
        if unknown:
            raise TypeError(f"unknown attributes {sorted(unknown)}")
        self._attribute_values: dict[str, Any] = dict(initial_attributes)
        self._skeletons: list[ProviderSkeleton] = []
        self._broadcast_filters: dict[str, list[BroadcastFilter]] = {}

    @property
    def attribute_values(self) -> Mapping[str, Any]:
        """The attribute values set so far (read-only; change them with set_attribute)."""
        return MappingProxyType(self._attribute_values)

    @property
    def registrations(self) -> tuple[ProviderSkeleton, ...]:
        """The participants this provider is registered as."""
        return tuple(self._skeletons)

    def attach(self, skeleton: ProviderSkeleton) -> None:
        """Called by the runtime once ``skeleton`` is registered: attribute changes and
        broadcasts go to its subscribers from now on."""
        self._skeletons.append(skeleton)

    def detach(self, skeleton: ProviderSkeleton) -> None:
        """Called by the runtime when ``skeleton`` is unregistered."""
        if skeleton in self._skeletons:
            self._skeletons.remove(skeleton)

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

    def add_broadcast_filter(self, broadcast_name: str, broadcast_filter: BroadcastFilter
                             ) -> None:
        """Add a filter of the selective broadcast ``broadcast_name``: when it fires, a
        subscriber gets a publication only if every filter of it returns True for its filter
        parameters and the values, called as ``broadcast_filter(filter_parameters, *values)``
        (``filter_parameters``: the subscriber's map of strings, read-only; plain or
        ``async def``; one that raises counts as False for that subscriber). Filters run
        inside a task, as provider methods do, in the order they were added; they apply to the
        firings from now on. TypeError for a broadcast that is unknown or not selective."""
        definition = self._definition.broadcasts.get(broadcast_name)
        if definition is None:
            raise TypeError(f"{self._definition.name} has no broadcast {broadcast_name}")
        if not definition.selective:
            raise TypeError(f"broadcast {broadcast_name} is not selective: it has no filters")
        if not callable(broadcast_filter):
            raise TypeError(f"a broadcast filter must be callable, not "
                            f"{type(broadcast_filter).__name__}")
        self._broadcast_filters.setdefault(broadcast_name, []).append(broadcast_filter)

    def broadcast_filters(self, broadcast_name: str) -> tuple[BroadcastFilter, ...]:
        """The filters of a selective broadcast, in the order they were added."""
        return tuple(self._broadcast_filters.get(broadcast_name, ()))

    def fire(self, broadcast_name: str, *values: Any, partitions: list[str] | tuple[str, ...] = (),
             ttl_ms: int = 10_000) -> None:
        """Send a broadcast: a non-selective one as a multicast to every subscriber whose
        partitions match (living ``ttl_ms``); a selective one to each of its subscribers whose
        filter parameters the filters let through (no partitions: TypeError; each publication
        lives its subscriber's ``publication_ttl_ms``)."""
        definition = self._definition.broadcasts.get(broadcast_name)
        if definition is None:
            raise AttributeError(f"{self._definition.name} has no broadcast {broadcast_name}")
        if len(values) != len(definition.outputs):
            raise TypeError(f"broadcast {broadcast_name} takes {len(definition.outputs)} values")
        if definition.selective and partitions:
            raise TypeError(f"broadcast {broadcast_name} is selective: it has no partitions")
        if not self._skeletons:
            raise RuntimeError("the provider is not registered")
        for skeleton in self._skeletons:
            skeleton.fire(broadcast_name, list(values), list(partitions), ttl_ms)


#: a method, what runs it, and whether that returns the wire form already (a twin)
_Bound = tuple[MethodDef, Callable[..., Any], bool]


class _AppCall:
    """Application code other than a call from a message, queued in the call runner: a
    getter call of a subscription, a broadcast filter run."""

    __slots__ = ("make", "what")

    def __init__(self, make: Callable[[], Coroutine[Any, Any, None]], what: str) -> None:
        self.make = make
        self.what = what


class ProviderSkeleton:
    """The participant of one registered provider (see the module docstring)."""

    def __init__(self, route: Callable[[Message], bool], telemetry: Telemetry,
                 provider: Provider, participant_id: str, *,
                 multicast_body: BodyFormat = BodyFormat.JSON) -> None:
        """``route``: the router's way out (MessageRouter.route); ``telemetry``: the
        process's counters and limit of repeated warnings. ``multicast_body``: the body format
        of this participant's multicasts (see ``JoynrRuntime.multicast_body``)."""
        self._route = route
        self.telemetry = telemetry
        self.provider = provider
        self.participant_id = participant_id
        self.definition: InterfaceDef = interface_def(provider.interface)
        #: the joynr schema of the interface (reads and writes JSON bodies)
        self.schema: JoynrSchema = schema_of(self.definition)
        self.multicast_body = multicast_body
        self.address = InProcessAddress(self)
        #: runs the provider's methods inside tasks (owns them)
        self.calls: CallRunner[Message | _AppCall] = CallRunner(f"provider {participant_id}",
                                                                self._start)
        self._methods = self._method_table()
        #: the attribute and selective broadcast subscriptions of this participant
        self.publisher = SubscriptionPublisher(
            route, telemetry, participant_id, self.definition, provider.attribute_values,
            run=self._run_app_call, getters=self._custom_getters(),
            filters=provider.broadcast_filters)

    def _method_table(self) -> dict[tuple[str, tuple[str, ...]], _Bound]:
        table: dict[tuple[str, tuple[str, ...]], _Bound] = {}
        provider = self.provider
        twins = type(provider).wire_forms
        for name, method in self.definition.methods.items():
            impl = getattr(provider, name, None)
            if impl is None or not inspect.iscoroutinefunction(impl):
                raise TypeError(f"{type(provider).__name__} does not implement async {name}()")
            twin = twins.get(name)
            bound: _Bound = ((method, impl, False) if twin is None else
                             (method, getattr(provider, twin), True))
            table[(method.name, tuple(method.param_datatypes))] = bound
            # the method by its joynr name too (``addToAll`` for ``add_to_all``)
            table.setdefault((member_joynr_name(method), tuple(method.param_datatypes)), bound)
        for accessor in self.definition.accessors.values():
            kind, name = accessor.name.split("_", 1)
            impl = self._getter(name) if kind == "get" else self._setter(name)
            table[(accessor.name, tuple(accessor.param_datatypes))] = (accessor, impl, False)
        for attribute, earlier in type(provider).earlier_forms.items():
            table.setdefault((earlier.name, tuple(earlier.param_datatypes)),
                             (earlier, getattr(provider, attribute), False))
        return table

    def _widened(self, method_name: str, datatypes: Sequence[str]) -> _Bound | None:
        """The one method of this name whose datatypes are ``datatypes`` but for the widths
        (this project names every integer ``Long`` and both floats ``Double`` but where
        overloads differ in width alone; a caller that declares them otherwise names them
        otherwise): None if none or several fit."""
        incoming = tuple(datatypes)
        widened = tuple(map(widened_datatype, incoming))
        fitting = [bound for (name, declared), bound in self._methods.items()
                   if name == method_name and len(declared) == len(incoming)
                   and declared != incoming
                   and tuple(map(widened_datatype, declared)) == widened]
        distinct = {id(bound[0]) for bound in fitting}
        return fitting[0] if len(distinct) == 1 else None

    def _getter(self, name: str) -> Callable[[], Any]:
        custom = getattr(self.provider, f"get_{name}", None)
        if custom is not None and inspect.iscoroutinefunction(custom):
            return custom

        async def get() -> Any:
            return self.provider.get_attribute(name)
        return get

    def _custom_getters(self) -> dict[str, Callable[[], Any]]:
        """The provider's own ``get_<name>`` coroutine functions, by attribute name."""
        found = {}
        for name in self.definition.attributes:
            custom = getattr(self.provider, f"get_{name}", None)
            if custom is not None and inspect.iscoroutinefunction(custom):
                found[name] = custom
        return found

    def _run_app_call(self, make: Callable[[], Coroutine[Any, Any, None]], what: str) -> None:
        """Run application code (a subscription's getter call, a broadcast filter run) inside
        a task of :attr:`calls`."""
        self.calls.submit(_AppCall(make, what))

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
        elif kind is _ONE_WAY or kind is _REQUEST:
            self.calls.submit(message)
        elif kind is MessageType.SUBSCRIPTION_REQUEST:
            self.publisher.subscribe(message)
        elif kind is MessageType.MULTICAST_SUBSCRIPTION_REQUEST:
            self._ack_multicast_subscription(message)
        elif kind is MessageType.BROADCAST_SUBSCRIPTION_REQUEST:
            self.publisher.subscribe_broadcast(message)
        elif kind is MessageType.SUBSCRIPTION_STOP:
            self.publisher.stop(message)
        else:
            self.telemetry.warn(log, "ignored", peer_of(message.origin),
                                "provider %s: ignored %s", self.participant_id,
                                message.describe())

    def _refuse_remote(self, message: Message, refusal: Refusal) -> None:
        self.telemetry.warn(log, refusal.reason, peer_of(message.origin),
                            "provider %s %s: refused %s from %r", self.participant_id,
                            refusal.detail, message.describe(), message.origin)
        error = ProviderRuntimeError(
            f"{self.definition.name} of this cluster controller serves its local participants "
            "only")
        if message.type in REQUEST_TYPES:
            try:
                answer = make_error_answer(message, error, expiry_date_ms=message.expiry_date_ms)
            except PayloadError:
                return
            self._route(answer)

    def _start(self, message: Message | _AppCall) -> Call | None:
        """The call a request or one-way message makes, when its turn comes (inside a task
        of :attr:`calls`): each in a context of its own."""
        context = contextvars.copy_context()
        if isinstance(message, _AppCall):
            return message.make(), context, message.what
        if message.type is _REQUEST:
            return self._invoke(message), context, "request"
        # one-way, fire and forget: decode and check, then run the provider's method itself
        try:
            payload = decode_body(OneWayRequest, message.body, schema=self.schema)
            (_, impl, _), args = self._prepare(payload)
        except (PayloadError, JoynrError) as exc:
            self.telemetry.counters["dropped-bad-one-way"] += 1
            self.telemetry.warn(log, "bad-one-way", peer_of(message.origin),
                                "provider %s: one-way call %s refused: %s",
                                self.participant_id, message.id, exc)
            return None
        context.run(_origin.set, message.origin)
        context.run(_request.set, message)
        return impl(*args), context, f"one-way {payload.method_name}"

    async def _invoke(self, message: Message) -> None:
        body = message.body
        fmt = format_of(body)
        try:
            payload = decode_body(Request, body, schema=self.schema)
        except PayloadError as exc:
            self.telemetry.counters["dropped-bad-request"] += 1
            self.telemetry.warn(log, "bad-request", peer_of(message.origin),
                                "provider %s: bad request %s: %s", self.participant_id,
                                message.id, exc)
            if fmt is _JSON:
                self._answer_bad_json_request(message, exc)
            return
        method: MethodDef | None = None
        try:
            bound, args = self._prepare(payload)
        except JoynrError as exc:  # no such method, or arguments that do not fit it
            self.telemetry.counters["refused-request"] += 1
            self.telemetry.warn(log, "refused-request", peer_of(message.origin),
                                "provider %s: request %s refused: %s", self.participant_id,
                                message.id, exc)
            reply = Reply(payload.request_reply_id, error=exc.to_wire())
        else:
            method = bound[0]
            try:
                reply = Reply(payload.request_reply_id,
                              response=await self._call(bound, args, message.origin,
                                                        message.expiry_date_ms, message))
            except JoynrError as exc:
                reply = Reply(payload.request_reply_id, error=exc.to_wire())
        if fmt is _MSGPACK:
            self._route(answer_to(message, reply))
            return
        answer = self._json_reply(message, reply, method)
        if answer is not None:
            self._route(answer_to(message, reply, body=answer))

    def _answer_bad_json_request(self, message: Message, exc: PayloadError) -> None:
        """A JSON request whose values do not fit the method it calls is answered with a
        MethodInvocation error, as a msgpack one is, when its requestReplyId can be read."""
        try:
            rid = decode_body(Request, message.body).request_reply_id  # untyped
            reply = Reply(rid, error=MethodInvocationError(f"wrong parameter: {exc}").to_wire())
            body = encode_body(reply, _JSON)
        except PayloadError:
            return
        self._route(answer_to(message, reply, body=body))

    def _json_reply(self, message: Message, reply: Reply, method: MethodDef | None
                    ) -> bytes | None:
        """The JSON body of ``reply`` to a call of ``method`` (None: the request's method was
        not found); a result that JSON cannot hold becomes a ProviderRuntime error."""
        try:
            return encode_body(reply, _JSON,
                               types=None if method is None else reply_types(method),
                               error_enum=None if method is None else method.error_enum)
        except PayloadError as exc:
            self.telemetry.warn(log, "unencodable-reply", peer_of(message.origin),
                                "provider %s: reply to %s not written as JSON: %s",
                                self.participant_id, message.id, exc)
            error = ProviderRuntimeError(f"the answer cannot be written as joynr JSON: {exc}")
        try:
            return encode_body(Reply(reply.request_reply_id, error=error.to_wire()), _JSON)
        except PayloadError:  # (not expected: the id came in a JSON body)
            return None

    def _prepare(self, payload: Request | OneWayRequest
                 ) -> tuple[_Bound, list[Any]]:
        """The method (what runs it, whether that answers in wire form) and the typed
        arguments; MethodInvocationError if they do not fit."""
        found = self._methods.get((payload.method_name, tuple(payload.param_datatypes)))
        if found is None:
            found = self._widened(payload.method_name, payload.param_datatypes)
        if found is None:
            raise MethodInvocationError(
                f"{self.definition.name} v{self.definition.version[0]}.{self.definition.version[1]}"
                f" has no method {payload.method_name}({', '.join(payload.param_datatypes)})")
        method = found[0]
        params = payload.params
        if len(params) != len(method.params):
            raise MethodInvocationError(f"{method.name} takes {len(method.params)} parameters")
        args = []
        # (no strict=True: the lengths are equal, checked above; zip's keyword argument alone
        # costs about as much as the rest of this loop)
        for value, (name, tp) in zip(params, method.params):  # noqa: B905
            if type(value) is tp and tp in EXACT_TYPES:
                args.append(value)  # the common case, without building a label
                continue
            try:
                args.append(from_wire(value, tp, f"{method.name}({name})"))
            except ValueTypeError as exc:
                raise MethodInvocationError(f"wrong parameter: {exc}") from None
        return found, args

    async def _call(self, bound: _Bound, args: list[Any], origin: Address | None,
                    deadline_ms: int, request: Message | None = None) -> list[Any]:
        method, impl, wired = bound
        token = _origin.set(origin)
        request_token = _request.set(request)
        deadline_token = _deadline.set(deadline_ms)
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
            # once per call a caller sends: counted, and logged with its traceback for the
            # first of each method and caller, rate-limited
            self.telemetry.counters["provider-failed"] += 1
            self.telemetry.warn(log, f"{method.name}-failed", peer_of(origin),
                                "provider %s: %s failed", self.participant_id, method.name,
                                level=logging.ERROR, exc_info=True)
            raise ProviderRuntimeError(f"{method.name} failed: {type(exc).__name__}: {exc}"
                                       ) from None
        finally:
            _origin.reset(token)
            _request.reset(request_token)
            _deadline.reset(deadline_token)
        if method.outputs:  # several out arguments: a tuple of their values, in order
            if not isinstance(result, (tuple, list)) or len(result) != len(method.outputs):
                raise ProviderRuntimeError(
                    f"{method.name} returned {type(result).__name__}, not a tuple of its "
                    f"{len(method.outputs)} out arguments")
            return list(result) if wired else [to_wire(v) for v in result]
        if method.returns is type(None) or method.returns is None:
            return []
        return [result if wired else to_wire(result)]

    # ------------------------------------------------------------------ subscriptions

    def _ack_multicast_subscription(self, message: Message) -> None:
        try:
            request = decode_body(MulticastSubscriptionRequest, message.body, schema=self.schema)
        except PayloadError as exc:
            self.telemetry.counters["dropped-bad-multicast-subscription"] += 1
            self.telemetry.warn(log, "bad-multicast-subscription",
                                peer_of(message.origin),
                                "provider %s: bad multicast subscription %s: %s",
                                self.participant_id, message.id, exc)
            return
        error = None
        name, sid = request.subscribe_to_name, request.subscription_id
        declared = self.definition.broadcasts.get(name)
        if declared is None:
            error = SubscriptionError(f"provider {self.participant_id} misses broadcast {name}",
                                      sid)
        elif declared.selective:
            error = SubscriptionError(f"broadcast {name} of provider {self.participant_id} is "
                                      "selective: subscribe with a BroadcastSubscriptionRequest",
                                      sid)
        answer_subscription(self._route, self.telemetry, message, sid, error)

    def attribute_changed(self, name: str, value: Any) -> None:
        """Publish a new attribute value to its on-change subscribers."""
        self.publisher.attribute_changed(name, value)

    def fire(self, name: str, values: list[Any], partitions: list[str], ttl_ms: int) -> None:
        """Send a broadcast. A non-selective one as a multicast (the routers deliver it to
        its receivers), in the body format :attr:`multicast_body`, under joynr's name of the
        broadcast (``newStation`` for ``new_station``), as joynr's providers publish it and
        every subscriber of either dialect subscribes to it; TypeError if the values cannot
        be written in that format. A selective one to its subscribers, each in the body format
        of its request (:meth:`SubscriptionPublisher.broadcast_fired`; a publication that
        cannot be written is logged)."""
        response = [to_wire(v) for v in values]
        declared = self.definition.broadcasts.get(name)
        if declared is not None and declared.selective:
            self.publisher.broadcast_fired(name, values, response)
            return
        fmt = self.multicast_body
        types = None if declared is None else [tp for _, tp in declared.outputs]
        expiry_date_ms = now_ms() + ttl_ms
        multicast_id = make_multicast_id(self.participant_id, self.schema.joynr_name(name),
                                         partitions)
        publication = MulticastPublication(multicast_id=multicast_id, response=response)
        if fmt is _MSGPACK:
            body = publication.to_body()
        else:
            try:
                body = encode_body(publication, fmt, types=types)
            except PayloadError as exc:
                raise TypeError(f"broadcast {name}: {exc}") from None
        self._route(Message(
            type=MessageType.MULTICAST, sender=self.participant_id, recipient=multicast_id,
            expiry_date_ms=expiry_date_ms, body=body,
        ))

    async def close(self) -> None:
        """End the subscriptions (each with an error publication carrying a
        SubscriptionError) and cancel the calls still running."""
        self.publisher.close()
        await self.calls.close()

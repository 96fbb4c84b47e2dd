"""Subscriptions, the provider side: :class:`SubscriptionPublisher` keeps the subscriptions of
one provider participant and writes their publications. (The proxy side,
:class:`~programming.subscribers.Subscription`, is in programming/subscribers.py; the QoS family in
programming/subscription_qos.py.)

Attribute subscriptions (``SubscriptionRequest``) come in joynr's three unicast kinds, told by
the request's QoS (read with :func:`~programming.subscription_qos.qos_from_wire`, which brings
every value into joynr's bounds):

- **on change** (``OnChangeSubscriptionQos``): every change (``Provider.set_attribute``), at
  most every ``min_interval_ms``; a change within the interval is deferred and, when it has
  passed, the latest value is sent (earlier ones within it are skipped);
- **on change with keep-alive** (``OnChangeWithKeepAliveSubscriptionQos``): the same, and when
  nothing was published for ``max_interval_ms`` the current value is published again;
- **periodic** (``PeriodicSubscriptionQos``): the current value every ``period_ms`` (the
  period restarts at any publication), not on change.

Every kind publishes the current value at once when the subscription is accepted (after the
subscription reply), if the attribute has one. Where the value comes from: a change publishes
the value set; the first publication of the on-change kinds is the stored value; the
heartbeat publications (each periodic one, the first one of a periodic subscription, a
keep-alive's republication) take it from the provider's ``get_<name>`` coroutine when it
defines one, run inside the skeleton's call runner as every provider method (at most one call
per subscription at a time), else the stored value. A getter that fails is published as an
error (a ProviderRuntime error, or the JoynrError it raised), and the timer goes on.

Selective broadcast subscriptions (``BroadcastSubscriptionRequest``) carry an on-change QoS
(any on-change kind; the keep-alive fields are ignored) and filter parameters (strings). When
the provider fires the broadcast, each subscription of it gets a publication of the values:
one within ``min_interval_ms`` of the previous one to that subscriber is dropped (not
deferred, as in every joynr runtime), then all the provider's filters of the broadcast must
let the values through (``filter(filter_parameters, *values)``, run inside the call runner,
plain or async; they run for an empty map too). A filter that raises gives that subscriber
nothing (logged, counted). Nothing is published when the subscription is accepted. A request
whose map is not empty and lacks a filter parameter the broadcast declares is refused.

For all of them:

- each publication message lives ``publication_ttl_ms``; the subscription ends at its
  ``expiry_date_ms`` (a timer: no more publications), and a request already expired on arrival
  is refused;
- a request with the id of a live subscription from the same subscriber replaces it in place
  (old timers cancelled, new QoS, a new subscription reply, the current value published
  again); another participant reusing an id is refused;
- a subscription ends on its subscriber's stop (from that subscriber only), at its expiry, or
  when the provider is unregistered or its runtime stops (:meth:`SubscriptionPublisher.close`):
  then each live subscription gets one error publication carrying a SubscriptionError, and
  ends (joynr's runtimes end them silently; their consumers hand an error publication to
  ``onError``);
- a refusal is a subscription reply carrying a SubscriptionError with the subscription id:
  unknown or not notifiable attribute, unknown or non-selective broadcast, a QoS of another
  kind, expired, id in use, provider unregistered. A request that does not decode (a bad QoS
  map, bad filter parameters, ...) is counted (``dropped-bad-subscription-request``), logged
  (rate-limited) and answered so as well when its subscription id can be read.

Every timer is an event loop timer, cancelled when its subscription ends; a subscription keeps
a fixed amount of state (at most one deferred value, one getter call, a bounded number of
filter runs).

Bodies come in either format (runtime/bodies.py): a subscription request or stop is read in
its own, and its subscription reply and the publications of the subscription are written in
the format of the request (JSON typed by the attribute's or broadcast's declared types).
Non-selective broadcasts are multicasts, which the routers deliver (runtime/multicast.py); the
skeleton publishes those itself.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

import msgpack

from pyjoynr.programming.subscription_qos import (
    OnChangeSubscriptionQos,
    OnChangeWithKeepAliveSubscriptionQos,
    PeriodicSubscriptionQos,
    SubscriptionQos,
    UnicastSubscriptionQos,
    qos_from_wire,
)
from pyjoynr.runtime import joynr_json
from pyjoynr.runtime.bodies import BodyFormat, decode_body, encode_body, format_of, schema_of
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import JoynrError, ProviderRuntimeError, SubscriptionError
from pyjoynr.runtime.interface import InterfaceDef, to_wire
from pyjoynr.runtime.logs import get_logger, peer_of
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import (
    PAYLOAD_TYPES,
    BroadcastSubscriptionRequest,
    Payload,
    PayloadError,
    Publication,
    SubscriptionReply,
    SubscriptionRequest,
    SubscriptionStop,
    answer_to,
)
from pyjoynr.runtime.telemetry import Telemetry

__all__ = [
    "MAX_FILTER_RUNS",
    "BroadcastFilter",
    "RunCall",
    "SubscriptionPublisher",
    "answer_subscription",
]

log = get_logger(__name__)

#: a selective broadcast's filter: ``filter(filter_parameters, *values)``, True to publish
#: (or an awaitable of it)
BroadcastFilter = Callable[..., "bool | Awaitable[bool]"]
#: runs application code inside a task (the skeleton's call runner): the function making the
#: coroutine, and what it is (for log lines)
RunCall = Callable[[Callable[[], Coroutine[Any, Any, None]], str], None]

#: the most filter runs of one subscription not ended yet; a broadcast fired beyond that is
#: not published to it (counted, logged)
MAX_FILTER_RUNS: Final = 64
#: the longest subscription id answered in a refusal of a request that does not decode
_MAX_ID_CHARS: Final = 4096
_ATTRIBUTE_KINDS: Final = (OnChangeSubscriptionQos, PeriodicSubscriptionQos)


def _readable_subscription_id(cls: type[Payload], body: bytes) -> str | None:
    """The subscription id of a request body that does not decode as a whole, if it has a
    readable one (a string, not too long)."""
    try:
        if format_of(body) is BodyFormat.JSON:
            sid = joynr_json.parse(cls, body).get("subscriptionId")
        else:
            data = msgpack.unpackb(body, raw=False, strict_map_key=True)
            sid = data.get("subscription_id") if isinstance(data, dict) else None
    except (ValueError, msgpack.UnpackException, RecursionError):
        return None
    return sid if type(sid) is str and len(sid) <= _MAX_ID_CHARS else None


def answer_subscription(route: Callable[[Message], object], telemetry: Telemetry,
                        message: Message, subscription_id: str | None,
                        error: JoynrError | None) -> None:
    """Answer a subscription request (of any kind), in its body format: accepted, or refused
    with ``error``; ``route``: the router's way out, ``telemetry``: the process's (logs).
    ``subscription_id`` None: read it from the request (no answer if it has no readable one)."""
    fmt = format_of(message.body)
    if subscription_id is None:
        cls = PAYLOAD_TYPES.get(message.type, SubscriptionRequest)
        subscription_id = _readable_subscription_id(cls, message.body)
        if subscription_id is None:
            return
    reply = SubscriptionReply(subscription_id=subscription_id,
                              error=None if error is None else error.to_wire())
    try:
        body = encode_body(reply, fmt)
    except PayloadError as exc:  # (an id no JSON can hold; it came in JSON, so not expected)
        telemetry.warn(log, "unencodable-answer", peer_of(message.origin),
                       "subscription reply to %s not written: %s",
                       message.describe(), exc)
        return
    route(answer_to(message, reply, body=body))


class _Live:
    """One accepted subscription (times of the loop clock, seconds)."""

    __slots__ = ("body_format", "deferred", "deferred_value", "expiry", "filter_parameters",
                 "filtering", "getting", "heartbeat", "heartbeat_s", "is_broadcast",
                 "last_sent", "name", "qos", "subscriber", "subscription_id")

    def __init__(self, subscription_id: str, subscriber: str, name: str,
                 qos: UnicastSubscriptionQos, body_format: BodyFormat, *,
                 filter_parameters: Mapping[str, str] | None = None) -> None:
        self.subscription_id = subscription_id
        self.subscriber = subscriber
        #: the attribute's or broadcast's name
        self.name = name
        self.qos = qos
        #: the body format of the request, in which its publications are written
        self.body_format = body_format
        self.is_broadcast = filter_parameters is not None
        self.filter_parameters: Mapping[str, str] = MappingProxyType(
            dict(filter_parameters or {}))
        #: the interval of the heartbeat publications (0: none)
        self.heartbeat_s = 0.0
        if not self.is_broadcast:
            if isinstance(qos, OnChangeWithKeepAliveSubscriptionQos):
                self.heartbeat_s = qos.max_interval_ms / 1000
            elif isinstance(qos, PeriodicSubscriptionQos):
                self.heartbeat_s = qos.period_ms / 1000
        self.last_sent = -math.inf
        #: the change waiting for the minimum interval to pass, and its value
        self.deferred: asyncio.TimerHandle | None = None
        self.deferred_value: Any = None
        self.heartbeat: asyncio.TimerHandle | None = None
        self.expiry: asyncio.TimerHandle | None = None
        #: a getter call of a heartbeat publication is running
        self.getting = False
        #: filter runs not ended yet
        self.filtering = 0

    @property
    def min_interval_s(self) -> float:
        qos = self.qos
        return qos.min_interval_ms / 1000 if isinstance(qos, OnChangeSubscriptionQos) else 0.0

    def cancel_timers(self) -> None:
        for handle in (self.deferred, self.heartbeat, self.expiry):
            if handle is not None:
                handle.cancel()
        self.deferred = self.heartbeat = self.expiry = None
        self.deferred_value = None


class SubscriptionPublisher:
    """The attribute and selective broadcast subscriptions of one provider participant (see
    the module docstring).

    ``values``: the provider's stored attribute values (a live view); ``getters``: the
    provider's own ``get_<name>`` coroutine functions, by attribute name; ``filters(name)``:
    the provider's filters of a selective broadcast (asked at each firing); ``run``: runs a
    getter call or a filter run inside a task (the skeleton's call runner)."""

    def __init__(self, route: Callable[[Message], bool], telemetry: Telemetry,
                 participant_id: str, definition: InterfaceDef,
                 values: Mapping[str, Any], *, run: RunCall,
                 getters: Mapping[str, Callable[[], Awaitable[Any]]] | None = None,
                 filters: Callable[[str], Sequence[BroadcastFilter]] | None = None) -> None:
        #: the router's way out (MessageRouter.route) and the process's telemetry
        self._route = route
        self.telemetry = telemetry
        self.participant_id = participant_id
        self.definition = definition
        self.schema = schema_of(definition)
        self.values = values
        self.getters: Mapping[str, Callable[[], Awaitable[Any]]] = dict(getters or {})
        self._filters = filters or (lambda name: ())
        self._run = run
        self._subscriptions: dict[str, _Live] = {}
        #: attribute or broadcast name -> its live subscriptions by id
        self._by_name: dict[str, dict[str, _Live]] = {}
        self._closed = False

    @property
    def subscription_ids(self) -> list[str]:
        """The ids of the live subscriptions (of attributes and selective broadcasts)."""
        return list(self._subscriptions)

    def qos_of(self, subscription_id: str) -> UnicastSubscriptionQos | None:
        """The QoS of a live subscription (None: no such subscription)."""
        live = self._subscriptions.get(subscription_id)
        return None if live is None else live.qos

    # ------------------------------------------------------------------ requests

    def subscribe(self, message: Message) -> None:
        """An attribute subscription request: answer it, then publish the current value (if
        any) and start the subscription's timers."""
        request = self._decode(message, SubscriptionRequest)
        if request is None:
            return
        sid, name = request.subscription_id, request.subscribe_to_name
        qos = self._qos(message, request.qos, sid)
        if qos is None:
            return
        attr = self.definition.attributes.get(name)
        if attr is None:
            refusal: str | None = f"provider {self.participant_id} misses attribute {name}"
        elif not attr.notifiable:
            refusal = f"attribute {name} of provider {self.participant_id} is not notifiable"
        elif not isinstance(qos, _ATTRIBUTE_KINDS):
            refusal = (f"an attribute subscription takes an OnChange, OnChangeWithKeepAlive "
                       f"or Periodic qos, not a {qos.wire_type}")
        else:
            refusal = self._refusal(message, sid, qos, f"attribute {name}")
        if refusal is not None:
            self._answer(message, sid, SubscriptionError(refusal, sid))
            return
        assert isinstance(qos, UnicastSubscriptionQos)
        live = self._accept(message, sid, name, qos, None)
        if isinstance(qos, PeriodicSubscriptionQos):
            self._publish_current(live)  # (from the getter, if the provider has one)
        elif name in self.values:
            self._send(live, self.values[name])

    def subscribe_broadcast(self, message: Message) -> None:
        """A selective broadcast subscription request: answer it (nothing is published until
        the broadcast fires)."""
        request = self._decode(message, BroadcastSubscriptionRequest)
        if request is None:
            return
        sid, name = request.subscription_id, request.subscribe_to_name
        qos = self._qos(message, request.qos, sid)
        if qos is None:
            return
        declared = self.definition.broadcasts.get(name)
        params = request.filter_parameters
        if declared is None:
            refusal: str | None = f"provider {self.participant_id} misses broadcast {name}"
        elif not declared.selective:
            refusal = (f"broadcast {name} of provider {self.participant_id} is not selective: "
                       "subscribe to its multicast")
        elif not isinstance(qos, OnChangeSubscriptionQos):
            refusal = (f"a selective broadcast subscription takes an OnChange qos, not a "
                       f"{qos.wire_type}")
        elif params and not set(declared.filter_parameters) <= set(params):
            missing = sorted(set(declared.filter_parameters) - set(params))
            refusal = (f"the subscription request does not contain the expected filter "
                       f"parameters of broadcast {name}: {', '.join(missing)} missing")
        else:
            refusal = self._refusal(message, sid, qos, f"broadcast {name}")
        if refusal is not None:
            self._answer(message, sid, SubscriptionError(refusal, sid))
            return
        assert isinstance(qos, OnChangeSubscriptionQos)
        self._accept(message, sid, name, qos, params)

    def stop(self, message: Message) -> None:
        """A subscription stop: honoured only from the subscriber itself."""
        try:
            stop = decode_body(SubscriptionStop, message.body)
        except PayloadError as exc:
            self.telemetry.counters["dropped-bad-subscription-stop"] += 1
            self.telemetry.warn(log, "bad-subscription-stop", peer_of(message.origin),
                                "provider %s: bad subscription stop %s: %s",
                                self.participant_id, message.id, exc)
            return
        live = self._subscriptions.get(stop.subscription_id)
        if live is not None and live.subscriber == message.sender:
            self._end(live)

    def _decode(self, message: Message, cls: type[Any]) -> Any:
        try:
            return decode_body(cls, message.body, schema=self.schema)
        except PayloadError as exc:
            self._bad_request(message, _readable_subscription_id(cls, message.body), str(exc))
            return None

    def _qos(self, message: Message, data: dict[str, Any], sid: str) -> SubscriptionQos | None:
        try:
            return qos_from_wire(data, OnChangeSubscriptionQos)
        except ValueError as exc:
            self._bad_request(message, sid, f"bad qos: {exc}")
            return None

    def _bad_request(self, message: Message, sid: str | None, detail: str) -> None:
        """A request that does not decode: counted, logged, refused when its id is known."""
        self.telemetry.counters["dropped-bad-subscription-request"] += 1
        self.telemetry.warn(log, "bad-subscription-request", peer_of(message.origin),
                            "provider %s: bad subscription request %s: %s",
                            self.participant_id, message.id, detail)
        if sid is not None:
            self._answer(message, sid, SubscriptionError(
                f"bad subscription request: {detail}", sid))

    def _answer(self, message: Message, sid: str | None, error: JoynrError | None) -> None:
        answer_subscription(self._route, self.telemetry, message, sid, error)

    def _refusal(self, message: Message, sid: str, qos: SubscriptionQos, what: str
                 ) -> str | None:
        """Why a request for an existing attribute or broadcast is refused (None: it is not)."""
        if self._closed:
            return f"provider {self.participant_id} is unregistered"
        if qos.expired(now_ms()):
            return (f"expiry date {qos.expiry_date_ms} of the subscription to {what} of "
                    f"provider {self.participant_id} lies in the past")
        old = self._subscriptions.get(sid)
        if old is not None and old.subscriber != message.sender:
            return f"subscription id {sid} is in use by another subscriber"
        return None

    def _accept(self, message: Message, sid: str, name: str, qos: UnicastSubscriptionQos,
                filter_parameters: Mapping[str, str] | None) -> _Live:
        old = self._subscriptions.get(sid)
        if old is not None:  # an update: replaced in place
            self._end(old)
        live = _Live(sid, message.sender, name, qos, format_of(message.body),
                     filter_parameters=filter_parameters)
        self._subscriptions[sid] = live
        self._by_name.setdefault(name, {})[sid] = live
        loop = asyncio.get_running_loop()
        if qos.expiry_date_ms:
            live.expiry = loop.call_later(max(qos.expiry_date_ms - now_ms(), 0) / 1000,
                                          self._expired, live)
        if live.heartbeat_s:
            live.heartbeat = loop.call_later(live.heartbeat_s, self._heartbeat_due, live)
        self._answer(message, sid, None)
        return live

    # ------------------------------------------------------------------ attributes

    def attribute_changed(self, name: str, value: Any) -> None:
        """A new attribute value: published to the on-change subscriptions of it."""
        found = self._by_name.get(name)
        if not found:
            return
        for live in list(found.values()):
            if not live.is_broadcast and isinstance(live.qos, OnChangeSubscriptionQos):
                self._changed(live, value)

    def _changed(self, live: _Live, value: Any) -> None:
        loop = asyncio.get_running_loop()
        wait = live.last_sent + live.min_interval_s - loop.time()
        if wait > 0:  # too soon: the latest value is sent when the minimum interval has passed
            live.deferred_value = value
            if live.deferred is None:
                live.deferred = loop.call_later(wait, self._deferred_due, live)
            return
        self._send(live, value)

    def _deferred_due(self, live: _Live) -> None:
        live.deferred = None
        if self._is_live(live):
            self._send(live, live.deferred_value)

    def _heartbeat_due(self, live: _Live) -> None:
        """A heartbeat subscription's timer: publish the current value unless something was
        published within the interval (then wait for the rest of it)."""
        live.heartbeat = None
        if not self._is_live(live):
            return
        loop = asyncio.get_running_loop()
        if live.heartbeat_s:
            rest = live.last_sent + live.heartbeat_s - loop.time()
            if rest > 0.001:
                live.heartbeat = loop.call_later(rest, self._heartbeat_due, live)
                return
            live.heartbeat = loop.call_later(live.heartbeat_s, self._heartbeat_due, live)
        self._publish_current(live)

    def _publish_current(self, live: _Live) -> None:
        """Publish the attribute's current value: a deferred change, else the getter's value
        (a call in the call runner), else the stored value (none: nothing)."""
        if live.deferred is not None:  # a change waiting: it is the newest value
            self._send(live, live.deferred_value)
            return
        getter = self.getters.get(live.name)
        if getter is None:
            if live.name in self.values:
                self._send(live, self.values[live.name])
            return
        if live.getting:  # (the previous call has not returned yet)
            return
        live.getting = True
        self._run(functools.partial(self._get_and_send, live, getter),
                  f"get_{live.name} for subscription {live.subscription_id}")

    async def _get_and_send(self, live: _Live, getter: Callable[[], Awaitable[Any]]) -> None:
        error: JoynrError | None = None
        try:
            value = await getter()
        except JoynrError as exc:
            error = exc
        except Exception as exc:
            error = ProviderRuntimeError(f"get_{live.name} failed: {type(exc).__name__}: {exc}")
        finally:
            live.getting = False
        if not self._is_live(live):
            return
        if error is None:
            self._send(live, value)
            return
        self.telemetry.counters["subscription-getter-failed"] += 1
        self.telemetry.warn(log, "subscription-getter-failed", f"attribute {live.name}",
                            "provider %s: get_%s for subscription %s failed: %s",
                            self.participant_id, live.name, live.subscription_id,
                            error)
        self._send_error(live, error)

    def _send(self, live: _Live, value: Any) -> None:
        if live.deferred is not None:  # (what is sent now is at least as new)
            live.deferred.cancel()
            live.deferred = None
        live.deferred_value = None
        declared = self.definition.attributes[live.name]
        self._publish(live, Publication(live.subscription_id, response=[to_wire(value)]),
                      [declared.type])

    def _send_error(self, live: _Live, error: JoynrError) -> None:
        self._publish(live, Publication(live.subscription_id, error=error.to_wire()), None)

    # ------------------------------------------------------------------ selective broadcasts

    def broadcast_fired(self, name: str, values: Sequence[Any], response: list[Any]) -> None:
        """A selective broadcast fired with ``values`` (``response``: their wire form):
        published to each subscription of it whose minimum interval has passed and whose
        filter parameters all the provider's filters of it let through."""
        found = self._by_name.get(name)
        if not found:
            return
        filters = tuple(self._filters(name))
        now = asyncio.get_running_loop().time()
        for live in list(found.values()):
            if not live.is_broadcast:
                continue
            if now - live.last_sent < live.min_interval_s:
                self.telemetry.counters["selective-broadcast-dropped-min-interval"] += 1
                continue
            if not filters:
                self._send_broadcast(live, response)
                continue
            if live.filtering >= MAX_FILTER_RUNS:
                self.telemetry.counters["selective-broadcast-dropped-busy"] += 1
                self.telemetry.warn(
                    log, "selective-broadcast-busy", f"broadcast {name}",
                    "provider %s: broadcast %s not published to subscription %s: %d filter "
                    "runs of it have not ended", self.participant_id, name,
                    live.subscription_id, live.filtering)
                continue
            live.filtering += 1
            self._run(functools.partial(self._filter_and_send, live, filters, values, response),
                      f"filters of broadcast {name} for subscription {live.subscription_id}")

    async def _filter_and_send(self, live: _Live, filters: tuple[BroadcastFilter, ...],
                               values: Sequence[Any], response: list[Any]) -> None:
        try:
            passed = True
            for check in filters:
                result = check(live.filter_parameters, *values)
                if inspect.isawaitable(result):
                    result = await result
                if not result:
                    passed = False
                    break
        except Exception as exc:
            self.telemetry.counters["selective-broadcast-filter-failed"] += 1
            self.telemetry.warn(
                log, "selective-broadcast-filter-failed", f"broadcast {live.name}",
                "provider %s: a filter of broadcast %s failed for subscription %s: %s: %s",
                self.participant_id, live.name, live.subscription_id, type(exc).__name__, exc)
            return
        finally:
            live.filtering -= 1
        # (another run may have published meanwhile: the minimum interval holds for it too)
        if (passed and self._is_live(live) and asyncio.get_running_loop().time()
                - live.last_sent >= live.min_interval_s):
            self._send_broadcast(live, response)

    def _send_broadcast(self, live: _Live, response: list[Any]) -> None:
        declared = self.definition.broadcasts[live.name]
        self._publish(live, Publication(live.subscription_id, response=response),
                      [tp for _, tp in declared.outputs])

    # ------------------------------------------------------------------ publications, ends

    def _publish(self, live: _Live, publication: Publication, types: list[Any] | None
                 ) -> None:
        now = now_ms()
        if live.qos.expired(now):
            self._end(live)
            return
        live.last_sent = asyncio.get_running_loop().time()
        try:
            body = encode_body(publication, live.body_format, types=types)
        except PayloadError as exc:
            self.telemetry.warn(
                log, "unencodable-publication", f"{live.name}",
                "provider %s: publication of %s for %s not written: %s",
                self.participant_id, live.name, live.subscription_id, exc)
            return
        self._route(Message(
            type=MessageType.PUBLICATION, sender=self.participant_id, recipient=live.subscriber,
            expiry_date_ms=now + live.qos.publication_ttl_ms, body=body,
        ))

    def _is_live(self, live: _Live) -> bool:
        return self._subscriptions.get(live.subscription_id) is live

    def _expired(self, live: _Live) -> None:
        live.expiry = None
        if self._is_live(live):
            log.debug("provider %s: subscription %s to %s expired", self.participant_id,
                      live.subscription_id, live.name)
            self._end(live)

    def _end(self, live: _Live) -> None:
        if self._subscriptions.get(live.subscription_id) is live:
            del self._subscriptions[live.subscription_id]
            found = self._by_name.get(live.name)
            if found is not None:
                found.pop(live.subscription_id, None)
                if not found:
                    del self._by_name[live.name]
        live.cancel_timers()

    def close(self) -> None:
        """The provider is unregistered (or its runtime stops): each live subscription gets
        one error publication carrying a SubscriptionError, then ends; requests arriving
        afterwards are refused. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for live in list(self._subscriptions.values()):
            self._send_error(live, SubscriptionError(
                f"provider {self.participant_id} of {self.definition.name} is unregistered: "
                f"the subscription to {live.name} ended", live.subscription_id))
            self._end(live)


"""The proxy side of subscriptions, between two libjoynr runtimes over websocket to a real
cluster controller, in both dialects: native (msgpack bodies) and joynr's (JSON bodies).

Checked: every attribute QoS kind on the wire and its publications (on change, keep-alive,
periodic), missed-publication alerts (repeated, reset by publications, stopped at the end),
expiry on the proxy's side (no stop; a multicast receiver removed), error publications (a
SubscriptionError ends the subscription), updates under the same id, selective broadcasts
(filter parameters, unicast publications), and the async-iterator API (:class:`Updates`):
values, errors, the bounded buffer, and no subscription or task left behind after ``break``,
``aclose``, ``async with`` or a cancelled consumer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from pyjoynr.libjoynr import (
    LibjoynrConfig,
    LibjoynrRuntime,
    Provider,
    Proxy,
    attribute,
    broadcast,
    interface,
)
from pyjoynr.libjoynr.advanced import (
    AttributeSubscriptionQos,
    MulticastSubscriptionQos,
    OnChangeSubscriptionQos,
    OnChangeWithKeepAliveSubscriptionQos,
    PeriodicSubscriptionQos,
    ProviderRuntimeError,
    PublicationMissedError,
    SubscriptionError,
)
from pyjoynr.programming.subscription_qos import qos_from_wire
from pyjoynr.runtime.bodies import BodyFormat, decode_body, format_of, schema_of
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def
from pyjoynr.runtime.messages import MessageType
from pyjoynr.runtime.payloads import BroadcastSubscriptionRequest, SubscriptionRequest
from pyjoynr.testing.cluster import eventually
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE
from tests.support.wire import Wire

pytestmark = pytest.mark.network

WAIT_S = 5.0
ARQ, BRQ = MessageType.SUBSCRIPTION_REQUEST, MessageType.BROADCAST_SUBSCRIPTION_REQUEST
MRQ, STOP = MessageType.MULTICAST_SUBSCRIPTION_REQUEST, MessageType.SUBSCRIPTION_STOP


@interface("test/Tuner", version=(1, 0))
class Tuner:
    station = attribute(str)
    level = attribute(int)
    found = broadcast(station=str)
    scanned = broadcast(name=str, strength=int)
    alarm = broadcast(selective=True, filter_parameters=("genre",), name=str, genre=str)


SCHEMA = schema_of(interface_def(Tuner))


class TunerProvider(Provider, interface=Tuner):
    """``level`` comes from a getter that waits while :attr:`gate` is closed (its periodic and
    keep-alive publications stop) and fails while :attr:`broken` is set."""

    def __init__(self) -> None:
        super().__init__(station="FM4", level=1)
        self.gate = asyncio.Event()
        self.gate.set()
        self.broken = False

    async def get_level(self) -> int:
        await self.gate.wait()
        if self.broken:
            raise ProviderRuntimeError("no signal")
        return int(self.attribute_values["level"])


def by_genre(parameters: Any, name: str, genre: str) -> bool:
    return bool(parameters.get("genre", genre) == genre)


@dataclass
class Setup:
    provider_rt: LibjoynrRuntime
    consumer_rt: LibjoynrRuntime
    provider: TunerProvider
    pid: str
    proxy: Proxy
    wire: Wire
    dialect: str

    @property
    def publisher(self) -> Any:
        return self.provider.registrations[0].publisher

    def sent(self, kind: MessageType) -> list[Any]:
        """The subscription messages of ``kind`` the proxy sent, decoded."""
        cls = {ARQ: SubscriptionRequest, BRQ: BroadcastSubscriptionRequest}.get(kind)
        messages = self.wire.kinds(kind, sender=self.proxy.participant_id)
        if cls is None:
            return messages
        expected = BodyFormat.JSON if self.dialect == JOYNR else BodyFormat.MSGPACK
        assert all(format_of(m.body) is expected for m in messages)
        return [decode_body(cls, m.body, schema=SCHEMA) for m in messages]


@pytest.fixture(params=[NATIVE, JOYNR])
async def tuner(request, cc, runtimes) -> AsyncIterator[Setup]:
    """A provider and a proxy in two runtimes of one dialect (joynr's: JSON bodies)."""
    dialect = request.param
    config = LibjoynrConfig(dialect=dialect)
    provider_rt, consumer_rt = await runtimes(config=config), await runtimes(config=config)
    wire = Wire(cc)
    provider = TunerProvider()
    provider.add_broadcast_filter("alarm", by_genre)
    pid = await provider_rt.register_provider("tuner", provider)
    proxy = await consumer_rt.build_proxy(
        Tuner, "tuner", ttl_ms=3_000,
        body_format=BodyFormat.JSON if dialect == JOYNR else None)
    yield Setup(provider_rt, consumer_rt, provider, pid, proxy, wire, dialect)
    provider.gate.set()  # (a getter still waiting ends)


async def get(queue: asyncio.Queue[Any]) -> Any:
    return await asyncio.wait_for(queue.get(), WAIT_S)


def pending_subscription_tasks() -> list[asyncio.Task[Any]]:
    """Tasks not done that run code of the proxy side's modules, or close an async generator
    (what asyncio starts for an abandoned one)."""
    found = []
    for task in asyncio.all_tasks():
        if task.done():
            continue
        code = getattr(task.get_coro(), "cr_code", None)
        if code is None or code.co_filename.endswith(
                tuple(f"pyjoynr/runtime/{name}.py"
                      for name in ("updates", "proxies", "subscribers"))):
            found.append(task)
    return found


async def nothing_left(setup: Setup) -> None:
    """No subscription on either side, no task of the proxy side's."""
    assert setup.proxy.subscriptions == []
    await eventually(lambda: not setup.publisher.subscription_ids, what="the provider's end")
    await eventually(lambda: not pending_subscription_tasks(), what="no tasks left")


# ====================================================================== attributes


async def test_attribute_subscriptions_of_every_kind(tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    kinds = [OnChangeSubscriptionQos(min_interval_ms=0),
             OnChangeWithKeepAliveSubscriptionQos(min_interval_ms=0, max_interval_ms=100),
             PeriodicSubscriptionQos(period_ms=100)]
    for qos in kinds:
        seen: asyncio.Queue[int] = asyncio.Queue()
        subscription = await proxy.level.subscribe(seen.put_nowait, qos)
        assert subscription.qos == qos
        assert await get(seen) == 1  # the current value at once
        if qos is not kinds[0]:  # keep-alive and periodic: published again without a change
            assert await get(seen) == 1
        provider.set_attribute("level", 2)
        while await get(seen) != 2:
            pass
        provider.set_attribute("level", 1)
        request = tuner.sent(ARQ)[-1]
        assert request.subscription_id == subscription.subscription_id
        assert qos_from_wire(request.qos) == qos
        await subscription.unsubscribe()
    # no QoS: every change, on the wire as an on-change QoS with minimum interval 0
    subscription = await proxy.station.subscribe(lambda value: None)
    assert subscription.qos == AttributeSubscriptionQos()
    assert qos_from_wire(tuner.sent(ARQ)[-1].qos) == OnChangeSubscriptionQos(min_interval_ms=0)
    await subscription.unsubscribe()

    sent = len(tuner.sent(ARQ))
    for wrong in (MulticastSubscriptionQos(), "fast"):
        with pytest.raises(TypeError, match="OnChangeSubscriptionQos"):
            await proxy.station.subscribe(print, wrong)
        with pytest.raises(TypeError, match="OnChangeSubscriptionQos"):
            proxy.station.updates(wrong)
    assert len(tuner.sent(ARQ)) == sent and proxy.subscriptions == []


async def test_missed_publications_are_reported_again_and_again_until_one_comes(
        tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    provider.gate.clear()  # the periodic publications wait for the getter
    values: asyncio.Queue[int] = asyncio.Queue()
    errors: asyncio.Queue[Exception] = asyncio.Queue()
    qos = PeriodicSubscriptionQos(period_ms=50, alert_after_interval_ms=200)
    subscription = await proxy.level.subscribe(values.put_nowait, qos, on_error=errors.put_nowait)
    for _ in range(2):  # after the interval, and again after the next one
        error = await get(errors)
        assert isinstance(error, PublicationMissedError)
        assert error.subscription_id == subscription.subscription_id
    assert values.empty() and subscription.active

    provider.gate.set()
    assert await get(values) == 1
    while not errors.empty():
        errors.get_nowait()
    for _ in range(20):  # about five alert intervals of publications: none missed
        assert await get(values) == 1
    assert errors.qsize() <= 1  # (one may have been under way as the gate opened)

    provider.gate.clear()  # publications stop: alerts again
    assert isinstance(await get(errors), PublicationMissedError)
    await subscription.unsubscribe()
    while not errors.empty():
        errors.get_nowait()
    await asyncio.sleep(0.6)  # three intervals: the timer ended with the subscription
    assert errors.empty()


async def test_expiry_ends_a_subscription_here_without_a_stop(tuner: Setup, cc) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    seen: asyncio.Queue[Any] = asyncio.Queue()
    attr = await proxy.station.subscribe(
        seen.put_nowait, OnChangeSubscriptionQos(min_interval_ms=0,
                                                 expiry_date_ms=now_ms() + 500))
    found = await proxy.found.subscribe(
        seen.put_nowait, qos=MulticastSubscriptionQos(expiry_date_ms=now_ms() + 500))
    assert await get(seen) == "FM4"
    receivers = cc.router.multicast_receivers
    assert receivers.receivers_for(f"{tuner.pid}/found") == {proxy.participant_id}

    await eventually(lambda: not attr.active and not found.active, what="the expiry")
    assert proxy.subscriptions == []
    await eventually(lambda: not receivers.receivers_for(f"{tuner.pid}/found"),
                     what="the receiver's removal")
    await eventually(lambda: not tuner.publisher.subscription_ids, what="the provider's end")
    provider.set_attribute("station", "Oe1")
    provider.fire("found", "Oe3")
    await asyncio.sleep(0.2)
    assert seen.empty()
    assert tuner.sent(STOP) == []

    with pytest.raises(SubscriptionError, match="lies in the past"):
        await proxy.found.subscribe(print, qos=MulticastSubscriptionQos(expiry_date_ms=1))
    with pytest.raises(SubscriptionError, match="in the past"):  # the provider refuses it
        await proxy.station.subscribe(print, OnChangeSubscriptionQos(expiry_date_ms=1))
    assert proxy.subscriptions == []
    await nothing_left(tuner)


async def test_error_publications(tuner: Setup) -> None:
    """A provider's error goes to on_error; a SubscriptionError (here: the provider is
    unregistered) ends the subscription as well, without a stop."""
    proxy, provider = tuner.proxy, tuner.provider
    values: asyncio.Queue[Any] = asyncio.Queue()
    errors: asyncio.Queue[Exception] = asyncio.Queue()
    provider.broken = True
    level = await proxy.level.subscribe(values.put_nowait, PeriodicSubscriptionQos(period_ms=50),
                                        on_error=errors.put_nowait)
    error = await get(errors)
    assert isinstance(error, ProviderRuntimeError) and "no signal" in str(error)
    assert level.active
    provider.broken = False
    while await get(values) != 1:
        pass
    alarm = await proxy.alarm.subscribe(values.put_nowait, on_error=errors.put_nowait)
    while not errors.empty():
        errors.get_nowait()

    await tuner.provider_rt.unregister_provider(provider)
    ended = [await get(errors), await get(errors)]
    assert all(type(e) is SubscriptionError for e in ended)
    assert {e.subscription_id for e in ended} == {level.subscription_id, alarm.subscription_id}
    assert not level.active and not alarm.active and proxy.subscriptions == []
    assert tuner.sent(STOP) == []


# ====================================================================== updates


async def test_updating_an_attribute_subscription(tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    values: asyncio.Queue[int] = asyncio.Queue()
    errors: asyncio.Queue[Exception] = asyncio.Queue()
    subscription = await proxy.level.subscribe(values.put_nowait, on_error=errors.put_nowait)
    assert await get(values) == 1

    # to periodic publications with alerts: a new request under the same id, timers started
    provider.gate.clear()
    periodic = PeriodicSubscriptionQos(period_ms=50, alert_after_interval_ms=200)
    await subscription.update(periodic)
    requests = tuner.sent(ARQ)
    assert [r.subscription_id for r in requests] == [subscription.subscription_id] * 2
    assert qos_from_wire(requests[1].qos) == periodic and subscription.qos == periodic
    assert isinstance(await get(errors), PublicationMissedError)
    provider.gate.set()
    for _ in range(3):
        assert await get(values) == 1  # periodic, no change needed
    assert tuner.publisher.subscription_ids == [subscription.subscription_id]

    with pytest.raises(TypeError):
        await subscription.update(MulticastSubscriptionQos())
    with pytest.raises(TypeError, match="no filter parameters"):
        await subscription.update(filter_parameters={"genre": "jazz"})
    assert len(tuner.sent(ARQ)) == 2

    # refused (the expiry date is past): the subscription ends, the error is raised
    with pytest.raises(SubscriptionError, match="in the past"):
        await subscription.update(OnChangeSubscriptionQos(expiry_date_ms=1))
    assert not subscription.active and proxy.subscriptions == []
    await eventually(lambda: len(tuner.sent(STOP)) == 1, what="the stop")
    with pytest.raises(SubscriptionError, match="has ended"):
        await subscription.update(OnChangeSubscriptionQos())
    await nothing_left(tuner)


async def test_updating_broadcast_subscriptions(tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    alarms: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    alarm = await proxy.alarm.subscribe(lambda *values: alarms.put_nowait(values),
                                        filter_parameters={"genre": "jazz"})
    provider.fire("alarm", "a", "jazz")
    provider.fire("alarm", "b", "rock")
    assert await get(alarms) == ("a", "jazz")
    await alarm.update(filter_parameters={"genre": "rock"})
    assert alarm.filter_parameters == {"genre": "rock"}
    requests = tuner.sent(BRQ)
    assert [r.subscription_id for r in requests] == [alarm.subscription_id] * 2
    assert [r.filter_parameters for r in requests] == [{"genre": "jazz"}, {"genre": "rock"}]
    assert requests[1].qos == requests[0].qos  # (the QoS kept)
    provider.fire("alarm", "c", "jazz")
    provider.fire("alarm", "d", "rock")
    assert await get(alarms) == ("d", "rock")
    with pytest.raises(TypeError):
        await alarm.update(PeriodicSubscriptionQos())
    with pytest.raises(TypeError):
        await alarm.update(filter_parameters={"genre": 1})

    # a multicast: only its expiry date, kept here, nothing sent
    found = await proxy.found.subscribe(print)
    sent = (len(tuner.sent(MRQ)), len(tuner.sent(BRQ)))
    with pytest.raises(TypeError, match="MulticastSubscriptionQos"):
        await found.update(OnChangeSubscriptionQos())
    with pytest.raises(TypeError, match="not selective"):
        await found.update(filter_parameters={})
    await found.update(MulticastSubscriptionQos(expiry_date_ms=now_ms() + 300))
    assert (len(tuner.sent(MRQ)), len(tuner.sent(BRQ))) == sent
    await eventually(lambda: not found.active, what="the new expiry date")
    await alarm.unsubscribe()
    await nothing_left(tuner)


# ====================================================================== selective broadcasts


async def test_selective_broadcasts(tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    jazz: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    everything: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    first = await proxy.alarm.subscribe(lambda *v: jazz.put_nowait(v),
                                        filter_parameters={"genre": "jazz"})
    second = await proxy.alarm.subscribe(lambda *v: everything.put_nowait(v))
    assert first.selective and first.multicast_pattern is None
    requests = tuner.sent(BRQ)
    assert [r.filter_parameters for r in requests] == [{"genre": "jazz"}, {}]
    assert {r.subscribe_to_name for r in requests} == {"alarm"}
    assert qos_from_wire(requests[0].qos) == OnChangeSubscriptionQos(min_interval_ms=0)
    if tuner.dialect == JOYNR:  # joynr's JSON
        body = tuner.wire.json(BRQ, sender=proxy.participant_id)[0]
        assert body["filterParameters"] == {"_typeName": "joynr.BroadcastFilterParameters",
                                            "filterParameters": {"genre": "jazz"}}

    provider.fire("alarm", "x", "rock")
    provider.fire("alarm", "y", "jazz")
    assert await get(everything) == ("x", "rock")
    assert await get(everything) == ("y", "jazz")
    assert await get(jazz) == ("y", "jazz")
    publications = tuner.wire.kinds(MessageType.PUBLICATION, sender=tuner.pid,
                                    recipient=proxy.participant_id)
    assert len(publications) == 3  # unicast, one per subscriber let through

    refused: list[tuple[type[Exception], str, dict[str, Any]]] = [
        (TypeError, "no partitions", {"partitions": ["eu"]}),
        (TypeError, "str", {"filter_parameters": {"genre": 5}}),
        (TypeError, "mapping", {"filter_parameters": ["genre"]}),
        (ValueError, "lack genre", {"filter_parameters": {"mood": "calm"}}),
        (TypeError, "OnChangeSubscriptionQos", {"qos": PeriodicSubscriptionQos()}),
        (TypeError, "OnChangeSubscriptionQos", {"qos": MulticastSubscriptionQos()}),
    ]
    for error, match, arguments in refused:
        with pytest.raises(error, match=match):
            await proxy.alarm.subscribe(print, **arguments)
        with pytest.raises(error, match=match):
            proxy.alarm.updates(**arguments)
    with pytest.raises(TypeError, match="not selective"):
        await proxy.found.subscribe(print, filter_parameters={})
    with pytest.raises(TypeError, match="MulticastSubscriptionQos"):
        await proxy.found.subscribe(print, qos=OnChangeSubscriptionQos())
    assert len(tuner.sent(BRQ)) == 2 and len(proxy.subscriptions) == 2
    await first.unsubscribe()
    await second.unsubscribe()
    await nothing_left(tuner)


# ====================================================================== async iterators


async def test_updates_of_an_attribute_end_with_the_loop(tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    seen = []
    async with asyncio.timeout(WAIT_S):
        async for station in proxy.station.updates():
            seen.append(station)
            if station == "FM4":
                for name in ("a", "b", "c"):
                    provider.set_attribute("station", name)
            if station == "c":
                break
    assert seen == ["FM4", "a", "b", "c"]
    # the generator inside is closed when dropped: the subscription ends, on both sides
    await eventually(lambda: proxy.subscriptions == [], what="the end of the subscription")
    await nothing_left(tuner)
    assert len(tuner.sent(STOP)) == 1


async def test_updates_end_with_async_with_and_aclose(tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    async with proxy.station.updates() as updates:
        subscription = updates.subscription  # subscribed on entering
        assert subscription is not None and proxy.subscriptions == [subscription]
        assert await anext(updates) == "FM4"
    assert not subscription.active and proxy.subscriptions == []
    with pytest.raises(StopAsyncIteration):
        await anext(updates)

    updates = proxy.station.updates()
    assert updates.subscription is None and proxy.subscriptions == []  # not before iterating
    assert await anext(updates) == "FM4"
    waiting = asyncio.create_task(anext(updates))
    await asyncio.sleep(0.05)
    await updates.aclose()  # while another task waits: that one stops
    assert proxy.subscriptions == []
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(waiting, WAIT_S)
    await updates.aclose()  # idempotent
    provider.set_attribute("station", "Oe1")
    await nothing_left(tuner)


async def test_cancelling_the_consumer_ends_the_updates(tuner: Setup) -> None:
    proxy = tuner.proxy
    first = asyncio.Event()
    updates = proxy.found.updates(["eu"])

    async def consume() -> None:
        async for _ in updates:
            first.set()

    consumer = asyncio.create_task(consume())
    await eventually(lambda: updates.subscription is not None, what="the subscription")
    tuner.provider.fire("found", "FM4", partitions=["eu"])
    await asyncio.wait_for(first.wait(), WAIT_S)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert proxy.subscriptions == []  # ended by the consumer's task itself
    await nothing_left(tuner)


async def test_updates_raise_errors_and_go_on(tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    provider.gate.clear()
    qos = PeriodicSubscriptionQos(period_ms=50, alert_after_interval_ms=200)
    async with proxy.level.updates(qos) as updates:
        with pytest.raises(PublicationMissedError):
            await asyncio.wait_for(anext(updates), WAIT_S)
        assert updates.subscription is not None and updates.subscription.active
        provider.broken = True
        provider.gate.set()
        with pytest.raises(ProviderRuntimeError, match="no signal"):
            while True:  # (alerts raised meanwhile are fine)
                try:
                    await asyncio.wait_for(anext(updates), WAIT_S)
                except PublicationMissedError:
                    continue
        provider.broken = False
        value = None
        while value != 1:
            try:
                value = await asyncio.wait_for(anext(updates), WAIT_S)
            except (PublicationMissedError, ProviderRuntimeError):
                continue
    await nothing_left(tuner)


async def test_updates_of_broadcasts_and_the_bounded_buffer(tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    async with (proxy.found.updates(max_buffered=3) as found,
                proxy.scanned.updates() as scanned,
                proxy.alarm.updates(filter_parameters={"genre": "jazz"}) as alarms):
        for n in range(10):
            provider.fire("found", f"station {n}")
        provider.fire("scanned", "FM4", 7)
        provider.fire("alarm", "x", "rock")
        provider.fire("alarm", "y", "jazz")
        assert await asyncio.wait_for(anext(scanned), WAIT_S) == ("FM4", 7)  # a tuple
        assert await asyncio.wait_for(anext(alarms), WAIT_S) == ("y", "jazz")
        await eventually(lambda: found.dropped == 7, what="the dropped values")
        assert [await anext(found) for _ in range(3)] == [f"station {n}" for n in (7, 8, 9)]
        assert found.max_buffered == 3
    assert proxy.subscriptions == []
    with pytest.raises(ValueError, match="max_buffered"):
        proxy.found.updates(max_buffered=0)
    with pytest.raises(TypeError, match="not selective"):
        proxy.found.updates(filter_parameters={"genre": "jazz"})
    await nothing_left(tuner)


async def test_updates_stop_at_expiry_unsubscribe_and_the_providers_end(tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    expiring = proxy.station.updates(OnChangeSubscriptionQos(min_interval_ms=0,
                                                             expiry_date_ms=now_ms() + 300))
    async with asyncio.timeout(WAIT_S):
        assert [station async for station in expiring] == ["FM4"]

    updates = proxy.station.updates()
    assert await anext(updates) == "FM4"
    assert updates.subscription is not None
    await updates.subscription.unsubscribe()
    with pytest.raises(StopAsyncIteration):
        await anext(updates)

    async with proxy.station.updates() as updates:
        assert await anext(updates) == "FM4"
        await tuner.provider_rt.unregister_provider(provider)
        with pytest.raises(SubscriptionError, match="unregistered"):
            await asyncio.wait_for(anext(updates), WAIT_S)
        with pytest.raises(StopAsyncIteration):
            await anext(updates)
    assert proxy.subscriptions == []
    await eventually(lambda: not pending_subscription_tasks(), what="no tasks left")


async def test_stopping_the_runtime_ends_its_subscriptions(tuner: Setup) -> None:
    proxy, provider = tuner.proxy, tuner.provider
    provider.gate.clear()
    errors: asyncio.Queue[Exception] = asyncio.Queue()
    level = await proxy.level.subscribe(
        print, PeriodicSubscriptionQos(period_ms=50, alert_after_interval_ms=200),
        on_error=errors.put_nowait)
    updates = proxy.station.updates()
    assert await anext(updates) == "FM4"
    waiting = asyncio.create_task(anext(updates))
    await tuner.consumer_rt.core.stop()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(waiting, WAIT_S)
    assert not level.active and proxy.subscriptions == []
    while not errors.empty():
        errors.get_nowait()
    await asyncio.sleep(0.6)  # three alert intervals: its timer ended with it
    assert errors.empty()
    await eventually(lambda: not pending_subscription_tasks(), what="no tasks left")

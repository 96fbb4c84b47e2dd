"""The provider side of attribute subscriptions of joynr's three unicast kinds, against a real
cluster controller: a Tuner provider in a libjoynr runtime, its subscribers a client of joynr's
JavaScript runtime (JSON bodies written by hand) and a native participant (msgpack bodies
written by hand), so that only the provider side of this project is under test.

Timing is counted in generous windows (how many publications arrive within a few seconds),
never asserted tightly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import pytest

from pyjoynr.programming.subscription_qos import OnChangeWithKeepAliveSubscriptionQos
from pyjoynr.testing.cluster import eventually
from tests.support.joynr_js import Received
from tests.support.tuner import (
    Native,
    Tuning,
    keep_alive,
    on_change,
    periodic,
    tuning,
)

pytestmark = pytest.mark.network

SUBSCRIPTION_EXCEPTION = "joynr.exceptions.SubscriptionException"


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


@pytest.fixture
async def tuner(stack: AsyncExitStack, cc: Any, runtimes: Any) -> Tuning:
    return await tuning(stack, cc, runtimes)


def values_of(publications: list[Received], sid: str) -> list[Any]:
    """The value of each publication of ``sid`` (an error publication: its error)."""
    out = []
    for p in publications:
        if p.body["subscriptionId"] == sid:
            body = p.body
            out.append(body["response"][0] if "response" in body else body["error"])
    return out


def accepted(answer: Received, sid: str) -> None:
    assert answer.type == "srp"
    assert answer.body == {"_typeName": "joynr.SubscriptionReply", "subscriptionId": sid}


def refused(answer: Received, sid: str, fragment: str) -> None:
    assert answer.type == "srp"
    error = answer.body["error"]
    assert error["_typeName"] == SUBSCRIPTION_EXCEPTION, error
    assert error["subscriptionId"] == sid
    assert fragment in error["detailMessage"], error["detailMessage"]


# ---------------------------------------------------------------------- on change


async def test_on_change_publishes_at_once_then_every_change_with_the_ttl_asked(tuner: Tuning
                                                                                 ) -> None:
    sid, answer = await tuner.proxy.subscribe("station", on_change(0, ttl_ms=3_000))
    accepted(answer, sid)
    first = await tuner.client.next_message("p")
    sent_ms = int(time.time() * 1000)
    assert first.body == {"_typeName": "joynr.SubscriptionPublication", "response": ["FM4"],
                          "subscriptionId": sid}
    assert sent_ms - 2_000 < first.expiry_ms <= sent_ms + 3_000  # (the publication ttl)
    tuner.provider.set_attribute("station", "Oe1")
    tuner.provider.set_attribute("station", "Oe3")
    seen = ["FM4"]
    while seen[-1] != "Oe3":
        seen.append((await tuner.client.next_message("p")).body["response"][0])
    assert seen == ["FM4", "Oe1", "Oe3"]


async def test_min_interval_defers_a_change_and_sends_the_latest_value(tuner: Tuning) -> None:
    sid, answer = await tuner.proxy.subscribe("station", on_change(1_000))
    accepted(answer, sid)
    # within the minimum interval of the first publication (sent at the reply): deferred
    for station in ("A", "B", "C"):
        tuner.provider.set_attribute("station", station)
    assert values_of(await tuner.client.collect(2.5), sid) == ["FM4", "C"]


async def test_a_change_within_the_min_interval_is_not_lost_by_a_native_subscriber(
        stack: AsyncExitStack, cc: Any, tuner: Tuning) -> None:
    native = await Native.open(stack, cc)
    sid, reply = await native.subscribe(tuner.pid, "station",
                                        {"type": "OnChangeSubscriptionQos",
                                         "min_interval_ms": 500, "publication_ttl_ms": 2_000})
    assert reply.error is None
    tuner.provider.set_attribute("station", "late")
    found = await native.collect(1.5)
    assert [p.response for _, p in found] == [["FM4"], ["late"]]
    assert all(p.subscription_id == sid for _, p in found)


async def test_a_burst_of_changes_keeps_one_deferred_value_and_no_pile_of_timers(
        tuner: Tuning) -> None:
    sid, _ = await tuner.proxy.subscribe("station", keep_alive(2_000, 1_000))
    loop = asyncio.get_running_loop()
    scheduled = getattr(loop, "_scheduled")  # noqa: B009 - the loop's timer heap (a list)
    before = len(scheduled)
    for n in range(20_000):
        tuner.provider.set_attribute("station", f"s{n}")
    assert len(scheduled) <= before + 2  # (the one deferred publication)
    assert values_of(await tuner.client.collect(1.8), sid) == ["FM4", "s19999"]


# ---------------------------------------------------------------------- keep-alive, periodic


async def test_keep_alive_republishes_the_value_when_nothing_changes(tuner: Tuning) -> None:
    sid, answer = await tuner.proxy.subscribe("station", keep_alive(200))
    accepted(answer, sid)
    values = values_of(await tuner.client.collect(2.0), sid)
    assert 5 <= len(values) <= 13, values  # the first one, then one about every 200 ms
    assert set(values) == {"FM4"}
    qos = tuner.publisher.qos_of(sid)
    assert isinstance(qos, OnChangeWithKeepAliveSubscriptionQos)
    assert (qos.min_interval_ms, qos.max_interval_ms) == (0, 200)


async def test_keep_alive_publishes_changes_too(tuner: Tuning) -> None:
    sid, _ = await tuner.proxy.subscribe("station", keep_alive(5_000))
    tuner.provider.set_attribute("station", "Oe1")
    assert values_of(await tuner.client.collect(1.0), sid) == ["FM4", "Oe1"]


async def test_periodic_publishes_the_getters_value_every_period(tuner: Tuning) -> None:
    tuner.provider.level_value = 7
    sid, answer = await tuner.proxy.subscribe("level", periodic(200))
    accepted(answer, sid)
    values = values_of(await tuner.client.collect(2.0), sid)
    assert 5 <= len(values) <= 13, values
    assert set(values) == {7}
    assert tuner.provider.level_calls >= len(values)
    tuner.provider.level_value = 8
    assert 8 in values_of(await tuner.client.collect(1.0), sid)


async def test_periodic_does_not_publish_on_change(tuner: Tuning) -> None:
    sid, _ = await tuner.proxy.subscribe("station", periodic(1_500))
    tuner.provider.set_attribute("station", "Oe1")
    assert values_of(await tuner.client.collect(0.7), sid) == ["FM4"]
    # the next period publishes the stored value
    assert values_of(await tuner.client.collect(2.0), sid)[:1] == ["Oe1"]


async def test_a_failing_getter_is_an_error_publication_and_the_period_goes_on(
        tuner: Tuning) -> None:
    tuner.provider.level_fails = True
    sid, answer = await tuner.proxy.subscribe("level", periodic(200))
    accepted(answer, sid)
    errors = values_of(await tuner.client.collect(1.5), sid)
    assert len(errors) >= 3, errors
    for error in errors:
        assert error["_typeName"] == "joynr.exceptions.ProviderRuntimeException"
        assert "the meter broke" in error["detailMessage"]
    assert tuner.counters["subscription-getter-failed"] >= 3
    tuner.provider.level_fails = False
    tuner.provider.level_value = 3
    assert 3 in values_of(await tuner.client.collect(1.5), sid)
    assert sid in tuner.publisher.subscription_ids


async def test_heartbeats_of_a_native_subscriber_in_msgpack(stack: AsyncExitStack, cc: Any,
                                                            tuner: Tuning) -> None:
    native = await Native.open(stack, cc)
    tuner.provider.level_value = 5
    sid, reply = await native.subscribe(tuner.pid, "level",
                                        {"type": "PeriodicSubscriptionQos", "period_ms": 200,
                                         "publication_ttl_ms": 1_000})
    assert reply.error is None
    found = await native.collect(2.0)
    assert 5 <= len(found) <= 13, found
    for message, publication in found:
        assert (publication.subscription_id, publication.response) == (sid, [5])
        assert message.body[:1] != b"{"  # msgpack, as the request
    await native.stop(tuner.pid, sid)
    await eventually(lambda: not tuner.publisher.subscription_ids, what="the stop")


# ---------------------------------------------------------------------- expiry, update


async def test_the_subscription_ends_at_its_expiry_date(tuner: Tuning) -> None:
    sid, answer = await tuner.proxy.subscribe("station", keep_alive(100, validity_ms=700))
    accepted(answer, sid)
    assert sid in tuner.publisher.subscription_ids
    await eventually(lambda: sid not in tuner.publisher.subscription_ids, 5.0, "the expiry")
    await tuner.client.collect(0.2)  # (those on their way)
    tuner.provider.set_attribute("station", "after the expiry")
    assert values_of(await tuner.client.collect(0.8), sid) == []


async def test_a_request_expired_on_arrival_is_refused(tuner: Tuning) -> None:
    sid, answer = await tuner.proxy.subscribe("station", on_change(0, validity_ms=-1_000))
    refused(answer, sid, "lies in the past")
    assert sid not in tuner.publisher.subscription_ids
    assert values_of(await tuner.client.collect(0.5), sid) == []


async def test_an_update_replaces_the_subscription_in_place(tuner: Tuning) -> None:
    sid, answer = await tuner.proxy.subscribe("station", on_change(0))
    accepted(answer, sid)
    assert values_of(await tuner.client.collect(0.5), sid) == ["FM4"]
    # the same id again, now keep-alive: a new reply, the value again, then heartbeats
    again, answer = await tuner.proxy.subscribe("station", keep_alive(150),
                                                subscription_id=sid)
    assert again == sid
    accepted(answer, sid)
    assert len(values_of(await tuner.client.collect(1.5), sid)) >= 4
    assert tuner.publisher.subscription_ids == [sid]
    # and back to on change: the heartbeat timer of the keep-alive one is gone
    await tuner.proxy.subscribe("station", on_change(0), subscription_id=sid)
    await tuner.client.collect(0.2)
    assert values_of(await tuner.client.collect(1.0), sid) == []
    tuner.provider.set_attribute("station", "Oe1")
    assert values_of(await tuner.client.collect(0.5), sid) == ["Oe1"]


async def test_another_subscriber_cannot_take_over_a_subscription_id(
        stack: AsyncExitStack, cc: Any, tuner: Tuning) -> None:
    sid, answer = await tuner.proxy.subscribe("station", on_change(0))
    accepted(answer, sid)
    other = await tuner.client.proxy("tuning", "test/Tuner", (1, 0))
    _, answer = await other.subscribe("station", keep_alive(100), subscription_id=sid)
    refused(answer, sid, "in use")
    assert tuner.publisher.qos_of(sid) is not None
    assert not isinstance(tuner.publisher.qos_of(sid), OnChangeWithKeepAliveSubscriptionQos)


# ---------------------------------------------------------------------- refusals, the end


@pytest.mark.parametrize("name, fragment", [
    ("frequency", "misses attribute frequency"),
    ("hidden", "attribute hidden of provider"),
])
async def test_an_unknown_or_not_notifiable_attribute_is_a_subscription_exception(
        tuner: Tuning, name: str, fragment: str) -> None:
    sid, answer = await tuner.proxy.subscribe(name, on_change(0))
    refused(answer, sid, fragment)


async def test_refusals_in_msgpack_are_subscription_errors_with_the_id(
        stack: AsyncExitStack, cc: Any, tuner: Tuning) -> None:
    native = await Native.open(stack, cc)
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("frequency", {}, "misses attribute"),
        ("hidden", {}, "not notifiable"),
        ("station", {"type": "MulticastSubscriptionQos"}, "not a MulticastSubscriptionQos"),
        ("station", {"type": "OnChangeSubscriptionQos", "expiry_date_ms": 1}, "in the past"),
    ]
    for name, qos, fragment in cases:
        sid, reply = await native.subscribe(tuner.pid, name, qos)
        assert reply.error is not None
        assert reply.error["type"] == "SubscriptionException", reply.error
        assert reply.error["subscription_id"] == sid
        assert fragment in reply.error["message"]
    assert tuner.publisher.subscription_ids == []


async def test_unregistering_the_provider_ends_each_subscription_with_an_error_publication(
        stack: AsyncExitStack, cc: Any, tuner: Tuning) -> None:
    js_sid, _ = await tuner.proxy.subscribe("station", keep_alive(5_000))
    native = await Native.open(stack, cc)
    native_sid, _ = await native.subscribe(tuner.pid, "level",
                                           {"type": "PeriodicSubscriptionQos",
                                            "period_ms": 5_000})
    await tuner.client.collect(0.3)
    await native.collect(0.3)
    publisher = tuner.publisher
    await tuner.runtime.unregister_provider(tuner.pid)
    assert publisher.subscription_ids == []
    (error,) = values_of(await tuner.client.collect(1.0), js_sid)
    assert error["_typeName"] == SUBSCRIPTION_EXCEPTION
    assert error["subscriptionId"] == js_sid
    assert "unregistered" in error["detailMessage"]
    (_, publication), = await native.collect(1.0)
    assert publication.error is not None
    assert (publication.subscription_id, publication.error["type"],
            publication.error["subscription_id"]) == (native_sid, "SubscriptionException",
                                                      native_sid)
    # and nothing after it
    assert await native.collect(0.5) == []

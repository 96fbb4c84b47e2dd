"""Selective broadcasts, the provider side, against a real cluster controller: subscribers of
joynr's JavaScript runtime (``joynr.BroadcastSubscriptionRequest`` with filter parameters,
JSON written by hand) and native ones (msgpack written by hand) subscribe to the Tuner's
``signal``; the provider's filters decide who gets each firing. Also hostile subscription
requests (QoS maps and filter parameters), refused with a reason and counted."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack
from typing import Any

import msgpack
import pytest

from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import BroadcastSubscriptionRequest, SubscriptionRequest
from pyjoynr.testing.cluster import eventually
from tests.support.joynr_js import JsProxy, Received
from tests.support.tuner import (
    GENRES,
    Native,
    TunerProvider,
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


def genre_filter(parameters: Mapping[str, str], station: str, strength: int) -> bool:
    """Passes what the subscriber's genre asks for (no genre: everything)."""
    return parameters.get("genre", "any") in ("any", GENRES.get(station))


async def strength_filter(parameters: Mapping[str, str], station: str, strength: int
                          ) -> bool:
    """An async filter: at least the subscriber's ``min_strength``."""
    await asyncio.sleep(0)
    return strength >= int(parameters.get("min_strength", "0"))


def firings(publications: list[Received]) -> dict[str, list[list[Any]]]:
    """The responses of each subscription id, in order of arrival."""
    out: dict[str, list[list[Any]]] = {}
    for p in publications:
        out.setdefault(p.body["subscriptionId"], []).append(p.body["response"])
    return out


async def subscribe(proxy: JsProxy, parameters: dict[str, str] | None, qos: Any = None,
                    **options: Any) -> str:
    sid, answer = await proxy.subscribe("signal", on_change(0) if qos is None else qos,
                                        selective=True, filter_parameters=parameters, **options)
    assert answer.body == {"_typeName": "joynr.SubscriptionReply", "subscriptionId": sid}
    return sid


def refused(answer: Received, sid: str, fragment: str) -> None:
    error = answer.body["error"]
    assert error["_typeName"] == SUBSCRIPTION_EXCEPTION, error
    assert error["subscriptionId"] == sid
    assert fragment in error["detailMessage"], error["detailMessage"]


# ---------------------------------------------------------------------- filters


async def test_each_subscriber_gets_what_all_filters_let_through(
        stack: AsyncExitStack, cc: Any, tuner: Tuning) -> None:
    provider = tuner.provider
    provider.add_broadcast_filter("signal", genre_filter)
    provider.add_broadcast_filter("signal", strength_filter)
    pop = await subscribe(tuner.proxy, {"genre": "pop"})
    rock_proxy = await tuner.client.proxy("tuning", "test/Tuner", (1, 0))
    strong_rock = await subscribe(rock_proxy, {"genre": "rock", "min_strength": "5"})
    all_proxy = await tuner.client.proxy("tuning", "test/Tuner", (1, 0))
    everything = await subscribe(all_proxy, None)
    native = await Native.open(stack, cc)
    native_sid, reply = await native.subscribe(
        tuner.pid, "signal", {"type": "OnChangeSubscriptionQos", "min_interval_ms": 0},
        filter_parameters={"genre": "pop"})
    assert reply.error is None
    # nothing is published at the subscription
    assert await tuner.client.collect(0.3) == []

    provider.fire("signal", "Hits", 3)     # pop
    provider.fire("signal", "Metal", 7)    # rock, strong
    provider.fire("signal", "Metal", 2)    # rock, weak
    got = firings(await tuner.client.collect(1.5))
    assert got == {pop: [["Hits", 3]], strong_rock: [["Metal", 7]],
                   everything: [["Hits", 3], ["Metal", 7], ["Metal", 2]]}
    native_got = await native.collect(0.5)
    assert [(p.subscription_id, p.response) for _, p in native_got] == [
        (native_sid, ["Hits", 3])]
    assert native_got[0][0].body[:1] != b"{"  # msgpack, as its request
    assert sorted(tuner.publisher.subscription_ids) == sorted(
        [pop, strong_rock, everything, native_sid])


async def test_a_raising_filter_gives_that_subscriber_nothing(tuner: Tuning) -> None:
    def fussy(parameters: Mapping[str, str], station: str, strength: int) -> bool:
        if station == "Boom":
            raise ValueError("cannot stand it")
        return True

    tuner.provider.add_broadcast_filter("signal", fussy)
    sid = await subscribe(tuner.proxy, {"genre": "pop"})
    tuner.provider.fire("signal", "Boom", 1)
    tuner.provider.fire("signal", "Charts", 2)
    assert firings(await tuner.client.collect(1.0)) == {sid: [["Charts", 2]]}
    assert tuner.counters["selective-broadcast-filter-failed"] == 1
    assert sid in tuner.publisher.subscription_ids


async def test_min_interval_drops_broadcasts_that_come_too_soon(tuner: Tuning) -> None:
    sid = await subscribe(tuner.proxy, None, on_change(1_000))
    for strength in (1, 2, 3):
        tuner.provider.fire("signal", "Hits", strength)
    assert firings(await tuner.client.collect(1.8)) == {sid: [["Hits", 1]]}  # not deferred
    assert tuner.counters["selective-broadcast-dropped-min-interval"] == 2
    tuner.provider.fire("signal", "Hits", 4)  # the interval has passed
    assert firings(await tuner.client.collect(1.0)) == {sid: [["Hits", 4]]}


async def test_publications_live_the_publication_ttl_and_end_at_the_expiry(
        tuner: Tuning) -> None:
    sid = await subscribe(tuner.proxy, None, on_change(0, ttl_ms=2_000, validity_ms=1_000))
    tuner.provider.fire("signal", "Hits", 1)
    (publication,) = await tuner.client.collect(0.5)
    now = int(time.time() * 1000)
    assert publication.body["response"] == ["Hits", 1]
    assert now - 2_000 < publication.expiry_ms <= now + 2_000  # (the publication ttl)
    await eventually(lambda: sid not in tuner.publisher.subscription_ids, 5.0, "the expiry")
    tuner.provider.fire("signal", "Hits", 2)
    assert await tuner.client.collect(0.5) == []


async def test_an_update_changes_the_filter_parameters(tuner: Tuning) -> None:
    tuner.provider.add_broadcast_filter("signal", genre_filter)
    sid = await subscribe(tuner.proxy, {"genre": "pop"})
    await subscribe(tuner.proxy, {"genre": "rock"}, subscription_id=sid)
    tuner.provider.fire("signal", "Hits", 1)
    tuner.provider.fire("signal", "Metal", 1)
    assert firings(await tuner.client.collect(1.0)) == {sid: [["Metal", 1]]}
    assert tuner.publisher.subscription_ids == [sid]


async def test_the_stop_ends_a_selective_subscription(tuner: Tuning) -> None:
    sid = await subscribe(tuner.proxy, None)
    await tuner.proxy.stop_subscription(sid)
    await eventually(lambda: not tuner.publisher.subscription_ids, what="the stop")
    tuner.provider.fire("signal", "Hits", 1)
    assert await tuner.client.collect(0.5) == []


async def test_unregistering_ends_selective_subscriptions_with_an_error(tuner: Tuning) -> None:
    sid = await subscribe(tuner.proxy, None)
    await tuner.runtime.unregister_provider(tuner.pid)
    (publication,) = await tuner.client.collect(1.0)
    assert publication.body["subscriptionId"] == sid
    assert publication.body["error"]["_typeName"] == SUBSCRIPTION_EXCEPTION


# ---------------------------------------------------------------------- refusals


@pytest.mark.parametrize("name, qos, parameters, fragment", [
    ("signal", None, {"min_strength": "3"}, "expected filter parameters"),
    ("signal", periodic(100), None, "takes an OnChange qos"),
    ("signal", on_change(0, validity_ms=-1), None, "lies in the past"),
    ("news", None, None, "not selective: subscribe to its multicast"),
    ("weather", None, None, "misses broadcast weather"),
])
async def test_refused_selective_subscriptions(tuner: Tuning, name: str, qos: Any,
                                               parameters: dict[str, str] | None,
                                               fragment: str) -> None:
    sid, answer = await tuner.proxy.subscribe(name, on_change(0) if qos is None else qos,
                                              selective=True, filter_parameters=parameters)
    refused(answer, sid, fragment)
    assert tuner.publisher.subscription_ids == []


async def test_a_keep_alive_qos_is_taken_as_on_change_without_heartbeats(tuner: Tuning) -> None:
    sid = await subscribe(tuner.proxy, {}, keep_alive(100))
    assert await tuner.client.collect(0.6) == []
    tuner.provider.fire("signal", "Hits", 1)
    assert firings(await tuner.client.collect(0.5)) == {sid: [["Hits", 1]]}


async def test_a_multicast_subscription_to_a_selective_broadcast_is_refused(
        stack: AsyncExitStack, cc: Any, tuner: Tuning) -> None:
    client = tuner.client
    sid = "mrq-1"
    answer = await client._ask(sid, "mrq", tuner.proxy.participant_id, tuner.pid, {
        "_typeName": "joynr.MulticastSubscriptionRequest", "subscriptionId": sid,
        "subscribedToName": "signal", "multicastId": f"{tuner.pid}/signal",
        "qos": {"_typeName": "joynr.MulticastSubscriptionQos", "expiryDateMs": 0}},
        ttl_ms=10_000, headers={"c-z4": sid}, timeout_s=10.0)
    refused(answer, sid, "is selective")


def test_the_provider_api_refuses_what_a_selective_broadcast_does_not_have() -> None:
    provider = TunerProvider()
    with pytest.raises(TypeError, match="not selective"):
        provider.add_broadcast_filter("news", genre_filter)
    with pytest.raises(TypeError, match="no broadcast weather"):
        provider.add_broadcast_filter("weather", genre_filter)
    with pytest.raises(TypeError, match="callable"):
        provider.add_broadcast_filter("signal", "genre")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="no partitions"):
        provider.fire("signal", "Hits", 1, partitions=["eu"])
    provider.add_broadcast_filter("signal", genre_filter)
    assert provider.broadcast_filters("signal") == (genre_filter,)
    assert provider.broadcast_filters("news") == ()


# ---------------------------------------------------------------------- hostile requests


def _json_request(kind: str, sid: str, qos: Any, extra: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    body = {"_typeName": f"joynr.{kind}", "subscriptionId": sid,
            "subscribedToName": "signal" if kind.startswith("Broadcast") else "station",
            "qos": qos}
    body.update(extra or {})
    return body


HOSTILE_JSON = [
    ("arq", _json_request("SubscriptionRequest", "h1", {
        "_typeName": "joynr.OnChangeSubscriptionQos", "minIntervalMs": "fast"})),
    ("arq", _json_request("SubscriptionRequest", "h2", {"_typeName": "joynr.FancyQos"})),
    ("arq", _json_request("SubscriptionRequest", "h3", [1, 2])),
    ("brq", _json_request("BroadcastSubscriptionRequest", "h4", on_change(0), {
        "filterParameters": {"_typeName": "joynr.BroadcastFilterParameters",
                             "filterParameters": {"genre": 5}}})),
    ("brq", _json_request("BroadcastSubscriptionRequest", "h5", on_change(0), {
        "filterParameters": {"_typeName": "joynr.BroadcastFilterParameters",
                             "filterParameters": {f"p{i}": "x" for i in range(1000)}}})),
    ("brq", _json_request("BroadcastSubscriptionRequest", "h6", on_change(0), {
        "filterParameters": {"_typeName": "joynr.BroadcastFilterParameters",
                             "filterParameters": {"genre": "x" * 10_000}}})),
    ("brq", _json_request("BroadcastSubscriptionRequest", "h7", on_change(0), {
        "filterParameters": "genre=pop"})),
]


async def test_hostile_json_requests_are_refused_with_a_reason_and_counted(
        tuner: Tuning) -> None:
    before = tuner.counters["dropped-bad-subscription-request"]
    client, proxy = tuner.client, tuner.proxy
    for kind, body in HOSTILE_JSON:
        sid = body["subscriptionId"]
        answer = await client._ask(sid, kind, proxy.participant_id, tuner.pid, body,
                                   ttl_ms=10_000, headers={"c-z4": sid}, timeout_s=10.0)
        refused(answer, sid, "bad subscription request")
    # one without a readable subscription id: counted, not answered
    await client.send("brq", proxy.participant_id, tuner.pid,
                      _json_request("BroadcastSubscriptionRequest", 5, on_change(0)))  # type: ignore[arg-type]
    await eventually(lambda: tuner.counters["dropped-bad-subscription-request"] - before
                     == len(HOSTILE_JSON) + 1, what="every hostile request counted")
    assert tuner.publisher.subscription_ids == []
    # the provider goes on serving
    sid = await subscribe(proxy, {"genre": "pop"})
    tuner.provider.fire("signal", "Hits", 1)
    assert firings(await client.collect(1.0)) == {sid: [["Hits", 1]]}


def _pack(data: Any) -> bytes:
    return msgpack.packb(data, use_bin_type=True)


async def test_hostile_msgpack_requests_are_refused_with_a_reason_and_counted(
        stack: AsyncExitStack, cc: Any, tuner: Tuning) -> None:
    native = await Native.open(stack, cc)
    before = tuner.counters["dropped-bad-subscription-request"]
    hostile = [
        (MessageType.SUBSCRIPTION_REQUEST, SubscriptionRequest(
            "m1", "station", {"type": "OnChangeSubscriptionQos", "period_ms": 5}).to_body()),
        (MessageType.SUBSCRIPTION_REQUEST, SubscriptionRequest(
            "m2", "station", {"min_interval_ms": "0"}).to_body()),
        (MessageType.SUBSCRIPTION_REQUEST, SubscriptionRequest(
            "m3", "station", {"type": "Bogus"}).to_body()),
        (MessageType.SUBSCRIPTION_REQUEST, _pack({"subscription_id": "m4",
                                                  "subscribe_to_name": "station",
                                                  "qos": [1]})),
        (MessageType.BROADCAST_SUBSCRIPTION_REQUEST, _pack({
            "subscription_id": "m5", "subscribe_to_name": "signal", "qos": {},
            "filter_parameters": {"genre": 5}})),
        (MessageType.BROADCAST_SUBSCRIPTION_REQUEST, _pack({
            "subscription_id": "m6", "subscribe_to_name": "signal", "qos": {},
            "filter_parameters": {str(i): "x" for i in range(500)}})),
        (MessageType.BROADCAST_SUBSCRIPTION_REQUEST, BroadcastSubscriptionRequest(
            "m7", "signal", {"max_interval_ms": 3.5}).to_body()),
    ]
    for kind, body in hostile:
        sid = msgpack.unpackb(body)["subscription_id"]
        reply = await native.request(kind, tuner.pid, body, sid)
        assert reply.error is not None, sid
        assert reply.error["type"] == "SubscriptionException"
        assert reply.error["subscription_id"] == sid
        assert "bad subscription request" in reply.error["message"]
    # unreadable ids: counted, not answered
    for body in (b"\xc1garbage", _pack({"subscription_id": 7, "subscribe_to_name": "x"}),
                 _pack(["not", "a", "map"])):
        await native.raw.send_frame(native.raw.frame(_message(native, tuner.pid, body)))
    await eventually(lambda: tuner.counters["dropped-bad-subscription-request"] - before
                     == len(hostile) + 3, what="every hostile request counted")
    assert tuner.publisher.subscription_ids == []
    sid, reply = await native.subscribe(tuner.pid, "signal", {}, filter_parameters={})
    assert reply.error is None
    tuner.provider.fire("signal", "Hits", 1)
    assert [p.response for _, p in await native.collect(1.0)] == [["Hits", 1]]


def _message(native: Native, recipient: str, body: bytes) -> Message:
    return Message(MessageType.BROADCAST_SUBSCRIPTION_REQUEST, native.pid, recipient,
                   now_ms() + 10_000, body)


"""Both body formats end to end: a provider of this project in one libjoynr runtime, called
by proxies in another that write joynr's JSON bodies (as joynr's runtimes do) or msgpack,
over real websocket connections to one cluster controller.

What crosses the cluster controller is read at its router's audit hook: every message a
transport accepted, with its body as it travels.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import (
    ApplicationError,
    LibjoynrRuntime,
    Provider,
    ProviderQos,
    attribute,
    broadcast,
    interface,
)
from pyjoynr.libjoynr.advanced import (
    MessageNotSentError,
    MethodInvocationError,
    ProviderRuntimeError,
)
from pyjoynr.programming.discovery_types import CustomParameter
from pyjoynr.programming.proxies import Proxy
from pyjoynr.runtime.bodies import BODY_PARAMETER, BodyFormat, format_of
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import joynr_name
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.testing.cluster import eventually
from tests.support.radio import Country, FavoriteError, Radio, RadioProvider, Station
from tests.support.wire import Wire

MSGPACK, JSON = BodyFormat.MSGPACK, BodyFormat.JSON


@dataclass
class Pair:
    cc: ClusterController
    wire: Wire
    provider_rt: LibjoynrRuntime
    provider: RadioProvider
    pid: str
    proxy: Proxy


@pytest.fixture
async def pair(cc, runtimes) -> Pair:
    """The Radio provider, and a proxy of it in another runtime that writes JSON."""
    wire = Wire(cc)
    provider_rt, consumer_rt = await runtimes(), await runtimes()
    provider = RadioProvider()
    pid = await provider_rt.register_provider("vienna", provider)
    proxy = await consumer_rt.build_proxy(Radio, "vienna", ttl_ms=3_000, body_format=JSON)
    assert proxy.body_format is JSON
    return Pair(cc, wire, provider_rt, provider, pid, proxy)


async def test_calls_and_errors_of_a_json_proxy(pair: Pair) -> None:
    proxy, provider = pair.proxy, pair.provider
    fm4 = Station("FM4", Country.AUSTRIA, 103.8)
    assert await proxy.add_favorite(fm4) is True
    assert await proxy.favorites() == [fm4]
    assert await proxy.current_station.get() == "FM4"
    await proxy.current_station.set("Oe1")
    assert provider.attribute_values["current_station"] == "Oe1"
    with pytest.raises(ApplicationError) as info:
        await proxy.remove_favorite("nothing")
    assert info.value.error == FavoriteError.NOT_FOUND.name
    assert "nothing is no favorite" in info.value.message
    with pytest.raises(ProviderRuntimeError, match="the tuner broke"):
        await proxy.crash()
    await proxy.note("hello")
    await asyncio.wait_for(provider.noted.wait(), 5)
    assert provider.notes == ["hello"]

    # what travelled: joynr's JSON, both ways, named and typed the joynr way
    requests = pair.wire.json(MessageType.REQUEST, sender=proxy.participant_id)
    assert [r["methodName"] for r in requests] == [
        "addFavorite", "favorites", "getCurrentStation", "setCurrentStation", "removeFavorite",
        "crash"]
    assert {r["_typeName"] for r in requests} == {"joynr.Request"}
    assert requests[0]["params"] == [{"_typeName": "Station", "name": "FM4",
                                      "country": "AUSTRIA", "frequency": 103.8}]
    replies = {r["requestReplyId"]: r for r in
               pair.wire.json(MessageType.REPLY, recipient=proxy.participant_id)}
    answers = [replies[r["requestReplyId"]] for r in requests]
    assert {a["_typeName"] for a in answers} == {"joynr.Reply"}
    assert answers[0]["response"] == [True]
    assert answers[1]["response"] == [[{"_typeName": "Station", "name": "FM4",
                                        "country": "AUSTRIA", "frequency": 103.8}]]
    assert answers[2]["response"] == ["FM4"]
    assert answers[4]["error"]["_typeName"] == "joynr.exceptions.ApplicationException"
    assert answers[4]["error"]["error"] == {"_typeName": "FavoriteError", "name": "NOT_FOUND"}
    assert answers[5]["error"]["_typeName"] == "joynr.exceptions.ProviderRuntimeException"
    (one_way,) = pair.wire.json(MessageType.ONE_WAY, sender=proxy.participant_id)
    assert (one_way["_typeName"], one_way["methodName"], one_way["params"]) == (
        "joynr.OneWayRequest", "note", ["hello"])


async def test_attribute_subscription_of_a_json_proxy(pair: Pair) -> None:
    proxy, provider = pair.proxy, pair.provider
    seen: asyncio.Queue[str] = asyncio.Queue()
    subscription = await proxy.current_station.subscribe(seen.put_nowait)
    assert await asyncio.wait_for(seen.get(), 5) == "FM4"
    provider.set_attribute("current_station", "Radio Wien")
    assert await asyncio.wait_for(seen.get(), 5) == "Radio Wien"
    await subscription.unsubscribe()
    publisher = provider.registrations[0].publisher
    await eventually(lambda: not publisher.subscription_ids, what="the provider's stop")

    sid = subscription.subscription_id
    (request,) = pair.wire.json(MessageType.SUBSCRIPTION_REQUEST, sender=proxy.participant_id)
    assert (request["_typeName"], request["subscribedToName"], request["subscriptionId"]) == (
        "joynr.SubscriptionRequest", "currentStation", sid)
    (reply,) = pair.wire.json(MessageType.SUBSCRIPTION_REPLY, recipient=proxy.participant_id)
    assert (reply["_typeName"], reply["subscriptionId"]) == ("joynr.SubscriptionReply", sid)
    publications = pair.wire.json(MessageType.PUBLICATION, recipient=proxy.participant_id)
    assert [(p["_typeName"], p["response"]) for p in publications] == [
        ("joynr.SubscriptionPublication", ["FM4"]),
        ("joynr.SubscriptionPublication", ["Radio Wien"])]
    (stop,) = pair.wire.json(MessageType.SUBSCRIPTION_STOP, sender=proxy.participant_id)
    assert stop == {"_typeName": "joynr.SubscriptionStop", "subscriptionId": sid}


async def test_broadcasts_reach_json_and_msgpack_proxies(pair: Pair, runtimes) -> None:
    """Proxies of both body formats subscribe under joynr's name of the broadcast
    (newStation); the provider publishes once under that name, in JSON by default."""
    proxy, provider, pid = pair.proxy, pair.provider, pair.pid
    native_rt = await runtimes()
    native = await native_rt.build_proxy(Radio, "vienna")
    assert native.body_format is MSGPACK
    europe: asyncio.Queue[Station] = asyncio.Queue()
    others: asyncio.Queue[Station] = asyncio.Queue()
    await proxy.new_station.subscribe(europe.put_nowait, partitions=["eu", "+"])
    await native.new_station.subscribe(others.put_nowait, partitions=["eu", "*"])
    receivers = pair.cc.router.multicast_receivers
    assert receivers.receivers_for(f"{pid}/newStation/eu/de") == {proxy.participant_id,
                                                                   native.participant_id}
    assert receivers.receivers_for(f"{pid}/new_station/eu/de") == set()

    x = Station("X", Country.GERMANY, 99.9)
    provider.fire("new_station", x, partitions=["eu", "de"])
    assert await asyncio.wait_for(europe.get(), 5) == x
    assert await asyncio.wait_for(others.get(), 5) == x
    await asyncio.sleep(0.2)
    assert europe.empty() and others.empty()  # once each

    (request,) = pair.wire.json(MessageType.MULTICAST_SUBSCRIPTION_REQUEST,
                                sender=proxy.participant_id)
    assert (request["_typeName"], request["subscribedToName"], request["multicastId"]) == (
        "joynr.MulticastSubscriptionRequest", "newStation", f"{pid}/newStation/eu/+")
    (reply,) = pair.wire.json(MessageType.SUBSCRIPTION_REPLY, recipient=proxy.participant_id)
    assert reply["subscriptionId"] == request["subscriptionId"]
    # (one body, seen once per runtime it was delivered to)
    multicasts = pair.wire.json(MessageType.MULTICAST, sender=pid,
                                recipient=f"{pid}/newStation/eu/de")
    assert multicasts and all(m == {"_typeName": "joynr.MulticastPublication",
                                    "multicastId": f"{pid}/newStation/eu/de",
                                    "response": [{"_typeName": "Station", "name": "X",
                                                  "country": "GERMANY", "frequency": 99.9}]}
                              for m in multicasts)


async def test_msgpack_multicasts_when_the_runtime_says_so(cc, runtimes) -> None:
    wire = Wire(cc)
    provider_rt, consumer_rt = await runtimes(), await runtimes()
    provider_rt.core.multicast_body = MSGPACK
    provider = RadioProvider()
    pid = await provider_rt.register_provider("fleet", provider)
    proxy = await consumer_rt.build_proxy(Radio, "fleet")
    seen: asyncio.Queue[Station] = asyncio.Queue()
    await proxy.new_station.subscribe(seen.put_nowait)
    y = Station("Y", Country.AUSTRIA)
    provider.fire("new_station", y)
    assert await asyncio.wait_for(seen.get(), 5) == y
    (body,) = wire.bodies(MessageType.MULTICAST, sender=pid)
    assert format_of(body) is MSGPACK


async def test_the_discovery_entry_chooses_the_format(cc, runtimes) -> None:
    """Providers registered here carry pyjoynr-body=msgpack: proxies write msgpack to them;
    to a provider whose entry does not say msgpack they write JSON."""
    wire = Wire(cc)
    provider_rt, consumer_rt = await runtimes(), await runtimes()
    native_pid = await provider_rt.register_provider("native", RadioProvider())
    other_pid = await provider_rt.register_provider(
        "other", RadioProvider(),
        qos=ProviderQos(custom_parameters=[CustomParameter(BODY_PARAMETER, "json")]))
    entries = {e.participant_id: e for e in cc.discovery.entries()}
    assert entries[native_pid].qos.custom_parameters == [
        CustomParameter("pyjoynr-body", "msgpack")]
    assert entries[other_pid].qos.custom_parameters == [CustomParameter(BODY_PARAMETER, "json")]

    native = await consumer_rt.build_proxy(Radio, "native")
    other = await consumer_rt.build_proxy(Radio, "other")
    assert (native.body_format, other.body_format) == (MSGPACK, JSON)
    for proxy in (native, other):
        assert await proxy.add_favorite(Station("A", Country.AUSTRIA)) is True
        assert await proxy.current_station.get() == "FM4"
    for proxy, fmt in ((native, MSGPACK), (other, JSON)):
        sent = wire.bodies(MessageType.REQUEST, sender=proxy.participant_id)
        answered = wire.bodies(MessageType.REPLY, recipient=proxy.participant_id)
        assert len(sent) == len(answered) == 2
        assert {format_of(b) for b in sent + answered} == {fmt}


@dataclass
class Tuning:
    station_name: str
    frequency_mhz: float
    raw: bytes


@interface("test/Tuner", version=(1, 0))
class Tuner:
    """Values whose joynr JSON is not their msgpack form: members in lowerCamelCase, bytes as
    arrays of signed bytes."""

    tuning = attribute(Tuning)
    tuned = broadcast(tuning=Tuning)

    async def tune(self, tuning: Tuning) -> Tuning: ...


class TunerProvider(Provider, interface=Tuner):
    async def tune(self, tuning: Tuning) -> Tuning:
        self.set_attribute("tuning", tuning)
        self.fire("tuned", tuning)
        return tuning


async def test_json_values_are_typed_by_what_they_answer(cc, runtimes) -> None:
    wire = Wire(cc)
    provider_rt, consumer_rt = await runtimes(), await runtimes()
    await provider_rt.register_provider("lab", TunerProvider())
    proxy = await consumer_rt.build_proxy(Tuner, "lab", ttl_ms=3_000, body_format=JSON)
    tunings: asyncio.Queue[Tuning] = asyncio.Queue()
    tuned: asyncio.Queue[Tuning] = asyncio.Queue()
    await proxy.tuning.subscribe(tunings.put_nowait)
    await proxy.tuned.subscribe(tuned.put_nowait)
    fm4 = Tuning("FM4", 103.8, b"\x00\xff")
    assert await proxy.tune(fm4) == fm4
    assert await asyncio.wait_for(tunings.get(), 5) == fm4
    assert await asyncio.wait_for(tuned.get(), 5) == fm4
    assert await proxy.tuning.get() == fm4

    wired = {"_typeName": "Tuning", "stationName": "FM4", "frequencyMhz": 103.8,
             "raw": [0, -1]}
    (request, _) = wire.json(MessageType.REQUEST, sender=proxy.participant_id)
    assert request["params"] == [wired]
    replies = wire.json(MessageType.REPLY, recipient=proxy.participant_id)
    assert [r["response"] for r in replies] == [[wired], [wired]]
    (publication,) = wire.json(MessageType.PUBLICATION, recipient=proxy.participant_id)
    assert publication["response"] == [wired]
    assert [m["response"] for m in wire.json(MessageType.MULTICAST)] == [[wired]]


@joynr_name("Station")
@dataclass
class OtherStation:
    title: str


@interface("test/Radio", version=(1, 2))
class OtherRadio:
    """The Radio as a joynr runtime might have it wrong."""

    async def add_favorite(self, station: OtherStation) -> bool: ...

    async def remove_favorite(self, name: int) -> None: ...


async def test_json_calls_that_do_not_fit_are_answered_in_json(cc, runtimes) -> None:
    wire = Wire(cc)
    provider_rt, consumer_rt = await runtimes(), await runtimes()
    await provider_rt.register_provider("vienna", RadioProvider())
    proxy = await consumer_rt.build_proxy(OtherRadio, "vienna", ttl_ms=3_000, body_format=JSON)
    # the overload exists, its values do not fit it
    with pytest.raises(MethodInvocationError, match="wrong parameter"):
        await proxy.add_favorite(OtherStation("FM4"))
    # no overload of these parameter types
    with pytest.raises(MethodInvocationError, match=r"no method removeFavorite\(Long\)"):
        await proxy.remove_favorite(3)
    errors = [r["error"] for r in wire.json(MessageType.REPLY, recipient=proxy.participant_id)]
    assert [e["_typeName"] for e in errors] == [
        "joynr.exceptions.MethodInvocationException"] * 2


async def test_the_routers_own_error_answer_is_in_the_requests_format(pair: Pair) -> None:
    """A request the cluster controller cannot deliver is answered by its router, in JSON
    to a JSON request."""
    wire, proxy, pid = pair.wire, pair.proxy, pair.pid
    await pair.provider_rt.unregister_provider(pid)
    assert not pair.cc.router.has_route(pid)
    with pytest.raises(MessageNotSentError):
        await proxy.with_ttl(300).favorites()
    (answer,) = wire.json(MessageType.REPLY, sender=pid, recipient=proxy.participant_id)
    assert answer["_typeName"] == "joynr.Reply"
    # (the type every joynr runtime decodes, the meaning in its text: docs/wire.md)
    assert answer["error"]["_typeName"] == "joynr.exceptions.ProviderRuntimeException"
    assert answer["error"]["detailMessage"].startswith("JoynrMessageNotSentException: ")


async def test_hostile_bodies_in_either_format_are_refused(pair: Pair) -> None:
    """Bodies that do not decode reach the provider (through the cluster controller, from a
    routed participant): only a request whose id can be read is answered; the provider goes
    on serving."""
    cc, proxy, pid = pair.cc, pair.proxy, pair.pid

    def request(kind: MessageType, body: bytes) -> None:
        assert cc.router.route(Message(kind, proxy.participant_id, pid, now_ms() + 3_000, body))

    def joynr(**members: Any) -> bytes:
        return json.dumps(members).encode()

    request(MessageType.REQUEST, b"{not json")
    request(MessageType.REQUEST, b"\n {" + b"[" * 100 + b"]" * 100 + b"}")
    request(MessageType.REQUEST, b"\xc1")
    request(MessageType.REQUEST, joynr(_typeName="joynr.Request", requestReplyId="r-member",
                                       methodName=5))
    request(MessageType.REQUEST, joynr(
        _typeName="joynr.Request", requestReplyId="r-values", methodName="addFavorite",
        paramDatatypes=["Station"], params=[{"_typeName": "Station", "name": "X"}]))
    request(MessageType.ONE_WAY, joynr(_typeName="joynr.OneWayRequest", methodName="note",
                                       paramDatatypes=["String"], params=[7]))
    request(MessageType.SUBSCRIPTION_REQUEST, joynr(_typeName="joynr.SubscriptionRequest"))
    request(MessageType.MULTICAST_SUBSCRIPTION_REQUEST, b"{\"_typeName\": 1}")
    request(MessageType.SUBSCRIPTION_STOP, b"{}")

    def answered() -> list[dict[str, Any]]:
        return pair.wire.json(MessageType.REPLY, recipient=proxy.participant_id)

    await eventually(answered, what="the answer to the request with values that do not fit")
    assert await proxy.favorites() == []  # still serving
    await asyncio.sleep(0.2)
    (refused,) = [r for r in answered() if r["requestReplyId"] == "r-values"]
    assert refused["error"]["_typeName"] == "joynr.exceptions.MethodInvocationException"
    assert "wrong parameter" in refused["error"]["detailMessage"]
    assert len(answered()) == 2  # that one and the call that followed
    assert not pair.wire.bodies(MessageType.SUBSCRIPTION_REPLY)
    assert pair.provider.notes == []

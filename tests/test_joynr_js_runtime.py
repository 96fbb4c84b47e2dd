"""A client that behaves as joynr's JavaScript runtime on the wire (tests/support/joynr_js.py)
against a real cluster controller: its start sequence, a provider and a proxy of its own, and
this project's runtimes (native dialect) as the other end of every call."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import AsyncExitStack
from typing import Any

import pytest

from pyjoynr.libjoynr import ApplicationError
from pyjoynr.runtime.smrf import SmrfFrame, decode_smrf, encode_smrf
from pyjoynr.testing.cluster import eventually
from tests.support.joynr_js import JS_EXCEPTION_TYPES, JoynrCallError, JoynrJsClient, new_id
from tests.support.radio import Country, Radio, RadioProvider, Station

STATION = "Station"  # the joynr type name of tests.support.radio.Station (its class name)


def station_json(name: str, country: str = "AUSTRIA", frequency: float = 0.0
                 ) -> dict[str, Any]:
    return {"_typeName": STATION, "name": name, "country": country, "frequency": frequency}


@pytest.fixture
async def stack():
    async with AsyncExitStack() as s:
        yield s


async def js(stack: AsyncExitStack, cc: Any, **options: Any) -> JoynrJsClient:
    return await JoynrJsClient.open(stack, cc.websocket_address.url, **options)


async def test_start_sequence_answers_each_system_call(cc, stack):
    client = await js(stack, cc, start=False)
    # the very first call: the routing proxy's own hop; the reply can only reach it this way
    await client.add_next_hop(client.routing_proxy, False)
    reply_to = await client.call("CC.RoutingProvider.ParticipantId", "getReplyToAddress", [], [],
                                 sender=client.routing_proxy)
    assert isinstance(reply_to[0], str)
    await client.add_next_hop(client.discovery_proxy, False)
    assert await client.resolve_next_hop(client.discovery_proxy) is True
    assert await client.resolve_next_hop("nobody-knows-me") is False
    # every frame the CC sent was SMRF with a JSON body, replies echo c-z4
    for frame in client.frames:
        smrf = decode_smrf(frame)
        headers = dict(smrf.headers)
        assert headers["t"] == "rp"
        body = json.loads(smrf.body)
        assert body["_typeName"] == "joynr.Reply"
        assert headers["c-z4"] == body["requestReplyId"]
    # a void method's reply carries "response": []
    void = json.loads(decode_smrf(client.frames[0]).body)
    assert void["response"] == []


async def test_python_provider_served_to_the_js_runtime(cc, runtimes, stack):
    provider_rt = await runtimes()
    provider = RadioProvider()
    pid = await provider_rt.register_provider("vienna", provider)
    client = await js(stack, cc)
    proxy, entry = await client.build_proxy("vienna", "test/Radio", (1, 0))
    assert entry["participantId"] == pid
    assert entry["_typeName"] == "joynr.types.DiscoveryEntryWithMetaInfo"
    assert entry["isLocal"] is True

    fm4 = station_json("FM4", "AUSTRIA", 103.8)
    assert await client.call(pid, "addFavorite", [STATION], [fm4], sender=proxy) == [True]
    assert await client.call(pid, "addFavorite", [STATION], [fm4], sender=proxy) == [False]
    assert provider.stations == [Station("FM4", Country.AUSTRIA, 103.8)]
    assert await client.call(pid, "favorites", [], [], sender=proxy) == [[fm4]]
    # attributes: get<Attr> / set<Attr>
    assert await client.call(pid, "getCurrentStation", [], [], sender=proxy) == ["FM4"]
    assert await client.call(pid, "setCurrentStation", ["String"], ["Oe1"], sender=proxy) == []
    assert provider.get_attribute("current_station") == "Oe1"
    # a modelled error and a provider failure
    with pytest.raises(JoynrCallError) as info:
        await client.call(pid, "removeFavorite", ["String"], ["nothing"], sender=proxy)
    assert info.value.error["_typeName"] == "joynr.exceptions.ApplicationException"
    assert info.value.error["error"]["name"] == "NOT_FOUND"
    with pytest.raises(JoynrCallError) as info:
        await client.call(pid, "crash", [], [], sender=proxy)
    assert info.value.error["_typeName"] == "joynr.exceptions.ProviderRuntimeException"
    assert "the tuner broke" in info.value.error["detailMessage"]
    # an unknown method
    with pytest.raises(JoynrCallError) as info:
        await client.call(pid, "skipAhead", ["Integer"], [10], sender=proxy)
    assert info.value.error["_typeName"] == "joynr.exceptions.MethodInvocationException"
    # one-way
    await client.one_way(pid, "note", ["String"], ["hello"], sender=proxy)
    await asyncio.wait_for(provider.noted.wait(), 5)
    assert provider.notes == ["hello"]
    # custom headers come back on the reply
    await client.call(pid, "favorites", [], [], sender=proxy, headers={"c-trace": "abc"})
    last_reply = decode_smrf(client.frames[-1])
    assert ("c-trace", "abc") in last_reply.headers


async def test_attribute_subscription_from_the_js_runtime(cc, runtimes, stack):
    provider_rt = await runtimes()
    provider = RadioProvider()
    pid = await provider_rt.register_provider("vienna", provider)
    client = await js(stack, cc)
    proxy, _ = await client.build_proxy("vienna", "test/Radio", (1, 0))
    sid, answer = await client.subscribe_attribute(pid, "currentStation", sender=proxy)
    assert answer.type == "srp"
    assert answer.body == {"_typeName": "joynr.SubscriptionReply", "subscriptionId": sid}
    provider.set_attribute("current_station", "Radio Wien")
    seen = []
    while "Radio Wien" not in seen:
        publication = await client.next_message("p")
        assert publication.body["_typeName"] == "joynr.SubscriptionPublication"
        assert publication.body["subscriptionId"] == sid
        seen.append(publication.body["response"][0])
    publisher = provider.registrations[0].publisher
    assert sid in publisher.subscription_ids
    await client.stop_subscription(pid, sid, sender=proxy)
    await eventually(lambda: not publisher.subscription_ids, what="provider stop")


async def test_broadcast_reaches_the_js_runtime_as_a_multicast(cc, runtimes, stack):
    provider_rt = await runtimes()
    provider = RadioProvider()
    pid = await provider_rt.register_provider("vienna", provider)
    client = await js(stack, cc)
    proxy, _ = await client.build_proxy("vienna", "test/Radio", (1, 0))
    multicast_id = f"{pid}/newStation/eu"
    await client.add_multicast_receiver(f"{pid}/newStation/+", proxy, pid)
    provider.fire("new_station", Station("X", Country.GERMANY), partitions=["eu"])
    message = await client.next_message("m")
    assert message.recipient == multicast_id
    assert message.body["_typeName"] == "joynr.MulticastPublication"
    assert message.body["multicastId"] == multicast_id
    assert message.body["response"] == [station_json("X", "GERMANY")]
    await client.remove_multicast_receiver(f"{pid}/newStation/+", proxy, pid)
    provider.fire("new_station", Station("Y", Country.GERMANY), partitions=["eu"])
    with pytest.raises(TimeoutError):
        await client.next_message("m", timeout_s=0.5)


async def test_js_provider_called_by_a_python_proxy(cc, runtimes, stack):
    client = await js(stack, cc)
    calls: list[tuple[str, list[str], list[Any]]] = []

    async def radio(method: str, datatypes: list[str], params: list[Any]) -> list[Any]:
        calls.append((method, datatypes, params))
        if method == "addFavorite":
            return [params[0]["name"] == "FM4"]
        if method == "getCurrentStation":
            return ["JS FM"]
        if method == "favorites":
            return [[station_json("FM4", "AUSTRIA", 103.8)]]
        if method == "removeFavorite":
            raise JoynrCallError({"_typeName": "joynr.exceptions.ApplicationException",
                                  "detailMessage": "no such favorite",
                                  "error": {"_typeName": "FavoriteError", "name": "NOT_FOUND"}})
        return []

    pid = await client.register_provider("graz", "test/Radio", (1, 2), radio)
    consumer = await runtimes()
    proxy = await consumer.build_proxy(Radio, "graz", ttl_ms=5_000)
    assert proxy.provider_participant_id == pid
    assert await proxy.add_favorite(Station("FM4", Country.AUSTRIA, 103.8)) is True
    assert calls[-1] == ("addFavorite", [STATION], [station_json("FM4", "AUSTRIA", 103.8)])
    assert await proxy.favorites() == [Station("FM4", Country.AUSTRIA, 103.8)]
    assert await proxy.current_station.get() == "JS FM"
    assert calls[-1][0] == "getCurrentStation"
    with pytest.raises(ApplicationError) as info:
        await proxy.remove_favorite("x")
    assert info.value.error == "NOT_FOUND"


async def test_js_provider_and_js_proxy_through_the_cc(cc, stack):
    provider = await js(stack, cc)

    async def echo(method: str, datatypes: list[str], params: list[Any]) -> list[Any]:
        return [f"{method}:{params}"]

    pid = await provider.register_provider("linz", "test/Echo", (0, 1), echo)
    consumer = await js(stack, cc)
    proxy, entry = await consumer.build_proxy("linz", "test/Echo", (0, 1))
    assert entry["participantId"] == pid
    assert await consumer.call(pid, "say", ["String"], ["hi"], sender=proxy) == ["say:['hi']"]
    # the provider's published multicast reaches the consumer's receiver
    await consumer.add_multicast_receiver(f"{pid}/ping", proxy, pid)
    await provider.publish_multicast(pid, f"{pid}/ping", [1])
    message = await consumer.next_message("m")
    assert message.body["response"] == [1]
    await provider.unregister_provider(pid)
    assert await consumer.lookup(["linz"], "test/Echo", scope="LOCAL_ONLY") == []


HOSTILE_BODIES = [
    b"{",                                              # not JSON
    b'{"_typeName":"joynr.Request"}',                  # no methodName, no requestReplyId
    b'{"_typeName":"joynr.Reply","requestReplyId":"x","response":[]}',  # not a request
    b'{"_typeName":"joynr.Request","methodName":7,"requestReplyId":"r"}',
    b'{"_typeName":"joynr.Request","methodName":"addNextHop","requestReplyId":"r",'
    b'"paramDatatypes":"String","params":[]}',
    b'{"_typeName":"joynr.Request","methodName":"resolveNextHop","requestReplyId":"r",'
    b'"paramDatatypes":["String"],"params":[' + b"[" * 5000 + b"]" * 5000 + b"]}",
    b'{"_typeName":"joynr.Request","methodName":"resolveNextHop","requestReplyId":"r",'
    b'"paramDatatypes":["String"],"params":[1e999]}',
    b'{"_typeName":"joynr.Request","methodName":"resolveNextHop","requestReplyId":"r",'
    b'"paramDatatypes":["String"],"params":["\\ud800"]}',
    "{\"_typeName\":\"joynr.Request\",\"methodName\":\"x\",\"requestReplyId\":\"\u00e9\"".encode(
        "latin-1"),                                     # not UTF-8
]


async def test_hostile_json_bodies_to_the_system_providers_are_refused_and_counted(cc, stack):
    """Bodies a joynr runtime would never send, to the CC's Routing provider: each refused
    (counted; answered with an error where its requestReplyId can be read), nothing crashes,
    and the connection goes on serving."""
    client = await js(stack, cc)
    counters = cc.telemetry.counters
    before = sum(n for k, n in counters.items() if k.startswith("dropped-bad-"))
    for body in HOSTILE_BODIES:
        await client.ws.send(encode_smrf(SmrfFrame(
            client.routing_proxy, "CC.RoutingProvider.ParticipantId",
            int(time.time() * 1000) + 10_000, True, (("t", "rq"), ("id", new_id())), body)))
    await eventually(lambda: sum(n for k, n in counters.items()
                                 if k.startswith("dropped-bad-")) - before
                     == len(HOSTILE_BODIES), what="every body refused and counted")
    # the connection is still served
    assert await client.resolve_next_hop(client.routing_proxy) is True


async def test_a_request_expiring_without_a_route_is_answered_in_a_type_the_js_runtime_reads(
        cc, stack):
    """A JS proxy's request waits in the cluster controller for a route that never comes; when
    it expires the CC answers at once with an error joynr's JavaScript runtime decodes (whose
    type registry has no JoynrMessageNotSentException), the "not sent" meaning in its text."""
    client = await js(stack, cc)
    proxy = f"proxy-{new_id()}"
    await client.add_next_hop(proxy, False)
    ttl_ms = 500
    started = time.monotonic()
    with pytest.raises(JoynrCallError) as info:
        # (the client waits at most its TTL plus 2 s, as a caller a little past its expiry)
        await client.call(f"nobody-{new_id()}", "favorites", [], [], sender=proxy,
                          ttl_ms=ttl_ms, timeout_s=ttl_ms / 1000 + 2)
    assert time.monotonic() - started < ttl_ms / 1000 + 2
    error = info.value.error
    assert error["_typeName"] in JS_EXCEPTION_TYPES
    assert error["_typeName"] == "joynr.exceptions.ProviderRuntimeException"
    assert error["detailMessage"].startswith("JoynrMessageNotSentException: ")
    assert "not sent" in error["detailMessage"]
    assert client.undecodable == []
    assert cc.telemetry.counters["answered-not-sent"] >= 1

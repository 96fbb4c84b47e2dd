"""This project's consumer subscribed to a provider that behaves on the wire as joynr's
JavaScript runtime (tests/support/joynr_js.py: SMRF frames, hand-written JSON): the
subscription requests carry joynr's QoS and filter parameter objects, and the consumer gets
what a consumer written against joynr's documentation expects from such a provider (values,
missed-publication alerts), in both of this project's dialects (the cluster controller
translates the frames; the bodies are joynr's JSON either way)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import pytest

from pyjoynr.libjoynr import LibjoynrConfig
from pyjoynr.libjoynr.advanced import (
    OnChangeSubscriptionQos,
    OnChangeWithKeepAliveSubscriptionQos,
    PeriodicSubscriptionQos,
    PublicationMissedError,
)
from pyjoynr.runtime.messages import DIALECTS
from pyjoynr.testing.cluster import eventually
from tests.support.joynr_js import JoynrJsClient
from tests.support.tuner import Tuner

pytestmark = pytest.mark.network


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


async def nothing(method: str, datatypes: list[str], params: list[Any]) -> list[Any]:
    return []


@pytest.fixture(params=sorted(DIALECTS))
async def setup(request: pytest.FixtureRequest, cc: Any, runtimes: Any,
                stack: AsyncExitStack) -> tuple[JoynrJsClient, str, Any]:
    """A joynr-like provider of test/Tuner and a proxy of it in a runtime of this project."""
    provider = await JoynrJsClient.open(stack, cc.websocket_address.url)
    pid = await provider.register_provider("js-tuning", "test/Tuner", (1, 0), nothing)
    consumer = await runtimes(config=LibjoynrConfig(dialect=request.param))
    proxy = await consumer.build_proxy(Tuner, "js-tuning", ttl_ms=5_000)
    assert proxy.provider_participant_id == pid
    return provider, pid, proxy


async def test_a_periodic_subscription_with_alerts(setup: tuple[JoynrJsClient, str, Any]
                                                   ) -> None:
    provider, pid, proxy = setup
    values: list[int] = []
    errors: list[Exception] = []
    subscription = await proxy.level.subscribe(
        values.append, PeriodicSubscriptionQos(period_ms=100, alert_after_interval_ms=400),
        on_error=errors.append)
    request = await provider.next_message("arq")
    assert request.body["_typeName"] == "joynr.SubscriptionRequest"
    assert request.body["subscribedToName"] == "level"
    assert request.body["subscriptionId"] == subscription.subscription_id
    assert request.body["qos"] == {"_typeName": "joynr.PeriodicSubscriptionQos",
                                   "periodMs": 100, "alertAfterIntervalMs": 400,
                                   "publicationTtlMs": 10_000, "expiryDateMs": 0}
    consumer = request.sender
    for value in (1, 2, 3):  # as joynr's provider publishes each period
        await provider.publish(pid, consumer, subscription.subscription_id, [value])
    await eventually(lambda: values == [1, 2, 3], what="the publications")
    # the provider goes quiet: an alert per interval, with the subscription id
    await eventually(lambda: len(errors) >= 2, timeout_s=10, what="two alerts")
    assert all(isinstance(e, PublicationMissedError)
               and e.subscription_id == subscription.subscription_id for e in errors)
    # publications come back: delivered as before
    await provider.publish(pid, consumer, subscription.subscription_id, [4])
    await eventually(lambda: values[-1] == 4, what="the publication after the alerts")
    await subscription.unsubscribe()
    stop = await provider.next_message("sst")
    assert stop.body == {"_typeName": "joynr.SubscriptionStop",
                         "subscriptionId": subscription.subscription_id}


async def test_a_selective_broadcast_subscription(setup: tuple[JoynrJsClient, str, Any]
                                                  ) -> None:
    provider, pid, proxy = setup
    heard: list[tuple[str, int]] = []
    subscription = await proxy.signal.subscribe(
        lambda station, strength: heard.append((station, strength)),
        qos=OnChangeSubscriptionQos(min_interval_ms=250), filter_parameters={"genre": "rock"})
    request = await provider.next_message("brq")
    assert request.body["_typeName"] == "joynr.BroadcastSubscriptionRequest"
    assert request.body["subscribedToName"] == "signal"
    assert request.body["filterParameters"] == {
        "_typeName": "joynr.BroadcastFilterParameters", "filterParameters": {"genre": "rock"}}
    assert request.body["qos"] == {"_typeName": "joynr.OnChangeSubscriptionQos",
                                   "minIntervalMs": 250, "publicationTtlMs": 10_000,
                                   "expiryDateMs": 0}
    # what a joynr provider sends when its filters let a firing through
    await provider.publish(pid, request.sender, subscription.subscription_id, ["Metal", 7])
    await eventually(lambda: heard == [("Metal", 7)], what="the broadcast")
    await subscription.unsubscribe()


async def test_a_keep_alive_subscription_as_an_iterator(setup: tuple[JoynrJsClient, str, Any]
                                                        ) -> None:
    provider, pid, proxy = setup
    qos = OnChangeWithKeepAliveSubscriptionQos(min_interval_ms=0, max_interval_ms=100,
                                               alert_after_interval_ms=300)
    async with proxy.station.updates(qos) as updates:
        request = await provider.next_message("arq")
        assert request.body["qos"]["_typeName"] == "joynr.OnChangeWithKeepAliveSubscriptionQos"
        assert request.body["qos"]["maxIntervalMs"] == 100
        sid = request.body["subscriptionId"]
        await provider.publish(pid, request.sender, sid, ["FM4"])
        assert await anext(updates) == "FM4"
        with pytest.raises(PublicationMissedError) as missed:  # the provider went quiet
            await anext(updates)
        assert missed.value.subscription_id == sid
        await provider.publish(pid, request.sender, sid, ["Oe1"])
        assert await anext(updates) == "Oe1"  # still live after the alert
    stop = await provider.next_message("sst")  # leaving the block ended it
    assert stop.body["subscriptionId"] == sid
    assert proxy.subscriptions == []

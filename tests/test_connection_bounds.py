"""What one websocket connection, and one owner id, may hold in a cluster controller
([connection_bounds], runtime.quotas): routes, providers, global registrations, multicast
receivers and subscriptions. Each bound on a real cluster controller with real libjoynr
runtimes, in both frame dialects: a connection that goes past it is refused with an error that
names the bound, the refusal is counted on the metrics page, what it holds stays, other
connections go on, and after it disconnects a new connection registers again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import LibjoynrConfig, LibjoynrRuntime, ProviderQos, ProviderScope, connect
from pyjoynr.libjoynr.advanced import ProviderRuntimeError
from pyjoynr.runtime.bodies import BodyFormat, decode_body, encode_body
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.multicast import make_multicast_id
from pyjoynr.runtime.payloads import SubscriptionReply, SubscriptionRequest, SubscriptionStop
from pyjoynr.testing.cluster import cc_config, eventually
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE, WebSocketClientSettings
from tests.support.admin import scrape
from tests.support.radio import Radio, RadioProvider
from tests.support.raw_websocket import RawClient
from tests.test_websocket_dialects import Tls, registered

WAIT_S = 20.0
DIALECTS = (NATIVE, JOYNR)
#: the routes a runtime's start sequence takes: its Routing and Discovery proxies
START_ROUTES = 2


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


async def start_cc(stack: AsyncExitStack, tmp_path: Path, **overrides: Any
                   ) -> ClusterController:
    cc = ClusterController(cc_config(tmp_path / "cc", **overrides))
    await cc.start()
    stack.push_async_callback(cc.stop)
    return cc


async def start_rt(stack: AsyncExitStack, cc: ClusterController, dialect: str,
                   settings: WebSocketClientSettings | None = None, *,
                   client_id: str | None = None) -> LibjoynrRuntime:
    """A libjoynr runtime of ``dialect`` (``client_id``: the id of one that has gone, to
    connect again as it)."""
    config = (LibjoynrConfig(dialect=dialect) if settings is None
              else LibjoynrConfig(websocket=settings))
    rt = await connect(cc.websocket_address, config=config, timeout_ms=int(WAIT_S * 1000),
                       client_id=client_id)
    stack.push_async_callback(rt.close)
    return rt


async def refusals(cc: ClusterController, reason: str) -> float:
    """The refusals of ``reason`` the metrics page shows."""
    assert cc.ops.server is not None
    metrics = await scrape(cc.ops.server.url)
    return metrics["joynr_cc_refusals_total", {"component": "bounds", "reason": reason}]


async def held_on_status_page(cc: ClusterController, rt: LibjoynrRuntime) -> dict[str, Any]:
    """The row of ``rt`` in the status page's table of connected runtimes."""
    status = await cc.ops.status()
    section = next(s for s in status["sections"] if s["id"] == "runtimes")
    (row,) = [r for r in section["rows"] if r[0] == rt.client_id]
    return dict(zip(section["columns"], row, strict=True))


async def gone(cc: ClusterController, rt: LibjoynrRuntime) -> None:
    await rt.close()
    await eventually(lambda: rt.client_id not in cc.websocket.clients, WAIT_S,
                     f"{rt.client_id} disconnected")


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_routes_past_the_bound_are_refused_and_counted(
        stack: AsyncExitStack, tmp_path: Path, dialect: str) -> None:
    cc = await start_cc(stack, tmp_path, connection_bounds__max_routes_per_connection=10)
    rt = await start_rt(stack, cc, dialect)
    mine = [f"{rt.client_id}-p{i}" for i in range(10 - START_ROUTES)]
    for pid in mine:
        await rt.core.remote.add_next_hop(pid, False)
    with pytest.raises(ProviderRuntimeError, match=r"holds 10 routes .*"
                       r"max_routes_per_connection\) is 10"):
        await rt.core.remote.add_next_hop(f"{rt.client_id}-one-too-many", False)
    assert not cc.router.has_route(f"{rt.client_id}-one-too-many")
    assert all(cc.router.has_route(pid) for pid in mine)  # what it holds stays
    await rt.core.remote.add_next_hop(mine[0], False)  # holding one again is no new one
    assert await refusals(cc, "bound-routes-per-connection") == 1
    # removing one makes room
    await rt.core.remote.remove_next_hop(mine[0])
    await rt.core.remote.add_next_hop(f"{rt.client_id}-instead", False)
    # another connection is not affected
    other = await start_rt(stack, cc, dialect)
    for i in range(10 - START_ROUTES):
        await other.core.remote.add_next_hop(f"{other.client_id}-p{i}", False)
    # after the connection ends, a new one registers again
    await gone(cc, rt)
    again = await start_rt(stack, cc, dialect, client_id=rt.client_id)
    for i in range(10 - START_ROUTES):
        await again.core.remote.add_next_hop(f"{again.client_id}-p{i}", False)
    assert await refusals(cc, "bound-routes-per-connection") == 1


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_providers_past_the_bound_are_refused_and_counted(
        stack: AsyncExitStack, tmp_path: Path, dialect: str) -> None:
    cc = await start_cc(stack, tmp_path, connection_bounds__max_providers_per_connection=3)
    rt = await start_rt(stack, cc, dialect)
    registered = [await rt.register_provider(f"d{i}", RadioProvider()) for i in range(3)]
    with pytest.raises(ProviderRuntimeError, match=r"holds 3 registered providers, .*"
                       r"max_providers_per_connection\) is 3"):
        await rt.register_provider("d3", RadioProvider())
    assert sorted(e.participant_id for e in cc.discovery.entries()) == sorted(registered)
    assert await refusals(cc, "bound-providers-per-connection") == 1
    assert (await held_on_status_page(cc, rt))["providers"] == 3
    # what it registered still answers
    consumer = await start_rt(stack, cc, dialect)
    proxy = await consumer.build_proxy(Radio, "d0")
    assert await proxy.current_station.get() == "FM4"
    # registering one of its own again is no new provider; removing one makes room
    (first,) = [e for e in cc.discovery.entries() if e.participant_id == registered[0]]
    await rt.core.remote.discovery.add(first)
    await rt.unregister_provider(registered[0])
    await rt.register_provider("d3", RadioProvider())
    # another connection is not affected
    for i in range(3):
        await consumer.register_provider(f"e{i}", RadioProvider())
    await gone(cc, rt)
    again = await start_rt(stack, cc, dialect, client_id=rt.client_id)
    for i in range(3):
        await again.register_provider(f"f{i}", RadioProvider())
    assert await refusals(cc, "bound-providers-per-connection") == 1


GLOBAL = ProviderQos(scope=ProviderScope.GLOBAL)


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_global_registrations_past_the_bound_never_reach_the_gcd(
        stack: AsyncExitStack, tmp_path: Path, dialect: str) -> None:
    cc = await start_cc(stack, tmp_path, embedded_broker__enabled="true",
                        embedded_broker__port="0", embedded_gcd__enabled="true",
                        mqtt__backends='{joynrdefaultgbid = "embedded"}',
                        connection_bounds__max_global_providers_per_connection=2)
    assert cc.gcd is not None and cc.gcd_link is not None
    rt = await start_rt(stack, cc, dialect)
    registered = [await rt.register_provider(f"g{i}", RadioProvider(), qos=GLOBAL,
                                             await_global_registration=True)
                  for i in range(2)]
    adds = cc.gcd_link.calls["add", "ok"]
    for await_it in (True, False):
        with pytest.raises(ProviderRuntimeError, match=r"holds 2 providers registered with "
                           r"the GCD, .*max_global_providers_per_connection\) is 2"):
            await rt.register_provider("g2", RadioProvider(), qos=GLOBAL, participant_id="p-g2",
                                       await_global_registration=await_it)
    assert await refusals(cc, "bound-global-providers-per-connection") == 2
    # a local provider is still welcome
    await rt.register_provider("local", RadioProvider())
    await asyncio.sleep(0.5)  # (a background registration would have gone by now)
    assert cc.gcd_link.calls["add", "ok"] == adds
    assert await cc.gcd.store.find_participant("p-g2", now_ms()) == []
    assert "p-g2" not in {e.participant_id for e in cc.discovery.entries()}
    for pid in registered:  # what it registered stays, here and in the GCD
        assert await cc.gcd.store.find_participant(pid, now_ms())
    other = await start_rt(stack, cc, dialect)
    for i in range(2):
        await other.register_provider(f"h{i}", RadioProvider(), qos=GLOBAL,
                                      await_global_registration=True)
    await gone(cc, rt)
    again = await start_rt(stack, cc, dialect, client_id=rt.client_id)
    await again.register_provider("g2", RadioProvider(), qos=GLOBAL, participant_id="p-g2",
                                  await_global_registration=True)
    assert await cc.gcd.store.find_participant("p-g2", now_ms())


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_multicast_receivers_past_the_bound_are_refused_and_counted(
        stack: AsyncExitStack, tmp_path: Path, dialect: str) -> None:
    cc = await start_cc(stack, tmp_path,
                        connection_bounds__max_multicast_receivers_per_connection=3)
    provider_rt = await start_rt(stack, cc, dialect)
    provider = await provider_rt.register_provider("m", RadioProvider())

    def pattern(i: int) -> str:
        return make_multicast_id(provider, "newStation", [f"p{i}"], for_subscription=True)

    rt = await start_rt(stack, cc, dialect)
    subscriber = f"{rt.client_id}-subscriber"
    await rt.core.remote.add_next_hop(subscriber, False)
    for i in range(3):
        await rt.core.remote.add_multicast_receiver(pattern(i), subscriber, provider)
    with pytest.raises(ProviderRuntimeError, match=r"holds 3 multicast receivers, .*"
                       r"max_multicast_receivers_per_connection\) is 3"):
        await rt.core.remote.add_multicast_receiver(pattern(3), subscriber, provider)
    receivers = cc.router.multicast_receivers.patterns()
    assert pattern(3) not in receivers
    assert all(receivers[pattern(i)] == {subscriber} for i in range(3))
    assert await refusals(cc, "bound-multicast-receivers-per-connection") == 1
    await rt.core.remote.remove_multicast_receiver(pattern(0), subscriber, provider)
    await rt.core.remote.add_multicast_receiver(pattern(3), subscriber, provider)
    other = await start_rt(stack, cc, dialect)
    await other.core.remote.add_next_hop(f"{other.client_id}-subscriber", False)
    for i in range(3):
        await other.core.remote.add_multicast_receiver(pattern(i), f"{other.client_id}-subscriber",
                                                  provider)
    await gone(cc, rt)
    again = await start_rt(stack, cc, dialect, client_id=rt.client_id)
    await again.core.remote.add_next_hop(f"{again.client_id}-subscriber", False)
    for i in range(3):
        await again.core.remote.add_multicast_receiver(pattern(i), f"{again.client_id}-subscriber",
                                                  provider)


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_subscriptions_past_the_bound_are_answered_with_the_error(
        stack: AsyncExitStack, tmp_path: Path, dialect: str) -> None:
    cc = await start_cc(stack, tmp_path, connection_bounds__max_subscriptions_per_connection=3)
    provider_rt = await start_rt(stack, cc, dialect)
    provider = RadioProvider()
    await provider_rt.register_provider("s", provider)
    rt = await start_rt(stack, cc, dialect)
    proxy = await rt.build_proxy(Radio, "s")
    seen: list[str] = []
    subscriptions = [await proxy.current_station.subscribe(seen.append) for _ in range(3)]
    with pytest.raises(ProviderRuntimeError, match=r"holds 3 subscriptions, .*"
                       r"max_subscriptions_per_connection\) is 3"):
        await proxy.current_station.subscribe(seen.append)
    assert await refusals(cc, "bound-subscriptions-per-connection") == 1
    # what it holds stays: the three get the provider's change
    await proxy.current_station.set("Oe1")
    await eventually(lambda: seen.count("Oe1") == 3, WAIT_S, "three publications")
    # a stop gives one back
    await subscriptions[0].unsubscribe()
    await proxy.current_station.subscribe(seen.append)
    other = await start_rt(stack, cc, dialect)
    other_proxy = await other.build_proxy(Radio, "s")
    for _ in range(3):
        await other_proxy.current_station.subscribe(seen.append)
    await gone(cc, rt)
    again = await start_rt(stack, cc, dialect, client_id=rt.client_id)
    again_proxy = await again.build_proxy(Radio, "s")
    for _ in range(3):
        await again_proxy.current_station.subscribe(seen.append)
    assert await refusals(cc, "bound-subscriptions-per-connection") == 1


async def test_the_connections_of_one_owner_id_share_its_bound(
        stack: AsyncExitStack, tmp_path: Path) -> None:
    tls = Tls(tmp_path / "tls")
    cc = await start_cc(stack, tmp_path, **tls.cc_overrides(
        connection_bounds__max_routes_per_connection=10,
        connection_bounds__max_routes_per_owner=15))
    settings = WebSocketClientSettings(
        dialect=JOYNR, owner_id=Tls.OWNER, tls_ca_file=str(tls.server_cert),
        tls_certificate=str(tls.client_cert), tls_private_key=str(tls.client_key))
    first = await start_rt(stack, cc, JOYNR, settings)
    second = await start_rt(stack, cc, JOYNR, settings)  # 4 routes of the owner now
    for i in range(8):
        await first.core.remote.add_next_hop(f"{first.client_id}-p{i}", False)  # 12
    for i in range(3):
        await second.core.remote.add_next_hop(f"{second.client_id}-p{i}", False)  # 15
    with pytest.raises(ProviderRuntimeError, match=rf"connections of owner id '{Tls.OWNER}' "
                       r"hold 15 routes .*max_routes_per_owner\) is 15"):
        await second.core.remote.add_next_hop(f"{second.client_id}-p3", False)
    assert await refusals(cc, "bound-routes-per-owner") == 1
    # a connection without the certificate is another holder
    anonymous = await start_rt(stack, cc, JOYNR, WebSocketClientSettings(
        dialect=JOYNR, tls_ca_file=str(tls.server_cert)))
    for i in range(8):
        await anonymous.core.remote.add_next_hop(f"{anonymous.client_id}-p{i}", False)
    # the end of one of the owner's connections gives its share back
    await gone(cc, first)
    for i in range(3, 10 - START_ROUTES):
        await second.core.remote.add_next_hop(f"{second.client_id}-p{i}", False)


async def subscription_replies(raw: RawClient, count: int) -> dict[str, SubscriptionReply]:
    """The next ``count`` subscription replies ``raw`` receives, by subscription id (what
    else it receives, publications, is passed over)."""
    replies: dict[str, SubscriptionReply] = {}
    async with asyncio.timeout(WAIT_S):
        while len(replies) < count:
            message = await raw.receive(WAIT_S)
            if message.type is MessageType.SUBSCRIPTION_REPLY:
                reply = decode_body(SubscriptionReply, message.body)
                replies[reply.subscription_id] = reply
    return replies


@pytest.mark.parametrize(("dialect", "body"), [(NATIVE, BodyFormat.MSGPACK),
                                               (JOYNR, BodyFormat.JSON)])
async def test_a_raw_client_past_the_subscription_bound_until_a_stop_or_an_end(
        stack: AsyncExitStack, tmp_path: Path, dialect: str, body: BodyFormat) -> None:
    cc = await start_cc(stack, tmp_path, connection_bounds__max_subscriptions_per_connection=3)
    provider_rt = await start_rt(stack, cc, dialect)
    provider = await provider_rt.register_provider("s", RadioProvider())
    raw = await registered(stack, cc, dialect)

    async def subscribe(sid: str, **qos: int) -> None:
        await raw.send(Message(
            MessageType.SUBSCRIPTION_REQUEST, raw.pid, provider, now_ms() + 10_000,
            encode_body(SubscriptionRequest(subscription_id=sid,
                                            subscribe_to_name="current_station", qos=qos),
                        body)))

    ends = now_ms() + 1_000
    await subscribe("ends-soon", expiry_date_ms=ends)
    for sid in ("a", "b", "c"):
        await subscribe(sid)
    replies = await subscription_replies(raw, 4)
    assert [sid for sid, r in replies.items() if r.error is None] == ["ends-soon", "a", "b"]
    error = replies["c"].error
    assert error is not None and "ProviderRuntimeException" in str(error)
    assert "holds 3 subscriptions, the bound ([connection_bounds] " \
        "max_subscriptions_per_connection) is 3" in str(error)
    # a stop gives one back
    await raw.send(Message(MessageType.SUBSCRIPTION_STOP, raw.pid, provider, now_ms() + 10_000,
                           encode_body(SubscriptionStop(subscription_id="a"), body)))
    await subscribe("c")
    # and so does a subscription whose end has passed
    await asyncio.sleep(max(0.0, (ends - now_ms()) / 1000) + 0.1)
    await subscribe("d")
    await subscribe("e")
    replies = await subscription_replies(raw, 3)
    assert [replies[sid].error is None for sid in ("c", "d", "e")] == [True, True, False]
    assert await refusals(cc, "bound-subscriptions-per-connection") == 2

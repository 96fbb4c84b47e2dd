"""joynr's own Java cluster controller (release 1.25.0, tests/support/java_oracles.py) with this
project's GCD and cluster controller, over MQTT in joynr's dialect.

1. Two GBIDs, two mosquitto brokers, one GCD instance per GBID on ONE PostgreSQL store; joynr's
   Java CC with both backends, this project's CC with both backends (``dialect=joynr``). Java
   providers (registered in the second GBID only, and in all backends) are found and called
   by this project's libjoynr runtime through this project's CC (the generated radio proxy),
   and a Python provider is called by a Java consumer on joynr's CC: rpc with structs and enums,
   a modelled error, attribute get/set, an on-change subscription and its end, a multicast with
   partitions, fire-and-forget. The Java CC's removeStale at its start, its periodic touch and
   its remove on unregister land in the PostgreSQL store.
2. One broker, one GCD (SQLite), joynr's Java CC and this project's CC with providers and
   consumers on both, a Java application also on this project's CC.

Each test uses fresh domains; the processes are shared by the tests of a scenario.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import pytest_asyncio

from examples.radio.generated import Country, RadioStation, build_radio_proxy
from examples.radio.provider import RadioProvider
from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.libjoynr import (
    ApplicationError,
    DiscoveryQos,
    DiscoveryScope,
    LibjoynrRuntime,
    ProviderQos,
    ProviderScope,
    connect,
)
from pyjoynr.programming.subscription_qos import OnChangeSubscriptionQos
from pyjoynr.testing.brokers import Mosquitto
from tests.support.gcd_stores import fresh_postgres_dsn
from tests.support.java_oracles import (
    JavaCallError,
    JavaClusterController,
    JavaOracles,
    JavaRadioApp,
    station,
)
from tests.support.mqtt_cluster import mqtt_cc_config

pytestmark = [pytest.mark.network, pytest.mark.asyncio(loop_scope="module")]

G1, G2 = "java-gbid-one", "java-gbid-two"
WAIT_S = 20.0
#: how long a test waits for something that must NOT arrive
QUIET_S = 1.5
#: the Java CC's touch interval (joynr.capabilities.freshnessupdateintervalms)
FRESHNESS_MS = 1500
GLOBAL_ONLY = DiscoveryQos(discovery_scope=DiscoveryScope.GLOBAL_ONLY,
                           discovery_timeout_ms=15_000)


def domain(what: str) -> str:
    return f"javagcd.{what}.{uuid.uuid4().hex[:8]}"


def joynr(url: str) -> str:
    return f"{url}?dialect=joynr"


@dataclass
class World:
    tmp: Path
    stack: AsyncExitStack
    oracles: JavaOracles
    brokers: dict[str, Mosquitto]
    gcds: list[GcdService]
    cc: ClusterController
    runtime: LibjoynrRuntime
    java_cc: JavaClusterController
    app: JavaRadioApp
    dsn: str | None = None


async def start_python_cc(stack: AsyncExitStack, tmp: Path, backends: dict[str, str]
                          ) -> tuple[ClusterController, LibjoynrRuntime]:
    cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
        tmp / "py-cc", f"py-cc-{uuid.uuid4().hex[:8]}",
        {gbid: joynr(url) for gbid, url in backends.items()})))
    assert cc.mqtt is not None
    await cc.mqtt.wait_connected(WAIT_S)
    runtime = await connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(runtime.close)
    return cc, runtime


async def start_java(stack: AsyncExitStack, oracles: JavaOracles, workdir: Path,
                     backends: dict[str, str], name: str = "java-cc"
                     ) -> JavaClusterController:
    java_cc = JavaClusterController(
        oracles, workdir, backends, freshness_interval_ms=FRESHNESS_MS, name=name,
        # joynr waits 5 min before its removeStale by default
        properties={"joynr.messaging.removestaledelayms": 500})
    await java_cc.start()
    stack.push_async_callback(java_cc.stop)
    return java_cc


async def start_app(stack: AsyncExitStack, oracles: JavaOracles, workdir: Path, cc_url: str,
                    name: str) -> JavaRadioApp:
    app = JavaRadioApp(oracles, workdir, cc_url, name=name)
    await app.start()
    stack.push_async_callback(app.stop)
    return app


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def two_gbids(request: pytest.FixtureRequest, java_oracles: JavaOracles,
                    tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    tmp = tmp_path_factory.mktemp("java-gcd")
    dsn = await fresh_postgres_dsn(request.config)
    async with AsyncExitStack() as stack:
        brokers = {g: await stack.enter_async_context(Mosquitto(tmp / g)) for g in (G1, G2)}
        gcds = []
        for gbid in (G1, G2):
            gcd = await stack.enter_async_context(GcdService(GcdSettings(
                gbid=gbid, broker_url=brokers[gbid].url, valid_gbids=(G1, G2),
                store="postgres", postgres_dsn=dsn, client_id=f"gcd-{gbid}",
                data_dir=tmp / f"gcd-{gbid}", catch_up_interval_s=1)))
            await gcd.mqtt.wait_connected(WAIT_S)
            gcds.append(gcd)
        urls = {g: b.url for g, b in brokers.items()}
        cc, runtime = await start_python_cc(stack, tmp, urls)
        java_cc = await start_java(stack, java_oracles, tmp / "java", urls)
        app = await start_app(stack, java_oracles, tmp / "java", java_cc.url, "java-app")
        yield World(tmp, stack, java_oracles, brokers, gcds, cc, runtime, java_cc, app, dsn)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def one_broker(java_oracles: JavaOracles, tmp_path_factory: pytest.TempPathFactory
                     ) -> AsyncIterator[World]:
    tmp = tmp_path_factory.mktemp("java-one-broker")
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp / "broker"))
        gcd = await stack.enter_async_context(GcdService(GcdSettings(
            gbid=G1, broker_url=broker.url, sqlite_path=tmp / "gcd.sqlite",
            data_dir=tmp / "gcd")))
        await gcd.mqtt.wait_connected(WAIT_S)
        cc, runtime = await start_python_cc(stack, tmp, {G1: broker.url})
        java_cc = await start_java(stack, java_oracles, tmp / "java", {G1: broker.url})
        app = await start_app(stack, java_oracles, tmp / "java", java_cc.url, "java-app")
        yield World(tmp, stack, java_oracles, {G1: broker}, [gcd], cc, runtime, java_cc, app)


# ====================================================================== what the tests share


async def rows_of(dsn: str, where: str) -> list[asyncpg.Record]:
    """The store's rows of the providers in domain ``where``, by GBID."""
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(
            "SELECT gbid, participant_id, cluster_controller_id, topic, last_seen_ms, "
            "expiry_ms FROM discovery_entries WHERE domain = $1 ORDER BY gbid", where))
    finally:
        await conn.close()


async def until_rows(dsn: str, where: str, gbids: list[str], what: str
                     ) -> list[asyncpg.Record]:
    """Wait (bounded) until domain ``where`` has rows in exactly ``gbids``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while True:
        rows = await rows_of(dsn, where)
        if [r["gbid"] for r in rows] == gbids:
            return rows
        if loop.time() > deadline:
            raise AssertionError(f"{what}: rows of {where} in {[r['gbid'] for r in rows]}, "
                                 f"expected {gbids} within {WAIT_S} s")
        await asyncio.sleep(0.1)



async def register_java(app: JavaRadioApp, where: str, **how: Any) -> None:
    await app.call("register", domain=where, scope="GLOBAL", **how)


async def python_calls_java_provider(runtime: LibjoynrRuntime, app: JavaRadioApp,
                                     where: str) -> None:
    """rpc with a struct and an enum, a modelled error, attribute get/set, fire-and-forget,
    from this project's runtime to the Java provider in ``where``."""
    radio = await build_radio_proxy(runtime, where, discovery_qos=GLOBAL_ONLY, ttl_ms=15_000)
    # fewer than two favorites (each test adds one): the modelled error
    with pytest.raises(ApplicationError) as refused:
        await radio.shuffle_stations()
    assert refused.value.error == "NO_STATIONS"
    name = f"S-{uuid.uuid4().hex[:6]}"
    assert await radio.add_favorite_station(RadioStation(name, Country.ITALY, True)) is True
    assert await radio.add_favorite_station(RadioStation(name, Country.ITALY, True)) is False
    state = await app.call("providerState", domain=where)
    assert station(name, "ITALY", True) in state["favorites"]
    assert await radio.describe_station(name) == f"{name} (Italy)"
    current = await radio.current_station.get()
    assert isinstance(current, RadioStation) and current.country in Country
    await radio.volume.set(17)
    assert await radio.volume.get() == 17
    assert (await app.call("providerState", domain=where))["volume"] == 17
    text = f"hello {uuid.uuid4().hex[:6]}"
    await radio.log_message(text)
    await app.next_event("logMessage", text=text, timeout_s=WAIT_S)
    heard = RadioStation(f"H-{uuid.uuid4().hex[:6]}", Country.GERMANY, False)
    await radio.station_heard(heard)
    await app.next_event("stationHeard", station=station(heard.name, "GERMANY"),
                         timeout_s=WAIT_S)


async def python_subscribes_to_java_provider(runtime: LibjoynrRuntime, app: JavaRadioApp,
                                             where: str) -> None:
    """An on-change subscription (publications, then none after its end) and a multicast
    with partitions, from this project's runtime to the Java provider in ``where``."""
    radio = await build_radio_proxy(runtime, where, discovery_qos=GLOBAL_ONLY, ttl_ms=15_000)
    volumes: asyncio.Queue[int] = asyncio.Queue()
    subscription = await radio.volume.subscribe(volumes.put_nowait,
                                                OnChangeSubscriptionQos(min_interval_ms=0))
    await app.call("setVolumeLocally", domain=where, volume=31)
    while (await asyncio.wait_for(volumes.get(), WAIT_S)) != 31:
        pass
    await app.call("setVolumeLocally", domain=where, volume=32)
    assert await asyncio.wait_for(volumes.get(), WAIT_S) == 32
    await subscription.unsubscribe()
    await app.call("setVolumeLocally", domain=where, volume=33)
    await asyncio.sleep(QUIET_S)
    assert volumes.empty(), volumes.get_nowait()

    heard: asyncio.Queue[RadioStation] = asyncio.Queue()
    await radio.new_station_discovered.subscribe(heard.put_nowait, partitions=["AUSTRIA"])
    await app.call("fireNewStationDiscovered", domain=where, station=station("Other", "GERMANY"),
                   partitions=["GERMANY"])
    await app.call("fireNewStationDiscovered", domain=where, station=station("Mine"),
                   partitions=["AUSTRIA"])
    got = await asyncio.wait_for(heard.get(), WAIT_S)
    # the fire in the other partition went first: it would have arrived first
    assert got == RadioStation("Mine", Country.AUSTRIA, False)
    await asyncio.sleep(QUIET_S)
    assert heard.empty()


async def java_calls_python_provider(runtime: LibjoynrRuntime, app: JavaRadioApp,
                                     proxy_scope: str = "GLOBAL_ONLY") -> None:
    """A Python provider registered GLOBAL, called by a Java consumer: every kind of call."""
    where = domain("py-provider")
    provider = RadioProvider()
    await runtime.register_provider(where, provider, qos=ProviderQos(scope=ProviderScope.GLOBAL),
                                    await_global_registration=True)
    proxy = f"p-{uuid.uuid4().hex[:6]}"
    await app.call("proxy", name=proxy, domain=where, scope=proxy_scope,
                   discoveryTimeoutMs=15000, ttlMs=15000)
    with pytest.raises(JavaCallError) as refused:
        await app.call("shuffleStations", proxy=proxy)
    assert (refused.value.error, refused.value.name) == ("ApplicationException", "NO_STATIONS")
    assert await app.call("addFavoriteStation", proxy=proxy,
                          station=station("Oe1", "AUSTRIA", True)) is True
    assert await app.call("addFavoriteStation", proxy=proxy,
                          station=station("Oe1", "AUSTRIA", True)) is False
    assert provider.stations[-1] == RadioStation("Oe1", Country.AUSTRIA, True)
    assert await app.call("describeStation", proxy=proxy, name="Oe1") == "Oe1 (Austria)"
    assert await app.call("getCurrentStation", proxy=proxy) == station("FM4", "AUSTRIA", True)
    await app.call("setVolume", proxy=proxy, volume=7)
    assert await app.call("getVolume", proxy=proxy) == 7
    await app.call("logMessage", proxy=proxy, text="from java")
    await app.call("stationHeard", proxy=proxy, station=station("Heard", "ITALY"))
    # (fire-and-forget: the Python provider counts nothing; the radio's log line is enough
    # for an example, here the call order proves it arrived before the next rpc's answer)

    # an on-change subscription and its end
    app.drain_events()
    sid = await app.call("subscribeAttribute", proxy=proxy, attribute="currentStation")
    provider.set_attribute("current_station", RadioStation("Radio 1", Country.GERMANY, False))
    await app.next_event("publication", attribute="currentStation",
                         value=station("Radio 1", "GERMANY"), timeout_s=WAIT_S)
    await app.call("unsubscribeAttribute", proxy=proxy, attribute="currentStation",
                   subscriptionId=sid)
    provider.set_attribute("current_station", RadioStation("Radio 2", Country.GERMANY, False))
    await asyncio.sleep(QUIET_S)
    # (the subscription's initial publication, of FM4, reached the Java consumer's listener
    # after Radio 1's in a run under load: the listener's order is not the wire's; what must
    # not come is anything after the unsubscribe)
    assert [e for e in app.drain_events() if e.get("event") == "publication"
            and e.get("value") != station("FM4", "AUSTRIA", True)] == []

    # a multicast with partitions: only the subscribed partition arrives
    await app.call("subscribeBroadcast", proxy=proxy, partitions=["ITALY"])
    provider.fire_new_station_discovered(RadioStation("Rai", Country.GERMANY, False),
                                         partitions=["GERMANY"])
    provider.fire_new_station_discovered(RadioStation("Rai", Country.ITALY, False),
                                         partitions=["ITALY"])
    got = await app.next_event("broadcast", timeout_s=WAIT_S)
    assert got["station"] == station("Rai", "ITALY")
    await asyncio.sleep(QUIET_S)
    assert [e for e in app.drain_events() if e.get("event") == "broadcast"] == []
    await runtime.unregister_provider(provider)


# ====================================================================== 1. two GBIDs, PostgreSQL


@pytest.mark.parametrize("registration", ["second-gbid", "all-backends"])
async def test_a_java_provider_is_called_by_a_python_consumer(two_gbids: World,
                                                              registration: str) -> None:
    w = two_gbids
    where = domain(registration)
    if registration == "second-gbid":
        await register_java(w.app, where, gbids=[G2])
    else:
        await register_java(w.app, where, allBackends=True)
    await python_calls_java_provider(w.runtime, w.app, where)


async def test_a_java_providers_subscriptions_reach_a_python_consumer(two_gbids: World) -> None:
    where = domain("java-subscriptions")
    await register_java(two_gbids.app, where, gbids=[G2])
    await python_subscribes_to_java_provider(two_gbids.runtime, two_gbids.app, where)


async def test_a_python_provider_is_called_by_a_java_consumer(two_gbids: World) -> None:
    await java_calls_python_provider(two_gbids.runtime, two_gbids.app)


async def test_the_java_ccs_touch_advances_its_rows_and_unregister_removes_them(
        two_gbids: World) -> None:
    """joynr's touch (every FRESHNESS_MS, one call per GBID with that GBID's participantIds)
    moves the last-seen date and the expiry of its rows in every GBID; its remove on
    unregister deletes them."""
    w = two_gbids
    assert w.dsn is not None
    where = domain("touch")
    await register_java(w.app, where, allBackends=True)
    first = await until_rows(w.dsn, where, [G1, G2], "registered in all backends")
    (pid,) = {r["participant_id"] for r in first}
    # the cluster controller id is the Java CC's channel id: its topic
    assert {r["cluster_controller_id"] for r in first} == {r["topic"] for r in first}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while True:
        now = {r["gbid"]: r for r in await rows_of(w.dsn, where)}
        if all(now[r["gbid"]]["last_seen_ms"] > r["last_seen_ms"]
               and now[r["gbid"]]["expiry_ms"] > r["expiry_ms"] for r in first):
            break
        assert loop.time() < deadline, f"no touch of {pid} within {WAIT_S} s: {now}"
        await asyncio.sleep(0.2)
    await w.app.call("unregister", domain=where)
    await until_rows(w.dsn, where, [], "unregistered")


async def test_the_java_ccs_remove_stale_at_its_restart_removes_what_it_left(
        two_gbids: World) -> None:
    """joynr's CC killed with a provider registered in both GBIDs, restarted in the same
    working directory (so with the same channel id): its removeStale (per GBID, with its
    start time) removes the rows of its previous life; what it registers now stays."""
    w = two_gbids
    assert w.dsn is not None
    workdir = w.tmp / "java-restart"
    async with AsyncExitStack() as stack:
        urls = {g: b.url for g, b in w.brokers.items()}
        java_cc = await start_java(stack, w.oracles, workdir, urls, name="restart-cc")
        app = await start_app(stack, w.oracles, workdir, java_cc.url, "restart-app")
        old = domain("stale")
        await register_java(app, old, allBackends=True)
        before = await until_rows(w.dsn, old, [G1, G2], "registered before the restart")
        await app.kill()
        await java_cc.kill()
        # (a crash: nothing was unregistered)
        assert [r["gbid"] for r in await rows_of(w.dsn, old)] == [G1, G2]
        again = await start_java(stack, w.oracles, workdir, urls, name="restart-cc")
        app = await start_app(stack, w.oracles, workdir, again.url, "restart-app-2")
        new = domain("fresh")
        await register_java(app, new, allBackends=True)
        after = await until_rows(w.dsn, new, [G1, G2], "registered after the restart")
        # the same cluster controller id (kept in its working directory)
        assert {r["cluster_controller_id"] for r in after} == \
            {r["cluster_controller_id"] for r in before}
        await until_rows(w.dsn, old, [], "removed by removeStale")
        assert [r["gbid"] for r in await rows_of(w.dsn, new)] == [G1, G2]


# ====================================================================== 2. one broker, SQLite


async def test_one_broker_a_java_provider_is_called_by_a_python_consumer(one_broker: World
                                                                         ) -> None:
    where = domain("one-broker")
    await register_java(one_broker.app, where)
    await python_calls_java_provider(one_broker.runtime, one_broker.app, where)
    await python_subscribes_to_java_provider(one_broker.runtime, one_broker.app, where)


async def test_one_broker_a_python_provider_is_called_by_a_java_consumer(one_broker: World
                                                                         ) -> None:
    await java_calls_python_provider(one_broker.runtime, one_broker.app)


async def test_one_broker_a_java_consumer_on_this_projects_cc_calls_a_java_provider(
        one_broker: World) -> None:
    """A Java application connected to this project's CC calls the Java provider behind
    joynr's CC (GLOBAL_ONLY: through the GCD and the broker)."""
    w = one_broker
    where = domain("java-to-java")
    await register_java(w.app, where)
    consumer = await start_app(w.stack, w.oracles, w.tmp / "java-on-py", w.cc.websocket_address.url,
                               "java-on-py-cc")
    await consumer.call("proxy", domain=where, scope="GLOBAL_ONLY", discoveryTimeoutMs=15000,
                        ttlMs=15000)
    name = f"J-{uuid.uuid4().hex[:6]}"
    assert await consumer.call("addFavoriteStation", station=station(name, "GERMANY")) is True
    state = await w.app.call("providerState", domain=where)
    assert station(name, "GERMANY") in state["favorites"]
    await consumer.call("setVolume", volume=23)
    assert await consumer.call("getVolume") == 23
    sid = await consumer.call("subscribeAttribute", attribute="volume")
    await w.app.call("setVolumeLocally", domain=where, volume=24)
    await consumer.next_event("publication", attribute="volume", value=24, timeout_s=WAIT_S)
    await consumer.call("unsubscribeAttribute", attribute="volume", subscriptionId=sid)
    await consumer.call("subscribeBroadcast", partitions=["AUSTRIA"])
    await w.app.call("fireNewStationDiscovered", domain=where, station=station("No", "ITALY"),
                     partitions=["ITALY"])
    await w.app.call("fireNewStationDiscovered", domain=where, station=station("Yes"),
                     partitions=["AUSTRIA"])
    got = await consumer.next_event("broadcast", timeout_s=WAIT_S)
    assert got["station"] == station("Yes")
    await consumer.call("logMessage", text="java via py")
    await w.app.next_event("logMessage", text="java via py", timeout_s=WAIT_S)

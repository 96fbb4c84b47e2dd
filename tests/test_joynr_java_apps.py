"""joynr's Java applications on this project's cluster controller, and this project's runtime on
joynr's Java cluster controller (release 1.25.0, tests/support/java_oracles.py), over websocket.

Each pairing of a provider and a consumer goes through the same checks
(:func:`assert_the_radio_works`): a request with a struct and an enum (``addFavoriteStation``)
and one with a string (``describeStation``), the attributes (``currentStation`` read, ``volume``
read and written), an on-change subscription (a change arrives as a publication, none after
the unsubscribe), the broadcast with partitions (a fire in the subscribed partition arrives,
one in another does not; none after the unsubscribe), a modelled error
(``shuffleStations``: ``NO_STATIONS``) and both fire-and-forget methods (``logMessage``,
``stationHeard``, seen by the provider).

- On this project's cluster controller (embedded broker and GCD): a Java provider with a Java
  consumer, registered LOCAL and GLOBAL; a Python provider (the example's, on the generated
  provider base) with a Java consumer; a Java provider with a Python consumer (the generated
  typed proxy).
- On joynr's Java cluster controller (mosquitto, a GCD on SQLite): this project's libjoynr in
  joynr's dialect as provider (a Java consumer) and as consumer (a Java provider), and a Python
  provider with a Python consumer.

One cluster controller of each kind and one Java provider and one Java consumer application on
each are shared by the module's tests (Java takes seconds to start); every test has domains of
its own, and the Java application keeps one radio per domain.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest
import pytest_asyncio

from examples.radio.generated import Country, RadioStation, build_radio_proxy
from examples.radio.provider import RadioProvider
from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.libjoynr import (
    ApplicationError,
    DiscoveryError,
    DiscoveryQos,
    LibjoynrConfig,
    LibjoynrRuntime,
    ProviderQos,
    ProviderScope,
    connect,
)
from pyjoynr.programming.discovery_types import DiscoveryScope
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import cc_config
from tests.support.acl import master_ace, master_rce, write_tables
from tests.support.java_oracles import (
    JavaCallError,
    JavaClusterController,
    JavaOracles,
    JavaRadioApp,
    station,
)

pytestmark = [pytest.mark.network, pytest.mark.asyncio(loop_scope="module")]

GBID = "joynrdefaultgbid"
WAIT_S = 20.0
#: how long a message that must not arrive is waited for, after a later one that did
QUIET_S = 0.5
#: how long a lookup that must find nothing looks
MISS_MS = 1_500
JOYNR = LibjoynrConfig(dialect="joynr")


def fresh(name: str) -> str:
    return f"java.{name}.{uuid.uuid4().hex[:8]}"


# ====================================================================== the two sides


class ProviderSide(Protocol):
    """What the checks do at the provider and read from it."""

    async def set_volume_locally(self, volume: int) -> None: ...

    async def change_station(self, value: dict[str, Any]) -> None: ...

    async def fire(self, value: dict[str, Any], partitions: list[str]) -> None: ...

    async def volume(self) -> int: ...

    async def wait_log_message(self, text: str) -> None: ...

    async def wait_station_heard(self, value: dict[str, Any]) -> None: ...


class ConsumerSide(Protocol):
    """What the checks call at the consumer; what arrives unasked is read with ``next``."""

    async def call(self, cmd: str, **fields: Any) -> Any: ...

    async def next(self, kind: str, **match: Any) -> dict[str, Any]: ...

    def drain(self) -> list[dict[str, Any]]: ...


@dataclass
class JavaProvider:
    app: JavaRadioApp
    domain: str

    async def register(self, scope: str = "GLOBAL") -> None:
        await self.app.call("register", domain=self.domain, scope=scope)

    async def set_volume_locally(self, volume: int) -> None:
        await self.app.call("setVolumeLocally", domain=self.domain, volume=volume)

    async def change_station(self, value: dict[str, Any]) -> None:
        await self.app.call("setCurrentStation", domain=self.domain, station=value)

    async def fire(self, value: dict[str, Any], partitions: list[str]) -> None:
        await self.app.call("fireNewStationDiscovered", domain=self.domain, station=value,
                            partitions=partitions)

    async def volume(self) -> int:
        state = await self.app.call("providerState", domain=self.domain)
        return int(state["volume"])

    async def wait_log_message(self, text: str) -> None:
        await self.app.next_event("logMessage", timeout_s=WAIT_S, text=text)

    async def wait_station_heard(self, value: dict[str, Any]) -> None:
        await self.app.next_event("stationHeard", timeout_s=WAIT_S, station=value)


def as_station(value: dict[str, Any]) -> RadioStation:
    return RadioStation(value["name"], Country[value["country"]], value["trafficService"])


def as_json(value: RadioStation) -> dict[str, Any]:
    return {"name": value.name, "country": value.country.name,
            "trafficService": value.traffic_service}


class RecordingRadio(RadioProvider):
    """The example's radio, noting the fire-and-forget calls it gets."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def log_message(self, text: str) -> None:
        await super().log_message(text)
        self.arrived.put_nowait(("logMessage", text))

    async def station_heard(self, station: RadioStation) -> None:
        await super().station_heard(station)
        self.arrived.put_nowait(("stationHeard", as_json(station)))


@dataclass
class PythonProvider:
    runtime: LibjoynrRuntime
    domain: str
    radio: RecordingRadio = field(default_factory=RecordingRadio)

    async def register(self, scope: ProviderScope = ProviderScope.GLOBAL) -> str:
        return await self.runtime.register_provider(
            self.domain, self.radio, qos=ProviderQos(scope=scope),
            await_global_registration=scope is ProviderScope.GLOBAL)

    async def set_volume_locally(self, volume: int) -> None:
        self.radio.set_attribute("volume", volume)

    async def change_station(self, value: dict[str, Any]) -> None:
        self.radio.set_attribute("current_station", as_station(value))

    async def fire(self, value: dict[str, Any], partitions: list[str]) -> None:
        self.radio.fire_new_station_discovered(as_station(value), partitions=partitions)

    async def volume(self) -> int:
        return int(self.radio.get_attribute("volume"))

    async def _arrived(self, kind: str, value: Any) -> None:
        async with asyncio.timeout(WAIT_S):
            while await self.radio.arrived.get() != (kind, value):
                pass

    async def wait_log_message(self, text: str) -> None:
        await self._arrived("logMessage", text)

    async def wait_station_heard(self, value: dict[str, Any]) -> None:
        await self._arrived("stationHeard", value)


@dataclass
class JavaConsumer:
    """A proxy of a Java application: the harness's commands."""

    app: JavaRadioApp
    name: str

    @classmethod
    async def build(cls, app: JavaRadioApp, domain: str, scope: str = "LOCAL_THEN_GLOBAL",
                    timeout_ms: int = 10_000) -> JavaConsumer:
        name = fresh("proxy")
        await app.call("proxy", name=name, domain=domain, scope=scope,
                       discoveryTimeoutMs=timeout_ms)
        app.drain_events()
        return cls(app, name)

    async def call(self, cmd: str, **fields: Any) -> Any:
        try:
            return await self.app.call(cmd, proxy=self.name, **fields)
        except JavaCallError as error:
            raise ConsumerError(error.error, error.name) from error

    async def next(self, kind: str, **match: Any) -> dict[str, Any]:
        return await self.app.next_event(kind, timeout_s=WAIT_S, **match)

    def drain(self) -> list[dict[str, Any]]:
        return self.app.drain_events()


class ConsumerError(Exception):
    def __init__(self, kind: str, name: str | None) -> None:
        super().__init__(f"{kind} {name}")
        self.kind, self.name = kind, name


class PythonConsumer:
    """The generated typed proxy, driven by the harness's command names."""

    def __init__(self, radio: Any) -> None:
        self.radio = radio
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.subscriptions: dict[str, Any] = {}

    @classmethod
    async def build(cls, runtime: LibjoynrRuntime, domain: str,
                    scope: DiscoveryScope = DiscoveryScope.LOCAL_THEN_GLOBAL,
                    timeout_ms: int = 10_000) -> PythonConsumer:
        radio = await build_radio_proxy(runtime, domain, ttl_ms=10_000, discovery_qos=DiscoveryQos(
            discovery_timeout_ms=timeout_ms, discovery_scope=scope))
        return cls(radio)

    def _event(self, kind: str, **fields: Any) -> Callable[[Any], None]:
        def put(value: Any) -> None:
            out = as_json(value) if isinstance(value, RadioStation) else value
            self.events.put_nowait({"event": kind, **fields, **{
                "value" if kind == "publication" else "station": out}})
        return put

    async def call(self, cmd: str, **fields: Any) -> Any:
        radio = self.radio
        try:
            if cmd == "addFavoriteStation":
                return await radio.add_favorite_station(as_station(fields["station"]))
            if cmd == "describeStation":
                return await radio.describe_station(fields["name"])
            if cmd == "getCurrentStation":
                return as_json(await radio.current_station.get())
            if cmd == "getVolume":
                return await radio.volume.get()
            if cmd == "setVolume":
                return await radio.volume.set(fields["volume"])
            if cmd == "shuffleStations":
                return await radio.shuffle_stations()
            if cmd == "logMessage":
                return await radio.log_message(fields["text"])
            if cmd == "stationHeard":
                return await radio.station_heard(as_station(fields["station"]))
            if cmd == "subscribeAttribute":
                attribute = fields["attribute"]
                handle = radio.volume if attribute == "volume" else radio.current_station
                sub = await handle.subscribe(self._event("publication", attribute=attribute))
            elif cmd == "subscribeBroadcast":
                sub = await radio.new_station_discovered.subscribe(
                    self._event("broadcast", broadcast="newStationDiscovered"),
                    partitions=fields["partitions"])
            elif cmd in ("unsubscribeAttribute", "unsubscribeBroadcast"):
                return await self.subscriptions.pop(fields["subscriptionId"]).unsubscribe()
            else:
                raise AssertionError(f"no such command: {cmd}")
        except ApplicationError as error:
            raise ConsumerError("ApplicationException", error.error) from error
        self.subscriptions[sub.subscription_id] = sub
        return sub.subscription_id

    async def next(self, kind: str, **match: Any) -> dict[str, Any]:
        async with asyncio.timeout(WAIT_S):
            while True:
                event = await self.events.get()
                if event["event"] == kind and all(event.get(k) == v for k, v in match.items()):
                    return event

    def drain(self) -> list[dict[str, Any]]:
        out = []
        while not self.events.empty():
            out.append(self.events.get_nowait())
        return out


# ====================================================================== the checks


async def assert_the_radio_works(provider: ProviderSide, consumer: ConsumerSide) -> None:
    """The same checks for every pairing; the provider's radio is new (one favorite, FM4)."""
    fm4 = station("FM4", traffic=True)
    # a modelled error: fewer than two stations cannot be shuffled
    with pytest.raises(ConsumerError) as refused:
        await consumer.call("shuffleStations")
    assert (refused.value.kind, refused.value.name) == ("ApplicationException", "NO_STATIONS")
    # requests with a struct and an enum, and with a string
    oe1 = station("Oe1", "GERMANY")
    assert await consumer.call("addFavoriteStation", station=oe1) is True
    assert await consumer.call("addFavoriteStation", station=oe1) is False
    assert await consumer.call("describeStation", name="Oe1") == "Oe1 (Germany)"
    assert await consumer.call("describeStation", name="nowhere") == "nowhere"
    # attributes: read, written
    assert await consumer.call("getCurrentStation") == fm4
    assert await consumer.call("getVolume") == 50
    assert await consumer.call("setVolume", volume=17) is None
    assert await consumer.call("getVolume") == 17
    assert await provider.volume() == 17

    # an on-change subscription: a change arrives; after the unsubscribe, none
    volume_sub = await consumer.call("subscribeAttribute", attribute="volume")
    station_sub = await consumer.call("subscribeAttribute", attribute="currentStation")
    await provider.set_volume_locally(23)
    await consumer.next("publication", attribute="volume", value=23)
    await consumer.call("unsubscribeAttribute", attribute="volume", subscriptionId=volume_sub)
    await provider.set_volume_locally(29)
    # the provider publishes in order: a station change after it is the marker
    marker = station("marker", "ITALY")
    await provider.change_station(marker)
    await consumer.next("publication", attribute="currentStation", value=marker)
    await asyncio.sleep(QUIET_S)
    late = [e for e in consumer.drain() if e.get("attribute") == "volume"]
    assert late == [], late
    await consumer.call("unsubscribeAttribute", attribute="currentStation",
                        subscriptionId=station_sub)

    # the broadcast with partitions: AUSTRIA arrives, GERMANY does not
    sub = await consumer.call("subscribeBroadcast", partitions=["AUSTRIA"])
    german, austrian = station("Bayern 3", "GERMANY"), station("Radio Wien")
    await provider.fire(german, ["GERMANY"])
    await provider.fire(austrian, ["AUSTRIA"])
    await consumer.next("broadcast", station=austrian)
    await asyncio.sleep(QUIET_S)
    assert [e for e in consumer.drain() if e.get("event") == "broadcast"] == []
    await consumer.call("unsubscribeBroadcast", subscriptionId=sub)

    # fire-and-forget, both payload kinds
    await consumer.call("logMessage", text="hello from the consumer")
    await provider.wait_log_message("hello from the consumer")
    heard = station("Antenne", "GERMANY")
    await consumer.call("stationHeard", station=heard)
    await provider.wait_station_heard(heard)

    # after the unsubscribe no broadcast arrives (a request answered after it is the marker)
    await provider.fire(station("after"), ["AUSTRIA"])
    assert await consumer.call("addFavoriteStation", station=station("last")) is True
    await asyncio.sleep(QUIET_S)
    assert [e for e in consumer.drain() if e.get("event") == "broadcast"] == []


# ====================================================================== fixtures


@dataclass
class Apps:
    """A Java provider application and a Java consumer application on one cluster
    controller, and that controller's websocket URL."""

    url: str
    provider: JavaRadioApp
    consumer: JavaRadioApp


async def java_apps(stack: AsyncExitStack, oracles: JavaOracles, workdir: Path, url: str
                    ) -> Apps:
    apps = [JavaRadioApp(oracles, workdir, url, name=name)
            for name in ("java-provider", "java-consumer")]
    for app in apps:
        stack.push_async_callback(app.stop)
    await asyncio.gather(*(app.start() for app in apps))
    return Apps(url, *apps)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ours(java_oracles: JavaOracles, tmp_path_factory: pytest.TempPathFactory
               ) -> AsyncIterator[tuple[ClusterController, Apps]]:
    """This project's cluster controller (embedded broker and GCD) with the two Java
    applications."""
    workdir = tmp_path_factory.mktemp("ours")
    async with AsyncExitStack() as stack:
        cc = await stack.enter_async_context(ClusterController(cc_config(
            workdir / "cc", embedded_broker__enabled="true", embedded_broker__port="0",
            embedded_gcd__enabled="true", mqtt__backends=f'{{{GBID} = "embedded"}}')))
        yield cc, await java_apps(stack, java_oracles, workdir, cc.websocket_address.url)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def theirs(java_oracles: JavaOracles, tmp_path_factory: pytest.TempPathFactory
                 ) -> AsyncIterator[tuple[JavaClusterController, Apps]]:
    """joynr's Java cluster controller on mosquitto with a GCD (SQLite), with the two Java
    applications."""
    workdir = tmp_path_factory.mktemp("theirs")
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(workdir / "mosquitto"))
        gcd = await stack.enter_async_context(GcdService(GcdSettings(
            gbid=GBID, broker_url=broker.url, sqlite_path=workdir / "gcd.sqlite",
            data_dir=workdir / "gcd")))
        await gcd.mqtt.wait_connected(WAIT_S)
        cc = JavaClusterController(java_oracles, workdir / "java-cc", {GBID: broker.url})
        stack.push_async_callback(cc.stop)
        await cc.start()
        yield cc, await java_apps(stack, java_oracles, workdir, cc.url)


async def runtime_on(stack: AsyncExitStack, url: str, config: LibjoynrConfig | None = None
                     ) -> LibjoynrRuntime:
    runtime = await connect(url, config=config or LibjoynrConfig(), timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(runtime.core.stop)
    return runtime


# ====================================================================== on this project's CC


async def in_gcd(cc: ClusterController, domain: str) -> bool:
    """Whether the embedded GCD holds a radio of ``domain``."""
    assert cc.gcd is not None
    return bool(await cc.gcd.store.find([domain], "example/Radio", int(time.time() * 1000)))


async def test_a_java_provider_and_a_java_consumer_on_this_projects_cc(ours) -> None:
    _, apps = ours
    provider = JavaProvider(apps.provider, fresh("java-java"))
    await provider.register("GLOBAL")
    consumer = await JavaConsumer.build(apps.consumer, provider.domain)
    await assert_the_radio_works(provider, consumer)
    await apps.provider.call("unregister", domain=provider.domain)


async def test_java_registrations_local_and_global_on_this_projects_cc(ours) -> None:
    cc, apps = ours
    local, glob = (JavaProvider(apps.provider, fresh(s)) for s in ("local", "global"))
    await local.register("LOCAL")
    await glob.register("GLOBAL")
    assert await in_gcd(cc, glob.domain) and not await in_gcd(cc, local.domain)
    # GLOBAL_ONLY finds the global one only; LOCAL_ONLY finds both
    found = await JavaConsumer.build(apps.consumer, glob.domain, "GLOBAL_ONLY")
    assert await found.call("addFavoriteStation", station=station("g")) is True
    missing = await JavaConsumer.build(apps.consumer, local.domain, "GLOBAL_ONLY", MISS_MS)
    with pytest.raises(ConsumerError) as refused:
        await missing.call("getVolume")
    assert refused.value.kind == "DiscoveryException", refused.value
    for domain in (local.domain, glob.domain):
        near = await JavaConsumer.build(apps.consumer, domain, "LOCAL_ONLY")
        assert await near.call("getVolume") == 50
    # unregistered: the GCD forgets the global one
    await apps.provider.call("unregister", domain=glob.domain)
    await apps.provider.call("unregister", domain=local.domain)
    # (joynr's Java runtime does not wait for the removal: the GCD's is awaited here)
    for _ in range(int(WAIT_S / 0.05)):
        if not await in_gcd(cc, glob.domain):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(f"{glob.domain} still in the GCD after {WAIT_S} s")


async def test_a_python_provider_with_a_java_consumer_on_this_projects_cc(ours) -> None:
    _, apps = ours
    async with AsyncExitStack() as stack:
        provider = PythonProvider(await runtime_on(stack, apps.url), fresh("py-java"))
        await provider.register()
        consumer = await JavaConsumer.build(apps.consumer, provider.domain)
        await assert_the_radio_works(provider, consumer)


async def test_a_java_provider_with_a_python_consumer_on_this_projects_cc(ours) -> None:
    _, apps = ours
    async with AsyncExitStack() as stack:
        provider = JavaProvider(apps.provider, fresh("java-py"))
        await provider.register("GLOBAL")
        runtime = await runtime_on(stack, apps.url)
        consumer = await PythonConsumer.build(runtime, provider.domain)
        await assert_the_radio_works(provider, consumer)
        await apps.provider.call("unregister", domain=provider.domain)


# ====================================================================== on joynr's Java CC


async def test_this_projects_provider_in_joynrs_dialect_on_joynrs_cc(theirs) -> None:
    _, apps = theirs
    async with AsyncExitStack() as stack:
        provider = PythonProvider(await runtime_on(stack, apps.url, JOYNR), fresh("jcc-py-java"))
        await provider.register()
        consumer = await JavaConsumer.build(apps.consumer, provider.domain)
        await assert_the_radio_works(provider, consumer)


async def test_this_projects_consumer_in_joynrs_dialect_on_joynrs_cc(theirs) -> None:
    _, apps = theirs
    async with AsyncExitStack() as stack:
        provider = JavaProvider(apps.provider, fresh("jcc-java-py"))
        await provider.register("GLOBAL")
        runtime = await runtime_on(stack, apps.url, JOYNR)
        consumer = await PythonConsumer.build(runtime, provider.domain)
        await assert_the_radio_works(provider, consumer)
        await apps.provider.call("unregister", domain=provider.domain)


async def test_a_python_provider_and_consumer_in_joynrs_dialect_on_joynrs_cc(theirs) -> None:
    _, apps = theirs
    async with AsyncExitStack() as stack:
        provider = PythonProvider(await runtime_on(stack, apps.url, JOYNR), fresh("jcc-py-py"))
        await provider.register()
        runtime = await runtime_on(stack, apps.url, JOYNR)
        consumer = await PythonConsumer.build(runtime, provider.domain)
        await assert_the_radio_works(provider, consumer)


async def test_a_python_provider_registered_local_on_joynrs_cc(theirs) -> None:
    _, apps = theirs
    async with AsyncExitStack() as stack:
        runtime = await runtime_on(stack, apps.url, JOYNR)
        provider = PythonProvider(runtime, fresh("jcc-local"))
        await provider.register(ProviderScope.LOCAL)
        near = await JavaConsumer.build(apps.consumer, provider.domain, "LOCAL_ONLY")
        assert await near.call("getVolume") == 50
        far = await JavaConsumer.build(apps.consumer, provider.domain, "GLOBAL_ONLY", MISS_MS)
        with pytest.raises(ConsumerError) as refused:
            await far.call("getVolume")
        assert refused.value.kind == "DiscoveryException", refused.value
        with pytest.raises(DiscoveryError):
            await PythonConsumer.build(runtime, provider.domain, DiscoveryScope.GLOBAL_ONLY,
                                       MISS_MS)


# ====================================================================== access control


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def guarded(java_oracles: JavaOracles, tmp_path_factory: pytest.TempPathFactory
                  ) -> AsyncIterator[tuple[ClusterController, Apps]]:
    """This project's cluster controller with access control on, and the two Java
    applications, each on a websocket path that names its uid."""
    workdir = tmp_path_factory.mktemp("guarded")
    write_tables(workdir / "acl" / "apps.json", masterRegistrationTable=[
        master_rce("java-provider", "acl.*", "example/Radio"),
    ], masterAccessTable=[
        master_ace("java-consumer", "acl.open", "example/Radio"),
        master_ace("java-consumer", "acl.readonly", "example/Radio", "getVolume"),
    ])
    async with AsyncExitStack() as stack:
        cc = await stack.enter_async_context(ClusterController(cc_config(
            workdir / "cc", access_control__enabled="true",
            access_control__entries_directory=str(workdir / "acl"),
            access_control__websocket_paths='{ "/provider" = "java-provider", '
                                            '"/consumer" = "java-consumer" }')))
        url = cc.websocket_address.url
        apps = [JavaRadioApp(java_oracles, workdir, url, name=f"java-{role}",
                             properties={"joynr.messaging.cc.path": f"/{role}"})
                for role in ("provider", "consumer")]
        for app in apps:
            stack.push_async_callback(app.stop)
        await asyncio.gather(*(app.start() for app in apps))
        yield cc, Apps(url, *apps)


async def test_this_projects_access_control_refuses_a_java_registration_and_call(guarded
                                                                                 ) -> None:
    """joynr's Java runtime hears of a refused registration and a refused call as it hears of
    any provider runtime error: its registration future and its proxy call fail with one."""
    cc, apps = guarded
    for domain in ("acl.open", "acl.readonly"):
        await JavaProvider(apps.provider, domain).register("LOCAL")
    with pytest.raises(JavaCallError) as refused:
        await apps.provider.call("register", domain="elsewhere", scope="LOCAL")
    assert refused.value.error == "ProviderRuntimeException", refused.value.answer
    assert ("Provider does not have permissions to register interface example/Radio on "
            "domain elsewhere.") in str(refused.value.answer.get("message")), refused.value
    open_ = await JavaConsumer.build(apps.consumer, "acl.open", "LOCAL_ONLY")
    assert await open_.call("addFavoriteStation", station=station("a")) is True
    readonly = await JavaConsumer.build(apps.consumer, "acl.readonly", "LOCAL_ONLY")
    assert await readonly.call("getVolume") == 50
    with pytest.raises(JavaCallError) as denied:
        await apps.consumer.call("addFavoriteStation", proxy=readonly.name,
                                 station=station("b"))
    assert denied.value.error == "ProviderRuntimeException", denied.value.answer
    message = str(denied.value.answer.get("message"))
    assert "access control" in message and "'java-consumer'" in message, message
    assert cc.access is not None
    counters = cc.access.controller.counters
    assert counters["refused-rcl-denied"] == 1 and counters["refused-acl-denied"] == 1

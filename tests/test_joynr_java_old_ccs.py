"""joynr's own Java cluster controllers of three releases on this project's GCD (SQLite):
1.6.0 (GCD interface 0.1), 1.8.0 (0.2) and 1.25.0 (0.3), and this project's cluster controller
(in joynr's dialect), all over one mosquitto.

The old releases (tests/oracles/java/joynr-1.6 and joynr-1.8) run a radio provider and consumer
in the cluster controller's own JVM; the current one a radio application on its websocket. Each
test checks through the store what the cluster controller's calls did: a GLOBAL registration
lands in the GCD instance's own GBID (the old calls name none) at the cluster controller's
topic, its touch advances the rows' last-seen date, an unregistration deletes them, and a
GLOBAL_ONLY lookup by one cluster controller finds a provider another one registered and calls
it over MQTT (this project's cluster controller among them, as a provider's and as a
consumer's). The old lookups do not answer a provider of another backend, and only 1.25.0
removes the rows of its former run (removeStale) when it starts again under its id. One of
each cluster controller serves the whole module; every test has domains of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from examples.radio.generated import Country, Radio, RadioStation
from examples.radio.provider import RadioProvider
from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.libjoynr import (
    DiscoveryQos,
    DiscoveryScope,
    LibjoynrRuntime,
    ProviderQos,
    ProviderScope,
)
from pyjoynr.libjoynr import connect as joynr_connect
from pyjoynr.programming.discovery_types import GlobalDiscoveryEntry, Version
from pyjoynr.programming.system_interfaces import address_from_json, address_to_json
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.testing.brokers import Mosquitto
from tests.support.java_oracles import (
    OLD_RELEASES,
    JavaCallError,
    JavaClusterController,
    JavaOracles,
    JavaProcess,
    JavaRadioApp,
    OldJavaClusterController,
    station,
)
from tests.support.mqtt_cluster import mqtt_cc_config

pytestmark = [pytest.mark.network, pytest.mark.asyncio(loop_scope="module")]

GBID = "joynrdefaultgbid"
#: a second backend the GCD accepts, which none of the cluster controllers is connected to
OTHER_GBID = "old-ccs-other"
RADIO = "example/Radio"
#: the cluster controllers' freshness interval: their touch every 3 s (the old releases' touch
#: message lives as long; at 1 s, one run under a load of 11 saw neither old release's touch
#: update its row for 30 s)
FRESHNESS_MS = 3_000
#: bound of every wait for the store (s)
WAIT_S = 30.0
#: the GCD interface of each Java cluster controller under test
INTERFACES = ("0.1", "0.2", "0.3")
#: this project's cluster controller
PY = "py"
#: (consumer, provider) of the lookups: each pair with an old cluster controller
PAIRS = [(c, p) for c in (*INTERFACES, PY) for p in (*INTERFACES, PY)
         if c != p and {c, p} & {"0.1", "0.2"}]

_domains = itertools.count(1)


class PyRadio:
    """A radio application of this project's cluster controller that takes the commands the
    Java ones take (register, unregister, providerState, proxy, addFavoriteStation)."""

    def __init__(self, runtime: LibjoynrRuntime) -> None:
        self.runtime = runtime
        self.providers: dict[str, tuple[RadioProvider, str]] = {}
        self.proxies: dict[str, Any] = {}

    async def call(self, cmd: str, timeout_s: float = WAIT_S, **c: Any) -> Any:
        return await asyncio.wait_for(self._run(cmd, **c), timeout_s)

    async def _run(self, cmd: str, **c: Any) -> Any:
        if cmd == "register":
            provider = RadioProvider()
            pid = await self.runtime.register_provider(
                c["domain"], provider, qos=ProviderQos(scope=ProviderScope.GLOBAL),
                await_global_registration=True)
            self.providers[c["domain"]] = (provider, pid)
            return None
        if cmd == "unregister":
            await self.runtime.unregister_provider(self.providers.pop(c["domain"])[1])
            return None
        if cmd == "providerState":
            provider = self.providers[c["domain"]][0]
            return {"favorites": [{"name": s.name, "country": s.country.name,
                                   "trafficService": s.traffic_service}
                                  for s in provider.stations]}
        if cmd == "proxy":
            self.proxies[c["name"]] = await self.runtime.build_proxy(
                Radio, c["domain"], ttl_ms=c["ttlMs"], discovery_qos=DiscoveryQos(
                    discovery_timeout_ms=c["discoveryTimeoutMs"],
                    discovery_scope=DiscoveryScope.GLOBAL_ONLY))
            return None
        if cmd == "addFavoriteStation":
            s = c["station"]
            return await self.proxies[c["proxy"]].add_favorite_station(
                RadioStation(s["name"], Country[s["country"]], s["trafficService"]))
        raise ValueError(f"unknown command {cmd}")


@dataclass
class Side:
    """One cluster controller under test and what drives its radio: ``radio`` takes the
    commands register/unregister/proxy/addFavoriteStation (the old cluster controller
    itself, the current one's application, or this project's)."""

    interface: str
    cc: JavaProcess | ClusterController
    radio: JavaProcess | PyRadio


@dataclass
class World:
    broker: Mosquitto
    gcd: GcdService
    store: Path
    sides: dict[str, Side]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory, java_oracles: JavaOracles
                ) -> AsyncIterator[World]:
    base = tmp_path_factory.mktemp("old-ccs")
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(base / "mosquitto"))
        store = base / "gcd.sqlite"
        gcd = await stack.enter_async_context(GcdService(GcdSettings(
            broker_url=broker.url, gbid=GBID, valid_gbids=(GBID, OTHER_GBID),
            sqlite_path=store, data_dir=base / "gcd")))
        await gcd.mqtt.wait_connected(WAIT_S)
        sides: dict[str, Side] = {}
        for interface in ("0.1", "0.2"):
            release = OLD_RELEASES[interface]
            old = OldJavaClusterController(java_oracles, base / release.module, release,
                                           broker.url, freshness_interval_ms=FRESHNESS_MS)
            stack.push_async_callback(old.stop)
            sides[interface] = Side(interface, old, old)
        current = JavaClusterController(java_oracles, base / "current", {GBID: broker.url},
                                        freshness_interval_ms=FRESHNESS_MS)
        stack.push_async_callback(current.stop)
        # the three start side by side (each takes seconds of JVM start-up)
        await asyncio.gather(current.start(), *(s.cc.start() for s in sides.values()))
        app = JavaRadioApp(java_oracles, base / "current", current.url)
        stack.push_async_callback(app.stop)
        await app.start()
        sides["0.3"] = Side("0.3", current, app)
        ours = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            base / "py-cc", "py-cc", {GBID: f"{broker.url}?dialect=joynr"})))
        assert ours.mqtt is not None
        await ours.mqtt.wait_connected(WAIT_S)
        runtime = await joynr_connect(ours.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
        stack.push_async_callback(runtime.close)
        sides[PY] = Side(PY, ours, PyRadio(runtime))
        yield World(broker, gcd, store, sides)


def rows(store: Path, **where: str) -> list[dict[str, Any]]:
    """The store's rows (of those column values), read as another process would."""
    query = "SELECT * FROM discovery_entries"
    if where:
        query += " WHERE " + " AND ".join(f"{column} = ?" for column in where)
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute(query, tuple(where.values()))]


async def wait_rows(store: Path, count: int, **where: str) -> list[dict[str, Any]]:
    """Poll until the store has ``count`` rows of those values (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        found = rows(store, **where)
        if len(found) == count:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(found)} rows of {where} after {WAIT_S} s, not {count}:"
                                 f" {found}")
        await asyncio.sleep(0.2)


async def wait_touched(store: Path, domain: str, after_ms: int) -> dict[str, Any]:
    """Poll until the one row of ``domain`` was last seen after ``after_ms`` (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        [row] = rows(store, domain=domain)
        if row["last_seen_ms"] > after_ms:
            return row
        assert time.monotonic() < deadline, f"not touched in {WAIT_S} s: {row}"
        await asyncio.sleep(0.2)


def persist_channel_id(path: Path, channel_id: str) -> None:
    """Write the persistence file a joynr cluster controller reads its channel id from."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"joynr.messaging.channelid={channel_id}\n", encoding="utf-8")


def fresh_domain(interface: str) -> str:
    return f"old-ccs-{interface}-{next(_domains)}"


async def register(world: World, side: Side, domain: str) -> dict[str, Any]:
    """Register the side's radio GLOBAL in ``domain``; its row in the store."""
    await side.radio.call("register", domain=domain, scope="GLOBAL", timeoutMs=20_000)
    [row] = await wait_rows(world.store, 1, domain=domain)
    return row


@pytest.mark.parametrize("interface", INTERFACES)
async def test_global_registration_lands_in_own_gbid(world: World, interface: str) -> None:
    side = world.sides[interface]
    domain = fresh_domain(interface)
    row = await register(world, side, domain)
    assert row["gbid"] == GBID
    assert row["interface_name"] == RADIO
    assert (row["major_version"], row["minor_version"]) == (1, 0)
    assert row["scope"] == "GLOBAL"
    # the cluster controller id is the last level of its topic (what its touch names)
    assert row["topic"].rsplit("/", 1)[-1] == row["cluster_controller_id"]
    assert row["cluster_controller_id"]
    # what a lookup answers: the address's brokerUri is the GBID (the old releases sent their
    # broker's URL there)
    [entry] = await world.gcd.provider.lookup([domain], RADIO)
    assert address_from_json(entry.address) == MqttAddress(GBID, row["topic"])
    await side.radio.call("unregister", domain=domain)
    await wait_rows(world.store, 0, domain=domain)


@pytest.mark.parametrize("interface", INTERFACES)
async def test_touch_advances_last_seen(world: World, interface: str) -> None:
    side = world.sides[interface]
    domain = fresh_domain(interface)
    first = await register(world, side, domain)
    now = await wait_touched(world.store, domain, first["last_seen_ms"])
    assert now["expiry_ms"] > first["expiry_ms"]
    await side.radio.call("unregister", domain=domain)
    await wait_rows(world.store, 0, domain=domain)


@pytest.mark.parametrize("interface", INTERFACES)
async def test_unregister_removes_the_row(world: World, interface: str) -> None:
    side = world.sides[interface]
    domain = fresh_domain(interface)
    row = await register(world, side, domain)
    await side.radio.call("unregister", domain=domain)
    await wait_rows(world.store, 0, domain=domain)
    assert rows(world.store, participant_id=row["participant_id"]) == []


@pytest.mark.parametrize("interface", ["0.1", "0.2"])
async def test_old_lookup_does_not_see_another_backends_provider(world: World, interface: str
                                                                ) -> None:
    """A provider registered only in another backend is not answered to the old lookup
    (without GBIDs: the instance's own GBID only), so an old cluster controller, which has one
    broker, never gets an address it cannot reach: its call ends in a discovery error."""
    side = world.sides[interface]
    domain = fresh_domain(f"other-{interface}")
    entry = GlobalDiscoveryEntry(
        Version(1, 0), domain, RADIO, f"{domain}-radio", ProviderQos(scope=ProviderScope.GLOBAL),
        now_ms(), now_ms() + 60_000, "", address_to_json(MqttAddress(OTHER_GBID, "elsewhere")))
    await world.gcd.provider.add_in_backends(entry, [OTHER_GBID])
    [row] = await wait_rows(world.store, 1, domain=domain)
    assert row["gbid"] == OTHER_GBID
    proxy = f"{domain}-proxy"
    await side.radio.call("proxy", name=proxy, domain=domain, scope="GLOBAL_ONLY",
                          discoveryTimeoutMs=3_000, retryIntervalMs=500, ttlMs=5_000)
    with pytest.raises(JavaCallError) as refused:
        await side.radio.call("addFavoriteStation", proxy=proxy, station=station(domain))
    assert refused.value.error == "DiscoveryException", refused.value.answer


@pytest.mark.parametrize(("consumer", "provider"), PAIRS)
async def test_global_lookup_finds_another_ccs_provider_and_calls_it(
        world: World, consumer: str, provider: str) -> None:
    owner, caller = world.sides[provider], world.sides[consumer]
    domain = fresh_domain(f"{provider}-to-{consumer}")
    await register(world, owner, domain)
    proxy = f"{domain}-proxy"
    await caller.radio.call("proxy", name=proxy, domain=domain, scope="GLOBAL_ONLY",
                            discoveryTimeoutMs=20_000, ttlMs=20_000)
    assert await caller.radio.call("addFavoriteStation", proxy=proxy, station=station(domain),
                                   timeout_s=45) is True
    state = await owner.radio.call("providerState", domain=domain)
    assert {"name": domain, "country": "AUSTRIA", "trafficService": False} \
        in state["favorites"]
    await owner.radio.call("unregister", domain=domain)
    await wait_rows(world.store, 0, domain=domain)



async def test_a_cluster_controller_started_again_removes_stale_rows_only_on_0_3(
        world: World, java_oracles: JavaOracles, tmp_path: Path) -> None:
    """A cluster controller started again under its former id (its persisted channel id)
    finds a row of its former run in the store: 1.25.0 (0.3) calls removeStale at start and
    the row goes; 1.6.0 and 1.8.0 have no removeStale, so the row stays and the new run's touch
    keeps it alive (until the provider registers again or unregisters). The three start side
    by side, each in a directory of its own."""
    broker = world.broker.url

    async def seed(interface: str, persistence_file: Path) -> tuple[str, str]:
        """The id of the cluster controller that will start with ``persistence_file`` (joynr
        reads its channel id from there) and a row of its former run."""
        cc_id = f"old-ccs-restart-{interface.replace('.', '-')}-{next(_domains)}"
        persist_channel_id(persistence_file, cc_id)
        domain = fresh_domain(f"restart-{interface}")
        entry = GlobalDiscoveryEntry(
            Version(1, 0), domain, RADIO, f"{cc_id}-radio",
            ProviderQos(scope=ProviderScope.GLOBAL), now_ms(), now_ms() + 60_000, "",
            address_to_json(MqttAddress(GBID, cc_id)))
        await world.gcd.provider.add(entry)
        [row] = await wait_rows(world.store, 1, domain=domain)
        assert row["cluster_controller_id"] == cc_id
        return cc_id, domain

    async def old(interface: str) -> None:
        release = OLD_RELEASES[interface]
        workdir = tmp_path / release.module
        cc = OldJavaClusterController(java_oracles, workdir, release, broker,
                                      freshness_interval_ms=FRESHNESS_MS, name="cc")
        persisted = Path(str(cc.properties["joynr.messaging.persistence_file"]))
        cc_id, domain = await seed(interface, persisted)
        started_ms = now_ms()
        try:
            await cc.start()
            row = await wait_touched(world.store, domain, started_ms)
            assert row["cluster_controller_id"] == cc_id, interface
        finally:
            await cc.stop()

    async def current() -> None:
        workdir = tmp_path / "current"
        # joynr 1.25 calls removeStale this long after its start (default 5 minutes)
        cc = JavaClusterController(java_oracles, workdir, {GBID: broker},
                                   freshness_interval_ms=FRESHNESS_MS, name="cc",
                                   properties={"joynr.messaging.removestaledelayms": 500})
        # the file it reads its channel id from at its start
        persisted = Path(str(cc.properties["joynr.messaging.persistence_file"]))
        cc_id, domain = await seed("0.3", persisted)
        try:
            await cc.start()
            await wait_rows(world.store, 0, domain=domain)
        finally:
            await cc.stop()
        assert rows(world.store, cluster_controller_id=cc_id) == []

    await asyncio.gather(old("0.1"), old("0.2"), current())

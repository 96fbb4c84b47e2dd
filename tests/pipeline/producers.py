"""A small fleet made by the real producers, for the pipeline's end-to-end test
(tests/pipeline/test_pipeline_producers.py).

Three in-process cluster controllers on a real mosquitto, each with ``[audit]`` on and its
routing snapshots in one shared directory; ``cc-one`` runs the embedded GCD, whose SQLite
store is the directory the pipeline reads over JDBC. Real libjoynr runtimes over websocket
register global providers (through the GCD) and call them across the cluster controllers;
a raw websocket client and a raw MQTT client send what a runtime would not (a spoofed
sender, a request for nobody, a message for a provider not registered yet, a request without
replyTo). One provider moves to another cluster controller, one is unregistered, and
``cc-three`` stops for good while ``cc-two`` keeps touching its entries: the drift and the
stale cluster controller the jobs must find.

:func:`produce` does all that and returns :class:`Produced`: the input paths and what the
test needs to state the expected figures (ids, counters, the instants it measured, the
routing tables the snapshots were taken of).
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.gcd.store import StoredEntry
from pyjoynr.libjoynr import LibjoynrRuntime, ProviderQos, ProviderScope
from pyjoynr.libjoynr import connect as joynr_connect
from pyjoynr.runtime import records
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def
from pyjoynr.runtime.messages import Message, MessageType, encode_frame
from pyjoynr.runtime.payloads import Request
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import eventually
from tests.support.mqtt_cluster import mqtt_cc_config
from tests.support.radio import Country, Radio, RadioProvider, Station
from tests.support.raw_websocket import RawClient, note

WAIT_S = 10.0
GBID = "joynrdefaultgbid"
HOUR = 3_600_000
MINUTE = 60_000
RADIO = interface_def(Radio)
INTERFACE = RADIO.name

ONE, TWO, THREE = "cc-one", "cc-two", "cc-three"
#: the providers: participantId -> domain (all of interface test/Radio, scope GLOBAL)
RADIO_TWO, GONE, MOVING, RADIO_THREE, LATE = ("pipe-radio-two", "pipe-gone", "pipe-moving",
                                              "pipe-radio-three", "pipe-late")
DOMAINS = {RADIO_TWO: "pipe.radio", GONE: "pipe.gone", MOVING: "pipe.moving",
           RADIO_THREE: "pipe.three", LATE: "pipe.late"}
#: calls of the consumer (in cc-one's runtime) to pipe.radio, pipe.moving and pipe.three
REQUESTS, ONE_WAYS, MOVING_REQUESTS, THREE_REQUESTS = 4, 3, 1, 2
#: the expiry of the late provider's registration (cc-one touches nothing within the test)
LATE_EXPIRY_MS = 10 * MINUTE
#: the margin between cc-three's stop and the first instant a touch or registration of the
#: running cluster controllers may count as "after" it
STOP_MARGIN_MS = 50


@dataclass
class Produced:
    """The inputs the producers wrote, and the facts the expected figures come from."""

    audit_dir: Path
    snapshot_dir: Path
    sqlite: Path
    #: epoch ms right after cc-three stopped (every row of it was last seen before)
    stopped_ms: int = 0
    #: participantIds of the consumer's proxies (cc-one's runtime)
    radio_proxy: str = ""
    #: the raw websocket client of cc-one: its client id and the participantId it sends as
    raw_client_id: str = ""
    raw_pid: str = ""
    #: the participant nobody provides (a request queued and expired)
    nobody: str = ""
    #: the raw MQTT caller's participantId (a request without replyTo)
    mqtt_caller: str = ""
    #: counters of the cluster controllers at the end (proc -> name -> value)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    #: the routing entries each snapshot was taken of: proc -> participantId -> (kind,
    #: gbid, topic, sticky, expiry_ms)
    routes: dict[str, dict[str, tuple[str, str | None, str | None, bool, int]]] = field(
        default_factory=dict)
    #: the directory rows at the end, read through the store's API
    rows: dict[str, StoredEntry] = field(default_factory=dict)
    #: each cluster controller's own MQTT topic (where its providers are reached)
    topics: dict[str, str] = field(default_factory=dict)


def request(sender: str, recipient: str, ttl_ms: int, reply_to: MqttAddress | None = None
            ) -> Message:
    """A request ``favorites()`` of the Radio interface."""
    return Message(MessageType.REQUEST, sender, recipient, now_ms() + ttl_ms,
                   Request(uuid.uuid4().hex, "favorites", [], []).to_body(), reply_to=reply_to)


def _route_facts(cc: ClusterController
                 ) -> dict[str, tuple[str, str | None, str | None, bool, int]]:
    facts = {}
    for pid, entry in cc.router.routing_entries():
        address = entry.address
        topic = address.topic if isinstance(address, MqttAddress) else None
        facts[pid] = (records.address_kind(address), records.address_gbid(address), topic,
                      entry.is_sticky, entry.expiry_date_ms)
    return facts


async def produce(base: Path) -> Produced:
    """Run the fleet (see the module docstring); every process is stopped on return."""
    produced = Produced(base / "audit", base / "snapshots", base / "gcd.sqlite")
    common = {"audit__enabled": "true", "audit__dir": str(produced.audit_dir),
              "routing_snapshots__dir": str(produced.snapshot_dir)}
    glob = ProviderQos(scope=ProviderScope.GLOBAL)
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(base / "mosquitto"))
        backends = {GBID: broker.url}
        one = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            base / "one", ONE, backends, embedded_gcd__enabled="true",
            embedded_gcd__sqlite_path=str(produced.sqlite), **common)))
        # cc-two touches its entries often (a running cluster controller keeps them fresh)
        two = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            base / "two", TWO, backends, discovery__touch_interval_s="0.2", **common)))
        three_stack = await stack.enter_async_context(AsyncExitStack())
        three = await three_stack.enter_async_context(ClusterController(mqtt_cc_config(
            base / "three", THREE, backends, **common)))
        for cc in (one, two, three):
            assert cc.mqtt is not None
            await cc.mqtt.wait_connected(WAIT_S)
            produced.topics[cc.id] = cc.own_topic
        gcd = one.gcd
        assert gcd is not None

        async def runtime(cc: ClusterController) -> LibjoynrRuntime:
            rt = await joynr_connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
            # stopped, not closed: closing would unregister its providers from the GCD,
            # which the figures must not depend on
            stack.push_async_callback(rt.core.stop)
            return rt

        rt_one, rt_two, rt_three = await runtime(one), await runtime(two), await runtime(three)

        async def register(rt: LibjoynrRuntime, pid: str, provider: RadioProvider,
                           **options: Any) -> None:
            await rt.register_provider(DOMAINS[pid], provider, participant_id=pid, qos=glob,
                                       await_global_registration=True, **options)

        radio = RadioProvider()
        await register(rt_two, RADIO_TWO, radio)
        await register(rt_two, GONE, RadioProvider())
        await register(rt_two, MOVING, RadioProvider())
        await register(rt_three, RADIO_THREE, RadioProvider())

        # the consumer in cc-one: requests, one-way calls, an attribute subscription and a
        # broadcast (multicast) subscription to pipe.radio in cc-two, over the broker
        proxy = await rt_one.build_proxy(Radio, DOMAINS[RADIO_TWO], ttl_ms=5_000)
        produced.radio_proxy = proxy.participant_id
        for i in range(REQUESTS):
            assert await proxy.add_favorite(Station(f"s{i}", Country.AUSTRIA, 90.0 + i))
        for i in range(ONE_WAYS):
            await proxy.note(f"n{i}")
        await eventually(lambda: len(radio.notes) == ONE_WAYS, WAIT_S, "the one-way calls")
        changes: asyncio.Queue[str] = asyncio.Queue()
        subscription = await proxy.current_station.subscribe(changes.put_nowait)
        assert await asyncio.wait_for(changes.get(), WAIT_S) == "FM4"
        radio.set_attribute("current_station", "Oe3")
        assert await asyncio.wait_for(changes.get(), WAIT_S) == "Oe3"
        await subscription.unsubscribe()
        publisher = radio.registrations[0].publisher
        await eventually(lambda: not publisher.subscription_ids, WAIT_S,
                         "the provider ends the subscription")
        stations: asyncio.Queue[Station] = asyncio.Queue()
        broadcast = await proxy.new_station.subscribe(stations.put_nowait, partitions=["*"])
        radio.fire("new_station", Station("X", Country.GERMANY), partitions=["eu"])
        assert (await asyncio.wait_for(stations.get(), WAIT_S)).name == "X"
        await broadcast.unsubscribe()
        mqtt_one = one.mqtt
        assert mqtt_one is not None
        await eventually(lambda: not mqtt_one.multicast_topics(GBID), WAIT_S,
                         "the multicast topic unsubscribed")

        # a route to pipe.gone (looked up, never called), one call to pipe.moving (in cc-two
        # at the time) and to pipe.three
        await rt_one.build_proxy(Radio, DOMAINS[GONE])
        moving = await rt_one.build_proxy(Radio, DOMAINS[MOVING], ttl_ms=5_000)
        for _ in range(MOVING_REQUESTS):
            assert await moving.favorites() == []
        three_proxy = await rt_one.build_proxy(Radio, DOMAINS[RADIO_THREE], ttl_ms=5_000)
        for i in range(THREE_REQUESTS):
            assert await three_proxy.add_favorite(Station(f"t{i}", Country.GERMANY))

        # cc-one refuses a spoofed sender (the consumer proxy's participantId, from another
        # connection) and drops a request for nobody when it expires in the queue
        raw = await RawClient.open(stack, one.websocket_address.url)
        produced.raw_client_id, produced.raw_pid = raw.client_id, raw.pid
        await raw.send(note(proxy.participant_id, RADIO_TWO, "spoofed"))
        produced.nobody = f"nobody-{uuid.uuid4().hex[:8]}"
        await raw.send(request(raw.pid, produced.nobody, ttl_ms=300))
        await eventually(lambda: one.websocket.counters["spoofed-sender"] == 1
                         and one.telemetry.counters["dropped-expired-in-queue"] == 1, WAIT_S,
                         "the refusal and the expiry in the queue")
        # cc-two refuses a request from MQTT without replyTo
        produced.mqtt_caller = f"raw-caller-{uuid.uuid4().hex[:8]}"
        async with aiomqtt.Client("127.0.0.1", broker.port,
                                  identifier=f"raw-{uuid.uuid4().hex[:8]}",
                                  protocol=aiomqtt.ProtocolVersion.V5) as client:
            await client.publish(two.own_topic, encode_frame(
                request(produced.mqtt_caller, RADIO_TWO, ttl_ms=5_000)), qos=1)
            mqtt_two = two.mqtt
            assert mqtt_two is not None
            await eventually(lambda: mqtt_two.counters["no-reply-to"] == 1, WAIT_S,
                             "the request without replyTo refused")

        # pipe.moving moves to cc-three (the last registration wins in the GCD); cc-one's
        # route still points at cc-two. pipe.gone is unregistered (removed from the GCD);
        # cc-one's route to it stays.
        await register(rt_three, MOVING, RadioProvider())
        await rt_two.unregister_provider(GONE)

        def directory_has(pid: str, cc_id: str | None) -> bool:
            rows = gcd.sync.find_participant(pid, now_ms())
            return [r.cluster_controller_id for r in rows] == ([cc_id] if cc_id else [])

        await eventually(lambda: directory_has(MOVING, THREE) and directory_has(GONE, None),
                         WAIT_S, "the move and the removal in the GCD")

        # cc-three stops for good (its runtime first, without unregistering): its entries
        # stay in the directory and are never touched again
        await rt_three.core.stop()
        await three_stack.aclose()
        produced.stopped_ms = now_ms()
        # cc-two touches its entries after that (every 0.2 s)
        await eventually(lambda: any(r.last_seen_ms > produced.stopped_ms + STOP_MARGIN_MS
                                     for r in gcd.sync.find_participant(RADIO_TWO, now_ms())),
                         WAIT_S, "a touch of cc-two after cc-three stopped")

        # a one-way for a provider not registered yet: queued, delivered once it is
        late = RadioProvider()
        await raw.send(note(raw.pid, LATE, "late", ttl_ms=30_000))
        await eventually(lambda: one.router.queued(LATE) == 1, WAIT_S, "queued")
        await register(rt_one, LATE, late, expiry_ms=LATE_EXPIRY_MS)
        await eventually(lambda: late.notes == ["late"], WAIT_S, "the late delivery")

        # the routing snapshots, each beside the table it was taken of
        for cc in (one, two):
            await cc.snapshots.take()
            produced.routes[cc.id] = _route_facts(cc)

        for cc in (one, two, three):
            counters: dict[str, int] = {**cc.telemetry.counters, **cc.websocket.counters}
            if cc.mqtt is not None:
                counters.update({f"mqtt-{k}": v for k, v in cc.mqtt.counters.items()})
            produced.counters[cc.id] = counters
    # every process stopped: every audit file is closed, the store is at rest
    store = SqliteStore(produced.sqlite)
    await store.open()
    try:
        for pid in DOMAINS:
            rows = await store.find_participant(pid, 0)
            assert len(rows) <= 1, rows
            if rows:
                produced.rows[pid] = rows[0]
    finally:
        await store.close()
    return produced

"""GCD cluster: lookups from the in-memory index in-process and through MQTT, index
memory and start-up load time, and convergence between instances, each beside a raw baseline
measured in the same run.

Usage: .venv/bin/python bench/gcd_cluster.py [--entries N] [--only PARTS] [--lookups L]
           [--rounds R] [--mqtt-calls C] [--samples S] [--timer-samples T]
           [--catch-up-interval SECONDS] [--writes W] [--writers K] [--conv-entries M]
           [--profile]

A throwaway PostgreSQL server (pyjoynr/testing/postgres.PostgresServer, durability off) and a
mosquitto broker (pyjoynr/testing/brokers.py, TCP_NODELAY) are started for the run. Parts
(``--only``, comma-separated; default all):

- ``load``: N entries (default 1,000,000; the entries of bench/gcd_store.py: uuid-like
  participantIds, 10 per (domain, interface), 1,000 cluster controllers, GBID
  joynrdefaultgbid) are written with COPY (asyncpg ``copy_records_to_table``) with the version
  columns as the store computes them (bucket_of, row_hash; one version per 10,000 rows), then
  the store's indexes and VACUUM ANALYZE. Start-up: a GcdService (store postgres, that
  broker, ``serve_while_loading`` as configured by default) is started and timed twice: until
  it serves (a CC-like MQTT client, connected before the start, sends a ``lookup_in_backends`` every
  20 ms until one is answered with the right entries) and until its index is ready (the
  whole table loaded by its Synchronizer and caught up: ``start()`` returned), with the
  process's RSS before and after. Baseline: the same rows read raw through an asyncpg cursor
  in the same batches, nothing kept. Then the time of a full garbage collection with the
  index loaded (the service freezes it out of the collector's scans) beside one of the same
  heap unfrozen.
- ``memory``: the bytes an index of the N rows holds, by tracemalloc: a second
  DirectoryIndex loaded from ``store.load()`` (the rows as the driver gives them; the batches
  freed), divided by N; the largest allocation sites. Baseline: the naive copy, every row as
  the driver gives it (an asyncpg Record) in a dict keyed (gbid, participantId).
- ``lookups``: in-process, in R alternating rounds of L calls of each path with fresh random
  keys: the index alone (``Synchronizer.find`` / ``find_participant``: what the provider
  reads) and the provider (``GcdProvider.lookup_in_backends`` / ``lookup_participant_in``: GBID
  selection and GlobalDiscoveryEntry objects added), beside today's store lookup
  (``PostgresStore.find`` / ``find_participant``, the same service's store) and the raw
  SELECT on a connection of our own; and a miss (an unknown participantId: the provider
  catches up with the store once before it answers). Then through MQTT: a CC-like raw
  client (aiomqtt with the CC's connection options: MQTT 5, QoS 1, TCP_NODELAY) publishes
  joynr request frames of
  ``lookup`` (by domain/interface with GBIDs, and by participantId with GBIDs) to the GCD
  topic with a replyTo address and waits for each reply, C calls per path per round, two
  ways: with request frames made before the round (fresh random keys, unique ids) and each
  reply checked by its size and request id, as the raw round trip checks its own (what the
  GCD adds to a round trip: the goal's figure); and end to end, each request encoded when
  sent and each reply decoded (frame, Reply payload, request id and error checked: the
  client's own work, about 20 us for a 4.4 KB reply, included). Beside a raw MQTT round trip
  through the same broker: two raw aiomqtt clients with the same options, A publishes a
  payload of the request frame's size, B answers with one of the reply frame's size.
- ``convergence``: M entries (default 10,000) in a second database, three instances in this
  process (each a PostgresStore, a PostgresNotifier on the cluster's channel, a
  Synchronizer with its timers and a GcdProvider). S writes (``add_in_backends`` of a new
  participant, on instance 0, 1, 2 in turn, 5-25 ms apart): the time from the write's return
  (committed) until its row is in the index of each of the other two (seen inside the
  index's ``apply_batch``: no polling), p50/p99 of the later of the two. With notifications,
  then without (catch-up timer alone, ``--catch-up-interval``, T writes). Baseline: a raw
  NOTIFY round trip (one connection notifies, two listening connections receive it), and
  NOTIFY + the SELECT a catch-up runs. Then write throughput: W adds by K concurrent
  writers on one instance, beside the same on three instances (writers spread round robin,
  all three listening and catching up), and raw one-row upserts by K connections; plus the
  time until all three indexes held every write.

All in one process and event loop (the GCD, its clients and the baselines alike, as in
bench/mqtt_rpc.py). Latency figures are the best of the rounds for each figure (a noisy
machine); each figure's goal is printed with met / MISSED.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import random
import re
import socket
import sys
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiomqtt
import asyncpg
import uvloop
from _common import (
    HOST,
    ROUND_TIMEOUT_S,
    Latency,
    Mosquitto,
    cancel,
    help_text,
    mqtt_environment,
    profiled,
    raw_mqtt_client,
    setup_logging,
)
from gcd_store import PG_FIND, PG_FIND_PARTICIPANT, PG_UPSERT_ONE, Workload

from pyjoynr.gcd.changes import ChangeBatch, bucket_of, row_hash
from pyjoynr.gcd.index import DirectoryIndex
from pyjoynr.gcd.interface import GCD_PARTICIPANT_ID, GCD_TOPIC, GlobalCapabilitiesDirectory
from pyjoynr.gcd.postgres_store import PostgresNotifier, PostgresStore
from pyjoynr.gcd.provider import GcdProvider
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.gcd.store import COLUMNS, INDEXES
from pyjoynr.gcd.sync import Synchronizer, SyncSettings
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import ApplicationError
from pyjoynr.runtime.interface import interface_def
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import Reply, Request, decode_payload
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.testing.postgres import PostgresServer

GBID = "joynrdefaultgbid"
VALID_GBIDS = (GBID, "gbid-2")
PARTS = ("load", "memory", "lookups", "convergence")
NODELAY = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)
CLUSTER = "bench"
#: rows per COPY and per version while filling
FILL_BATCH = 10_000
#: the goals: in-process lookup p99, MQTT lookup / raw round trip, index bytes per entry, load
#: time at start-up, convergence between instances
GOAL_P99_US = 35.0
GOAL_MQTT_RATIO = 1.1
GOAL_BYTES_PER_ENTRY = 250.0
GOAL_LOAD_S = 5.0
#: how often the start-up figure's client asks until the first answer
FIRST_ANSWER_POLL_S = 0.02
GOAL_CONVERGENCE_MS = 50.0


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def row_line(name: str, project: str, raw: str, ratio: float, note: str = "") -> str:
    return f"  {name:<58} {project:>12} {raw:>12} {ratio:7.2f}x  {note}"


def header(raw_name: str) -> str:
    return f"  {'figure':<58} {'project':>12} {raw_name:>12} {'ratio':>8}"


# ---------------------------------------------------------------------- filling PostgreSQL


async def fill(dsn: str, work: Workload) -> float:
    """The store's schema, then ``work.entries`` rows by COPY with the version columns as the
    store writes them; indexes rebuilt, VACUUM ANALYZE. Seconds taken."""
    started = time.perf_counter()
    store = PostgresStore(dsn, cluster=CLUSTER)
    await store.open()  # the schema, as a GCD creates it
    await store.close()
    conn = await asyncpg.connect(dsn)
    try:
        names = [re.search(r"EXISTS (\w+)", s).group(1) for s in INDEXES]  # type: ignore[union-attr]
        for name in names:  # faster to build once at the end
            await conn.execute(f"DROP INDEX IF EXISTS {name}")
        columns = [*COLUMNS, "version", "bucket", "row_hash"]
        version = 0
        for start in range(0, work.entries, FILL_BATCH):
            version += 1
            records = []
            for i in range(start, min(start + FILL_BATCH, work.entries)):
                row = work.row(i)
                records.append((*row, version, bucket_of(row[0], row[1]),
                                row_hash(row[0], row[1], version)))
            await conn.copy_records_to_table("discovery_entries", records=records,
                                             columns=columns)
            if work.entries >= 200_000 and version % 20 == 0:
                print(f"    ... {start + len(records):,} rows "
                      f"({time.perf_counter() - started:.0f} s)", flush=True)
        await conn.execute("UPDATE discovery_meta SET version = $1 WHERE id = 1", version)
        for statement in INDEXES:
            await conn.execute(statement)
        await conn.execute("VACUUM ANALYZE discovery_entries")
    finally:
        await conn.close()
    return time.perf_counter() - started


async def raw_load(dsn: str, batch: int) -> tuple[float, int]:
    """Every row with its version through a cursor in one REPEATABLE READ transaction, in
    batches of ``batch``, nothing kept (the floor of a start-up load); seconds, rows."""
    conn = await asyncpg.connect(dsn)
    try:
        started = time.perf_counter()
        rows = 0
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            await conn.fetchrow("SELECT version FROM discovery_meta WHERE id = 1")
            cursor = await conn.cursor(
                f"SELECT {', '.join(COLUMNS)}, version FROM discovery_entries")
            while records := await cursor.fetch(batch):
                rows += len(records)
        return time.perf_counter() - started, rows
    finally:
        await conn.close()


# ---------------------------------------------------------------------- memory


async def index_bytes(store: PostgresStore, batch: int) -> tuple[int, int, list[str]]:
    """Bytes held by an index of the whole store (tracemalloc), its rows, the top sites."""
    gc.collect()
    tracemalloc.start(1)
    try:
        before_snapshot = tracemalloc.take_snapshot()
        before = tracemalloc.get_traced_memory()[0]
        index = DirectoryIndex()
        snapshot_version = 0
        async for item in store.load(batch):
            if isinstance(item, int):
                snapshot_version = item
            else:
                index.load(item)
        index.finish_load(snapshot_version)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        after_snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    sites = []
    for stat in after_snapshot.compare_to(before_snapshot, "lineno")[:6]:
        frame = stat.traceback[0]
        sites.append(f"{stat.size_diff / max(1, len(index)):6.1f} B/row  "
                     f"{Path(frame.filename).name}:{frame.lineno}")
    rows = len(index)
    del index
    gc.collect()
    return held, rows, sites


async def naive_bytes(dsn: str, batch: int) -> tuple[int, int]:
    """Bytes held by the naive copy: every row (asyncpg Record) in a dict by key."""
    conn = await asyncpg.connect(dsn)
    gc.collect()
    tracemalloc.start(1)
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept: dict[tuple[str, str], asyncpg.Record] = {}
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            cursor = await conn.cursor(
                f"SELECT {', '.join(COLUMNS)}, version FROM discovery_entries")
            while records := await cursor.fetch(batch):
                for record in records:
                    kept[(record[0], record[1])] = record
        records = []
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        await conn.close()
    rows = len(kept)
    del kept
    gc.collect()
    return held, rows


# ---------------------------------------------------------------------- lookups in-process


async def timed(call: Callable[[], Awaitable[object]], n: int) -> Latency:
    samples = [0] * n
    clock = time.perf_counter_ns
    for i in range(n):
        t0 = clock()
        await call()
        samples[i] = clock() - t0
    return Latency.of(samples)


async def best_of_rounds(paths: Mapping[str, Callable[[], Awaitable[object]]], n: int,
                         rounds: int, label: str) -> dict[str, Latency]:
    for call in paths.values():  # warm up: statements prepared, caches
        await timed(call, max(10, n // 10))
    best: dict[str, Latency] = {}
    for number in range(1, rounds + 1):
        figures = []
        for name, call in paths.items():
            gc.collect()
            latency = await timed(call, n)
            best[name] = latency.best(best.get(name))
            figures.append(f"{latency.p50_us:.0f}/{latency.p99_us:.0f}")
        print(f"    {label} round {number}, p50/p99 us: {'  '.join(figures)}", flush=True)
    return best


def in_process_paths(service: GcdService, raw: asyncpg.Connection, work: Workload,
                     rng: random.Random) -> dict[str, Callable[[], Awaitable[object]]]:
    sync, provider, store = service.sync, service.provider, service.store
    assert isinstance(store, PostgresStore)
    gbids = [GBID]

    def key() -> tuple[str, str]:
        return work.domain_interface(rng.randrange(work.keys))

    def pid() -> str:
        return work.pid(rng.randrange(work.entries))

    async def index_find() -> object:
        domain, interface_name = key()
        return sync.find([domain], interface_name, now_ms())

    async def provider_find() -> object:
        domain, interface_name = key()
        return await provider.lookup_in_backends([domain], interface_name, gbids)

    async def store_find() -> object:
        domain, interface_name = key()
        return await store.find([domain], interface_name, now_ms())

    async def raw_find() -> object:
        domain, interface_name = key()
        return await raw.fetch(PG_FIND, interface_name, [domain], now_ms())

    async def index_participant() -> object:
        return sync.find_participant(pid(), now_ms())

    async def provider_participant() -> object:
        return await provider.lookup_participant_in(pid(), gbids)

    async def store_participant() -> object:
        return await store.find_participant(pid(), now_ms())

    async def raw_participant() -> object:
        return await raw.fetch(PG_FIND_PARTICIPANT, pid(), now_ms())

    async def provider_miss() -> object:
        # an unknown participant: the provider catches up once before it answers "no entry"
        try:
            return await provider.lookup_participant_in(f"unknown-{rng.random()}", gbids)
        except ApplicationError:
            return None

    return {"index find": index_find, "provider lookup_in_backends": provider_find,
            "store find": store_find, "raw SQL find": raw_find,
            "index find_participant": index_participant,
            "provider lookup_participant_in": provider_participant,
            "store find_participant": store_participant,
            "raw SQL find_participant": raw_participant,
            "provider lookup_participant_in miss": provider_miss}


# ---------------------------------------------------------------------- lookups through MQTT


class GcdClient:
    """A CC-like raw client: joynr ``lookup`` requests to the GCD topic, replies awaited on a
    topic of its own (at most one call outstanding)."""

    METHODS = interface_def(GlobalCapabilitiesDirectory).methods

    def __init__(self, broker: Mosquitto) -> None:
        self.broker = broker
        suffix = uuid.uuid4().hex[:8]
        self.sender = f"bench-asker-{suffix}"
        self.reply_topic = f"joynr/cc/bench-cc-{suffix}"
        self.reply_to = MqttAddress(GBID, self.reply_topic)
        self._stack = AsyncExitStack()
        self._reply: asyncio.Future[bytes] | None = None
        self.client: aiomqtt.Client | None = None
        self.last_request = b""
        self.last_reply = b""

    async def __aenter__(self) -> GcdClient:
        self.client = await self._stack.enter_async_context(
            raw_mqtt_client(self.broker, "bench-cc", socket_options=NODELAY))
        await self.client.subscribe(f"{self.reply_topic}/#", qos=1)
        task = asyncio.get_running_loop().create_task(self._replies(self.client))
        self._stack.push_async_callback(cancel, task)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def _replies(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            reply, self._reply = self._reply, None
            if reply is not None and not reply.done():
                assert isinstance(message.payload, bytes)
                reply.set_result(message.payload)

    def request(self, method: str, params: list[Any]) -> tuple[bytes, str]:
        """A request frame of ``method`` (unique message and request ids) and its request id."""
        request_id = uuid.uuid4().hex
        return encode_frame(Message(
            MessageType.REQUEST, self.sender, GCD_PARTICIPANT_ID, now_ms() + 60_000,
            Request(request_id, "lookup", params,
                    self.METHODS[method].param_datatypes).to_body(),
            reply_to=self.reply_to)), request_id

    async def round_trip(self, frame: bytes, timeout_s: float = ROUND_TIMEOUT_S) -> bytes:
        """Publish ``frame`` to the GCD; the reply's payload."""
        assert self.client is not None
        reply = self._reply = asyncio.get_running_loop().create_future()
        await self.client.publish(f"{GCD_TOPIC}/low", frame, qos=1)
        return await asyncio.wait_for(reply, timeout_s)

    async def first_answer(self, work: Workload) -> int:
        """Ask ``lookup_in_backends`` of one (domain, interface) every FIRST_ANSWER_POLL_S until one
        of the requests is answered (those sent before the GCD subscribed are lost; a late
        answer to an earlier one counts); how many entries it held."""
        assert self.client is not None
        domain, interface_name = work.domain_interface(0)
        asked: set[str] = set()
        answered = self._reply = asyncio.get_running_loop().create_future()
        while True:
            frame, request_id = self.request("lookup_in_backends",
                                             [[domain], interface_name, [GBID]])
            asked.add(request_id)
            await self.client.publish(f"{GCD_TOPIC}/low", frame, qos=1)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(answered), FIRST_ANSWER_POLL_S)
            if not answered.done():
                continue
            answer = decode_payload(Reply, decode_frame(answered.result()).body)
            if answer.request_reply_id not in asked:
                raise AssertionError(f"an answer to no request of ours: {answer}")
            if answer.error is not None:
                raise AssertionError(f"the first lookup failed: {answer.error}")
            return len(answer.response[0]) if answer.response else 0

    async def call(self, method: str, params: list[Any]) -> list[Any]:
        """One request, encoded now; the reply decoded: its response (AssertionError on an
        error reply)."""
        frame, request_id = self.request(method, params)
        payload = await self.round_trip(frame)
        answer = decode_payload(Reply, decode_frame(payload).body)
        if answer.request_reply_id != request_id or answer.error is not None:
            raise AssertionError(f"unexpected reply to {method}: {answer}")
        self.last_request, self.last_reply = frame, payload
        # a reply's response holds the method's out values: here one, the entry or entries
        return list(answer.response[0]) if answer.response and isinstance(
            answer.response[0], list) else list(answer.response or [])

    def prepared(self, method: str, params_of: Callable[[], list[Any]], count: int,
                 reply_size: int) -> Callable[[], Awaitable[None]]:
        """A call that sends the next of ``count`` request frames made now (``params_of()``
        each) and checks its reply as the raw round trip checks its own: by its size (give or
        take the digits of the message id; an error reply is far shorter) and by the request
        id in it. What is left of the round trip is
        what the GCD adds to a raw one."""
        frames = [self.request(method, params_of()) for _ in range(count)]
        frames.reverse()

        async def call() -> None:
            frame, request_id = frames.pop()
            payload = await self.round_trip(frame)
            if abs(len(payload) - reply_size) > 32 or request_id.encode() not in payload:
                raise AssertionError(f"unexpected reply to {method}: {payload[:200]!r}")
        return call


class RawRoundTrip:
    """Two raw aiomqtt clients: A publishes ``request`` to topic a, B answers ``reply`` on
    topic b, A waits for it."""

    def __init__(self, broker: Mosquitto, request: bytes, reply: bytes) -> None:
        self.broker = broker
        self.request, self.reply = request, reply
        prefix = f"bench/raw/gcd-{uuid.uuid4().hex[:8]}"
        self.topic_a, self.topic_b = f"{prefix}/a", f"{prefix}/b"
        self._stack = AsyncExitStack()
        self._waiting: asyncio.Future[bytes] | None = None
        self.a: aiomqtt.Client | None = None

    async def _answer(self, b: aiomqtt.Client) -> None:
        async for _ in b.messages:
            await b.publish(self.topic_b, self.reply, qos=1)

    async def _replies(self, a: aiomqtt.Client) -> None:
        async for message in a.messages:
            waiting, self._waiting = self._waiting, None
            if waiting is not None and not waiting.done():
                assert isinstance(message.payload, bytes)
                waiting.set_result(message.payload)

    async def __aenter__(self) -> RawRoundTrip:
        stack, loop = self._stack, asyncio.get_running_loop()
        b = await stack.enter_async_context(
            raw_mqtt_client(self.broker, "bench-raw-b", socket_options=NODELAY))
        await b.subscribe(f"{self.topic_a}/#", qos=1)
        stack.push_async_callback(cancel, loop.create_task(self._answer(b)))
        self.a = await stack.enter_async_context(
            raw_mqtt_client(self.broker, "bench-raw-a", socket_options=NODELAY))
        await self.a.subscribe(f"{self.topic_b}/#", qos=1)
        stack.push_async_callback(cancel, loop.create_task(self._replies(self.a)))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def call(self) -> None:
        assert self.a is not None
        waiting = self._waiting = asyncio.get_running_loop().create_future()
        await self.a.publish(self.topic_a, self.request, qos=1)
        if len(await asyncio.wait_for(waiting, ROUND_TIMEOUT_S)) != len(self.reply):
            raise AssertionError("the raw round trip returned something else")


async def mqtt_lookups(broker: Mosquitto, work: Workload, args: argparse.Namespace
                       ) -> list[str]:
    """The MQTT lookups beside raw round trips of the same sizes; the report's lines."""
    rng = random.Random(99)
    lines = []
    async with GcdClient(broker) as client:
        async def by_interface() -> list[Any]:
            domain, interface_name = work.domain_interface(rng.randrange(work.keys))
            return await client.call("lookup_in_backends", [[domain], interface_name, [GBID]])

        async def by_participant() -> list[Any]:
            return await client.call("lookup_participant_in",
                                     [work.pid(rng.randrange(work.entries)), [GBID]])

        found = await by_interface()
        if len(found) != work.per_key:
            print(f"ERROR: lookup_in_backends over MQTT answered {len(found)} entries, expected "
                  f"{work.per_key}")
        sizes = {"lookup_in_backends": (client.last_request, client.last_reply)}
        await by_participant()
        sizes["lookup_participant_in"] = (client.last_request, client.last_reply)
        def interface_params() -> list[Any]:
            domain, interface_name = work.domain_interface(rng.randrange(work.keys))
            return [[domain], interface_name, [GBID]]

        def participant_params() -> list[Any]:
            return [work.pid(rng.randrange(work.entries)), [GBID]]

        # the frames the prepared calls send: for the warm-up and every round
        count = args.mqtt_calls * args.rounds + max(10, args.mqtt_calls // 10)
        for (name, call, params_of) in (("lookup_in_backends", by_interface, interface_params),
                                        ("lookup_participant_in", by_participant,
                                         participant_params)):
            request, reply = sizes[name]
            end_to_end = f"GCD {name} over MQTT, end to end"
            prepared = f"GCD {name} over MQTT, requests made before"
            async with RawRoundTrip(broker, request, reply) as raw:
                paths = {end_to_end: call,
                         prepared: client.prepared(name, params_of, count, len(reply)),
                         "raw MQTT round trip": raw.call}
                best = await best_of_rounds(paths, args.mqtt_calls, args.rounds,
                                            f"MQTT {name}")
            base = best["raw MQTT round trip"]
            size = f"({len(request)} B request, {len(reply)} B reply)"
            for path, what in ((prepared, f"{name} over MQTT {size}"),
                               (end_to_end, "  the same, the client encoding and decoding")):
                for stat in ("p50", "p99"):
                    ours = getattr(best[path], f"{stat}_us")
                    theirs = getattr(base, f"{stat}_us")
                    ratio = ours / theirs
                    lines.append(row_line(f"{what} {stat}, us", f"{ours:,.1f}",
                                          f"{theirs:,.1f}", ratio,
                                          f"goal <= {GOAL_MQTT_RATIO}x: "
                                          f"{verdict(ratio <= GOAL_MQTT_RATIO)}"))
    return lines


# ---------------------------------------------------------------------- the 1M part


def full_collections() -> tuple[float, float]:
    """Milliseconds of a full collection of this process's heap as the service left it (the
    index frozen out of the scans), and of one with the heap unfrozen; frozen again after."""
    clock = time.perf_counter
    started = clock()
    gc.collect()
    frozen = clock() - started
    gc.unfreeze()
    gc.collect()  # (what died since the freeze: not part of the figure)
    started = clock()
    gc.collect()
    unfrozen = clock() - started
    gc.freeze()
    return frozen * 1000, unfrozen * 1000


async def timed_start(service: GcdService, broker: Mosquitto, work: Workload
                      ) -> tuple[float, float]:
    """Start ``service``: seconds until a lookup over MQTT was first answered, and until
    ``start()`` returned (the index ready)."""
    async with GcdClient(broker) as asker:
        started = time.perf_counter()
        starting = asyncio.ensure_future(service.start(wait_s=30))
        asking = asyncio.ensure_future(asker.first_answer(work))
        await asyncio.wait({starting, asking}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done() and starting.exception() is not None:
            asking.cancel()
            await starting  # (raises)
        first_found = await asking
        serving_s = time.perf_counter() - started
        await starting
        load_s = time.perf_counter() - started
    if first_found != work.per_key:
        print(f"ERROR: the first lookup answered {first_found} entries, expected "
              f"{work.per_key}")
    return serving_s, load_s


async def big_parts(pg: PostgresServer, broker: Mosquitto, args: argparse.Namespace) -> None:
    work = Workload(args.entries, 10, now_ms())
    dsn = await pg.create_database("gcd_bench_big")
    print(f"--- filling PostgreSQL with {work.entries:,} entries (COPY) ...", flush=True)
    fill_s = await fill(dsn, work)
    print(f"    filled in {fill_s:.1f} s", flush=True)
    lines: list[str] = []
    if "load" in args.only or "lookups" in args.only:
        settings = GcdSettings(gbid=GBID, broker_url=broker.url, valid_gbids=VALID_GBIDS,
                               store="postgres", postgres_dsn=dsn, cluster_name=CLUSTER,
                               sync_stats_interval_s=0)
        gc.collect()
        rss_before = rss_bytes()
        service = GcdService(settings)
        serving_s, load_s = await timed_start(service, broker, work)
        gc.collect()
        rss_delta = rss_bytes() - rss_before
        try:
            raw_s, raw_rows = await raw_load(dsn, 10_000)
            rows = len(service.sync.index)
            if rows != work.entries or raw_rows != work.entries:
                print(f"ERROR: loaded {rows:,} rows, raw {raw_rows:,}, stored {work.entries:,}")
            lines.append(header("raw"))
            lines.append(row_line("start-up: first lookup answered over MQTT, s",
                                  f"{serving_s:.2f}", f"{raw_s:.2f}", serving_s / raw_s,
                                  f"goal <= {GOAL_LOAD_S:.0f} s: "
                                  f"{verdict(serving_s <= GOAL_LOAD_S)}"))
            lines.append(row_line(f"start-up: {rows:,} rows loaded, index ready, s",
                                  f"{load_s:.2f}", f"{raw_s:.2f}", load_s / raw_s,
                                  "(lookups answered from the store until then)"
                                  if serving_s < load_s else ""))
            lines.append(f"  (raw: the rows read through a cursor, nothing kept; process RSS "
                         f"grew by {rss_delta / 2**20:,.0f} MiB = {rss_delta / rows:,.0f} B "
                         "per row over the start-up, allocator slack and the load's "
                         "garbage included)")
            frozen_ms, unfrozen_ms = full_collections()
            lines.append(row_line("a full garbage collection with the index loaded, ms",
                                  f"{frozen_ms:,.1f}", f"{unfrozen_ms:,.1f}",
                                  frozen_ms / unfrozen_ms,
                                  "(raw: the same heap not frozen; every lookup waits)"))
            if "lookups" in args.only:
                part = lookups_part(service, broker, dsn, work, args)
                lines += await (profiled(part, top=40, by_package=True) if args.profile
                                else part)
        finally:
            await service.stop()
    if "memory" in args.only:
        store = PostgresStore(dsn, cluster=CLUSTER)
        await store.open()
        try:
            print("--- memory: an index loaded under tracemalloc ...", flush=True)
            held, rows, sites = await index_bytes(store, 10_000)
        finally:
            await store.close()
        print("--- memory: the naive copy (Records in a dict) under tracemalloc ...",
              flush=True)
        naive, naive_rows = await naive_bytes(dsn, 10_000)
        lines.append(header("naive"))
        per_row, naive_per_row = held / rows, naive / naive_rows
        lines.append(row_line(f"index memory at {rows:,} rows, B per row (tracemalloc)",
                              f"{per_row:,.0f}", f"{naive_per_row:,.0f}",
                              per_row / naive_per_row,
                              f"goal <= {GOAL_BYTES_PER_ENTRY:.0f} B: "
                              f"{verdict(per_row <= GOAL_BYTES_PER_ENTRY)}"))
        lines.append(f"  (index: {held / 2**20:,.0f} MiB in all; naive: asyncpg Records in a "
                     f"dict by key, {naive / 2**20:,.0f} MiB, no lookup paths) largest sites "
                     "(runners.py: objects made by asyncpg's C code, the strings kept):")
        lines += [f"    {site}" for site in sites]
    print(f"=== GCD at {work.entries:,} entries (PostgreSQL filled in {fill_s:.0f} s) ===")
    print("\n".join(lines), flush=True)


async def lookups_part(service: GcdService, broker: Mosquitto, dsn: str, work: Workload,
                       args: argparse.Namespace) -> list[str]:
    raw = await asyncpg.connect(dsn)
    try:
        paths = in_process_paths(service, raw, work, random.Random(4711))
        print(f"--- in-process lookups, paths: {', '.join(paths)}", flush=True)
        best = await best_of_rounds(paths, args.lookups, args.rounds, "in-process")
    finally:
        await raw.close()
    lines = [header("store"), ]
    for kind, index_name, provider_name, store_name, raw_name in (
            ("find", "index find", "provider lookup_in_backends", "store find", "raw SQL find"),
            ("find_participant", "index find_participant",
             "provider lookup_participant_in", "store find_participant",
             "raw SQL find_participant")):
        store, raw_sql = best[store_name], best[raw_name]
        for label, name in ((f"index {kind} (Synchronizer.{kind})", index_name),
                            (f"provider {provider_name.split()[1]} (from the index)",
                             provider_name)):
            for stat in ("p50", "p99"):
                ours, theirs = getattr(best[name], f"{stat}_us"), getattr(store, f"{stat}_us")
                note = (f"goal p99 <= {GOAL_P99_US:.0f} us: {verdict(ours <= GOAL_P99_US)}"
                        if stat == "p99" else "")
                lines.append(row_line(f"{label} {stat}, us", f"{ours:,.1f}", f"{theirs:,.1f}",
                                      ours / theirs, note))
        lines.append(f"  (today's PostgresStore.{kind}: p50 {store.p50_us:,.0f} us, p99 "
                     f"{store.p99_us:,.0f} us; the raw SELECT alone: p50 "
                     f"{raw_sql.p50_us:,.0f} us, p99 {raw_sql.p99_us:,.0f} us)")
    miss = best["provider lookup_participant_in miss"]
    lines.append(f"  (a miss, an unknown participantId: the provider catches up once before "
                 f"answering NO_ENTRY_FOR_PARTICIPANT: p50 {miss.p50_us:,.0f} us, p99 "
                 f"{miss.p99_us:,.0f} us)")
    print(f"--- lookups through MQTT ({args.mqtt_calls:,} calls per path per round) ...",
          flush=True)
    lines.append(header("raw MQTT"))
    lines += await mqtt_lookups(broker, work, args)
    return lines


# ---------------------------------------------------------------------- convergence


class Watch:
    """When each watched participantId reached the index of each instance."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[int, float]] = {}
        self.waiters: dict[str, asyncio.Future[None]] = {}
        self.needed = 0

    def expect(self, pid: str, instances: int) -> asyncio.Future[None]:
        self.seen[pid] = {}
        self.needed = instances
        waiter = asyncio.get_running_loop().create_future()
        self.waiters[pid] = waiter
        return waiter

    def saw(self, instance: int, batch: ChangeBatch) -> None:
        now = time.perf_counter()
        for change in batch.changes:
            seen = self.seen.get(change.participant_id)
            if seen is not None and change.entry is not None and instance not in seen:
                seen[instance] = now
                if len(seen) >= self.needed:
                    waiter = self.waiters.pop(change.participant_id, None)
                    if waiter is not None and not waiter.done():
                        waiter.set_result(None)


class WatchedIndex(DirectoryIndex):
    """A DirectoryIndex that tells ``watch`` what each catch-up batch brought."""

    def __init__(self, instance: int, watch: Watch) -> None:
        super().__init__()
        self._instance = instance
        self._watch = watch

    def apply_batch(self, batch: ChangeBatch) -> int:
        applied = super().apply_batch(batch)
        self._watch.saw(self._instance, batch)
        return applied


class Cluster:
    """``count`` GCD instances on one database (stores, notifiers, synchronisers, providers)."""

    def __init__(self, dsn: str, count: int, notifications: bool, settings: SyncSettings,
                 watch: Watch) -> None:
        self.dsn, self.count = dsn, count
        self.notifications, self.settings, self.watch = notifications, settings, watch
        self.providers: list[GcdProvider] = []
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Cluster:
        for i in range(self.count):
            store = PostgresStore(self.dsn, cluster=CLUSTER)
            await store.open()
            self._stack.push_async_callback(store.close)
            tasks = TaskSupervisor(f"bench GCD {i}")
            self._stack.push_async_callback(tasks.close)
            notifier = (PostgresNotifier(self.dsn, cluster=CLUSTER) if self.notifications
                        else None)

            def factory(i: int = i) -> DirectoryIndex:
                return WatchedIndex(i, self.watch)

            sync = Synchronizer(store, notifier=notifier, tasks=tasks, settings=self.settings,
                                index_factory=factory, name=f"bench GCD {i}")
            await sync.start()
            self._stack.push_async_callback(sync.stop)
            self.providers.append(GcdProvider(store, GBID, VALID_GBIDS, sync=sync))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


async def convergence(dsn: str, notifications: bool, interval_s: float, samples: int, *,
                      work: Workload, first: int) -> tuple[list[float], list[float], int]:
    """Write ``samples`` new entries in turn on each of three instances; per write, the ms
    until both others had it (the later one) and until each one had it; failures."""
    watch = Watch()
    settings = SyncSettings(catch_up_interval_s=interval_s, repair_interval_s=0,
                            stats_interval_s=0)
    later: list[float] = []
    each: list[float] = []
    failed = 0
    rng = random.Random(5)
    async with Cluster(dsn, 3, notifications, settings, watch) as cluster:
        for n in range(samples):
            writer = n % 3
            entry = work.global_entry(first + n)
            waiter = watch.expect(entry.participant_id, 2)
            await cluster.providers[writer].add_in_backends(entry, [GBID])
            committed = time.perf_counter()
            try:
                await asyncio.wait_for(waiter, max(10.0, 3 * interval_s))
            except TimeoutError:
                failed += 1
                continue
            seen = watch.seen.pop(entry.participant_id)
            times = [(t - committed) * 1000 for i, t in seen.items() if i != writer]
            later.append(max(times))
            each += times
            await asyncio.sleep(rng.uniform(0.005, 0.025))
    return later, each, failed


async def raw_notify(dsn: str, samples: int, with_select: bool) -> list[float]:
    """One connection NOTIFYs (autocommit: delivered at once); two listening connections
    receive it (and with ``with_select`` each then runs the SELECT of a catch-up: the rows
    above a version); ms from sending the NOTIFY until both are done."""
    sender = await asyncpg.connect(dsn)
    listeners = [await asyncpg.connect(dsn) for _ in range(2)]
    done: dict[int, float] = {}
    event = asyncio.Event()
    query = (f"SELECT {', '.join(COLUMNS)}, version FROM discovery_entries "
             "WHERE version > $1 ORDER BY version LIMIT 10001")
    version = int(await sender.fetchval("SELECT version FROM discovery_meta WHERE id = 1"))

    def listener(i: int) -> Callable[..., None]:
        def on_notify(conn: object, pid: int, channel: str, payload: str) -> None:
            if with_select:
                async def select() -> None:
                    await listeners[i].fetch(query, version)
                    done[i] = time.perf_counter()
                    if len(done) == 2:
                        event.set()

                asyncio.get_running_loop().create_task(select())
            else:
                done[i] = time.perf_counter()
                if len(done) == 2:
                    event.set()
        return on_notify

    try:
        for i, conn in enumerate(listeners):
            await conn.add_listener("bench_raw", listener(i))
        took = []
        for _ in range(samples):
            done.clear()
            event.clear()
            # from before the statement: its listeners may hear it before its own reply
            # is read (one event loop), so the raw figure includes the NOTIFY's round trip
            sent = time.perf_counter()
            await sender.execute("SELECT pg_notify('bench_raw', '1')")
            await asyncio.wait_for(event.wait(), 10)
            took.append((max(done.values()) - sent) * 1000)
            await asyncio.sleep(0.005)
        return took
    finally:
        for conn in (sender, *listeners):
            await conn.close()


def percentiles(ms: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(ms)
    n = len(ordered)
    return ordered[n // 2], ordered[min(n - 1, n * 99 // 100)]


async def throughput(dsn: str, instances: int, writes: int, writers: int, *,
                     work: Workload, first: int) -> tuple[float, float]:
    """``writes`` add_in_backends of new entries by ``writers`` tasks over ``instances`` instances
    (round robin); writes/s, and seconds until every instance's index held every write."""
    watch = Watch()
    settings = SyncSettings(stats_interval_s=0, repair_interval_s=0)
    async with Cluster(dsn, instances, True, settings, watch) as cluster:
        entries = [work.global_entry(first + i) for i in range(writes)]

        async def writer(k: int) -> None:
            provider = cluster.providers[k % instances]
            for i in range(k, writes, writers):
                await provider.add_in_backends(entries[i], [GBID])

        started = time.perf_counter()
        await asyncio.gather(*(writer(k) for k in range(writers)))
        wrote = time.perf_counter() - started
        missing = [{e.participant_id for e in entries} for _ in cluster.providers]
        async with asyncio.timeout(60):
            while any(missing):
                for provider, pids in zip(cluster.providers, missing, strict=True):
                    index = provider.sync.index
                    pids.difference_update([p for p in pids
                                            if index.version_of(GBID, p) is not None])
                await asyncio.sleep(0.002)
        everywhere = time.perf_counter() - started
    return writes / wrote, everywhere


async def raw_throughput(dsn: str, writes: int, writers: int, work: Workload, first: int
                         ) -> float:
    """``writes`` one-row raw upserts (no version) by ``writers`` connections; writes/s."""
    conns = [await asyncpg.connect(dsn) for _ in range(writers)]
    try:
        rows = [work.row(first + i) for i in range(writes)]

        async def writer(k: int) -> None:
            for i in range(k, writes, writers):
                await conns[k].execute(PG_UPSERT_ONE, *rows[i])

        started = time.perf_counter()
        await asyncio.gather(*(writer(k) for k in range(writers)))
        return writes / (time.perf_counter() - started)
    finally:
        for conn in conns:
            await conn.close()


async def convergence_part(pg: PostgresServer, args: argparse.Namespace) -> None:
    work = Workload(args.conv_entries, 10, now_ms())
    dsn = await pg.create_database("gcd_bench_cluster")
    await fill(dsn, work)
    first = work.entries  # new participants from here
    lines = [f"=== convergence: three instances on one PostgreSQL with {work.entries:,} "
             "entries (in this process) ==="]
    print("--- convergence with notifications ...", flush=True)
    later, each, failed = await convergence(dsn, True, 5.0, args.samples, work=work, first=first)
    first += args.samples
    raw = await raw_notify(dsn, args.samples, with_select=False)
    raw_select = await raw_notify(dsn, args.samples, with_select=True)
    p50, p99 = percentiles(later)
    r50, r99 = percentiles(raw)
    s50, s99 = percentiles(raw_select)
    e50, e99 = percentiles(each)
    lines.append(header("raw NOTIFY"))
    lines.append(row_line("commit -> visible on both others, notifications, p50 ms",
                          f"{p50:.2f}", f"{r50:.2f}", p50 / r50))
    lines.append(row_line("commit -> visible on both others, notifications, p99 ms",
                          f"{p99:.2f}", f"{r99:.2f}", p99 / r99,
                          f"goal <= {GOAL_CONVERGENCE_MS:.0f} ms: "
                          f"{verdict(p99 <= GOAL_CONVERGENCE_MS and not failed)}"))
    lines.append(f"  ({len(later)} writes, {failed} not seen within 10 s; on each other "
                 f"instance alone: p50 {e50:.2f} ms, p99 {e99:.2f} ms; raw NOTIFY + the "
                 f"catch-up's SELECT on both listeners: p50 {s50:.2f} ms, p99 {s99:.2f} ms; "
                 "catch-up timer 5 s as well)")
    interval = args.catch_up_interval
    print(f"--- convergence without notifications (catch-up every {interval:g} s) ...",
          flush=True)
    later, each, failed = await convergence(dsn, False, interval, args.timer_samples,
                                            work=work, first=first)
    first += args.timer_samples
    p50, p99 = percentiles(later)
    lines.append(f"  commit -> visible on both others, catch-up timer {interval:g} s alone: "
                 f"p50 {p50:.0f} ms, p99 {p99:.0f} ms ({len(later)} writes, {failed} not "
                 f"seen); goal p99 <= {interval * 1000:.0f} ms: "
                 f"{verdict(p99 <= interval * 1000 and not failed)}")
    print(f"--- write throughput, {args.writes:,} adds by {args.writers} writers ...",
          flush=True)
    one, one_all = await throughput(dsn, 1, args.writes, args.writers, work=work,
                                     first=first)
    first += args.writes
    three, three_all = await throughput(dsn, 3, args.writes, args.writers, work=work,
                                         first=first)
    first += args.writes
    raw_rate = await raw_throughput(dsn, args.writes, args.writers, work, first)
    lines.append(f"  {'figure':<58} {'3 instances':>12} {'1 instance':>12} {'ratio':>8}")
    lines.append(row_line(f"add_in_backends, {args.writers} concurrent writers, adds/s",
                          f"{three:,.0f}", f"{one:,.0f}", three / one))
    lines.append(row_line("  until every index held every write, s", f"{three_all:.2f}",
                          f"{one_all:.2f}", three_all / one_all))
    lines.append(f"  (raw one-row upserts without versions, {args.writers} connections: "
                 f"{raw_rate:,.0f}/s; one instance is {raw_rate / one:.2f}x slower, three "
                 f"{raw_rate / three:.2f}x)")
    print("\n".join(lines), flush=True)


# ---------------------------------------------------------------------- main


async def run(args: argparse.Namespace) -> int:
    print(f"GCD cluster bench: parts {', '.join(p for p in PARTS if p in args.only)}; "
          f"{mqtt_environment()}, asyncpg {asyncpg.__version__}", flush=True)
    async with PostgresServer() as pg, Mosquitto() as broker:
        conn = await asyncpg.connect(pg.dsn)
        try:
            print(f"PostgreSQL {await conn.fetchval('SHOW server_version')}, shared_buffers "
                  f"{await conn.fetchval('SHOW shared_buffers')}; broker {HOST}:{broker.port}",
                  flush=True)
        finally:
            await conn.close()
        if args.only & {"load", "memory", "lookups"}:
            await big_parts(pg, broker, args)
        if "convergence" in args.only:
            await convergence_part(pg, args)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--entries", type=int, default=1_000_000,
                        help="entries stored for load, memory and lookups")
    parser.add_argument("--only", default=",".join(PARTS),
                        help=f"comma-separated parts: {', '.join(PARTS)}")
    parser.add_argument("--lookups", type=int, default=5_000,
                        help="in-process lookups of each path per round")
    parser.add_argument("--mqtt-calls", type=int, default=1_000,
                        help="MQTT round trips of each path per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each (alternating)")
    parser.add_argument("--profile", action="store_true",
                        help="run the lookups part under cProfile (figures inflated)")
    parser.add_argument("--samples", type=int, default=200,
                        help="writes timed for convergence with notifications")
    parser.add_argument("--timer-samples", type=int, default=20,
                        help="writes timed for convergence by the catch-up timer alone")
    parser.add_argument("--catch-up-interval", type=float, default=1.0,
                        help="catch-up interval (s) for convergence without notifications")
    parser.add_argument("--writes", type=int, default=2_000,
                        help="adds of each write-throughput configuration")
    parser.add_argument("--writers", type=int, default=8, help="concurrent writers")
    parser.add_argument("--conv-entries", type=int, default=10_000,
                        help="entries stored for the convergence part")
    args = parser.parse_args()
    args.only = {p.strip() for p in args.only.split(",") if p.strip()}
    if not args.only or not args.only <= set(PARTS):
        parser.error(f"--only: some of {', '.join(PARTS)}")
    if min(args.entries, args.lookups, args.mqtt_calls, args.rounds, args.samples,
           args.timer_samples, args.writes, args.writers, args.conv_entries) < 1:
        parser.error("counts must be positive")
    if args.entries < 20 or args.conv_entries < 20 or args.catch_up_interval <= 0:
        parser.error("need --entries and --conv-entries >= 20, --catch-up-interval > 0")
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

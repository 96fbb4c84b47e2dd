"""A graceful stop of one GCD instance of a shared group loses no call.

Two GCD instances of one backend share its requests (``shared_subscription_group``) on one
mosquitto and one PostgreSQL. Callers send a steady stream of adds, lookups and removes (short
time to live) over MQTT, as cluster controllers do, while one instance is stopped and started
again: every call is answered, every add answered as done is in the store, and nothing else is.

The callers are raw MQTT clients (aiomqtt) sending GCD requests with a replyTo address of their
own; the GCD instances are real processes (``python -m pyjoynr.gcd``, SIGTERM) or, at the service
level, :class:`~gcd.service.GcdService` objects. Each runs on both MQTT clients of the GCD.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from pyjoynr.gcd.interface import GCD_PARTICIPANT_ID, GCD_TOPIC, GlobalCapabilitiesDirectory
from pyjoynr.gcd.postgres_store import PostgresStore
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.programming.discovery_types import (
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.system_interfaces import address_to_json
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def, to_wire
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import Reply, Request, decode_payload
from pyjoynr.testing.brokers import Mosquitto
from tests.support import mqtt_clients
from tests.support.gcd_stores import fresh_postgres_dsn
from tests.support.sync_harness import store_rows

pytestmark = [pytest.mark.network, pytest.mark.usefixtures("mqtt_client")]

ROOT = Path(__file__).resolve().parents[1]
GBID = "joynrdefaultgbid"
GROUP = "gcds"
#: the time to live of every call: an unanswered one is given up after it (plus a grace)
TTL_MS = 6_000
#: [gcd] stop_drain_s of the instances (the default)
STOP_DRAIN_S = GcdSettings().stop_drain_s
#: what a process may take, after its drain, to end the rest (store, tasks, admin endpoint)
SHUTDOWN_SLACK_S = 3.0
#: callers with a call in flight at any time (each sends its next call once answered)
CALLERS = 40
_METHODS = interface_def(GlobalCapabilitiesDirectory).methods


def entry(pid: str) -> GlobalDiscoveryEntry:
    now = now_ms()
    return GlobalDiscoveryEntry(
        Version(1, 0), "stopping", "test/Stop", pid, ProviderQos(scope=ProviderScope.GLOBAL),
        now, now + 3_600_000, "", address_to_json(MqttAddress("ignored", "joynr/cc/cc-stop")))


@dataclass
class Calls:
    """A cluster controller's calls to the GCD over MQTT: requests (QoS 1) to the GCD's topic
    with its own replyTo topic; replies matched by request id."""

    client: aiomqtt.Client
    name: str
    waiting: dict[str, asyncio.Future[Reply]] = field(default_factory=dict)
    ids: itertools.count[int] = field(default_factory=itertools.count)
    #: what was never answered: (method, participantId)
    unanswered: list[tuple[str, str]] = field(default_factory=list)
    answered: int = 0
    #: participantIds whose add / remove was answered as done
    added: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)

    @property
    def reply_topic(self) -> str:
        return f"joynr/cc/{self.name}"

    async def read(self) -> None:
        async for message in self.client.messages:
            payload = message.payload
            assert isinstance(payload, bytes)
            reply = decode_frame(payload)
            body = decode_payload(Reply, reply.body)
            waiter = self.waiting.pop(body.request_reply_id, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(body)

    async def call(self, method: str, pid: str, *args: Any) -> Reply | None:
        """The reply to ``method(*args)`` (the interface's Python name); None (and noted in
        :attr:`unanswered`) when none came within the time to live."""
        definition = _METHODS[method]
        rid = f"{self.name}-{next(self.ids)}"
        request = Message(
            MessageType.REQUEST, self.name, GCD_PARTICIPANT_ID, now_ms() + TTL_MS,
            Request(rid, definition.name, [to_wire(a) for a in args],
                    list(definition.param_datatypes)).to_body(),
            reply_to=MqttAddress(GBID, self.reply_topic))
        waiter = self.waiting[rid] = asyncio.get_running_loop().create_future()
        await self.client.publish(f"{GCD_TOPIC}/low", encode_frame(request), qos=1)
        try:
            async with asyncio.timeout(TTL_MS / 1000 + 1.0):
                reply = await waiter
        except TimeoutError:
            self.waiting.pop(rid, None)
            self.unanswered.append((method, pid))
            return None
        self.answered += 1
        return reply

    async def stream(self, running: asyncio.Event) -> None:
        """Add, look up, and remove every other one, while ``running`` is set."""
        n = 0
        while running.is_set():
            n += 1
            pid = f"{self.name}-p{n}"
            reply = await self.call("add_in_backends", pid, entry(pid), [GBID])
            if reply is None or reply.error is not None:
                continue
            self.added.add(pid)
            await self.call("lookup_participant_in", pid, pid, [GBID])
            if n % 2:
                reply = await self.call("remove_in_backends", pid, pid, [GBID])
                if reply is not None and reply.error is None:
                    self.removed.add(pid)


@contextlib.asynccontextmanager
async def callers(broker: Mosquitto, count: int) -> AsyncIterator[list[Calls]]:
    """``count`` callers, each on a connection of its own, subscribed to its reply topic."""
    async with AsyncExitStack() as stack:
        made = []
        for n in range(count):
            client = await stack.enter_async_context(aiomqtt.Client(
                "127.0.0.1", broker.port, identifier=f"caller-{n}-{uuid.uuid4().hex[:6]}",
                protocol=aiomqtt.ProtocolVersion.V5, timeout=10))
            calls = Calls(client, f"caller-{n}")
            await client.subscribe(f"{calls.reply_topic}/#", qos=1)
            made.append(calls)
        readers = [asyncio.create_task(c.read()) for c in made]
        try:
            yield made
        finally:
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)


async def check_outcome(dsn: str, made: list[Calls]) -> None:
    """Every call answered; the store holds exactly the adds answered as done, less the
    removes answered as done."""
    unanswered = [u for c in made for u in c.unanswered]
    assert not unanswered, f"{len(unanswered)} call(s) never answered: {unanswered[:20]}"
    assert sum(c.answered for c in made) > 3 * CALLERS  # (the stream did run)
    expected = set().union(*(c.added - c.removed for c in made))
    store = PostgresStore(dsn)
    await store.open()
    try:
        stored = {pid for (gbid, pid) in await store_rows(store) if gbid == GBID}
    finally:
        await store.close()
    assert stored == expected, (f"written but not answered as added, or removed: "
                                f"{sorted(stored - expected)[:20]}; answered as added but "
                                f"missing: {sorted(expected - stored)[:20]}")


# ====================================================================== real processes


class GcdProcess:
    """``python -m pyjoynr.gcd`` in a directory of its own (its instance id file there), its output
    in a log file per start."""

    def __init__(self, directory: Path, name: str, env: dict[str, str]) -> None:
        self.directory = directory / name
        self.directory.mkdir(parents=True)
        self.name = name
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "JOYNR_GCD__ADMIN__PORT": "0",
                    "JOYNR_GCD__GCD__CLIENT_ID": f"gcd-{name}", **env}
        self.starts = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = self.directory / "gcd.log"

    def _spawn(self) -> None:
        self.starts += 1
        self.log = self.directory / f"gcd-{self.starts}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "pyjoynr.gcd"], cwd=self.directory,
                                         env=self.env, stdout=out, stderr=subprocess.STDOUT)

    async def start(self) -> None:
        self._spawn()
        await self.wait_for(f"MQTT backend {GBID} connected")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    async def wait_for(self, text: str, timeout_s: float = 30.0) -> None:
        assert self.proc is not None
        for _ in range(int(timeout_s / 0.05)):  # bounded
            if text in self.output():
                return
            if self.proc.poll() is not None:
                break
            await asyncio.sleep(0.05)
        raise AssertionError(f"{self.name}: {text!r} not seen; output:\n{self.output()}")

    async def stop(self) -> tuple[int, float]:
        """SIGTERM; the exit status and the seconds until the exit."""
        proc, self.proc = self.proc, None
        assert proc is not None
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.to_thread(proc.wait, 60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        return code, time.monotonic() - started

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


async def test_stopping_one_gcd_process_of_a_shared_group_loses_no_call(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Three SIGTERMs of one of two GCD processes (started again after each) in the middle of
    a stream of calls: every call answered, the store as answered, each stop within its
    bound and exit status 0."""
    dsn = await fresh_postgres_dsn(request.config)
    async with Mosquitto(tmp_path / "broker") as broker:
        env = {"JOYNR_GCD__GCD__BROKER_URL": broker.url, "JOYNR_GCD__GCD__STORE": "postgres",
               "JOYNR_GCD__GCD__POSTGRES_DSN": dsn,
               "JOYNR_GCD__GCD__SHARED_SUBSCRIPTION_GROUP": GROUP,
               "JOYNR_GCD__GCD__MQTT_CLIENT": mqtt_clients.current()}
        stopped, other = GcdProcess(tmp_path, "a", env), GcdProcess(tmp_path, "b", env)
        try:
            await stopped.start()  # (one after the other: the first makes the schema)
            await other.start()
            stops: list[tuple[int, float, str]] = []  # exit status, seconds, output
            async with callers(broker, CALLERS) as made:
                running = asyncio.Event()
                running.set()
                streams = [asyncio.create_task(c.stream(running)) for c in made]
                try:
                    for _ in range(3):
                        await asyncio.sleep(1.0)  # the stream goes to both
                        code, took = await stopped.stop()
                        stops.append((code, took, stopped.output()))
                        await asyncio.sleep(0.5)  # the other takes everything meanwhile
                        await stopped.start()
                    await asyncio.sleep(0.5)
                finally:
                    running.clear()
                    await asyncio.gather(*streams)
            await check_outcome(dsn, made)
            for code, took, out in stops:
                assert code == 0, out
                assert took < STOP_DRAIN_S + SHUTDOWN_SLACK_S, out
                assert "drained in" in out and "all finished" in out, out
                assert "unpublished" not in out and "not published" not in out, out
            for process in (stopped, other):
                code, _ = await process.stop()
                assert code == 0, process.output()
        finally:
            stopped.kill()
            other.kill()


# ====================================================================== services


async def test_stopping_one_gcd_service_of_a_shared_group_loses_no_call(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The same at the service level: GcdService.stop of one of two instances, three times, a
    new instance in its place each time."""
    dsn = await fresh_postgres_dsn(request.config)

    def settings(name: str) -> GcdSettings:
        return GcdSettings(gbid=GBID, broker_url=broker.url, store="postgres", postgres_dsn=dsn,
                           shared_subscription_group=GROUP, client_id=f"gcd-{name}",
                           mqtt_client=mqtt_clients.current())

    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "broker"))
        first = GcdService(settings("a"))
        await first.start(wait_s=10)
        other = await stack.enter_async_context(GcdService(settings("b")))
        await other.mqtt.wait_connected(10)
        async with callers(broker, CALLERS) as made:
            running = asyncio.Event()
            running.set()
            streams = [asyncio.create_task(c.stream(running)) for c in made]
            stopping = first
            stopped: list[GcdService] = []
            try:
                for n in range(3):
                    await asyncio.sleep(1.0)
                    await stopping.stop()
                    stopped.append(stopping)
                    stopping = GcdService(settings(f"a{n}"))
                    await stopping.start(wait_s=10)
                await asyncio.sleep(0.5)
            finally:
                running.clear()
                await asyncio.gather(*streams)
                await stopping.stop()
        await check_outcome(dsn, made)
        for service in stopped:
            assert service.mqtt.received > 0  # (it did share the stream)
            assert service.mqtt.pending() == 0  # every answer published

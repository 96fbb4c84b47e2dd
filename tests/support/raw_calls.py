"""Requests written by hand to real parts, and the checks of their answers, for the tests that
send what a libjoynr runtime never would (values out of their range, strings and arrays past
their bound): a real GCD on SQLite behind a real mosquitto, asked by a bare MQTT peer in either
dialect (this project's msgpack frames and bodies, joynr's SMRF frames and JSON bodies), and a
cluster controller's providers asked over a raw websocket connection (either frame dialect,
either body format); the error answer's type and text, the refusal logged once, nothing
stored, nothing logged at ERROR."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.interface import GCD_PARTICIPANT_ID, GCD_TOPIC
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.programming.discovery_types import (
    DiscoveryEntry,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.system_interfaces import (
    DEFAULT_ROUTING_PARTICIPANT_ID,
    Routing,
    address_struct,
    address_to_json,
)
from pyjoynr.runtime import smrf
from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.bodies import BodyFormat, decode_body, encode_body, schema_of
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import MethodInvocationError, error_from_wire
from pyjoynr.runtime.interface import InterfaceDef, interface_def, to_wire
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import Reply, Request
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.transports.websocket.settings import NATIVE
from tests.support import mqtt_clients
from tests.support.mqtt_clients import RawPeer
from tests.support.raw_websocket import RawClient

__all__ = [
    "GBID",
    "RawCaller",
    "RawGcd",
    "assert_no_error_logged",
    "assert_nothing_registered",
    "assert_refusal_logged_once",
    "assert_refused",
    "body_format",
    "gcd_entry",
    "local_entry",
    "request_body",
]

GBID = "joynrdefaultgbid"
#: the largest frame the bare MQTT peer decodes in the project's dialect
MAX_FRAME = 1 << 20
#: how many messages a raw websocket client reads past before it gives up on a reply
MAX_READS = 50


def body_format(dialect: str) -> BodyFormat:
    """The body format a peer of ``dialect`` writes: msgpack for the project's, JSON for
    joynr's."""
    return BodyFormat.MSGPACK if dialect == NATIVE else BodyFormat.JSON


def request_body(definition: InterfaceDef, method: str, params: list[Any], fmt: BodyFormat
                 ) -> tuple[bytes, str]:
    """A request of ``definition``'s Python ``method`` with ``params`` (wire form) as a body
    in ``fmt``, and its request id."""
    rid = uuid.uuid4().hex
    found = definition.methods[method]
    request = Request(rid, found.name, params, found.param_datatypes)
    if fmt is BodyFormat.MSGPACK:
        return request.to_body(), rid
    return encode_body(request, BodyFormat.JSON, schema=schema_of(definition)), rid


def gcd_entry(pid: str, domain: str = "vehicle") -> dict[str, Any]:
    """A global entry of a ``test/Radio`` provider (wire form), reachable over MQTT."""
    return to_wire(GlobalDiscoveryEntry(
        Version(1, 0), domain, "test/Radio", pid, ProviderQos(scope=ProviderScope.GLOBAL),
        now_ms(), now_ms() + 60_000, "", address_to_json(MqttAddress(GBID, "joynr/cc/raw"))))


def local_entry(pid: str, domain: str = "domain") -> dict[str, Any]:
    """A local entry of a ``test/Thing`` provider (wire form), for the Discovery provider."""
    return to_wire(DiscoveryEntry(Version(1, 0), domain, "test/Thing", pid,
                                  ProviderQos(scope=ProviderScope.LOCAL), now_ms(),
                                  now_ms() + 60_000))


class RawGcd:
    """A real GCD on SQLite behind a real mosquitto, and a bare MQTT peer that asks it by hand
    in ``dialect`` (``native``: the project's frames and msgpack bodies; ``joynr``: SMRF frames
    and JSON bodies)."""

    def __init__(self, service: GcdService, peer: RawPeer, dialect: str, *, timeout_s: float,
                 ttl_ms: int) -> None:
        self.service = service
        self.peer = peer
        self.dialect = dialect
        #: the body format of the dialect
        self.fmt = body_format(dialect)
        self.timeout_s = timeout_s
        self.ttl_ms = ttl_ms

    @classmethod
    async def open(cls, stack: AsyncExitStack, tmp_path: Path, dialect: str, *,
                   timeout_s: float, ttl_ms: int) -> RawGcd:
        """Start mosquitto and the GCD (on ``tmp_path``, with the suite's MQTT client) and
        connect the peer (all closed when ``stack`` closes); ``timeout_s`` bounds each wait,
        ``ttl_ms`` is each request's time to live."""
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
        service = await stack.enter_async_context(GcdService(GcdSettings(
            gbid=GBID, broker_url=broker.url, sqlite_path=tmp_path / "gcd.sqlite",
            mqtt_client=mqtt_clients.current())))
        await service.mqtt.wait_connected(timeout_s)
        peer = await RawPeer.open(stack, broker.port)
        return cls(service, peer, dialect, timeout_s=timeout_s, ttl_ms=ttl_ms)

    async def ask(self, body: bytes, rid: str, *, dialect: str | None = None) -> Reply:
        """Publish a request with ``body`` to the GCD in a frame of ``dialect`` (the peer's
        unless given) and wait for its reply (which must answer ``rid``)."""
        native = (dialect or self.dialect) == NATIVE
        encode: Callable[[Message], bytes] = encode_frame if native else smrf.encode
        decode: Callable[[bytes], Message] = (
            (lambda b: decode_frame(b, MAX_FRAME)) if native else smrf.decode)
        await self.peer.publish(f"{GCD_TOPIC}/low", encode(Message(
            MessageType.REQUEST, f"asker-{rid[:8]}", GCD_PARTICIPANT_ID, now_ms() + self.ttl_ms,
            body, reply_to=MqttAddress(GBID, self.peer.topic))))
        answer = decode((await self.peer.receive(self.timeout_s)).payload)
        assert answer.type is MessageType.REPLY
        reply = decode_body(Reply, answer.body)
        assert reply.request_reply_id == rid
        return reply

    async def assert_nothing_stored(self, refused: int) -> None:
        """The store is empty and the router counted ``refused`` refused requests."""
        assert await self.service.store.count() == 0
        assert self.service.telemetry.counters["refused-request"] == refused


class RawCaller:
    """A raw websocket client of a cluster controller (either frame dialect) that calls its
    providers with bodies written by hand and waits for the replies."""

    def __init__(self, raw: RawClient, *, ttl_ms: int) -> None:
        self.raw = raw
        self.ttl_ms = ttl_ms

    @classmethod
    async def open(cls, stack: AsyncExitStack, cc: ClusterController, dialect: str, *,
                   ttl_ms: int, routed: tuple[str, ...] = ()) -> RawCaller:
        """Connect to ``cc`` in ``dialect`` (closed when ``stack`` closes) and have the
        cluster controller route the client's own participant id and ``routed`` to it (its
        Routing ``add_next_hop``); ``ttl_ms`` is each request's time to live."""
        caller = cls(await RawClient.open(stack, cc.websocket_address.url, dialect=dialect),
                     ttl_ms=ttl_ms)
        hop = interface_def(Routing).methods["add_next_hop"]
        own = to_wire(address_struct(WebSocketClientAddress(caller.raw.client_id)))
        for pid in (caller.raw.pid, *routed):
            rid = uuid.uuid4().hex
            reply = await caller.call(DEFAULT_ROUTING_PARTICIPANT_ID, Request(
                rid, hop.name, [pid, own, False], hop.param_datatypes).to_body(), rid)
            assert reply.error is None, reply.error
        return caller

    async def call(self, recipient: str, body: bytes, rid: str) -> Reply:
        """Send a request with ``body`` to ``recipient`` and read until the reply to ``rid``
        (at most :data:`MAX_READS` messages)."""
        raw = self.raw
        await raw.send(Message(MessageType.REQUEST, raw.pid, recipient, now_ms() + self.ttl_ms,
                               body))
        for _ in range(MAX_READS):
            answer = await raw.receive()
            if answer.type is MessageType.REPLY:
                reply = decode_body(Reply, answer.body)
                if reply.request_reply_id == rid:
                    return reply
        raise AssertionError("no reply")


def assert_nothing_registered(cc: ClusterController, refused: int) -> None:
    """The cluster controller's local directory is empty and its router counted ``refused``
    refused requests."""
    assert cc.discovery._entries == {}
    assert cc.telemetry.counters["refused-request"] == refused


def assert_refused(reply: Reply, says: str, *, starts: str = "wrong parameter: ",
                   max_chars: int | None = None, what: Any = None) -> None:
    """``reply`` is a refusal: a :class:`MethodInvocationError` whose text starts with
    ``starts``, holds ``says`` and (when given) is shorter than ``max_chars``; ``what`` is
    shown when no error came."""
    assert reply.error is not None, (what, reply)
    error = error_from_wire(reply.error)
    assert isinstance(error, MethodInvocationError), error
    assert error.message.startswith(starts), error.message
    assert says in error.message, error.message
    if max_chars is not None:
        assert len(error.message) < max_chars, error.message


def assert_no_error_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Nothing was logged at ERROR or above (the lines shown cut at 200 characters)."""
    assert [r.getMessage()[:200] for r in caplog.records if r.levelno >= logging.ERROR] == []


def assert_refusal_logged_once(caplog: pytest.LogCaptureFixture, check: Callable[[str], bool]
                               ) -> None:
    """The refusals of one peer: the first one logged in full at WARNING, the others counted
    (the router's rate limit of repeated warnings); ``check`` holds for the line logged."""
    lines = [r.getMessage() for r in caplog.records if r.name == "pyjoynr.programming.providers"
             and " refused: " in r.getMessage()]
    assert len(lines) == 1, [line[:300] for line in lines]
    assert check(lines[0]), lines[0][:300]

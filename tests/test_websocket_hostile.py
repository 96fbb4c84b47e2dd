"""Hostile input at the cluster controller's websocket server, against a real CC.

Every scenario builds a legitimate pair of libjoynr runtimes first (a Radio provider in one, a
proxy for it in the other), attacks, and then checks:

- the refusal is clear: its counter went up, a log line says what was wrong, and a refused
  connection was closed with 1008 and a reason;
- nothing else was disturbed: the pair still completes a request/reply and the CC's routing
  entries of both legitimate clients are exactly what they were;
- after a frame-level refusal the attacking connection is still open and its next valid frame
  is routed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import msgpack
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, InvalidStatus

from pyjoynr.cluster_controller.config import ClusterControllerConfig
from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import LibjoynrRuntime
from pyjoynr.libjoynr import connect as joynr_connect
from pyjoynr.libjoynr.advanced import ProviderRuntimeError
from pyjoynr.programming.generated import system
from pyjoynr.programming.system_interfaces import (
    DEFAULT_ROUTING_PARTICIPANT_ID,
    Routing,
    address_struct,
)
from pyjoynr.runtime.addresses import MqttAddress, WebSocketAddress, WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def, to_wire
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import (
    MulticastPublication,
    OneWayRequest,
    Publication,
    Reply,
    Request,
    SubscriptionReply,
    decode_payload,
)
from pyjoynr.runtime.routing import RoutingEntry
from pyjoynr.transports.dialects import encode_init
from tests.support.radio import Country, Radio, RadioProvider, Station
from tests.support.raw_websocket import close_raw

pytestmark = pytest.mark.network

WAIT_S = 5.0
SERVER_LOG = "pyjoynr.transports.websocket.server"

ROUTING = interface_def(Routing)
RADIO = interface_def(Radio)


async def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S
                     ) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def log_lines(caplog: pytest.LogCaptureFixture, logger: str = SERVER_LOG,
              level: int = logging.WARNING) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith(logger) and r.levelno >= level]


def assert_logged(caplog: pytest.LogCaptureFixture, *fragments: str, logger: str = SERVER_LOG,
                  level: int = logging.WARNING) -> None:
    lines = log_lines(caplog, logger, level)
    assert any(all(f in line for f in fragments) for line in lines), (
        f"no {logging.getLevelName(level)} log line of {logger} with {fragments}; "
        f"got: {lines}")


# ====================================================================== fixtures


async def start_cc(stack: AsyncExitStack, data_dir: Path, **env: str) -> ClusterController:
    config = ClusterControllerConfig.load(None, env={
        "JOYNR_CC__WEBSOCKET__HOST": "127.0.0.1",
        "JOYNR_CC__WEBSOCKET__PORT": "0",
        "JOYNR_CC__ADMIN__PORT": "0",
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(data_dir),
        "JOYNR_CC__WEBSOCKET__INIT_TIMEOUT_S": "0.5",
        **env,
    })
    return await stack.enter_async_context(ClusterController(config))


@dataclass
class Legit:
    """A provider runtime and a consumer runtime with a proxy, built before any attack."""

    cc: ClusterController
    provider_rt: LibjoynrRuntime
    consumer_rt: LibjoynrRuntime
    provider: RadioProvider
    provider_pid: str
    proxy: Any

    @property
    def provider_address(self) -> WebSocketClientAddress:
        return WebSocketClientAddress(self.provider_rt.client_id)

    @property
    def consumer_address(self) -> WebSocketClientAddress:
        return WebSocketClientAddress(self.consumer_rt.client_id)

    def entries(self) -> dict[str, RoutingEntry]:
        """The CC's routing entries of both legitimate clients."""
        mine = {self.provider_address, self.consumer_address}
        return {pid: e for pid, e in self.cc.router.routing_entries() if e.address in mine}

    async def still_works(self) -> None:
        name = f"station-{uuid.uuid4().hex[:8]}"
        added = await asyncio.wait_for(
            self.proxy.add_favorite(Station(name, Country.AUSTRIA, 99.9)), WAIT_S)
        assert added is True
        favorites = await asyncio.wait_for(self.proxy.favorites(), WAIT_S)
        assert name in [s.name for s in favorites]


async def build_legit(stack: AsyncExitStack, cc: ClusterController) -> Legit:
    url = cc.websocket_address.url
    provider_rt = await joynr_connect(url, timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(provider_rt.close)
    consumer_rt = await joynr_connect(url, timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(consumer_rt.close)
    provider = RadioProvider()
    provider_pid = await asyncio.wait_for(provider_rt.register_provider("hostile.test", provider),
                                          WAIT_S)
    proxy = await asyncio.wait_for(consumer_rt.build_proxy(Radio, "hostile.test", ttl_ms=3000),
                                   WAIT_S)
    legit = Legit(cc, provider_rt, consumer_rt, provider, provider_pid, proxy)
    await legit.still_works()
    entries = legit.entries()
    # the provider and the proxy (plus the system proxies of both runtimes) are routed there
    assert entries[provider_pid].address == legit.provider_address
    assert entries[proxy.participant_id].address == legit.consumer_address
    return legit


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


@pytest.fixture
async def cc(stack: AsyncExitStack, tmp_path: Path) -> ClusterController:
    return await start_cc(stack, tmp_path)


@pytest.fixture
async def legit(stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture
                ) -> Legit:
    caplog.set_level(logging.INFO)
    return await build_legit(stack, cc)


# ====================================================================== a raw client


class RawClient:
    """A websocket connection speaking the wire protocol by hand."""

    def __init__(self, ws: ClientConnection, client_id: str) -> None:
        self.ws = ws
        self.client_id = client_id
        self.address = WebSocketClientAddress(client_id)
        self.pid = f"raw-{uuid.uuid4()}"

    @classmethod
    async def open(cls, stack: AsyncExitStack, url: str, client_id: str | None = None, *,
                   init: bool = True) -> RawClient:
        ws = await asyncio.wait_for(connect(url, compression=None, max_size=None), WAIT_S)
        stack.push_async_callback(close_raw, ws)
        client = cls(ws, client_id or f"raw-client-{uuid.uuid4()}")
        if init:
            await ws.send(encode_init(client.client_id))
        return client

    async def send(self, frame: bytes | str) -> None:
        await self.ws.send(frame)

    async def receive(self, timeout_s: float = WAIT_S) -> Message:
        frame = await asyncio.wait_for(self.ws.recv(), timeout_s)
        assert isinstance(frame, bytes)
        return decode_frame(frame)

    async def nothing_received(self, wait_s: float = 0.3) -> None:
        try:
            frame = await asyncio.wait_for(self.ws.recv(), wait_s)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected frame {frame!r}")

    async def closed(self, timeout_s: float = WAIT_S) -> tuple[int | None, str | None]:
        """Wait until the server closes the connection; its close code and reason."""
        try:
            async with asyncio.timeout(timeout_s):
                with contextlib.suppress(ConnectionClosed):
                    while True:
                        await self.ws.recv()
        except TimeoutError:
            raise AssertionError(f"the connection of {self.client_id} is still open after "
                                 f"{timeout_s} s") from None
        return self.ws.close_code, self.ws.close_reason

    def request(self, recipient: str, method: str, params: list[Any],
                datatypes: list[str], *, sender: str | None = None, ttl_ms: int = 3000,
                expiry_date_ms: int | None = None) -> tuple[Message, str]:
        rid = uuid.uuid4().hex
        message = Message(
            type=MessageType.REQUEST, sender=sender or self.pid, recipient=recipient,
            expiry_date_ms=now_ms() + ttl_ms if expiry_date_ms is None else expiry_date_ms,
            body=Request(rid, method, params, datatypes).to_body(),
        )
        return message, rid

    async def call(self, recipient: str, method: str, params: list[Any], datatypes: list[str]
                   ) -> Reply:
        """Send a request and wait for its reply (which needs this client's pid routed)."""
        message, rid = self.request(recipient, method, params, datatypes)
        await self.send(encode_frame(message))
        while True:
            answer = await self.receive()
            if answer.type is MessageType.REPLY:
                reply = decode_payload(Reply, answer.body)
                if reply.request_reply_id == rid:
                    assert answer.recipient == self.pid
                    return reply

    async def add_next_hop(self, participant_id: str, address: dict[str, Any]) -> Reply:
        return await self.call(DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop",
                               [participant_id, address, False],
                               ROUTING.methods["add_next_hop"].param_datatypes)

    async def register(self) -> None:
        """Route this client's pid to this connection (as a libjoynr runtime would)."""
        reply = await self.add_next_hop(self.pid, self.address.to_dict())
        assert reply.error is None, reply.error

    def radio_request(self, legit: Legit, station: Station, **kwargs: Any
                      ) -> tuple[Message, str]:
        return self.request(legit.provider_pid, "add_favorite", [to_wire(station)],
                            RADIO.methods["add_favorite"].param_datatypes, **kwargs)

    async def favorites(self, legit: Legit) -> list[str]:
        reply = await self.call(legit.provider_pid, "favorites", [], [])
        assert reply.error is None, reply.error
        assert reply.response is not None
        return [s["name"] for s in reply.response[0]]


async def registered_raw(stack: AsyncExitStack, cc: ClusterController) -> RawClient:
    raw = await RawClient.open(stack, cc.websocket_address.url)
    await raw.register()
    assert cc.router.route_of(raw.pid) is not None
    return raw


async def assert_attacker_still_routed(raw: RawClient, legit: Legit) -> None:
    """The attacking connection is open and its valid frames are routed to the provider."""
    station = Station(f"raw-{uuid.uuid4().hex[:6]}", Country.GERMANY)
    message, rid = raw.radio_request(legit, station)
    await raw.send(encode_frame(message))
    answer = await raw.receive()
    reply = decode_payload(Reply, answer.body)
    assert (reply.request_reply_id, reply.error, reply.response) == (rid, None, [True])
    assert station.name in await raw.favorites(legit)


def valid_frame(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"v": 1, "t": "rq", "id": f"m-{uuid.uuid4()}", "s": "someone",
                            "r": "someone-else", "x": now_ms() + 10_000, "b": b"\x80"}
    data.update(changes)
    return data


def pack(data: Any) -> bytes:
    return msgpack.packb(data, use_bin_type=True)


# ====================================================================== 1. bad frames


BAD_FRAMES: list[tuple[str, Callable[[], bytes | str], str, str]] = [
    ("garbage", lambda: b"\xc1\xde\xad\xbe\xef garbage", "not-msgpack", "not valid msgpack"),
    ("truncated", lambda: pack(valid_frame())[:-7], "not-msgpack", "not valid msgpack"),
    ("trailing-garbage", lambda: pack(valid_frame()) + b"\x00\x01", "not-msgpack",
     "not valid msgpack"),
    ("text", lambda: "a text frame", "not-binary", "must be binary"),
    ("text-looking-like-json", lambda: '{"v": 1, "t": "rq"}', "not-binary", "must be binary"),
    ("non-map", lambda: pack([1, "rq", "id"]), "not-a-map", "must be a msgpack map"),
    ("sender-int", lambda: pack(valid_frame(s=42)), "bad-field", "sender"),
    ("recipient-empty", lambda: pack(valid_frame(r="")), "bad-field", "recipient"),
    ("id-missing", lambda: pack({k: v for k, v in valid_frame().items() if k != "id"}),
     "missing-field", "message id"),
    ("expiry-str", lambda: pack(valid_frame(x="tomorrow")), "bad-field", "expiry"),
    ("expiry-negative", lambda: pack(valid_frame(x=-5)), "bad-field", "expiry"),
    ("body-str", lambda: pack(valid_frame(b="text")), "bad-field", "body"),
    ("headers-int-values", lambda: pack(valid_frame(h={"k": 1})), "bad-field",
     "custom headers"),
    ("compressed-int", lambda: pack(valid_frame(z=1)), "bad-field", "compressed"),
    ("effort-unknown", lambda: pack(valid_frame(ef="FASTEST")), "bad-field", "effort"),
    ("reply-to-inprocess", lambda: pack(valid_frame(
        re={"_typeName": "joynr.system.RoutingTypes.InProcessAddress"})), "bad-reply-to",
     "replyTo"),
    ("unknown-version", lambda: pack(valid_frame(v=2)), "unknown-version",
     "unsupported frame version"),
    ("version-str", lambda: pack(valid_frame(v="1")), "unknown-version",
     "unsupported frame version"),
    ("unknown-type", lambda: pack(valid_frame(t="evil")), "unknown-type",
     "unknown message type"),
    ("init-after-init", lambda: encode_init("again"), "unknown-type", "unknown message type"),
]


@pytest.mark.parametrize(("make", "reason", "fragment"),
                         [(m, r, f) for _, m, r, f in BAD_FRAMES],
                         ids=[name for name, _, _, _ in BAD_FRAMES])
async def test_bad_frame_is_refused_and_nothing_else_is_disturbed(
    *, stack: AsyncExitStack, cc: ClusterController, legit: Legit,
    caplog: pytest.LogCaptureFixture, make: Callable[[], bytes | str], reason: str,
    fragment: str,
) -> None:
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)
    before = cc.websocket.counters.copy()

    await raw.send(make())
    # frames of one connection are handled in order: once the next one is answered, the bad
    # one was refused; and the connection is still open
    await assert_attacker_still_routed(raw, legit)

    assert cc.websocket.counters[reason] == before[reason] + 1
    assert cc.websocket.counters - before == {reason: 1}  # nothing else refused
    assert_logged(caplog, "refused", raw.client_id, fragment)
    await raw.nothing_received()
    await legit.still_works()
    assert legit.entries() == before_entries


async def test_many_bad_frames_in_a_row_then_a_good_one(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit) -> None:
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)
    before = cc.websocket.counters.copy()
    for _, make, _, _ in BAD_FRAMES:
        await raw.send(make())
    await assert_attacker_still_routed(raw, legit)
    expected: dict[str, int] = {}
    for _, _, reason, _ in BAD_FRAMES:
        expected[reason] = expected.get(reason, 0) + 1
    assert cc.websocket.counters - before == expected
    await legit.still_works()
    assert legit.entries() == before_entries


async def test_expired_message_is_dropped_not_delivered(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)
    station = Station("expired-station", Country.AUSTRIA)
    message, _ = raw.radio_request(legit, station, expiry_date_ms=now_ms() - 1000)
    before = cc.telemetry.counters["dropped-expired"]

    await raw.send(encode_frame(message))
    await assert_attacker_still_routed(raw, legit)

    assert cc.telemetry.counters["dropped-expired"] == before + 1
    assert_logged(caplog, "dropped", message.id, "expired", logger="pyjoynr.runtime.router")
    assert "expired-station" not in [s.name for s in legit.provider.stations]
    assert "expired-station" not in await raw.favorites(legit)
    await raw.nothing_received()  # and no error reply for it either
    await legit.still_works()
    assert legit.entries() == before_entries


# ====================================================================== 2. oversized frames


async def test_oversized_frame_is_refused_then_too_big_closes(
        stack: AsyncExitStack, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    cc = await start_cc(stack, tmp_path, JOYNR_CC__WEBSOCKET__MAX_FRAME_BYTES="4096")
    legit = await build_legit(stack, cc)
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)

    # over the limit, under twice the limit: refused one by one, the connection stays
    station = Station("big-station", Country.AUSTRIA)
    message, _ = raw.radio_request(legit, station)
    message = dataclasses.replace(message, body=message.body + b"\x00" * 6000)  # never decoded
    frame = encode_frame(message)
    assert 4096 < len(frame) < 8192
    await raw.send(frame)
    await assert_attacker_still_routed(raw, legit)
    assert cc.websocket.counters["oversized"] == 1
    assert_logged(caplog, "refused", raw.client_id, str(len(frame)), "4096")
    assert "big-station" not in [s.name for s in legit.provider.stations]

    # more than twice the limit: websockets closes the connection with 1009
    await raw.send(b"\x00" * 9000)
    with pytest.raises(ConnectionClosedError) as closed:
        await asyncio.wait_for(raw.ws.recv(), WAIT_S)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1009
    await wait_until(lambda: cc.websocket.counters["oversized-closed"] == 1, "oversized-closed")
    assert_logged(caplog, "refused", raw.client_id, "too big")
    # the closed connection's routes are gone, nobody else's
    await wait_until(lambda: not cc.router.has_route(raw.pid), "the attacker's route removed")
    await legit.still_works()
    assert legit.entries() == before_entries


# ====================================================================== 3. init frame


async def assert_connection_refused(raw: RawClient, cc: ClusterController, reason: str,
                                    close_fragment: str, timeout_s: float = WAIT_S) -> None:
    code, close_reason = await raw.closed(timeout_s)
    assert code == 1008, (code, close_reason)
    assert close_reason and close_fragment in close_reason, close_reason
    await wait_until(lambda: cc.websocket.counters[reason] == 1, f"counter {reason}")
    assert raw.client_id not in cc.websocket.clients


async def test_message_frame_instead_of_init_is_refused(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    before_entries = legit.entries()
    raw = await RawClient.open(stack, cc.websocket_address.url, init=False)
    message, _ = raw.radio_request(legit, Station("no-init", Country.AUSTRIA))
    await raw.send(encode_frame(message))

    await assert_connection_refused(raw, cc, "bad-init", "init frame")
    assert_logged(caplog, "refused", "first frame must be an init frame")
    assert "no-init" not in [s.name for s in legit.provider.stations]
    await legit.still_works()
    assert legit.entries() == before_entries


async def test_silence_instead_of_init_times_out(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    before_entries = legit.entries()
    raw = await RawClient.open(stack, cc.websocket_address.url, init=False)
    started = asyncio.get_running_loop().time()

    await assert_connection_refused(raw, cc, "init-timeout", "init frame expected")
    waited = asyncio.get_running_loop().time() - started
    assert 0.3 < waited < 3.0  # the configured 0.5 s
    assert_logged(caplog, "refused", "no init frame in time")
    await legit.still_works()
    assert legit.entries() == before_entries


BAD_INITS: list[tuple[str, bytes | str, str]] = [
    ("wrong-version", msgpack.packb({"v": 2, "t": "init", "id": "c1"}), "init version"),
    ("no-version", msgpack.packb({"t": "init", "id": "c1"}), "init version"),
    ("empty-id", msgpack.packb({"v": 1, "t": "init", "id": ""}), "client id"),
    ("no-id", msgpack.packb({"v": 1, "t": "init"}), "client id"),
    ("int-id", msgpack.packb({"v": 1, "t": "init", "id": 7}), "client id"),
    ("too-long-id", msgpack.packb({"v": 1, "t": "init", "id": "c" * 257}), "client id"),
    ("not-msgpack", b"\xc1\xc1 hello", "not msgpack"),
    ("truncated", encode_init("c1")[:-2], "not msgpack"),
    ("not-a-map", msgpack.packb(["init", 1, "c1"]), "init frame"),
    ("wrong-type", msgpack.packb({"v": 1, "t": "rq", "id": "c1"}), "init frame"),
    ("text", "init c1", "binary init frame"),
    ("too-large", msgpack.packb({"v": 1, "t": "init", "id": "c1", "pad": "x" * 2000}),
     "too large"),
]


@pytest.mark.parametrize(("frame", "fragment"), [(f, m) for _, f, m in BAD_INITS],
                         ids=[name for name, _, _ in BAD_INITS])
async def test_bad_init_frame_is_refused(
        *, stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture, frame: bytes | str, fragment: str) -> None:
    before_entries = legit.entries()
    raw = await RawClient.open(stack, cc.websocket_address.url, init=False)
    await raw.send(frame)

    await assert_connection_refused(raw, cc, "bad-init", fragment)
    assert_logged(caplog, "refused", fragment)
    assert set(cc.websocket.clients) == {legit.provider_rt.client_id,
                                         legit.consumer_rt.client_id}
    await legit.still_works()
    assert legit.entries() == before_entries


@pytest.mark.parametrize("version", [True, 1.0, "1"], ids=repr)
async def test_init_version_must_be_the_int_1(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture, version: Any) -> None:
    # the same rule as for message frames ("v": int, must be 1)
    before_entries = legit.entries()
    raw = await RawClient.open(stack, cc.websocket_address.url, init=False)
    await raw.send(msgpack.packb({"v": version, "t": "init", "id": raw.client_id}))

    await assert_connection_refused(raw, cc, "bad-init", "init version")
    assert_logged(caplog, "refused", "init version")
    await legit.still_works()
    assert legit.entries() == before_entries


async def test_bad_init_with_non_ascii_content_is_still_closed_with_1008(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    # the refusal detail quotes the hostile value; the close reason must still fit in a
    # close frame (123 bytes of UTF-8)
    before_entries = legit.entries()
    raw = await RawClient.open(stack, cc.websocket_address.url, init=False)
    await raw.send(msgpack.packb({"v": "é" * 200, "t": "init", "id": "c1"}))

    await assert_connection_refused(raw, cc, "bad-init", "init version")
    assert_logged(caplog, "refused", "init version")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], (
        "the refusal must not end in an error")
    await legit.still_works()
    assert legit.entries() == before_entries


@pytest.mark.parametrize("reading", [True, False], ids=["client-reads", "client-reads-nothing"])
async def test_a_refused_first_frame_closes_at_once_despite_frames_after_it(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture, reading: bool) -> None:
    # a runtime of another joynr sends its own init message (unreadable here) and its first
    # requests right after it, without waiting for an answer; one of them reads nothing at all
    # stated bounds, "at once": a client that reads answers the close frame at once and the CC
    # reads that answer behind the frames (not only after its 1 s bound for a silent client)
    bound_s = 0.5 if reading else 2.0
    before_entries = legit.entries()
    raw = await RawClient.open(stack, cc.websocket_address.url, init=False)
    loop = asyncio.get_running_loop()
    started = loop.time()
    if not reading:
        raw.ws.transport.pause_reading()
    await raw.send(b"\xc1" + bytes(range(256)) * 2)
    for i in range(20):
        await raw.send(bytes([i]) * 1024)

    if not reading:  # the CC ends the connection although the client never answers its close
        here = raw.ws.local_address
        await wait_until(lambda: all(c.remote_address != here for c in cc.websocket._connections),
                         "the refused connection ended", bound_s)
        raw.ws.transport.resume_reading()
    await assert_connection_refused(raw, cc, "bad-init", "not msgpack", timeout_s=bound_s)
    took = loop.time() - started
    assert took < bound_s, took
    assert_logged(caplog, "refused", "not msgpack")
    await legit.still_works()
    assert legit.entries() == before_entries


# ====================================================================== 4. client id in use


async def test_claiming_the_id_of_a_live_runtime_is_refused(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    before_entries = legit.entries()
    for victim in (legit.provider_rt, legit.consumer_rt):
        before = cc.websocket.counters["id-in-use"]
        raw = await RawClient.open(stack, cc.websocket_address.url, victim.client_id)
        code, reason = await raw.closed()
        assert (code, reason) == (1008, "client id in use")
        assert cc.websocket.counters["id-in-use"] == before + 1
        assert_logged(caplog, "refused", victim.client_id, "live connection")
        assert victim.core.transport.connected
        assert victim.core.transport.connections == 1  # never disconnected
        await legit.still_works()
        assert legit.entries() == before_entries


async def test_what_a_refused_claimant_sent_after_its_init_is_dropped_and_counted(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    # the claimant's requests wait while the CC pings the live connection; then it is refused
    # and they are dropped, none routed
    victim = legit.provider_rt
    before_entries = legit.entries()
    raw = await RawClient.open(stack, cc.websocket_address.url, victim.client_id, init=False)
    requests = [raw.radio_request(legit, Station(f"claimed-{i}", Country.GERMANY),
                                  sender=legit.proxy.participant_id) for i in range(3)]
    write_at_once(raw, [encode_init(victim.client_id), *(encode_frame(m) for m, _ in requests)])
    code, reason = await raw.closed()
    assert (code, reason) == (1008, "client id in use")
    assert cc.websocket.counters["id-in-use"] == 1
    assert cc.websocket.counters["dropped-unaccepted"] == 3
    assert_logged(caplog, "refused", victim.client_id, "live connection",
                  "3 message(s) sent after the init frame dropped")
    assert not [s for s in legit.provider.stations if s.name.startswith("claimed-")]
    assert victim.core.transport.connections == 1
    await legit.still_works()
    assert legit.entries() == before_entries


async def test_claiming_the_id_after_its_connection_closed_is_accepted(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit) -> None:
    provider_entries = {pid: e for pid, e in legit.entries().items()
                        if e.address == legit.provider_address}
    client_id = legit.consumer_rt.client_id
    await asyncio.wait_for(legit.consumer_rt.close(), WAIT_S)
    await wait_until(lambda: client_id not in cc.websocket.clients, "the consumer disconnected")
    assert not [pid for pid, e in cc.router.routing_entries()
                if e.address == legit.consumer_address]

    raw = await RawClient.open(stack, cc.websocket_address.url, client_id)
    await raw.register()  # a round trip: the connection was accepted under that id
    assert client_id in cc.websocket.clients
    assert cc.router.route_of(raw.pid).address == WebSocketClientAddress(client_id)
    await assert_attacker_still_routed(raw, legit)
    assert cc.websocket.counters["id-in-use"] == 0
    assert {pid: e for pid, e in cc.router.routing_entries()
            if e.address == legit.provider_address} == provider_entries


# ====================================================================== 5. foreign next hops


async def test_add_next_hop_for_another_clients_address_is_refused_raw(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)
    attempts = [
        ("evil-new-pid", legit.provider_address),
        ("evil-new-pid", legit.consumer_address),
        (legit.proxy.participant_id, legit.provider_address),  # move the proxy elsewhere
        (legit.provider_pid, legit.consumer_address),  # move the provider elsewhere
        (raw.pid, legit.provider_address),  # even its own participant
    ]
    for n, (pid, address) in enumerate(attempts, start=1):
        reply = await raw.add_next_hop(pid, address.to_dict())
        assert reply.error is not None
        assert reply.error["type"] == "ProviderRuntimeException"
        assert "refused" in reply.error["message"]
        assert cc.telemetry.counters["refused-foreign-next-hop"] == n
    # the first refusal in full; the repeats of one client are counted, not logged one by one
    assert_logged(caplog, "add_next_hop", "evil-new-pid", "refused",
                  logger="pyjoynr.cluster_controller.routing_provider")
    assert len(log_lines(caplog, "pyjoynr.cluster_controller.routing_provider")) == 1

    assert not cc.router.has_route("evil-new-pid")
    assert cc.router.route_of(raw.pid).address == raw.address
    await assert_attacker_still_routed(raw, legit)
    await legit.still_works()
    assert legit.entries() == before_entries


def add_next_hop(routing: Any, participant_id: str, address: Any, visible: bool
                 ) -> Awaitable[None]:
    """The Routing proxy's addNextHop overload of ``address``'s struct."""
    struct = address_struct(address)
    name = {system.WebSocketClientAddress: "add_next_hop", system.MqttAddress: "add_next_hop_mqtt",
            system.WebSocketAddress: "add_next_hop_web_socket"}[type(struct)]
    return cast(Awaitable[None], getattr(routing, name)(participant_id, struct, visible))


async def test_add_next_hop_for_another_clients_address_is_refused_libjoynr(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    before_entries = legit.entries()
    attacker = await joynr_connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(attacker.close)
    routing = attacker.core.remote.routing
    foreign = [legit.provider_address, legit.consumer_address,
               MqttAddress("joynrdefaultgbid", "some/topic"),
               WebSocketAddress("ws", "127.0.0.1", 4242, "/")]
    for n, address in enumerate(foreign, start=1):
        with pytest.raises(ProviderRuntimeError, match="refused"):
            await asyncio.wait_for(
                add_next_hop(routing, legit.provider_pid, address, False), WAIT_S)
        assert cc.telemetry.counters["refused-foreign-next-hop"] == n
    with pytest.raises(ProviderRuntimeError, match="refused"):
        await asyncio.wait_for(add_next_hop(
            routing, "evil-pid", legit.consumer_address, True), WAIT_S)
    assert cc.telemetry.counters["refused-foreign-next-hop"] == len(foreign) + 1
    # the first refusal in full; the repeats of one client are counted, not logged one by one
    assert_logged(caplog, "add_next_hop", legit.provider_pid, "refused",
                  logger="pyjoynr.cluster_controller.routing_provider")
    assert len(log_lines(caplog, "pyjoynr.cluster_controller.routing_provider")) == 1
    assert not cc.router.has_route("evil-pid")

    # the attacker's own runtime is not disturbed either
    own = await attacker.build_proxy(Radio, "hostile.test", ttl_ms=3000)
    assert await asyncio.wait_for(own.favorites(), WAIT_S) is not None
    await legit.still_works()
    assert legit.entries() == before_entries


async def test_remove_next_hop_of_another_clients_participant_is_refused(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit) -> None:
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)
    for pid in (legit.provider_pid, legit.proxy.participant_id):
        reply = await raw.call(DEFAULT_ROUTING_PARTICIPANT_ID, "remove_next_hop", [pid],
                               ROUTING.methods["remove_next_hop"].param_datatypes)
        assert reply.error is not None and "refused" in reply.error["message"]
    await legit.still_works()
    assert legit.entries() == before_entries


# ====================================================================== 6. spoofed sender


@pytest.mark.parametrize("whom", ["proxy", "provider", "routing-provider"])
async def test_spoofed_sender_is_refused(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture, whom: str) -> None:
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)
    sender = {"proxy": legit.proxy.participant_id, "provider": legit.provider_pid,
              "routing-provider": DEFAULT_ROUTING_PARTICIPANT_ID}[whom]
    message, _ = raw.radio_request(legit, Station("spoofed", Country.AUSTRIA), sender=sender)
    before = cc.websocket.counters.copy()

    await raw.send(encode_frame(message))
    await assert_attacker_still_routed(raw, legit)

    assert cc.websocket.counters - before == {"spoofed-sender": 1}
    assert_logged(caplog, "refused", raw.client_id, message.id, sender, "routed to")
    assert "spoofed" not in [s.name for s in legit.provider.stations]
    assert "spoofed" not in await raw.favorites(legit)
    await legit.still_works()
    assert legit.entries() == before_entries


async def test_spoofed_sender_on_every_message_type_is_refused(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit) -> None:
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)
    before = cc.websocket.counters["spoofed-sender"]
    for message_type in MessageType:
        recipient = (f"{legit.provider_pid}/newStation" if message_type is MessageType.MULTICAST
                     else legit.provider_pid)
        await raw.send(encode_frame(Message(
            type=message_type, sender=legit.proxy.participant_id, recipient=recipient,
            expiry_date_ms=now_ms() + 5000, body=b"\x80")))
    await assert_attacker_still_routed(raw, legit)
    assert cc.websocket.counters["spoofed-sender"] == before + len(MessageType)
    await legit.still_works()
    assert legit.entries() == before_entries


# ====================================================================== 7. wrong path


@pytest.mark.parametrize("path", ["/nope", "/%2e%2e/"])
async def test_wrong_path_is_refused_with_404(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture, path: str) -> None:
    before_entries = legit.entries()
    address = cc.websocket_address
    url = f"ws://{address.host}:{address.port}{path}"
    with pytest.raises(InvalidStatus) as refused:
        await asyncio.wait_for(connect(url), WAIT_S)
    assert refused.value.response.status_code == 404
    assert b"no joynr endpoint" in refused.value.response.body
    assert cc.websocket.counters["refused-path"] == 1
    # the cluster controller says so itself, naming the path
    assert_logged(caplog, path, level=logging.INFO)
    await legit.still_works()
    assert legit.entries() == before_entries


async def test_right_path_with_query_is_accepted(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit) -> None:
    raw = await RawClient.open(stack, cc.websocket_address.url + "?client=x")
    await raw.register()
    await assert_attacker_still_routed(raw, legit)
    assert cc.websocket.counters["refused-path"] == 0


# ====================================================================== helpers' own checks


async def test_a_raw_client_that_leaves_takes_only_its_own_routes(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit) -> None:
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)
    await raw.ws.close()
    await wait_until(lambda: not cc.router.has_route(raw.pid), "the raw client's route removed")
    await legit.still_works()
    assert legit.entries() == before_entries


# ====================================================================== 6. framing


def write_at_once(raw: RawClient, frames: list[bytes]) -> None:
    """Put ``frames`` on the wire as separate websocket messages with one socket write, so
    that the CC receives them together (in one read, as a fast sender's frames arrive)."""
    protocol = raw.ws.protocol
    for frame in frames:
        protocol.send_binary(frame)
    raw.ws.transport.write(b"".join(protocol.data_to_send()))


async def test_frames_written_together_with_the_init_are_all_routed_in_order(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit) -> None:
    # the frames arrive before the CC has read the init frame and bound the connection:
    # none may be lost or reordered on the way from websockets' queue to the router
    raw = await RawClient.open(stack, cc.websocket_address.url, init=False)
    register, register_id = raw.request(
        DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop", [raw.pid, raw.address.to_dict(), False],
        ROUTING.methods["add_next_hop"].param_datatypes)
    stations = [Station(f"burst-{i}", Country.AUSTRIA) for i in range(200)]
    requests = [raw.radio_request(legit, s) for s in stations]
    write_at_once(raw, [encode_init(raw.client_id), encode_frame(register),
                        *(encode_frame(m) for m, _ in requests)])

    answered: list[str] = []
    while len(answered) < 1 + len(requests):
        answer = await raw.receive()
        reply = decode_payload(Reply, answer.body)
        assert reply.error is None, reply.error
        answered.append(reply.request_reply_id)
    assert answered == [register_id, *(rid for _, rid in requests)]
    assert [s.name for s in legit.provider.stations][-200:] == [s.name for s in stations]
    await raw.nothing_received()
    await legit.still_works()


async def test_a_fragmented_message_is_reassembled_and_routed(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit) -> None:
    raw = await registered_raw(stack, cc)
    station = Station("fragmented-station", Country.GERMANY)
    message, rid = raw.radio_request(legit, station)
    frame = encode_frame(message)
    await raw.send([frame[:5], frame[5:40], frame[40:]])  # websockets: one fragmented message
    answer = await raw.receive()
    reply = decode_payload(Reply, answer.body)
    assert (reply.request_reply_id, reply.error, reply.response) == (rid, None, [True])
    assert "fragmented-station" in await raw.favorites(legit)


async def test_a_fragmented_text_message_is_refused_as_not_binary(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    raw = await registered_raw(stack, cc)
    before = cc.websocket.counters.copy()
    await raw.send(["a text ", "in three ", "fragments"])
    await assert_attacker_still_routed(raw, legit)
    assert cc.websocket.counters - before == {"not-binary": 1}
    assert_logged(caplog, "refused", raw.client_id, "must be binary")


async def test_a_fragmented_message_over_the_frame_limit_is_refused(
        stack: AsyncExitStack, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    cc = await start_cc(stack, tmp_path, JOYNR_CC__WEBSOCKET__MAX_FRAME_BYTES="4096")
    legit = await build_legit(stack, cc)
    raw = await registered_raw(stack, cc)
    message, _ = raw.radio_request(legit, Station("big-fragments", Country.AUSTRIA))
    message = dataclasses.replace(message, body=message.body + b"\x00" * 6000)
    frame = encode_frame(message)
    await raw.send([frame[i:i + 1000] for i in range(0, len(frame), 1000)])
    await assert_attacker_still_routed(raw, legit)
    assert cc.websocket.counters["oversized"] == 1
    assert_logged(caplog, "refused", raw.client_id, str(len(frame)), "4096")
    assert "big-fragments" not in [s.name for s in legit.provider.stations]


# ====================================================================== 8. provider hijack


async def test_a_client_cannot_take_over_a_live_clients_provider(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)
    for n, pid in enumerate((legit.provider_pid, legit.proxy.participant_id), start=1):
        # at its own address: the check of the address passes, the participant is in use
        reply = await raw.add_next_hop(pid, raw.address.to_dict())
        assert reply.error is not None
        assert reply.error["type"] == "ProviderRuntimeException"
        assert "routed to the live connection" in reply.error["message"]
        assert cc.telemetry.counters["participant-in-use"] == n
        # the first refusal of this caller is logged, the next one only counted
        # (rate-limited per reason and caller)
        assert_logged(caplog, "add_next_hop", legit.provider_pid, "refused", "live connection",
                      logger="pyjoynr.cluster_controller.routing_provider")
    # with the route refused, the directory refuses the participant too
    attacker = await joynr_connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(attacker.close)
    with pytest.raises(ProviderRuntimeError, match="routed to the live connection"):
        await asyncio.wait_for(attacker.register_provider(
            "hostile.test", RadioProvider(), participant_id=legit.provider_pid), WAIT_S)
    assert cc.telemetry.counters["participant-in-use"] == 3

    # the victim keeps its route, its callers keep working, and it can still unregister
    assert legit.entries() == before_entries
    await legit.still_works()
    await asyncio.wait_for(legit.provider_rt.unregister_provider(legit.provider_pid), WAIT_S)
    assert not cc.router.has_route(legit.provider_pid)
    assert [e.participant_id for e in cc.discovery.entries()] == []


async def test_a_client_re_adding_its_own_route_is_accepted(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit) -> None:
    raw = await registered_raw(stack, cc)
    reply = await raw.add_next_hop(raw.pid, raw.address.to_dict())
    assert reply.error is None
    assert cc.telemetry.counters["participant-in-use"] == 0
    await assert_attacker_still_routed(raw, legit)


async def test_a_participant_of_a_hung_client_is_taken_over(
        stack: AsyncExitStack, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    cc = await start_cc(stack, tmp_path, JOYNR_CC__WEBSOCKET__PING_TIMEOUT_S="0.5")
    legit = await build_legit(stack, cc)
    hung = await registered_raw(stack, cc)
    hung_at_cc = cc.websocket._clients.get(hung.client_id).conn
    hung.ws.transport.pause_reading()  # its process hangs: it answers no ping any more
    taker = await registered_raw(stack, cc)

    reply = await taker.add_next_hop(hung.pid, taker.address.to_dict())
    assert reply.error is None, reply.error
    # answered without waiting for the hung connection's close handshake, which it never
    # answers (it ends by itself, aborted after the close timeout)
    assert not hung_at_cc.closed.done()
    await wait_until(hung_at_cc.closed.done, "the hung connection ended")
    assert cc.router.route_of(hung.pid).address == taker.address
    assert hung.client_id not in cc.websocket.clients
    assert cc.websocket.counters["closed-dead"] == 1
    assert cc.telemetry.counters["claimed-from-dead-connection"] == 1
    assert_logged(caplog, hung.client_id, "did not answer a ping")
    assert_logged(caplog, "add_next_hop", hung.pid, "gone",
                  logger="pyjoynr.cluster_controller.routing_provider")
    await legit.still_works()


# ====================================================================== 9. forged multicasts


async def test_forged_multicasts_are_refused(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit,
        caplog: pytest.LogCaptureFixture) -> None:
    before_entries = legit.entries()
    received: asyncio.Queue[Station] = asyncio.Queue()
    await asyncio.wait_for(legit.proxy.new_station.subscribe(received.put_nowait), WAIT_S)
    raw = await registered_raw(stack, cc)
    multicast_id = f"{legit.provider_pid}/newStation"
    body = MulticastPublication(multicast_id, [to_wire(Station("forged", Country.AUSTRIA))]
                                ).to_body()
    before = cc.websocket.counters.copy()
    forgeries = {
        "unrouted-sender": f"nobody-{uuid.uuid4()}",  # a sender routed nowhere
        "forged-multicast": raw.pid,  # the attacker's own participant: not the provider
        "spoofed-sender": legit.provider_pid,  # the provider itself: routed elsewhere
    }
    for sender in forgeries.values():
        forged = Message(type=MessageType.MULTICAST, sender=sender, recipient=multicast_id,
                         expiry_date_ms=now_ms() + 5000, body=body)
        await raw.send(encode_frame(forged))
    await assert_attacker_still_routed(raw, legit)

    assert cc.websocket.counters - before == {reason: 1 for reason in forgeries}
    assert_logged(caplog, "refused", raw.client_id, forgeries["unrouted-sender"],
                  "not routed to this connection")
    assert_logged(caplog, "refused", raw.client_id, "not the provider of multicast")
    # the provider's own multicast still arrives, and it is the only one
    legit.provider.fire("new_station", Station("real", Country.GERMANY))
    assert (await asyncio.wait_for(received.get(), WAIT_S)).name == "real"
    await asyncio.sleep(0.2)
    assert received.empty()
    await legit.still_works()
    assert legit.entries() == before_entries


async def test_answers_from_an_unrouted_sender_are_refused(
        stack: AsyncExitStack, cc: ClusterController, legit: Legit) -> None:
    before_entries = legit.entries()
    raw = await registered_raw(stack, cc)
    before = cc.websocket.counters.copy()
    answers = [
        (MessageType.REPLY, Reply("rid", [True]).to_body()),
        (MessageType.PUBLICATION, Publication("sid", ["x"]).to_body()),
        (MessageType.SUBSCRIPTION_REPLY, SubscriptionReply("sid").to_body()),
    ]
    for kind, body in answers:
        await raw.send(encode_frame(Message(
            type=kind, sender=f"nobody-{uuid.uuid4()}", recipient=legit.proxy.participant_id,
            expiry_date_ms=now_ms() + 5000, body=body)))
    await assert_attacker_still_routed(raw, legit)
    assert cc.websocket.counters - before == {"unrouted-sender": len(answers)}
    # calls from a sender without a route are still accepted (a Routing proxy's first call)
    await raw.send(encode_frame(Message(
        type=MessageType.ONE_WAY, sender=f"nobody-{uuid.uuid4()}",
        recipient=legit.provider_pid, expiry_date_ms=now_ms() + 5000,
        body=OneWayRequest("note", ["from a caller without a route"],
                           RADIO.methods["note"].param_datatypes).to_body())))
    await wait_until(lambda: legit.provider.notes == ["from a caller without a route"],
                     "the one-way call delivered")
    assert cc.websocket.counters - before == {"unrouted-sender": len(answers)}
    await legit.still_works()
    assert legit.entries() == before_entries

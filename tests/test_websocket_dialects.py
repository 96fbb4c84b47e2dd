"""Both frame dialects on one websocket port of a real cluster controller.

A connection's first frame tells its dialect: the project's msgpack init (native frames) or
joynr's JSON init (SMRF frames). The tests speak both by hand (websockets clients, frames made
with runtime.messages and runtime.smrf) and through the libjoynr transport's ``dialect``
setting, and check: the joynr init binds the client id as a native one does; messages cross
between the dialects (envelope translated, body untouched) and SMRF frames forwarded unchanged
are byte-identical; hostile SMRF is refused with its reason, counted and logged while the
connection stays usable; on wss the CN of a client certificate is the owner id every SMRF
message must be signed with.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as websockets_serve
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import LibjoynrConfig, connect
from pyjoynr.programming.system_interfaces import DEFAULT_ROUTING_PARTICIPANT_ID, Routing
from pyjoynr.runtime import smrf
from pyjoynr.runtime.addresses import WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def, to_wire
from pyjoynr.runtime.messages import (
    Effort,
    Message,
    MessageType,
    decode_frame,
    encode_frame,
    held_bytes,
)
from pyjoynr.runtime.payloads import Reply, Request, decode_payload
from pyjoynr.runtime.smrf import SmrfFrame, encode_smrf
from pyjoynr.testing.cluster import cc_config, eventually
from pyjoynr.transports.dialects import (
    JOYNR_INIT_PREFIX,
    decode_any_init,
    encode_init,
    encode_joynr_init,
    frame_encoder,
)
from pyjoynr.transports.outbox import Outbox
from pyjoynr.transports.websocket.connection import open_client_connection
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE, WebSocketClientSettings
from tests.support.radio import Country, Radio, RadioProvider, Station
from tests.support.raw_websocket import RawClient
from tests.support.tls import Tls, certificate_authority, client_certificate

pytestmark = pytest.mark.network

WAIT_S = 5.0
SERVER_LOG = "pyjoynr.transports.websocket.server"
#: the CCs here refuse frames above this (and close connections above twice this)
MAX_FRAME_BYTES = 65536

ROUTING = interface_def(Routing)
RADIO = interface_def(Radio)


# ====================================================================== helpers


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


async def start_cc(stack: AsyncExitStack, data_dir: Path, **overrides: Any
                   ) -> ClusterController:
    config = cc_config(data_dir, websocket__host="127.0.0.1", websocket__init_timeout_s=0.5,
                       websocket__max_frame_bytes=MAX_FRAME_BYTES, **overrides)
    return await stack.enter_async_context(ClusterController(config))


@pytest.fixture
async def cc(stack: AsyncExitStack, tmp_path: Path, caplog: pytest.LogCaptureFixture
             ) -> ClusterController:
    caplog.set_level(logging.INFO)
    return await start_cc(stack, tmp_path)


def warnings_of(caplog: pytest.LogCaptureFixture, logger: str = SERVER_LOG) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith(logger) and r.levelno >= logging.WARNING]


def assert_logged(caplog: pytest.LogCaptureFixture, *fragments: str,
                  logger: str = SERVER_LOG) -> None:
    lines = warnings_of(caplog, logger)
    assert any(all(f in line for f in fragments) for line in lines), (
        f"no warning of {logger} with {fragments}; got: {lines}")


def assert_no_errors(caplog: pytest.LogCaptureFixture) -> None:
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors


def request(sender: str, recipient: str, method: str, params: list[Any],
            datatypes: list[str], *, ttl_ms: int = 5000, **fields: Any) -> tuple[Message, str]:
    rid = uuid.uuid4().hex
    return Message(MessageType.REQUEST, sender, recipient, now_ms() + ttl_ms,
                   Request(rid, method, params, datatypes).to_body(), **fields), rid


async def reply_for(raw: RawClient, rid: str) -> tuple[Message, Reply]:
    """The reply to request ``rid`` (messages before it are skipped, at most 20)."""
    for _ in range(20):
        message = await raw.receive()
        if message.type is MessageType.REPLY:
            reply = decode_payload(Reply, message.body)
            if reply.request_reply_id == rid:
                assert message.recipient == raw.pid
                return message, reply
    raise AssertionError(f"no reply to {rid}")


async def call(raw: RawClient, recipient: str, method: str, params: list[Any],
               datatypes: list[str]) -> Reply:
    message, rid = request(raw.pid, recipient, method, params, datatypes)
    await raw.send(message)
    return (await reply_for(raw, rid))[1]


async def call_routing(raw: RawClient, method: str, params: list[Any]) -> Reply:
    return await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, method, params,
                      ROUTING.methods[method].param_datatypes)


async def register(raw: RawClient) -> None:
    """Route the client's pid to its connection, as a libjoynr runtime does."""
    reply = await call_routing(raw, "add_next_hop",
                               [raw.pid, WebSocketClientAddress(raw.client_id).to_dict(), False])
    assert reply.error is None, reply.error


async def assert_usable(raw: RawClient) -> None:
    """The connection is open and its next valid message is routed (and answered)."""
    reply = await call_routing(raw, "resolve_next_hop", [raw.pid])
    assert (reply.error, reply.response) == (None, [True])


async def nothing_received(raw: RawClient, wait_s: float = 0.3) -> None:
    try:
        frame = await asyncio.wait_for(raw.ws.recv(), wait_s)
    except TimeoutError:
        return
    raise AssertionError(f"unexpected frame {frame!r}")


async def closed(raw: RawClient, timeout_s: float = WAIT_S) -> tuple[int | None, str | None]:
    """Wait until the server closes the connection; its close code and reason."""
    try:
        async with asyncio.timeout(timeout_s):
            with contextlib.suppress(ConnectionClosed):
                while True:
                    await raw.ws.recv()
    except TimeoutError:
        raise AssertionError(f"{raw.client_id} still open after {timeout_s} s") from None
    return raw.ws.close_code, raw.ws.close_reason


async def registered(stack: AsyncExitStack, cc: ClusterController, dialect: str,
                     **options: Any) -> RawClient:
    raw = await RawClient.open(stack, cc.websocket_address.url, dialect=dialect, **options)
    await register(raw)
    return raw


def smrf_frame(sender: str, recipient: str, *, message_type: str = "o",
               message_id: str | None = None, expiry_ms: int | None = None,
               headers: tuple[tuple[str, str], ...] = (), body: bytes = b'{"k":1}',
               **fields: Any) -> bytes:
    """An SMRF frame written field by field (``headers`` after ``t`` and ``id``), expiring in
    5 s unless ``expiry_ms`` says when."""
    fixed = (("t", message_type), ("id", message_id or f"m-{uuid.uuid4().hex}"))
    expiry = now_ms() + 5000 if expiry_ms is None else expiry_ms
    return encode_smrf(SmrfFrame(sender, recipient, expiry, headers=fixed + headers, body=body,
                                 **fields))


def is_smrf(frame: bytes) -> bool:
    return frame[:2] == b"\x01\x00"


def is_msgpack_map(frame: bytes) -> bool:
    return 0x80 <= frame[0] <= 0x8F or frame[0] in (0xDE, 0xDF)


# ====================================================================== the init frames


def test_joynr_init_is_written_as_joynrs_runtimes_write_it() -> None:
    frame = encode_joynr_init("pyjoynr.libjoynr.messaging.participantid_0a1b")
    assert frame == (b'{"_typeName":"joynr.system.RoutingTypes.WebSocketClientAddress",'
                     b'"id":"pyjoynr.libjoynr.messaging.participantid_0a1b"}')
    assert frame.startswith(JOYNR_INIT_PREFIX)
    assert decode_any_init(frame) == ("pyjoynr.libjoynr.messaging.participantid_0a1b", JOYNR)
    assert decode_any_init(encode_init("c1")) == ("c1", NATIVE)


async def test_joynr_init_is_accepted_and_binds_the_id_as_a_native_one(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture
) -> None:
    joynr = await registered(stack, cc, JOYNR)
    native = await registered(stack, cc, NATIVE)
    dialects = {s.address.id: s.dialect for s in cc.websocket.client_summaries()}
    assert dialects == {joynr.client_id: JOYNR, native.client_id: NATIVE}
    entry = cc.router.route_of(joynr.pid)
    assert entry is not None and entry.address == WebSocketClientAddress(joynr.client_id)

    # a second connection claiming a live id is refused, in either dialect, whichever dialect
    # holds the id
    for victim in (joynr, native):
        for dialect in (JOYNR, NATIVE):
            before = cc.websocket.counters["id-in-use"]
            claimant = await RawClient.open(stack, cc.websocket_address.url, dialect=dialect,
                                            client_id=victim.client_id)
            assert await closed(claimant) == (1008, "client id in use")
            assert cc.websocket.counters["id-in-use"] == before + 1
            assert_logged(caplog, "refused", victim.client_id, "live connection")
    await assert_usable(joynr)
    await assert_usable(native)

    # once the connection is gone, its id may be taken again (and its routes are gone)
    client_id = joynr.client_id
    await joynr.ws.close()
    await eventually(lambda: client_id not in cc.websocket.clients, what="disconnected")
    assert not cc.router.has_route(joynr.pid)
    again = await RawClient.open(stack, cc.websocket_address.url, dialect=JOYNR,
                                 client_id=client_id)
    again.pid = joynr.pid
    await register(again)
    await assert_usable(again)
    assert_no_errors(caplog)


BAD_JOYNR_INITS: list[tuple[str, bytes | str, str]] = [
    ("not-json", JOYNR_INIT_PREFIX + b',"id":', "not a JSON object"),
    ("not-utf8", JOYNR_INIT_PREFIX + b',"id":"\xff\xfe"}', "not a JSON object"),
    ("no-id", JOYNR_INIT_PREFIX + b"}", "exactly the keys"),
    ("empty-id", JOYNR_INIT_PREFIX + b',"id":""}', "client id"),
    ("int-id", JOYNR_INIT_PREFIX + b',"id":7}', "client id"),
    ("too-long-id", JOYNR_INIT_PREFIX + b',"id":"' + b"c" * 257 + b'"}', "client id"),
    ("other-key", JOYNR_INIT_PREFIX + b',"id":"c1","admin":true}', "exactly the keys"),
    ("id-twice", JOYNR_INIT_PREFIX + b',"id":"c1","id":"c2"}', "appears twice"),
    ("type-twice", JOYNR_INIT_PREFIX + b',"id":"c1","_typeName":"x.Y"}', "appears twice"),
    ("too-large", JOYNR_INIT_PREFIX + b',"id":"c1","pad":"' + b"x" * 1000 + b'"}',
     "too large"),
    ("array", JOYNR_INIT_PREFIX + b',"id":"c1"}]', "not a JSON object"),
    # not joynr's exact prefix (whitespace, another key first): read as a native init
    ("whitespace", b'{ "_typeName": "joynr.system.RoutingTypes.WebSocketClientAddress", '
                   b'"id": "c1"}', "init frame"),
    ("id-first", b'{"id":"c1","_typeName":"joynr.system.RoutingTypes.WebSocketClientAddress"}',
     "init frame"),
    ("text", encode_joynr_init("c1").decode(), "binary init frame"),
]


@pytest.mark.parametrize(("frame", "fragment"), [(f, m) for _, f, m in BAD_JOYNR_INITS],
                         ids=[name for name, _, _ in BAD_JOYNR_INITS])
async def test_a_bad_joynr_init_is_refused(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture,
        frame: bytes | str, fragment: str) -> None:
    raw = await RawClient.open(stack, cc.websocket_address.url, dialect=JOYNR, init=False)
    await raw.send_frame(frame)
    code, reason = await closed(raw)
    assert code == 1008 and reason and fragment in reason, (code, reason)
    await eventually(lambda: cc.websocket.counters["bad-init"] == 1, what="bad-init counted")
    assert_logged(caplog, "refused", fragment)
    assert cc.websocket.clients == []


@pytest.mark.parametrize("reading", [True, False], ids=["client-reads", "client-reads-nothing"])
async def test_a_refused_joynr_init_closes_at_once_despite_smrf_frames_after_it(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture,
        reading: bool) -> None:
    # a joynr runtime writes its first requests right after its init frame, without waiting
    bound_s = 0.5 if reading else 2.0
    raw = await RawClient.open(stack, cc.websocket_address.url, dialect=JOYNR, init=False)
    loop = asyncio.get_running_loop()
    started = loop.time()
    if not reading:
        raw.ws.transport.pause_reading()
    await raw.send_frame(JOYNR_INIT_PREFIX + b',"id":"c1"')  # cut short
    for i in range(20):
        await raw.send_frame(smrf_frame(raw.pid, "someone", body=bytes([i]) * 1024))

    if not reading:  # the CC ends the connection although the client never answers its close
        here = raw.ws.local_address
        await eventually(lambda: all(c.remote_address != here
                                     for c in cc.websocket._connections),
                         bound_s, "the refused connection ended")
        raw.ws.transport.resume_reading()
    code, reason = await closed(raw, bound_s)
    assert code == 1008 and reason and "not a JSON object" in reason, (code, reason)
    assert loop.time() - started < bound_s
    assert cc.websocket.counters["bad-init"] == 1
    assert_logged(caplog, "refused", "not a JSON object")
    assert cc.websocket.clients == []


# ====================================================================== crossing dialects


async def test_a_request_crosses_from_joynr_to_native_and_its_reply_back(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture
) -> None:
    joynr = await registered(stack, cc, JOYNR)
    native = await registered(stack, cc, NATIVE)
    # a JSON body: the CC never reads bodies, whatever format they are in
    body = json.dumps({"_typeName": "joynr.Request", "requestReplyId": "r1",
                       "methodName": "echo", "paramDatatypes": ["String"],
                       "params": ["é"]}).encode()
    sent = Message(MessageType.REQUEST, joynr.pid, native.pid, now_ms() + 5000, body,
                   effort=Effort.BEST_EFFORT, custom_headers={"z4": "r1", "k": "v"})
    await joynr.send(sent)

    frame = await native.receive_frame()
    assert is_msgpack_map(frame)
    got = decode_frame(frame)
    assert got == sent  # every field, the body byte for byte

    answer = Message(MessageType.REPLY, native.pid, joynr.pid, now_ms() + 5000,
                     Reply("r1", ["ok"]).to_body(), custom_headers={"z4": "r1"})
    await native.send(answer)
    frame = await joynr.receive_frame()
    assert is_smrf(frame)
    assert smrf.decode(frame) == answer
    assert_no_errors(caplog)


async def test_a_request_crosses_from_native_to_joynr_and_its_reply_back(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture
) -> None:
    joynr = await registered(stack, cc, JOYNR)
    native = await registered(stack, cc, NATIVE)
    sent, rid = request(native.pid, joynr.pid, "echo", ["hi"], ["String"],
                        custom_headers={"k": "v"})
    await native.send(sent)

    frame = await joynr.receive_frame()
    assert is_smrf(frame)
    assert smrf.decode(frame) == sent

    # an answer signed and with a header the CC does not know: translated all the same
    answer = smrf_frame(joynr.pid, native.pid, message_type="rp",
                        headers=(("c-k", "v"), ("cr", "unknown")),
                        body=Reply(rid, ["ho"]).to_body(), custom_signature=b"owner")
    await joynr.send_frame(answer)
    frame = await native.receive_frame()
    assert is_msgpack_map(frame)
    got = decode_frame(frame)
    expected = smrf.decode(answer)
    assert got == dataclasses.replace(expected, custom_signature=None)  # native has no signature
    assert decode_payload(Reply, got.body).response == ["ho"]
    assert_no_errors(caplog)


async def test_a_joynr_client_calls_the_provider_of_a_native_runtime(
        stack: AsyncExitStack, cc: ClusterController) -> None:
    provider_rt = await connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(provider_rt.close)
    provider = RadioProvider()
    provider_pid = await asyncio.wait_for(provider_rt.register_provider("dialects", provider),
                                          WAIT_S)
    joynr = await registered(stack, cc, JOYNR)

    station = Station("from-joynr", Country.AUSTRIA, 88.8)
    sent, rid = request(joynr.pid, provider_pid, "add_favorite", [to_wire(station)],
                        RADIO.methods["add_favorite"].param_datatypes)
    await joynr.send(sent)
    message, reply = await reply_for(joynr, rid)
    assert (reply.error, reply.response) == (None, [True])
    assert message.sender == provider_pid
    assert "from-joynr" in [s.name for s in provider.stations]


async def test_smrf_frames_forwarded_unchanged_are_byte_identical(
        stack: AsyncExitStack, cc: ClusterController) -> None:
    one = await registered(stack, cc, JOYNR)
    two = await registered(stack, cc, JOYNR)
    frames = [
        # a header this project does not keep ("cr") and headers in joynr's order, not
        # sorted: re-encoding would change both
        encode_smrf(SmrfFrame(one.pid, two.pid, now_ms() + 5000, headers=(
            ("t", "o"), ("id", f"m-{uuid.uuid4().hex}"), ("cr", "creator"), ("c-k", "v")),
            body=b'{"x":1}', custom_signature=b"owner-one")),
        # a compressed body
        smrf_frame(one.pid, two.pid, body=b'{"big":"' + b"y" * 6000 + b'"}', compressed=True),
    ]
    for frame in frames:
        await one.send_frame(frame)
        assert await two.receive_frame() == frame
    # and the other way
    back = smrf_frame(two.pid, one.pid, headers=(("cr", "creator"),))
    await two.send_frame(back)
    assert await one.receive_frame() == back


# ====================================================================== hostile SMRF


def valid(raw: RawClient, recipient: str) -> bytes:
    return smrf_frame(raw.pid, recipient)


def patched(frame: bytes, at: int, data: bytes) -> bytes:
    return frame[:at] + data + frame[at + len(data):]


#: where the writer puts the Message table's flags (prefix 8 + table at 28 + field offset)
IS_SIGNED_AT = 8 + 28 + 29
IS_ENCRYPTED_AT = 8 + 28 + 30
IS_COMPRESSED_AT = 8 + 28 + 31

HOSTILE: list[tuple[str, Callable[[RawClient, str], bytes | str], str]] = [
    ("truncated", lambda raw, to: valid(raw, to)[:-5], "truncated"),
    ("shorter-than-prefix", lambda raw, to: b"\x01\x00\x00", "truncated"),
    ("trailing-bytes", lambda raw, to: valid(raw, to) + b"\x00\x00", "bad-size"),
    ("bad-root-offset", lambda raw, to: patched(valid(raw, to), 8, b"\xf0\xff\xff\x7f"),
     "bad-flatbuffer"),
    ("bad-vtable-offset", lambda raw, to: patched(valid(raw, to), 8 + 28, b"\x00\x00\x00\x40"),
     "bad-flatbuffer"),
    ("encrypted", lambda raw, to: patched(valid(raw, to), IS_ENCRYPTED_AT, b"\x01"),
     "encrypted"),
    ("signed", lambda raw, to: patched(valid(raw, to), IS_SIGNED_AT, b"\x01"), "signed"),
    ("text", lambda raw, to: "a text frame", "not-binary"),
    ("text-of-a-frame", lambda raw, to: valid(raw, to).decode("latin-1"), "not-binary"),
    ("oversized", lambda raw, to: smrf_frame(raw.pid, to, body=os.urandom(MAX_FRAME_BYTES)),
     "oversized"),
    ("unknown-version", lambda raw, to: patched(valid(raw, to), 0, b"\x02\x00"),
     "unknown-version"),
    ("no-t-header", lambda raw, to: encode_smrf(SmrfFrame(
        raw.pid, to, now_ms() + 5000, headers=(("id", "m-1"),))), "missing-field"),
    ("no-id-header", lambda raw, to: encode_smrf(SmrfFrame(
        raw.pid, to, now_ms() + 5000, headers=(("t", "o"),))), "missing-field"),
    ("unknown-type", lambda raw, to: smrf_frame(raw.pid, to, message_type="evil"),
     "unknown-type"),
    ("empty-recipient", lambda raw, to: smrf_frame(raw.pid, ""), "bad-field"),
    ("reply-to-not-json", lambda raw, to: smrf_frame(raw.pid, to, headers=(("re", "{"),)),
     "bad-reply-to"),
    ("reply-to-lone-surrogate", lambda raw, to: smrf_frame(raw.pid, to, headers=((
        "re", '{"_typeName":"joynr.system.RoutingTypes.MqttAddress","brokerUri":"b",'
              '"topic":"t\\ud800"}'),)), "bad-reply-to"),
    ("bad-compression", lambda raw, to: patched(valid(raw, to), IS_COMPRESSED_AT, b"\x01"),
     "bad-compression"),
    ("a-native-frame", lambda raw, to: encode_frame(Message(
        MessageType.ONE_WAY, raw.pid, to, now_ms() + 5000, b"\x80")), "unknown-version"),
    ("init-again", lambda raw, to: encode_joynr_init(raw.client_id), "unknown-version"),
]


@pytest.mark.parametrize(("make", "reason"), [(m, r) for _, m, r in HOSTILE],
                         ids=[name for name, _, _ in HOSTILE])
async def test_hostile_smrf_is_refused_counted_and_the_connection_stays_usable(
        *, stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture,
        make: Callable[[RawClient, str], bytes | str], reason: str) -> None:
    joynr = await registered(stack, cc, JOYNR)
    native = await registered(stack, cc, NATIVE)
    frame = make(joynr, native.pid)
    with pytest.raises(smrf.SmrfError) as refused:  # what the frame is, checked here first
        smrf.decode(frame, MAX_FRAME_BYTES)
    assert refused.value.reason == reason
    before = cc.websocket.counters.copy()

    await joynr.send_frame(frame)
    # frames of one connection are handled in order: once the next one is answered, the bad
    # one was refused; and the connection is still open
    await assert_usable(joynr)
    assert cc.websocket.counters - before == {reason: 1}
    assert_logged(caplog, "refused", joynr.client_id)
    await nothing_received(native)
    await assert_usable(native)
    assert_no_errors(caplog)


async def test_all_hostile_smrf_in_a_row_then_a_good_frame(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture
) -> None:
    joynr = await registered(stack, cc, JOYNR)
    native = await registered(stack, cc, NATIVE)
    before = cc.websocket.counters.copy()
    for _, make, _ in HOSTILE:
        await joynr.send_frame(make(joynr, native.pid))
    good = valid(joynr, native.pid)
    await joynr.send_frame(good)
    assert decode_frame(await native.receive_frame()) == smrf.decode(good)
    expected: dict[str, int] = {}
    for _, _, reason in HOSTILE:
        expected[reason] = expected.get(reason, 0) + 1
    assert cc.websocket.counters - before == expected
    await assert_usable(joynr)
    assert_no_errors(caplog)


async def test_an_expired_smrf_message_is_dropped_not_delivered(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture
) -> None:
    joynr = await registered(stack, cc, JOYNR)
    native = await registered(stack, cc, NATIVE)
    frame = smrf_frame(joynr.pid, native.pid, message_id="expired-smrf", expiry_ms=now_ms() - 1000)
    before = cc.telemetry.counters["dropped-expired"]

    await joynr.send_frame(frame)
    await assert_usable(joynr)
    assert cc.telemetry.counters["dropped-expired"] == before + 1
    assert_logged(caplog, "dropped", "expired-smrf", "expired", logger="pyjoynr.runtime.router")
    await nothing_received(native)


async def test_a_smrf_frame_on_a_native_connection_is_refused(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture
) -> None:
    native = await registered(stack, cc, NATIVE)
    other = await registered(stack, cc, NATIVE)
    before = cc.websocket.counters.copy()
    await native.send_frame(valid(native, other.pid))
    await assert_usable(native)
    assert cc.websocket.counters - before == {"not-msgpack": 1}
    assert_logged(caplog, "refused", native.client_id, "not valid msgpack")
    await nothing_received(other)


async def test_a_spoofed_sender_in_smrf_is_refused_as_in_native_frames(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture
) -> None:
    joynr = await registered(stack, cc, JOYNR)
    native = await registered(stack, cc, NATIVE)
    before = cc.websocket.counters.copy()
    # the sender is the native client's participant: the joynr client cannot speak for it
    await joynr.send_frame(smrf_frame(native.pid, joynr.pid, message_id="spoofed-smrf"))
    await assert_usable(joynr)
    assert cc.websocket.counters - before == {"spoofed-sender": 1}
    assert_logged(caplog, "refused", joynr.client_id, "spoofed-smrf")
    await nothing_received(joynr)


async def test_a_message_that_cannot_be_written_in_a_connections_dialect_is_dropped_alone(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture
) -> None:
    for dialect in (NATIVE, JOYNR):
        raw = await registered(stack, cc, dialect)
        # a lone surrogate in a header: no frame of either dialect can carry it
        bad = Message(MessageType.ONE_WAY, "someone", raw.pid, now_ms() + 5000, b"\x80",
                      custom_headers={"k": "\ud800"})
        good = dataclasses.replace(bad, id=f"good-{uuid.uuid4().hex}", custom_headers={})
        before = cc.websocket.counters["dropped-unencodable"]
        cc.router.route(bad)
        cc.router.route(good)
        assert (await raw.receive()).id == good.id
        assert cc.websocket.counters["dropped-unencodable"] == before + 1
        assert_logged(caplog, "dropped", raw.client_id, bad.id, "not written as a")
        await assert_usable(raw)


async def test_an_outbox_writes_its_dialect_and_counts_the_smrf_frames_it_holds() -> None:
    received: list[bytes] = []
    all_there = asyncio.Event()

    async def collect(ws: ServerConnection) -> None:
        async for frame in ws:
            assert isinstance(frame, bytes)
            received.append(frame)
            if len(received) == 3:
                all_there.set()

    async with websockets_serve(collect, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        connection = await open_client_connection(
            f"ws://127.0.0.1:{port}/", max_size=1 << 20, ping_interval_s=None,
            ping_timeout_s=WAIT_S, close_timeout_s=WAIT_S, open_timeout_s=WAIT_S,
            ssl_context=None)
        outbox = Outbox(connection, "test", max_messages=100, max_bytes=1 << 20,
                        encode=frame_encoder(JOYNR))
        forwarded = smrf_frame("s", "r", headers=(("cr", "kept"),), body=b"x" * 3000)
        messages = [Message(MessageType.ONE_WAY, "s", "r", now_ms() + 60_000, b"n" * 100),
                    smrf.decode(forwarded),
                    decode_frame(encode_frame(Message(MessageType.ONE_WAY, "s", "r",
                                                      now_ms() + 60_000, b"m" * 100)))]
        assert outbox.put(messages[0])  # the turn's first: written at once
        assert outbox.put(messages[1]) and outbox.put(messages[2])  # these wait for its end
        assert outbox.pending_bytes == held_bytes(messages[1]) + held_bytes(messages[2])
        assert outbox.pending_bytes > 2 * len(forwarded)  # the body and the frame kept
        async with asyncio.timeout(WAIT_S):
            await all_there.wait()
        assert outbox.pending_bytes == 0
        assert all(is_smrf(frame) for frame in received)
        assert received[1] == forwarded
        assert [smrf.decode(frame) for frame in received] == messages
        await connection.close()


# ====================================================================== wss and owner ids


@pytest.fixture
def tls(tmp_path: Path) -> Tls:
    return Tls(tmp_path / "tls")


async def test_on_wss_the_certificates_cn_is_the_owner_id_every_smrf_message_is_signed_with(
        stack: AsyncExitStack, tmp_path: Path, tls: Tls, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    cc = await start_cc(stack, tmp_path, **tls.cc_overrides())
    url = cc.websocket_address.url
    assert url.startswith("wss://")
    alice = await RawClient.open(stack, url, dialect=JOYNR, owner_id=Tls.OWNER,
                                 ssl_context=tls.client_context(tls.client_certificate))
    await register(alice)  # signed with the owner id: accepted
    native = await registered(stack, cc, NATIVE, ssl_context=tls.client_context())
    owners = {s.address.id: s.owner_id for s in cc.websocket.client_summaries()}
    assert owners == {alice.client_id: Tls.OWNER, native.client_id: None}

    for signature in (None, b"owner-mallory", b"owner-alice ", b""):
        before = cc.websocket.counters.copy()
        message_id = f"unsigned-{uuid.uuid4().hex[:6]}"
        await alice.send_frame(smrf_frame(alice.pid, native.pid, message_id=message_id,
                                          custom_signature=signature))
        await assert_usable(alice)
        assert cc.websocket.counters - before == {"bad-owner": 1}, signature
        if signature is None:  # (the log lines of one reason and client are rate-limited)
            assert_logged(caplog, "refused", alice.client_id, message_id, Tls.OWNER)
        await nothing_received(native)

    # signed right: routed, and forwarded with its signature
    signed = smrf_frame(alice.pid, native.pid, custom_signature=Tls.OWNER.encode())
    await alice.send_frame(signed)
    assert decode_frame(await native.receive_frame()).id == smrf.decode(signed).id
    bob = await registered(stack, cc, JOYNR, ssl_context=tls.client_context())  # no owner id
    await bob.send_frame(smrf_frame(bob.pid, alice.pid))  # not signed: accepted from bob
    await alice.receive()
    to_bob = smrf_frame(alice.pid, bob.pid, custom_signature=Tls.OWNER.encode())
    await alice.send_frame(to_bob)
    assert await bob.receive_frame() == to_bob
    assert smrf.decode(to_bob).custom_signature == Tls.OWNER.encode()

    # native frames carry no signature: a native connection with a certificate is not
    # checked (its owner id is known all the same)
    carol = await registered(stack, cc, NATIVE,
                             ssl_context=tls.client_context(tls.client_certificate))
    await assert_usable(carol)
    assert_no_errors(caplog)


async def test_a_client_certificate_the_ca_did_not_sign_is_refused(
        stack: AsyncExitStack, tmp_path: Path, tls: Tls) -> None:
    cc = await start_cc(stack, tmp_path, **tls.cc_overrides())
    stranger_ca = certificate_authority(tmp_path / "stranger-ca")
    stranger = client_certificate(stranger_ca, tmp_path / "stranger", f"/CN={Tls.OWNER}")
    with pytest.raises((InvalidHandshake, OSError)):  # (ssl.SSLError is an OSError)
        raw = await RawClient.open(stack, cc.websocket_address.url, dialect=JOYNR,
                                   ssl_context=tls.client_context(stranger))
        await raw.receive(1.0)  # (TLS 1.3: the client learns of the refusal on reading)
    assert cc.websocket.clients == []


async def test_a_certificate_without_a_common_name_is_refused(
        stack: AsyncExitStack, tmp_path: Path, tls: Tls, caplog: pytest.LogCaptureFixture
) -> None:
    cc = await start_cc(stack, tmp_path, **tls.cc_overrides())
    nameless = client_certificate(tls.ca, tmp_path / "nameless", "/O=no common name")
    # refused at once, before its init frame
    raw = await RawClient.open(stack, cc.websocket_address.url, dialect=JOYNR, init=False,
                               ssl_context=tls.client_context(nameless))
    code, reason = await closed(raw)
    assert code == 1008 and reason and "common name" in reason, (code, reason)
    assert cc.websocket.counters["bad-certificate"] == 1
    assert cc.websocket.clients == []


async def test_a_required_client_certificate_keeps_clients_without_one_out(
        stack: AsyncExitStack, tmp_path: Path, tls: Tls) -> None:
    cc = await start_cc(stack, tmp_path, **tls.cc_overrides(
        websocket__tls_require_client_certificate="true"))
    with pytest.raises((InvalidHandshake, OSError)):  # (ssl.SSLError is an OSError)
        raw = await RawClient.open(stack, cc.websocket_address.url, dialect=JOYNR,
                                   ssl_context=tls.client_context())
        await raw.receive(1.0)  # (TLS 1.3: the client learns of the refusal on reading)
    alice = await registered(stack, cc, JOYNR, owner_id=Tls.OWNER,
                             ssl_context=tls.client_context(tls.client_certificate))
    await assert_usable(alice)


# ====================================================================== the client side


async def test_libjoynr_runtimes_of_both_dialects_call_each_other(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture
) -> None:
    url = cc.websocket_address.url
    runtimes = {}
    for dialect in (NATIVE, JOYNR):
        config = LibjoynrConfig(websocket=WebSocketClientSettings(dialect=dialect))
        runtime = await connect(url, config=config, timeout_ms=int(WAIT_S * 1000))
        stack.push_async_callback(runtime.close)
        runtimes[dialect] = runtime
    dialects = {s.address.id: s.dialect for s in cc.websocket.client_summaries()}
    assert dialects == {runtimes[NATIVE].client_id: NATIVE, runtimes[JOYNR].client_id: JOYNR}

    for provider_dialect, consumer_dialect in ((JOYNR, NATIVE), (NATIVE, JOYNR)):
        domain = f"dialects-{provider_dialect}"
        provider = RadioProvider()
        await asyncio.wait_for(runtimes[provider_dialect].register_provider(domain, provider),
                               WAIT_S)
        proxy = await asyncio.wait_for(
            runtimes[consumer_dialect].build_proxy(Radio, domain, ttl_ms=3000), WAIT_S)
        name = f"station-{consumer_dialect}"
        assert await asyncio.wait_for(
            proxy.add_favorite(Station(name, Country.AUSTRIA, 99.9)), WAIT_S) is True
        assert name in [s.name for s in provider.stations]
        assert await asyncio.wait_for(proxy.current_station.get(), WAIT_S) == "FM4"
    assert runtimes[JOYNR].core.transport.counters == {}
    assert_no_errors(caplog)


async def test_a_libjoynr_runtime_signs_its_smrf_frames_with_its_owner_id(
        stack: AsyncExitStack, tmp_path: Path, tls: Tls, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    cc = await start_cc(stack, tmp_path, **tls.cc_overrides(
        websocket__tls_require_client_certificate="true"))
    settings = WebSocketClientSettings(
        dialect=JOYNR, owner_id=Tls.OWNER, tls_ca_file=str(tls.server_cert),
        tls_certificate=str(tls.client_cert), tls_private_key=str(tls.client_key))
    provider_rt = await connect(cc.websocket_address, timeout_ms=int(WAIT_S * 1000),
                                config=LibjoynrConfig(websocket=settings))
    stack.push_async_callback(provider_rt.close)
    consumer_rt = await connect(cc.websocket_address, timeout_ms=int(WAIT_S * 1000),
                                config=LibjoynrConfig(websocket=settings))
    stack.push_async_callback(consumer_rt.close)
    provider = RadioProvider()
    await asyncio.wait_for(provider_rt.register_provider("owned", provider), WAIT_S)
    proxy = await asyncio.wait_for(consumer_rt.build_proxy(Radio, "owned", ttl_ms=3000), WAIT_S)
    assert await asyncio.wait_for(proxy.current_station.get(), WAIT_S) == "FM4"
    owners = {s.owner_id for s in cc.websocket.client_summaries()}
    assert owners == {Tls.OWNER}
    assert cc.websocket.counters["bad-owner"] == 0
    assert_no_errors(caplog)


def test_client_settings_check_the_dialect_and_the_owner_id() -> None:
    with pytest.raises(ValueError, match="dialect"):
        WebSocketClientSettings(dialect="smrf")
    with pytest.raises(ValueError, match="joynr dialect"):
        WebSocketClientSettings(owner_id="alice")
    with pytest.raises(ValueError, match="go together"):
        WebSocketClientSettings(tls_certificate="c.pem")
    assert WebSocketClientSettings(dialect=JOYNR, owner_id="alice").owner_id == "alice"

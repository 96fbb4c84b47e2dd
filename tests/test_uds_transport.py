"""The cluster controller's Unix domain socket server, against a real CC on a socket in a
temporary directory: joynr's JavaScript runtime's UDS client frame by frame
(tests.support.joynr_js_uds), this project's runtimes over UDS and websocket both ways, hostile
input (each malformed kind counted, logged rate-limited, the connection closed as joynr's server
closes it or the frame refused alone, others unaffected), joynr's routing precedence of a
UdsClientAddress, the README's example over UDS, and the socket file's lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import socket
import stat
import struct
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.libjoynr import LibjoynrConfig, LibjoynrRuntime, connect
from pyjoynr.runtime.addresses import (
    InProcessAddress,
    MqttAddress,
    UdsAddress,
    UdsClientAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.routing import PutResult, RoutingTable, RuntimeKind
from pyjoynr.runtime.smrf import SmrfFrame, encode_smrf
from pyjoynr.testing.cluster import ClusterController, cc_config, eventually
from pyjoynr.transports.uds.settings import UdsClientSettings
from tests.support.joynr_js import JoynrJsClient
from tests.support.joynr_js_uds import (
    INIT_COOKIE,
    UDS_CLIENT_ADDRESS,
    JoynrJsUdsClient,
    UdsLink,
    uds_frame,
)
from tests.support.radio import Country, Radio, RadioProvider, Station
from tests.test_readme_example import readme_example

pytestmark = pytest.mark.network

SERVER_LOG = "pyjoynr.transports.uds.server"


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    # short: a socket path holds at most 107 bytes (pytest's tmp_path can be longer)
    path = Path(tempfile.mkdtemp(prefix="uds-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def uds_config(data_dir: Path, sock: Path, **overrides: Any) -> Any:
    return cc_config(data_dir, uds__enabled="true", uds__path=str(sock), **overrides)


@pytest.fixture
async def ucc(tmp_path: Path, sock_dir: Path) -> AsyncIterator[ClusterController]:
    async with ClusterController(uds_config(tmp_path, sock_dir / "cc.sock")) as controller:
        yield controller


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


def url(cc: ClusterController) -> str:
    assert cc.uds is not None
    return cc.uds.address.url


async def runtime(stack: AsyncExitStack, target: str, **options: Any) -> LibjoynrRuntime:
    return await stack.enter_async_context(connect(target, **options))


async def radio_pair(stack: AsyncExitStack, cc: ClusterController, domain: str
                     ) -> tuple[LibjoynrRuntime, Any]:
    """A Radio provider over UDS and a proxy for it over websocket."""
    provider = await runtime(stack, url(cc))
    await provider.register_provider(domain, RadioProvider())
    consumer = await runtime(stack, cc.websocket_address.url)
    return provider, await consumer.build_proxy(Radio, domain, ttl_ms=5_000)


def counted(cc: ClusterController, reason: str) -> int:
    assert cc.uds is not None
    return cc.uds.counters[reason]


# ---------------------------------------------------------------------- joynr's JavaScript client

async def test_js_uds_client_start_sequence_and_calls_both_ways(ucc, stack):
    client = await JoynrJsUdsClient.open(stack, url(ucc))
    assert client.reply_to == ""  # (no MQTT: the CC has no global address)
    assert ucc.uds is not None and ucc.uds.clients == [client.client_id]
    address = UdsClientAddress(client.client_id)
    assert ucc.router.route_of(client.routing_proxy).address == address
    assert ucc.router.route_of(client.discovery_proxy).address == address

    # a JS provider over UDS, called by this project's runtime over websocket
    async def radio(method: str, datatypes: list[str], params: list[Any]) -> list[Any]:
        return ["JS FM"] if method == "getCurrentStation" else [True]

    pid = await client.register_provider("uds-js", "test/Radio", (1, 2), radio)
    assert ucc.router.route_of(pid).address == address
    consumer = await runtime(stack, ucc.websocket_address.url)
    proxy = await consumer.build_proxy(Radio, "uds-js", ttl_ms=5_000)
    assert await proxy.current_station.get() == "JS FM"

    # a provider of this project's runtime over UDS, called by the JS client's proxy
    provider = await runtime(stack, url(ucc))
    await provider.register_provider("uds-py", RadioProvider())
    js_proxy = await client.proxy("uds-py", "test/Radio", (1, 2))
    assert await js_proxy.get("currentStation") == "FM4"
    assert ucc.uds.counters == {}


async def test_js_client_and_websocket_js_client_share_one_cc(ucc, stack):
    over_uds = await JoynrJsUdsClient.open(stack, url(ucc))
    over_ws = await JoynrJsClient.open(stack, ucc.websocket_address.url)

    async def echo(method: str, datatypes: list[str], params: list[Any]) -> list[Any]:
        return ["from uds"]

    await over_uds.register_provider("mixed", "test/Radio", (1, 2), echo)
    js_proxy = await over_ws.proxy("mixed", "test/Radio", (1, 2))
    assert await js_proxy.get("currentStation") == "from uds"


# ---------------------------------------------------------------------- this project's runtimes

@pytest.mark.parametrize("dialect", ["native", "joynr"])
async def test_runtimes_over_uds_and_websocket_call_each_other(ucc, stack, dialect):
    config = LibjoynrConfig(dialect=dialect, uds=UdsClientSettings(dialect=dialect))
    provider = await runtime(stack, url(ucc), config=config)
    await provider.register_provider("both", RadioProvider())
    over_ws = await runtime(stack, ucc.websocket_address.url)
    proxy = await over_ws.build_proxy(Radio, "both", ttl_ms=5_000)
    assert await proxy.add_favorite(Station("x", Country.AUSTRIA)) is True
    assert await proxy.current_station.get() == "FM4"
    # and the other way: a websocket provider, a UDS proxy
    await over_ws.register_provider("back", RadioProvider())
    over_uds = await runtime(stack, url(ucc), config=config)
    back = await over_uds.build_proxy(Radio, "back", ttl_ms=5_000)
    assert await back.current_station.get() == "FM4"
    assert ucc.uds is not None
    assert {s.dialect for s in ucc.uds.client_summaries()} == {dialect}
    assert ucc.uds.counters == {}


async def test_the_readme_example_runs_over_uds(ucc):
    source = readme_example()
    assert 'connect("ws://127.0.0.1:4242/")' in source
    source = source.replace("ws://127.0.0.1:4242/", url(ucc)).replace("asyncio.run(main())", "")
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(source, "README.md", "exec"), namespace)
    import io  # noqa: PLC0415
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        await asyncio.wait_for(namespace["main"](), 30)  # type: ignore[operator]
    assert out.getvalue() == "True FM4\n"


def test_connect_reads_a_unix_url() -> None:
    assert connect("unix:///run/cc.sock").address == UdsAddress("/run/cc.sock")
    for bad in ("unix://host/run/cc.sock", "unix:relative.sock", "unix:///a?b"):
        with pytest.raises(ValueError):
            connect(bad)


async def test_a_runtime_reconnects_after_the_cc_restarts(tmp_path, sock_dir, stack):
    sock = sock_dir / "cc.sock"
    async with ClusterController(uds_config(tmp_path, sock)) as cc:
        consumer = await runtime(stack, f"unix://{sock}")
        await consumer.register_provider("again", RadioProvider())
    assert not sock.exists()
    async with ClusterController(uds_config(tmp_path, sock)) as cc:
        assert cc.uds is not None
        await eventually(cc.discovery.entries, 15, "the provider registered again")
        other = await runtime(stack, cc.websocket_address.url)
        proxy = await other.build_proxy(Radio, "again", ttl_ms=5_000)
        assert await proxy.current_station.get() == "FM4"


# ---------------------------------------------------------------------- routing precedence

def test_uds_client_addresses_rank_as_websocket_clients() -> None:
    table = RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)
    uds, ws = UdsClientAddress("a"), WebSocketClientAddress("a")
    mqtt = MqttAddress("gbid", "joynr/cc/x")

    def put(t: RoutingTable, pid: str, address: Any) -> PutResult:
        return t.put(pid, address, is_globally_visible=False, expiry_date_ms=1)

    assert put(table, "p", mqtt) is PutResult.CREATED
    assert put(table, "p", uds) is PutResult.REPLACED  # UdsClient > Mqtt
    assert put(table, "p", mqtt) is PutResult.REJECTED_PRECEDENCE
    assert put(table, "p", ws) is PutResult.REPLACED  # UdsClient = WebSocketClient
    assert put(table, "p", uds) is PutResult.REPLACED
    assert put(table, "p", InProcessAddress(object())) is PutResult.REPLACED  # InProcess wins
    assert put(table, "p", uds) is PutResult.REJECTED_PRECEDENCE
    assert put(table, "q", UdsAddress("/x")) is PutResult.REJECTED_INVALID
    libjoynr = RoutingTable(RuntimeKind.LIBJOYNR)
    assert put(libjoynr, "q", UdsAddress("/x")) is PutResult.CREATED
    # Uds = WebSocket
    assert put(libjoynr, "q", WebSocketAddress("ws", "h", 1)) is PutResult.REPLACED
    assert put(libjoynr, "r", uds) is PutResult.REJECTED_INVALID


async def test_a_participant_of_a_live_uds_connection_cannot_be_claimed(ucc, stack):
    owner = await JoynrJsUdsClient.open(stack, url(ucc))
    thief = await JoynrJsUdsClient.open(stack, url(ucc))
    from tests.support.joynr_js import JoynrCallError  # noqa: PLC0415
    with pytest.raises(JoynrCallError):
        await thief.add_next_hop(owner.discovery_proxy, False)
    assert ucc.router.route_of(owner.discovery_proxy).address == UdsClientAddress(owner.client_id)
    # a UDS caller may not register another connection's address either
    with pytest.raises(JoynrCallError):
        await thief.call("CC.RoutingProvider.ParticipantId", "addNextHop",
                         ["String", UDS_CLIENT_ADDRESS, "Boolean"],
                         ["x", {"_typeName": UDS_CLIENT_ADDRESS, "id": owner.client_id}, False],
                         sender=thief.routing_proxy, ttl_ms=5_000)


# ---------------------------------------------------------------------- hostile input

async def raw(cc: ClusterController) -> UdsLink:
    assert cc.uds is not None
    return await UdsLink.open(cc.uds.settings.path)


def js_init(client_id: str) -> bytes:
    return uds_frame(('{"_typeName":"' + UDS_CLIENT_ADDRESS + '","id":"' + client_id
                      + '"}').encode(), INIT_COOKIE)


@pytest.mark.parametrize(("data", "reason"), [
    (b"MJX1\x00\x00\x00\x01x", "bad-cookie"),                       # no cookie of joynr's
    (uds_frame(b"x"), "bad-cookie"),                                 # a message before init
    (b"MJI1" + struct.pack(">I", 2**31), "bad-init"),                 # an init of 2 GiB
    (uds_frame(b'{"_typeName":"joynr.system.RoutingTypes.WebSocketClientAddress","id":"a"}',
               INIT_COOKIE), "bad-init"),                             # not a UdsClientAddress
    (uds_frame(b"\xff" * 40, INIT_COOKIE), "bad-init"),                # neither dialect
    (b"MJI1\x00\x00\x01\x00" + b"{", "truncated-frame"),              # ends mid-frame
])
async def test_a_malformed_start_is_counted_logged_and_closed(ucc, stack, caplog, data, reason):
    caplog.set_level(logging.INFO)
    _provider, proxy = await radio_pair(stack, ucc, "hostile-start")
    link = await raw(ucc)
    await link.send_raw(data)
    if reason == "truncated-frame":
        link.writer.write_eof()
    assert await link.closed_by_peer()
    await eventually(lambda: counted(ucc, reason) == 1, 5, f"{reason} counted")
    assert any(reason in r.getMessage() and "refused" in r.getMessage()
               for r in caplog.records if r.name == SERVER_LOG)
    assert await proxy.current_station.get() == "FM4"  # the others go on


@pytest.mark.parametrize(("data", "reason"), [
    (b"MJX1\x00\x00\x00\x01x", "bad-cookie"),
    (js_init("again"), "bad-cookie"),                                  # a second init frame
    (b"MJM1" + struct.pack(">I", 2**31), "oversized-closed"),
])
async def test_a_malformed_frame_after_init_closes_that_connection_only(ucc, stack, data, reason):
    _provider, proxy = await radio_pair(stack, ucc, "hostile-frame")
    link = await raw(ucc)
    await link.send_raw(js_init("attacker"))
    await eventually(lambda: "attacker" in ucc.uds.clients, 5, "the attacker connected")
    await link.send_raw(data)
    assert await link.closed_by_peer()
    await eventually(lambda: "attacker" not in ucc.uds.clients, 5, "the attacker gone")
    assert counted(ucc, reason) == 1
    assert await proxy.current_station.get() == "FM4"


async def test_an_undecodable_message_is_refused_alone_and_the_connection_goes_on(ucc, stack,
                                                                                 caplog):
    caplog.set_level(logging.INFO)
    client = await JoynrJsUdsClient.open(stack, url(ucc))
    for _ in range(50):  # a flood: counted each, logged rate-limited
        await client.link.send(b"\x02" + b"\x00" * 40)  # an SMRF version joynr does not have
    await client.link.send(b"\x01\x00")  # version 1, cut short
    await eventually(lambda: counted(ucc, "truncated") == 1, 5, "counted")
    assert counted(ucc, "unknown-version") == 50
    lines = [r for r in caplog.records if r.name == SERVER_LOG
             and "unknown-version" in r.getMessage()]
    assert 1 <= len(lines) < 50
    # still served: a call over the same connection is answered
    assert await client.resolve_next_hop(client.routing_proxy) is True
    assert client.client_id in ucc.uds.clients


async def test_expired_and_spoofed_messages_are_refused_and_counted(ucc, stack):
    client = await JoynrJsUdsClient.open(stack, url(ucc))
    body = json.dumps({"_typeName": "joynr.Request", "methodName": "resolveNextHop",
                       "paramDatatypes": ["String"], "params": ["x"],
                       "requestReplyId": "r1"}).encode()

    def smrf(sender: str, expiry_ms: int) -> bytes:
        return encode_smrf(SmrfFrame(sender=sender, recipient="CC.RoutingProvider.ParticipantId",
                                     ttl_ms=expiry_ms, ttl_absolute=True,
                                     headers=(("t", "rq"), ("id", "m1")), body=body))

    await client.link.send(smrf(client.routing_proxy, 1))  # expired long ago
    await client.link.send(smrf("someone-else", 2**62))      # a sender of another connection
    other = await JoynrJsUdsClient.open(stack, url(ucc))
    await client.link.send(smrf(other.routing_proxy, 2**62))
    await eventually(lambda: counted(ucc, "spoofed-sender") == 1, 5, "the spoof counted")
    await eventually(lambda: ucc.telemetry.counters["dropped-expired"] == 1, 5, "expiry counted")
    assert client.client_id in ucc.uds.clients


async def test_a_second_connection_with_a_live_id_is_refused_and_a_reconnect_accepted(ucc, stack):
    first = await raw(ucc)
    await first.send_raw(js_init("same"))
    await eventually(lambda: "same" in ucc.uds.clients, 5, "connected")
    second = await raw(ucc)
    await second.send_raw(js_init("same") + uds_frame(b"early"))
    assert await second.closed_by_peer()
    assert counted(ucc, "id-in-use") == 1 and counted(ucc, "dropped-unaccepted") == 1
    await first.close()
    await eventually(lambda: "same" not in ucc.uds.clients, 5, "the first gone")
    third = await raw(ucc)
    await third.send_raw(js_init("same"))
    await eventually(lambda: "same" in ucc.uds.clients, 5, "the id taken again")
    await third.close()


async def test_a_silent_connection_is_closed_after_the_init_timeout(tmp_path, sock_dir):
    config = uds_config(tmp_path, sock_dir / "cc.sock", uds__init_timeout_s="0.2")
    async with ClusterController(config) as cc:
        link = await raw(cc)
        assert await link.closed_by_peer()
        assert counted(cc, "init-timeout") == 1


async def test_a_slow_reader_holds_no_more_than_its_outbox_bounds(tmp_path, sock_dir, stack):
    config = uds_config(tmp_path, sock_dir / "cc.sock",
                        uds__max_queued_bytes_per_connection="65536")
    async with ClusterController(config) as cc:
        reader = await JoynrJsUdsClient.open(stack, url(cc))
        reader._reader.cancel()  # reads nothing from now on
        sender = await runtime(stack, cc.websocket_address.url)
        big = "x" * 32_768
        assert cc.uds is not None
        for i in range(400):  # ~13 MB towards a client that reads nothing
            message = encode_smrf(SmrfFrame(
                sender=reader.routing_proxy, recipient=reader.discovery_proxy,
                ttl_ms=2**62, ttl_absolute=True, headers=(("t", "oneWay"), ("id", f"m{i}")),
                body=big.encode()))
            await reader.link.send(message)  # it sends to itself through the CC
        await asyncio.sleep(0.5)
        assert cc.uds.pending_bytes_to(reader.client_id) <= 65_536 + 40_000
        assert sender is not None


# ---------------------------------------------------------------------- the socket file

async def test_the_socket_file_is_made_with_its_permissions_and_removed_on_stop(tmp_path,
                                                                               sock_dir):
    sock = sock_dir / "cc.sock"
    async with ClusterController(uds_config(tmp_path, sock, uds__permissions=str(0o600))):
        mode = os.lstat(sock).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    assert not sock.exists()


async def test_a_stale_socket_file_is_replaced_and_a_live_one_refused(tmp_path, sock_dir):
    sock = sock_dir / "cc.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(sock))
    stale.close()  # a file no process listens on: a CC that died left it
    assert sock.exists()
    async with ClusterController(uds_config(tmp_path, sock)) as cc:
        assert cc.uds is not None and cc.uds.listening
        second = ClusterController(uds_config(tmp_path / "2", sock))
        with pytest.raises(OSError, match="another process serves"):
            await second.start()
        await second.stop()
        assert sock.exists()  # still the first one's
        link = await raw(cc)
        await link.send_raw(js_init("still-served"))
        await eventually(lambda: "still-served" in cc.uds.clients, 5, "served")
        await link.close()
    assert not sock.exists()


async def test_a_file_that_is_no_socket_is_not_replaced(tmp_path, sock_dir):
    path = sock_dir / "cc.sock"
    path.write_text("important")
    cc = ClusterController(uds_config(tmp_path, path))
    with pytest.raises(OSError, match="not a socket"):
        await cc.start()
    await cc.stop()
    assert path.read_text() == "important"


async def test_peers_outside_allowed_uids_are_refused(tmp_path, sock_dir):
    config = uds_config(tmp_path, sock_dir / "cc.sock",
                        uds__allowed_uids=f"[{os.getuid() + 1}]")
    async with ClusterController(config) as cc:
        link = await raw(cc)
        await link.send_raw(js_init("outsider"))
        assert await link.closed_by_peer()
        assert counted(cc, "bad-peer") == 1


async def test_the_owner_id_is_the_peers_user_and_metrics_show_uds_clients(ucc, stack):
    client = await JoynrJsUdsClient.open(stack, url(ucc))
    assert ucc.uds is not None
    (summary,) = ucc.uds.client_summaries()
    import pwd  # noqa: PLC0415
    assert summary.owner_id == pwd.getpwuid(os.getuid()).pw_name
    assert summary.address == UdsClientAddress(client.client_id)
    samples = {(m.name, tuple(s.labels.values())): s.value
               for m in ucc.ops._metrics() for s in m.samples}
    assert samples[("joynr_cc_uds_clients", ())] == 1
    assert samples[("joynr_cc_uds_clients_by_dialect", ("joynr",))] == 1
    assert samples[("joynr_cc_uds_connection_events", ("connected",))] == 1
    status = json.dumps(await ucc.ops.status())
    assert client.client_id in status and summary.owner_id in status
    assert [c.name for c in await ucc.ops.ready() if c.name == "uds" and c.ok] == ["uds"]

def test_served_and_connected_under_uvloop(tmp_path, sock_dir):
    # the programs run on uvloop, whose transports are not asyncio's classes
    import uvloop  # noqa: PLC0415

    async def scenario() -> str:
        async with ClusterController(uds_config(tmp_path, sock_dir / "cc.sock")) as cc, \
                AsyncExitStack() as stack:
            provider = await runtime(stack, url(cc))
            await provider.register_provider("uv", RadioProvider())
            consumer = await runtime(stack, url(cc))
            proxy = await consumer.build_proxy(Radio, "uv", ttl_ms=5_000)
            assert cc.uds is not None and cc.uds.counters == {}
            assert all(s.owner_id for s in cc.uds.client_summaries())  # SO_PEERCRED read
            return str(await proxy.current_station.get())

    assert uvloop.run(scenario()) == "FM4"

"""Access control in a running cluster controller, on real wss connections with client
certificates (the certificate's CN is the uid of a connection), in both dialects: who may
register which provider, who may call which operation, the refusal reaching the caller as
joynr's exception types; audit mode; hot reload of the provisioning directory; the uids of
connections without a certificate (websocket paths, Unix peers); a bad provisioning file.

The table of decisions here shows each rule on real connections; every row of joynr's own
decision tables is in tests/unit/test_access_control_*.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import os
import pwd
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.config import ClusterControllerConfig
from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import LibjoynrConfig, ProviderQos, ProviderScope, connect
from pyjoynr.libjoynr.advanced import ProviderRuntimeError
from pyjoynr.programming.access_control import (
    MasterAccessControlEntry,
    OwnerAccessControlEntry,
    Permission,
    TrustLevel,
    build_access_control_list_editor_proxy,
)
from pyjoynr.programming.system_interfaces import SYSTEM_SERVICES_DOMAIN
from pyjoynr.runtime.config import ConfigError
from pyjoynr.runtime.errors import SubscriptionError
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import eventually
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE, WebSocketClientSettings
from tests.support.acl import domain_role, master_ace, master_rce, owner_ace, write_tables
from tests.support.admin import http_get, scrape
from tests.support.audit import read_audit
from tests.support.mqtt_cluster import GBID, mqtt_cc_config, write_provisioning
from tests.support.radio import Country, Radio, RadioProvider, Station
from tests.support.tls import Tls, client_certificate

WAIT_S = 10.0
INTERFACE = "test/Radio"
EDITOR_INTERFACE = "infrastructure/AccessControlListEditor"
#: the users of the table below (each a client certificate); "" is a connection without one
USERS = ("alice", "bob", "carol", "erin", "frank", "grace", "mallory")
DOMAINS = ("radio.fm", "radio.am", "radio.public")


def provisioning() -> dict[str, list[dict[str, Any]]]:
    """The entries the table below is decided by (joynr's provisioning format)."""
    return {
        "masterRegistrationTable": [master_rce("alice", "radio.*", INTERFACE)],
        "masterAccessTable": [
            # everyone else: no, on every radio domain (but may be overridden: NO, YES, ASK
            # are possible)
            master_ace("*", "radio.*", INTERFACE, permission="NO"),
            # bob: every operation, on every radio domain (a domain prefix wildcard)
            master_ace("bob", "radio.*", INTERFACE),
            # carol: one operation only
            master_ace("carol", "radio.fm", INTERFACE, "favorites"),
            # anyone: every interface under test/ on radio.public (an interface wildcard)
            master_ace("*", "radio.public", "test/*"),
            # grace's master allows only NO: her mediator (YES) is invalid
            master_ace("grace", "radio.fm", INTERFACE, permission="NO", possible=["NO"]),
        ],
        "mediatorAccessTable": [
            master_ace("frank", "radio.fm", INTERFACE, possible=["YES"]),
            master_ace("grace", "radio.fm", INTERFACE, possible=["YES"]),
        ],
        "ownerAccessTable": [
            # bob may not add favorites on radio.fm (the owner overrides the master)
            owner_ace("bob", "radio.fm", INTERFACE, "addFavorite", "NO"),
            # erin may call everything on radio.fm (within the master's possible permissions)
            owner_ace("erin", "radio.fm", INTERFACE),
        ],
    }


#: (uid, domain, call) -> allowed, and the rule that decides
TABLE: list[tuple[str, str, str, bool, str]] = [
    ("bob", "radio.fm", "favorites", True, "uid-specific master entry, domain wildcard"),
    ("bob", "radio.fm", "add_favorite", False, "owner entry for the operation overrides"),
    ("bob", "radio.am", "add_favorite", True, "the owner entry is for radio.fm only"),
    ("carol", "radio.fm", "favorites", True, "operation-level master entry"),
    ("carol", "radio.fm", "add_favorite", False, "no entry for the operation: '*' uid, NO"),
    ("carol", "radio.am", "favorites", False, "'*' uid, domain wildcard, NO"),
    ("mallory", "radio.fm", "favorites", False, "'*' uid, NO"),
    ("mallory", "radio.public", "favorites", True, "'*' uid, interface wildcard test/*"),
    ("erin", "radio.fm", "add_favorite", True, "owner YES overrides master NO"),
    ("frank", "radio.fm", "favorites", True, "mediator within the master"),
    ("grace", "radio.fm", "favorites", False, "mediator outside the master: invalid, NO"),
    ("", "radio.public", "favorites", True, "no certificate: uid '', '*' entries apply"),
    ("", "radio.fm", "favorites", False, "no certificate: uid '', NO"),
]


class Users:
    """A CA, the CC's certificate, and a client certificate for each user."""

    def __init__(self, directory: Path) -> None:
        self.tls = Tls(directory)
        self.certificates = {uid: client_certificate(self.tls.ca, directory / uid, f"/CN={uid}")
                             for uid in USERS}

    def config(self, uid: str, dialect: str) -> LibjoynrConfig:
        cert = self.certificates.get(uid)
        websocket = WebSocketClientSettings(
            dialect=dialect, owner_id=uid if cert is not None and dialect == JOYNR else "",
            tls_ca_file=str(self.tls.server_cert),
            tls_certificate="" if cert is None else str(cert[0]),
            tls_private_key="" if cert is None else str(cert[1]))
        return LibjoynrConfig(dialect=dialect, websocket=websocket)


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> Users:
    return Users(tmp_path_factory.mktemp("acl-tls"))


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as stack:
        yield stack


def cc_config(data_dir: Path, users: Users, acl_dir: Path, **more: str
              ) -> ClusterControllerConfig:
    env = {
        "JOYNR_CC__WEBSOCKET__PORT": "0",
        "JOYNR_CC__ADMIN__PORT": "0",
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(data_dir),
        "JOYNR_CC__WEBSOCKET__TLS_CERTIFICATE": str(users.tls.server_cert),
        "JOYNR_CC__WEBSOCKET__TLS_PRIVATE_KEY": str(users.tls.server_key),
        "JOYNR_CC__WEBSOCKET__TLS_CLIENT_CA_FILE": str(users.tls.ca[0]),
        "JOYNR_CC__ACCESS_CONTROL__ENABLED": "true",
        "JOYNR_CC__ACCESS_CONTROL__ENTRIES_DIRECTORY": str(acl_dir),
        "JOYNR_CC__ACCESS_CONTROL__RELOAD_INTERVAL_MS": "100",
    }
    env.update({f"JOYNR_CC__{k.upper()}": v for k, v in more.items()})
    return ClusterControllerConfig.load(None, env=env)


async def start(stack: AsyncExitStack, tmp_path: Path, users: Users, **more: str
                ) -> ClusterController:
    acl_dir = tmp_path / "acl"
    if not acl_dir.exists():
        write_tables(acl_dir / "10-radio.json", **provisioning())
    return await stack.enter_async_context(
        ClusterController(cc_config(tmp_path / "cc", users, acl_dir, **more)))


async def runtime(stack: AsyncExitStack, cc: ClusterController, users: Users, uid: str,
                  dialect: str = NATIVE) -> Any:
    rt = await connect(cc.websocket_address, config=users.config(uid, dialect),
                       timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(rt.close)
    return rt


async def register_radios(stack: AsyncExitStack, cc: ClusterController, users: Users,
                          dialect: str = NATIVE) -> dict[str, RadioProvider]:
    alice = await runtime(stack, cc, users, "alice", dialect)
    providers = {domain: RadioProvider() for domain in DOMAINS}
    for domain, provider in providers.items():
        await asyncio.wait_for(alice.register_provider(domain, provider), WAIT_S)
    return providers


async def call(proxy: Any, what: str) -> None:
    if what == "favorites":
        await asyncio.wait_for(proxy.favorites(), WAIT_S)
    else:
        await asyncio.wait_for(proxy.add_favorite(Station("FM4", Country.AUSTRIA)), WAIT_S)


# ====================================================================== the table


@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_every_decision_of_the_table_on_wss_with_client_certificates(
        stack: AsyncExitStack, tmp_path: Path, users: Users, dialect: str,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    cc = await start(stack, tmp_path, users)
    await register_radios(stack, cc, users, dialect)
    consumers = {uid: await runtime(stack, cc, users, uid, dialect)
                 for uid in {row[0] for row in TABLE}}
    outcomes: dict[tuple[str, str, str], bool | str] = {}
    for uid, domain, what, _, _ in TABLE:
        proxy = await asyncio.wait_for(consumers[uid].build_proxy(Radio, domain), WAIT_S)
        try:
            await call(proxy, what)
            outcomes[(uid, domain, what)] = True
        except ProviderRuntimeError as exc:
            # the refusal reaches the caller, as joynr's exception type, saying why
            assert "access control" in str(exc) and repr(uid) in str(exc), exc
            outcomes[(uid, domain, what)] = False
    assert outcomes == {(uid, domain, what): allowed for uid, domain, what, allowed, _ in TABLE}
    denied = sum(not allowed for *_, allowed, _ in TABLE)
    assert cc.access is not None
    assert cc.access.controller.counters["refused-acl-denied"] == denied
    assert cc.telemetry.counters["dropped-acl-denied"] == denied
    assert cc.telemetry.counters["answered-acl-denied"] == denied


@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_an_unauthorised_registration_is_refused_with_joynrs_error(
        stack: AsyncExitStack, tmp_path: Path, users: Users, dialect: str) -> None:
    cc = await start(stack, tmp_path, users)
    alice = await runtime(stack, cc, users, "alice", dialect)
    await asyncio.wait_for(alice.register_provider("radio.fm", RadioProvider()), WAIT_S)
    for uid, domain in (("mallory", "radio.fm"), ("bob", "radio.am"), ("", "radio.fm"),
                        ("alice", "tv.one")):
        rt = await runtime(stack, cc, users, uid, dialect)
        with pytest.raises(ProviderRuntimeError) as info:
            await asyncio.wait_for(rt.register_provider(domain, RadioProvider()), WAIT_S)
        assert (f"Provider does not have permissions to register interface {INTERFACE} on "
                f"domain {domain}.") in str(info.value)
    assert cc.access is not None
    assert cc.access.controller.counters["refused-rcl-denied"] == 4
    assert sorted(e.domain for e in cc.discovery.entries()) == [
        SYSTEM_SERVICES_DOMAIN, "radio.fm"]  # (the editor, and alice's)


async def test_refused_one_way_calls_and_subscriptions(
        stack: AsyncExitStack, tmp_path: Path, users: Users) -> None:
    cc = await start(stack, tmp_path, users)
    providers = await register_radios(stack, cc, users)
    mallory = await runtime(stack, cc, users, "mallory")
    bob = await runtime(stack, cc, users, "bob")
    refused = await asyncio.wait_for(mallory.build_proxy(Radio, "radio.fm"), WAIT_S)
    allowed = await asyncio.wait_for(bob.build_proxy(Radio, "radio.fm"), WAIT_S)
    await refused.note("from mallory")  # one-way: no answer; it is dropped at the CC
    await allowed.note("from bob")
    await eventually(lambda: providers["radio.fm"].notes == ["from bob"], WAIT_S,
                     "bob's note")
    with pytest.raises(SubscriptionError, match="access control"):
        await asyncio.wait_for(refused.current_station.subscribe(lambda value: None), WAIT_S)
    subscription = await asyncio.wait_for(
        allowed.current_station.subscribe(lambda value: None), WAIT_S)
    await subscription.unsubscribe()
    assert cc.access is not None
    assert cc.access.controller.counters["refused-acl-denied"] == 2
    assert providers["radio.fm"].notes == ["from bob"]
    # the admin endpoint shows them: metrics and the status page
    assert cc.ops.server is not None
    metrics = await scrape(cc.ops.server.url)
    assert metrics["joynr_cc_access_control_events_total",
                   {"event": "refused-acl-denied"}] == 2
    assert metrics["joynr_cc_access_control_entries"] == 10
    status = (await http_get(f"{cc.ops.server.url}/status.json")).json()
    section = next(s for s in status["sections"] if s["id"] == "access-control")
    assert ["refused-acl-denied", 2] in section["facts"], section


# ====================================================================== audit mode


async def test_audit_mode_lets_everything_through_and_logs_what_it_would_refuse(
        stack: AsyncExitStack, tmp_path: Path, users: Users,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    cc = await start(stack, tmp_path, users, access_control__audit="true")
    await register_radios(stack, cc, users)
    mallory = await runtime(stack, cc, users, "mallory")
    proxy = await asyncio.wait_for(mallory.build_proxy(Radio, "radio.fm"), WAIT_S)
    await call(proxy, "favorites")  # would be refused
    await asyncio.wait_for(mallory.register_provider("tv.one", RadioProvider()), WAIT_S)
    assert cc.access is not None
    counters = cc.access.controller.counters
    assert counters["audit-would-refuse-acl-denied"] == 1
    assert counters["audit-would-refuse-rcl-denied"] == 1
    assert counters["refused-acl-denied"] == counters["refused-rcl-denied"] == 0
    audits = [r.getMessage() for r in caplog.records if "ACL AUDIT" in r.getMessage()]
    assert len(audits) == 2 and all("mallory" in line for line in audits), audits


# ====================================================================== hot reload


async def test_a_changed_file_is_in_force_at_once_and_a_bad_one_keeps_the_tables(
        stack: AsyncExitStack, tmp_path: Path, users: Users,
        caplog: pytest.LogCaptureFixture) -> None:
    cc = await start(stack, tmp_path, users)
    await register_radios(stack, cc, users)
    mallory = await runtime(stack, cc, users, "mallory")
    proxy = await asyncio.wait_for(mallory.build_proxy(Radio, "radio.fm"), WAIT_S)
    with pytest.raises(ProviderRuntimeError, match="access control"):
        await call(proxy, "favorites")
    assert cc.access is not None
    counters = cc.access.counters
    # a second file lets mallory in
    write_tables(tmp_path / "acl" / "20-mallory.json",
                 masterAccessTable=[master_ace("mallory", "radio.fm", INTERFACE)])
    await eventually(lambda: counters["reloaded"] == 1, WAIT_S, "the reload")
    await call(proxy, "favorites")
    # a bad file: the tables in force stay, the error names file, entry and field
    bad = tmp_path / "acl" / "30-bad.json"
    entry = master_ace("mallory", "radio.am", INTERFACE, permission="MAYBE")
    write_tables(bad, masterAccessTable=[master_ace("x", "y", "z"), entry])
    await eventually(lambda: counters["reload-failed"] == 1, WAIT_S, "the failed reload")
    await call(proxy, "favorites")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("30-bad.json" in e and "masterAccessTable[1]" in e
               and "defaultConsumerPermission" in e for e in errors), errors
    # the file mended, and the second one taken away: mallory is out again
    bad.unlink()
    (tmp_path / "acl" / "20-mallory.json").unlink()
    await eventually(lambda: counters["reloaded"] == 2, WAIT_S, "the reload")
    with pytest.raises(ProviderRuntimeError, match="access control"):
        await call(proxy, "favorites")


async def test_a_bad_file_at_start_stops_the_start_naming_file_entry_and_field(
        tmp_path: Path, users: Users) -> None:
    acl_dir = tmp_path / "acl"
    write_tables(acl_dir / "apps.json", ownerRegistrationTable=[
        {"_typeName": "joynr.infrastructure.DacTypes.OwnerRegistrationControlEntry",
         "uid": "a", "domain": "d", "interfaceName": "i", "requiredTrustLevel": "LOW",
         "requiredAceChangeTrustLevel": "LOW", "providerPermission": 7}])
    with pytest.raises(ConfigError) as info:
        ClusterController(cc_config(tmp_path / "cc", users, acl_dir))
    text = str(info.value)
    assert "apps.json" in text and "ownerRegistrationTable[0]" in text, text
    assert "providerPermission" in text, text
    with pytest.raises(ConfigError, match="does not exist"):
        ClusterController(cc_config(tmp_path / "cc", users, tmp_path / "nowhere"))


# ====================================================================== uids without certificates


async def test_a_websocket_path_names_the_uid_of_connections_without_a_certificate(
        stack: AsyncExitStack, tmp_path: Path, users: Users) -> None:
    cc = await start(stack, tmp_path, users, access_control__websocket_paths=json.dumps(
        {"/bob": "bob"}).replace(":", " ="))
    await register_radios(stack, cc, users)
    address = cc.websocket_address
    anonymous = await runtime(stack, cc, users, "")
    on_path = await connect(address.url.rstrip("/") + "/bob",
                            config=users.config("", NATIVE), timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(on_path.close)
    with pytest.raises(ProviderRuntimeError, match="access control"):
        await call(await anonymous.build_proxy(Radio, "radio.am"), "favorites")
    await call(await on_path.build_proxy(Radio, "radio.am"), "favorites")  # bob's entry


async def test_a_unix_peer_is_its_user_or_the_name_configured_for_it(
        stack: AsyncExitStack, tmp_path: Path, users: Users) -> None:
    me = pwd.getpwuid(os.getuid()).pw_name
    socket_path = Path(f"/tmp/acl-{os.getpid()}-{id(tmp_path)}.sock")
    stack.callback(lambda: socket_path.unlink(missing_ok=True))
    cc = await start(stack, tmp_path, users, uds__enabled="true", uds__path=str(socket_path),
                     access_control__uds_users=f'{{ "{me}" = "carol" }}')
    await register_radios(stack, cc, users)
    rt = await connect(f"unix://{socket_path}", timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(rt.close)
    proxy = await asyncio.wait_for(rt.build_proxy(Radio, "radio.fm"), WAIT_S)
    await call(proxy, "favorites")  # carol's operation
    with pytest.raises(ProviderRuntimeError, match="'carol'"):
        await call(proxy, "add_favorite")


# ====================================================================== the editor


@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_an_owner_changes_its_owner_entries_with_the_editor_and_the_change_lasts(
        stack: AsyncExitStack, tmp_path: Path, users: Users, dialect: str) -> None:
    editor_ace = master_ace("*", SYSTEM_SERVICES_DOMAIN, EDITOR_INTERFACE)
    write_tables(tmp_path / "acl" / "10-radio.json", **provisioning())
    write_tables(tmp_path / "acl" / "20-editor.json",
                 masterAccessTable=[editor_ace],
                 domainRoleTable=[domain_role("erin", ["radio.fm"], "OWNER"),
                                  domain_role("alice", ["*"], "MASTER")])
    cc = await start(stack, tmp_path, users)
    await register_radios(stack, cc, users)
    mallory = await runtime(stack, cc, users, "mallory", dialect)
    radio = await asyncio.wait_for(mallory.build_proxy(Radio, "radio.fm"), WAIT_S)
    with pytest.raises(ProviderRuntimeError, match="access control"):
        await call(radio, "favorites")
    editors = {uid: await build_access_control_list_editor_proxy(
        await runtime(stack, cc, users, uid, dialect), SYSTEM_SERVICES_DOMAIN)
        for uid in ("erin", "mallory", "alice")}
    let_in = OwnerAccessControlEntry("mallory", "radio.fm", INTERFACE, TrustLevel.LOW,
                                     TrustLevel.LOW, "*", Permission.YES)
    # mallory holds no role: nothing changes; erin is the owner of radio.fm
    assert await editors["mallory"].update_owner_access_control_entry(let_in) is False
    assert await editors["erin"].update_owner_access_control_entry(let_in) is True
    await call(radio, "favorites")
    # an owner may not change master entries, nor own another domain's entries
    master = MasterAccessControlEntry("mallory", "radio.am", INTERFACE, TrustLevel.HIGH,
                                      [TrustLevel.HIGH], TrustLevel.HIGH, [TrustLevel.HIGH],
                                      "*", Permission.YES, [Permission.YES])
    assert await editors["erin"].update_master_access_control_entry(master) is False
    elsewhere = dataclasses.replace(let_in, domain="radio.am")
    assert await editors["erin"].update_owner_access_control_entry(elsewhere) is False
    # an owner entry outside what the master allows is refused by the store (grace's master
    # lets only NO be chosen)
    outside = dataclasses.replace(let_in, uid="grace")
    assert await editors["erin"].update_owner_access_control_entry(outside) is False
    # a master may change master entries on every domain (its role lists "*")
    assert await editors["alice"].update_master_access_control_entry(master) is True
    await call(await mallory.build_proxy(Radio, "radio.am"), "favorites")
    assert cc.acl_editor is not None
    counters = cc.acl_editor.counters
    assert counters["edit-update-owner_access-changed"] == 1
    assert counters["edit-update-master_access-changed"] == 1
    assert counters["edit-update-owner_access-refused-role"] == 2
    assert counters["edit-update-master_access-refused-role"] == 1
    assert counters["edit-update-owner_access-invalid"] == 1
    # the changes outlive a reload of the files and a restart
    write_tables(tmp_path / "acl" / "30-more.json", masterAccessTable=[
        master_ace("carol", "radio.am", INTERFACE)])
    assert cc.access is not None
    await eventually(lambda: cc.access is not None and cc.access.counters["reloaded"] == 1,
                     WAIT_S, "the reload")
    await call(radio, "favorites")
    assert cc.access.edits.path.is_file()
    again = ClusterController(cc_config(tmp_path / "cc", users, tmp_path / "acl"))
    assert again.access is not None
    assert again.access.controller.store.consumer_permission(
        "mallory", "radio.fm", INTERFACE, "favorites").name == "YES"
    # and a removal too
    assert await editors["erin"].remove_owner_access_control_entry(
        "mallory", "radio.fm", INTERFACE, "*") is True
    assert await editors["erin"].remove_owner_access_control_entry(
        "mallory", "radio.fm", INTERFACE, "*") is False  # (none left)
    with pytest.raises(ProviderRuntimeError, match="access control"):
        await call(radio, "favorites")


async def test_the_editor_is_checked_like_any_provider(
        stack: AsyncExitStack, tmp_path: Path, users: Users) -> None:
    cc = await start(stack, tmp_path, users)  # no entry for the editor
    bob = await runtime(stack, cc, users, "bob")
    editor = await build_access_control_list_editor_proxy(bob, SYSTEM_SERVICES_DOMAIN)
    with pytest.raises(ProviderRuntimeError, match="access control"):
        await editor.remove_owner_access_control_entry("bob", "radio.fm", INTERFACE, "*")


# ====================================================================== messages from other hosts


@pytest.mark.parametrize("trusted", [True, False], ids=["signature-trusted", "backend-uid"])
async def test_calls_from_other_hosts_are_checked_with_the_backend_uid_or_their_signature(
        stack: AsyncExitStack, tmp_path: Path, users: Users, trusted: bool) -> None:
    """CC "two" hosts the providers, with access control; CC "one" hosts the consumers: bob
    (joynr dialect, client certificate: his runtime signs every message with his owner id),
    one without a certificate (no signature), and one without a certificate that signs as
    bob. Both backends speak joynr's dialect, so the
    signed frames cross the broker as they were signed."""
    broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
    suffix = uuid.uuid4().hex[:8]
    write_tables(tmp_path / "acl" / "entries.json", masterAccessTable=[
        master_ace("*", "radio.*", INTERFACE, permission="NO"),
        master_ace("bob", "radio.fm", INTERFACE),
        master_ace("remote-hosts", "radio.am", INTERFACE),
    ], masterRegistrationTable=[master_rce("", "radio.*", INTERFACE)])
    two = await stack.enter_async_context(ClusterController(mqtt_cc_config(
        tmp_path / "two", f"cc-two-{suffix}", {GBID: broker.url}, mqtt__dialect=JOYNR,
        access_control__enabled="true",
        access_control__entries_directory=str(tmp_path / "acl"),
        access_control__backend_uid="remote-hosts",
        access_control__trust_backend_signature=str(trusted).lower())))
    pids = {domain: f"radio-{domain}-{suffix}" for domain in ("radio.fm", "radio.am")}
    provisioning = write_provisioning(tmp_path / "provisioning.toml", *(
        {"participant_id": pid, "domain": domain, "interface": INTERFACE, "version": "1.2",
         "gbid": GBID, "topic": two.own_topic} for domain, pid in pids.items()))
    one = await stack.enter_async_context(ClusterController(mqtt_cc_config(
        tmp_path / "one", f"cc-one-{suffix}", {GBID: broker.url}, mqtt__dialect=JOYNR,
        discovery__provisioning_file=str(provisioning),
        websocket__tls_certificate=str(users.tls.server_cert),
        websocket__tls_private_key=str(users.tls.server_key),
        websocket__tls_client_ca_file=str(users.tls.ca[0]))))
    for cc in (one, two):
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
    host = await connect(two.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(host.close)
    for domain, pid in pids.items():
        await asyncio.wait_for(host.register_provider(
            domain, RadioProvider(), participant_id=pid,
            qos=ProviderQos(scope=ProviderScope.GLOBAL)), WAIT_S)
    # and one without a certificate that signs as bob all the same: its signature proves
    # nothing and does not leave its host
    forger = await connect(one.websocket_address, config=LibjoynrConfig(
        dialect=JOYNR, websocket=WebSocketClientSettings(
            dialect=JOYNR, owner_id="bob", tls_ca_file=str(users.tls.server_cert))),
        timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(forger.close)
    consumers = {"bob": await runtime(stack, one, users, "bob", JOYNR),
                 "": await runtime(stack, one, users, "", JOYNR), "forger": forger}
    outcomes = {}
    for (uid, rt), domain in itertools.product(consumers.items(), pids):
        proxy = await asyncio.wait_for(rt.build_proxy(Radio, domain, ttl_ms=5_000), WAIT_S)
        try:
            await call(proxy, "favorites")
            outcomes[(uid, domain)] = True
        except ProviderRuntimeError as exc:  # the refusal came back over the broker
            assert "access control" in str(exc), exc
            outcomes[(uid, domain)] = False
    assert outcomes == {
        # trusted: bob's signature is his uid; without: every message from the backend is
        # "remote-hosts"; an unsigned message is "remote-hosts" either way
        ("bob", "radio.fm"): trusted, ("bob", "radio.am"): not trusted,
        ("", "radio.fm"): False, ("", "radio.am"): True,
        ("forger", "radio.fm"): False, ("forger", "radio.am"): True,
    }
    assert one.mqtt is not None
    assert one.mqtt.counters["unproven-signature-removed"] == 2


async def test_refusals_are_in_the_audit_log_with_their_reason(
        tmp_path: Path, users: Users) -> None:
    audit_dir = tmp_path / "audit"
    async with AsyncExitStack() as stack:
        cc = await start(stack, tmp_path, users, audit__enabled="true",
                         audit__dir=str(audit_dir))
        await register_radios(stack, cc, users)
        mallory = await runtime(stack, cc, users, "mallory")
        proxy = await asyncio.wait_for(mallory.build_proxy(Radio, "radio.fm"), WAIT_S)
        with pytest.raises(ProviderRuntimeError, match="access control"):
            await call(proxy, "favorites")
        with pytest.raises(ProviderRuntimeError, match="Provider does not have permissions"):
            await asyncio.wait_for(mallory.register_provider("radio.fm", RadioProvider()),
                                   WAIT_S)
    records = read_audit(audit_dir)  # (all written once the cluster controller stopped)
    refused = [(r["type"], r["outcome"], r["reason"], r["hop"]) for r in records
               if r["reason"] in ("acl-denied", "rcl-denied")]
    assert refused == [("rq", "refused", "acl-denied", "websocket"),
                       ("rq", "refused", "rcl-denied", None)], refused

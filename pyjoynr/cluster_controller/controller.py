"""The cluster controller: assembly, start and graceful shutdown of its parts."""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from pathlib import Path
from types import TracebackType

from pyjoynr.cluster_controller.access.editor import AccessControlListEditor
from pyjoynr.cluster_controller.access.entries import AccessFileError
from pyjoynr.cluster_controller.access.service import AccessControl
from pyjoynr.cluster_controller.bounds import ConnectionHolds
from pyjoynr.cluster_controller.config import ClusterControllerConfig, cluster_controller_id
from pyjoynr.cluster_controller.gcd_link import GlobalLink, gcd_call_backend
from pyjoynr.cluster_controller.local_discovery import LocalDiscovery
from pyjoynr.cluster_controller.local_system import LocalSystem
from pyjoynr.cluster_controller.operability import ClusterControllerOps
from pyjoynr.cluster_controller.provisioning import ProvisionedProvider, load_provisioning
from pyjoynr.cluster_controller.routing_provider import RoutingProvider
from pyjoynr.cluster_controller.snapshots import RoutingSnapshots
from pyjoynr.gcd.identity import instance_id_from
from pyjoynr.gcd.interface import (
    GCD_DOMAIN,
    GCD_INTERFACE,
    GCD_PARTICIPANT_ID,
    GCD_TOPIC,
    GlobalCapabilitiesDirectory,
)
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.programming.discovery_types import (
    DiscoveryEntryWithMetaInfo,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.joynr_runtime import JoynrRuntime
from pyjoynr.programming.system_interfaces import SYSTEM_SERVICES_DOMAIN
from pyjoynr.runtime.addresses import (
    Address,
    InProcessAddress,
    MqttAddress,
    UdsClientAddress,
    WebSocketAddress,
)
from pyjoynr.runtime.audit import AuditLog
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.config import ConfigError
from pyjoynr.runtime.errors import JoynrError
from pyjoynr.runtime.housekeeping import RouterHousekeeping
from pyjoynr.runtime.logs import RepeatedWarnings, get_logger
from pyjoynr.runtime.quotas import Quotas
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import NO_EXPIRY_MS, RoutingTable, RuntimeKind
from pyjoynr.runtime.smrf import FORM as SMRF_FORM
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry
from pyjoynr.transports.inprocess import InProcessTransport
from pyjoynr.transports.mqtt.broker import EmbeddedBroker
from pyjoynr.transports.mqtt.client import PACKET_OVERHEAD_BYTES
from pyjoynr.transports.mqtt.settings import EMBEDDED, parse_broker_url
from pyjoynr.transports.mqtt.transport import MqttTransport
from pyjoynr.transports.uds.server import UdsServerTransport
from pyjoynr.transports.uds.settings import UdsServerSettings
from pyjoynr.transports.websocket.server import WebSocketServerTransport
from pyjoynr.transports.websocket.settings import WebSocketServerSettings

log = get_logger(__name__)


class ClusterController:
    """One cluster controller: ``async with ClusterController(config) as cc: ...``."""

    def __init__(self, config: ClusterControllerConfig) -> None:
        self.config = config
        self.id = cluster_controller_id(config.cluster_controller)
        #: the owner of every background task of this cluster controller
        self.tasks = TaskSupervisor(f"cluster controller {self.id}")
        #: the topic this CC is reached at, in every backend
        self.own_topic = f"{config.mqtt.topic_prefix}{self.id}"
        default_gbid = config.mqtt.default_gbid
        #: where this CC is reached from other CCs (its replyTo address): its topic in the
        #: default backend; None without MQTT backends
        self.global_address = (None if default_gbid is None
                               else MqttAddress(default_gbid, self.own_topic))
        # the CC is reached at its own topic in every backend: routes there would loop
        data_dir = config.cluster_controller.data_dir
        #: the message audit log ([audit], off by default): one record per routing decision
        self.audit_dir = config.audit.directory(data_dir / "audit")
        self.audit = (AuditLog(config.audit, self.audit_dir, self.id)
                      if config.audit.enabled else None)
        #: the rate limit of this process's repeated warnings (runtime.logs), shared by its
        #: router, providers, transports and admin endpoint
        self.warnings = RepeatedWarnings()
        #: what this process counts, logs rate-limited and audits (runtime.telemetry): handed
        #: to its router, transports, providers and directory
        self.telemetry = Telemetry(warnings=self.warnings, audit=self.audit)
        #: what one websocket connection (one owner id) may hold ([connection_bounds]): told
        #: of connections by the websocket server, asked by the router's way in
        #: (subscriptions) and by the Routing and Discovery providers (through ``holds``)
        self.quotas = Quotas(config.connection_bounds)
        self.holds = ConnectionHolds(self.quotas, self.telemetry)
        # the CC is reached at its own topic in every backend: routes there would loop
        self.router = MessageRouter(
            RoutingTable(RuntimeKind.CLUSTER_CONTROLLER, own_addresses=[
                MqttAddress(gbid, self.own_topic) for gbid in config.mqtt.backends]),
            config.router, telemetry=self.telemetry, quotas=self.quotas)
        #: routing table snapshots ([routing_snapshots]): on demand and periodically
        self.snapshots = RoutingSnapshots(
            self.router, config.routing_snapshots.directory(data_dir), self.id,
            config.routing_snapshots, self.tasks)
        #: the router's timers: queue sweep and retries, routing table purge
        self.housekeeping = RouterHousekeeping(
            self.router, self.tasks, purge_interval_s=config.routing.cleanup_interval_s
        )
        websocket_settings, uds_settings = _client_settings(config)
        self.websocket = WebSocketServerTransport(self.router, websocket_settings,
                                                  tasks=self.tasks, telemetry=self.telemetry,
                                                  quotas=self.quotas)
        #: the Unix domain socket server ([uds]), beside websocket, by the same rules
        self.uds = (UdsServerTransport(self.router, uds_settings, tasks=self.tasks,
                                       telemetry=self.telemetry, quotas=self.quotas)
                    if config.uds.enabled else None)
        # the embedded broker takes no packet larger than the CC takes messages (plus room for
        # the topic and properties): a bigger one never reaches the CC's MQTT client
        self.broker = (EmbeddedBroker(config.embedded_broker, max_packet_bytes=(
            config.mqtt.max_message_bytes + PACKET_OVERHEAD_BYTES), warnings=self.warnings)
            if config.embedded_broker.enabled else None)
        self.mqtt: MqttTransport | None = None
        self.gcd: GcdService | None = None
        self.gcd_link: GlobalLink | None = None
        self._touch_task: asyncio.Task[None] | None = None
        self._backend_urls: dict[str, str] = {}  # GBID -> broker URL (resolved)
        for gbid, url in config.mqtt.backends.items():
            if url == EMBEDDED and self.broker is None:
                raise ConfigError(f"mqtt.backends.{gbid} is \"embedded\" but "
                                  "embedded_broker.enabled is false")
        self.provisioned: list[ProvisionedProvider] = []
        if config.discovery.provisioning_file:
            self.provisioned = load_provisioning(Path(config.discovery.provisioning_file))
        self.discovery = LocalDiscovery(
            self.router, answer_margin_ms=config.discovery.answer_margin_ms,
            tasks=self.tasks.child("discovery"),
            vanished_grace_s=config.discovery.vanished_provider_grace_s,
            telemetry=self.telemetry, holds=self.holds)
        self.websocket.on_client_gone = self.discovery.client_gone
        if self.uds is not None:
            self.uds.on_client_gone = self.discovery.client_gone
        self.router.register_transport(InProcessAddress, InProcessTransport(self.telemetry))
        self.runtime = JoynrRuntime(self.router, LocalSystem(self.router, self.discovery),
                                    telemetry=self.telemetry)
        self.routing_provider = RoutingProvider(self.router, self.global_address,
                                                liveness=self._connection_alive,
                                                telemetry=self.telemetry, holds=self.holds)
        self.runtime.reply_to_address = self.global_address
        self.runtime.register_system_provider(config.system.routing_participant_id,
                                              self.routing_provider)
        self.runtime.register_system_provider(config.system.discovery_participant_id,
                                              self.discovery)
        #: access control ([access_control], off by default): the router's delivery gate and
        #: the local directory's registration check
        self.access: AccessControl | None = None
        self.acl_editor: AccessControlListEditor | None = None
        if config.access_control.enabled:
            self._enable_access_control()
        #: whether the local directory uses a GCD (and the CC's readiness asks for it)
        self.uses_gcd = config.discovery.gcd and bool(config.mqtt.backends)
        #: set when stop() begins (readiness says so)
        self.stopping = False
        #: the admin endpoint: metrics, health, status page ([admin])
        self.ops = ClusterControllerOps(self, config.admin)

    def _enable_access_control(self) -> None:
        config = self.config
        ac = config.access_control
        try:
            access = self.access = AccessControl(
                Path(ac.entries_directory) if ac.entries_directory else None,
                Path(ac.edits_file) if ac.edits_file
                else config.cluster_controller.data_dir / "acl-edits.json",
                resolve=self.discovery.local_entry,
                # the cluster controller's own providers and the GCD: never checked
                whitelist=(config.system.routing_participant_id,
                           config.system.discovery_participant_id, GCD_PARTICIPANT_ID),
                audit=ac.audit, reload_interval_ms=ac.reload_interval_ms,
                max_file_bytes=ac.max_file_bytes, telemetry=self.telemetry)
        except AccessFileError as exc:
            raise ConfigError(f"access_control: {exc}") from None
        self.router.register_gate(access.controller)
        self.discovery.registration_check = access.controller.check_registration
        #: joynr's AccessControlListEditor over the tables (registered at start)
        self.acl_editor = (AccessControlListEditor(access.controller.store, access.edits,
                                                   audit=ac.audit, telemetry=self.telemetry)
                           if ac.editor else None)

    @property
    def websocket_address(self) -> WebSocketAddress:
        return self.websocket.address

    async def _connection_alive(self, address: Address) -> bool:
        """Whether the client connection behind ``address`` is alive (the server of its
        type decides)."""
        if type(address) is UdsClientAddress:
            return self.uds is not None and await self.uds.connection_alive(address)
        return await self.websocket.connection_alive(address)

    async def _start_embedded_gcd(self) -> None:
        assert self.global_address is not None and self.mqtt is not None
        gbid = self.global_address.broker_uri
        url_text = self._backend_urls[gbid]
        path = self.config.embedded_gcd.sqlite_path or str(
            self.config.cluster_controller.data_dir / "gcd.sqlite")
        self.gcd = GcdService(GcdSettings(
            gbid=gbid, broker_url=url_text, valid_gbids=tuple(self.config.mqtt.backends),
            sqlite_path=Path(path), mqtt_version=self.config.mqtt.version,
            client_id=f"gcd-{self.id}", instance_id=instance_id_from(self.id),
            # it answers from its index like any GCD; alone on its SQLite file it has no
            # peers to catch up with or drift from: no notifier, no catch-up, no repair
            notifications=False, catch_up_interval_s=0, repair_interval_s=0),
            tasks=self.tasks, mqtt=self.config.mqtt,
            tls_context=self.mqtt.tls_context,
            # its routing decisions go to an audit log of its own (gcd-<instance>), beside
            # the cluster controller's
            audit=self.config.audit if self.config.audit.enabled else None,
            audit_dir=self.audit_dir)
        await self.gcd.start()
        # the CC's link to the GCD speaks only once the GCD is subscribed (a request
        # published before would reach nobody); its calls wait for it too (_gcd_ready)
        wait_s = self.config.mqtt.connect_timeout_s
        try:
            await self.gcd.mqtt.wait_connected(wait_s)
        except ConnectionError as exc:
            log.warning("embedded GCD not connected to its broker yet (%s); the cluster "
                        "controller's calls to the GCD wait for it", exc)

    async def _gcd_ready(self) -> None:
        """Until the embedded GCD is subscribed (at once without one)."""
        if self.gcd is not None:
            await self.gcd.mqtt.wait_connected(None)

    def _make_mqtt(self) -> MqttTransport:
        m = self.config.mqtt
        brokers = {}
        for gbid, url in m.backends.items():
            if url == EMBEDDED and self.broker is not None:
                url = f"{self.broker.url}?version=3.1.1"  # noqa: PLW2901 - resolved
            self._backend_urls[gbid] = url
            brokers[gbid] = parse_broker_url(url)
        tls_context = None
        if m.tls_ca_file:
            tls_context = ssl.create_default_context(cafile=m.tls_ca_file)
        return MqttTransport(
            self.router, m, brokers=brokers, own_topic=self.own_topic, client_id=self.id,
            tasks=self.tasks, tls_context=tls_context,
            routing=self.config.routing, telemetry=self.telemetry,
            backend_of=gcd_call_backend,
            backend_uid=self.config.access_control.backend_uid,
            trust_backend_signature=self.config.access_control.trust_backend_signature,
        )

    def _provision_gcd(self) -> None:
        """The GCD's entry: from the provisioning file, else joynr's well-known one."""
        if any(p.participant_id == GCD_PARTICIPANT_ID for p in self.provisioned):
            return
        assert self.global_address is not None
        address = MqttAddress(self.global_address.broker_uri, GCD_TOPIC)
        self.provisioned.append(ProvisionedProvider(DiscoveryEntryWithMetaInfo(
            provider_version=Version(0, 3), domain=GCD_DOMAIN, interface_name=GCD_INTERFACE,
            participant_id=GCD_PARTICIPANT_ID, qos=ProviderQos(scope=ProviderScope.GLOBAL),
            last_seen_date_ms=0, expiry_date_ms=NO_EXPIRY_MS, is_local=False), address))

    async def _start_gcd_link(self) -> None:
        """The local directory's link to the GCD, and the freshness jobs."""
        d = self.config.discovery
        global_address = self.global_address
        assert global_address is not None
        # the GCD of a fleet of joynr cluster controllers (the default backend speaks joynr's
        # dialect) may be joynr's, which reads JSON bodies only; this project's reads both
        default_url = parse_broker_url(self._backend_urls[global_address.broker_uri])
        body = (BodyFormat.JSON if self.config.mqtt.dialect_of(default_url) == "joynr"
                else BodyFormat.MSGPACK)
        proxy = self.runtime.system_proxy(GlobalCapabilitiesDirectory, GCD_PARTICIPANT_ID,
                                          d.gcd_request_ttl_ms, body_format=body)
        backends = list(self.config.mqtt.backends)
        link = self.gcd_link = GlobalLink(
            proxy, backends, global_address, self.id, tasks=self.tasks,
            request_ttl_ms=d.gcd_request_ttl_ms, ready=self._gcd_ready,
            # an embedded GCD answers in the default backend only
            gcd_gbids=backends[:1] if self.config.embedded_gcd.enabled else None,
            warnings=self.warnings)
        self.discovery.attach_gcd(link)
        started = now_ms()
        # providers of this CC's previous life disappear from the GCD
        link.in_background("removeStale", lambda: link.remove_stale(started),
                           give_up_s=d.remove_stale_for_s)
        self._touch_task = self.tasks.spawn(self._touch_loop(d.touch_interval_s),
                                            name="gcd-touch")

    async def _touch_loop(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            participants = self.discovery.global_participants()
            link = self.gcd_link
            if not participants or link is None:
                continue
            try:
                await link.touch(participants)
                log.debug("touched %d global provider(s)", len(participants))
            except JoynrError as exc:
                log.warning("touch of %d global provider(s) failed: %s", len(participants),
                            exc)

    def _install_provisioned(self) -> None:
        gbids = set(self.config.mqtt.backends)
        for provider in self.provisioned:
            if provider.address.broker_uri not in gbids:
                log.warning("provisioned provider %s is in backend %r, which is not configured",
                            provider.participant_id, provider.address.broker_uri)
            result = self.router.add_route(provider.participant_id, provider.address,
                                           is_globally_visible=True, is_sticky=True)
            if not result.accepted:
                log.warning("provisioned provider %s not routed: %s", provider.participant_id,
                            result.reason)
            self.discovery.add_global(provider.entry)
        if self.provisioned:
            log.info("installed %d provisioned global provider(s)", len(self.provisioned))

    async def start(self) -> None:
        try:  # first: liveness and readiness answer while the rest starts
            await self.ops.start()
        except OSError as exc:
            a = self.config.admin
            raise OSError(f"cannot listen for the admin endpoint on {a.host}:{a.port}: "
                          f"{exc.strerror or exc}; {_another_port('admin')}") from None
        try:
            await self._start_parts()
        except BaseException:
            await self.ops.stop()  # (a process ends here; a test goes on without its port)
            raise

    async def _start_parts(self) -> None:
        if self.audit is not None:
            self.audit.start(self.tasks)
        if self.access is not None:
            self.access.start(self.tasks)
        if self.acl_editor is not None:
            # in the local directory, so that applications find it (domain io.joynr.system);
            # calls to it are checked like any other
            await self.runtime.register_provider(
                SYSTEM_SERVICES_DOMAIN, self.acl_editor,
                participant_id=self.config.access_control.editor_participant_id)
        self.snapshots.start()
        if self.broker is not None:
            try:
                await self.broker.start()
            except OSError as exc:
                raise OSError(f"{exc}; {_another_port('embedded_broker')}") from None
        self.housekeeping.start()
        use_gcd = self.uses_gcd
        if use_gcd:
            self._provision_gcd()
        self._install_provisioned()
        if self.config.mqtt.backends:
            self.mqtt = self._make_mqtt()
            # local providers' multicasts go out to every backend, receivers of providers
            # behind MQTT subscribe there
            self.router.register_global_multicast(self.mqtt)
            await self.mqtt.start()
            if self.config.embedded_gcd.enabled:
                await self._start_embedded_gcd()
        if use_gcd:
            await self._start_gcd_link()
        try:
            await self.websocket.start()
        except OSError as exc:
            s = self.config.websocket
            raise OSError(f"cannot listen for libjoynr runtimes on {s.host}:{s.port}: "
                          f"{exc.strerror or exc}; {_another_port('websocket')}") from None
        if self.uds is not None:
            try:
                await self.uds.start()
            except OSError as exc:
                raise OSError(f"cannot listen for libjoynr runtimes on the Unix domain socket "
                              f"{self.config.uds.path}: {exc.strerror or exc} (uds.path, or "
                              f"uds.enabled = false)") from None
        mqtt = "no MQTT backends"
        if self.mqtt is not None:
            backends = ", ".join(f"{gbid}={self._backend_urls[gbid]}"
                                 for gbid in self.mqtt.gbids)
            mqtt = f"MQTT backends {backends}, global address {self.global_address!r}"
        admin = ("admin endpoint off" if self.ops.server is None
                 else f"admin endpoint {self.ops.server.url}")
        log.info(
            "cluster controller %s started: libjoynr runtimes connect to %s; %s; %s; routing "
            "cleanup every %.0f s",
            self.id,
            self.websocket.address.url
            + ("" if self.uds is None else f" and {self.uds.address.url}"),
            mqtt,
            admin,
            self.config.routing.cleanup_interval_s,
        )
        if not SMRF_FORM.compiled:
            log.warning("joynr's SMRF frames are read and written by the codec's plain Python "
                        "form, about three times slower than compiled: %s", SMRF_FORM.reason)

    async def stop(self) -> None:
        """Stop accepting, close the client connections, stop the background jobs. A step
        that fails is logged and the next one runs all the same. The admin endpoint answers
        until the end (readiness: shutting down)."""
        self.stopping = True
        steps = [self.websocket.stop, self._stop_gcd_link, self.runtime.close]
        if self.uds is not None:
            steps.insert(1, self.uds.stop)
        if self.gcd is not None:
            steps.append(self.gcd.stop)
        if self.mqtt is not None:
            steps.append(self.mqtt.stop)
        steps.append(self.housekeeping.stop)
        if self.broker is not None:
            steps.append(self.broker.stop)
        # after everything that routes: every record of the routing so far is written
        steps += [self._stop_audit, self.snapshots.stop]
        steps.append(self.tasks.close)  # whatever is still running
        steps.append(self.ops.stop)
        for step in steps:
            try:
                await step()
            except Exception:
                log.exception("cluster controller %s: %s failed during shutdown", self.id,
                              step.__qualname__)
        log.info("cluster controller %s stopped: %d routing entries, %d message(s) still "
                 "queued, %d routed; router counters %s; websocket refusals %s", self.id,
                 self.router.route_count, self.router.queued(), self.telemetry.statistics.routed,
                 dict(self.telemetry.counters) or "none", dict(self.websocket.counters) or "none")
        if self.mqtt is not None:
            log.info("MQTT: %d published, %d received; refusals and drops %s",
                     self.mqtt.published, self.mqtt.received, dict(self.mqtt.counters) or "none")

    async def _stop_audit(self) -> None:
        audit = self.audit
        self.telemetry.set_audit(None)
        if audit is not None:
            await audit.close()

    async def _stop_gcd_link(self) -> None:
        task, self._touch_task = self._touch_task, None
        await self.tasks.cancel(task)
        if self.gcd_link is not None:
            await self.gcd_link.close()

    async def __aenter__(self) -> ClusterController:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()


def _client_settings(config: ClusterControllerConfig
                     ) -> tuple[WebSocketServerSettings, UdsServerSettings]:
    """The websocket and Unix domain socket servers' settings, with the uids of connections
    without a certificate when access control is on."""
    ac = config.access_control
    if not ac.enabled:
        return config.websocket, config.uds
    return (dataclasses.replace(config.websocket, uid_paths=dict(ac.websocket_paths)),
            dataclasses.replace(config.uds, uids=dict(ac.uds_users)))


def _another_port(section: str) -> str:
    """What to change when a port is taken: the setting, in the file and the environment."""
    return (f"choose another port with [{section}] port in the configuration file or "
            f"JOYNR_CC__{section.upper()}__PORT (0: any free port)")

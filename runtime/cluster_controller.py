"""The cluster controller process: configuration, assembly, start and graceful shutdown.

It runs the routing table (cluster controller rules) with its cleanup job, the message router,
the websocket server for libjoynr runtimes, the Routing and Discovery providers, and an
in-process runtime (``cc.runtime``) for providers and proxies living in the CC itself.
``python -m runtime.cluster_controller --help`` lists the options.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import ssl
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from runtime.addresses import MqttAddress, WebSocketAddress
from runtime.clock import now_ms
from runtime.config import ConfigError, load_config
from runtime.discovery_types import (
    DiscoveryEntryWithMetaInfo,
    ProviderQos,
    ProviderScope,
    Version,
)
from runtime.dispatch import Proxy, ProxyEndpoint
from runtime.errors import JoynrError
from runtime.gcd import (
    GCD_DOMAIN,
    GCD_INTERFACE,
    GCD_PARTICIPANT_ID,
    GCD_TOPIC,
    GlobalCapabilitiesDirectory,
)
from runtime.gcd_service import GcdService, GcdSettings
from runtime.housekeeping import RoutingTableCleaner
from runtime.interface import interface_def
from runtime.provisioning import ProvisionedProvider, load_provisioning
from runtime.router import MessageRouter, RouterSettings
from runtime.routing import NO_EXPIRY_MS, RoutingTable, RuntimeKind
from runtime.runtime import JoynrRuntime, LocalSystem
from runtime.system import (
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
    GlobalLink,
    LocalDiscovery,
    RoutingProvider,
)
from transports.mqtt import MqttBackendSettings, MqttTransport, MqttTransportSettings
from transports.mqtt_broker import EmbeddedBroker, EmbeddedBrokerSettings
from transports.mqtt_client import parse_broker_url
from transports.websocket_server import WebSocketServerSettings, WebSocketServerTransport

__all__ = ["ClusterController", "ClusterControllerConfig", "main"]

log = logging.getLogger("runtime.cluster_controller")

ENV_PREFIX = "JOYNR_CC"
PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = PROJECT_ROOT / "config" / "cluster-controller.toml"


@dataclass
class IdentitySection:
    #: this cluster controller's id; empty: generated once, kept in <data_dir>/cluster-controller-id
    id: str = ""
    #: where the cluster controller keeps its state (relative paths: to the working directory)
    data_dir: Path = Path("var/cluster-controller")


@dataclass
class RoutingSection:
    #: seconds between two purges of expired routing entries
    cleanup_interval_s: float = 60.0
    #: learned replyTo entries live this long past the expiry of the request that taught them
    reply_to_grace_ms: int = 30_000
    #: ... counted from an expiry of at most now + this (a request chooses its own expiry)
    reply_to_max_ttl_ms: int = 86_400_000

    def __post_init__(self) -> None:
        if not self.cleanup_interval_s > 0:
            raise ValueError(f"cleanup_interval_s must be > 0, got {self.cleanup_interval_s}")
        if self.reply_to_grace_ms < 0:
            raise ValueError(f"reply_to_grace_ms must be >= 0, got {self.reply_to_grace_ms}")
        if self.reply_to_max_ttl_ms < 1:
            raise ValueError("reply_to_max_ttl_ms must be >= 1")


@dataclass
class WebSocketSection:
    #: address and port libjoynr runtimes connect to (port 0: any free port)
    host: str = "127.0.0.1"
    port: int = 4242
    path: str = "/"
    #: TLS (wss) when both are set: PEM certificate chain and private key
    tls_certificate: str = ""
    tls_private_key: str = ""
    #: frames larger than this are refused (bytes)
    max_frame_bytes: int = 4 * 1024 * 1024
    #: keep-alive: ping every interval; a connection without pong within the timeout is dead
    ping_interval_s: float = 20.0
    ping_timeout_s: float = 20.0
    #: seconds a new connection has to send its init frame
    init_timeout_s: float = 10.0
    #: messages waiting to be written to one client before sends to it are refused
    max_queued_per_connection: int = 10_000

    def __post_init__(self) -> None:
        if not 0 <= self.port < 65536:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        if bool(self.tls_certificate) != bool(self.tls_private_key):
            raise ValueError("tls_certificate and tls_private_key go together")
        if self.max_frame_bytes < 1024:
            raise ValueError("max_frame_bytes must be at least 1024")
        for name in ("ping_interval_s", "ping_timeout_s", "init_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.max_queued_per_connection < 1:
            raise ValueError("max_queued_per_connection must be >= 1")


@dataclass
class MqttSection:
    #: GBID -> broker URL, in order; the first GBID is the default backend. URLs:
    #: mqtt://host:port, mqtts://host:port (TLS), mqtt://user:password@host:port, and
    #: ?version=3.1.1 or ?version=5; "embedded": the embedded broker. Empty: no MQTT.
    backends: dict[str, str] = field(default_factory=dict)
    #: this CC's topic is <topic_prefix><cluster controller id>
    topic_prefix: str = "joynr/cc/"
    #: MQTT protocol version for backends whose URL does not say: "5" or "3.1.1"
    version: str = "5"
    keepalive_s: int = 30
    #: the broker keeps this CC's session (subscriptions, QoS 1 messages) this long while it
    #: is disconnected; 0: clean sessions
    session_expiry_s: int = 3600
    connect_timeout_s: float = 10.0
    #: QoS 1 messages published and not yet acknowledged, per backend
    max_inflight: int = 100
    #: messages waiting for one backend (e.g. while it is down) before sends are refused
    max_queued_per_backend: int = 10_000
    #: incoming MQTT messages larger than this are refused (bytes)
    max_message_bytes: int = 4 * 1024 * 1024
    #: CA certificates (PEM) for mqtts backends; empty: the system's
    tls_ca_file: str = ""
    reconnect_initial_s: float = 0.1
    reconnect_max_s: float = 5.0
    #: ids of received messages remembered to drop QoS 1 redeliveries
    duplicate_window: int = 100_000

    def __post_init__(self) -> None:
        for gbid, url in self.backends.items():
            if not gbid or "/" in gbid:
                raise ValueError(f"bad GBID {gbid!r}")
            if url != "embedded":
                parse_broker_url(url)  # ValueError with the reason
        if self.version not in ("5", "3.1.1"):
            raise ValueError(f"version must be \"5\" or \"3.1.1\", not {self.version!r}")
        for name in ("keepalive_s", "max_inflight", "max_queued_per_backend",
                     "max_message_bytes", "duplicate_window"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.session_expiry_s < 0:
            raise ValueError("session_expiry_s must be >= 0")


@dataclass
class EmbeddedBrokerSection:
    #: start an MQTT broker (amqtt, MQTT 3.1.1) inside the CC; backends name it "embedded"
    enabled: bool = False
    host: str = "127.0.0.1"
    #: 0: any free port
    port: int = 1883


@dataclass
class DiscoverySection:
    #: TOML file of provisioned global providers (see runtime/provisioning.py); empty: none
    provisioning_file: str = ""
    #: use the Global Capabilities Directory (with MQTT backends): at participantId
    #: capabilitiesdirectory_participantid, topic discoverydirectory_channelid of the default
    #: backend, unless the provisioning file names it
    gcd: bool = True
    #: time to live of the CC's calls to the GCD (ms)
    gcd_request_ttl_ms: int = 10_000
    #: seconds between two touches of this CC's global providers (joynr: 6 h)
    touch_interval_s: float = 3600.0
    #: removeStale of a previous life is retried this long after the start (s)
    remove_stale_for_s: float = 300.0

    def __post_init__(self) -> None:
        if self.gcd_request_ttl_ms < 100:
            raise ValueError("gcd_request_ttl_ms must be >= 100")
        if not self.touch_interval_s > 0 or not self.remove_stale_for_s > 0:
            raise ValueError("touch_interval_s and remove_stale_for_s must be > 0")


@dataclass
class EmbeddedGcdSection:
    #: run a GCD instance (SQLite) inside the CC, on its default backend
    enabled: bool = False
    #: empty: <data_dir>/gcd.sqlite
    sqlite_path: str = ""


@dataclass
class RouterSection:
    #: messages kept for one recipient without a route (or whose connection refused them)
    max_queued_per_recipient: int = 1_000
    #: messages kept for all such recipients together
    max_queued_total: int = 100_000
    #: seconds between two sweeps of those queues (expiry, retries)
    sweep_interval_s: float = 0.1

    def __post_init__(self) -> None:
        if self.max_queued_per_recipient < 0 or self.max_queued_total < 0:
            raise ValueError("queue limits must be >= 0")
        if not self.sweep_interval_s > 0:
            raise ValueError("sweep_interval_s must be > 0")


@dataclass
class SystemSection:
    #: provisioned participantIds of the CC's own providers (libjoynr runtimes use the same)
    routing_participant_id: str = DEFAULT_ROUTING_PARTICIPANT_ID
    discovery_participant_id: str = DEFAULT_DISCOVERY_PARTICIPANT_ID


@dataclass
class LoggingSection:
    #: DEBUG, INFO, WARNING or ERROR
    level: str = "INFO"

    def __post_init__(self) -> None:
        if self.level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ValueError(f"level must be DEBUG, INFO, WARNING or ERROR, not {self.level!r}")
        self.level = self.level.upper()


@dataclass
class ClusterControllerConfig:
    cluster_controller: IdentitySection = field(default_factory=IdentitySection)
    routing: RoutingSection = field(default_factory=RoutingSection)
    router: RouterSection = field(default_factory=RouterSection)
    websocket: WebSocketSection = field(default_factory=WebSocketSection)
    mqtt: MqttSection = field(default_factory=MqttSection)
    embedded_broker: EmbeddedBrokerSection = field(default_factory=EmbeddedBrokerSection)
    discovery: DiscoverySection = field(default_factory=DiscoverySection)
    embedded_gcd: EmbeddedGcdSection = field(default_factory=EmbeddedGcdSection)
    system: SystemSection = field(default_factory=SystemSection)
    logging: LoggingSection = field(default_factory=LoggingSection)

    @classmethod
    def load(cls, path: Path | None = DEFAULT_CONFIG, env: dict[str, str] | None = None
             ) -> ClusterControllerConfig:
        return load_config(cls, path, env_prefix=ENV_PREFIX, env=env)


def cluster_controller_id(section: IdentitySection) -> str:
    """The configured id, or the one generated on the first start and kept since."""
    if section.id:
        return section.id
    path = section.data_dir / "cluster-controller-id"
    try:
        stored = path.read_text(encoding="utf-8").strip()
        if stored:
            return stored
    except FileNotFoundError:
        pass
    new_id = f"cc-{uuid.uuid4()}"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(new_id + "\n", encoding="utf-8")
    os.replace(tmp, path)
    log.info("generated cluster controller id %s (kept in %s)", new_id, path)
    return new_id


def _ssl_context(section: WebSocketSection) -> ssl.SSLContext | None:
    if not section.tls_certificate:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(section.tls_certificate, section.tls_private_key)
    return context


class ClusterController:
    """One cluster controller: ``async with ClusterController(config) as cc: ...``."""

    def __init__(self, config: ClusterControllerConfig) -> None:
        self.config = config
        self.id = cluster_controller_id(config.cluster_controller)
        # the CC is reached at its own topic in every backend: routes there would loop
        self.routing_table = RoutingTable(RuntimeKind.CLUSTER_CONTROLLER, own_addresses=[
            MqttAddress(gbid, self.own_topic) for gbid in config.mqtt.backends])
        r = config.router
        self.router = MessageRouter(self.routing_table, RouterSettings(
            max_queued_per_recipient=r.max_queued_per_recipient,
            max_queued_total=r.max_queued_total,
            sweep_interval_s=r.sweep_interval_s,
        ))
        self.cleaner = RoutingTableCleaner(
            self.routing_table, config.routing.cleanup_interval_s
        )
        ws = config.websocket
        self.websocket = WebSocketServerTransport(self.router, WebSocketServerSettings(
            host=ws.host, port=ws.port, path=ws.path, max_frame_bytes=ws.max_frame_bytes,
            ping_interval_s=ws.ping_interval_s, ping_timeout_s=ws.ping_timeout_s,
            init_timeout_s=ws.init_timeout_s,
            max_queued_per_connection=ws.max_queued_per_connection,
            ssl_context=_ssl_context(ws),
        ))
        b = config.embedded_broker
        self.broker = (EmbeddedBroker(EmbeddedBrokerSettings(b.host, b.port)) if b.enabled
                       else None)
        self.mqtt: MqttTransport | None = None
        self.gcd: GcdService | None = None
        self.gcd_link: GlobalLink | None = None
        self._touch_task: asyncio.Task[None] | None = None
        self._backend_urls: dict[str, str] = {}  # GBID -> broker URL (resolved)
        for gbid, url in config.mqtt.backends.items():
            if url == "embedded" and self.broker is None:
                raise ConfigError(f"mqtt.backends.{gbid} is \"embedded\" but "
                                  "embedded_broker.enabled is false")
        self.provisioned: list[ProvisionedProvider] = []
        if config.discovery.provisioning_file:
            self.provisioned = load_provisioning(Path(config.discovery.provisioning_file))
        self.discovery = LocalDiscovery(self.routing_table, self.router)
        self.runtime = JoynrRuntime(self.router, LocalSystem(self.router, self.discovery))
        self.routing_provider = RoutingProvider(self.router, self.global_address)
        self.runtime.reply_to_address = self.global_address
        self.runtime.register_system_provider(config.system.routing_participant_id,
                                              self.routing_provider)
        self.runtime.register_system_provider(config.system.discovery_participant_id,
                                              self.discovery)

    @property
    def websocket_address(self) -> WebSocketAddress:
        return self.websocket.address

    @property
    def own_topic(self) -> str:
        return f"{self.config.mqtt.topic_prefix}{self.id}"

    @property
    def global_address(self) -> MqttAddress | None:
        """MqttAddress(default GBID, own topic); None without MQTT backends."""
        backends = self.config.mqtt.backends
        return MqttAddress(next(iter(backends)), self.own_topic) if backends else None

    async def _start_embedded_gcd(self) -> None:
        assert self.mqtt is not None
        gbid = self.mqtt.settings.backends[0].gbid
        url_text = self._backend_urls[gbid]
        path = self.config.embedded_gcd.sqlite_path or str(
            self.config.cluster_controller.data_dir / "gcd.sqlite")
        self.gcd = GcdService(GcdSettings(
            gbid=gbid, broker_url=url_text, valid_gbids=list(self.config.mqtt.backends),
            sqlite_path=Path(path), mqtt_version=self.config.mqtt.version,
            client_id=f"gcd-{self.id}"))
        await self.gcd.start()

    def _make_mqtt(self) -> MqttTransport:
        m = self.config.mqtt
        backends = []
        for gbid, url in m.backends.items():
            if url == "embedded" and self.broker is not None:
                url = f"{self.broker.url}?version=3.1.1"  # noqa: PLW2901 - resolved
            self._backend_urls[gbid] = url
            backends.append(MqttBackendSettings(gbid, parse_broker_url(url)))
        tls_context = None
        if m.tls_ca_file:
            tls_context = ssl.create_default_context(cafile=m.tls_ca_file)
        return MqttTransport(self.router, MqttTransportSettings(
            backends=tuple(backends), own_topic=self.own_topic, client_id=self.id,
            version=m.version, keepalive_s=m.keepalive_s, session_expiry_s=m.session_expiry_s,
            connect_timeout_s=m.connect_timeout_s, max_inflight=m.max_inflight,
            reconnect_initial_s=m.reconnect_initial_s, reconnect_max_s=m.reconnect_max_s,
            max_queued_per_backend=m.max_queued_per_backend,
            max_message_bytes=m.max_message_bytes,
            reply_to_grace_ms=self.config.routing.reply_to_grace_ms,
            reply_to_max_ttl_ms=self.config.routing.reply_to_max_ttl_ms,
            duplicate_window=m.duplicate_window, tls_context=tls_context,
        ))

    def _provision_gcd(self) -> None:
        """The GCD's entry: from the provisioning file, else joynr's well-known one."""
        if any(p.participant_id == GCD_PARTICIPANT_ID for p in self.provisioned):
            return
        address = MqttAddress(next(iter(self.config.mqtt.backends)), GCD_TOPIC)
        self.provisioned.append(ProvisionedProvider(DiscoveryEntryWithMetaInfo(
            provider_version=Version(0, 3), domain=GCD_DOMAIN, interface_name=GCD_INTERFACE,
            participant_id=GCD_PARTICIPANT_ID, qos=ProviderQos(scope=ProviderScope.GLOBAL),
            last_seen_date_ms=0, expiry_date_ms=NO_EXPIRY_MS, is_local=False), address))

    async def _start_gcd_link(self) -> None:
        """The local directory's link to the GCD, and the freshness jobs."""
        d = self.config.discovery
        endpoint = ProxyEndpoint(f"{uuid.uuid4()}")
        self.router.add_route(endpoint.participant_id, endpoint.address,
                              is_globally_visible=False)
        proxy = Proxy(self.runtime, interface_def(GlobalCapabilitiesDirectory),
                      GCD_PARTICIPANT_ID, endpoint, d.gcd_request_ttl_ms)
        global_address = self.global_address
        assert global_address is not None
        self.gcd_link = GlobalLink(proxy, list(self.config.mqtt.backends), global_address,
                                   self.id)
        self.discovery.attach_gcd(self.gcd_link)
        started = now_ms()
        # providers of this CC's previous life disappear from the GCD
        self.gcd_link.in_background("removeStale", lambda: self.gcd_link.remove_stale(started),
                                    give_up_s=d.remove_stale_for_s)
        self._touch_task = asyncio.get_running_loop().create_task(
            self._touch_loop(d.touch_interval_s), name="gcd-touch")

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
        if self.broker is not None:
            await self.broker.start()
        self.router.start()
        self.cleaner.start()
        use_gcd = self.config.discovery.gcd and bool(self.config.mqtt.backends)
        if use_gcd:
            self._provision_gcd()
        self._install_provisioned()
        if self.config.mqtt.backends:
            self.mqtt = self._make_mqtt()
            await self.mqtt.start()
            if self.config.embedded_gcd.enabled:
                await self._start_embedded_gcd()
        if use_gcd:
            await self._start_gcd_link()
        await self.websocket.start()
        mqtt = "no MQTT backends"
        if self.mqtt is not None:
            backends = ", ".join(f"{b.gbid}={b.url}" for b in self.mqtt.settings.backends)
            mqtt = f"MQTT backends {backends}, global address {self.global_address!r}"
        log.info(
            "cluster controller %s started: libjoynr runtimes connect to %s; %s; routing "
            "cleanup every %.0f s",
            self.id,
            self.websocket.address.url,
            mqtt,
            self.config.routing.cleanup_interval_s,
        )

    async def stop(self) -> None:
        """Stop accepting, close the client connections, stop the background jobs. A step
        that fails is logged and the next one runs all the same."""
        steps = [self.websocket.stop, self._stop_gcd_link, self.runtime.close]
        if self.gcd is not None:
            steps.append(self.gcd.stop)
        if self.mqtt is not None:
            steps.append(self.mqtt.stop)
        steps += [self.router.stop, self.cleaner.stop]
        if self.broker is not None:
            steps.append(self.broker.stop)
        for step in steps:
            try:
                await step()
            except Exception:
                log.exception("cluster controller %s: %s failed during shutdown", self.id,
                              step.__qualname__)
        log.info("cluster controller %s stopped: %d routing entries, %d message(s) still "
                 "queued, %d routed; router counters %s; websocket refusals %s", self.id,
                 len(self.routing_table), self.router.queued(), self.router.routed,
                 dict(self.router.counters) or "none", dict(self.websocket.counters) or "none")
        if self.mqtt is not None:
            log.info("MQTT: %d published, %d received; refusals and drops %s",
                     self.mqtt.published, self.mqtt.received, dict(self.mqtt.counters) or "none")

    async def _stop_gcd_link(self) -> None:
        task, self._touch_task = self._touch_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.gcd_link is not None:
            await self.gcd_link.close()

    async def __aenter__(self) -> ClusterController:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()


async def run(config: ClusterControllerConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with ClusterController(config):
        await stop.wait()
        log.info("stop requested, shutting down")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cluster-controller", description=__doc__)
    parser.add_argument(
        "--config", type=Path, default=DEFAULT_CONFIG,
        help=f"TOML configuration (default: {DEFAULT_CONFIG}); "
             f"{ENV_PREFIX}__<SECTION>__<KEY> variables override it",
    )
    args = parser.parse_args(argv)
    try:
        config = ClusterControllerConfig.load(args.config)
    except ConfigError as exc:
        sys.stderr.write(f"cluster-controller: bad configuration: {exc}\n")
        return 2
    logging.basicConfig(
        level=config.logging.level,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if config.logging.level != "DEBUG":
        # the embedded broker's libraries narrate every state change and client at INFO
        for name in ("amqtt", "transitions", "websockets.server"):
            logging.getLogger(name).setLevel(logging.WARNING)
        logging.getLogger("asyncpg.pool").setLevel(logging.ERROR)  # see runtime.gcd_service
    try:
        import uvloop  # noqa: PLC0415 - optional speed-up, imported where the loop is made

        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency; keep running without it
        log.warning("uvloop not available; using the default asyncio loop")
        runner = asyncio.run
    try:
        runner(run(config))
    except ConfigError as exc:
        log.error("bad configuration: %s", exc)
        return 2
    except OSError as exc:
        log.error("cluster controller failed: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

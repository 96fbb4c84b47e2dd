"""The GCD service: one GCD instance (:class:`GcdService`), its configuration (:class:`GcdConfig`)
and its assembly: a :class:`~gcd.provider.GcdProvider` on its store, reachable over MQTT, run as
a process (``python -m pyjoynr.gcd``, :mod:`gcd.__main__`) or inside a cluster controller's process.

One instance is connected to one broker (its backend, ``gbid``) and subscribes to the GCD topic
(``discoverydirectory_channelid``); with ``shared_subscription_group`` several instances share
the load of one backend (``$share/<group>/<topic>/#``). All instances, in all backends, share
one store: SQLite for a single instance (the embedded default), PostgreSQL for several.

Each instance answers lookups from its in-memory index, which its :class:`~gcd.sync.Synchronizer`
keeps in sync with the store (docs/discovery.md): loaded at start-up before the instance
subscribes to its broker (so it answers nothing before), woken by the notifications of the
cluster ``cluster_name`` (PostgreSQL LISTEN/NOTIFY), caught up on a timer, repaired
periodically. The embedded SQLite GCD has no peers and no notifier.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import cast

from pyjoynr.admin.settings import AdminSettings
from pyjoynr.gcd.changes import Notifier, VersionedStore
from pyjoynr.gcd.identity import InstanceIdentity, check_instance_id, claim
from pyjoynr.gcd.interface import GCD_PARTICIPANT_ID, GCD_TOPIC
from pyjoynr.gcd.provider import GcdProvider
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.gcd.store import GcdStore
from pyjoynr.gcd.sync import Synchronizer, SyncSettings
from pyjoynr.programming.discovery_types import DEFAULT_PROVIDER_EXPIRY_MS
from pyjoynr.programming.joynr_runtime import JoynrRuntime
from pyjoynr.runtime.addresses import InProcessAddress, MqttAddress
from pyjoynr.runtime.audit import AuditLog, AuditSettings
from pyjoynr.runtime.config import load_config
from pyjoynr.runtime.housekeeping import RouterHousekeeping
from pyjoynr.runtime.logs import LOG_FORMATS, RepeatedWarnings, get_logger
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingSettings, RoutingTable, RuntimeKind
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry
from pyjoynr.transports.inprocess import InProcessTransport
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url
from pyjoynr.transports.mqtt.transport import MqttTransport

__all__ = ["DEFAULT_CONFIG", "ENV_PREFIX", "GcdAdminSettings", "GcdConfig", "GcdService",
           "GcdSettings", "make_store"]

log = get_logger(__name__)

ENV_PREFIX = "JOYNR_GCD"
#: the packaged default configuration (it documents every setting)
DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "config" / "gcd.toml"
#: what a cluster name may be (gcd.postgres_store.channel_of, without importing asyncpg)
_CLUSTER_NAME = re.compile(r"[a-z0-9_]{1,40}")


@dataclass(frozen=True)
class GcdSettings:
    """The ``[gcd]`` section: one instance. Checked when made (ValueError saying what is
    wrong); the MQTT section of its transport follows from it (:meth:`mqtt_section`)."""

    #: this instance's backend and its broker
    gbid: str = "joynrdefaultgbid"
    broker_url: str = "mqtt://127.0.0.1:1883"
    #: every GBID providers may register in (must contain ``gbid``); empty: just ``gbid``
    valid_gbids: tuple[str, ...] = ()
    #: "sqlite" (a file, one instance) or "postgres" (shared by several instances)
    store: str = "sqlite"
    sqlite_path: Path = Path("var/gcd/gcd.sqlite")
    #: e.g. postgresql://user@host:5432/joynr_gcd
    postgres_dsn: str = ""
    #: instances of one backend with the same group share its requests (MQTT 5 / mosquitto)
    shared_subscription_group: str = ""
    #: seconds a stop may take to finish and answer the requests already taken (see
    #: GcdService.stop)
    stop_drain_s: float = 5.0
    #: expiry given to entries by touch (ms): joynr's default of six weeks
    default_expiry_ms: int = DEFAULT_PROVIDER_EXPIRY_MS
    #: seconds between two purges of expired entries
    purge_interval_s: float = 60.0
    #: MQTT protocol version for the broker ("5" or "3.1.1"), unless its URL says
    mqtt_version: str = "5"
    #: the MQTT client: "native" (the project's own) or "aiomqtt" (a GCD embedded in a
    #: cluster controller uses the controller's [mqtt] client instead)
    mqtt_client: str = "native"
    #: this instance's id (gcd.identity: in its logs, metrics, status page, MQTT client id and
    #: database session names); empty: generated once and kept in <data_dir>/instance-id
    instance_id: str = ""
    #: where a generated instance id is kept
    data_dir: Path = Path("var/gcd")
    #: MQTT client id of this instance; empty: gcd-<gbid>-<instance id>
    client_id: str = ""
    #: replyTo routes learned from requests kept at most (one per asking cluster controller
    #: whose request is in flight); the ones that expire first make room for new ones
    max_learned_routes: int = 100_000
    #: the GCD cluster: the instances on one PostgreSQL database wake each other on the
    #: notification channel of this name (LISTEN/NOTIFY); one name per database
    cluster_name: str = "default"
    #: whether this instance listens for the cluster's notifications (off: it learns the
    #: others' writes by the catch-up timer and the drift repair only)
    notifications: bool = True
    #: seconds between two catch-ups without a notification (0: off)
    catch_up_interval_s: float = 5.0
    #: seconds between two drift repairs of the index against the store (0: off)
    repair_interval_s: float = 60.0
    #: seconds deletions are remembered (tombstones) for catching up; an instance that was
    #: behind for longer reloads its whole index
    tombstone_retention_s: float = 3600.0
    #: seconds between two log lines of the synchronisation's figures (0: none)
    sync_stats_interval_s: float = 60.0
    #: whether an instance whose store does not answer is ready (/health/ready 200, its body
    #: saying "degraded"): it still answers lookups from its index, while writes fail
    ready_when_store_down: bool = True
    #: whether an instance serves while its index loads at start-up, answering lookups by
    #: reading the store (False: it subscribes to its broker only once the index is ready)
    serve_while_loading: bool = True

    def __post_init__(self) -> None:
        if not self.gbid:
            raise ValueError("gbid must not be empty")
        # any sequence (a list from code) becomes a tuple; empty: just the own GBID
        object.__setattr__(self, "valid_gbids", tuple(self.valid_gbids) or (self.gbid,))
        if self.gbid not in self.valid_gbids:
            raise ValueError(f"gbid {self.gbid!r} is not among valid_gbids "
                             f"{list(self.valid_gbids)}")
        if self.store not in ("sqlite", "postgres"):
            raise ValueError(f"store must be sqlite or postgres, not {self.store!r}")
        if self.store == "postgres" and not self.postgres_dsn:
            raise ValueError("store = postgres needs postgres_dsn")
        if not self.stop_drain_s > 0:
            raise ValueError(f"stop_drain_s must be > 0, got {self.stop_drain_s}")
        if not self.purge_interval_s > 0:
            raise ValueError("purge_interval_s must be > 0")
        if self.instance_id:
            check_instance_id(self.instance_id)
        if self.max_learned_routes < 1:
            raise ValueError(f"max_learned_routes must be >= 1, got {self.max_learned_routes}")
        if not _CLUSTER_NAME.fullmatch(self.cluster_name):
            raise ValueError("cluster_name must be 1 to 40 of a-z, 0-9 and _ (the notification "
                             f"channel is gcd_<cluster_name>), got {self.cluster_name!r}")
        self.sync_settings()  # the intervals and the retention: checked there
        self.mqtt_section()  # the broker URL and the MQTT version: checked there

    def sync_settings(self) -> SyncSettings:
        """How this instance keeps its index in sync (ValueError if a value is bad)."""
        return SyncSettings(catch_up_interval_s=self.catch_up_interval_s,
                            repair_interval_s=self.repair_interval_s,
                            tombstone_retention_s=self.tombstone_retention_s,
                            stats_interval_s=self.sync_stats_interval_s,
                            serve_while_loading=self.serve_while_loading)

    def mqtt_section(self, base: MqttSettings | None = None) -> MqttSettings:
        """The settings of this instance's MQTT transport: those of ``base`` (a cluster
        controller's ``[mqtt]`` section, for a GCD embedded in it: keep-alive, limits, TLS CA
        file), with this instance's one backend, its MQTT version, and no session kept by the
        broker (another instance may serve the backend meanwhile)."""
        return dataclasses.replace(base or MqttSettings(client=self.mqtt_client),
                                   backends={self.gbid: self.broker_url},
                                   version=self.mqtt_version, session_expiry_s=0)


@dataclass(frozen=True)
class LoggingSection:
    #: DEBUG, INFO, WARNING or ERROR
    level: str = "INFO"
    #: "text" (one line of text per record) or "json" (one JSON object per line)
    format: str = "text"

    def __post_init__(self) -> None:
        if self.format not in LOG_FORMATS:
            raise ValueError(f"format must be one of {', '.join(LOG_FORMATS)}, not "
                             f"{self.format!r}")


@dataclass(frozen=True)
class GcdAdminSettings(AdminSettings):
    """``[admin]`` of the GCD process: the cluster controller's section, on port 4281."""

    port: int = 4281


@dataclass(frozen=True)
class GcdConfig:
    """The configuration of a GCD process: ``[gcd]``, ``[admin]``, ``[logging]`` and
    ``[audit]``."""

    gcd: GcdSettings = field(default_factory=GcdSettings)
    admin: GcdAdminSettings = field(default_factory=GcdAdminSettings)
    logging: LoggingSection = field(default_factory=LoggingSection)
    audit: AuditSettings = field(default_factory=AuditSettings)

    @classmethod
    def load(cls, path: Path | None = DEFAULT_CONFIG, env: dict[str, str] | None = None
             ) -> GcdConfig:
        """The configuration in ``path``, with ``JOYNR_GCD__<SECTION>__<KEY>`` environment
        variables (of ``env``, default: the process's) overriding it; ConfigError if bad."""
        return load_config(cls, path, env_prefix=ENV_PREFIX, env=env)


def session_name(instance_id: str) -> str:
    """The PostgreSQL ``application_name`` of an instance's sessions (its notification
    listener's: this plus ``-listen``)."""
    return f"joynr-gcd-{instance_id}"


def make_store(settings: GcdSettings, instance_id: str = "") -> GcdStore:
    """The (unopened) store the settings name; its database sessions named after
    ``instance_id``."""
    if settings.store == "postgres":
        from pyjoynr.gcd.postgres_store import PostgresStore  # noqa: PLC0415 - asyncpg only if used

        return PostgresStore(settings.postgres_dsn, cluster=settings.cluster_name,
                             application_name=session_name(instance_id) if instance_id
                             else "joynr-gcd")
    return SqliteStore(settings.sqlite_path)


def make_notifier(settings: GcdSettings, instance_id: str = "") -> Notifier | None:
    """The listening side of the cluster's notifications (None: SQLite, or switched off)."""
    if settings.store != "postgres" or not settings.notifications:
        return None
    from pyjoynr.gcd.postgres_store import PostgresNotifier  # noqa: PLC0415 - asyncpg only if used

    return PostgresNotifier(settings.postgres_dsn, cluster=settings.cluster_name,
                            application_name=(session_name(instance_id) if instance_id
                                              else "joynr-gcd") + "-listen")


class GcdService:
    """``async with GcdService(settings) as gcd:`` one GCD instance on its broker.

    ``tasks``: the supervisor of the process the instance runs in (a cluster controller's);
    the instance's background tasks (the MQTT connection, the router's timers, the purge of
    expired entries) then run in a child of it. Without it the instance has a supervisor of its
    own. Either way :meth:`stop` ends them all. ``mqtt`` and ``tls_context``: the MQTT
    settings and TLS context of the embedding process, whose connection options the instance
    shares (see :meth:`GcdSettings.mqtt_section`). ``audit``: write a message audit log
    (process id ``gcd-<instance>``, the instance being its MQTT client id) to ``audit_dir``
    (default: the settings' directory, else var/gcd/audit)."""

    def __init__(self, settings: GcdSettings, *, tasks: TaskSupervisor | None = None,
                 mqtt: MqttSettings | None = None,
                 tls_context: ssl.SSLContext | None = None,
                 audit: AuditSettings | None = None, audit_dir: Path | None = None) -> None:
        self.settings = settings
        #: what tells this instance apart from the others of its backend (gcd.identity)
        self.identity: InstanceIdentity = claim(settings.instance_id, settings.data_dir)
        self.instance_id = self.identity.id
        #: how its log lines name it
        self.name = f"GCD {settings.gbid} [{self.instance_id}]"
        self.store = make_store(settings, self.instance_id)
        self.address = MqttAddress(settings.gbid, GCD_TOPIC)
        client_id = settings.client_id or f"gcd-{settings.gbid}-{self.instance_id}"
        #: the message audit log of this instance's routing (None: off)
        self.audit = None if audit is None or not audit.enabled else AuditLog(
            audit, audit_dir or audit.directory(Path("var/gcd/audit")),
            client_id if client_id.startswith("gcd-") else f"gcd-{client_id}")
        #: the rate limit of this instance's repeated warnings (runtime.logs), shared by its
        #: router, provider, transport and admin endpoint
        self.warnings = RepeatedWarnings()
        #: what this instance counts, logs rate-limited and audits (runtime.telemetry)
        self.telemetry = Telemetry(warnings=self.warnings, audit=self.audit)
        self.router = MessageRouter(
            RoutingTable(RuntimeKind.CLUSTER_CONTROLLER, own_addresses=[self.address]),
            telemetry=self.telemetry)
        group = settings.shared_subscription_group
        #: the owner of this instance's background tasks
        self.tasks = (tasks.child(self.name) if tasks is not None
                      else TaskSupervisor(self.name))
        #: the router's timers (queue sweep and retries, purge of learned replyTo routes)
        self.housekeeping = RouterHousekeeping(self.router, self.tasks)
        self.mqtt = MqttTransport(
            self.router, settings.mqtt_section(mqtt), tls_context=tls_context,
            brokers={settings.gbid: parse_broker_url(settings.broker_url)}, own_topic=GCD_TOPIC,
            client_id=client_id,
            subscription=f"$share/{group}/{GCD_TOPIC}/#" if group else None,
            tasks=self.tasks,
            routing=RoutingSettings(max_learned_routes=settings.max_learned_routes),
            telemetry=self.telemetry,
        )
        self.router.register_global_multicast(self.mqtt)
        #: keeps the instance's index in sync with the store (lookups are answered from it)
        self.sync = Synchronizer(cast(VersionedStore, self.store),
                                 notifier=make_notifier(settings, self.instance_id),
                                 tasks=self.tasks, settings=settings.sync_settings(),
                                 name=self.name)
        self.provider = GcdProvider(self.store, settings.gbid, settings.valid_gbids,
                                    default_expiry_ms=settings.default_expiry_ms,
                                    sync=self.sync, name=self.name,
                                    warnings=self.warnings)
        self.router.register_transport(InProcessAddress, InProcessTransport(self.telemetry))
        self.runtime = JoynrRuntime(self.router, telemetry=self.telemetry)
        self.runtime.register_system_provider(GCD_PARTICIPANT_ID, self.provider)

    async def start(self, wait_s: float | None = None) -> None:
        """Open the store, load the index, serve the broker; returns once the index is ready.

        With ``serve_while_loading`` (the default) the instance subscribes to its broker as
        soon as the load has begun and answers lookups from the store until the index is
        ready (:attr:`serving` is true before this returns); else only once it is ready. A
        failed load stops whatever of the start ran, and propagates.

        The router's housekeeping runs from the first moment: the instance is alive (its
        liveness probe answers so) while it opens its store and loads its index."""
        self.housekeeping.start()
        try:
            await self.store.open()
        except BaseException:
            await self.housekeeping.stop()
            raise
        loading = asyncio.ensure_future(self.sync.start())
        try:
            # the index ready, or (serve_while_loading) its load begun
            serving = asyncio.ensure_future(self.sync.wait_serving())
            try:
                await asyncio.wait({loading, serving}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                serving.cancel()
            if loading.done():
                loading.result()  # a failed load propagates from here
            if self.audit is not None:
                self.audit.start(self.tasks)
            self.provider.start_purging(self.tasks, self.settings.purge_interval_s)
            await self.mqtt.start(wait_s)
            if not loading.done():
                log.info("%s: serving from the store while the index loads", self.name)
            await loading
        except BaseException:
            loading.cancel()
            with contextlib.suppress(BaseException):
                await loading
            await self._stop_started()
            raise
        s = self.settings
        log.info("GCD for %s started and ready: instance %s, %s, topic %s%s, %s store, "
                 "valid GBIDs %s, %d entries in the index", s.gbid, self.instance_id,
                 parse_broker_url(s.broker_url), GCD_TOPIC,  # (shows no password)
                 f" (shared group {s.shared_subscription_group})"
                 if s.shared_subscription_group else "", s.store, ", ".join(s.valid_gbids),
                 len(self.sync.index))

    @property
    def serving(self) -> bool:
        """Lookups are answered: from the index once it is ready, from the store while the
        start-up load runs (``serve_while_loading``)."""
        return self.sync.serving

    async def _stop_started(self) -> None:
        """Undo a start that failed: whatever of it ran stops, the store closes."""
        for step in (self.mqtt.stop, self.housekeeping.stop, self._stop_audit, self.sync.stop,
                     self.tasks.close, self.store.close):
            try:
                await step()
            except Exception:
                log.exception("%s: %s failed while undoing a failed start", self.name,
                              step.__qualname__)

    def stats(self) -> dict[str, object]:
        """The instance's figures (those of its status page), for an exporter."""
        return {**self.sync.stats().as_dict(), "requests_received": self.mqtt.received}

    async def stop(self) -> None:
        """Stop gracefully: no request taken is lost (:meth:`_drain`, at most
        ``stop_drain_s``), then everything ends."""
        # every task ends (purge included) before the store closes under it
        for step in (self._drain, self.runtime.end_calls, self.housekeeping.stop,
                     self._stop_audit, self.sync.stop, self.tasks.close, self.store.close):
            try:
                await step()
            except Exception:
                log.exception("%s: %s failed during shutdown", self.name, step.__qualname__)
        # the counts of the rate-limited lines whose minute has not ended yet
        self.warnings.close()
        self.identity.release()
        log.info("GCD for %s stopped: instance %s, %d request(s) received; refusals %s",
                 self.settings.gbid, self.instance_id, self.mqtt.received,
                 dict(self.mqtt.counters) or "none")

    async def _drain(self) -> None:
        """Take no more requests: UNSUBSCRIBE, staying connected (the broker gives what
        follows to the other members of the shared group) and read on until the broker has
        delivered what it had taken for this instance (MqttTransport.stop_taking); finish
        the calls taken and answer them; publish the answers and wait for the broker's
        acknowledgements; disconnect. All within ``stop_drain_s``: the calls still running
        then are cancelled (runtime.end_calls), the answers not published are dropped."""
        loop = asyncio.get_running_loop()
        bound = self.settings.stop_drain_s
        started = loop.time()
        deadline = started + bound
        mqtt, runtime = self.mqtt, self.runtime
        running, received, published = runtime.calls_busy, mqtt.received, mqtt.published
        confirmed = await mqtt.stop_taking(bound)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, deadline - loop.time())):
                await runtime.finish_calls()
        unfinished = runtime.calls_busy
        await mqtt.stop(max(0.0, deadline - loop.time()))
        arrived, unpublished = mqtt.received - received, mqtt.pending()
        log.info("%s: drained in %.2f s: unsubscribed (%s), %d call(s) running at the "
                 "stop and %d request(s) received since: %s; %d answer(s) published, %d not; "
                 "disconnected", self.name, loop.time() - started,
                 "the broker confirmed it delivered what it took" if confirmed
                 else "the broker's deliveries not confirmed", running, arrived,
                 f"{unfinished} unfinished" if unfinished else "all finished",
                 mqtt.published - published, unpublished)
        if unfinished or unpublished:
            log.warning("%s: the stop's bound (stop_drain_s = %g s) ran out: %d "
                        "call(s) unfinished (cancelled now), %d answer(s) not published",
                        self.name, bound, unfinished, unpublished)

    async def _stop_audit(self) -> None:
        audit = self.audit
        self.telemetry.set_audit(None)
        if audit is not None:
            await audit.close()

    async def __aenter__(self) -> GcdService:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

"""The GCD service: a GcdProvider reachable over MQTT, as a process (``bin/gcd``) or embedded in
a cluster controller process.

One instance is connected to one broker (its backend, ``gbid``) and subscribes to the GCD topic
(``discoverydirectory_channelid``); with ``shared_subscription_group`` several instances share
the load of one backend (``$share/<group>/<topic>/#``). All instances, in all backends, share
one store: SQLite for a single instance (the embedded default), PostgreSQL for several.
``python -m gcd --help`` lists the options.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from gcd.provider import GCD_PARTICIPANT_ID, GCD_TOPIC, GcdProvider
from gcd.store import GcdStore, SqliteStore
from runtime.addresses import InProcessAddress, MqttAddress
from runtime.config import ConfigError, load_config
from runtime.discovery_types import DEFAULT_PROVIDER_EXPIRY_MS
from runtime.joynr_runtime import JoynrRuntime
from runtime.router import MessageRouter
from runtime.routing import RoutingTable, RuntimeKind
from runtime.tasks import TaskSupervisor
from transports.inprocess import InProcessTransport
from transports.mqtt import MqttTransport
from transports.mqtt_settings import MqttSettings, parse_broker_url

__all__ = ["GcdConfig", "GcdService", "GcdSettings", "main"]

log = logging.getLogger(__name__)

ENV_PREFIX = "JOYNR_GCD"
PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = PROJECT_ROOT / "config" / "gcd.toml"


@dataclass
class GcdSettings:
    #: this instance's backend and its broker
    gbid: str = "joynrdefaultgbid"
    broker_url: str = "mqtt://127.0.0.1:1883"
    #: every GBID providers may register in (must contain ``gbid``); empty: just ``gbid``
    valid_gbids: list[str] = field(default_factory=list)
    #: "sqlite" (a file, one instance) or "postgres" (shared by several instances)
    store: str = "sqlite"
    sqlite_path: Path = Path("var/gcd/gcd.sqlite")
    #: e.g. postgresql://user@host:5432/joynr_gcd
    postgres_dsn: str = ""
    #: instances of one backend with the same group share its requests (MQTT 5 / mosquitto)
    shared_subscription_group: str = ""
    #: expiry given to entries by touch (ms): joynr's default of six weeks
    default_expiry_ms: int = DEFAULT_PROVIDER_EXPIRY_MS
    #: seconds between two purges of expired entries
    purge_interval_s: float = 60.0
    #: MQTT protocol version for the broker ("5" or "3.1.1"), unless its URL says
    mqtt_version: str = "5"
    #: MQTT client id of this instance; empty: gcd-<gbid>-<random>
    client_id: str = ""

    def __post_init__(self) -> None:
        parse_broker_url(self.broker_url)
        if not self.gbid:
            raise ValueError("gbid must not be empty")
        if not self.valid_gbids:
            self.valid_gbids = [self.gbid]
        if self.gbid not in self.valid_gbids:
            raise ValueError(f"gbid {self.gbid!r} is not among valid_gbids {self.valid_gbids}")
        if self.store not in ("sqlite", "postgres"):
            raise ValueError(f"store must be sqlite or postgres, not {self.store!r}")
        if self.store == "postgres" and not self.postgres_dsn:
            raise ValueError("store = postgres needs postgres_dsn")
        if not self.purge_interval_s > 0:
            raise ValueError("purge_interval_s must be > 0")


@dataclass
class LoggingSection:
    level: str = "INFO"


@dataclass
class GcdConfig:
    gcd: GcdSettings = field(default_factory=GcdSettings)
    logging: LoggingSection = field(default_factory=LoggingSection)

    @classmethod
    def load(cls, path: Path | None = DEFAULT_CONFIG, env: dict[str, str] | None = None
             ) -> GcdConfig:
        return load_config(cls, path, env_prefix=ENV_PREFIX, env=env)


def make_store(settings: GcdSettings) -> GcdStore:
    if settings.store == "postgres":
        from gcd.postgres_store import PostgresStore  # noqa: PLC0415 - asyncpg only if used

        return PostgresStore(settings.postgres_dsn)
    return SqliteStore(settings.sqlite_path)


class GcdService:
    """``async with GcdService(settings) as gcd:`` one GCD instance on its broker."""

    def __init__(self, settings: GcdSettings) -> None:
        self.settings = settings
        url = parse_broker_url(settings.broker_url)
        self.store = make_store(settings)
        self.address = MqttAddress(settings.gbid, GCD_TOPIC)
        self.table = RoutingTable(RuntimeKind.CLUSTER_CONTROLLER, own_addresses=[self.address])
        self.router = MessageRouter(self.table)
        group = settings.shared_subscription_group
        #: the owner of this instance's background tasks
        self.tasks = TaskSupervisor(f"GCD {settings.gbid}")
        self.mqtt = MqttTransport(
            self.router,
            # a GCD instance keeps no session: another instance may serve meanwhile
            MqttSettings(backends={settings.gbid: settings.broker_url},
                         version=settings.mqtt_version, session_expiry_s=0),
            brokers={settings.gbid: url}, own_topic=GCD_TOPIC,
            client_id=settings.client_id or f"gcd-{settings.gbid}-{uuid.uuid4().hex[:8]}",
            subscription=f"$share/{group}/{GCD_TOPIC}/#" if group else None,
            tasks=self.tasks,
        )
        self.provider = GcdProvider(self.store, settings.gbid, settings.valid_gbids,
                                    default_expiry_ms=settings.default_expiry_ms)
        self.router.register_transport(InProcessAddress, InProcessTransport())
        self.runtime = JoynrRuntime(self.router)
        self.runtime.register_system_provider(GCD_PARTICIPANT_ID, self.provider)

    async def start(self, wait_s: float | None = None) -> None:
        await self.store.open()
        self.router.start()
        self.provider.start_purging(self.settings.purge_interval_s)
        await self.mqtt.start(wait_s)
        s = self.settings
        log.info("GCD for %s started: %s, topic %s%s, %s store, valid GBIDs %s", s.gbid,
                 self.mqtt.settings.backends[s.gbid], GCD_TOPIC,
                 f" (shared group {s.shared_subscription_group})"
                 if s.shared_subscription_group else "", s.store, ", ".join(s.valid_gbids))

    async def stop(self) -> None:
        for step in (self.mqtt.stop, self.provider.stop_purging, self.router.stop,
                     self.store.close, self.tasks.close):
            try:
                await step()
            except Exception:
                log.exception("GCD for %s: %s failed during shutdown", self.settings.gbid,
                              step.__qualname__)
        log.info("GCD for %s stopped: %d request(s) received; refusals %s", self.settings.gbid,
                 self.mqtt.received, dict(self.mqtt.counters) or "none")

    async def __aenter__(self) -> GcdService:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()


async def run(config: GcdConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with GcdService(config.gcd):
        await stop.wait()
        log.info("stop requested, shutting down")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gcd", description=__doc__)
    parser.add_argument(
        "--config", type=Path, default=DEFAULT_CONFIG,
        help=f"TOML configuration (default: {DEFAULT_CONFIG}); "
             f"{ENV_PREFIX}__<SECTION>__<KEY> variables override it")
    args = parser.parse_args(argv)
    try:
        config = GcdConfig.load(args.config)
    except ConfigError as exc:
        sys.stderr.write(f"gcd: bad configuration: {exc}\n")
        return 2
    logging.basicConfig(level=config.logging.level.upper(),
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
                        stream=sys.stderr)
    # while PostgreSQL is down, asyncpg's pool logs a traceback per reconnect attempt; the
    # store's own error lines say it once per failed operation
    logging.getLogger("asyncpg.pool").setLevel(logging.ERROR)
    import uvloop  # noqa: PLC0415

    try:
        uvloop.run(run(config))
    except (ConfigError, OSError) as exc:
        log.error("GCD failed: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

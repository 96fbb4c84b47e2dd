"""The cluster controller process: configuration, assembly, start and graceful shutdown.

What it runs grows with the project; today: the routing table (cluster controller rules) with
its periodic cleanup. ``python -m runtime.cluster_controller --help`` lists the options.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from runtime.config import ConfigError, load_config
from runtime.housekeeping import RoutingTableCleaner
from runtime.routing import RoutingTable, RuntimeKind

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

    def __post_init__(self) -> None:
        if not self.cleanup_interval_s > 0:
            raise ValueError(f"cleanup_interval_s must be > 0, got {self.cleanup_interval_s}")
        if self.reply_to_grace_ms < 0:
            raise ValueError(f"reply_to_grace_ms must be >= 0, got {self.reply_to_grace_ms}")


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


class ClusterController:
    """One cluster controller: ``async with ClusterController(config) as cc: ...``."""

    def __init__(self, config: ClusterControllerConfig) -> None:
        self.config = config
        self.id = cluster_controller_id(config.cluster_controller)
        self.routing_table = RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)
        self.cleaner = RoutingTableCleaner(
            self.routing_table, config.routing.cleanup_interval_s
        )

    async def start(self) -> None:
        self.cleaner.start()
        log.info(
            "cluster controller %s started: routing table ready, cleanup every %.0f s; "
            "no transports are served yet",
            self.id,
            self.config.routing.cleanup_interval_s,
        )

    async def stop(self) -> None:
        await self.cleaner.stop()
        log.info("cluster controller %s stopped (%d routing entries dropped)", self.id,
                 len(self.routing_table))

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
    try:
        import uvloop  # noqa: PLC0415 - optional speed-up, imported where the loop is made

        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency; keep running without it
        log.warning("uvloop not available; using the default asyncio loop")
        runner = asyncio.run
    try:
        runner(run(config))
    except OSError as exc:
        log.error("cluster controller failed: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The cluster controller process: ``python -m pyjoynr.cluster_controller --help``.

``python -m pyjoynr.cluster_controller snapshot --help``: the command that asks a running cluster
controller for a routing table snapshot (cluster_controller.snapshot_command).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

import uvloop

from pyjoynr.cluster_controller.config import DEFAULT_CONFIG, ENV_PREFIX, ClusterControllerConfig
from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.cluster_controller.snapshot_command import (
    remove_pid_file,
    snapshot_main,
    write_pid_file,
)
from pyjoynr.runtime.config import ConfigError
from pyjoynr.runtime.logs import get_logger, setup_process_logging

log = get_logger("cluster_controller")  # not "__main__" under python -m


async def run(config: ClusterControllerConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    cc = ClusterController(config)
    # SIGUSR1: a routing table snapshot (python -m pyjoynr.cluster_controller snapshot sends it, to
    # the process named in the pid file); both in place before the start line is logged
    loop.add_signal_handler(signal.SIGUSR1, cc.snapshots.request)
    pid_file = write_pid_file(config.cluster_controller.data_dir)
    try:
        async with cc:
            await stop.wait()
            log.info("stop requested, shutting down")
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
        remove_pid_file(pid_file)


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["snapshot"]:
        return snapshot_main(args_in[1:])
    parser = argparse.ArgumentParser(
        prog="cluster-controller",
        description="Runs a joynr cluster controller: the websocket server for libjoynr "
                    "runtimes, the MQTT backends, the local directory and, as configured, "
                    "an embedded broker and GCD. Stops gracefully on SIGINT or SIGTERM; "
                    "writes a routing table snapshot on SIGUSR1 (see the command "
                    "'snapshot --help').")
    parser.add_argument(
        "--config", type=Path, default=DEFAULT_CONFIG,
        help=f"TOML configuration (default: {DEFAULT_CONFIG}); "
             f"{ENV_PREFIX}__<SECTION>__<KEY> variables override it",
    )
    args = parser.parse_args(args_in)
    try:
        config = ClusterControllerConfig.load(args.config)
    except ConfigError as exc:
        sys.stderr.write(f"cluster-controller: bad configuration: {exc}\n")
        return 2
    setup_process_logging(config.logging.level, config.logging.format)  # (escaped lines)
    if config.logging.level != "DEBUG":
        # the embedded broker's libraries narrate every state change and client at INFO
        for name in ("amqtt", "transitions", "websockets.server"):
            logging.getLogger(name).setLevel(logging.WARNING)
        logging.getLogger("asyncpg.pool").setLevel(logging.ERROR)  # see gcd.__main__
    try:
        uvloop.run(run(config))
    except ConfigError as exc:
        log.error("bad configuration: %s", exc)
        return 2
    except OSError as exc:
        log.error("cluster controller failed: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
from typing import TYPE_CHECKING

from pyjoynr.runtime.config import ConfigError
from pyjoynr.runtime.extras import program_name, require_extra
from pyjoynr.runtime.logs import get_logger, setup_process_logging

if TYPE_CHECKING:
    from pyjoynr.cluster_controller.config import ClusterControllerConfig

# the modules of the cc extra (uvloop, amqtt, aiomqtt, ...) are imported in main(), after
# require_extra: without the extra the program says which to install instead of a traceback

log = get_logger("cluster_controller")  # not "__main__" under python -m


async def run(config: ClusterControllerConfig) -> None:
    from pyjoynr.cluster_controller.controller import ClusterController  # noqa: PLC0415
    from pyjoynr.cluster_controller.snapshot_command import (  # noqa: PLC0415
        remove_pid_file,
        write_pid_file,
    )

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
    prog = program_name("pyjoynr.cluster_controller", "pyjoynr-cluster-controller")
    require_extra(prog, "cc")
    import uvloop  # noqa: PLC0415

    from pyjoynr.cluster_controller.config import (  # noqa: PLC0415
        DEFAULT_CONFIG,
        ENV_PREFIX,
        ClusterControllerConfig,
    )
    from pyjoynr.cluster_controller.snapshot_command import snapshot_main  # noqa: PLC0415

    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["snapshot"]:
        return snapshot_main(args_in[1:], prog)
    parser = argparse.ArgumentParser(
        prog=prog,
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

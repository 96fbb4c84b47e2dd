"""The GCD process: ``python -m pyjoynr.gcd`` (what ``bin/gcd`` runs). ``--help`` lists the options.

Loads the configuration (``config/gcd.toml`` by default, environment variables override it),
runs one :class:`~gcd.service.GcdService` until SIGINT or SIGTERM, and stops it gracefully
(no request it took is lost: :meth:`~gcd.service.GcdService.stop`).
Exit status: 0 after a requested stop, 2 for a bad configuration, 1 when the instance cannot
run (e.g. its store cannot be opened).
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
    from pyjoynr.gcd.service import GcdConfig

# the modules of the gcd extra (uvloop, aiomqtt, asyncpg, ...) are imported in main(), after
# require_extra: without the extra the program says which to install instead of a traceback

log = get_logger("gcd")

DESCRIPTION = """\
Run one Global Capabilities Directory (GCD) instance.

The instance serves one backend (its GBID): it connects to that backend's MQTT broker and
answers the GCD requests of cluster controllers on the topic discoverydirectory_channelid.
Its entries are kept in a store: SQLite (a file; one instance) or PostgreSQL (shared by
several instances, in one or more backends). Instances of one backend can share its
requests (shared_subscription_group).

SIGINT or SIGTERM stops the instance gracefully: it takes no more requests,
answers those it took, then disconnects (at most stop_drain_s seconds)."""


def _epilog() -> str:
    from pyjoynr.gcd.service import DEFAULT_CONFIG, ENV_PREFIX  # noqa: PLC0415

    return (f"Every setting is documented in {DEFAULT_CONFIG}. An environment variable\n"
            f"{ENV_PREFIX}__<SECTION>__<KEY> overrides a setting of the file, e.g.\n"
            f"{ENV_PREFIX}__GCD__BROKER_URL=mqtt://broker:1883.\n\n"
            "Exit status: 0 after a requested stop, 2 for a bad configuration, 1 when the\n"
            "instance cannot run (e.g. its store cannot be opened).")


async def run(config: GcdConfig) -> None:
    """Run an instance until SIGINT or SIGTERM; its admin endpoint from before the index is
    loaded (readiness says so) until it has stopped."""
    from pyjoynr.gcd.operability import GcdOps  # noqa: PLC0415
    from pyjoynr.gcd.service import ENV_PREFIX, GcdService  # noqa: PLC0415

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    service = GcdService(config.gcd, audit=config.audit)
    ops = GcdOps(service, config.admin)
    try:
        await ops.start()
    except OSError as exc:
        a = config.admin
        raise OSError(f"cannot listen for the admin endpoint on {a.host}:{a.port}: "
                      f"{exc.strerror or exc}; choose another port with [admin] port or "
                      f"{ENV_PREFIX}__ADMIN__PORT (0: any free port)") from None
    try:
        async with service:
            await stop.wait()
            log.info("stop requested, shutting down")
    finally:
        await ops.stop()


def main(argv: list[str] | None = None) -> int:
    prog = program_name("pyjoynr.gcd", "pyjoynr-gcd")
    require_extra(prog, "gcd")
    from pyjoynr.gcd.service import DEFAULT_CONFIG, GcdConfig  # noqa: PLC0415
    from pyjoynr.gcd.store import StoreError  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=_epilog(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG, metavar="FILE",
                        help="the TOML configuration (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        config = GcdConfig.load(args.config)
    except ConfigError as exc:
        sys.stderr.write(f"gcd: bad configuration: {exc}\n")
        return 2
    setup_process_logging(config.logging.level, config.logging.format)  # (escaped lines)
    # while PostgreSQL is down, asyncpg's pool logs a traceback per reconnect attempt; the
    # store's own error lines say it once per failed operation
    logging.getLogger("asyncpg.pool").setLevel(logging.ERROR)
    import uvloop  # noqa: PLC0415 - only the process needs it

    try:
        uvloop.run(run(config))
    except (ConfigError, OSError, StoreError) as exc:
        log.error("GCD failed: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The admin endpoint of one process: its paths, over what the program offers.

A program gives an :class:`Operable`: its metrics registry, its liveness and readiness
checks, its status for the page. :func:`admin_routes` makes the endpoints of it:

- ``/metrics``: the Prometheus text format (version 0.0.4);
- ``/health/live`` and ``/health/ready``: 200 or 503, every check and its reason in JSON;
- ``/status`` (and ``/``): the status page; ``/status.json``: what it polls.
"""

from __future__ import annotations

from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from pyjoynr.admin.exposition import metrics_reply
from pyjoynr.admin.health import Check, health_reply
from pyjoynr.admin.http import Handler, Reply
from pyjoynr.admin.page import page_reply, status_reply

__all__ = ["PATHS", "Operable", "admin_routes"]

PATHS = ("/", "/health/live", "/health/ready", "/metrics", "/status", "/status.json")


class Operable(Protocol):
    """What a program shows on its admin endpoint."""

    @property
    def registry(self) -> CollectorRegistry: ...

    def live(self) -> list[Check]: ...

    async def ready(self) -> list[Check]: ...

    async def status(self) -> dict[str, Any]: ...


def admin_routes(target: Operable) -> dict[str, Handler]:
    async def metrics() -> Reply:
        return metrics_reply(target.registry)

    async def live() -> Reply:
        return health_reply("live", target.live())

    async def ready() -> Reply:
        return health_reply("ready", await target.ready())

    async def page() -> Reply:
        return page_reply(await target.status())

    async def status() -> Reply:
        return status_reply(await target.status())

    return {"/": page, "/status": page, "/status.json": status, "/metrics": metrics,
            "/health/live": live, "/health/ready": ready}

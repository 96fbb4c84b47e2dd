"""What the programs' admin parts share: :class:`ProgramOps`, the base of
``cluster_controller.operability.ClusterControllerOps`` and ``gcd.operability.GcdOps``.

It owns the admin server (started only when the ``[admin]`` section enables it), the metrics
registry read at each scrape, the probes to close at the end, the refusal counters (the
program's own components' plus the admin server's), and the liveness checks (the event loop
answers; the router's housekeeping runs). A program adds its metrics, readiness and status.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from pyjoynr.admin.app import admin_routes
from pyjoynr.admin.exposition import Exporter, make_registry
from pyjoynr.admin.health import Check, Probe
from pyjoynr.admin.http import AdminServer
from pyjoynr.admin.settings import AdminSettings
from pyjoynr.runtime.housekeeping import RouterHousekeeping
from pyjoynr.runtime.logs import RepeatedWarnings

__all__ = ["ProgramOps"]


class ProgramOps(ABC):
    """The admin endpoint of one program (an :class:`~admin.app.Operable`)."""

    def __init__(self, settings: AdminSettings, *, name: str, warnings: RepeatedWarnings,
                 housekeeping: RouterHousekeeping) -> None:
        self.settings = settings
        #: names the server in log lines ("admin endpoint of ...")
        self.name = name
        self.started_s = time.time()
        self._started_monotonic = time.monotonic()
        self.server: AdminServer | None = None
        self._warnings = warnings
        self._housekeeping = housekeeping
        #: closed by :meth:`stop` (a subclass appends its own)
        self.probes: list[Probe] = []
        self._registry = make_registry(Exporter(self._metrics))

    @property
    def registry(self) -> CollectorRegistry:
        return self._registry

    async def start(self) -> None:
        if not self.settings.enabled:
            return
        self.server = AdminServer(self.settings, admin_routes(self), warnings=self._warnings,
                                  name=self.name)
        await self.server.start()

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
        for probe in self.probes:
            await probe.close()

    def _refusal_counters(self) -> dict[str, Any]:
        """Refusals per component: the program's own (:meth:`_component_counters`) and the
        admin server's."""
        counters = self._component_counters()
        if self.server is not None:
            counters["admin"] = self.server.counters
        return counters

    def live(self) -> list[Check]:
        running = self._housekeeping.running
        return [Check("event loop", True, "answering"),
                Check("housekeeping", running, "the router's sweep and purge run" if running
                      else "the router's sweep and purge do not run")]

    @abstractmethod
    def _component_counters(self) -> dict[str, Any]:
        """The refusal counters of the program's components, by component name."""

    @abstractmethod
    def _metrics(self) -> list[Metric]:
        """Every metric, read now (at a scrape)."""

    @abstractmethod
    async def ready(self) -> list[Check]: ...

    @abstractmethod
    async def status(self) -> dict[str, Any]: ...

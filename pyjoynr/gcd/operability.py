"""A GCD instance on the admin endpoint: its metrics, health checks and status page.

:class:`GcdOps` is the :class:`~admin.app.Operable` of the GCD process (``python -m pyjoynr.gcd``);
the functions are also what a cluster controller shows of the GCD it embeds
(``cluster_controller.operability``).

- metrics (prefix ``joynr_gcd``): requests per method and outcome and their latency, the store
  writes' latency, the synchronisation's figures (docs/discovery.md, "A GCD cluster"),
  the index, plus the router, MQTT backend and refusal figures every process has;
- liveness: the router's housekeeping runs;
- readiness: the index is loaded, the store answers (a probe: its current version, reused for
  ``[admin] probe_max_age_s``), the broker connection is up. An instance whose index is
  loaded but whose store does not answer still answers lookups (writes fail): with ``[gcd]
  ready_when_store_down`` (the default) it is ready but *degraded* (200, the body says so),
  else not ready (503). An instance still loading its index at start-up while it answers
  lookups from the store (``serve_while_loading``) is ready but degraded too;
- the status page: identity (with the instance id, which also labels ``joynr_gcd_info``),
  health, backend, index and synchronisation, requests, refusals.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from prometheus_client.core import Metric

from pyjoynr.admin.exposition import (
    admin_metrics,
    counter,
    gauge,
    latency_family,
    mqtt_metrics,
    refusal_metrics,
    router_metrics,
    routing_metrics,
)
from pyjoynr.admin.health import Check, Probe
from pyjoynr.admin.ops import ProgramOps
from pyjoynr.admin.settings import AdminSettings
from pyjoynr.admin.status import (
    facts,
    latency_ms,
    mqtt_section,
    page_status,
    recent_section,
    refusals_section,
    stamp,
    table,
)
from pyjoynr.runtime.logs import get_logger

if TYPE_CHECKING:
    from pyjoynr.gcd.service import GcdService
    from pyjoynr.gcd.sync import SyncStats

__all__ = ["GcdOps", "gcd_metrics", "gcd_ready_checks", "gcd_sections",
           "store_probe"]

log = get_logger(__name__)

#: the metrics' prefix
PREFIX = "joynr_gcd"


# ---------------------------------------------------------------------------- metrics


def gcd_metrics(service: GcdService, prefix: str = PREFIX) -> list[Metric]:
    """Every figure of one GCD instance (see the module docstring)."""
    provider, sync = service.provider, service.sync
    stats = sync.stats()
    failures: list[tuple[list[str], float]] = []
    index = sync.index.stats()
    metrics: list[Metric] = [
        counter(f"{prefix}_requests", "Requests the GCD answered, by method (the overload) and "
                "outcome (ok, a modelled error's name, provider-error, failed)",
                ["method", "outcome"], (([m, o], n) for (m, o), n
                                        in sorted(provider.requests.items()))),
        latency_family(f"{prefix}_request_latency_seconds", "Time the GCD took to answer a "
                       "request, by method", "method", provider.request_latency),
        latency_family(f"{prefix}_store_latency_seconds", "Time a store write took, by "
                       "operation (add, remove, touch, removeStale)", "operation",
                       provider.store_latency),
        gauge(f"{prefix}_index_loaded", "1 once the in-memory index is loaded and caught up",
              [], [((), 1.0 if stats.ready else 0.0)]),
        gauge(f"{prefix}_serving_from_store", "1 while the index loads at start-up and "
              "lookups are answered from the store", [],
              [((), 1.0 if stats.serving_from_store else 0.0)]),
        gauge(f"{prefix}_index_rows_loaded", "Rows the running (or last) load of the index "
              "has taken", [], [((), stats.rows_loaded)]),
        counter(f"{prefix}_store_lookups", "Lookups answered by reading the store (while the "
                "index loaded)", [], [((), provider.store_lookups)]),
        gauge(f"{prefix}_index_rows", "Rows in the in-memory index", [],
              [((), stats.index_rows)]),
        gauge(f"{prefix}_index_participants", "Participants in the in-memory index", [],
              [((), index.participants)]),
        gauge(f"{prefix}_index_tombstones", "Deletions the index remembers", [],
              [((), index.tombstones)]),
        gauge(f"{prefix}_shared_parameter_objects", "Distinct parameter objects the index "
              "shares between rows", [], [((), stats.shared_parameter_objects)]),
        gauge(f"{prefix}_shared_parameter_references", "References to shared parameter "
              "objects", [], [((), stats.shared_parameter_references)]),
        gauge(f"{prefix}_sync_watermark", "The index's watermark: every store change up to "
              "this version is reflected", [], [((), stats.watermark)]),
        gauge(f"{prefix}_sync_catch_up_lag_versions", "The newest known store version minus "
              "the watermark", [], [((), stats.catch_up_lag_versions)]),
        gauge(f"{prefix}_sync_catch_up_lag_seconds", "From the first unserved wake-up to the "
              "end of the catch-up that served it (the last one)", [],
              [((), stats.catch_up_lag_ms / 1000)]),
    ]
    if stats.last_catch_up_age_s is not None:
        metrics.append(gauge(f"{prefix}_sync_last_catch_up_age_seconds", "Seconds since the "
                             "last successful catch-up", [], [((), stats.last_catch_up_age_s)]))
    if stats.store_rows_checked is not None:
        metrics += [
            gauge(f"{prefix}_store_rows_checked", "Rows of the store when they were last "
                  "counted (at the last drift repair or load; see its age): not a live figure",
                  [], [((), stats.store_rows_checked)]),
            gauge(f"{prefix}_store_rows_checked_age_seconds", "Seconds since the store's rows "
                  "were last counted", [], [((), stats.store_rows_checked_age_s or 0.0)]),
            gauge(f"{prefix}_index_rows_checked", "Rows of the index right after the store's "
                  "rows were last counted (compare with store_rows_checked)", [],
                  [((), stats.index_rows_checked or 0)])]
    for (operation, reason), n in sorted(provider.store_failures.items()):
        failures.append(([operation, reason], n))
    for name, value, doc in (
            ("notifications_received", stats.notifications_received,
             "Change notifications received from the cluster"),
            ("notifier_reconnects", stats.reconnects,
             "Reconnections of the notification listener"),
            ("changes_applied", stats.changes_applied,
             "Changes applied to the index by catch-ups and reloads"),
            ("own_changes_applied", stats.own_changes_applied,
             "Changes of this instance's own writes applied to the index"),
            ("catch_ups", stats.catch_ups, "Catch-ups run"),
            ("catch_up_failures", stats.catch_up_failures, "Catch-ups that failed"),
            ("reloads", stats.reloads, "Whole reloads of the index"),
            ("repairs", stats.repair_runs, "Drift repairs run"),
            ("repair_failures", stats.repair_failures, "Drift repairs that failed"),
            ("buckets_repaired", stats.buckets_repaired, "Buckets that differed at a repair"),
            ("keys_repaired", stats.keys_repaired, "Keys a repair changed in the index"),
            ("expired_purged", stats.expired_purged, "Expired entries purged"),
            ("tombstones_purged", stats.tombstones_purged, "Tombstones purged")):
        metrics.append(counter(f"{prefix}_sync_{name}", doc, [], [((), value)]))
    metrics.append(counter(f"{prefix}_store_failures", "Store calls that failed, by operation "
                           "and reason (unreachable, timeout, connection-lost, conflict, "
                           "database, not-open)", ["operation", "reason"], failures))
    metrics += router_metrics(prefix, service.router, service.telemetry)
    metrics += routing_metrics(prefix, service.router)
    metrics += mqtt_metrics(prefix, service.mqtt)
    return metrics


# ---------------------------------------------------------------------------- health


def store_probe(service: GcdService) -> Callable[[], Awaitable[str | None]]:
    """A probe run: the store's current version (None: it answered)."""

    async def run() -> str | None:
        await service.sync.store.current_version()
        return None

    return run


async def gcd_ready_checks(service: GcdService, probe: Probe, *, name: str = "GCD"
                           ) -> list[Check]:
    sync = service.sync
    if sync.ready:
        index = Check(f"{name} index", True, f"loaded: {len(sync.index)} rows, watermark "
                      f"{sync.index.watermark}")
    elif sync.serving_from_store:
        # serving, from the store: degraded, still ready
        index = Check(f"{name} index", False,
                      f"loading: {sync.rows_loaded} rows so far; degraded: lookups are answered "
                      "from the store meanwhile (serve_while_loading)", required=False)
    else:
        index = Check(f"{name} index", False, "loading" if sync.started else "not loaded")
    checks = [index]
    failure = await probe()
    age = "" if probe.last is None else f" ({time.monotonic() - probe.last[0]:.1f} s ago)"
    store = service.settings.store
    if failure is None:
        checks.append(Check(f"{name} store", True, f"{store} store answers{age}"))
    elif sync.ready and service.settings.ready_when_store_down:
        # lookups are answered from the index; only writes fail: degraded, still ready
        checks.append(Check(f"{name} store", False,
                            f"{store} store does not answer: {failure}; degraded: lookups are "
                            "answered from the index, writes fail (ready_when_store_down)",
                            required=False))
    else:
        checks.append(Check(f"{name} store", False,
                            f"{store} store does not answer: {failure}"))
    backend = service.mqtt.backends[0]
    checks.append(Check(f"{name} broker", backend.connected.is_set(),
                        f"connected to {backend.url} (connection {backend.connections})"
                        if backend.connected.is_set() else
                        f"not connected to {backend.url}"
                        + (f": {backend.last_error}" if backend.last_error else "")))
    return checks


# ---------------------------------------------------------------------------- status page


#: figures of SyncStats the status page shows in a line of their own (or not at all)
_SHOWN_TOGETHER = frozenset({"ready", "store_rows_checked", "store_rows_checked_age_s",
                             "index_rows_checked"})


def _rows_checked(stats: SyncStats) -> str:
    """The store's last row count, when it was made and the index's beside it."""
    if stats.store_rows_checked is None or stats.store_rows_checked_age_s is None:
        return "not counted yet (at the first drift repair)"
    return (f"{stats.store_rows_checked} rows {stats.store_rows_checked_age_s:.0f} s ago "
            f"(at a drift repair or load; the index had {stats.index_rows_checked} then)")


def gcd_sections(service: GcdService, *, max_rows: int, title: str = "GCD"
                 ) -> list[dict[str, Any]]:
    """The index, synchronisation and request sections of one instance."""
    s = service.settings
    stats = service.sync.stats()
    sync_items: list[tuple[str, Any]] = [
        ("instance id", service.instance_id),
        ("store", s.store), ("cluster name", s.cluster_name), ("GBID", s.gbid),
        ("valid GBIDs", ", ".join(s.valid_gbids)), ("index loaded", stats.ready),
    ]
    for key, value in stats.as_dict().items():
        if key in _SHOWN_TOGETHER:
            continue
        sync_items.append((key.replace("_", " "),
                           round(value, 3) if isinstance(value, float) else value))
        if key == "index_rows":
            sync_items.append(("store rows, last counted", _rows_checked(stats)))
    provider = service.provider
    methods = sorted({method for method, _ in provider.requests})
    rows = []
    for method in methods:
        outcomes = {o: n for (m, o), n in provider.requests.items() if m == method}
        mean, p50, p99 = latency_ms(provider.request_latency[method].snapshot())
        errors = ", ".join(f"{o} {n}" for o, n in sorted(outcomes.items()) if o != "ok")
        rows.append((method, sum(outcomes.values()), outcomes.get("ok", 0), errors or None,
                     mean, p50, p99))
    store_rows = []
    for operation, histogram in provider.store_latency.items():
        mean, p50, p99 = latency_ms(histogram.snapshot())
        store_rows.append((operation, histogram.count, mean, p50, p99))
    return [
        facts("gcd-sync", f"{title}: index and synchronisation", sync_items),
        table("gcd-requests", f"{title}: requests", ("method", "requests", "ok", "errors",
                                                    "ms mean", "ms p50", "ms p99"), rows,
              max_rows=max_rows),
        table("gcd-store", f"{title}: store writes", ("operation", "writes", "ms mean",
                                                     "ms p50", "ms p99"), store_rows,
              max_rows=max_rows),
    ]


class GcdOps(ProgramOps):
    """The GCD process on its admin endpoint (see the module docstring)."""

    def __init__(self, service: GcdService, settings: AdminSettings) -> None:
        super().__init__(settings, name=f"admin endpoint of {service.name}",
                         warnings=service.warnings, housekeeping=service.housekeeping)
        self.service = service
        self.store_probe = Probe("the store", store_probe(service),
                                 timeout_s=settings.probe_timeout_s,
                                 max_age_s=settings.probe_max_age_s)
        self.probes.append(self.store_probe)

    def _metrics(self) -> list[Metric]:
        service = self.service
        metrics: list[Metric] = [gauge(f"{PREFIX}_info", "The GCD instance (always 1)",
                                       ["gbid", "store", "cluster", "instance_id"],
                                       [([service.settings.gbid, service.settings.store,
                                          service.settings.cluster_name,
                                          service.instance_id], 1.0)])]
        metrics += gcd_metrics(service)
        metrics += refusal_metrics(PREFIX, service.telemetry, self._refusal_counters())
        metrics += admin_metrics(PREFIX, self.server)
        return metrics

    def _component_counters(self) -> dict[str, Any]:
        return {"mqtt": self.service.mqtt.counters}

    async def ready(self) -> list[Check]:
        return await gcd_ready_checks(self.service, self.store_probe)

    async def status(self) -> dict[str, Any]:
        service, s = self.service, self.service.settings
        rows = self.settings.status_max_rows
        identity = facts("identity", "Identity", [
            ("program", "GCD"), ("instance id", service.instance_id),
            ("instance id kept in", None if service.identity.path is None
             else str(service.identity.path)),
            ("GBID", s.gbid), ("broker", str(service.mqtt.backends[0].url)),
            ("store", s.store), ("client id", service.mqtt.client_id),
            ("shared subscription group", s.shared_subscription_group or None),
            ("process id", os.getpid()), ("host", socket.gethostname()),
            ("Python", sys.version.split()[0]), ("started", stamp(self.started_s)),
            ("admin endpoint", None if self.server is None else self.server.url),
        ])
        sections = [identity, mqtt_section(service.mqtt, "MQTT backend")]
        sections += gcd_sections(service, max_rows=rows)
        sections.append(refusals_section(service.telemetry, self._refusal_counters(),
                                         max_rows=rows))
        sections.append(recent_section([service.warnings.recent], max_rows=rows))
        return page_status(title=f"GCD for {s.gbid}, instance {service.instance_id}",
                           started_s=self.started_s,
                           started_monotonic=self._started_monotonic,
                           refresh_s=self.settings.status_refresh_s,
                           checks=await self.ready(), sections=sections)

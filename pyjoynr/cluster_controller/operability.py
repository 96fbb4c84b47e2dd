"""The cluster controller on its admin endpoint: metrics, health checks, the status page.

:class:`ClusterControllerOps` is the :class:`~admin.app.Operable` of a cluster controller; the
controller starts its admin endpoint first (so that liveness and readiness answer while the
rest starts) and stops it last.

- metrics (prefix ``joynr_cc``; those of an embedded GCD under ``joynr_gcd``): messages routed
  per type and outcome, refusals and drops per component and reason, queues, routing table
  entries per kind and address type, websocket clients and their outboxes, per MQTT backend
  (connected, connections, queued, in flight, publish latency), the GCD link (calls per method
  and outcome, latency), the local directory;
- liveness: the router's housekeeping runs;
- readiness: listening for libjoynr runtimes, the default MQTT backend connected, the GCD
  answers (a probe, reused for ``[admin] probe_max_age_s``; a call of the link that was
  answered or not answered meanwhile counts as well), an embedded GCD's index loaded and its
  store answering; not while stopping;
- the status page: identity and uptime, health, backends, connected runtimes with their
  participant counts, routing table, queues, messages, GCD link, local directory, refusals and
  the recent rate-limited lines.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections import Counter
from importlib.metadata import PackageNotFoundError, version
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
    routing_section,
    stamp,
    table,
)
from pyjoynr.cluster_controller.gcd_link import CALL_OUTCOMES
from pyjoynr.gcd.operability import gcd_metrics, gcd_ready_checks, gcd_sections, store_probe
from pyjoynr.runtime.messages import MessageType
from pyjoynr.runtime.quotas import GLOBAL_PROVIDERS, MULTICAST_RECEIVERS, PROVIDERS, SUBSCRIPTIONS
from pyjoynr.runtime.smrf import FORM as SMRF_FORM
from pyjoynr.runtime.telemetry import OUTCOMES

if TYPE_CHECKING:
    from pyjoynr.cluster_controller.controller import ClusterController
    from pyjoynr.transports.uds.server import UdsClientSummary
    from pyjoynr.transports.websocket.server import ClientSummary

__all__ = ["PREFIX", "ClusterControllerOps"]

PREFIX = "joynr_cc"


def _version() -> str:
    try:
        return version("pyjoynr")
    except PackageNotFoundError:
        return "unknown"


class ClusterControllerOps(ProgramOps):
    """See the module docstring."""

    def __init__(self, cc: ClusterController, settings: AdminSettings) -> None:
        super().__init__(settings, name=f"admin endpoint of {cc.id}",
                         warnings=cc.warnings, housekeeping=cc.housekeeping)
        self.cc = cc
        self.version = _version()
        # (the link's call ends first, with its own outcome in the link's figures)
        self.gcd_probe = Probe("the GCD", self._probe_gcd,
                               timeout_s=settings.probe_timeout_s + 1.0,
                               max_age_s=settings.probe_max_age_s)
        self.probes.append(self.gcd_probe)
        self.store_probe: Probe | None = None  # of an embedded GCD, once it exists

    # ------------------------------------------------------------------ metrics

    def _component_counters(self) -> dict[str, Any]:
        cc = self.cc
        counters: dict[str, Any] = {"websocket": cc.websocket.counters,
                                    "bounds": cc.quotas.counters}
        if cc.uds is not None:
            counters["uds"] = cc.uds.counters
        if cc.mqtt is not None:
            counters["mqtt"] = cc.mqtt.counters
        return counters

    def _metrics(self) -> list[Metric]:
        cc = self.cc
        clients = cc.websocket.client_summaries()
        metrics: list[Metric] = [
            gauge(f"{PREFIX}_info", "The cluster controller (always 1)", ["id", "version"],
                  [([cc.id, self.version], 1.0)]),
            gauge(f"{PREFIX}_websocket_clients", "libjoynr runtimes connected over websocket",
                  [], [((), len(clients))]),
            gauge(f"{PREFIX}_websocket_clients_by_dialect", "libjoynr runtimes connected over "
                  "websocket, by the frame dialect they speak (native, joynr)", ["dialect"],
                  [([d], sum(c.dialect == d for c in clients)) for d in ("native", "joynr")]),
            gauge(f"{PREFIX}_websocket_outbox_messages", "Messages waiting to be written to "
                  "websocket clients (all connections)", [],
                  [((), sum(c.pending for c in clients))]),
            gauge(f"{PREFIX}_websocket_outbox_bytes", "Bytes the messages waiting for "
                  "websocket clients hold", [], [((), sum(c.pending_bytes for c in clients))]),
            counter(f"{PREFIX}_websocket_connection_events", "Starts and ends of websocket "
                    "connections and what their peers did that is no refusal (connected, "
                    "disconnected, no-pong, no-handshake, handler-failed, ...; logged "
                    "rate-limited per peer host)", ["event"],
                    (([key], n) for key, n in sorted(cc.websocket.connection_events.items()))),
            counter(f"{PREFIX}_discovery_events", "The local directory's counters (providers "
                    "registered and unregistered, refusals, vanished providers removed or kept, "
                    "...)", ["event"],
                    (([key], n) for key, n in sorted(cc.discovery.counters.items()))),
            gauge(f"{PREFIX}_discovery_entries", "Providers in the local directory", [],
                  [((), len(cc.discovery.entries()))]),
        ]
        if cc.uds is not None:
            uds_clients = cc.uds.client_summaries()
            metrics += [
                gauge(f"{PREFIX}_uds_clients", "libjoynr runtimes connected over the Unix domain "
                      "socket", [], [((), len(uds_clients))]),
                gauge(f"{PREFIX}_uds_clients_by_dialect", "libjoynr runtimes connected over the "
                      "Unix domain socket, by the frame dialect they speak (native, joynr)",
                      ["dialect"], [([d], sum(c.dialect == d for c in uds_clients))
                                    for d in ("native", "joynr")]),
                gauge(f"{PREFIX}_uds_outbox_messages", "Messages waiting to be written to Unix "
                      "domain socket clients (all connections)", [],
                      [((), sum(c.pending for c in uds_clients))]),
                gauge(f"{PREFIX}_uds_outbox_bytes", "Bytes the messages waiting for Unix domain "
                      "socket clients hold", [], [((), sum(c.pending_bytes for c in uds_clients))]),
                counter(f"{PREFIX}_uds_connection_events", "Starts and ends of Unix domain "
                        "socket connections (connected, disconnected, ...; logged rate-limited "
                        "per peer uid)", ["event"],
                        (([key], n) for key, n in sorted(cc.uds.connection_events.items()))),
            ]
        metrics.append(gauge(
            f"{PREFIX}_connection_holdings", "What the websocket connections hold, by kind "
            "(routes, providers, global_providers, multicast_receivers, subscriptions), "
            "each connection within [connection_bounds]; refusals beyond a bound are "
            f"{PREFIX}_refusals{{component=\"bounds\"}}", ["kind"],
            [([kind], n) for kind, n in cc.quotas.totals().items()]))
        access = cc.access
        if access is not None:
            events = self._access_events()
            metrics += [
                counter(f"{PREFIX}_access_control_events", "Access control: checks made, "
                        "refusals by reason (refused-acl-denied, refused-rcl-denied, ...), what "
                        "audit mode let through (audit-would-refuse-...), reloads of the "
                        "provisioning files (reloaded, reload-failed) and editor changes",
                        ["event"], (([key], n) for key, n in sorted(events.items()))),
                gauge(f"{PREFIX}_access_control_entries", "Entries of the access control "
                      "tables in force (all seven tables)", [],
                      [((), len(access.controller.store))]),
            ]
        metrics += router_metrics(PREFIX, cc.router, cc.telemetry)
        metrics += routing_metrics(PREFIX, cc.router)
        metrics += refusal_metrics(PREFIX, cc.telemetry, self._refusal_counters())
        if cc.mqtt is not None:
            metrics += mqtt_metrics(PREFIX, cc.mqtt)
        link = cc.gcd_link
        if link is not None:
            state = link.state
            metrics += [
                counter(f"{PREFIX}_gcd_calls", "Calls to the GCD, by method and outcome (ok; "
                        "error: answered with a modelled error, the probe's usual answer; "
                        "timeout; failed)", ["method", "outcome"],
                        (([m, o], n) for (m, o), n in sorted(link.calls.items()))),
                latency_family(f"{PREFIX}_gcd_call_latency_seconds", "Time a call to the GCD "
                               "took (answered or not), by method", "method", link.latency),
            ]
            if state.reachable is not None:
                metrics.append(gauge(f"{PREFIX}_gcd_reachable", "1 when the last call to the "
                                     "GCD was answered", [],
                                     [((), 1.0 if state.reachable else 0.0)]))
        metrics += admin_metrics(PREFIX, self.server)
        if cc.gcd is not None:
            metrics += gcd_metrics(cc.gcd)
        return metrics

    # ------------------------------------------------------------------ health

    async def _probe_gcd(self) -> str | None:
        link = self.cc.gcd_link
        if link is None:
            return "the link to the GCD is not started yet"
        return await link.probe(round(self.settings.probe_timeout_s * 1000))

    async def _gcd_check(self) -> Check:
        link = self.cc.gcd_link
        if link is None:
            return Check("GCD", False, "the link to the GCD is not started yet")
        mqtt = self.cc.mqtt
        if mqtt is not None and not mqtt.backends[0].connected.is_set():
            # a probe would only wait in the backend's queue and expire there
            return Check("GCD", False, "cannot be asked: the default MQTT backend is not "
                         "connected")
        # the link's own calls count as probes: the newer of the two answers
        state = link.state
        last_call = state.last_call_s
        probed = self.gcd_probe.last
        probe_age = None if probed is None else time.monotonic() - probed[0]
        call_age = None if last_call is None else time.time() - last_call
        if call_age is not None and call_age < self.settings.probe_max_age_s and (
                probe_age is None or call_age < probe_age):
            if state.reachable:
                return Check("GCD", True, f"answered a call {call_age:.1f} s ago")
            return Check("GCD", False, f"does not answer: {state.last_failure}")
        failure = await self.gcd_probe()
        age = ("" if self.gcd_probe.last is None
               else f" ({time.monotonic() - self.gcd_probe.last[0]:.1f} s ago)")
        return Check("GCD", failure is None,
                     f"answers the probe{age}" if failure is None
                     else f"does not answer{age}: {failure}")

    async def ready(self) -> list[Check]:
        cc = self.cc
        checks = []
        if cc.stopping:
            checks.append(Check("running", False, "shutting down"))
        checks.append(Check("websocket", True, f"listening at {cc.websocket_address.url}")
                      if cc.websocket.listening else
                      Check("websocket", False, "not listening for libjoynr runtimes (yet)"))
        if cc.uds is not None:
            checks.append(Check("uds", True, f"listening at {cc.uds.address.url}")
                          if cc.uds.listening else
                          Check("uds", False, "not listening on the Unix domain socket (yet)"))
        gbid = cc.config.mqtt.default_gbid
        if gbid is None:
            checks.append(Check("MQTT", True, "no MQTT backends configured"))
        elif cc.mqtt is None:
            checks.append(Check("MQTT", False, "the MQTT backends are not started yet"))
        else:
            backend = cc.mqtt.backends[0]
            if backend.connected.is_set():
                checks.append(Check("MQTT", True, f"default backend {gbid} connected to "
                                    f"{backend.url} (connection {backend.connections})"))
            else:
                checks.append(Check("MQTT", False, f"default backend {gbid} not connected to "
                                    f"{backend.url}" + (f": {backend.last_error}"
                                                        if backend.last_error else "")))
        if cc.uses_gcd:
            checks.append(await self._gcd_check())
        if cc.gcd is not None:
            if self.store_probe is None:
                self.store_probe = Probe("the embedded GCD's store", store_probe(cc.gcd),
                                         timeout_s=self.settings.probe_timeout_s,
                                         max_age_s=self.settings.probe_max_age_s)
                self.probes.append(self.store_probe)
            checks += await gcd_ready_checks(cc.gcd, self.store_probe, name="embedded GCD")
        return checks

    # ------------------------------------------------------------------ status page

    async def status(self) -> dict[str, Any]:
        cc = self.cc
        rows = self.settings.status_max_rows
        sections = [self._identity(), mqtt_section(cc.mqtt), self._runtimes(rows),
                    routing_section(cc.router, cc.telemetry), self._queues(),
                    self._messages()]
        sections += self._gcd_link(rows)
        sections.append(self._directory())
        if cc.access is not None:
            sections.append(self._access_control())
        rings = [cc.warnings.recent]
        if cc.gcd is not None:
            sections += gcd_sections(cc.gcd, max_rows=rows, title="Embedded GCD")
            rings.append(cc.gcd.warnings.recent)
        sections.append(refusals_section(cc.telemetry, self._refusal_counters(), max_rows=rows))
        sections.append(recent_section(rings, max_rows=rows))
        return page_status(title=f"cluster controller {cc.id}", started_s=self.started_s,
                           started_monotonic=self._started_monotonic,
                           refresh_s=self.settings.status_refresh_s,
                           checks=await self.ready(), sections=sections)

    def _access_control(self) -> dict[str, Any]:
        cc = self.cc
        access = cc.access
        assert access is not None
        return facts("access-control", "Access control", [
            ("mode", "audit (nothing refused)" if access.controller.audit else "enforcing"),
            ("entries in force", len(access.controller.store)),
            ("provisioning directory", None if access.directory is None
             else str(access.directory.path)),
            ("changes made through the editor", len(access.edits)),
            *sorted(self._access_events().items()),
        ])

    def _access_events(self) -> Counter[str]:
        """Access control's counters: the controller's checks and refusals, the reloads, the
        editor's changes."""
        cc = self.cc
        assert cc.access is not None
        events = cc.access.controller.counters + cc.access.counters
        if cc.acl_editor is not None:
            events += cc.acl_editor.counters
        return events

    def _identity(self) -> dict[str, Any]:
        cc = self.cc
        return facts("identity", "Identity", [
            ("program", "cluster controller"), ("id", cc.id), ("version", self.version),
            ("libjoynr runtimes connect to", cc.websocket_address.url
             + ("" if cc.uds is None else f", {cc.uds.address.url}")),
            ("global address", None if cc.global_address is None else repr(cc.global_address)),
            ("process id", os.getpid()), ("host", socket.gethostname()),
            ("Python", sys.version.split()[0]), ("started", stamp(self.started_s)),
            ("admin endpoint", None if self.server is None else self.server.url),
            ("SMRF codec", "compiled" if SMRF_FORM.compiled
             else f"plain Python: {SMRF_FORM.reason}"),
        ])

    def _runtimes(self, max_rows: int) -> dict[str, Any]:
        cc = self.cc
        clients: list[ClientSummary | UdsClientSummary] = sorted(
            [*cc.websocket.client_summaries(),
             *(() if cc.uds is None else cc.uds.client_summaries())],
            key=lambda c: c.address.id)
        quotas = cc.quotas

        def held(kind: str, client: ClientSummary | UdsClientSummary) -> int | None:
            return quotas.held(kind, client.address)

        # (what each holds of its [connection_bounds]: providers, global ones, receivers,
        # subscriptions; its routes are its participants)
        return table("runtimes", "Connected libjoynr runtimes",
                     ("client id", "from", "dialect", "owner id", "connected since",
                      "participants", "providers", "global providers", "multicast receivers",
                      "subscriptions", "outbox messages", "outbox bytes"),
                     ((c.address.id, c.peer, c.dialect, c.owner_id or "", stamp(c.since_s),
                       len(cc.router.participants_at(c.address)), held(PROVIDERS, c),
                       held(GLOBAL_PROVIDERS, c), held(MULTICAST_RECEIVERS, c),
                       held(SUBSCRIPTIONS, c), c.pending, c.pending_bytes)
                      for c in clients), max_rows=max_rows)

    def _queues(self) -> dict[str, Any]:
        cc = self.cc
        clients = cc.websocket.client_summaries()
        items: list[tuple[str, Any]] = [
            ("router: messages", cc.router.queued()),
            ("router: bytes", cc.router.queued_bytes()),
            ("websocket outboxes: messages", sum(c.pending for c in clients)),
            ("websocket outboxes: bytes", sum(c.pending_bytes for c in clients)),
        ]
        if cc.uds is not None:
            uds_clients = cc.uds.client_summaries()
            items += [("uds outboxes: messages", sum(c.pending for c in uds_clients)),
                      ("uds outboxes: bytes", sum(c.pending_bytes for c in uds_clients))]
        if cc.mqtt is not None:
            backends = cc.mqtt.backends
            items += [("MQTT: queued", sum(len(b.queue) for b in backends)),
                      ("MQTT: in flight", sum(len(b.inflight) for b in backends)),
                      ("MQTT: bytes", sum(b.bytes for b in backends))]
        return facts("queues", "Queues", items)

    def _messages(self) -> dict[str, Any]:
        statistics = self.cc.telemetry.statistics
        routed, outcomes = statistics.routed_by_type, statistics.outcomes
        rows: list[list[str | int]] = [
            [t.name, routed[t], *(outcomes[o][t] for o in OUTCOMES)]
            for t in MessageType
            if routed[t] or any(outcomes[o][t] for o in OUTCOMES)]
        return table("messages", "Messages routed (since the start)",
                     ("type", "routed", *OUTCOMES), rows, max_rows=len(MessageType))

    def _gcd_link(self, max_rows: int) -> list[dict[str, Any]]:
        cc = self.cc
        link = cc.gcd_link
        if link is None:
            note = ("the GCD is not used ([discovery] gcd, or no MQTT backends)"
                    if not cc.uses_gcd else "not started yet")
            return [facts("gcd-link", "GCD link", [("state", note)])]
        state = link.state
        summary = facts("gcd-link", "GCD link", [
            ("reachable (last call answered)", state.reachable),
            ("last answer", stamp(state.last_answer_s)),
            ("last failure", stamp(state.last_failure_s)),
            ("last failure reason", state.last_failure or None),
            ("GBIDs", ", ".join(link.gbids)),
        ])
        methods = sorted({m for m, _ in link.calls})
        rows = []
        for method in methods:
            mean, p50, p99 = latency_ms(link.latency[method].snapshot())
            rows.append((method, *(link.calls[method, o] for o in CALL_OUTCOMES), mean, p50,
                         p99))
        calls = table("gcd-calls", "GCD calls", ("method", *CALL_OUTCOMES, "ms mean", "ms p50",
                                                 "ms p99"), rows, max_rows=max_rows)
        return [summary, calls]

    def _directory(self) -> dict[str, Any]:
        discovery = self.cc.discovery
        items: list[tuple[str, Any]] = [
            ("providers", len(discovery.entries())),
            ("global providers (touched)", len(discovery.global_participants())),
        ]
        items += [(key, n) for key, n in sorted(discovery.counters.items())]
        return facts("directory", "Local directory", items)

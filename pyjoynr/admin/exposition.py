"""Metrics in the Prometheus text format, read from the components' own counters when scraped.

The components count as they work (plain integers and dicts: ``telemetry.counters``,
``telemetry.statistics.routed_by_type``, a transport's ``counters``, a backend's ``published``,
the :class:`~runtime.metrics.LatencyHistogram` of its publishes); nothing on a message's path
touches a metrics library. At a scrape, :class:`Exporter` (a prometheus_client collector) calls
the functions it was given, which turn those figures into metric families; prometheus_client
writes them (:func:`render`). So a counter is exact (it is the component's own) and the cost of
the metrics is the scrape's, not the messages'.

The functions here describe what the cluster controller and the GCD share (a router, its
routing table, MQTT backends, refusals, the admin endpoint itself), under a prefix
(``joynr_cc`` or ``joynr_gcd``); the programs add their own (``cluster_controller.operability``,
``gcd.operability``). docs/operating.md, "Metrics", lists every metric.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import Collector

from pyjoynr.admin.http import AdminServer, Reply
from pyjoynr.runtime.logs import RepeatedWarnings
from pyjoynr.runtime.metrics import HistogramSnapshot, LatencyHistogram, LatencyHistograms
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.telemetry import OUTCOMES, Telemetry
from pyjoynr.transports.mqtt.transport import MqttTransport

__all__ = [
    "CONTENT_TYPE",
    "Exporter",
    "admin_metrics",
    "counter",
    "gauge",
    "histogram",
    "latency_family",
    "make_registry",
    "metrics_reply",
    "mqtt_metrics",
    "refusal_metrics",
    "router_metrics",
    "routing_metrics",
]

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

MetricSource = Callable[[], Iterable[Metric]]


class Exporter(Collector):
    """A collector whose metrics are made, at each scrape, by the given functions."""

    def __init__(self, *sources: MetricSource) -> None:
        self.sources = list(sources)

    def add(self, source: MetricSource) -> None:
        self.sources.append(source)

    def collect(self) -> Iterator[Metric]:
        for source in self.sources:
            yield from source()


def make_registry(exporter: Exporter) -> CollectorRegistry:
    """A registry of its own for one process (not prometheus_client's global one: several
    cluster controllers may run in one test process): the exporter plus prometheus_client's
    process, garbage collector and platform figures."""
    registry = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=registry)
    GCCollector(registry=registry)
    PlatformCollector(registry=registry)
    registry.register(exporter)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def metrics_reply(registry: CollectorRegistry) -> Reply:
    return Reply(200, render(registry), CONTENT_TYPE)


# ---------------------------------------------------------------------------- families

Samples = Iterable[tuple[Sequence[str], float]]


def counter(name: str, doc: str, labels: Sequence[str], samples: Samples) -> CounterMetricFamily:
    """A counter family (``name`` without ``_total``: prometheus_client adds it)."""
    family = CounterMetricFamily(name, doc, labels=list(labels))
    for values, value in samples:
        family.add_metric(list(values), value)
    return family


def gauge(name: str, doc: str, labels: Sequence[str], samples: Samples) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=list(labels))
    for values, value in samples:
        family.add_metric(list(values), value)
    return family


def histogram(name: str, doc: str, labels: Sequence[str],
              snapshots: Iterable[tuple[Sequence[str], HistogramSnapshot]]
              ) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=list(labels))
    for values, snap in snapshots:
        buckets = [("+Inf" if bound == float("inf") else repr(bound), float(count))
                   for bound, count in snap.buckets]
        family.add_metric(list(values), buckets, snap.total_s)
    return family


def latency_family(name: str, doc: str, label: str, histograms: LatencyHistograms
                   ) -> HistogramMetricFamily:
    return histogram(name, doc, [label], (([value], h.snapshot())
                                          for value, h in histograms.items()))


# ---------------------------------------------------------------------------- shared parts


def router_metrics(prefix: str, router: MessageRouter, telemetry: Telemetry) -> list[Metric]:
    """Messages routed per type and outcome, the router's other events (the process's
    counters that are not drops), its queues."""
    counters = telemetry.counters
    statistics = telemetry.statistics
    return [
        counter(f"{prefix}_messages_routed", "Messages handed to the router, by type (a queued "
                "message again when it goes out)", ["type"],
                (([t.name], n) for t, n in statistics.routed_by_type.items())),
        counter(f"{prefix}_messages", "What became of routed messages, by type and outcome "
                "(forwarded: a transport took it, a multicast once per next hop; queued; "
                "dropped: when routed or later from a queue)", ["type", "outcome"],
                (([t.name, outcome], n) for outcome in OUTCOMES
                 for t, n in statistics.outcomes[outcome].items())),
        counter(f"{prefix}_router_events", "The router's counters that are not drops "
                "(queued, send-refused, multicast, answered-not-sent, evicted-learned-route, "
                "...)", ["event"],
                (([key], n) for key, n in sorted(counters.items())
                 if not key.startswith("dropped-"))),
        gauge(f"{prefix}_router_queued_messages", "Messages waiting in the router's queues "
              "(recipients without a route, or whose transport refused them)", [],
              [((), router.queued())]),
        gauge(f"{prefix}_router_queued_bytes", "Bytes the messages in the router's queues hold",
              [], [((), router.queued_bytes())]),
    ]


def routing_metrics(prefix: str, router: MessageRouter) -> list[Metric]:
    total, sticky, learned, by_type = router.routing_counts()
    return [
        gauge(f"{prefix}_routing_entries", "Routing table entries, by kind (sticky: "
              "provisioned, never removed; learned: replyTo routes taught by requests from a "
              "backend; other)", ["kind"],
              [(["sticky"], sticky), (["learned"], learned),
               (["other"], max(0, total - sticky - learned))]),
        gauge(f"{prefix}_routing_entries_by_address", "Routing table entries, by the type of "
              "their address", ["address_type"],
              (([name], n) for name, n in sorted(by_type.items()))),
    ]


def refusal_metrics(prefix: str, telemetry: Telemetry,
                    components: Mapping[str, Mapping[str, int]]) -> list[Metric]:
    """Every drop and refusal, by component (router: the ``dropped-<reason>`` counters of the
    process's ``telemetry``; the transports and the admin endpoint: every counter they keep)
    and reason; and the log lines the rate limit left out (the telemetry's limit of repeated
    warnings)."""
    samples: list[tuple[Sequence[str], float]] = [
        (["router", key.removeprefix("dropped-")], n)
        for key, n in sorted(telemetry.counters.items()) if key.startswith("dropped-")]
    for component, counts in components.items():
        samples += [([component, reason], n) for reason, n in sorted(counts.items())]
    return [
        counter(f"{prefix}_refusals", "Messages, frames, connections and requests refused or "
                "dropped, by component and reason", ["component", "reason"], samples),
        warnings_metric(prefix, telemetry.warnings),
    ]


def warnings_metric(prefix: str, warnings: RepeatedWarnings) -> Metric:
    return counter(f"{prefix}_log_lines_suppressed", "Repeated warnings counted but not "
                   "logged by the rate limit (each key's first line and a summary are logged)",
                   [], [((), warnings.suppressed)])


def _latency(snapshots: Iterable[tuple[str, LatencyHistogram]]
             ) -> Iterator[tuple[Sequence[str], HistogramSnapshot]]:
    for label, h in snapshots:
        yield [label], h.snapshot()


def mqtt_metrics(prefix: str, mqtt: MqttTransport) -> list[Metric]:
    """Per backend (GBID): connected, connections and failed attempts, queued, in flight,
    bytes, published, received, publish latency; the subscribed multicast topics."""
    backends = mqtt.backends
    return [
        gauge(f"{prefix}_mqtt_connected", "1 while the backend's broker connection is up "
              "(connected and subscribed)", ["gbid"],
              [([b.gbid], 1.0 if b.connected.is_set() else 0.0) for b in backends]),
        counter(f"{prefix}_mqtt_connections", "Broker connections established (the first one "
                "and every reconnect)", ["gbid"], [([b.gbid], b.connections) for b in backends]),
        counter(f"{prefix}_mqtt_reconnects", "Broker connections established after the first "
                "one", ["gbid"], [([b.gbid], max(0, b.connections - 1)) for b in backends]),
        counter(f"{prefix}_mqtt_connect_failures", "Connection attempts that failed and "
                "connections that broke", ["gbid"],
                [([b.gbid], b.connect_failures) for b in backends]),
        counter(f"{prefix}_mqtt_session_takeovers", "Connections whose session another client "
                "took (the same client id: MQTT 5 DISCONNECT 0x8E, or with MQTT 3.1.1 closes "
                "without a word right after connecting, twice in a row)", ["gbid"],
                [([b.gbid], b.takeovers) for b in backends]),
        gauge(f"{prefix}_mqtt_queued_messages", "Messages waiting to be published", ["gbid"],
              [([b.gbid], len(b.queue)) for b in backends]),
        gauge(f"{prefix}_mqtt_inflight_messages", "Messages published and not yet "
              "acknowledged by the broker", ["gbid"],
              [([b.gbid], len(b.inflight)) for b in backends]),
        gauge(f"{prefix}_mqtt_queued_bytes", "Bytes the queued and in-flight messages hold",
              ["gbid"], [([b.gbid], b.bytes) for b in backends]),
        counter(f"{prefix}_mqtt_published", "Messages the broker acknowledged (QoS 0: handed "
                "over)", ["gbid"], [([b.gbid], b.published) for b in backends]),
        counter(f"{prefix}_mqtt_received", "Messages received from the broker (before any "
                "check)", ["gbid"], [([b.gbid], b.received) for b in backends]),
        counter(f"{prefix}_mqtt_published_joynr", "Of the published messages, those in joynr's "
                "dialect (SMRF frames)", ["gbid"],
                [([b.gbid], b.published_joynr) for b in backends]),
        counter(f"{prefix}_mqtt_received_joynr", "Of the received messages, those in joynr's "
                "dialect (SMRF frames)", ["gbid"],
                [([b.gbid], b.received_joynr) for b in backends]),
        gauge(f"{prefix}_mqtt_multicast_topics", "Multicast topics subscribed for local "
              "receivers", ["gbid"], [([b.gbid], len(b.topics)) for b in backends]),
        histogram(f"{prefix}_mqtt_publish_latency_seconds", "From handing a message to the "
                  "MQTT client until the broker acknowledged it", ["gbid"],
                  _latency((b.gbid, b.publish_latency) for b in backends)),
    ]


def admin_metrics(prefix: str, server: AdminServer | None) -> list[Metric]:
    if server is None:
        return []
    return [
        counter(f"{prefix}_admin_requests", "Requests the admin endpoint answered, by path "
                "(other: no such endpoint) and status", ["path", "status"],
                (([path, str(status)], n) for (path, status), n
                 in sorted(server.requests.items()))),
        gauge(f"{prefix}_admin_connections", "Connections to the admin endpoint open now", [],
              [((), server.open_connections)]),
    ]

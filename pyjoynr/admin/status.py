"""The parts of the status page's JSON (``admin.page``) that the programs share: sections for
MQTT backends, the routing table, queues, refusals and the recent rate-limited lines, and the
frame around them."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyjoynr.admin.health import Check, degraded, passes
from pyjoynr.runtime.logs import RecentLines
from pyjoynr.runtime.metrics import HistogramSnapshot
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.telemetry import Telemetry
from pyjoynr.transports.mqtt.transport import MqttTransport

__all__ = [
    "facts",
    "latency_ms",
    "mqtt_section",
    "page_status",
    "recent_section",
    "refusals_section",
    "routing_section",
    "stamp",
    "table",
]

Value = str | int | float | bool | None


def stamp(epoch_s: float | None) -> str | None:
    """A UTC time of day and date, to the second (None stays None)."""
    if epoch_s is None:
        return None
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch_s))


def number(value: float | None, digits: int = 3) -> float | None:
    """A finite number, rounded (JSON has no NaN or infinity: those become null)."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits)


def latency_ms(snapshot: HistogramSnapshot) -> tuple[float | None, float | None, float | None]:
    """Mean, p50 and p99 in milliseconds (the quantiles: the upper bound of their bucket;
    null above the last bound)."""

    def ms(seconds: float | None) -> float | None:
        return None if seconds is None else number(seconds * 1000)

    return ms(snapshot.mean_s), ms(snapshot.quantile_s(0.5)), ms(snapshot.quantile_s(0.99))


def facts(section_id: str, title: str, items: Iterable[tuple[str, Value]],
          note: str = "") -> dict[str, Any]:
    section: dict[str, Any] = {"id": section_id, "title": title,
                               "facts": [[name, value] for name, value in items]}
    if note:
        section["note"] = note
    return section


def table(section_id: str, title: str, columns: Sequence[str], rows: Iterable[Sequence[Value]],
          *, max_rows: int, total: int | None = None, note: str = "") -> dict[str, Any]:
    """A table of at most ``max_rows`` rows; the note says how many were left out."""
    kept: list[list[Value]] = []
    count = 0
    for row in rows:
        count += 1
        if len(kept) < max_rows:
            kept.append(list(row))
    total = count if total is None else total
    notes = [note] if note else []
    if total > len(kept):
        notes.append(f"{len(kept)} of {total} shown")
    section: dict[str, Any] = {"id": section_id, "title": title, "columns": list(columns),
                               "rows": kept}
    if notes:
        section["note"] = "; ".join(notes)
    return section


def page_status(*, title: str, started_s: float, started_monotonic: float, refresh_s: float,
                checks: Sequence[Check], sections: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "title": title,
        "refresh_s": refresh_s,
        "generated_s": round(time.time(), 3),
        "started_s": round(started_s, 3),
        "uptime_s": round(time.monotonic() - started_monotonic, 3),
        "ready": passes(checks),
        "degraded": degraded(checks),
        "checks": [check.as_dict() for check in checks],
        "sections": sections,
    }


def mqtt_section(mqtt: MqttTransport | None, title: str = "MQTT backends",
                 section_id: str = "backends") -> dict[str, Any]:
    columns = ("GBID", "broker", "dialect", "connected", "connections", "connect failures",
               "queued", "in flight", "bytes", "published", "received", "of them joynr's",
               "publish ms mean", "publish ms p50", "publish ms p99")
    rows = []
    for b in mqtt.backends if mqtt is not None else ():
        mean, p50, p99 = latency_ms(b.publish_latency.snapshot())
        rows.append((b.gbid, str(b.url), b.dialect, b.connected.is_set(), b.connections,
                     b.connect_failures, len(b.queue), len(b.inflight), b.bytes, b.published,
                     b.received, f"{b.published_joynr} out, {b.received_joynr} in",
                     mean, p50, p99))
    return table(section_id, title, columns, rows, max_rows=1000,
                 note="" if mqtt is not None else "no MQTT backends configured")


def routing_section(router: MessageRouter, telemetry: Telemetry, section_id: str = "routing"
                    ) -> dict[str, Any]:
    total, sticky, learned, by_type = router.routing_counts()
    items: list[tuple[str, Value]] = [
        ("entries", total), ("sticky", sticky), ("learned (replyTo)", learned),
        ("other", max(0, total - sticky - learned)),
    ]
    items += [(f"to {name}", n) for name, n in sorted(by_type.items())]
    items += [("messages routed", telemetry.statistics.routed),
              ("queued now (router)", router.queued()),
              ("queued bytes (router)", router.queued_bytes())]
    return facts(section_id, "Routing table and router", items)


def refusals_section(telemetry: Telemetry, components: Mapping[str, Mapping[str, int]],
                     *, max_rows: int, section_id: str = "refusals") -> dict[str, Any]:
    rows: list[tuple[Value, ...]] = [
        ("router", key.removeprefix("dropped-"), n)
        for key, n in telemetry.counters.items() if key.startswith("dropped-")]
    for component, counts in components.items():
        rows += [(component, reason, n) for reason, n in counts.items()]
    rows.sort(key=lambda row: -int(row[2] or 0))
    return table(section_id, "Refusals and drops (since the start)",
                 ("component", "reason", "count"), rows, max_rows=max_rows)


def recent_section(lines: Iterable[RecentLines], *, max_rows: int,
                   section_id: str = "recent") -> dict[str, Any]:
    """The newest rate-limited lines of every ring, newest first."""
    merged = sorted((line for ring in lines for line in ring.newest_first()),
                    key=lambda line: -line.time_s)
    return table(section_id, "Recent refusals and warnings (rate-limited, as logged)",
                 ("time", "level", "logger", "reason", "peer", "text"),
                 ((stamp(line.time_s), line.level, line.logger, line.reason, line.peer,
                   line.text) for line in merged), max_rows=max_rows,
                 note="the first line of each reason and peer, then one summary a minute")

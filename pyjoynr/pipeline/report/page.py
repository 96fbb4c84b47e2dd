"""The report page: one self-contained HTML file (pure: data in, text out).

Everything is inside the file: the styles, the data of the charts (JSON in a script element
that is data, not code), and the small script that draws them as SVG (``charts.js``); it opens
offline, from disk, in any browser, and its Content Security Policy allows nothing else (no
request leaves it). Tables are plain HTML made here, so they read without script too: headers
in words, times as UTC dates and times, byte counts in kB/MB/GB; a long table is collapsed
(:data:`OPEN_ROWS`). Every string from the data is escaped: in HTML by :func:`html.escape`, in
the embedded JSON by escaping ``<``, ``>`` and ``&`` (a peer named ``</script>`` stays text),
and the script puts text into the page through ``textContent`` only.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["OPEN_ROWS", "Chart", "Fact", "Section", "Table", "embedded_json", "header_of",
           "render"]

_HERE = Path(__file__).resolve().parent

#: a table of at most this many rows is shown open; a longer one is collapsed (its summary
#: line says how many rows it holds) so that the page reads as sections, not as long tables
OPEN_ROWS = 10

#: column headers: the words for the field names of the tables
HEADERS = {
    "action": "Call",
    "bad_field": "Bad field",
    "bytes": "Bytes",
    "cluster_controller_id": "Cluster controller",
    "cluster_controller_ids": "Cluster controllers",
    "corrupt_json": "Corrupt JSON",
    "detail": "Detail",
    "directory_gbids": "Directory GBIDs",
    "directory_topic": "Directory topic",
    "domain": "Domain",
    "drift": "Drift",
    "dropped": "Dropped",
    "entries": "Entries",
    "expired": "Expired",
    "expiry_ms": "Expiry (UTC)",
    "fields": "Differing fields",
    "file": "File",
    "first_ms": "First (UTC)",
    "gbid": "GBID",
    "gbids": "GBIDs",
    "gzip": "Gzip",
    "interface_name": "Interface",
    "last_ms": "Last (UTC)",
    "last_seen_ms": "Last seen (UTC)",
    "lines": "Lines",
    "live": "Live",
    "major_version": "Major version",
    "messages": "Messages",
    "minor_version": "Minor version",
    "participant_id": "Participant",
    "peer": "Peer",
    "proc": "Cluster controller",
    "reason": "Reason",
    "records": "Records",
    "refused": "Refused",
    "route_gbid": "Route GBID",
    "route_topic": "Route topic",
    "sender": "Sender",
    "source": "Kind",
    "stale_since_ms": "Stale since (UTC)",
    "status": "Status",
    "taken_ms": "Snapshot taken (UTC)",
    "too_long": "Too long",
    "unknown_version": "Unknown version",
    "worst_hour_p99_queued_ms": "Worst hour's p99 wait (ms)",
}
#: columns of epoch-ms times (the other ``*_ms`` columns are durations)
TIME_COLUMNS = frozenset({"expiry_ms", "first_ms", "last_ms", "last_seen_ms", "stale_since_ms",
                          "taken_ms"})
#: columns of byte counts
BYTE_COLUMNS = frozenset({"bytes"})
#: at or above this an epoch-ms time means "never" (the directory's expiry of a row that
#: does not expire is the largest long)
_NEVER_MS = 2**62


def header_of(column: str) -> str:
    """The words a table shows for a column (a field name not in :data:`HEADERS`: its words)."""
    known = HEADERS.get(column)
    if known is not None:
        return known
    words = column.removesuffix("_ms").replace("_", " ").strip()
    return words[:1].upper() + words[1:]


@dataclass
class Table:
    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    #: rows of the whole table (its Parquet file), when only the first ones are shown
    total: int | None = None
    #: where the whole table is
    source: str = ""
    #: its id in the page (``table-<key>``), for links and tests
    key: str = ""


@dataclass
class Chart:
    #: the key of its spec in the embedded data
    key: str
    caption: str
    #: {"kind": "bars", "categories": [...], "series": [{"name", "values"}], "yLabel",
    #: "otherCategory": the category that sums the rest (drawn out of scale), "empty"} or
    #: {"kind": "lines", "x": [epoch ms], "binMs", "series": [...], "yLabel",
    #: "other": {"name", "values"} (the rest, summed: drawn in a panel of its own), "empty"}
    spec: dict[str, Any]


@dataclass
class Fact:
    """A figure of a section's (or the summary's) cards."""

    label: str
    value: Any
    #: how the value reads: "count", "bytes" or "share" (0..1)
    unit: str = "count"
    #: a line under the figure: what it is made of, or what changed
    detail: str = ""
    #: the figure asks for attention (stale controllers, drops, a large purge)
    alert: bool = False


@dataclass
class Section:
    key: str
    title: str
    text: Sequence[str] = ()
    facts: Sequence[Fact | tuple[str, Any]] = ()
    charts: Sequence[Chart] = ()
    tables: Sequence[Table] = ()
    notes: Sequence[str] = field(default_factory=list)
    #: (title, text) shown collapsed as preformatted text (e.g. the plan's plan.txt)
    texts: Sequence[tuple[str, str]] = ()


def embedded_json(value: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element."""
    return (json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
            .replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def utc_text(ms: int) -> str:
    """An epoch-ms time as an ISO-like UTC date and time."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def byte_text(value: float) -> str:
    """A byte count for people: 950 B, 12.3 kB, 4.56 MB, 7.89 GB (powers of 1000)."""
    amount = float(value)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(amount) < 999.5 or unit == "TB":
            if unit == "B":
                return f"{int(amount):,} B"
            return f"{amount:.3g} {unit}" if abs(amount) < 100 else f"{amount:.0f} {unit}"
        amount /= 1000
    raise AssertionError("unreachable")


def _cell(column: str, value: Any) -> str:
    if value is None:
        return "\u2014"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        if column in TIME_COLUMNS:
            return "never" if value >= _NEVER_MS else utc_text(value)
        if column in BYTE_COLUMNS:
            return byte_text(value)
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _fact_value(fact: Fact) -> str:
    if fact.value is None:
        return "\u2014"
    if fact.unit == "bytes":
        return byte_text(fact.value)
    if fact.unit == "share":
        return f"{100 * fact.value:.1f} %"
    return _cell(fact.label, fact.value)


def _facts(facts: Sequence[Fact | tuple[str, Any]]) -> str:
    cards = []
    for item in facts:
        fact = item if isinstance(item, Fact) else Fact(item[0], item[1],
                                                        "bytes" if item[0] == "bytes"
                                                        else "count")
        detail = (f'<span class="detail">{html.escape(fact.detail)}</span>'
                  if fact.detail else "")
        alert = ' class="alert"' if fact.alert else ""
        cards.append(f"<div{alert}>"
                     f"<dt>{html.escape(fact.label)}</dt>"
                     f"<dd>{html.escape(_fact_value(fact))}{detail}</dd></div>")
    return '<dl class="facts">' + "".join(cards) + "</dl>"


def _table(table: Table) -> str:
    # numbers (not times) right-aligned, their headers too
    numeric = [bool(table.rows) and all(isinstance(row[i], int | float) and
                                        not isinstance(row[i], bool)
                                        and c not in TIME_COLUMNS
                                        for row in table.rows if row[i] is not None)
               for i, c in enumerate(table.columns)]
    align = [' class="n"' if n else "" for n in numeric]
    head = "".join(f'<th scope="col"{align[i]}>{html.escape(header_of(c))}</th>'
                   for i, c in enumerate(table.columns))
    body = "".join(
        "<tr>" + "".join(f"<td{align[i]}>{html.escape(_cell(c, v))}</td>"
                         for i, (c, v) in enumerate(zip(table.columns, row, strict=True)))
        + "</tr>"
        for row in table.rows)
    key = f' id="table-{html.escape(table.key)}"' if table.key else ""
    if not table.rows:
        return (f'<div class="table empty"{key}><h3>{html.escape(table.title)} '
                '<span class="count">none</span></h3></div>')
    if table.total is not None and table.total > len(table.rows):
        count = f"the first {len(table.rows):,} of {table.total:,} rows"
    else:
        count = f"{len(table.rows):,} row{'' if len(table.rows) == 1 else 's'}"
    source = (f'<p class="source">every row: table {html.escape(table.source)} (Parquet)</p>'
              if table.source else "")
    opened = " open" if len(table.rows) <= OPEN_ROWS else ""
    return (f'<details class="table"{key}{opened}><summary><h3>{html.escape(table.title)} '
            f'<span class="count">{html.escape(count)}</span></h3></summary>'
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>{source}</details>")


def _section(section: Section) -> str:
    parts = [f'<section id="{html.escape(section.key)}"><h2>{html.escape(section.title)}</h2>']
    parts += [f"<p>{html.escape(t)}</p>" for t in section.text]
    if section.facts:
        parts.append(_facts(section.facts))
    for chart in section.charts:
        parts.append(f'<figure><figcaption>{html.escape(chart.caption)}</figcaption>'
                     f'<svg class="chart" data-chart="{html.escape(chart.key)}"></svg></figure>')
    parts += [_table(t) for t in section.tables]
    parts += [f'<details class="text"><summary><h3>{html.escape(title)}</h3></summary>'
              f"<pre>{html.escape(text)}</pre></details>" for title, text in section.texts]
    parts += [f'<p class="note">{html.escape(n)}</p>' for n in section.notes]
    parts.append("</section>")
    return "".join(parts)


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


def render(title: str, subtitle: Sequence[str], sections: Sequence[Section]) -> str:
    """The whole page: the header (``title``, the lines of ``subtitle``), the contents (a link
    to each section), the sections in order."""
    charts = {c.key: c.spec for s in sections for c in s.charts}
    nav = "".join(f'<a href="#{html.escape(s.key)}">{html.escape(s.title)}</a>'
                  for s in sections)
    style = (_HERE / "style.css").read_text(encoding="utf-8")
    script = (_HERE / "charts.js").read_text(encoding="utf-8")
    # nothing but the inline style and script: no request leaves the page
    policy = (f"default-src 'none'; style-src {_hash(style)}; script-src {_hash(script)}; "
              "img-src 'none'; base-uri 'none'; form-action 'none'")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{style}</style></head><body>"
        f"<header><h1>{html.escape(title)}</h1>"
        + "".join(f"<p>{html.escape(line)}</p>" for line in subtitle)
        + f'</header><nav aria-label="Contents">{nav}</nav><main>'
        + "".join(_section(s) for s in sections)
        + "</main>"
        f'<script type="application/json" id="report-data">'
        f'{embedded_json({"charts": charts})}</script>'
        f"<script>{script}</script></body></html>\n"
    )

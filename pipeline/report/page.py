"""The report page: one self-contained HTML file (pure: data in, text out).

Everything is inside the file: the styles, the data of the charts (JSON in a script element
that is data, not code), and the small script that draws them as SVG (``charts.js``); it opens
offline, from disk, in any browser. Tables are plain HTML made here, so they read without
script too. Every string from the data is escaped: in HTML by :func:`html.escape`, in the
embedded JSON by escaping ``<``, ``>`` and ``&`` (a peer named ``</script>`` stays text), and
the script puts text into the page through ``textContent`` only.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Chart", "Section", "Table", "embedded_json", "render"]

_HERE = Path(__file__).resolve().parent


@dataclass
class Table:
    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    #: rows of the whole table (its Parquet file), when only the first ones are shown
    total: int | None = None
    #: where the whole table is
    source: str = ""


@dataclass
class Chart:
    #: the key of its spec in the embedded data
    key: str
    caption: str
    #: {"kind": "bars", "categories": [...], "series": [{"name", "values"}], "yLabel"} or
    #: {"kind": "lines", "x": [epoch ms], "binMs", "series": [...], "yLabel"}
    spec: dict[str, Any]


@dataclass
class Section:
    key: str
    title: str
    text: Sequence[str] = ()
    facts: Sequence[tuple[str, Any]] = ()
    charts: Sequence[Chart] = ()
    tables: Sequence[Table] = ()
    notes: Sequence[str] = field(default_factory=list)


def embedded_json(value: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element."""
    return (json.dumps(value, separators=(",", ":"), sort_keys=True)
            .replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"))


def _cell(column: str, value: Any) -> str:
    if value is None:
        return "\u2014"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        if column.endswith("_ms") and value > 10**11 and value < 2**62:
            return dt.datetime.fromtimestamp(value / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _table(table: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(c, v))}</td>"
                         for c, v in zip(table.columns, row, strict=True)) + "</tr>"
        for row in table.rows)
    if not table.rows:
        body = f'<tr><td colspan="{len(table.columns)}" class="none">none</td></tr>'
    shown = ""
    if table.total is not None and table.total > len(table.rows):
        shown = f" (the first {len(table.rows):,} of {table.total:,})"
    source = f' <span class="source">{html.escape(table.source)}</span>' if table.source else ""
    return (f"<h3>{html.escape(table.title)}{html.escape(shown)}{source}</h3>"
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _section(section: Section) -> str:
    parts = [f'<section id="{html.escape(section.key)}"><h2>{html.escape(section.title)}</h2>']
    parts += [f"<p>{html.escape(t)}</p>" for t in section.text]
    if section.facts:
        parts.append('<dl class="facts">' + "".join(
            f"<div><dt>{html.escape(name)}</dt><dd>{html.escape(_cell(name, value))}</dd></div>"
            for name, value in section.facts) + "</dl>")
    for chart in section.charts:
        parts.append(f'<figure><figcaption>{html.escape(chart.caption)}</figcaption>'
                     f'<svg class="chart" data-chart="{html.escape(chart.key)}"></svg></figure>')
    parts += [_table(t) for t in section.tables]
    parts += [f'<p class="note">{html.escape(n)}</p>' for n in section.notes]
    parts.append("</section>")
    return "".join(parts)


def render(title: str, subtitle: Sequence[str], sections: Sequence[Section]) -> str:
    """The whole page."""
    charts = {c.key: c.spec for s in sections for c in s.charts}
    nav = "".join(f'<a href="#{html.escape(s.key)}">{html.escape(s.title)}</a>'
                  for s in sections)
    style = (_HERE / "style.css").read_text(encoding="utf-8")
    script = (_HERE / "charts.js").read_text(encoding="utf-8")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{style}</style></head><body>"
        f"<header><h1>{html.escape(title)}</h1>"
        + "".join(f"<p>{html.escape(line)}</p>" for line in subtitle)
        + f"<nav>{nav}</nav></header><main>"
        + "".join(_section(s) for s in sections)
        + "</main>"
        f'<script type="application/json" id="report-data">'
        f'{embedded_json({"charts": charts})}</script>'
        f"<script>{script}</script></body></html>\n"
    )

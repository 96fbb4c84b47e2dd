"""The status page: one HTML page for a person, and the JSON it polls.

``/status`` is a page of its own (no framework, nothing fetched from elsewhere: it works
offline): plain HTML, a style sheet and a small script inline. The script draws the process's
status from JSON, first from a copy embedded in the page, then every ``refresh_s`` from
``/status.json``; while the process does not answer, the page says since when and keeps the
last figures. Every string is put into the page as text (``textContent``), never as markup:
participant ids, client ids and refusal reasons come from peers. The page's Content Security
Policy allows only its own inline script and style (by their hashes) and requests to its own
origin, so even a string that were put in as markup could not run.

The JSON (:func:`status_reply`; the programs build it, ``cluster_controller.operability`` and
``gcd.operability``)::

    {"title": str, "refresh_s": float, "generated_s": epoch s, "started_s": epoch s,
     "uptime_s": float, "ready": bool, "degraded": bool,
     "checks": [{"name", "ok", "detail", "required"}, ...],
     "sections": [{"id", "title", "facts": [[name, value], ...], "note"?}
                  | {"id", "title", "columns": [name, ...], "rows": [[value, ...], ...],
                     "note"?}, ...]}

Values are strings, numbers, booleans or null. Rows are the program's to bound
(``[admin] status_max_rows``); a section's note says what was left out.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, Final

from pyjoynr.admin.http import Reply

__all__ = ["CONTENT_SECURITY_POLICY", "json_reply", "page_reply", "status_reply"]

_STYLE: Final = """
:root { color-scheme: light; --ok: #17692a; --bad: #a4161a; --warn: #8a5a00;
  --muted: #5c6370; --line: #d8dbe0; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 1rem 1.5rem 3rem; color: #1d2129; background: #fbfbfc; }
h1 { font-size: 1.4rem; margin: 0.2rem 0; word-break: break-all; }
h2 { font-size: 1.05rem; margin: 1.6rem 0 0.4rem; border-bottom: 1px solid var(--line); }
#summary, .note { color: var(--muted); }
#stale { background: #fff3cd; border: 1px solid #e0c36c; padding: 0.4rem 0.6rem; }
.badge { display: inline-block; padding: 0 0.5rem; border-radius: 0.6rem; color: #fff;
         font-weight: 600; margin-right: 0.5rem; }
.badge.ok { background: var(--ok); } .badge.bad { background: var(--bad); }
.badge.warn { background: var(--warn); }
ul.checks { list-style: none; padding: 0; margin: 0.3rem 0; }
ul.checks li { margin: 0.15rem 0; word-break: break-word; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.2rem 0.6rem 0.2rem 0; border-bottom: 1px solid var(--line);
         vertical-align: top; word-break: break-word; }
th { font-weight: 600; color: var(--muted); word-break: normal; }
th.num { text-align: right; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.yes, span.yes { color: var(--ok); font-weight: 600; }
td.no, span.no { color: var(--bad); font-weight: 600; }
span.warn { color: var(--warn); font-weight: 600; }
td.none { color: var(--muted); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.1rem 1rem; margin: 0; }
dt { color: var(--muted); } dd { margin: 0; word-break: break-word; }
"""

_SCRIPT: Final = """
"use strict";
(function () {
  const byId = (id) => document.getElementById(id);
  let delayS = 2, failedSince = null, refreshes = 0;
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function stamp(s) {
    return new Date(s * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }
  function duration(s) {
    s = Math.floor(s);
    const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600);
    const m = Math.floor(s % 3600 / 60), r = s % 60;
    return (d ? d + "d " : "") + (d || h ? h + "h " : "") + (d || h || m ? m + "m " : "") + r + "s";
  }
  function value(v) {
    if (v === true) return ["yes", "yes"];
    if (v === false) return ["no", "no"];
    if (v === null || v === undefined) return ["\\u2013", "none"];
    if (typeof v === "number") {
      return [Number.isInteger(v) ? v.toLocaleString("en") : v.toFixed(3), "num"];
    }
    return [String(v), ""];
  }
  function facts(section) {
    const list = el("dl");
    for (const [name, v] of section.facts) {
      const [text, cls] = value(v);
      list.appendChild(el("dt", "", name));
      const dd = el("dd", cls, text);
      dd.dataset.fact = name;
      list.appendChild(dd);
    }
    return list;
  }
  function table(section) {
    const t = el("table"), head = el("tr"), body = el("tbody");
    const first = section.rows.length ? section.rows[0] : [];
    section.columns.forEach((name, i) => {
      head.appendChild(el("th", typeof first[i] === "number" ? "num" : "", name));
    });
    const thead = el("thead");
    thead.appendChild(head);
    t.appendChild(thead);
    for (const row of section.rows) {
      const tr = el("tr");
      row.forEach((v, i) => {
        const [text, cls] = value(v);
        const td = el("td", cls, text);
        td.dataset.column = section.columns[i];
        tr.appendChild(td);
      });
      body.appendChild(tr);
    }
    if (!section.rows.length) {
      const tr = el("tr"), td = el("td", "none", "none");
      td.colSpan = section.columns.length;
      tr.appendChild(td);
      body.appendChild(tr);
    }
    t.appendChild(body);
    return t;
  }
  function render(status) {
    document.title = status.title;
    byId("title").textContent = status.title;
    byId("summary").textContent = "up " + duration(status.uptime_s) + " since " +
      stamp(status.started_s) + "; figures of " + stamp(status.generated_s) +
      ", refreshed every " + status.refresh_s + " s";
    const badge = byId("ready");
    badge.textContent = status.ready ? (status.degraded ? "ready, degraded" : "ready")
      : "not ready";
    badge.className = "badge " + (status.ready ? (status.degraded ? "warn" : "ok") : "bad");
    const checks = byId("checks");
    checks.replaceChildren();
    for (const check of status.checks) {
      const item = el("li");
      const mark = check.ok ? "yes" : (check.required === false ? "warn" : "no");
      item.appendChild(el("span", mark, check.ok ? "\\u2713 " : "\\u2717 "));
      item.appendChild(el("strong", "", check.name + ": "));
      item.appendChild(el("span", "", check.detail));
      item.dataset.check = check.name;
      checks.appendChild(item);
    }
    const parts = document.createDocumentFragment();
    for (const section of status.sections) {
      const box = el("section", "section");
      box.id = "section-" + section.id;
      box.appendChild(el("h2", "", section.title));
      box.appendChild(section.facts ? facts(section) : table(section));
      if (section.note) box.appendChild(el("p", "note", section.note));
      parts.appendChild(box);
    }
    byId("sections").replaceChildren(parts);
    delayS = status.refresh_s > 0 ? status.refresh_s : 2;
    refreshes += 1;
    document.body.dataset.generated = String(status.generated_s);
    document.body.dataset.refreshes = String(refreshes);
  }
  async function poll() {
    try {
      const answer = await fetch("status.json", {cache: "no-store"});
      if (!answer.ok) throw new Error("HTTP " + answer.status);
      render(await answer.json());
      failedSince = null;
      byId("stale").hidden = true;
    } catch (error) {
      if (failedSince === null) failedSince = Date.now() / 1000;
      const stale = byId("stale");
      stale.textContent = "No answer from the process since " + stamp(failedSince) +
        " (" + error.message + "); the figures below are older.";
      stale.hidden = false;
    } finally {
      setTimeout(poll, delayS * 1000);
    }
  }
  render(JSON.parse(byId("initial").textContent));
  setTimeout(poll, delayS * 1000);
})();
"""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


#: only the page's own inline script and style run; it talks to its own origin only
CONTENT_SECURITY_POLICY: Final = (
    f"default-src 'none'; script-src {_hash(_SCRIPT)}; style-src {_hash(_STYLE)}; "
    "connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'")

_PAGE: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>status</title>
<style>{style}</style>
</head>
<body>
<header>
<h1 id="title">status</h1>
<p id="summary"></p>
<p id="stale" hidden></p>
</header>
<section id="health">
<h2><span id="ready" class="badge"></span>Health</h2>
<ul id="checks" class="checks"></ul>
</section>
<main id="sections"></main>
<noscript><p>This page draws its figures with JavaScript. The same figures:
<a href="status.json">status.json</a>, <a href="metrics">metrics</a>.</p></noscript>
<script type="application/json" id="initial">{initial}</script>
<script>{script}</script>
</body>
</html>
"""


def _embedded_json(data: Any) -> str:
    """JSON that can stand inside a script element: no "<" (so no "</script>"), "&" or ">"."""
    return (json.dumps(data, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def page_reply(status: dict[str, Any]) -> Reply:
    page = _PAGE.format(style=_STYLE, script=_SCRIPT, initial=_embedded_json(status))
    return Reply(200, page.encode(), "text/html; charset=utf-8",
                 (("content-security-policy", CONTENT_SECURITY_POLICY),))


def json_reply(data: Any, status: int = 200) -> Reply:
    return Reply(status, (json.dumps(data, separators=(",", ":"), allow_nan=False,
                                     default=str) + "\n").encode(), "application/json")


def status_reply(status: dict[str, Any]) -> Reply:
    return json_reply(status)

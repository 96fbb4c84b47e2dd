"""Carrying out a housekeeping plan (``plan.jsonl``, :mod:`pipeline.jobs.housekeeping`) through
the GCD's own joynr interface, never by deleting rows behind its back.

The pipeline is an application here: it connects to cluster controllers with the public
libjoynr API and calls the GCD (interface GlobalCapabilitiesDirectory 0.3, gcd/interface.py)
through a proxy. A cluster controller routes its GCD calls to the GCD instance of its default
backend; every instance shares the store, but some calls act on the instance's own GBID.

- ``removeStale(cc, before_ms)`` deletes that controller's rows in every GBID, so it goes
  through any one cluster controller (the one of [apply] default_gbid, else the first given).
- ``remove`` of an expired row of GBID G goes through the cluster controller given for G
  (``--cc G=ws://...``), whose GCD instance acts on G: first ``lookup`` (the instance's own
  GBID, live rows only): an answer means the row is live again (touched or registered anew
  since the plan), and it is left alone (``skipped-live``); otherwise ``remove`` (the form
  that acts on the instance's own GBID, expired or not) deletes it. A GBID with no cluster
  controller given is ``skipped-no-cc``.

Before any call, :func:`read_plan` shows what the plan does (the stale cluster controllers it
purges with their entries, the removes per GBID, the share of the directory) and
:func:`check_share` refuses a plan that removes more than [housekeeping] max_purge_share of
the directory's entries (``plan.json`` says how many it had) unless told otherwise
(``--allow-large-purge``): a plan made with a wrong threshold or "now" finds every cluster
controller stale and would empty the directory.

Each call's outcome is a line of ``apply-result.jsonl`` beside the plan, with a summary at the
end. The plan is read line by line and at most [apply] concurrency calls are in flight, so a
plan of any size takes bounded memory.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from pyjoynr.gcd.interface import GCD_DOMAIN, GCD_PARTICIPANT_ID, GlobalCapabilitiesDirectory
from pyjoynr.libjoynr import DiscoveryQos, LibjoynrRuntime, Proxy, connect
from pyjoynr.libjoynr.advanced import Arbitration, ProviderRuntimeError
from pyjoynr.pipeline.config import ApplySettings, ConfigError
from pyjoynr.pipeline.readers import InputError

__all__ = ["ApplyResult", "PlanSummary", "apply_plan", "check_share", "read_plan",
           "targets_of"]

log = logging.getLogger(__name__)

DONE = "done"
SKIPPED_LIVE = "skipped-live"
SKIPPED_NO_CC = "skipped-no-cc"
FAILED = "failed"
BAD_LINE = "bad-line"


def targets_of(specs: tuple[str, ...], default_gbid: str) -> dict[str, str]:
    """GBID -> cluster controller URL from ``[GBID=]URL`` items (no GBID: ``default_gbid``)."""
    if not specs:
        raise ConfigError("--apply needs a cluster controller to reach the GCD through: "
                          "--cc [GBID=]ws://host:port/")
    targets: dict[str, str] = {}
    for spec in specs:
        gbid, _, url = spec.rpartition("=") if "=" in spec.split("://", 1)[0] else ("", "", spec)
        gbid = gbid or default_gbid
        if urlsplit(url).scheme not in ("ws", "wss"):
            raise ConfigError(f"--cc {spec!r}: not a websocket URL ws://host:port/")
        if gbid in targets:
            raise ConfigError(f"--cc: two cluster controllers for GBID {gbid!r}")
        targets[gbid] = url
    return targets


#: stale cluster controllers named before applying, at most (plan.txt lists more)
SHOWN_CONTROLLERS = 20


@dataclass
class PlanSummary:
    """What a plan does, read line by line from ``plan.jsonl`` (and ``plan.json``)."""

    plan_dir: Path
    #: the directory's entries when the plan was made (plan.json); None: not said
    directory_entries: int | None = None
    #: "made at ... from ..." (plan.json), for messages
    made: str = ""
    stale_calls: int = 0
    #: the entries the removeStale calls remove (every GBID)
    stale_entries: int = 0
    #: the first SHOWN_CONTROLLERS stale cluster controllers: (id, entries, GBIDs)
    shown: list[tuple[str, int, list[str]]] = field(default_factory=list)
    #: remove calls per GBID
    removes: Counter[str] = field(default_factory=Counter)
    #: lines that are no call of a known form
    bad_lines: int = 0

    @property
    def entries(self) -> int:
        """The directory entries the plan removes."""
        return self.stale_entries + sum(self.removes.values())

    def lines(self) -> list[str]:
        """What the plan does, for people (logged before applying it)."""
        total = (f"of the directory's {self.directory_entries} "
                 f"({_percent(self.entries, self.directory_entries)})"
                 if self.directory_entries is not None else "(the directory's size unknown)")
        lines = [f"plan {self.plan_dir}{': made ' + self.made if self.made else ''}",
                 f"it removes {self.entries} entries {total}",
                 f"removeStale of {self.stale_calls} stale cluster controller(s), "
                 f"{self.stale_entries} entries" + (":" if self.shown else "")]
        lines += [f"  {cc}: {_entries(entries)} in {', '.join(gbids) or '-'}"
                  for cc, entries, gbids in self.shown]
        if self.stale_calls > len(self.shown):
            lines.append(f"  ... and {self.stale_calls - len(self.shown)} more "
                         f"({self.plan_dir / 'plan.txt'})")
        lines.append(f"remove of {_entries(sum(self.removes.values()))}, expired" + (
            ": " + ", ".join(f"{gbid} {n}" for gbid, n in sorted(self.removes.items()))
            if self.removes else ""))
        if self.bad_lines:
            lines.append(f"{self.bad_lines} line(s) that are no call")
        return lines


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"


def _percent(part: int, whole: int | None) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "0 %"


def read_plan(plan_dir: Path, shown: int = SHOWN_CONTROLLERS) -> PlanSummary:
    """What ``plan_dir/plan.jsonl`` does (read line by line: bounded memory)."""
    plan = plan_dir / "plan.jsonl"
    if not plan.is_file():
        raise InputError(f"no housekeeping plan at {plan} (made by `bin/pipeline housekeeping`)")
    summary = PlanSummary(plan_dir)
    try:
        meta = json.loads((plan_dir / "plan.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    if isinstance(meta, dict):
        total = meta.get("directory_entries")
        if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
            summary.directory_entries = total
        made = meta.get("made_ms")
        if isinstance(made, int) and not isinstance(made, bool):
            when = dt.datetime.fromtimestamp(made / 1000, dt.UTC)
            summary.made = (f"at {when:%Y-%m-%d %H:%M:%S} UTC from "
                            f"{meta.get('directory', '?')}")
    for _, action in _plan_actions(plan):
        if action is None:
            summary.bad_lines += 1
        elif action.get("action") == "removeStale":
            entries = action.get("entries")
            entries = entries if isinstance(entries, int) else 0
            summary.stale_calls += 1
            summary.stale_entries += entries
            if len(summary.shown) < shown:
                gbids = action.get("gbids")
                summary.shown.append((str(action.get("cluster_controller_id")), entries,
                                      [str(g) for g in gbids]
                                      if isinstance(gbids, list) else []))
        elif action.get("action") == "remove":
            summary.removes[str(action.get("gbid"))] += 1
        else:
            summary.bad_lines += 1
    return summary


def check_share(summary: PlanSummary, max_share: float, allow_large: bool) -> None:
    """Refuse (InputError) a plan that removes more than ``max_share`` of the directory, or
    one that does not say how large the directory was, unless ``allow_large``."""
    if allow_large or summary.entries == 0:
        return
    advice = (f"Check the plan ({summary.plan_dir / 'plan.txt'}): a wrong --stale-after-h or "
              "--now-ms finds every cluster controller stale. To apply it anyway: "
              "--allow-large-purge")
    if summary.directory_entries is None:
        raise InputError(f"refused: {summary.plan_dir / 'plan.json'} does not say how many "
                         f"entries the directory had, so the share of it the plan removes "
                         f"({summary.entries} entries) is unknown. {advice}")
    if summary.entries > max_share * summary.directory_entries:
        raise InputError(
            f"refused: the plan removes {summary.entries} of the directory's "
            f"{summary.directory_entries} entries "
            f"({_percent(summary.entries, summary.directory_entries)}), more than "
            f"[housekeeping] max_purge_share = {max_share:g} allows. {advice}")


@dataclass
class ApplyResult:
    """What --apply did: calls by action and outcome."""

    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def complete(self) -> bool:
        """Every call of the plan was made (or rightly left alone: a live row)."""
        return not any(outcome in (FAILED, SKIPPED_NO_CC, BAD_LINE)
                       for _, outcome in self.outcomes)

    def count(self, action: str, outcome: str) -> int:
        return self.outcomes[(action, outcome)]


class _Gcds:
    """A GCD proxy per cluster controller URL, connected on first use."""

    def __init__(self, stack: AsyncExitStack, settings: ApplySettings) -> None:
        self.stack = stack
        self.settings = settings
        self._proxies: dict[str, asyncio.Task[Proxy]] = {}

    async def _connect(self, url: str) -> Proxy:
        timeout_ms = int(self.settings.call_timeout_s * 1000)
        runtime: LibjoynrRuntime = await connect(url, timeout_ms=timeout_ms)
        self.stack.push_async_callback(runtime.close)
        proxy = await runtime.build_proxy(
            GlobalCapabilitiesDirectory, GCD_DOMAIN,
            arbitration=Arbitration.fixed(GCD_PARTICIPANT_ID),
            discovery_qos=DiscoveryQos(discovery_timeout_ms=timeout_ms), ttl_ms=timeout_ms)
        log.info("apply: connected to the GCD through %s", url)
        return proxy

    async def proxy(self, url: str) -> Proxy:
        if url not in self._proxies:
            self._proxies[url] = asyncio.ensure_future(self._connect(url))
        return await self._proxies[url]


def _plan_actions(plan: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """The plan's actions, line by line (bounded memory): (line number, the action, or None
    for a line that is not a JSON object); blank lines are skipped."""
    with plan.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                action = json.loads(line)
            except ValueError:
                action = None
            yield number, action if isinstance(action, dict) else None


async def _actions(plan: Path) -> AsyncIterator[tuple[int, dict[str, Any] | None]]:
    for item in _plan_actions(plan):
        yield item


async def _carry_out(action: dict[str, Any], gcds: _Gcds, targets: dict[str, str],
                     stale_url: str) -> tuple[str, str | None]:
    name = action.get("action")
    if name == "removeStale":
        cc, before = action.get("cluster_controller_id"), action.get("before_ms")
        if not isinstance(cc, str) or not isinstance(before, int):
            return BAD_LINE, "removeStale without cluster_controller_id or before_ms"
        gcd: Any = await gcds.proxy(stale_url)
        await gcd.remove_stale(cc, before)
        return DONE, None
    if name == "remove":
        gbid, pid = action.get("gbid"), action.get("participant_id")
        if not isinstance(gbid, str) or not isinstance(pid, str):
            return BAD_LINE, "remove without gbid or participant_id"
        url = targets.get(gbid)
        if url is None:
            return SKIPPED_NO_CC, f"no cluster controller given for GBID {gbid} (--cc {gbid}=URL)"
        gcd = await gcds.proxy(url)
        try:
            await gcd.lookup_participant(pid)
        except ProviderRuntimeError:
            pass  # no live row in that GBID: the planned (expired) one goes
        else:
            return SKIPPED_LIVE, "live again since the plan was made"
        await gcd.remove_participants([pid])
        return DONE, None
    return BAD_LINE, f"unknown action {name!r}"


async def apply_plan(plan_dir: Path, targets: dict[str, str], settings: ApplySettings
                     ) -> ApplyResult:
    """Carry out ``plan_dir/plan.jsonl`` (see the module docstring)."""
    plan = plan_dir / "plan.jsonl"
    if not plan.is_file():
        raise InputError(f"no housekeeping plan at {plan} (made by `bin/pipeline housekeeping`)")
    stale_url = targets.get(settings.default_gbid) or next(iter(targets.values()))
    result = ApplyResult()
    queue: asyncio.Queue[tuple[int, dict[str, Any] | None] | None] = asyncio.Queue(
        maxsize=2 * settings.concurrency)
    started = time.monotonic()
    last_log = started
    async with AsyncExitStack() as stack:
        gcds = _Gcds(stack, settings)
        out: TextIO = stack.enter_context((plan_dir / "apply-result.jsonl").open(
            "w", encoding="utf-8"))

        async def worker() -> None:
            nonlocal last_log
            while (item := await queue.get()) is not None:
                number, action = item
                error: str | None
                if action is None:
                    outcome, error = BAD_LINE, "not a JSON object"
                else:
                    try:
                        outcome, error = await _carry_out(action, gcds, targets, stale_url)
                    except Exception as exc:  # any failure (joynr, connection) is this call's
                        outcome, error = FAILED, f"{type(exc).__name__}: {exc}"
                name = str(action.get("action")) if action else "?"
                result.outcomes[(name, outcome)] += 1
                out.write(json.dumps({"line": number, **(action or {}), "outcome": outcome,
                                      **({"error": error} if error else {})}) + "\n")
                if outcome in (FAILED, BAD_LINE, SKIPPED_NO_CC):
                    log.warning("apply: plan line %d: %s %s", number, outcome, error)
                now = time.monotonic()
                if now - last_log > 10:
                    last_log = now
                    log.info("apply: %d call(s) carried out so far",
                             sum(result.outcomes.values()))

        workers = [asyncio.create_task(worker()) for _ in range(max(1, settings.concurrency))]
        try:
            async for item in _actions(plan):
                await queue.put(item)
        finally:
            for _ in workers:
                await queue.put(None)
            await asyncio.gather(*workers)
    for (action, outcome), count in sorted(result.outcomes.items()):
        log.info("apply: %s %s: %d", action, outcome, count)
    log.info("apply: %s in %.1f s (%s)", "complete" if result.complete else "INCOMPLETE",
             time.monotonic() - started, plan_dir / "apply-result.jsonl")
    return result

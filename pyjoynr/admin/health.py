"""Liveness and readiness: named checks with reasons, and probes whose answers are reused.

``/health/live``: the process answers (its event loop runs) and the jobs it cannot work
without are running; a failing liveness check means: restart it. ``/health/ready``: it can do
its work now (listening, its default backend connected, the GCD or the store answering, the
index loaded); a failing readiness check means: do not send it work yet. Both answer 200 when
every required check passes and 503 otherwise, with every check and its reason in a JSON body.
A check that is not required (``Check.required``) and fails makes the program *degraded*: it
still answers 200 (it can do part of its work, e.g. a GCD whose store is down answers lookups
from memory), and the body says ``"degraded": true`` with the reasons.

A :class:`Probe` asks something that takes a round trip (does the GCD answer? does the store?)
at most once per ``max_age_s``: callers meanwhile get the last answer, callers while it runs
share it, and a caller that goes away does not cancel it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from pyjoynr.admin.http import Reply
from pyjoynr.runtime.logs import get_logger

__all__ = ["Check", "Probe", "degraded", "health_reply", "passes"]

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Check:
    """One condition: its name, whether it holds, and what was found (the reason).
    ``required``: whether the answer fails when it does not hold (else: degraded)."""

    name: str
    ok: bool
    detail: str
    required: bool = True

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail,
                "required": self.required}


def passes(checks: Sequence[Check]) -> bool:
    """Every required check holds."""
    return all(check.ok for check in checks if check.required)


def degraded(checks: Sequence[Check]) -> bool:
    """A check that is not required fails."""
    return any(not check.ok for check in checks if not check.required)


def health_reply(kind: str, checks: Sequence[Check]) -> Reply:
    """200 when every required check holds, else 503; the body names every check and its
    reason, and whether the program is degraded (a check that is not required fails)."""
    ok = passes(checks)
    failing = [f"{c.name}: {c.detail}" for c in checks if not c.ok and c.required]
    weak = [f"{c.name}: {c.detail}" for c in checks if not c.ok and not c.required]
    status = kind if ok else f"not {kind}"
    if ok and weak:
        status += ", degraded"
    body = {"status": status, "ok": ok, "degraded": bool(weak), "reasons": failing,
            "degraded_reasons": weak, "checks": [check.as_dict() for check in checks]}
    return Reply(200 if ok else 503, (json.dumps(body, indent=1) + "\n").encode(),
                 "application/json")


class Probe:
    """``await probe()``: None when the probed thing answers, else why not (see the module
    docstring). ``run`` returns the same; an exception it raises is the reason, a run over
    ``timeout_s`` fails with "no answer within ...". ``clock``: monotonic seconds."""

    def __init__(self, what: str, run: Callable[[], Awaitable[str | None]], *,
                 timeout_s: float, max_age_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self._run = run
        self.timeout_s = timeout_s
        self.max_age_s = max_age_s
        self._clock = clock
        self._task: asyncio.Task[str | None] | None = None
        #: (when, answer) of the last completed run; None before the first one
        self.last: tuple[float, str | None] | None = None
        self.runs = 0

    async def __call__(self) -> str | None:
        last = self.last
        if last is not None and self._clock() - last[0] < self.max_age_s:
            return last[1]
        task = self._task
        if task is None or task.done():
            task = self._task = asyncio.get_running_loop().create_task(
                self._once(), name=f"probe {self.what}")
        return await asyncio.shield(task)

    async def _once(self) -> str | None:
        self.runs += 1
        try:
            async with asyncio.timeout(self.timeout_s):
                answer = await self._run()
        except TimeoutError:
            answer = f"no answer within {self.timeout_s:g} s"
        except Exception as exc:
            answer = f"{type(exc).__name__}: {exc}"
        self.last = (self._clock(), answer)
        return answer

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])

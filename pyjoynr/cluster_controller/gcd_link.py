"""The local directory's link to the Global Capabilities Directory: calls through a proxy of
the GCD, retries in the background, and the freshness jobs (touch, removeStale).

The link keeps its figures for the admin endpoint: calls per method and outcome (``ok``,
``error``: the GCD answered with a modelled error, ``timeout``: it did not answer in time,
``failed``: the call failed otherwise), their latency per method, and when the GCD last
answered or failed to (:attr:`GlobalLink.state`). :meth:`GlobalLink.probe` asks it something
cheap to learn whether it answers (readiness).

A client can make the link call the GCD for each registration and lookup it sends: a provider
registered or removed globally is logged at DEBUG (its count is the ``ok`` calls of ``add`` and
``remove``), and a failed call, a refusal and a background retry go through the process's
limit of repeated warnings (``warnings``: runtime.logs), keyed by the outcome and the GCD.

Every call carries the custom header ``gb``: the GBID it is for (the first of the call's GBIDs;
the default backend's for touch, removeStale and the probe), as joynr's cluster controllers
send it. The MQTT transport sends a call to the GCD's topic in the backend that header names
(the rule :func:`gcd_call_backend`, which the cluster controller hands to
transports.mqtt.transport: the transport knows nothing of the GCD), so each backend's GCD
instance gets the calls for its backend; a GBID whose backend has no GCD instance
(``gcd_gbids``) is asked of the first that has one."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pyjoynr.gcd.interface import GBID_HEADER, GCD_PARTICIPANT_ID
from pyjoynr.programming.discovery_types import (
    MAX_PARTICIPANT_IDS,
    DiscoveryEntry,
    DiscoveryErrorCode,
    GlobalDiscoveryEntry,
)
from pyjoynr.programming.system_interfaces import address_to_json
from pyjoynr.runtime.addresses import (
    MqttAddress,
)
from pyjoynr.runtime.errors import ApplicationError, JoynrError, JoynrTimeoutError
from pyjoynr.runtime.logs import RepeatedWarnings, get_logger
from pyjoynr.runtime.messages import Message
from pyjoynr.runtime.metrics import LatencyHistograms
from pyjoynr.runtime.tasks import TaskSupervisor

T = TypeVar("T")


log = get_logger(__name__)
#: the most participant ids one touch names (the GCD's bound of its participantIds)
_TOUCH_BATCH = MAX_PARTICIPANT_IDS

#: the participantId the readiness probe looks up (nobody registers it: the GCD's answer is
#: NO_ENTRY_FOR_PARTICIPANT, from its index)
PROBE_PARTICIPANT_ID = "joynr-cluster-controller-readiness-probe"


def gcd_call_backend(message: Message) -> str | None:
    """The backend (GBID) a message goes to over MQTT when not its address's: a call to the GCD
    goes to the backend its header ``gb`` names, as joynr's cluster controllers route it
    (None: no such header, or not a call to the GCD; a GBID no backend has is refused there
    like any unknown GBID). The rule the cluster controller hands to its MQTT transport."""
    if message.recipient == GCD_PARTICIPANT_ID and message.custom_headers:
        return message.custom_headers.get(GBID_HEADER)
    return None


#: outcomes of a call (GlobalLink.calls)
CALL_OUTCOMES = ("ok", "error", "timeout", "failed")
#: modelled errors that say the GCD answered the probe
_PROBE_ANSWERS = (DiscoveryErrorCode.NO_ENTRY_FOR_PARTICIPANT.name,
                  DiscoveryErrorCode.NO_ENTRY_FOR_SELECTED_BACKENDS.name)


@dataclass(frozen=True, slots=True)
class LinkState:
    """When the GCD last answered a call and when one last went unanswered or failed (epoch
    seconds, None: never), and why."""

    last_answer_s: float | None
    last_failure_s: float | None
    last_failure: str

    @property
    def reachable(self) -> bool | None:
        """Whether the last call was answered (None: no call yet)."""
        if self.last_answer_s is None and self.last_failure_s is None:
            return None
        return (self.last_failure_s is None
                or (self.last_answer_s is not None and self.last_answer_s >= self.last_failure_s))

    @property
    def last_call_s(self) -> float | None:
        times = [t for t in (self.last_answer_s, self.last_failure_s) if t is not None]
        return max(times) if times else None


class GlobalLink:
    """The local directory's way to the GCD: a proxy of it, the CC's GBIDs and address,
    background retries, and the freshness jobs (touch, removeStale).

    Every call has a time to live: ``request_ttl_ms`` (the CC's own calls), or less when the
    caller gives a budget (``ttl_ms``: what is left of the request the CC is answering). The
    call waits for ``ready`` first (the embedded GCD subscribed), within the same time. A call
    that gets no answer in time fails with INTERNAL_ERROR saying that the GCD did not answer."""

    def __init__(self, gcd: Any, gbids: list[str], address: MqttAddress,
                 cluster_controller_id: str, *, tasks: TaskSupervisor,
                 request_ttl_ms: int = 10_000,
                 ready: Callable[[], Awaitable[object]] | None = None,
                 retry_initial_s: float = 0.5, retry_max_s: float = 30.0,
                 gcd_gbids: Sequence[str] | None = None,
                 warnings: RepeatedWarnings | None = None) -> None:
        """``gcd_gbids``: the backends where a GCD instance answers (default: every one of
        ``gbids``; a GCD embedded in the cluster controller: its default backend only).
        ``warnings``: the process's limit of repeated warnings (its own by default)."""
        self.gcd = gcd
        self.gbids = list(gbids)
        self.gcd_gbids = list(gcd_gbids) if gcd_gbids else list(gbids)
        self.address = address
        self._address_json = address_to_json(address)
        self.cluster_controller_id = cluster_controller_id
        self.request_ttl_ms = request_ttl_ms
        self._ready = ready
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        #: the background calls (retries); closed with the link
        self.tasks = tasks.child("gcd-link")
        #: calls per (method, outcome) and their latency per method (see the module docstring)
        self.calls: Counter[tuple[str, str]] = Counter()
        self.latency = LatencyHistograms()
        self._last_answer_s: float | None = None
        self._last_failure_s: float | None = None
        self._last_failure = ""
        self._warnings = RepeatedWarnings() if warnings is None else warnings

    @property
    def state(self) -> LinkState:
        return LinkState(self._last_answer_s, self._last_failure_s, self._last_failure)

    def _outcome(self, method: str, outcome: str, started: float, failure: str = "") -> None:
        self.calls[method, outcome] += 1
        self.latency.observe(method, time.perf_counter() - started)
        if outcome in ("ok", "error"):
            self._last_answer_s = time.time()
        else:
            self._last_failure_s, self._last_failure = time.time(), failure

    def _global_entry(self, entry: DiscoveryEntry) -> GlobalDiscoveryEntry:
        return GlobalDiscoveryEntry(**vars(entry), address=self._address_json)

    def header_gbid(self, gbids: Sequence[str] = ()) -> str:
        """The ``gb`` header of a call for ``gbids``: the first of them, if a GCD instance
        answers in its backend; else (and without GBIDs) the first backend that has one."""
        if gbids and gbids[0] in self.gcd_gbids:
            return gbids[0]
        return self.gcd_gbids[0] if self.gcd_gbids else ""

    def _proxy(self, ttl: int, gbid: str) -> Any:
        """The GCD proxy for one call: its time to live, and the header ``gb``."""
        gcd = self.gcd if ttl == self.request_ttl_ms else self.gcd.with_ttl(ttl)
        return gcd.with_headers({GBID_HEADER: gbid}) if gbid else gcd

    async def _call(self, method: str, what: str, call: Callable[[Any], Awaitable[T]],
                    ttl_ms: int | None = None, gbids: Sequence[str] = ()) -> T:
        """``call(gcd proxy)`` within ``ttl_ms`` (default: ``request_ttl_ms``): modelled errors
        pass; anything else is INTERNAL_ERROR for the caller, saying what happened.
        ``method``: the GCD method, for the figures; ``what``: for the messages; ``gbids``:
        the GBIDs the call is for (its ``gb`` header: :meth:`header_gbid`)."""
        ttl = self.request_ttl_ms if ttl_ms is None else ttl_ms
        if ttl <= 0:
            raise ApplicationError(DiscoveryErrorCode.INTERNAL_ERROR.name,
                                   f"GCD {what}: no time left to ask the GCD")
        started = time.perf_counter()
        try:
            async with asyncio.timeout(ttl / 1000):
                if self._ready is not None:
                    await self._ready()
                result = await call(self._proxy(ttl, self.header_gbid(gbids)))
        except ApplicationError:
            self._outcome(method, "error", started)
            raise
        except (TimeoutError, JoynrTimeoutError):
            outcome, detail = "timeout", f"the GCD did not answer {what} within {ttl} ms"
        except JoynrError as exc:
            outcome, detail = "failed", f"GCD {what} failed: {exc}"
        else:
            self._outcome(method, "ok", started)
            return result
        self._outcome(method, outcome, started, detail)
        # (logged by whoever handles the error too: the background retries as a warning);
        # counted in the calls per method and outcome
        self._warnings.warning(log, f"gcd-{method}-{outcome}", "the GCD", "%s", detail,
                               level=logging.INFO)
        raise ApplicationError(DiscoveryErrorCode.INTERNAL_ERROR.name, detail)

    async def probe(self, timeout_ms: int) -> str | None:
        """Whether the GCD answers: None when it does, else why not. Looks up a participant
        nobody registers (the GCD answers from its index)."""
        try:
            await self._call("probe", "a lookup of the readiness probe",
                             lambda gcd: gcd.lookup_participant_in(PROBE_PARTICIPANT_ID,
                                                                   self.gbids[:1]),
                             timeout_ms, self.gbids[:1])
        except ApplicationError as exc:
            if exc.error in _PROBE_ANSWERS:
                return None
            return exc.message or exc.error
        return None

    async def add(self, entry: DiscoveryEntry, gbids: list[str], ttl_ms: int | None = None
                  ) -> None:
        global_entry = self._global_entry(entry)
        await self._call("add", f"add {entry.participant_id}",
                         lambda gcd: gcd.add_in_backends(global_entry, gbids), ttl_ms, gbids)
        log.debug("provider %s registered globally in %s", entry.participant_id,
                 ", ".join(gbids), extra={"participantId": entry.participant_id})

    async def remove(self, participant_id: str, gbids: list[str]) -> None:
        try:
            await self._call("remove", f"remove {participant_id}",
                             lambda gcd: gcd.remove_in_backends(participant_id, gbids), gbids=gbids)
        except ApplicationError as exc:
            if exc.error not in (DiscoveryErrorCode.NO_ENTRY_FOR_PARTICIPANT.name,
                                 DiscoveryErrorCode.NO_ENTRY_FOR_SELECTED_BACKENDS.name):
                raise
        log.debug("provider %s removed from the GCD (%s)", participant_id, ", ".join(gbids),
                 extra={"participantId": participant_id})

    async def lookup(self, domains: list[str], interface_name: str, gbids: list[str],
                     ttl_ms: int | None = None) -> list[GlobalDiscoveryEntry]:
        result: list[GlobalDiscoveryEntry] = await self._call(
            "lookup", f"lookup {interface_name}",
            lambda gcd: gcd.lookup_in_backends(domains, interface_name, gbids), ttl_ms, gbids)
        return result

    async def lookup_participant(self, participant_id: str, gbids: list[str],
                                 ttl_ms: int | None = None) -> GlobalDiscoveryEntry:
        result: GlobalDiscoveryEntry = await self._call(
            "lookupParticipant", f"lookup {participant_id}",
            lambda gcd: gcd.lookup_participant_in(participant_id, gbids), ttl_ms, gbids)
        return result

    async def touch(self, participant_ids: list[str]) -> None:
        """Touch the entries of ``participant_ids``: one call per ``MAX_PARTICIPANT_IDS`` of
        them (10,000; the GCD refuses a longer list)."""
        for start in range(0, len(participant_ids), _TOUCH_BATCH):
            await self._touch(participant_ids[start:start + _TOUCH_BATCH])

    async def _touch(self, participant_ids: list[str]) -> None:
        await self._call("touch", "touch", lambda gcd: gcd.touch_participants(
            self.cluster_controller_id, participant_ids))

    async def remove_stale(self, max_last_seen_ms: int) -> None:
        await self._call("removeStale", "removeStale", lambda gcd: gcd.remove_stale(
            self.cluster_controller_id, max_last_seen_ms))

    def in_background(self, what: str, call: Callable[[], Awaitable[object]], *,
                      still_wanted: Callable[[], bool] = lambda: True,
                      give_up_s: float | None = None) -> None:
        """Retry ``call`` with backoff until it succeeds, is no longer wanted, or (with
        ``give_up_s``) time is up. Modelled errors other than INTERNAL_ERROR end it too."""
        def warn(reason: str, level: int, msg: str, *args: object) -> None:
            # one per registration a client sends: rate-limited (what: "add <participant>")
            self._warnings.warning(log, reason, f"the GCD ({what.split(' ', 1)[0]})", msg,
                                   *args, level=level)

        async def run() -> None:
            loop = asyncio.get_running_loop()
            deadline = None if give_up_s is None else loop.time() + give_up_s
            delay = self.retry_initial_s
            attempt = 0
            while still_wanted():
                attempt += 1
                try:
                    await call()
                    return
                except ApplicationError as exc:
                    if exc.error != DiscoveryErrorCode.INTERNAL_ERROR.name:
                        warn("gcd-refused", logging.ERROR, "GCD %s refused: %s", what, exc)
                        return
                    if attempt == 1:  # (the later attempts: DEBUG)
                        warn("gcd-retrying", logging.WARNING,
                             "GCD %s failed (attempt %d), retrying in %.1f s: %s", what,
                             attempt, delay, exc)
                    else:
                        log.debug("GCD %s failed (attempt %d), retrying in %.1f s: %s", what,
                                  attempt, delay, exc)
                if deadline is not None and loop.time() + delay > deadline:
                    warn("gcd-gave-up", logging.ERROR, "GCD %s: giving up after %d attempts",
                         what, attempt)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_max_s)

        self.tasks.spawn(run(), name=f"gcd-{what}")

    async def close(self) -> None:
        """Stop every background call."""
        await self.tasks.close()

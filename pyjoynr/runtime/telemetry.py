"""What a process counts, logs rate-limited and audits: :class:`Telemetry`.

Each process (a cluster controller, a libjoynr runtime, a GCD instance) makes one
:class:`Telemetry` and hands it to the parts that count, warn or audit: its router, its
transports, its providers' skeletons and subscriptions, its Routing and Discovery providers,
its proxies. None of them reaches through another for it.

- ``counters``: every message dropped or refused after it was admitted, by reason
  (``dropped-<reason>``, ``refused-request``, ``provider-failed``, ...). The admin pages and the
  statistics line read them; the names are part of the operators' interface (docs/operating.md).
  The refusals on a connection's way in are counted in that connection's inlet (the
  transport's counters), the bounds of a connection in the quotas.
- ``warnings``: the process's limit of repeated warnings (:class:`runtime.logs.RepeatedWarnings`),
  through :meth:`Telemetry.warn`.
- ``audit``: told of every routing decision (:class:`RoutingAudit`, implemented by
  :class:`runtime.audit.AuditLog`; none by default); set at construction or by
  :meth:`Telemetry.set_audit`.
- ``statistics``: what the process's router routed (:class:`RoutingStatistics`): the messages
  handed to its ``route`` per type (``routed_by_type``, ``routed``) and what became of them per
  outcome and type (``outcomes``: ``forwarded``, ``queued``, ``dropped``). The router
  increments them through references it keeps (one dict increment per message); the admin
  pages, the metrics and the statistics line read them here.

Pure bookkeeping: no I/O of its own (the audit log and the loggers do theirs).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any, Protocol

from pyjoynr.runtime.logs import RepeatedWarnings
from pyjoynr.runtime.messages import Message, MessageType

if TYPE_CHECKING:
    from pyjoynr.runtime.addresses import Address

__all__ = ["OUTCOMES", "RoutingAudit", "RoutingStatistics", "Telemetry"]

#: what becomes of a routed message (:attr:`RoutingStatistics.outcomes`)
OUTCOMES = ("forwarded", "queued", "dropped")


class RoutingAudit(Protocol):
    """Told of each routing decision (runtime.audit.AuditLog). Must not block or raise: it is
    called on the routing path."""

    def delivered(self, message: Message, hop: Address, queued_ms: int) -> None:
        """``message`` was accepted by the transport of ``hop`` after ``queued_ms`` in a queue."""
        ...

    def decided(self, message: Message, outcome: str, hop: Address | None = None,
                reason: str | None = None, peer: str | None = None) -> None:
        """``message`` was queued (``hop``: whose transport refused it; None: no route yet),
        dropped or refused (``outcome``, runtime.records) for ``reason``."""
        ...


class RoutingStatistics:
    """What a router routed, per message type: handed to ``route`` (``routed_by_type``) and
    what became of it (``outcomes``, per outcome of :data:`OUTCOMES`). Every key is present
    from the start, so that an increment is one dict lookup."""

    __slots__ = ("outcomes", "routed_by_type")

    def __init__(self) -> None:
        #: messages handed to the router's route(), per type (a queued one again when it goes
        #: out)
        self.routed_by_type: dict[MessageType, int] = dict.fromkeys(MessageType, 0)
        #: what became of them, per outcome and type: forwarded (a transport took it; a
        #: multicast once per next hop), queued, dropped (when routed or later from a queue)
        self.outcomes: dict[str, dict[MessageType, int]] = {
            outcome: dict.fromkeys(MessageType, 0) for outcome in OUTCOMES}

    @property
    def routed(self) -> int:
        """Messages handed to route() so far (a queued one again when it goes out)."""
        return sum(self.routed_by_type.values())


class Telemetry:
    """The counters, the limit of repeated warnings, the audit hook and the routing statistics
    of one process."""

    __slots__ = ("audit", "counters", "statistics", "warnings")

    def __init__(self, *, warnings: RepeatedWarnings | None = None,
                 audit: RoutingAudit | None = None) -> None:
        #: messages dropped or refused, by reason (see the module docstring)
        self.counters: Counter[str] = Counter()
        #: the process's limit of repeated warnings (runtime.logs)
        self.warnings = RepeatedWarnings() if warnings is None else warnings
        #: told of every routing decision when set
        self.audit: RoutingAudit | None = audit
        #: what the process's router routed, per type and outcome
        self.statistics = RoutingStatistics()

    def warn(self, logger: logging.Logger, reason: str, peer: str, msg: str, *args: object,
             **kwargs: Any) -> None:
        """A log line rate-limited per ``reason`` and ``peer`` by this process's limit of
        repeated warnings (runtime.logs.RepeatedWarnings.warning)."""
        self.warnings.warning(logger, reason, peer, msg, *args, **kwargs)

    def set_audit(self, audit: RoutingAudit | None) -> None:
        """Record every routing decision in ``audit`` from now on (None: no longer)."""
        self.audit = audit

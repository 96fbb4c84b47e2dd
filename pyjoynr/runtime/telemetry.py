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

Pure bookkeeping: no I/O of its own (the audit log and the loggers do theirs).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any, Protocol

from pyjoynr.runtime.logs import RepeatedWarnings

if TYPE_CHECKING:
    from pyjoynr.runtime.addresses import Address
    from pyjoynr.runtime.messages import Message

__all__ = ["RoutingAudit", "Telemetry"]


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


class Telemetry:
    """The counters, the limit of repeated warnings and the audit hook of one process."""

    __slots__ = ("audit", "counters", "warnings")

    def __init__(self, *, warnings: RepeatedWarnings | None = None,
                 audit: RoutingAudit | None = None) -> None:
        #: messages dropped or refused, by reason (see the module docstring)
        self.counters: Counter[str] = Counter()
        #: the process's limit of repeated warnings (runtime.logs)
        self.warnings = RepeatedWarnings() if warnings is None else warnings
        #: told of every routing decision when set
        self.audit: RoutingAudit | None = audit

    def warn(self, logger: logging.Logger, reason: str, peer: str, msg: str, *args: object,
             **kwargs: Any) -> None:
        """A log line rate-limited per ``reason`` and ``peer`` by this process's limit of
        repeated warnings (runtime.logs.RepeatedWarnings.warning)."""
        self.warnings.warning(logger, reason, peer, msg, *args, **kwargs)

    def set_audit(self, audit: RoutingAudit | None) -> None:
        """Record every routing decision in ``audit`` from now on (None: no longer)."""
        self.audit = audit

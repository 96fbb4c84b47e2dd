"""What the cluster controller's Routing and Discovery providers take on a connection's behalf,
within the bounds of that connection (:class:`ConnectionHolds`).

The bookkeeping is :class:`runtime.quotas.Quotas` (pure): the cluster controller makes one and
hands it to its websocket server (connections begin and end), its router (subscription
requests at the way in) and, through a :class:`ConnectionHolds`, to its Routing provider
(routes, multicast receivers) and local directory (providers, registrations with the GCD). A
refusal here is a call refused: logged rate-limited by the process's limit of repeated
warnings (its telemetry), counted by the quotas, and raised to the caller as a
ProviderRuntimeError that names the bound.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable

from pyjoynr.runtime.addresses import Address
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import ProviderRuntimeError
from pyjoynr.runtime.logs import peer_of
from pyjoynr.runtime.quotas import Quotas
from pyjoynr.runtime.telemetry import Telemetry

__all__ = ["ConnectionHolds"]


class ConnectionHolds:
    """``hold`` and ``release`` of what one connection holds (runtime.quotas), for the
    providers that take things on its behalf."""

    __slots__ = ("_clock_ms", "_telemetry", "quotas")

    def __init__(self, quotas: Quotas | None, telemetry: Telemetry, *,
                 clock_ms: Callable[[], int] = now_ms) -> None:
        """``quotas``: the cluster controller's (shared with its websocket server and router);
        None: nothing is bounded. ``telemetry``: the process's (refusals are logged through
        its limit of repeated warnings). ``clock_ms``: epoch milliseconds."""
        self.quotas = quotas
        self._telemetry = telemetry
        self._clock_ms = clock_ms

    def hold(self, kind: str, connection: Address | None, item: Hashable, what: str,
             logger: logging.Logger) -> None:
        """``connection`` holds ``item`` of ``kind`` from now on, or the call that asks
        (``what``) is refused: ProviderRuntimeError naming the bound, logged rate-limited on
        ``logger`` (counted by the quotas). This process's own calls (``connection`` None) are
        not bounded."""
        quotas = self.quotas
        if quotas is None or connection is None:
            return
        refusal = quotas.admit(kind, connection, item, now_ms=self._clock_ms())
        if refusal is not None:
            self._telemetry.warn(logger, refusal.reason, peer_of(connection),
                                 "%s from %r refused: %s", what, connection, refusal.detail)
            raise ProviderRuntimeError(f"{what} refused: {refusal.detail}")

    def release(self, kind: str, connection: Address | None, item: Hashable) -> None:
        """``connection`` no longer holds ``item`` of ``kind``."""
        if self.quotas is not None:
            self.quotas.release(kind, connection, item)

"""What one connection, and one owner id, may hold in a cluster controller: routes, providers,
global registrations, multicast receivers and subscriptions.

Pure bookkeeping, no I/O, no logging: the transports say when a connection begins (with the
owner id of its client certificate, if any) and ends; the Routing provider, the local
directory and the router's way in ask :meth:`Quotas.admit` before they take something on a
connection's behalf and :meth:`Quotas.release` when it is given back. A refusal is a
:class:`runtime.rules.Refusal` whose reason is the counter key (``bound-<kind>-per-connection``
or ``bound-<kind>-per-owner``) and whose detail names the bound, its setting and its value.
When a connection ends, everything it held is forgotten at once (its routes and receivers are
removed by the router; its providers follow their own grace period, counted by nobody).

Each thing held is kept once per connection (a participantId, a pattern and its subscriber, a
subscription id), so that registering the same thing again counts once. A subscription holds
until its end (the expiry date of its QoS) when it has one: at the bound, the ended ones are
forgotten before a new one is refused. Calls made in this process (no connection) are not
bounded; a connection that was not announced, or has ended, may take on nothing
(``connection-gone``). The limits are the ``[connection_bounds]`` section of the cluster
controller's configuration (:class:`ConnectionBounds`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Final

from pyjoynr.runtime.addresses import Address
from pyjoynr.runtime.rules import Refusal

__all__ = ["CONNECTION_GONE", "GLOBAL_PROVIDERS", "KINDS", "MULTICAST_RECEIVERS", "PROVIDERS",
           "ROUTES", "SUBSCRIPTIONS", "ConnectionBounds", "Quotas"]

#: the kinds of things a connection holds
ROUTES: Final = "routes"
PROVIDERS: Final = "providers"
GLOBAL_PROVIDERS: Final = "global_providers"
MULTICAST_RECEIVERS: Final = "multicast_receivers"
SUBSCRIPTIONS: Final = "subscriptions"
KINDS: Final = (ROUTES, PROVIDERS, GLOBAL_PROVIDERS, MULTICAST_RECEIVERS, SUBSCRIPTIONS)

#: the refusal of anything for a connection that is not (or no longer) connected
CONNECTION_GONE: Final = "connection-gone"

#: what a kind is called in a refusal
_NAMES: Final = {
    ROUTES: "routes (add_next_hop)",
    PROVIDERS: "registered providers",
    GLOBAL_PROVIDERS: "providers registered with the GCD",
    MULTICAST_RECEIVERS: "multicast receivers",
    SUBSCRIPTIONS: "subscriptions",
}

#: the end of what does not end on its own
_NEVER: Final = 2**63 - 1


@dataclass(frozen=True)
class ConnectionBounds:
    """The ``[connection_bounds]`` section: what one websocket connection, and all connections
    of one owner id (the CN of a wss client certificate) together, may hold."""

    #: participants routed to the connection (Routing provider: add_next_hop)
    max_routes_per_connection: int = 2_000
    #: providers registered in the local directory (Discovery provider: add)
    max_providers_per_connection: int = 250
    #: of those, providers registered with the GCD (GLOBAL scope)
    max_global_providers_per_connection: int = 100
    #: multicast receivers (Routing provider: add_multicast_receiver)
    max_multicast_receivers_per_connection: int = 2_000
    #: subscriptions requested through the cluster controller (attribute, broadcast and
    #: multicast subscription requests, until stopped, ended or the connection ends)
    max_subscriptions_per_connection: int = 2_000
    #: the same, for all connections of one owner id together
    max_routes_per_owner: int = 8_000
    max_providers_per_owner: int = 1_000
    max_global_providers_per_owner: int = 400
    max_multicast_receivers_per_owner: int = 8_000
    max_subscriptions_per_owner: int = 8_000

    def __post_init__(self) -> None:
        for kind in KINDS:
            for per in ("connection", "owner"):
                name = f"max_{kind}_per_{per}"
                if getattr(self, name) < 1:
                    raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    def limit(self, kind: str, per: str) -> int:
        value: int = getattr(self, f"max_{kind}_per_{per}")
        return value


class _Holder:
    """What one connection holds: per kind, each thing with its end (epoch ms)."""

    __slots__ = ("held", "next_end", "owner")

    def __init__(self, owner: str | None) -> None:
        self.owner = owner
        self.held: dict[str, dict[Hashable, int]] = {kind: {} for kind in KINDS}
        #: the earliest end of anything held that ends (per kind; _NEVER: nothing ends)
        self.next_end: dict[str, int] = dict.fromkeys(KINDS, _NEVER)


class Quotas:
    """See the module docstring. ``counters``: the refusals, by reason."""

    def __init__(self, bounds: ConnectionBounds | None = None) -> None:
        self.bounds = bounds or ConnectionBounds()
        self.counters: Counter[str] = Counter()
        self._holders: dict[Address, _Holder] = {}
        # owner id -> kind -> what its connections hold together
        self._owners: dict[str, Counter[str]] = {}

    # ------------------------------------------------------------------ connections

    def connected(self, connection: Address, owner: str | None = None) -> None:
        """A connection began (``owner``: the owner id of its client certificate)."""
        self.disconnected(connection)
        self._holders[connection] = _Holder(owner)

    def disconnected(self, connection: Address) -> None:
        """A connection ended: what it held is forgotten."""
        holder = self._holders.pop(connection, None)
        if holder is None or holder.owner is None:
            return
        owned = self._owners.get(holder.owner)
        if owned is None:  # its owner's connections never held anything
            return
        for kind, items in holder.held.items():
            owned[kind] -= len(items)
        if not any(owned.values()) and not any(
                h.owner == holder.owner for h in self._holders.values()):
            del self._owners[holder.owner]

    # ------------------------------------------------------------------ admission

    def admit(self, kind: str, connection: Address | None, item: Hashable, *,
              ends_ms: int = 0, now_ms: int = 0) -> Refusal | None:
        """Let ``connection`` hold ``item`` of ``kind`` (until ``ends_ms``, epoch ms; 0: until
        released), or a refusal (counted in :attr:`counters`) when that takes it, or its
        owner id, over the bound, or when ``connection`` was not announced (:meth:`connected`)
        or has ended. Holding it already is no new holding. ``connection`` None (this
        process): always admitted, not counted."""
        if connection is None:
            return None
        holder = self._holders.get(connection)
        if holder is None:
            # its transport did not announce it, or it has ended (a call read before its end
            # and served after it): nothing may be taken on for a connection that is gone
            self.counters[CONNECTION_GONE] += 1
            return Refusal(CONNECTION_GONE, f"{connection!r} is not connected")
        items = holder.held[kind]
        end = ends_ms if ends_ms > 0 else _NEVER
        if item in items:
            items[item] = end
            holder.next_end[kind] = min(holder.next_end[kind], end)
            return None
        bounds = self.bounds
        limit = bounds.limit(kind, "connection")
        if len(items) >= limit and holder.next_end[kind] <= now_ms:
            self._forget_ended(holder, kind, now_ms)
        if len(items) >= limit:
            return self._refuse(kind, "connection", f"{connection!r}", len(items), limit)
        owner = holder.owner
        if owner is not None:
            owned = self._owners.setdefault(owner, Counter())
            owner_limit = bounds.limit(kind, "owner")
            if owned[kind] >= owner_limit:
                for other in self._holders.values():
                    if other.owner == owner and other.next_end[kind] <= now_ms:
                        self._forget_ended(other, kind, now_ms)
            if owned[kind] >= owner_limit:
                return self._refuse(kind, "owner", f"the connections of owner id {owner!r}",
                                    owned[kind], owner_limit)
            owned[kind] += 1
        items[item] = end
        holder.next_end[kind] = min(holder.next_end[kind], end)
        return None

    def release(self, kind: str, connection: Address | None, item: Hashable) -> None:
        """``connection`` no longer holds ``item`` of ``kind`` (nothing if it did not)."""
        if connection is None:
            return
        holder = self._holders.get(connection)
        if holder is None or holder.held[kind].pop(item, None) is None:
            return
        if holder.owner is not None:
            self._owners[holder.owner][kind] -= 1

    def _forget_ended(self, holder: _Holder, kind: str, now_ms: int) -> None:
        items = holder.held[kind]
        ended = [item for item, end in items.items() if end <= now_ms]
        for item in ended:
            del items[item]
        if holder.owner is not None:
            self._owners[holder.owner][kind] -= len(ended)
        holder.next_end[kind] = min(items.values(), default=_NEVER)

    def _refuse(self, kind: str, per: str, who: str, held: int, limit: int) -> Refusal:
        reason = f"bound-{kind.replace('_', '-')}-per-{per}"
        self.counters[reason] += 1
        verb = "hold" if per == "owner" else "holds"
        return Refusal(reason, f"{who} {verb} {held} {_NAMES[kind]}, the bound "
                       f"([connection_bounds] max_{kind}_per_{per}) is {limit}")

    # ------------------------------------------------------------------ what it holds

    def held(self, kind: str, connection: Address) -> int:
        holder = self._holders.get(connection)
        return 0 if holder is None else len(holder.held[kind])

    def owner_held(self, kind: str, owner: str) -> int:
        owned = self._owners.get(owner)
        return 0 if owned is None else owned[kind]

    def totals(self) -> dict[str, int]:
        """What all connections hold together, per kind."""
        totals = dict.fromkeys(KINDS, 0)
        for holder in self._holders.values():
            for kind, items in holder.held.items():
                totals[kind] += len(items)
        return totals

    @property
    def connections(self) -> int:
        return len(self._holders)

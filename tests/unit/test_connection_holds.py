"""cluster_controller.bounds: what the Routing and Discovery providers take on a connection's
behalf, within the quotas the cluster controller hands them (not through its router)."""

from __future__ import annotations

import pytest

from pyjoynr.cluster_controller.bounds import ConnectionHolds
from pyjoynr.cluster_controller.local_discovery import LocalDiscovery
from pyjoynr.cluster_controller.routing_provider import RoutingProvider
from pyjoynr.runtime.addresses import WebSocketClientAddress
from pyjoynr.runtime.errors import ProviderRuntimeError
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.quotas import MULTICAST_RECEIVERS, ROUTES, ConnectionBounds, Quotas
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.telemetry import Telemetry

A = WebSocketClientAddress("a")
log = get_logger("tests.connection_holds")


def test_a_hold_beyond_the_bound_is_refused_counted_by_the_quotas_and_warned_once() -> None:
    quotas = Quotas(ConnectionBounds(max_routes_per_connection=1))
    telemetry = Telemetry()
    holds = ConnectionHolds(quotas, telemetry)
    quotas.connected(A)
    holds.hold(ROUTES, A, "p1", "add_next_hop p1", log)
    for n in range(3):
        with pytest.raises(ProviderRuntimeError, match="max_routes_per_connection"):
            holds.hold(ROUTES, A, f"past-{n}", f"add_next_hop past-{n}", log)
    assert quotas.counters["bound-routes-per-connection"] == 3
    # logged through the process's limit of repeated warnings: once per reason and peer
    assert [line.reason for line in telemetry.warnings.recent.newest_first()] == [
        "bound-routes-per-connection"]
    holds.release(ROUTES, A, "p1")
    holds.hold(ROUTES, A, "p2", "add_next_hop p2", log)
    assert quotas.held(ROUTES, A) == 1
    # this process's own calls are not bounded, nor is anything without quotas
    holds.hold(ROUTES, None, "own", "add_next_hop own", log)
    unbounded = ConnectionHolds(None, telemetry)
    unbounded.hold(MULTICAST_RECEIVERS, A, ("m", "s"), "add_multicast_receiver m", log)
    unbounded.release(MULTICAST_RECEIVERS, A, ("m", "s"))


def test_the_providers_hold_through_what_they_are_handed_not_through_the_router() -> None:
    quotas = Quotas()
    telemetry = Telemetry()
    holds = ConnectionHolds(quotas, telemetry)
    router = MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER), telemetry=telemetry,
                           quotas=quotas)
    routing = RoutingProvider(router, telemetry=telemetry, holds=holds)
    discovery = LocalDiscovery(router, telemetry=telemetry, holds=holds)
    assert routing._holds is holds and discovery._holds is holds
    assert not hasattr(router, "hold") and not hasattr(router, "quotas")

"""The router only routes: counting, rate-limited warnings and the audit are the process's
(runtime.telemetry.Telemetry), handed to whoever needs them; the router is handed what it routes
to (transports, the global multicast link) and nobody writes into it or reaches through it.
Read from the source (ast and text), without running anything."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.telemetry import Telemetry

ROOT = Path(__file__).resolve().parents[2]
ROUTER = ROOT / "pyjoynr" / "runtime" / "router.py"

#: the router's public members: the way in and what transports report (receive,
#: refuse_frame, sent_by_transport, dropped_by_transport, transport_ready), routing (route,
#: sweep, queues), the table (routes and multicast receivers, read through the readers), set-up
#: (register_transport, register_global_multicast), the bounds of a connection (hold, release,
#: quotas) and the routing statistics (routed, routed_by_type, outcomes)
ROUTER_MEMBERS = frozenset({
    "add_multicast_receiver", "add_route", "clock_ms", "dropped_by_transport", "has_route",
    "hold", "learn_reply_to", "multicast_receivers", "outcomes", "parent", "participants_at",
    "purge", "queued", "queued_bytes", "quotas", "receive", "refuse_frame",
    "register_global_multicast", "register_transport", "release", "remove_multicast_receiver",
    "remove_route", "remove_routes_at", "route", "route_count", "route_of", "routed",
    "routed_by_type", "routing_counts", "routing_entries", "sent_by_transport", "settings",
    "sweep", "transport_ready",
})


def public_members() -> set[str]:
    cls = next(node for node in ast.parse(ROUTER.read_text()).body
               if isinstance(node, ast.ClassDef) and node.name == "MessageRouter")
    names = {node.name for node in cls.body
             if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}
    names |= {node.attr for node in ast.walk(cls)
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "self" and isinstance(node.ctx, ast.Store)
              and not node.attr.startswith("_")}
    return names


def test_the_router_has_no_members_for_counting_warning_or_auditing() -> None:
    members = public_members()
    assert not members & {"counters", "warn", "set_audit", "global_multicast"}
    assert members == ROUTER_MEMBERS


def test_no_module_reaches_through_the_router_for_telemetry_or_writes_into_it() -> None:
    """Counters, warnings and the audit hook come from the process's Telemetry; no module
    sets an attribute of a router (the global multicast link is registered); proxies route
    through their host, not through its router."""
    reach = re.compile(r"\brouter\)?\.(counters|warn|set_audit)\b|"
                       r"\brouter\.\w+\s*=[^=]|_host\.router\b")
    offenders = []
    for path in sorted((ROOT / "pyjoynr").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            if reach.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


def test_a_router_counts_and_warns_into_the_telemetry_it_is_given() -> None:
    telemetry = Telemetry()
    router = MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER), telemetry=telemetry)
    # no transport for anyone: a message to a participant without a route waits
    assert router.route(Message(MessageType.ONE_WAY, "a", "nobody", now_ms() + 60_000, b"x"))
    assert telemetry.counters["queued"] == 1
    # an expired one is dropped, counted there and logged through its limit of warnings
    assert not router.route(Message(MessageType.ONE_WAY, "a", "nobody", now_ms() - 1, b"x"))
    assert telemetry.counters["dropped-expired"] == 1
    assert [line.reason for line in telemetry.warnings.recent.newest_first()] == ["expired"]

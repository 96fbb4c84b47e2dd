"""The router only receives, routes, keeps the routes and the queues: counting (the routing
statistics too), rate-limited warnings and the audit are the process's
(runtime.telemetry.Telemetry), handed to whoever needs them; the bounds of a connection are the
quotas the cluster controller hands to its providers, websocket server and router; the router
is handed what it routes to (transports, the global multicast link) and nobody writes into it
or reaches through it. Read from the source (ast and text), without running anything."""

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

#: the router's public members, each with why it is the router's: receiving, routing, the
#: routes or the queues. Nothing else: counting, warnings and the audit are the telemetry's
#: (runtime.telemetry, the routing statistics too); the bounds of a connection are the
#: quotas the cluster controller hands to its providers (cluster_controller.bounds), its
#: websocket server and its router; the clock is the router's own.
ROUTER_MEMBERS: dict[str, str] = {
    # receiving
    "receive": "the way in: a transport hands over what arrived on a connection",
    "refuse_frame": "the way in: what arrived and is no message, refused for its inlet",
    "dropped_by_transport": "what a transport drops after taking it; answers the requester",
    # routing
    "route": "next hop by recipient; the way in and this process's messages",
    "register_transport": "set-up: the transport it routes to, per address type",
    "register_global_multicast": "set-up: the link it multicasts across backends through",
    "register_gate": "set-up: what each message must pass before a transport (access control)",
    "parent": "a libjoynr runtime's next hop for everyone without an entry (the CC)",
    # the routes: the routing table and the multicast receivers
    "add_route": "routes: put an entry, deliver what waited",
    "remove_route": "routes: remove an entry",
    "remove_routes_at": "routes: everything behind a connection that ended",
    "learn_reply_to": "routes: the replyTo route of a request from a backend",
    "purge": "routes: remove the expired ones",
    "route_of": "routes: read one entry",
    "has_route": "routes: whether there is one",
    "participants_at": "routes: who is behind an address",
    "routing_entries": "routes: a snapshot of the table",
    "route_count": "routes: how many",
    "routing_counts": "routes: how many, by kind and address type",
    "multicast_receivers": "routes of multicasts: the receiver index",
    "add_multicast_receiver": "routes of multicasts: a receiver (and its backend subscription)",
    "remove_multicast_receiver": "routes of multicasts: a receiver gone",
    # the queues
    "queued": "queues: messages waiting, in all or for one recipient",
    "queued_bytes": "queues: bytes waiting, in all or from one connection",
    "sweep": "queues: drop the expired, retry the refused",
    "transport_ready": "queues: a transport (re)connected, retry now",
    "settings": "queues: their bounds and retry timing, read by the sweep's driver",
}


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
    # nor for statistics, the bounds of a connection or the clock
    assert not members & {"routed", "routed_by_type", "outcomes", "hold", "release", "quotas",
                          "clock_ms", "sent_by_transport"}
    assert members == set(ROUTER_MEMBERS), (
        f"new: {sorted(members - set(ROUTER_MEMBERS))}, "
        f"gone: {sorted(set(ROUTER_MEMBERS) - members)}")


def test_no_module_reaches_through_the_router_for_telemetry_or_writes_into_it() -> None:
    """Counters, warnings, the audit hook and the routing statistics come from the process's
    Telemetry, the bounds of a connection from the quotas the assembly hands out; no module
    sets an attribute of a router (the global multicast link is registered); proxies route
    through their host, not through its router. bench/ and examples/ too (mypy does not
    read them)."""
    reach = re.compile(r"\brouter\)?\.(counters|warn|set_audit|routed|routed_by_type|"
                       r"outcomes|quotas|hold|release|clock_ms|sent_by_transport)\b|"
                       r"\brouter\.\w+\s*=[^=]|_host\.router\b")
    offenders = []
    for path in sorted(path for part in ("pyjoynr", "bench", "examples")
                       for path in (ROOT / part).rglob("*.py")):
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
    # and its routing statistics are the telemetry's
    statistics = telemetry.statistics
    assert statistics.routed == statistics.routed_by_type[MessageType.ONE_WAY] == 2
    assert statistics.outcomes["queued"][MessageType.ONE_WAY] == 1
    assert statistics.outcomes["dropped"][MessageType.ONE_WAY] == 1

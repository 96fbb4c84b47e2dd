"""The cost of access control on the websocket request path: request/reply latency through a
cluster controller with access control off, and on with a table of 10,000 entries, in one run.

Usage: .venv/bin/python bench/acl_websocket_rpc.py [--calls N] [--rounds R] [--entries E]
                                                    [--payload BYTES]

Three set-ups, each a cluster controller with two libjoynr runtimes in this process (as in
bench/websocket_rpc.py: runtime A calls ``echo(data) -> data`` of runtime B's provider of
``bench/Sink``, one call outstanding at a time, four websocket hops):

- off: access control off (the raw baseline of this run);
- on, interface level: access control on, its provisioning directory holding one file of E
  entries (master, mediator and owner access and registration entries of 100 users over 50
  domains and 200 interfaces, a third of them with domain or interface prefix wildcards, as
  joynr's ACL template generator makes them for its performance tests), among which the ones
  that let the runtimes (uid "": no client certificate) register and call ``bench/Sink`` on
  domain ``bench`` are found through wildcards (``bench*``, ``bench/*``);
- on, operation level: the same, but the entry that lets the call through names the operation
  (``echo``), so that every request's body is read for its operation.

Rounds alternate the three; each figure (p50, p99, mean in microseconds; round trips per
second) is the best of the R rounds. Goal: access control on costs at most 10 % (p50 on / off
<= 1.10), printed for both.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import uvloop
from _common import ProjectSetup, environment, help_text, quiet_gc, setup_logging
from websocket_rpc import Stats, timed_calls

_TYPES = "joynr.infrastructure.DacTypes."
_TRUST = ["HIGH", "MID", "LOW", "NONE"]
GOAL = 1.10


def _master(kind: str, uid: str, domain: str, interface: str, **fields: Any) -> dict[str, Any]:
    entry = {"_typeName": _TYPES + kind, "uid": uid, "domain": domain,
             "interfaceName": interface, "defaultRequiredTrustLevel": "HIGH",
             "possibleRequiredTrustLevels": _TRUST,
             "defaultRequiredControlEntryChangeTrustLevel": "HIGH",
             "possibleRequiredControlEntryChangeTrustLevels": _TRUST}
    entry.update(fields)
    return entry


def ace(uid: str, domain: str, interface: str, operation: str = "*",
        permission: str = "YES") -> dict[str, Any]:
    return _master("MasterAccessControlEntry", uid, domain, interface, operation=operation,
                   defaultConsumerPermission=permission,
                   possibleConsumerPermissions=["YES", "NO", "ASK"])


def rce(uid: str, domain: str, interface: str, permission: str = "YES") -> dict[str, Any]:
    return _master("MasterRegistrationControlEntry", uid, domain, interface,
                   defaultProviderPermission=permission,
                   possibleProviderPermissions=["YES", "NO", "ASK"])


def owner_ace(uid: str, domain: str, interface: str, operation: str = "*",
              permission: str = "YES") -> dict[str, Any]:
    return {"_typeName": _TYPES + "OwnerAccessControlEntry", "uid": uid, "domain": domain,
            "interfaceName": interface, "requiredTrustLevel": "LOW",
            "requiredAceChangeTrustLevel": "LOW", "operation": operation,
            "consumerPermission": permission}


def table(entries: int, operation_level: bool) -> dict[str, list[dict[str, Any]]]:
    """``entries`` entries, the bench's own among them (found through wildcards)."""
    rng = random.Random(42)
    tables: dict[str, list[dict[str, Any]]] = {
        name: [] for name in ("masterAccessTable", "mediatorAccessTable", "ownerAccessTable",
                              "masterRegistrationTable", "mediatorRegistrationTable",
                              "ownerRegistrationTable", "domainRoleTable")}
    # the bench's: registration and calls through prefix wildcards, for any uid
    tables["masterRegistrationTable"].append(rce("*", "bench*", "bench/*"))
    tables["masterAccessTable"].append(
        ace("*", "bench*", "bench/*", "echo" if operation_level else "*"))
    tables["masterAccessTable"].append(ace("*", "ben*", "*", "*", "NO"))
    n = len(tables["masterAccessTable"]) + 1
    keys: set[tuple[str, ...]] = set()  # (one entry per key: the store keeps the last)
    while n < entries:
        uid = f"user{rng.randrange(100)}"
        domain = f"vehicle.domain{rng.randrange(50)}"
        interface = f"vendor/area{rng.randrange(20)}/Interface{rng.randrange(200)}"
        shape = rng.randrange(6)
        if shape == 0:
            domain = domain[:rng.randrange(8, len(domain))] + "*"
        elif shape == 1:
            interface = interface[:rng.randrange(8, len(interface))] + "*"
        name = ("masterAccessTable", "mediatorAccessTable", "ownerAccessTable",
                "masterRegistrationTable")[rng.randrange(4)]
        if name == "ownerAccessTable":
            entry = owner_ace(uid, domain, interface, rng.choice(["*", "get", "set"]))
        elif name == "masterRegistrationTable":
            entry = rce(uid, domain, interface)
        else:
            entry = ace(uid, domain, interface, rng.choice(["*", "*", "get"]))
        key = (name, uid, domain, interface, str(entry.get("operation")))
        if key in keys:
            continue
        keys.add(key)
        tables[name].append(entry)
        n += 1
    return tables


def echo_of(proxy: Any, data: str) -> Callable[[], Awaitable[object]]:
    def call() -> Awaitable[object]:
        return proxy.echo(data)  # type: ignore[no-any-return]
    return call


async def run(args: argparse.Namespace) -> int:
    data = "x" * args.payload
    async with AsyncExitStack() as stack:
        setups: dict[str, ProjectSetup] = {}
        for name, level in (("off", None), ("on, interface level", False),
                            ("on, operation level", True)):
            overrides: dict[str, str] = {}
            if level is not None:
                directory = Path(stack.enter_context(tempfile.TemporaryDirectory(
                    prefix="bench-acl-")))
                (directory / "entries.json").write_text(
                    json.dumps(table(args.entries, level)), encoding="utf-8")
                overrides = {"access_control__enabled": "true",
                             "access_control__entries_directory": str(directory),
                             "access_control__reload_interval_ms": "0"}
            setups[name] = await stack.enter_async_context(ProjectSetup(**overrides))
        print(f"websocket request/reply with access control off and on ({args.entries:,} "
              f"entries): {args.calls:,} sequential calls of a {args.payload} B payload, best "
              f"of {args.rounds} alternating rounds; {environment()}")
        paths: dict[str, Callable[[], Awaitable[object]]] = {}
        for name, setup in setups.items():
            if await setup.proxy.echo(data) != data:
                print(f"ERROR ({name}): echo() returned something else")
                return 1
            paths[name] = echo_of(setup.proxy, data)
        for call in paths.values():  # warm-up
            await timed_calls(call, min(args.calls, 500))
        best: dict[str, Stats] = {}
        for i in range(1, args.rounds + 1):
            figures = []
            for name, call in paths.items():
                quiet_gc()
                stats = await timed_calls(call, args.calls)
                best[name] = stats.best(best.get(name))
                figures.append(f"{stats.p50_us:6.1f}/{stats.p99_us:6.1f}")
            print(f"  round {i}: p50/p99 us (off, on interface, on operation)  "
                  + "   ".join(figures))
        width = max(len(name) for name in best)
        for name, stats in best.items():
            print(f"access control {name:<{width}}  {stats.line()}")
        off = best["off"]
        for name, stats in best.items():
            if name == "off":
                continue
            ratio = stats.p50_us / off.p50_us
            print(f"p50 {name} / off: {ratio:4.2f}x   p99 {stats.p99_us / off.p99_us:4.2f}x   "
                  f"goal <= {GOAL:.2f}x: {'met' if ratio <= GOAL else 'MISSED'}")
        for name, setup in setups.items():
            access = setup.cc.access
            if access is not None:
                counters = dict(access.controller.counters)
                print(f"{name}: {len(access.controller.store):,} entries in force; "
                      f"counters {counters}")
                if any(key.startswith("refused") for key in counters):
                    print("ERROR: a call was refused")
                    return 1
        return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--calls", type=int, default=3_000, help="sequential calls per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each (alternating)")
    parser.add_argument("--entries", type=int, default=10_000, help="entries of the table")
    parser.add_argument("--payload", type=int, default=200, help="payload string length")
    args = parser.parse_args()
    if args.calls < 1 or args.rounds < 1 or args.payload < 0 or args.entries < 10:
        parser.error("need --calls >= 1, --rounds >= 1, --payload >= 0, --entries >= 10")
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

"""A small synthetic fleet with known figures, for the pipeline's end-to-end tests of the
cases real processes rarely make in a test: several GBIDs, participants registered in two of
them with diverging values, participantIds of two cluster controllers, stale ones of
different ages, expired rows, a hostile peer, an older snapshot of the same cluster
controller. (The same jobs on inputs made by the real producers: tests/pipeline/producers.py
and test_pipeline_producers.py.)

- The directory: rows written through the GCD's own store API (gcd.sqlite_store /
  gcd.postgres_store ``add``), never by SQL of the test.
- Audit records and routing snapshots: files written to the contract of docs/records.md v1
  (names, gzip, one JSON object per line with exactly the documented keys; the reason codes
  and peers as the cluster controllers write them). The only place that writes them is the
  ``fleet_inputs`` fixture (tests/pipeline/conftest.py); the figures below are the ones the
  tests assert.

Times are relative to :data:`NOW` (a fixed instant, so that hours and dates are exact).
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pyjoynr.gcd.store import GcdStore, StoredEntry

HOUR = 3_600_000
MINUTE = 60_000
#: the instant the fleet is judged at (2026-11-25 10:13:20 UTC)
NOW = 1_795_601_600_000
NEVER = 2**63 - 1
FAR = NOW + 40 * 24 * HOUR
G1, G2 = "g1", "g2"
#: the two hours the audit records fall into (UTC)
H0 = NOW // HOUR * HOUR - 2 * HOUR
H1 = H0 + HOUR
STALE_AFTER_H = 24.0


def entry(gbid: str, pid: str, domain: str, interface: str, cc: str, *, version: str = "1.0",
          priority: int = 0, last_seen: int = NOW - HOUR, expiry: int = FAR) -> StoredEntry:
    major, minor = (int(v) for v in version.split("."))
    return StoredEntry(gbid, pid, domain, interface, major, minor, priority, "GLOBAL", True,
                       '[["keyword", "x"]]', last_seen, expiry, "", f"joynr/cc/{cc}", cc)


#: the directory (10 rows, 7 participants, 5 cluster controllers of which 2 stale)
DIRECTORY = [
    entry(G1, "radio-1", "d.vehicle", "test/Radio", "cc-a"),
    entry(G2, "radio-1", "d.vehicle", "test/Radio", "cc-a"),
    entry(G1, "nav-1", "d.vehicle", "test/Navigation", "cc-a", version="2.1", priority=5),
    entry(G2, "nav-1", "d.vehicle", "test/Navigation", "cc-a", version="2.1", priority=7),
    entry(G1, "old-1", "d.vehicle", "test/Radio", "cc-a", expiry=NOW - 10 * MINUTE),
    entry(G1, "radio-2", "d.home", "test/Radio", "cc-b", last_seen=NOW - 30 * HOUR),
    entry(G1, "clock-1", "d.home", "test/Clock", "cc-b", last_seen=NOW - 40 * HOUR,
          expiry=NOW - HOUR),
    entry(G2, "radio-3", "d.home", "test/Radio", "cc-c", last_seen=NOW - 50 * HOUR),
    entry(G2, "fixed-1", "d.shared", "test/Clock", "cc-d", last_seen=NOW - 2 * HOUR),
    entry(G1, "fixed-1", "d.shared", "test/Clock", "cc-e", last_seen=NOW - 3 * HOUR),
]


async def fill_store(store: GcdStore, entries: Sequence[StoredEntry] = DIRECTORY) -> None:
    """The rows, written through the store's API (one transaction)."""
    await store.add(list(entries))


# ---------------------------------------------------------------------- record files


def audit(ts: int, proc: str, mid: str, mtype: str, sender: str, recipient: str,  # noqa: PLR0917
          hop: str | None, gbid: str | None, size: int, outcome: str,
          reason: str | None = None, peer: str | None = None,
          queued_ms: int | None = None) -> dict[str, Any]:
    """An audit record, schema version 1: exactly the documented keys."""
    if outcome == "delivered" and queued_ms is None:
        queued_ms = 0
    return {"v": 1, "ts": ts, "proc": proc, "id": mid, "type": mtype, "sender": sender,
            "recipient": recipient, "hop": hop, "gbid": gbid, "bytes": size,
            "outcome": outcome, "reason": reason, "peer": peer, "queued_ms": queued_ms}


HOSTILE_PEER = 'client 7</script><img src=x onerror="alert(1)"> from 127.0.0.1'

#: 18 records of two cluster controllers (see the expected figures below)
AUDIT_CC_A = [
    *(audit(H0 + 1000 * n, "cc-a", f"q{n}", "rq", "c-1", "radio-1", "mqtt", G1, 100, "delivered")
      for n in range(4)),
    *(audit(H0 + 1000 * n + 500, "cc-a", f"a{n}", "rp", "radio-1", "c-1", "websocket", None, 50,
            "delivered") for n in range(4)),
    audit(H0 + 10_000, "cc-a", "n1", "rq", "c-1", "nav-1", None, None, 120, "queued"),
    audit(H0 + 10_250, "cc-a", "n1", "rq", "c-1", "nav-1", "mqtt", G2, 120, "delivered",
          queued_ms=250),
    audit(H0 + 11_000, "cc-a", "n2", "rq", "c-2", "nav-1", "mqtt", G2, 120, "delivered"),
]
AUDIT_CC_B = [
    audit(H1 + 1000, "cc-b", "o1", "o", "c-1", "radio-2", "mqtt", G1, 80, "delivered"),
    audit(H1 + 2000, "cc-b", "o2", "o", "c-1", "radio-2", None, None, 80, "dropped", "expired"),
    audit(H1 + 3000, "cc-b", "g1", "rq", "c-1", "ghost", None, None, 60, "dropped", "no-route"),
    audit(H1 + 4000, "cc-b", "f1", "rq", "fake", "radio-1", None, G1, 70, "refused",
          "refused-relay", "backend g1"),
    audit(H1 + 5000, "cc-b", "f2", "rq", "fake", "radio-1", None, G1, 70, "refused",
          "refused-relay", "backend g1"),
    audit(H1 + 6000, "cc-b", "r1", "o", "c-3", "radio-2", None, None, 40, "refused",
          "spoofed-sender", HOSTILE_PEER),
    audit(H1 + 7000, "cc-b", "m1", "m", "radio-1", "radio-1/newStation", "mqtt", G1, 30,
          "delivered"),
]


def snapshot(taken: int, proc: str, pid: str, kind: str, *, gbid: str | None = None,
             topic: str | None = None, visible: bool = True, expiry: int = NEVER,
             sticky: bool = False) -> dict[str, Any]:
    """A routing snapshot record, schema version 1: exactly the documented keys."""
    address = f"{gbid}/{topic}" if kind == "mqtt" else f"{kind}:{pid}"
    return {"v": 1, "taken_ms": taken, "proc": proc, "participant_id": pid, "kind": kind,
            "address": address, "gbid": gbid, "topic": topic, "global": visible,
            "expiry_ms": expiry, "sticky": sticky}


SNAP_A_OLD = NOW - 65 * MINUTE
SNAP_A = NOW - 5 * MINUTE
SNAP_D = NOW - 10 * MINUTE
SNAPSHOTS_CC_A_OLD = [snapshot(SNAP_A_OLD, "cc-a", "gone-9", "mqtt", gbid=G1,
                               topic="joynr/cc/cc-z")]
SNAPSHOTS_CC_A = [
    snapshot(SNAP_A, "cc-a", "radio-1", "inprocess"),
    snapshot(SNAP_A, "cc-a", "c-1", "websocket"),
    snapshot(SNAP_A, "cc-a", "nav-1", "mqtt", gbid=G2, topic="joynr/cc/cc-a"),
    snapshot(SNAP_A, "cc-a", "radio-2", "mqtt", gbid=G1, topic="joynr/cc/cc-b"),
    snapshot(SNAP_A, "cc-a", "radio-3", "mqtt", gbid=G1, topic="joynr/cc/cc-c"),
    snapshot(SNAP_A, "cc-a", "fixed-1", "mqtt", gbid=G1, topic="joynr/cc/cc-d"),
    snapshot(SNAP_A, "cc-a", "clock-1", "mqtt", gbid=G1, topic="joynr/cc/cc-b"),
    snapshot(SNAP_A, "cc-a", "gone-1", "mqtt", gbid=G1, topic="joynr/cc/cc-z"),
    snapshot(SNAP_A, "cc-a", "capabilitiesdirectory_participantid", "mqtt", gbid=G1,
             topic="discoverydirectory_channelid", sticky=True),
    snapshot(SNAP_A, "cc-a", "caller-7", "mqtt", gbid=G1, topic="joynr/cc/cc-q",
             expiry=NOW + MINUTE),
]
SNAPSHOTS_CC_D = [
    snapshot(SNAP_D, "cc-d", "fixed-1", "inprocess"),
    snapshot(SNAP_D, "cc-d", "radio-1", "mqtt", gbid=G2, topic="joynr/cc/cc-a"),
]


def stamp(ms: int) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(ms // 1000))


def audit_name(proc: str, opened_ms: int, seq: int) -> str:
    return f"audit-{proc}-{stamp(opened_ms)}-{seq:06d}.jsonl.gz"


def snapshot_name(proc: str, taken_ms: int) -> str:
    return f"routing-{proc}-{stamp(taken_ms)}-{taken_ms % 1000:03d}.jsonl.gz"


def jsonl_gz(records: Iterable[dict[str, Any]]) -> bytes:
    return gzip.compress("".join(json.dumps(r, separators=(",", ":")) + "\n"
                                 for r in records).encode())


def write_fleet_files(audit_dir: Path, snapshot_dir: Path) -> None:
    """The audit and snapshot files of the fleet, named and written as docs/records.md says."""
    audit_dir.mkdir(parents=True, exist_ok=True)
    snapshot_dir.mkdir(parents=True, exist_ok=True)
    (audit_dir / audit_name("cc-a", H0, 1)).write_bytes(jsonl_gz(AUDIT_CC_A[:6]))
    (audit_dir / audit_name("cc-a", H0 + 5000, 2)).write_bytes(jsonl_gz(AUDIT_CC_A[6:]))
    (audit_dir / audit_name("cc-b", H1, 1)).write_bytes(jsonl_gz(AUDIT_CC_B))
    # a file still being written is not input yet
    (audit_dir / (audit_name("cc-b", H1 + HOUR, 2) + ".part")).write_bytes(b"\x1f\x8b partial")
    for proc, taken, records in (("cc-a", SNAP_A_OLD, SNAPSHOTS_CC_A_OLD),
                                 ("cc-a", SNAP_A, SNAPSHOTS_CC_A),
                                 ("cc-d", SNAP_D, SNAPSHOTS_CC_D)):
        (snapshot_dir / snapshot_name(proc, taken)).write_bytes(jsonl_gz(records))


# ---------------------------------------------------------------------- expected figures

DIRECTORY_SUMMARY = {"entries": 10, "live": 8, "expired": 2, "participants": 7, "gbids": 2,
                     "cluster_controllers": 5, "stale_cluster_controllers": 2}
#: (gbid, domain, interface, major, minor) -> (entries, live, expired)
REGISTRATIONS = {
    (G1, "d.home", "test/Clock", 1, 0): (1, 0, 1),
    (G1, "d.home", "test/Radio", 1, 0): (1, 1, 0),
    (G1, "d.shared", "test/Clock", 1, 0): (1, 1, 0),
    (G1, "d.vehicle", "test/Navigation", 2, 1): (1, 1, 0),
    (G1, "d.vehicle", "test/Radio", 1, 0): (2, 1, 1),
    (G2, "d.home", "test/Radio", 1, 0): (1, 1, 0),
    (G2, "d.shared", "test/Clock", 1, 0): (1, 1, 0),
    (G2, "d.vehicle", "test/Navigation", 2, 1): (1, 1, 0),
    (G2, "d.vehicle", "test/Radio", 1, 0): (1, 1, 0),
}
#: stale cluster controller -> (entries, last seen, stale since)
STALE = {"cc-b": (2, NOW - 30 * HOUR, NOW - 6 * HOUR),
         "cc-c": (1, NOW - 50 * HOUR, NOW - 26 * HOUR)}
DIVERGING = {"nav-1": ([G1, G2], ["priority"]),
             "fixed-1": ([G1, G2], ["topic", "cluster_controller_id"])}
SHARED = {"fixed-1": (["cc-d", "cc-e"], [G1, G2])}
EXPIRED = {(G1, "old-1"), (G1, "clock-1")}

TRAFFIC_SUMMARY = {"records": 18, "messages": 17, "delivered": 12, "queued": 1, "dropped": 2,
                   "refused": 3, "bytes": 950, "unattributed": 1, "ambiguous": 0}
UNKNOWN = "(not in directory)"
#: (domain, interface, gbid, hour) -> (messages, delivered, queued, dropped, refused, bytes,
#: p50, p99)
HOURLY = {
    ("d.vehicle", "test/Radio", G1, H0): (4, 4, 0, 0, 0, 400, 0, 0),
    ("d.vehicle", "test/Radio", None, H0): (4, 4, 0, 0, 0, 200, 0, 0),
    ("d.vehicle", "test/Navigation", None, H0): (0, 0, 1, 0, 0, 0, None, None),
    ("d.vehicle", "test/Navigation", G2, H0): (2, 2, 0, 0, 0, 240, 0, 250),
    ("d.home", "test/Radio", G1, H1): (1, 1, 0, 0, 0, 80, 0, 0),
    ("d.home", "test/Radio", None, H1): (2, 0, 0, 1, 1, 0, None, None),
    (UNKNOWN, UNKNOWN, None, H1): (1, 0, 0, 1, 0, 0, None, None),
    ("d.vehicle", "test/Radio", G1, H1): (3, 1, 0, 0, 2, 30, 0, 0),
}
#: (domain, interface, gbid, hour, outcome, reason) -> messages
DROPS = {
    ("d.home", "test/Radio", None, H1, "dropped", "expired"): 1,
    ("d.home", "test/Radio", None, H1, "refused", "spoofed-sender"): 1,
    (UNKNOWN, UNKNOWN, None, H1, "dropped", "no-route"): 1,
    ("d.vehicle", "test/Radio", G1, H1, "refused", "refused-relay"): 2,
}
TOP_SENDERS = [("c-1", 8, 740), ("radio-1", 5, 230), ("fake", 2, 140), ("c-2", 1, 120),
               ("c-3", 1, 40)]
REFUSALS = [("refused-relay", "backend g1", 2, H1 + 4000, H1 + 5000),
            ("spoofed-sender", HOSTILE_PEER, 1, H1 + 6000, H1 + 6000)]

DRIFT_TOTALS = {"cluster_controllers": 2, "routes": 12, "compared": 7, "local": 3, "sticky": 1,
                "expiring": 1, "not_in_directory": 1, "expired_in_directory": 1,
                "other_gbid": 1, "other_topic": 1, "empty_snapshots": 0}
#: (proc, participant) -> drift
DRIFT = {("cc-a", "gone-1"): "not-in-directory", ("cc-a", "clock-1"): "expired-in-directory",
         ("cc-a", "radio-3"): "other-gbid", ("cc-a", "fixed-1"): "other-topic"}

#: removeStale per stale cluster controller: (cc, before_ms, entries); one remove
PLAN_REMOVE_STALE = [("cc-b", NOW - 30 * HOUR + 1, 2), ("cc-c", NOW - 50 * HOUR + 1, 1)]
PLAN_REMOVE = [(G1, "old-1")]
#: every row the plan removes
PLANNED = {(G1, "radio-2"), (G1, "clock-1"), (G2, "radio-3"), (G1, "old-1")}

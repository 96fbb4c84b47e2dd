"""Ingest is exactly as strict as docs/records.md: one JSON object per line and nothing after
it (JSON whitespace around it, so a CRLF line ending, is allowed), exactly the documented
keys, each value of its documented JSON type (a number, object, list or boolean in a text
field is never turned into its text), the enumerated fields of their values. Each kind of
line is a line of its own in a real record file, ingested by the command; the counts per
verdict are exact."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from pyjoynr.pipeline import commands
from tests.pipeline import fleet


def record(mid: str, **changes: Any) -> dict[str, Any]:
    base = fleet.audit(fleet.H0 + 1000, "cc-x", mid, "rq", "c-1", "radio-1", "mqtt", fleet.G1,
                       100, "delivered")
    return {**base, **changes}


def compact(value: dict[str, Any]) -> str:
    """As the producers write a line (runtime/records.py): no whitespace, documented order."""
    return json.dumps(value, separators=(",", ":"))


def without(value: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != key}


#: (verdict, line): each a kind of its own; every line names its message id, so that the
#: rejects table tells which line got which verdict
AUDIT_LINES: list[tuple[str, str]] = [
    # accepted
    ("ok", compact(record("ok-compact"))),
    ("ok", json.dumps(record("ok-spaced"))),  # JSON whitespace between the tokens
    ("ok", json.dumps(dict(reversed(list(record("ok-reordered").items()))))),
    ("ok", compact(record("ok-crlf")) + "\r"),  # a CRLF line ending (the \n ends the line)
    ("ok", compact(record("ok-trailing-space")) + " \t "),
    ("ok", " " + compact(record("ok-leading-space"))),
    ("ok", compact(record("ok-escaped-key")).replace('"sender"', '"\\u0073ender"')),
    ("ok", compact(record("ok-brackets-in-text", outcome="refused", reason="spoofed-sender",
                          peer="client [x] from [::1]}", queued_ms=None))),
    ("ok", compact(record("ok-null-hop", hop=None, gbid=None, outcome="queued",
                          queued_ms=None))),
    # not exactly one JSON object
    ("corrupt-json", compact(record("cj-brace-after")) + "}"),
    ("corrupt-json", compact(record("cj-object-after")) + " {}"),
    ("corrupt-json", compact(record("cj-comma-object-after")) + ",{}"),
    ("corrupt-json", compact(record("cj-bracket-after")) + "]"),
    ("corrupt-json", compact(record("cj-bracket-brace-after")) + "]}"),
    ("corrupt-json", compact(record("cj-text-after")) + " x"),
    ("corrupt-json", compact(record("cj-number-after")) + " 5"),
    ("corrupt-json", "[" + compact(record("cj-in-a-list")) + "]"),
    ("corrupt-json", compact(record("cj-key-twice"))[:-1] + ',"sender":"c-2"}'),
    ("corrupt-json", compact(record("cj-raw-tab", peer="a\tb")).replace("\\t", "\t")),
    ("corrupt-json", compact(record("cj-single-quotes")).replace('"', "'")),
    ("corrupt-json", '"cj-a-string"'),
    ("corrupt-json", "cj not json"),
    # not version 1
    ("unknown-version", compact(record("uv-2", v=2))),
    ("unknown-version", compact(record("uv-float", v=1.0))),
    ("unknown-version", compact(record("uv-text", v="1"))),
    ("unknown-version", compact(record("uv-bool", v=True))),
    ("unknown-version", compact(without(record("uv-none"), "v"))),
    # version 1, a field of the wrong JSON type
    ("bad-field", compact(record("bf-sender-number", sender=5))),
    ("bad-field", compact(record("bf-sender-object", sender={"id": "c-1"}))),
    ("bad-field", compact(record("bf-sender-list", sender=["c-1"]))),
    ("bad-field", compact(record("bf-sender-bool", sender=True))),
    ("bad-field", compact(record("bf-proc-number", proc=7))),
    ("bad-field", compact(record("bf-hop-list", hop=["mqtt"]))),
    ("bad-field", compact(record("bf-peer-number", peer=12, outcome="refused",
                                 reason="spoofed-sender", queued_ms=None))),
    ("bad-field", compact(record("bf-gbid-bool", gbid=False))),
    ("bad-field", compact(record("bf-ts-float", ts=fleet.H0 + 1000.0))),
    ("bad-field", compact(record("bf-ts-text", ts=str(fleet.H0)))),
    ("bad-field", compact(record("bf-ts-over-64-bits", ts=2**63))),
    ("bad-field", compact(record("bf-bytes-exponent")).replace('"bytes":100', '"bytes":1e2')),
    ("bad-field", compact(record("bf-queued-float", queued_ms=0.5))),
    # version 1, a key missing, one more, null where it may not be, a value out of range
    ("bad-field", compact(without(record("bf-no-gbid"), "gbid"))),
    ("bad-field", compact({**record("bf-extra-key"), "extra": 1})),
    ("bad-field", compact(record("bf-proc-null", proc=None))),
    ("bad-field", compact(record("bf-hop-unknown", hop="carrier-pigeon"))),
    ("bad-field", compact(record("bf-outcome", outcome="lost"))),
    ("bad-field", compact(record("bf-type", type="zz"))),
    ("bad-field", compact(record("bf-ts-beyond-dates", ts=2**63 - 1))),
]

#: the same for the routing snapshot (booleans and the address kind)
GOOD_SNAPSHOT = fleet.snapshot(fleet.SNAP_A, "cc-x", "radio-1", "mqtt", gbid=fleet.G1,
                               topic="joynr/cc/cc-x")
SNAPSHOT_LINES: list[tuple[str, str]] = [
    ("ok", compact(GOOD_SNAPSHOT)),
    ("ok", compact({**GOOD_SNAPSHOT, "participant_id": "crlf"}) + "\r"),
    ("corrupt-json", compact({**GOOD_SNAPSHOT, "participant_id": "after"}) + "}"),
    ("bad-field", compact({**GOOD_SNAPSHOT, "participant_id": "global-text",
                           "global": "true"})),
    ("bad-field", compact({**GOOD_SNAPSHOT, "participant_id": "sticky-number", "sticky": 0})),
    ("bad-field", compact({**GOOD_SNAPSHOT, "participant_id": "expiry-float",
                           "expiry_ms": 1.5})),
    ("bad-field", compact({**GOOD_SNAPSHOT, "participant_id": "address-number",
                           "address": 5})),
    ("bad-field", compact({**GOOD_SNAPSHOT, "participant_id": "kind-unknown", "kind": "tcp"})),
    ("bad-field", compact({**GOOD_SNAPSHOT, "participant_id": ["list"]})),
]


def _counts(lines: list[tuple[str, str]]) -> dict[str, int]:
    kinds = ("ok", "corrupt-json", "unknown-version", "bad-field")
    return {kind: sum(1 for verdict, _ in lines if verdict == kind) for kind in kinds}


def test_every_kind_of_line_gets_its_documented_verdict(make_run: Any, tmp_path: Path) -> None:
    audit_dir, snapshot_dir = tmp_path / "audit", tmp_path / "snapshots"
    audit_dir.mkdir()
    snapshot_dir.mkdir()
    audit_file = fleet.audit_name("cc-x", fleet.H0, 1)
    snapshot_file = fleet.snapshot_name("cc-x", fleet.SNAP_A)
    for path, lines in ((audit_dir / audit_file, AUDIT_LINES),
                        (snapshot_dir / snapshot_file, SNAPSHOT_LINES)):
        path.write_bytes(gzip.compress("".join(f"{line}\n" for _, line in lines).encode()))
    run = make_run()
    commands.ingest(run, str(audit_dir), str(snapshot_dir))

    files = {r["file"]: r for r in run.spark.read.parquet(str(run.out / "ingest_files"))
             .collect()}
    for name, lines in ((audit_file, AUDIT_LINES), (snapshot_file, SNAPSHOT_LINES)):
        row = files[name]
        counts = _counts(lines)
        assert (row["lines"], row["records"], row["corrupt_json"], row["unknown_version"],
                row["bad_field"], row["too_long"]) == (
            len(lines), counts["ok"], counts["corrupt-json"], counts["unknown-version"],
            counts["bad-field"], 0), name
        assert row["status"] == "rejected-lines"
    assert _counts(AUDIT_LINES) == {"ok": 9, "corrupt-json": 13, "unknown-version": 5,
                                    "bad-field": 20}

    # each rejected line with its own verdict; each accepted one a record of its table
    rejects = {r["text"]: r["verdict"] for r in
               run.spark.read.parquet(str(run.out / "audit_rejects")).collect()}
    assert rejects == {line: verdict for verdict, line in AUDIT_LINES if verdict != "ok"}
    audit = {r["id"]: r.asDict() for r in run.spark.read.parquet(str(run.out / "audit"))
             .collect()}
    assert set(audit) == {json.loads(line)["id"] for verdict, line in AUDIT_LINES
                          if verdict == "ok"}
    # the fields of a record read from another key order, a CRLF line, an escaped key: exact
    for mid in ("ok-reordered", "ok-crlf", "ok-escaped-key"):
        expected = record(mid)
        assert {k: audit[mid][k] for k in expected} == expected, mid
    assert audit["ok-brackets-in-text"]["peer"] == "client [x] from [::1]}"

    snapshot_rejects = {r["text"]: r["verdict"] for r in
                        run.spark.read.parquet(str(run.out / "snapshot_rejects")).collect()}
    assert snapshot_rejects == {line: verdict for verdict, line in SNAPSHOT_LINES
                                if verdict != "ok"}
    snapshots = run.spark.read.parquet(str(run.out / "snapshots")).collect()
    assert sorted(r["participant_id"] for r in snapshots) == ["crlf", "radio-1"]
    assert all(r["global"] is True and r["sticky"] is False and r["expiry_ms"] == fleet.NEVER
               for r in snapshots)

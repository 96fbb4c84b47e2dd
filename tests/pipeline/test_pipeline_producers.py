"""Every job on real Spark (local mode) against inputs made by the real producers
(tests/pipeline/producers.py): the audit logs of three real cluster controllers and of the
embedded GCD, their routing snapshots, and the GCD's SQLite store read over JDBC. Exact
figures, derived from what the producers were made to do: messages per interface and
outcome (every message type the audit log writes), drops and refusals by reason and peer,
the stale cluster controller, the drift rows, the purge plan.

A real cluster controller also audits its own traffic (discovery, its GCD calls, the GCD's
answers), whose amount the test does not choose: those records are attributed to
"(not in directory)" (the GCD's participant is provisioned, never in its own store), and their
figures are checked against the records read from the files by the documented rule
(docs/pipeline.md, "traffic"), exactly as well.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from pyjoynr.pipeline import commands
from pyjoynr.pipeline.config import JobSettings
from pyjoynr.pipeline.readers import directory_source
from pyjoynr.pipeline.report import build_report
from pyjoynr.pipeline.session import Progress
from pyjoynr.runtime.routing import NO_EXPIRY_MS
from tests.pipeline.conftest import pipeline_config
from tests.pipeline.producers import (
    DOMAINS,
    GBID,
    GONE,
    HOUR,
    INTERFACE,
    LATE,
    MOVING,
    MOVING_REQUESTS,
    ONE,
    ONE_WAYS,
    RADIO_THREE,
    RADIO_TWO,
    REQUESTS,
    STOP_MARGIN_MS,
    THREE,
    THREE_REQUESTS,
    TWO,
    Produced,
    produce,
)
from tests.support.audit import read_audit, read_jsonl_gz

pytestmark = [pytest.mark.network, pytest.mark.timeout(300)]

UNKNOWN = "(not in directory)"
#: rows of top_senders: more than the fleet has senders, so that the table holds them all
TOP_N = 50
#: the types a provider sends (docs/pipeline.md): the rest it receives
PROVIDER_SENDS = {"rp", "srp", "p", "m"}
#: the messages between the consumer's proxy (cc-one) and pipe.radio (cc-two), per type:
#: requests and their replies, one-way calls, an attribute subscription (its request, reply,
#: the publication of the value and of one change, the stop) and a broadcast subscription
#: (multicast subscription request, reply, one multicast, the stop)
RADIO_CROSSING = {"rq": REQUESTS, "rp": REQUESTS, "o": ONE_WAYS, "arq": 1, "srp": 2, "p": 2,
                  "sst": 2, "mrq": 1, "m": 1}
#: (domain, gbid, outcome, reason) -> records of the test's own calls, summed over hours:
#: each message that crosses the broker is delivered twice, to MQTT (its GBID) by the
#: sending cluster controller, to a websocket (no GBID) by the receiving one
OWN_OUTCOMES = {
    ("pipe.radio", GBID, "delivered", None): sum(RADIO_CROSSING.values()),
    ("pipe.radio", None, "delivered", None): sum(RADIO_CROSSING.values()),
    ("pipe.radio", None, "refused", "spoofed-sender"): 1,
    ("pipe.radio", GBID, "refused", "no-reply-to"): 1,
    ("pipe.moving", GBID, "delivered", None): 2 * MOVING_REQUESTS,
    ("pipe.moving", None, "delivered", None): 2 * MOVING_REQUESTS,
    ("pipe.three", GBID, "delivered", None): 2 * THREE_REQUESTS,
    ("pipe.three", None, "delivered", None): 2 * THREE_REQUESTS,
    # the one-way for a provider not registered yet: queued, then delivered (one message)
    ("pipe.late", None, "queued", None): 1,
    ("pipe.late", None, "delivered", None): 1,
}


@dataclasses.dataclass
class Results:
    produced: Produced
    run: commands.Run
    report: Path
    #: every audit record the producers wrote, read from their files
    records: list[dict[str, Any]]


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> Produced:
    return asyncio.run(produce(tmp_path_factory.mktemp("producers")))


@pytest.fixture(scope="module")
def results(spark: SparkSession, produced: Produced,
            tmp_path_factory: pytest.TempPathFactory) -> Results:
    """ingest, then the report (directory, traffic, drift, housekeeping plan, the page),
    judged an hour after cc-three stopped with stale_after_h = 1: its entries were last seen
    before that, cc-two touched its own after it and cc-one registered its one after it."""
    out = tmp_path_factory.mktemp("producers-out")
    config = dataclasses.replace(pipeline_config(out),
                                 jobs=JobSettings(stale_after_h=1.0, top_n=TOP_N))
    judged = produced.stopped_ms + HOUR + STOP_MARGIN_MS // 2
    run = commands.Run(spark, Progress(spark, 0), config, out, judged)
    problems = commands.ingest(run, str(produced.audit_dir), str(produced.snapshot_dir))
    assert problems == []
    source = directory_source(str(produced.sqlite), "")
    entries = commands.load_directory(run, source)
    try:
        report = build_report(run, entries, source)
    finally:
        entries.unpersist()
    return Results(produced, run, report, read_audit(produced.audit_dir))


def table(run: commands.Run, name: str) -> list[dict[str, Any]]:
    frame: DataFrame = run.spark.read.parquet(str(run.out / name))
    return [r.asDict(recursive=True) for r in frame.collect()]


def summed(rows: Iterable[dict[str, Any]], keys: tuple[str, ...], value: str
           ) -> dict[tuple[Any, ...], int]:
    """``value`` summed per ``keys`` (over the hours: the run may cross a full hour)."""
    totals: Counter[tuple[Any, ...]] = Counter()
    for row in rows:
        totals[tuple(row[k] for k in keys)] += row[value]
    return dict(totals)


def domain_of(results: Results, record: dict[str, Any]) -> str:
    """The domain a record is attributed to by the documented rule, from the files."""
    provider = record["sender"] if record["type"] in PROVIDER_SENDS else record["recipient"]
    row = results.produced.rows.get(provider)
    return row.domain if row is not None else UNKNOWN


def test_ingest_reads_every_record_the_producers_wrote(results: Results) -> None:
    run, produced = results.run, results.produced
    files = {r["file"]: r for r in table(run, "ingest_files")}
    audit_files = {name for name, r in files.items() if r["source"] == "audit"}
    # one file per process: the three cluster controllers and the embedded GCD
    assert {name.split("-2")[0] for name in audit_files} == {
        f"audit-{ONE}", f"audit-{TWO}", f"audit-{THREE}", f"audit-gcd-{ONE}"}
    assert {r["status"] for r in files.values()} == {"ok"}
    for name in audit_files:
        assert files[name]["records"] == len(read_jsonl_gz(produced.audit_dir / name))
    snapshot_records = {name: r["records"] for name, r in files.items()
                        if r["source"] == "snapshots"}
    assert sorted(snapshot_records.values()) == sorted(
        len(produced.routes[proc]) for proc in (ONE, TWO))
    assert run.spark.read.parquet(str(run.out / "audit")).count() == len(results.records)
    for rejects in ("audit_rejects", "snapshot_rejects"):
        assert run.spark.read.parquet(str(run.out / rejects)).count() == 0
    # every message type of the calls to pipe.radio reached the table, with its wire code
    audit = run.spark.read.parquet(str(run.out / "audit"))
    radio = audit.where(f"outcome = 'delivered' AND (sender = '{RADIO_TWO}' OR recipient = "
                        f"'{RADIO_TWO}' OR recipient LIKE '{RADIO_TWO}/%')")
    assert {r["type"]: r["count"] for r in radio.groupBy("type").count().collect()} == {
        code: 2 * n for code, n in RADIO_CROSSING.items()}


def test_directory_figures(results: Results) -> None:
    run, produced = results.run, results.produced
    assert set(produced.rows) == {RADIO_TWO, MOVING, RADIO_THREE, LATE}  # pipe.gone removed
    summary = table(run, "directory/summary")[0]
    assert {k: summary[k] for k in ("entries", "live", "expired", "participants", "gbids",
                                    "cluster_controllers", "stale_cluster_controllers")} == {
        "entries": 4, "live": 3, "expired": 1, "participants": 4, "gbids": 1,
        "cluster_controllers": 3, "stale_cluster_controllers": 1}
    # Radio's version is 1.2; pipe.late's registration expired (10 min) by the judging time
    assert {(r["gbid"], r["domain"], r["interface_name"], r["major_version"],
             r["minor_version"]): (r["entries"], r["live"], r["expired"])
            for r in table(run, "directory/registrations")} == {
        (GBID, "pipe.late", INTERFACE, 1, 2): (1, 0, 1),
        (GBID, "pipe.moving", INTERFACE, 1, 2): (1, 1, 0),
        (GBID, "pipe.radio", INTERFACE, 1, 2): (1, 1, 0),
        (GBID, "pipe.three", INTERFACE, 1, 2): (1, 1, 0)}
    # cc-three stopped: its two entries (its own provider, and pipe.moving, which moved to
    # it) were last seen before; it is the one stale cluster controller
    three_seen = max(produced.rows[p].last_seen_ms for p in (RADIO_THREE, MOVING))
    assert three_seen < produced.stopped_ms
    assert produced.rows[RADIO_TWO].last_seen_ms > produced.stopped_ms + STOP_MARGIN_MS
    controllers = {r["cluster_controller_id"]: r
                   for r in table(run, "directory/cluster_controllers")}
    assert {cc: (r["entries"], r["live"], r["gbids"], r["stale"])
            for cc, r in controllers.items()} == {
        ONE: (1, 0, [GBID], False), TWO: (1, 1, [GBID], False),
        THREE: (2, 2, [GBID], True)}
    assert (controllers[THREE]["last_seen_ms"], controllers[THREE]["stale_since_ms"]) == (
        three_seen, three_seen + HOUR)
    assert controllers[TWO]["last_seen_ms"] == produced.rows[RADIO_TWO].last_seen_ms
    assert {(r["gbid"], r["participant_id"]) for r in table(run, "directory/expired")} == {
        (GBID, LATE)}
    assert table(run, "directory/diverging") == []
    assert table(run, "directory/shared_participants") == []


def test_traffic_of_the_tests_own_calls(results: Results) -> None:
    """Messages per domain (interface test/Radio), GBID, outcome and reason: exactly what the
    producers were made to send, every message type attributed to its provider."""
    outcomes = summed(table(results.run, "traffic/outcomes"),
                      ("domain", "interface_name", "gbid", "outcome", "reason"), "records")
    own = {(d, g, o, r): n for (d, i, g, o, r), n in outcomes.items() if d != UNKNOWN}
    assert own == OWN_OUTCOMES
    assert {i for (d, i, *_) in outcomes if d != UNKNOWN} == {INTERFACE}
    # hourly: messages count a queued-then-delivered message once
    hourly = table(results.run, "traffic/hourly")
    per_domain = {name: summed(hourly, ("domain",), name)
                  for name in ("messages", "delivered", "queued", "dropped", "refused")}
    radio_delivered = 2 * sum(RADIO_CROSSING.values())
    expected = {"pipe.radio": (radio_delivered + 2, radio_delivered, 0, 0, 2),
                "pipe.moving": (4 * MOVING_REQUESTS, 4 * MOVING_REQUESTS, 0, 0, 0),
                "pipe.three": (4 * THREE_REQUESTS, 4 * THREE_REQUESTS, 0, 0, 0),
                "pipe.late": (1, 1, 1, 0, 0)}
    for domain, figures in expected.items():
        assert tuple(per_domain[name][(domain,)] for name in per_domain) == figures, domain
    # the time the late one-way spent queued: its p50 and p99 (one message)
    late = [r for r in results.records if r["recipient"] == LATE and r["outcome"] == "delivered"]
    assert len(late) == 1 and late[0]["queued_ms"] > 0
    late_hours = [r for r in hourly if r["domain"] == "pipe.late" and r["delivered"]]
    assert [(r["queued_p50_ms"], r["queued_p99_ms"]) for r in late_hours] == [
        (late[0]["queued_ms"], late[0]["queued_ms"])]
    # bytes delivered per domain: the sizes the cluster controllers recorded
    assert summed(hourly, ("domain",), "bytes") == summed(
        ({"domain": domain_of(results, r), "bytes": r["bytes"]} for r in results.records
         if r["outcome"] == "delivered"), ("domain",), "bytes")


def test_drops_and_refusals_by_reason_and_peer(results: Results) -> None:
    produced = results.produced
    drops = summed(table(results.run, "traffic/drops"),
                   ("domain", "gbid", "outcome", "reason"), "messages")
    assert drops == {
        ("pipe.radio", None, "refused", "spoofed-sender"): 1,
        ("pipe.radio", GBID, "refused", "no-reply-to"): 1,
        # the request for nobody, expired in cc-one's queue
        (UNKNOWN, None, "dropped", "expired-in-queue"): 1}
    # the cluster controllers counted the same
    assert produced.counters[ONE]["spoofed-sender"] == 1
    assert produced.counters[ONE]["dropped-expired-in-queue"] == 1
    assert produced.counters[TWO]["mqtt-no-reply-to"] == 1
    refused = {r["reason"]: r for r in results.records if r["outcome"] == "refused"}
    assert [(r["reason"], r["peer"], r["messages"], r["first_ms"], r["last_ms"])
            for r in table(results.run, "traffic/refusals")] == [
        ("no-reply-to", f"backend {GBID}", 1, refused["no-reply-to"]["ts"],
         refused["no-reply-to"]["ts"]),
        ("spoofed-sender", f"client {produced.raw_client_id} from 127.0.0.1", 1,
         refused["spoofed-sender"]["ts"], refused["spoofed-sender"]["ts"])]
    assert refused["no-reply-to"]["sender"] == produced.mqtt_caller
    assert refused["spoofed-sender"]["sender"] == produced.radio_proxy


def test_traffic_totals_match_the_files(results: Results) -> None:
    """The cluster controllers' and the GCD's own traffic, whose amount the test does not
    choose: the totals and the "(not in directory)" figures equal those of the records read
    from the files by the documented rule."""
    records = results.records
    final = [r for r in records if r["outcome"] != "queued"]
    kinds = Counter(r["outcome"] for r in records)
    summary = table(results.run, "traffic/summary")[0]
    assert summary == {
        "records": len(records), "messages": len(final),
        "delivered": kinds["delivered"], "queued": kinds["queued"],
        "dropped": kinds["dropped"], "refused": kinds["refused"],
        "bytes": sum(r["bytes"] for r in records if r["outcome"] == "delivered"),
        "unattributed": sum(1 for r in final if domain_of(results, r) == UNKNOWN),
        "ambiguous": 0}
    # the GCD's calls and answers are there, under "(not in directory)"
    gcd = [r for r in records if "capabilitiesdirectory_participantid" in (r["sender"],
                                                                          r["recipient"])]
    assert {r["type"] for r in gcd} == {"rq", "rp"}
    assert {domain_of(results, r) for r in gcd} == {UNKNOWN}
    outcomes = summed(table(results.run, "traffic/outcomes"),
                      ("domain", "gbid", "outcome", "reason"), "records")
    assert {k: n for k, n in outcomes.items() if k[0] == UNKNOWN} == dict(Counter(
        (UNKNOWN, r["gbid"], r["outcome"], r["reason"]) for r in records
        if domain_of(results, r) == UNKNOWN))
    # top senders: every sender fits in the table (fewer than top_n), in order
    senders = Counter(r["sender"] for r in final)
    sizes = Counter({s: sum(r["bytes"] for r in final if r["sender"] == s) for s in senders})
    assert len(senders) < TOP_N
    assert [(r["sender"], r["messages"], r["bytes"])
            for r in table(results.run, "traffic/top_senders")] == [
        (s, n, sizes[s]) for s, n in sorted(senders.items(), key=lambda i: (-i[1], i[0]))]
    # the consumer's proxy: its calls at both ends, and the frame refused as spoofed
    proxy_sent = 2 * sum(RADIO_CROSSING[t] for t in ("rq", "o", "arq", "mrq", "sst")) + 1
    assert senders[results.produced.radio_proxy] == proxy_sent


def test_drift_between_the_snapshots_and_the_directory(results: Results) -> None:
    produced = results.produced
    routes = {r["participant_id"]: r for r in table(results.run, "snapshots")
              if r["proc"] == ONE}
    assert set(routes) == set(produced.routes[ONE])
    # the routes cc-one took from discovery: pipe.gone was removed from the directory since,
    # pipe.moving moved to cc-three; the other two agree with the directory
    compared = {pid for pid, (kind, _, _, sticky, expiry) in produced.routes[ONE].items()
                if kind == "mqtt" and not sticky and expiry == NO_EXPIRY_MS}
    assert compared == {RADIO_TWO, GONE, MOVING, RADIO_THREE}
    rows = table(results.run, "drift/rows")
    assert {(r["proc"], r["participant_id"]): r["drift"] for r in rows} == {
        (ONE, GONE): "not-in-directory", (ONE, MOVING): "other-topic"}
    moving = next(r for r in rows if r["participant_id"] == MOVING)
    assert (moving["route_gbid"], moving["route_topic"], moving["directory_topic"],
            moving["directory_gbids"]) == (GBID, produced.topics[TWO], produced.topics[THREE],
                                           [GBID])

    def scopes(proc: str) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for kind, _, _, sticky, expiry in produced.routes[proc].values():
            counts["local" if kind != "mqtt" else "sticky" if sticky
                   else "expiring" if expiry != NO_EXPIRY_MS else "compared"] += 1
        return {s: counts[s] for s in ("compared", "local", "sticky", "expiring")}

    summary = {r["proc"]: r for r in table(results.run, "drift/summary")}
    assert set(summary) == {ONE, TWO}
    drift_columns = ("not_in_directory", "expired_in_directory", "other_gbid", "other_topic")
    for proc, drifted in ((ONE, (1, 0, 0, 1)), (TWO, (0, 0, 0, 0))):
        row = summary[proc]
        assert row["routes"] == len(produced.routes[proc])
        assert {s: row[s] for s in ("compared", "local", "sticky", "expiring")} == scopes(proc)
        assert tuple(row[c] for c in drift_columns) == drifted
    # the GCD's provisioned route is sticky at both; cc-two learned expiring replyTo routes
    # to the consumer's proxies (pipe.radio, pipe.moving) and compares nothing
    assert (summary[ONE]["compared"], summary[ONE]["sticky"], summary[ONE]["expiring"]) == (
        4, 1, 0)
    assert (summary[TWO]["compared"], summary[TWO]["sticky"], summary[TWO]["expiring"]) == (
        0, 1, 2)


def test_housekeeping_plan(results: Results) -> None:
    produced = results.produced
    plan_dir = results.run.out / "housekeeping"
    actions = [json.loads(line) for line in (plan_dir / "plan.jsonl").read_text().splitlines()]
    three_seen = max(produced.rows[p].last_seen_ms for p in (RADIO_THREE, MOVING))
    assert [(a["cluster_controller_id"], a["before_ms"], a["entries"]) for a in actions
            if a["action"] == "removeStale"] == [(THREE, three_seen + 1, 2)]
    assert [(a["gbid"], a["participant_id"], a["cluster_controller_id"]) for a in actions
            if a["action"] == "remove"] == [(GBID, LATE, ONE)]
    assert len(actions) == 2
    assert {(r["action"], r["gbid"], r["participant_id"])
            for r in table(results.run, "housekeeping/planned_entries")} == {
        ("removeStale", GBID, RADIO_THREE), ("removeStale", GBID, MOVING),
        ("remove", GBID, LATE)}


def test_the_report_shows_the_fleet(results: Results) -> None:
    page = results.report.read_text(encoding="utf-8")
    for text in (f"{DOMAINS[RADIO_TWO]} \u00b7 {INTERFACE}", UNKNOWN, "expired-in-queue",
                 f"client {results.produced.raw_client_id} from 127.0.0.1", THREE, GONE):
        assert text in page, text

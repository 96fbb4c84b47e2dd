"""The pure jobs on small frames built here (the shared local SparkSession), and the pure
helpers of the report, the settings and --apply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyjoynr.pipeline.apply import targets_of
from pyjoynr.pipeline.config import DEFAULT_CONFIG, ConfigError, PipelineConfig
from pyjoynr.pipeline.jobs import directory, drift, housekeeping, ingest, traffic
from pyjoynr.pipeline.report import time_bin_ms
from pyjoynr.pipeline.report.page import Section, Table, embedded_json, render
from pyjoynr.pipeline.schemas import (
    AUDIT,
    AUDIT_V1,
    DIRECTORY,
    INGEST_FILES,
    MESSAGE_TYPES,
    NEVER_MS,
    SNAPSHOT,
)
from pyjoynr.runtime.messages import MessageType

HOUR = 3_600_000
NOW = 100 * 24 * HOUR


def rows(frame: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in frame.collect()]


def dir_row(gbid: str, pid: str, cc: str, *, interface: str = "i", domain: str = "d",
            priority: int = 0, last_seen: int = NOW, expiry: int = NOW + HOUR,
            topic: str | None = None) -> tuple[Any, ...]:
    return (gbid, pid, domain, interface, 1, 0, priority, "GLOBAL", True, "[]", last_seen,
            expiry, "", topic or f"joynr/cc/{cc}", cc)


def directory_frame(spark: SparkSession, *entries: tuple[Any, ...]) -> DataFrame:
    return spark.createDataFrame(list(entries), DIRECTORY)


# ---------------------------------------------------------------------- ingest


def test_classify_gives_each_line_one_verdict(spark: SparkSession) -> None:
    good = {"v": 1, "ts": 5, "proc": "p", "id": "m", "type": "rq", "sender": "a",
            "recipient": "b", "hop": None, "gbid": None, "bytes": 3, "outcome": "queued",
            "reason": None, "peer": None, "queued_ms": None}
    lines = [json.dumps(good), "{", '{"v": 3, "ts": "x"}', json.dumps({**good, "bytes": -1.5}),
             json.dumps({**good, "outcome": "delivered"}), "[1]",
             json.dumps({**good, "type": "zz"}),  # not a message type of docs/records.md
             json.dumps({**good, "extra": 1})]  # a key of no version-1 record
    frame = spark.createDataFrame([("f", line) for line in lines], "file string, value string")
    result = rows(ingest.classify(frame, AUDIT))
    assert [r["verdict"] for r in result] == ["ok", "corrupt-json", "unknown-version",
                                              "bad-field", "ok", "corrupt-json", "bad-field",
                                              "bad-field"]
    assert [r["table"] for r in result] == ["records", "rejects", "rejects", "rejects",
                                            "records", "rejects", "rejects", "rejects"]
    assert result[0]["date"] == "1970-01-01" and result[0]["text"] is None
    assert result[1]["ts"] is None and result[1]["text"] == "{"


def test_classify_snapshots_checks_their_types(spark: SparkSession) -> None:
    good = {"v": 1, "taken_ms": 7, "proc": "p", "participant_id": "x", "kind": "mqtt",
            "address": "g/t", "gbid": "g", "topic": "t", "global": True, "expiry_ms": NEVER_MS,
            "sticky": False}
    lines = [json.dumps(good), json.dumps({**good, "global": "yes"}),
             json.dumps({**good, "sticky": None})]
    frame = spark.createDataFrame([("f", line) for line in lines], "file string, value string")
    result = rows(ingest.classify(frame, SNAPSHOT))
    assert [r["verdict"] for r in result] == ["ok", "bad-field", "bad-field"]
    assert result[0]["expiry_ms"] == NEVER_MS


def test_file_status_flags_a_file_that_changed_between_check_and_read(
        spark: SparkSession) -> None:
    checks = spark.createDataFrame([("audit", "a", 10, "ok", 3, 0, None),
                                    ("audit", "b", 10, "ok", 2, 0, None)], INGEST_FILES)
    counts = spark.createDataFrame([("audit", "a", "ok", 3), ("audit", "b", "ok", 5)],
                                   "source string, file string, verdict string, count long")
    status = {r["file"]: r["status"] for r in rows(ingest.file_status(checks, counts))}
    assert status == {"a": "ok", "b": "changed"}


# ---------------------------------------------------------------------- directory


def test_directory_tables_on_a_small_directory(spark: SparkSession) -> None:
    frame = directory_frame(
        spark,
        dir_row("g1", "p1", "cc1", last_seen=NOW - 2 * HOUR),
        dir_row("g2", "p1", "cc1", last_seen=NOW - 3 * HOUR, priority=4),
        dir_row("g1", "p2", "cc2", last_seen=NOW - 30 * HOUR, expiry=NOW - 1),
        dir_row("g2", "p3", "cc3", last_seen=NOW - 80 * HOUR),
        dir_row("g1", "p3", "cc4", last_seen=NOW),
    )
    params = directory.DirectoryParams(NOW, 24 * HOUR)
    ccs = {r["cluster_controller_id"]: r for r in rows(directory.cluster_controllers(frame,
                                                                                     params))}
    assert {k: (v["entries"], v["live"], v["gbids"], v["stale"]) for k, v in ccs.items()} == {
        "cc1": (2, 2, ["g1", "g2"], False), "cc2": (1, 0, ["g1"], True),
        "cc3": (1, 1, ["g2"], True), "cc4": (1, 1, ["g1"], False)}
    assert ccs["cc2"]["stale_since_ms"] == NOW - 6 * HOUR
    over_time = rows(directory.stale_over_time(directory.cluster_controllers(frame, params),
                                               24 * HOUR))
    assert [(r["bin_start_ms"], r["went_stale"], r["stale"]) for r in over_time] == [
        (NOW - 3 * 24 * HOUR, 1, 1), (NOW - 24 * HOUR, 1, 2)]
    multi_row = directory.multi_row_participants(frame)
    assert rows(directory.diverging_registrations(multi_row)) == [
        {"participant_id": "p1", "gbids": ["g1", "g2"], "fields": ["priority"]},
        {"participant_id": "p3", "gbids": ["g1", "g2"],
         "fields": ["topic", "cluster_controller_id"]}]
    assert rows(directory.shared_participants(multi_row)) == [
        {"participant_id": "p3", "cluster_controller_ids": ["cc3", "cc4"],
         "gbids": ["g1", "g2"]}]
    registrations = rows(directory.registrations(frame, params))
    assert [(r["gbid"], r["entries"], r["live"], r["expired"]) for r in registrations] == [
        ("g1", 3, 2, 1), ("g2", 2, 2, 0)]
    assert rows(directory.expired_entries(frame, params))[0]["participant_id"] == "p2"


# ---------------------------------------------------------------------- traffic


def audit_frame(spark: SparkSession, *records: tuple[Any, ...]) -> DataFrame:
    """(ts, type, sender, recipient, gbid, bytes, outcome, reason, queued_ms) per record."""
    full = [(1, ts, "cc", f"m{n}", mtype, sender, recipient, None, gbid, size, outcome,
             reason, None, queued) for n, (ts, mtype, sender, recipient, gbid, size, outcome,
                                           reason, queued) in enumerate(records)]
    return spark.createDataFrame(full, AUDIT_V1)


def test_the_message_types_are_the_wire_codes_the_audit_log_writes() -> None:
    """Every wire code of runtime/messages.py is one the pipeline knows (docs/records.md), and
    each one is attributed one way: to the recipient or to the sender."""
    codes = {t.value for t in MessageType}
    assert set(MESSAGE_TYPES) == codes and len(MESSAGE_TYPES) == len(codes)
    assert set(traffic.PROVIDER_SENDS) | set(traffic.PROVIDER_RECEIVES) == codes
    assert not set(traffic.PROVIDER_SENDS) & set(traffic.PROVIDER_RECEIVES)
    assert dict(AUDIT.allowed)["type"] == MESSAGE_TYPES


def test_traffic_attributes_each_message_to_its_provider(spark: SparkSession) -> None:
    entries = directory_frame(spark, dir_row("g1", "prov", "cc", domain="d", interface="I"),
                              dir_row("g2", "prov", "cc", domain="d", interface="I"))
    to_it = [(HOUR + n, code, "cons", "prov", "g1", 10, "delivered", None, 0)
             for n, code in enumerate(("rq", "o", "arq", "brq", "mrq", "sst"))]
    from_it = [(2 * HOUR + n, code, "prov", recipient, None, 5, "delivered", None, 0)
               for n, (code, recipient) in enumerate((
                   ("rp", "cons"), ("srp", "cons"), ("p", "cons"),
                   ("m", "prov/newStation/eu")))]  # a multicast's recipient: its multicast id
    audit = audit_frame(
        spark, *to_it, *from_it,
        (3 * HOUR, "rq", "cons", "nobody", None, 7, "dropped", "expired-in-queue", None),
        # a type in neither list (ingest rejects it): not attributed by guessing
        (3 * HOUR + 1, "zz", "cons", "prov", None, 7, "delivered", None, 0),
    )
    attributed = rows(traffic.attributed(audit, traffic.interfaces(entries)))
    assert [(r["domain"], r["interface_name"]) for r in attributed] == [("d", "I")] * 10 + [
        (traffic.UNKNOWN, traffic.UNKNOWN)] * 2


def test_traffic_percentiles_and_outcomes(spark: SparkSession) -> None:
    entries = directory_frame(spark, dir_row("g1", "prov", "cc"))
    queued = [0, 0, 0, 10, 20, 30, 40, 50, 60, 1000]
    audit = audit_frame(
        spark,
        *((HOUR + n, "o", "c", "prov", "g1", 1, "delivered", None, q)
          for n, q in enumerate(queued)),
        (HOUR + 50, "o", "c", "prov", "g1", 1, "queued", None, None),
        (HOUR + 51, "o", "c", "prov", "g1", 1, "dropped", "expired-in-queue", None),
        (2 * HOUR, "o", "c", "prov", "g1", 1, "refused", "spoofed-sender", None),
    )
    per_outcome = traffic.outcomes(traffic.attributed(audit, traffic.interfaces(entries)))
    hourly = rows(traffic.hourly(per_outcome))
    assert [(r["messages"], r["delivered"], r["queued"], r["dropped"], r["refused"], r["bytes"],
             r["queued_p50_ms"], r["queued_p99_ms"]) for r in hourly] == [
        (11, 10, 1, 1, 0, 10, 20, 1000), (1, 0, 0, 0, 1, 0, None, None)]
    assert [(r["outcome"], r["reason"], r["messages"])
            for r in rows(traffic.drops(per_outcome))] == [
        ("dropped", "expired-in-queue", 1), ("refused", "spoofed-sender", 1)]
    assert rows(traffic.summary(per_outcome))[0]["messages"] == 12
    assert rows(traffic.top_senders(audit, 1)) == [{"sender": "c", "messages": 12,
                                                    "bytes": 12}]


# ---------------------------------------------------------------------- drift


def test_drift_kinds_and_scopes(spark: SparkSession) -> None:
    entries = directory_frame(
        spark,
        dir_row("g1", "ok", "cc1"), dir_row("g1", "moved", "cc1"),
        dir_row("g1", "topic", "cc2"), dir_row("g1", "old", "cc1", expiry=NOW - 1))
    snap = [(1, NOW - 10, "cc9", pid, kind, "a", gbid, topic, True, expiry, sticky)
            for pid, kind, gbid, topic, expiry, sticky in (
                ("ok", "mqtt", "g1", "joynr/cc/cc1", NEVER_MS, False),
                ("moved", "mqtt", "g2", "joynr/cc/cc1", NEVER_MS, False),
                ("topic", "mqtt", "g1", "joynr/cc/cc1", NEVER_MS, False),
                ("old", "mqtt", "g1", "joynr/cc/cc1", NEVER_MS, False),
                ("gone", "mqtt", "g1", "joynr/cc/cc1", NEVER_MS, False),
                ("gcd", "mqtt", "g1", "gcd", NEVER_MS, True),
                ("caller", "mqtt", "g1", "joynr/cc/x", NOW + 5, False),
                ("local", "websocket", None, None, NEVER_MS, False))]
    older = [(1, NOW - 20, "cc9", "ancient", "mqtt", "a", "g1", "t", True, NEVER_MS, False)]
    snapshots = spark.createDataFrame(snap + older, SNAPSHOT.schema)
    routes = drift.compared_routes(drift.latest_snapshots(snapshots))
    found = {r["participant_id"]: r["drift"] for r in rows(drift.drift(routes, entries, NOW))}
    assert found == {"moved": "other-gbid", "topic": "other-topic",
                     "old": "expired-in-directory", "gone": "not-in-directory"}
    summary = rows(drift.summary(routes, drift.drift(routes, entries, NOW)))
    assert {k: summary[0][k] for k in ("routes", "compared", "local", "sticky", "expiring",
                                        "other_gbid")} == {
        "routes": 8, "compared": 5, "local": 1, "sticky": 1, "expiring": 1, "other_gbid": 1}


# ---------------------------------------------------------------------- housekeeping


def test_the_plan_removes_stale_controllers_and_other_expired_rows(spark: SparkSession) -> None:
    entries = directory_frame(
        spark,
        dir_row("g1", "s1", "stale", last_seen=NOW - 50 * HOUR, expiry=NOW - 1),
        dir_row("g2", "s1", "stale", last_seen=NOW - 40 * HOUR),
        dir_row("g1", "e1", "live", expiry=NOW - 1),
        dir_row("g1", "k1", "live"))
    params = directory.DirectoryParams(NOW, 24 * HOUR)
    controllers = directory.cluster_controllers(entries, params)
    stale = rows(housekeeping.remove_stale_actions(controllers))
    assert [(a["cluster_controller_id"], a["before_ms"], a["entries"]) for a in stale] == [
        ("stale", NOW - 40 * HOUR + 1, 2)]
    removes = housekeeping.remove_actions(entries, controllers, params)
    assert [(a["gbid"], a["participant_id"]) for a in rows(removes)] == [("g1", "e1")]
    planned = housekeeping.planned_entries(
        entries, housekeeping.remove_stale_actions(controllers), removes)
    assert {(r["action"], r["gbid"], r["participant_id"]) for r in rows(planned)} == {
        ("removeStale", "g1", "s1"), ("removeStale", "g2", "s1"), ("remove", "g1", "e1")}


# ---------------------------------------------------------------------- pure helpers


def test_time_bins_widen_with_the_range() -> None:
    assert time_bin_ms(0, 10 * HOUR, 168) == HOUR
    assert time_bin_ms(0, 168 * HOUR, 168) == 2 * HOUR
    assert time_bin_ms(0, 60 * 24 * HOUR, 168) == 12 * HOUR
    assert time_bin_ms(0, 100 * 24 * HOUR, 168) == 24 * HOUR
    assert time_bin_ms(0, 10_000 * 24 * HOUR, 168) == 30 * 24 * HOUR


def test_the_page_escapes_every_string_from_the_data() -> None:
    hostile = '</script><script>alert(1)</script>&<b>'
    page = render("t", [hostile], [Section(
        "s", "S", tables=[Table("T", ["peer"], [[hostile]])])])
    assert hostile not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page
    assert "</script>" not in embedded_json({"x": hostile})
    assert json.loads(embedded_json({"x": hostile})) == {"x": hostile}


def test_settings_load_and_refuse_typos(tmp_path: Path) -> None:
    assert PipelineConfig.load(DEFAULT_CONFIG, env={}) == PipelineConfig()
    bad = tmp_path / "bad.toml"
    bad.write_text("[jobs]\nstale_after = 3\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: jobs: unknown setting\(s\) stale_after"):
        PipelineConfig.load(bad, env={})
    bad.write_text('[jobs]\ntop_n = "many"\n')
    with pytest.raises(ConfigError, match=r"jobs\.top_n: expected an integer, got 'many'"):
        PipelineConfig.load(bad, env={})
    with pytest.raises(ConfigError, match="JOYNR_PIPELINE__JOBS__TOP: no such setting"):
        PipelineConfig.load(None, env={"JOYNR_PIPELINE__JOBS__TOP": "3"})


def test_lists_from_the_environment_are_one_toml_value() -> None:
    """As everywhere in the project (runtime/config.py, docs/operating.md "Configuration")."""
    loaded = PipelineConfig.load(None, env={
        "JOYNR_PIPELINE__JOBS__TOP_N": "3",
        "JOYNR_PIPELINE__APPLY__CC": '["g2=ws://b/", "ws://a/"]',
        "JOYNR_PIPELINE__SPARK__JARS": "[]"})
    assert loaded.jobs.top_n == 3 and loaded.apply.cc == ("g2=ws://b/", "ws://a/")
    assert loaded.spark.jars == ()
    # the comma-separated form is refused, naming the variable and showing the form
    for variable, text in (("JOYNR_PIPELINE__APPLY__CC", "g2=ws://b/, ws://a/"),
                           ("JOYNR_PIPELINE__APPLY__CC", "ws://a/"),
                           ("JOYNR_PIPELINE__SPARK__JARS", "/a.jar,/b.jar")):
        with pytest.raises(ConfigError, match=rf"^{variable}: a list is written as a TOML "
                                              r"array, e\.g\. \[\"a\", \"b\"\]; got "):
            PipelineConfig.load(None, env={variable: text})


def test_apply_targets() -> None:
    assert targets_of(("ws://a:1/", "g2=ws://b:2/"), "g1") == {"g1": "ws://a:1/",
                                                              "g2": "ws://b:2/"}
    with pytest.raises(ConfigError, match="needs a cluster controller"):
        targets_of((), "g1")
    with pytest.raises(ConfigError, match="two cluster controllers for GBID 'g1'"):
        targets_of(("ws://a/", "g1=ws://b/"), "g1")
    with pytest.raises(ConfigError, match="not a websocket URL"):
        targets_of(("g1=http://a/",), "g1")


def test_stale_over_time_needs_no_window(spark: SparkSession) -> None:
    """The running total of stale cluster controllers is no window over the whole data set
    (which moves every row to one task, and makes Spark warn on every plan)."""
    controllers = directory.cluster_controllers(
        directory_frame(spark, *(dir_row("g1", f"p{n}", f"cc{n}", last_seen=NOW - n * 30 * HOUR)
                                 for n in range(1, 5))),
        directory.DirectoryParams(NOW, 24 * HOUR))
    over_time = directory.stale_over_time(controllers, 24 * HOUR)
    plan = over_time._jdf.queryExecution().executedPlan().toString()
    assert "Window" not in plan, plan
    assert [(r["bin_start_ms"], r["went_stale"], r["stale"]) for r in rows(over_time)] == [
        (NOW - 4 * 24 * HOUR, 1, 1), (NOW - 3 * 24 * HOUR, 1, 2), (NOW - 2 * 24 * HOUR, 1, 3),
        (NOW - 24 * HOUR, 1, 4)]


def test_jobs_use_no_python_udf(spark: SparkSession) -> None:
    """The jobs' plans hold no Python evaluation (BatchEvalPython / ArrowEvalPython)."""
    entries = directory_frame(spark, dir_row("g1", "p", "cc"))
    audit = audit_frame(spark, (HOUR, "rq", "c", "p", "g1", 1, "delivered", None, 0))
    per_outcome = traffic.outcomes(traffic.attributed(audit, traffic.interfaces(entries)))
    lines = spark.createDataFrame([("f", "{}")], "file string, value string")
    params = directory.DirectoryParams(NOW, HOUR)
    for frame in (traffic.hourly(per_outcome), ingest.classify(lines, AUDIT),
                  directory.diverging_registrations(directory.multi_row_participants(entries)),
                  directory.cluster_controllers(entries, params)):
        plan = frame._jdf.queryExecution().executedPlan().toString()
        assert "EvalPython" not in plan, plan
    assert F  # the functions module is what the jobs use

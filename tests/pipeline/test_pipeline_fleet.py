"""Every job on real Spark (local mode) against the synthetic fleet of tests/pipeline/fleet.py
(its edge cases; the inputs of the real producers: test_pipeline_producers.py): its directory
in a real GCD store (SQLite, and PostgreSQL), its audit and snapshot files; exact figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame

from pyjoynr.gcd.postgres_store import PostgresStore
from pyjoynr.pipeline import commands
from pyjoynr.pipeline.readers import InputError, directory_source
from tests.pipeline import fleet
from tests.support.gcd_stores import fresh_postgres_dsn


def table(run: commands.Run, name: str) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in run.spark.read.parquet(str(run.out / name))
            .collect()]


def test_ingest_reads_every_record_of_the_fleet(fleet_run: commands.Run) -> None:
    files = {r["file"]: r for r in table(fleet_run, "ingest_files")}
    assert len(files) == 6  # 3 audit + 3 snapshot files; the .part file is not input yet
    assert {r["status"] for r in files.values()} == {"ok"}
    assert sum(r["records"] for r in files.values() if r["source"] == "audit") == 18
    assert sum(r["records"] for r in files.values() if r["source"] == "snapshots") == 13
    audit = fleet_run.spark.read.parquet(str(fleet_run.out / "audit"))
    assert audit.count() == 18
    # partitioned by UTC date; every field of the record kept with its type
    assert {str(r["date"]) for r in audit.select("date").distinct().collect()} == {
        "2026-11-25"}
    first = audit.where("id = 'n1' and outcome = 'delivered'").first()
    assert first is not None
    assert (first["ts"], first["queued_ms"], first["gbid"], first["bytes"]) == (
        fleet.H0 + 10_250, 250, fleet.G2, 120)
    assert fleet_run.spark.read.parquet(str(fleet_run.out / "audit_rejects")).count() == 0


def test_directory_figures(fleet_run: commands.Run) -> None:
    summary = fleet_run.summaries["directory"]  # type: ignore[attr-defined]
    assert {k: summary[k] for k in fleet.DIRECTORY_SUMMARY} == fleet.DIRECTORY_SUMMARY
    registrations = {(r["gbid"], r["domain"], r["interface_name"], r["major_version"],
                      r["minor_version"]): (r["entries"], r["live"], r["expired"])
                     for r in table(fleet_run, "directory/registrations")}
    assert registrations == fleet.REGISTRATIONS
    stale = {r["cluster_controller_id"]: (r["entries"], r["last_seen_ms"], r["stale_since_ms"])
             for r in table(fleet_run, "directory/cluster_controllers") if r["stale"]}
    assert stale == fleet.STALE
    assert {(r["gbid"], r["participant_id"])
            for r in table(fleet_run, "directory/expired")} == fleet.EXPIRED
    assert {r["participant_id"]: (r["gbids"], r["fields"])
            for r in table(fleet_run, "directory/diverging")} == fleet.DIVERGING
    assert {r["participant_id"]: (r["cluster_controller_ids"], r["gbids"])
            for r in table(fleet_run, "directory/shared_participants")} == fleet.SHARED
    # stale over time: cumulative, in UTC hours (the range is short)
    bins = sorted((r["bin_start_ms"], r["went_stale"], r["stale"], r["bin_ms"])
                  for r in table(fleet_run, "directory/stale_over_time"))
    hour = fleet.HOUR
    assert bins == [((fleet.NOW - 26 * hour) // hour * hour, 1, 1, hour),
                    ((fleet.NOW - 6 * hour) // hour * hour, 1, 2, hour)]


def test_traffic_figures(fleet_run: commands.Run) -> None:
    summary = fleet_run.summaries["traffic"]  # type: ignore[attr-defined]
    assert summary == fleet.TRAFFIC_SUMMARY
    hourly = {(r["domain"], r["interface_name"], r["gbid"], r["hour_ms"]):
              (r["messages"], r["delivered"], r["queued"], r["dropped"], r["refused"],
               r["bytes"], r["queued_p50_ms"], r["queued_p99_ms"])
              for r in _with_hour_ms(fleet_run, "traffic/hourly")}
    assert hourly == fleet.HOURLY
    drops = {(r["domain"], r["interface_name"], r["gbid"], r["hour_ms"], r["outcome"],
              r["reason"]): r["messages"]
             for r in _with_hour_ms(fleet_run, "traffic/drops")}
    assert drops == fleet.DROPS
    assert [(r["sender"], r["messages"], r["bytes"])
            for r in table(fleet_run, "traffic/top_senders")] == fleet.TOP_SENDERS
    assert [(r["reason"], r["peer"], r["messages"], r["first_ms"], r["last_ms"])
            for r in table(fleet_run, "traffic/refusals")] == fleet.REFUSALS


def _with_hour_ms(run: commands.Run, name: str) -> list[dict[str, Any]]:
    """The rows with their UTC hour as epoch ms (Python's datetimes would be local time)."""
    frame: DataFrame = run.spark.read.parquet(str(run.out / name))
    return [r.asDict() for r in frame.selectExpr("*", "unix_millis(hour) AS hour_ms").collect()]


def test_drift_figures(fleet_run: commands.Run) -> None:
    assert fleet_run.summaries["drift"] == fleet.DRIFT_TOTALS  # type: ignore[attr-defined]
    rows = table(fleet_run, "drift/rows")
    assert {(r["proc"], r["participant_id"]): r["drift"] for r in rows} == fleet.DRIFT
    fixed = next(r for r in rows if r["participant_id"] == "fixed-1")
    assert (fixed["route_topic"], fixed["directory_topic"], fixed["directory_gbids"]) == (
        "joynr/cc/cc-d", "joynr/cc/cc-e", [fleet.G1, fleet.G2])
    # only the latest snapshot of cc-a counts: its older route to gone-9 is not compared
    assert all(r["taken_ms"] in (fleet.SNAP_A, fleet.SNAP_D) for r in rows)


def test_housekeeping_plan(fleet_run: commands.Run) -> None:
    plan_dir = fleet_run.out / "housekeeping"
    actions = [json.loads(line) for line in
               (plan_dir / "plan.jsonl").read_text().splitlines()]
    stale = [(a["cluster_controller_id"], a["before_ms"], a["entries"]) for a in actions
             if a["action"] == "removeStale"]
    removes = [(a["gbid"], a["participant_id"]) for a in actions if a["action"] == "remove"]
    assert stale == fleet.PLAN_REMOVE_STALE
    assert removes == fleet.PLAN_REMOVE
    planned = {(r["gbid"], r["participant_id"])
               for r in table(fleet_run, "housekeeping/planned_entries")}
    assert planned == fleet.PLANNED
    meta = json.loads((plan_dir / "plan.json").read_text())
    assert (meta["remove_stale_calls"], meta["remove_calls"]) == (2, 1)
    text = (plan_dir / "plan.txt").read_text()
    assert "2 removeStale call(s)" in text and "1 remove call(s)" in text


async def test_the_directory_read_from_postgresql_gives_the_same_figures(
        make_run: Any, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    dsn = await fresh_postgres_dsn(request.config)
    store = PostgresStore(dsn)
    await store.open()
    try:
        await fleet.fill_store(store)
    finally:
        await store.close()
    run = make_run(tmp_path / "pg-out")
    entries = commands.load_directory(run, directory_source("", dsn))
    try:
        summary = commands.directory(run, entries)
    finally:
        entries.unpersist()
    assert {k: summary[k] for k in fleet.DIRECTORY_SUMMARY} == fleet.DIRECTORY_SUMMARY
    assert {r["participant_id"]: (r["gbids"], r["fields"])
            for r in table(run, "directory/diverging")} == fleet.DIVERGING
    assert entries.rdd.getNumPartitions() == 3  # parallel JDBC ranges of the bucket column


def test_missing_inputs_are_clear_errors(make_run: Any, tmp_path: Path) -> None:
    run = make_run()
    with pytest.raises(InputError, match=r"the audit directory .*nowhere does not exist"):
        commands.ingest(run, str(tmp_path / "nowhere"), "")
    with pytest.raises(InputError, match="nothing to ingest"):
        commands.ingest(run, "", "")
    with pytest.raises(InputError, match=r"gcd\.sqlite does not exist"):
        directory_source(str(tmp_path / "gcd.sqlite"), "")
    with pytest.raises(InputError, match="either --sqlite FILE or --postgres DSN"):
        directory_source("", "")
    with pytest.raises(InputError, match="not a DSN"):
        directory_source("", "mysql://x")
    with pytest.raises(InputError, match=r"no table audit in .* made by `bin/pipeline ingest"):
        commands.traffic(run, run.spark.createDataFrame([], "participant_id string"))

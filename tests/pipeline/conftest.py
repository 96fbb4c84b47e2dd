"""Fixtures of the pipeline tests: ONE SparkSession for all of them (local[2]), the synthetic
fleet's inputs (tests/pipeline/fleet.py), and a run of the commands on them.

Two kinds of input: the synthetic fleet here (files written to the contract of
docs/records.md, the directory through the GCD store's API), which holds edge cases real
processes rarely make (diverging registrations, several GBIDs, hostile peers, bad files);
and inputs made by the real producers (tests/pipeline/producers.py, used by
test_pipeline_producers.py): real cluster controllers with the audit log on, their routing
snapshots, the embedded GCD's store."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.pipeline import commands
from pyjoynr.pipeline.commands import Run
from pyjoynr.pipeline.config import InputSettings, JobSettings, PipelineConfig, SparkSettings
from pyjoynr.pipeline.readers import directory_source
from pyjoynr.pipeline.report import write_page
from pyjoynr.pipeline.session import Progress, build_session
from tests.pipeline import fleet

#: small, so that the too-long tests need no megabyte lines (the session's line reader and the
#: file check use the same bound)
MAX_LINE_BYTES = 4096

TEST_SPARK = SparkSettings(master="local[2]", shuffle_partitions=4, jdbc_partitions=3,
                           progress_interval_s=0)


def pipeline_config(out: Path) -> PipelineConfig:
    return dataclasses.replace(
        PipelineConfig(), spark=TEST_SPARK,
        inputs=InputSettings(out=str(out), max_line_bytes=MAX_LINE_BYTES),
        jobs=JobSettings(stale_after_h=fleet.STALE_AFTER_H, top_n=20))


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The one SparkSession of the pipeline tests (started once: about 7 s)."""
    session = build_session(TEST_SPARK, max_line_bytes=MAX_LINE_BYTES)
    yield session
    session.stop()


@pytest.fixture
def make_run(spark: SparkSession, tmp_path: Path) -> Callable[..., Run]:
    """A Run of the commands on the shared session: output under tmp_path/out, at fleet.NOW."""

    def make(out: Path | None = None, now_ms: int = fleet.NOW) -> Run:
        target = out or tmp_path / "out"
        return Run(spark, Progress(spark, 0), pipeline_config(target), target, now_ms)

    return make


@dataclasses.dataclass(frozen=True)
class FleetInputs:
    sqlite: Path
    audit_dir: Path
    snapshot_dir: Path


@pytest.fixture(scope="session")
def fleet_inputs(tmp_path_factory: pytest.TempPathFactory) -> FleetInputs:
    """THE place the synthetic fleet's inputs are made (see tests/pipeline/fleet.py): its
    directory in a GCD SQLite store (through the store's API), its audit and snapshot files
    written to the contract (the inputs of the real producers: tests/pipeline/producers.py)."""
    base = tmp_path_factory.mktemp("fleet")
    sqlite = base / "gcd.sqlite"

    async def fill() -> None:
        store = SqliteStore(sqlite)
        await store.open()
        try:
            await fleet.fill_store(store)
        finally:
            await store.close()

    asyncio.run(fill())
    fleet.write_fleet_files(base / "audit", base / "snapshots")
    return FleetInputs(sqlite, base / "audit", base / "snapshots")



@pytest.fixture(scope="session")
def fleet_run(spark: SparkSession, fleet_inputs: FleetInputs,
              tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Every job run once on the fleet, as build_report runs them: ingest, directory,
    traffic, drift and the housekeeping plan (test_pipeline_fleet.py reads their tables and
    ``summaries``, what the jobs returned; fleet_page writes the report's page of them)."""
    out = tmp_path_factory.mktemp("fleet-out")
    run = Run(spark, Progress(spark, 0), pipeline_config(out), out, fleet.NOW,
              now_source="--now-ms")
    commands.ingest(run, str(fleet_inputs.audit_dir), str(fleet_inputs.snapshot_dir))
    source = directory_source(str(fleet_inputs.sqlite), "")
    entries = commands.load_directory(run, source)
    try:
        run.summaries = {  # type: ignore[attr-defined]
            "directory": commands.directory(run, entries),
            "traffic": commands.traffic(run, entries),
            "drift": commands.drift(run, entries),
        }
        commands.housekeeping(run, entries, source)
    finally:
        entries.unpersist()
    return run


@pytest.fixture(scope="session")
def fleet_page(fleet_run: Run, fleet_inputs: FleetInputs) -> Path:
    """The report's page of fleet_run (report.write_page, what build_report writes after
    running the same jobs): the jobs are not run a second time for it."""
    summaries = fleet_run.summaries  # type: ignore[attr-defined]
    return write_page(fleet_run, directory_source(str(fleet_inputs.sqlite), ""),
                      directory_summary=summaries["directory"],
                      traffic_summary=summaries["traffic"], drift_totals=summaries["drift"],
                      plan_dir=fleet_run.out / "housekeeping")

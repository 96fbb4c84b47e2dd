"""The command line (``bin/pipeline``, ``python -m pyjoynr.pipeline``) as a user meets it: options
checked against their ranges and offered only where they do something, relative paths taken
from the caller's directory, every input checked before Spark starts, the "now" a run judges
at said and checked against the data, a housekeeping plan that would empty the directory
refused, and none of Spark's own noise in the output.

"Before Spark starts" is shown without clocks: the commands run with ``SPARK_HOME`` pointing
at a tripwire, a ``spark-submit`` that only records that it was called (and fails). A command
that stops before Spark leaves no record; one that gets as far as starting Spark does."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.pipeline import commands
from pyjoynr.pipeline.__main__ import _parser
from pyjoynr.pipeline.apply import check_share, read_plan
from pyjoynr.pipeline.config import DEFAULT_CONFIG, ConfigError, PipelineConfig
from pyjoynr.pipeline.readers import InputError, directory_source
from pyjoynr.pipeline.session import Progress
from tests.pipeline import fleet
from tests.pipeline.conftest import FleetInputs

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


@dataclasses.dataclass(frozen=True)
class Tripwire:
    """``SPARK_HOME`` with a ``bin/spark-submit`` that records each call in ``calls``."""

    home: Path
    calls: Path

    @property
    def tripped(self) -> bool:
        return self.calls.exists()


@pytest.fixture
def tripwire(tmp_path: Path) -> Tripwire:
    home = tmp_path / "spark-tripwire"
    (home / "bin").mkdir(parents=True)
    calls = tmp_path / "spark-submit-calls"
    script = home / "bin" / "spark-submit"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\nexit 1\n')
    script.chmod(0o755)
    return Tripwire(home, calls)


def cli(*args: str, cwd: Path = ROOT, tripwire: Tripwire | None = None, bin_script: bool = False,
        timeout_s: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """The command line as a process: ``bin/pipeline`` (``bin_script``) or ``python -m
    pyjoynr.pipeline``, from ``cwd``."""
    command = [str(ROOT / "bin" / "pipeline")] if bin_script else [sys.executable, "-m",
                                                                    "pyjoynr.pipeline"]
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith("JOYNR_PIPELINE") and key != "PIPELINE_CALLER_DIR"}
    if tripwire is not None:
        environment["SPARK_HOME"] = str(tripwire.home)
    if not bin_script:  # python -m pyjoynr.pipeline from elsewhere than the repository
        environment["PYTHONPATH"] = str(ROOT)
    return subprocess.run([*command, *args], cwd=cwd, text=True, capture_output=True,
                          timeout=timeout_s, check=False, env={**environment, **env})


def gcd_store(path: Path) -> Path:
    """An (empty) GCD SQLite store, made by the store itself."""

    async def make() -> None:
        store = SqliteStore(path)
        await store.open()
        await store.close()

    asyncio.run(make())
    return path


# ---------------------------------------------------------------------- 3: ranges


def test_every_numeric_option_is_range_checked(tripwire: Tripwire, tmp_path: Path) -> None:
    """No job has an option that takes any number; each bad value is refused by name."""
    _, jobs = _parser()
    for name, job in jobs.items():
        for action in job._actions:
            assert action.type not in (int, float), (name, action.option_strings)
    store = str(gcd_store(tmp_path / "gcd.sqlite"))
    for job, option, value, says in (
            ("directory", "--stale-after-h", "-5", "must be a number of hours > 0, got '-5'"),
            ("housekeeping", "--stale-after-h", "0", "must be a number of hours > 0"),
            ("report", "--stale-after-h", "nan", "must be a number of hours > 0"),
            ("directory", "--stale-after-h", "inf", "must be a number of hours > 0"),
            ("directory", "--stale-after-h", "a day", "not a number of hours"),
            ("directory", "--now-ms", "-1", "must be milliseconds since 1970-01-01 UTC"),
            ("drift", "--now-ms", "0", "must be milliseconds since 1970-01-01 UTC"),
            ("housekeeping", "--now-ms", "253402300800000", "(the year 9999)"),
            ("directory", "--now-ms", "1.5e12", "not a whole number of milliseconds"),
            ("directory", "--master", "local[0]", "must be local, local[N], local[*] or")):
        done = cli(job, "--sqlite", store, option, value, tripwire=tripwire)
        assert done.returncode == 2, (job, option, value, done.stderr)
        assert f"argument {option}: {says}" in done.stderr or says in done.stderr, done.stderr
    assert not tripwire.tripped


def _numeric_settings() -> list[tuple[str, str, type]]:
    made = []
    for section in dataclasses.fields(PipelineConfig):
        kind: Any = type(getattr(PipelineConfig(), section.name))
        for setting in dataclasses.fields(kind):
            value = getattr(kind(), setting.name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                made.append((section.name, setting.name, type(value)))
    return made


@pytest.mark.parametrize(("section", "key", "kind"), _numeric_settings())
def test_every_numeric_setting_is_range_checked(section: str, key: str, kind: type,
                                                tmp_path: Path) -> None:
    variable = f"JOYNR_PIPELINE__{section.upper()}__{key.upper()}"
    for bad in ("-1", "nan") if kind is float else ("-1", "0"):
        with pytest.raises(ConfigError, match=rf"^{variable}: {key} must be"):
            PipelineConfig.load(DEFAULT_CONFIG, env={variable: bad})
    toml = tmp_path / "bad.toml"
    toml.write_text(f"[{section}]\n{key} = -1\n")
    with pytest.raises(ConfigError, match=rf"bad\.toml: {section}: {key} must be"):
        PipelineConfig.load(toml, env={})


def write_plan(plan_dir: Path, directory_entries: int | None) -> None:
    """A plan as `housekeeping` writes it: two stale cluster controllers (4 entries) and one
    remove."""
    plan_dir.mkdir(parents=True, exist_ok=True)
    calls = [{"action": "removeStale", "cluster_controller_id": "cc-old", "before_ms": 5,
              "max_last_seen_ms": 4, "entries": 3, "gbids": ["g1", "g2"]},
             {"action": "removeStale", "cluster_controller_id": "cc-older", "before_ms": 3,
              "max_last_seen_ms": 2, "entries": 1, "gbids": ["g1"]},
             {"action": "remove", "gbid": "g2", "participant_id": "p-9",
              "cluster_controller_id": "cc-live", "expiry_ms": 1}]
    (plan_dir / "plan.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    meta: dict[str, Any] = {"made_ms": fleet.NOW, "directory": "SQLite /x/gcd.sqlite"}
    if directory_entries is not None:
        meta["directory_entries"] = directory_entries
    (plan_dir / "plan.json").write_text(json.dumps(meta))


def test_apply_refuses_a_plan_that_removes_too_much_and_shows_it_first(
        tmp_path: Path) -> None:
    plan = tmp_path / "plan"
    write_plan(plan, directory_entries=10)  # 5 of 10 entries: half the directory
    refused = cli("housekeeping", "--apply", "--plan", str(plan), "--cc", "ws://127.0.0.1:9/")
    assert refused.returncode == 2, refused.stderr
    shown = refused.stderr
    for line in ("apply: it removes 5 entries of the directory's 10 (50.0 %)",
                 "apply: removeStale of 2 stale cluster controller(s), 4 entries:",
                 "apply:   cc-old: 3 entries in g1, g2", "apply:   cc-older: 1 entry in g1",
                 "apply: remove of 1 entry, expired: g2 1"):
        assert line in shown, shown
    assert ("refused: the plan removes 5 of the directory's 10 entries (50.0 %), more than "
            "[housekeeping] max_purge_share = 0.1 allows") in shown
    assert "--allow-large-purge" in shown
    assert shown.index("cc-older: 1 entry") < shown.index("refused:")
    assert not (plan / "apply-result.jsonl").exists()  # not one call made

    write_plan(plan, directory_entries=None)  # a plan that does not say: refused as well
    unknown = cli("housekeeping", "--apply", "--plan", str(plan), "--cc", "ws://127.0.0.1:9/")
    assert unknown.returncode == 2 and "does not say how many entries" in unknown.stderr

    # the setting, or the option, lets it through: then the calls are made (and fail here:
    # no cluster controller listens)
    for args, env in (((), {"JOYNR_PIPELINE__HOUSEKEEPING__MAX_PURGE_SHARE": "0.5"}),
                      (("--allow-large-purge",), {})):
        write_plan(plan, directory_entries=10)
        let = cli("housekeeping", "--apply", "--plan", str(plan), "--cc", "ws://127.0.0.1:9/",
                  *args, JOYNR_PIPELINE__APPLY__CALL_TIMEOUT_S="5", **env)
        assert "refused" not in let.stderr, let.stderr
        assert let.returncode == 1, let.stderr
        assert len((plan / "apply-result.jsonl").read_text().splitlines()) == 3
        (plan / "apply-result.jsonl").unlink()


def test_the_plan_says_how_large_the_directory_was(make_run: Any,
                                                   fleet_inputs: FleetInputs) -> None:
    """The plan of the fleet judged long after its data: every cluster controller stale, the
    whole directory in the plan, which --apply refuses."""
    run = make_run(now_ms=fleet.NOW + 30 * 24 * fleet.HOUR)
    source = directory_source(str(fleet_inputs.sqlite), "")
    entries = commands.load_directory(run, source)
    try:
        plan_dir = commands.housekeeping(run, entries, source)
    finally:
        entries.unpersist()
    meta = json.loads((plan_dir / "plan.json").read_text())
    assert (meta["directory_entries"], meta["planned_entries"]) == (10, 10)
    summary = read_plan(plan_dir)
    assert (summary.entries, summary.directory_entries, summary.stale_calls) == (10, 10, 5)
    with pytest.raises(InputError, match=r"removes 10 of the directory's 10 entries \(100\.0 %"):
        check_share(summary, run.config.housekeeping.max_purge_share, allow_large=False)
    check_share(summary, run.config.housekeeping.max_purge_share, allow_large=True)
    text = (plan_dir / "plan.txt").read_text()
    assert "removes 10 of the directory's 10 entries (100.0 %)" in text
    assert "  cc-a: 5 entries in g1, g2, last seen 2026-11-25 09:13:20 UTC" in text


# ---------------------------------------------------------------------- 4: relative paths


def test_relative_paths_are_the_callers(tmp_path: Path, tripwire: Tripwire) -> None:
    """bin/pipeline runs from the repository; relative paths given to it are still the
    caller's, and every "does not exist" names the absolute path it looked at."""
    caller = tmp_path / "caller"
    caller.mkdir()
    gcd_store(caller / "store.sqlite")
    here = caller.resolve()
    for args, says in (
            (("ingest", "--audit", "my/audit"),
             f"the audit directory {here}/my/audit does not exist"),
            (("directory", "--sqlite", "nowhere.sqlite"),
             f"the GCD store {here}/nowhere.sqlite does not exist"),
            # the store is found in the caller's directory, the table is looked for there
            (("traffic", "--sqlite", "store.sqlite", "--out", "rel/out"),
             f"no table audit in {here}/rel/out (it is made by"),
            (("housekeeping", "--apply", "--plan", "old/plan", "--cc", "ws://127.0.0.1:9/"),
             f"no housekeeping plan at {here}/old/plan/plan.jsonl"),
            (("directory", "--config", "mine.toml", "--sqlite", "store.sqlite"),
             f"configuration file {here}/mine.toml does not exist")):
        done = cli(*args, cwd=caller, tripwire=tripwire, bin_script=True)
        assert done.returncode == 2, (args, done.stderr)
        assert says in done.stderr, (args, done.stderr)
    assert not tripwire.tripped


# ---------------------------------------------------------------------- 5: inputs first


def test_every_input_is_checked_before_spark_starts(tmp_path: Path, tripwire: Tripwire,
                                                    fleet_inputs: FleetInputs) -> None:
    store = str(fleet_inputs.sqlite)
    not_a_store = tmp_path / "other.sqlite"
    not_a_store.write_text("not SQLite")
    empty_db = tmp_path / "empty.sqlite"
    empty_db.touch()
    out_file = tmp_path / "out-file"
    out_file.write_text("")
    out = tmp_path / "out"
    half = tmp_path / "half"  # snapshots ingested, but without their status rows
    (half / "snapshots").mkdir(parents=True)
    for args, says in (
            (("drift", "--sqlite", store, "--out", str(half)),
             f"no table ingest_files in {half} (it is made by `bin/pipeline ingest "
             "--snapshots"),
            (("traffic", "--sqlite", store, "--out", str(out)),
             f"no table audit in {out} (it is made by `bin/pipeline ingest --audit DIR`)"),
            (("drift", "--sqlite", store, "--out", str(out)),
             f"no table snapshots in {out} (it is made by `bin/pipeline ingest --snapshots"),
            (("directory", "--sqlite", str(not_a_store)),
             f"the GCD store {not_a_store} cannot be read as SQLite"),
            (("directory", "--sqlite", str(empty_db)),
             f"the GCD store {empty_db} has no table discovery_entries"),
            (("housekeeping", "--sqlite", str(tmp_path)),
             f"the GCD store {tmp_path} is a directory"),
            (("report", "--sqlite", store, "--audit", str(fleet_inputs.audit_dir),
              "--snapshots", str(tmp_path / "none")),
             f"the snapshots directory {tmp_path / 'none'} does not exist"),
            (("ingest", "--audit", str(fleet_inputs.audit_dir), "--out", str(out_file)),
             f"the output directory {out_file} is not a directory"),
            (("directory", "--postgres", "mysql://h/db"), "not a DSN"),
            (("housekeeping", "--sqlite", store, "--apply"), "needs a cluster controller")):
        done = cli(*args, tripwire=tripwire)
        assert done.returncode == 2, (args, done.stderr)
        assert says in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert not tripwire.tripped
    # the tripwire works: inputs that are all there get as far as starting Spark
    cli("directory", "--sqlite", store, "--out", str(out), tripwire=tripwire)
    assert tripwire.tripped


# ---------------------------------------------------------------------- 6: options, now

#: the options each job offers (besides --help): only the ones it uses
OPTIONS = {
    "ingest": {"--audit", "--snapshots"},
    "directory": {"--sqlite", "--postgres", "--now-ms", "--stale-after-h"},
    "traffic": {"--sqlite", "--postgres"},
    "drift": {"--sqlite", "--postgres", "--now-ms"},
    "housekeeping": {"--sqlite", "--postgres", "--now-ms", "--stale-after-h", "--apply",
                     "--plan", "--cc", "--allow-large-purge"},
    "report": {"--sqlite", "--postgres", "--audit", "--snapshots", "--now-ms",
               "--stale-after-h"},
}
COMMON = {"--config", "--master", "--out", "--log-level"}


def test_each_job_offers_only_the_options_it_uses(tripwire: Tripwire, tmp_path: Path) -> None:
    _, jobs = _parser()
    assert set(jobs) == set(OPTIONS)
    for name, job in jobs.items():
        offered = {option for action in job._actions for option in action.option_strings
                   if isinstance(action, argparse.Action) and option.startswith("--")}
        assert offered - {"--help"} == OPTIONS[name] | COMMON, name
    store = str(gcd_store(tmp_path / "gcd.sqlite"))
    for args, says in (
            (("traffic", "--sqlite", store, "--stale-after-h", "5"),
             "not an option of traffic: --stale-after-h 5"),
            (("traffic", "--sqlite", store, "--now-ms", "5"), "not an option of traffic"),
            (("drift", "--sqlite", store, "--stale-after-h", "5"), "not an option of drift"),
            (("ingest", "--audit", str(tmp_path), "--now-ms", "5"), "not an option of ingest"),
            (("housekeeping", "--sqlite", store, "--cc", "ws://a/"), "--cc is for --apply"),
            (("housekeeping", "--sqlite", store, "--allow-large-purge"),
             "--allow-large-purge is for --apply"),
            (("housekeeping", "--apply", "--plan", str(tmp_path), "--cc", "ws://a/",
              "--stale-after-h", "2"), "--stale-after-h would do nothing")):
        done = cli(*args, tripwire=tripwire)
        assert done.returncode == 2 and says in done.stderr, (args, done.stderr)
    assert not tripwire.tripped


def test_the_run_says_which_now_it_judges_at(tripwire: Tripwire, fleet_inputs: FleetInputs,
                                             tmp_path: Path) -> None:
    store = str(fleet_inputs.sqlite)
    out = tmp_path / "out"
    (out / "audit").mkdir(parents=True)  # tables as ingest leaves them (empty will do)
    (out / "snapshots").mkdir()
    (out / "ingest_files").mkdir()
    clock = cli("directory", "--sqlite", store, "--out", str(out), tripwire=tripwire)
    assert re.search(r"judging expiry and staleness at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC "
                     r"\(\d+ epoch ms, from the machine clock\)", clock.stderr), clock.stderr
    given = cli("drift", "--sqlite", store, "--now-ms", str(fleet.NOW), "--out", str(out),
                tripwire=tripwire)
    assert (f"judging expiry at 2026-11-25 10:13:20 UTC ({fleet.NOW} epoch ms, from --now-ms)"
            in given.stderr), given.stderr
    traffic = cli("traffic", "--sqlite", store, "--out", str(out), tripwire=tripwire)
    assert "judging" not in traffic.stderr  # traffic judges nothing against a now
    assert len(tripwire.calls.read_text().splitlines()) == 3  # each got as far as Spark


def test_old_data_judged_against_the_clock_is_a_warning(
        make_run: Any, fleet_inputs: FleetInputs, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    source = directory_source(str(fleet_inputs.sqlite), "")
    newest = fleet.NOW - fleet.HOUR  # the directory's newest last-seen
    caplog.set_level(logging.INFO, logger="pyjoynr.pipeline.commands")

    def warnings() -> list[str]:
        found = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        caplog.clear()
        return found

    # at the data's time: no warning
    at_data = make_run(tmp_path / "a", now_ms=fleet.NOW)
    commands.load_directory(at_data, source).unpersist()
    assert warnings() == []
    # ten days later, by the machine clock
    later = dataclasses.replace(make_run(tmp_path / "b", now_ms=fleet.NOW + 240 * fleet.HOUR),
                                now_source="the machine clock")
    entries = commands.load_directory(later, source)
    try:
        assert warnings() == [
            f"the directory's newest last-seen (2026-11-25 09:13:20 UTC) is 241.0 h before the "
            f"now this run judges at (2026-12-05 10:13:20 UTC, from the machine clock; [jobs] "
            f"now_gap_warn_h = 24): expiry and staleness are judged against that now; to judge "
            f"at the data's time: --now-ms {newest}"]
        commands.directory(later, entries)
        assert warnings() == ["every cluster controller (5) is stale: none has an entry seen "
                              "in the 24 h before 2026-12-05 10:13:20 UTC (from the machine "
                              "clock)"]
    finally:
        entries.unpersist()
    # a now given before the data: said the other way round, with no hint
    early = make_run(tmp_path / "c", now_ms=fleet.NOW - 100 * fleet.HOUR)
    commands.load_directory(early, source).unpersist()
    (said,) = warnings()
    assert "is 99.0 h after the now" in said and "from --now-ms" in said
    assert "to judge at the data's time" not in said
    # the routing snapshots too
    commands.ingest(later, "", str(fleet_inputs.snapshot_dir))
    caplog.clear()
    entries = commands.load_directory(dataclasses.replace(later, checks_now=False), source)
    try:
        assert warnings() == []  # a command that judges nothing against now says nothing
        commands.drift(later, entries)
    finally:
        entries.unpersist()
    assert any(w.startswith("the newest routing snapshot (2026-11-25 10:08:20 UTC) is 240.1 h "
                            "before the now") for w in warnings())


# ---------------------------------------------------------------------- 8: Spark's noise

#: what Spark says on its own that must not reach the user
NOISE = ("WindowExec", "No Partition Defined", "Truncated the string representation",
         "jdk.incubator.vector", "$anonfun", "Using incubator modules")


def test_spark_noise_does_not_reach_the_user(fleet_inputs: FleetInputs, tmp_path: Path) -> None:
    done = cli("directory", "--sqlite", str(fleet_inputs.sqlite), "--out", str(tmp_path / "out"),
               "--now-ms", str(fleet.NOW), timeout_s=240,
               JOYNR_PIPELINE__SPARK__MASTER="local[2]",
               JOYNR_PIPELINE__SPARK__SHUFFLE_PARTITIONS="4",
               JOYNR_PIPELINE__SPARK__PROGRESS_INTERVAL_S="0.1")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    assert "directory: 10 entries (8 live, 2 expired), 5 cluster controllers, 2 stale" in output
    for noise in NOISE:
        assert noise not in output, (noise, output[-5000:])
    for line in output.splitlines():  # each progress line names the pipeline's step
        if ": stage " in line:
            assert re.search(r"pipeline\.session: directory: [^:]+: stage \d+: \d+/\d+ tasks "
                             r"done, \d+ running$", line), line


def test_progress_lines_name_the_step(spark: SparkSession, tmp_path: Path,
                                      caplog: pytest.LogCaptureFixture) -> None:
    """A stage held running (its task waits for a file) while the progress is reported: the
    line names the step, never Spark's call site."""
    gate = str(tmp_path / "gate")

    def held(rows: Any) -> Any:  # runs on the executor
        for _ in range(1200):
            if os.path.exists(gate):
                break
            time.sleep(0.1)
        return rows

    progress = Progress(spark, 0)
    failures: list[BaseException] = []

    def job() -> None:
        try:
            with progress.step("test: one named step"):
                spark.sparkContext.parallelize([1], 1).mapPartitions(held).collect()
        except BaseException as exc:  # reported by the test
            failures.append(exc)

    thread = threading.Thread(target=job)
    thread.start()
    tracker = spark.sparkContext.statusTracker()
    try:
        for _ in range(1200):
            infos = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            if any(i is not None and i.numActiveTasks for i in infos):
                break
            time.sleep(0.1)
        caplog.set_level(logging.INFO, logger="pyjoynr.pipeline.session")
        progress.report()
    finally:
        Path(gate).touch()
        thread.join(120)
    assert not failures
    lines = [r.getMessage() for r in caplog.records if ": stage " in r.getMessage()]
    assert lines, "no stage was reported"
    for line in lines:
        assert re.fullmatch(r"test: one named step: stage \d+: 0/1 tasks done, 1 running",
                            line), line

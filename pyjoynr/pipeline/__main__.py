"""``python -m pyjoynr.pipeline`` (what ``bin/pipeline`` runs): the fleet data pipeline's commands.

Every input is checked before Spark starts (a missing store, directory or ingested table costs
no JVM). Relative paths given as options are resolved against the caller's directory
(``PIPELINE_CALLER_DIR``, set by bin/pipeline, which runs from the repository; else the current
directory), those of the settings against the repository; messages name absolute paths.

Exit status: 0 done; 2 a missing or unusable input, bad settings or options, or a plan that
``--apply`` refuses (the message says which); 1 the job failed, or ``--apply`` could not carry
out every call of the plan.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import logging
import math
import os
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

from pyjoynr.pipeline.config import (
    DEFAULT_CONFIG,
    ENV_PREFIX,
    ConfigError,
    InputSettings,
    PipelineConfig,
    check_master,
)
from pyjoynr.runtime.extras import program_name, require_extra

if TYPE_CHECKING:
    from pyjoynr.pipeline.readers import DirectorySource

log = logging.getLogger("pipeline")

DESCRIPTION = """\
The fleet data pipeline: Spark jobs over the GCD's directory, the cluster controllers'
message audit logs and their routing table snapshots (their records of schema version 1, as
the project's documentation of records describes them).
Runs in local mode by default (local[*]); --master spark://host:port runs it on a cluster.
Every table goes under --out (default var/pipeline), as Parquet."""

JOBS = {
    "ingest": """\
Raw record files -> tables. Reads audit-*.jsonl.gz (--audit DIR) and routing-*.jsonl.gz
(--snapshots DIR), checks every file (a truncated file keeps its lines before the cut; a
corrupt one is not read), and writes: audit and snapshots (Parquet, by UTC date), their
rejected lines (audit_rejects, snapshot_rejects: corrupt-json, unknown-version, bad-field)
and ingest_files (one status row per input file).""",
    "directory": """\
The directory, read from the GCD store (--sqlite FILE or --postgres DSN) over JDBC: entries per
GBID / domain / interface / version, expired entries still stored, cluster controllers and the
stale ones (no entry seen for [jobs] stale_after_h), participants registered in several GBIDs
with diverging parameters, fixed participantIds registered by several cluster controllers.
Tables under OUT/directory.""",
    "traffic": """\
Traffic from the ingested audit records (run ingest first), attributed to the providers'
domain and interface through the directory: per interface, GBID and UTC hour, messages,
bytes, p50/p99 ms queued, drops by reason; top senders; refusals by reason and peer. Tables
under OUT/traffic.""",
    "drift": """\
Routing table snapshots (ingested) against the directory: remote routes to providers the
directory no longer has (or only expired), or to another GBID or topic than the directory
says. Tables under OUT/drift.""",
    "housekeeping": """\
The purge plan: removeStale per stale cluster controller, remove of each expired entry of the
others; written to OUT/housekeeping (plan.jsonl, plan.txt, planned_entries). With --apply it
is carried out through the GCD's joynr interface, over a cluster controller (--cc), never by
deleting rows: right after planning, or a plan written before (--plan DIR). --apply first
shows what the plan does (the stale cluster controllers and their entries, the removes per
GBID, the share of the directory) and refuses a plan that removes more than [housekeeping]
max_purge_share of the directory's entries (0.1) unless given --allow-large-purge.""",
    "report": """\
All of the above (ingesting first when --audit/--snapshots are given) into their tables and
one self-contained HTML page with charts: OUT/report/index.html.""",
}


#: the variable bin/pipeline passes the caller's directory in (it runs from the repository)
CALLER_DIR_VARIABLE = "PIPELINE_CALLER_DIR"
#: --now-ms at most: the last millisecond of the year 9999
MAX_EPOCH_MS = 253_402_300_799_999
#: the jobs that judge expiry or staleness against a "now" (--now-ms), and the ones that judge
#: staleness (--stale-after-h)
NOW_JOBS = ("directory", "drift", "housekeeping", "report")
STALE_JOBS = ("directory", "housekeeping", "report")


def _hours(text: str) -> float:
    """--stale-after-h: a number of hours > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of hours: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number of hours > 0, got {text!r}")
    return value


def _epoch_ms(text: str) -> int:
    """--now-ms: milliseconds since 1970-01-01 UTC, from 1 to the end of the year 9999."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a whole number of milliseconds since 1970-01-01 UTC: {text!r}") from None
    if not 0 < value <= MAX_EPOCH_MS:
        raise argparse.ArgumentTypeError(
            f"must be milliseconds since 1970-01-01 UTC, from 1 to {MAX_EPOCH_MS} (the year "
            f"9999), got {text!r}")
    return value


def _master(text: str) -> str:
    try:
        return check_master(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("master ")) from None


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, and the one of each job (each offers only the options it uses)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="FILE",
                        help=f"settings (default: {DEFAULT_CONFIG})")
    common.add_argument("--master", metavar="URL", type=_master,
                        help="Spark master: local[*] (default), local[N] or spark://host:port")
    common.add_argument("--out", metavar="DIR", help="output directory (default: var/pipeline, "
                        "under the working directory)")
    common.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    now = argparse.ArgumentParser(add_help=False)
    now.add_argument("--now-ms", type=_epoch_ms, metavar="MS",
                     help="judge expiry and staleness at this time, epoch milliseconds "
                          "(default: the machine clock; the run says which it used, and warns "
                          "when the data's newest time is more than [jobs] now_gap_warn_h "
                          "from it)")
    stale = argparse.ArgumentParser(add_help=False)
    stale.add_argument("--stale-after-h", type=_hours, metavar="HOURS",
                       help="a cluster controller is stale when no entry of it was seen for "
                            "this long, > 0 (default: [jobs] stale_after_h)")
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--sqlite", metavar="FILE", help="the GCD store: an SQLite file")
    store.add_argument("--postgres", metavar="DSN",
                       help="the GCD store: postgresql://user[:password]@host:port/database")
    raw = argparse.ArgumentParser(add_help=False)
    raw.add_argument("--audit", metavar="DIR", help="directory of audit-*.jsonl.gz files")
    raw.add_argument("--snapshots", metavar="DIR",
                     help="directory of routing-*.jsonl.gz files")

    parser = argparse.ArgumentParser(
        prog=_prog(), description=DESCRIPTION, epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    jobs = parser.add_subparsers(dest="job", required=True, metavar="JOB")
    formatter = argparse.RawDescriptionHelpFormatter
    parents = {"ingest": [common, raw], "directory": [common, store, now, stale],
               "traffic": [common, store], "drift": [common, store, now],
               "housekeeping": [common, store, now, stale],
               "report": [common, store, raw, now, stale]}
    helps = {"ingest": "raw audit and snapshot files -> tables",
             "directory": "the directory's tables",
             "traffic": "traffic per interface, GBID and hour",
             "drift": "routing tables against the directory",
             "housekeeping": "the purge plan (--apply)",
             "report": "every table and the HTML report"}
    made = {name: jobs.add_parser(name, parents=parents[name], description=JOBS[name],
                                  help=helps[name], formatter_class=formatter,
                                  epilog=_epilog())
            for name in JOBS}
    house = made["housekeeping"]
    house.add_argument("--apply", action="store_true",
                       help="carry the plan out through the GCD's interface (it is shown "
                            "first: controllers, entries, share of the directory)")
    house.add_argument("--plan", metavar="DIR",
                       help="with --apply: a plan written before (OUT/housekeeping); no "
                            "directory is read, no Spark started")
    house.add_argument("--cc", action="append", default=None, metavar="[GBID=]URL",
                       help="with --apply: a cluster controller to reach the GCD through "
                            "(repeatable): the GCD instance of its default backend GBID gets "
                            "that GBID's removes (without GBID=: [apply] default_gbid)")
    house.add_argument("--allow-large-purge", action="store_true",
                       help="with --apply: apply a plan that removes more than [housekeeping] "
                            "max_purge_share of the directory's entries (refused otherwise)")
    return parser, made


def _epilog() -> str:
    return (f"Every setting is documented in {DEFAULT_CONFIG}; an environment variable\n"
            f"{ENV_PREFIX}__<SECTION>__<KEY> overrides it (e.g. {ENV_PREFIX}__SPARK__MASTER;\n"
            "a list as one TOML value: '[\"a\", \"b\"]'), and the options above override both.\n"
            "Relative paths, given as options or in the settings, are relative to the working\n"
            "directory (bin/pipeline, which runs in the checkout, passes the directory it was\n"
            "called from for the options).\n\n"
            "Exit status: 0 done, 2 a missing or unusable input, bad settings or options, or a\n"
            "plan --apply refuses; 1 the job failed or --apply could not make every call.")


def caller_dir() -> Path:
    """The directory the command was called from: relative paths of options are resolved
    against it (bin/pipeline passes it in PIPELINE_CALLER_DIR: it runs from the repository)."""
    given = os.environ.get(CALLER_DIR_VARIABLE, "")
    return Path(given) if given and Path(given).is_absolute() else Path.cwd()


def _absolute(path: str, base: Path) -> str:
    """``path`` made absolute against ``base`` ("" stays "")."""
    return str((base / Path(path).expanduser()).resolve()) if path else ""


def _config(args: argparse.Namespace) -> PipelineConfig:
    """The settings, the options applied over them; every path absolute (options against the
    caller's directory, settings against the working directory: bin/pipeline runs in the
    checkout)."""
    import dataclasses  # noqa: PLC0415

    here = caller_dir()
    config = PipelineConfig.load(Path(_absolute(args.config, here)) if args.config
                                 else DEFAULT_CONFIG)
    spark = config.spark
    if args.master:
        spark = dataclasses.replace(spark, master=args.master)
    inputs = config.inputs
    paths = {key: _absolute(getattr(inputs, key), Path.cwd())
             for key in ("out", "sqlite", "audit_dir", "snapshot_dir")}
    for option, key in (("out", "out"), ("audit", "audit_dir"), ("snapshots", "snapshot_dir")):
        value = getattr(args, option, None)
        if value:
            paths[key] = _absolute(value, here)
    postgres = inputs.postgres
    if getattr(args, "sqlite", None) or getattr(args, "postgres", None):
        # a store given as an option replaces the settings' store, whichever kind it is
        paths["sqlite"] = _absolute(args.sqlite or "", here)
        postgres = args.postgres or ""
    inputs = dataclasses.replace(inputs, out=paths["out"], sqlite=paths["sqlite"],
                                 audit_dir=paths["audit_dir"],
                                 snapshot_dir=paths["snapshot_dir"], postgres=postgres)
    jobs = config.jobs
    if getattr(args, "stale_after_h", None) is not None:
        jobs = dataclasses.replace(jobs, stale_after_h=args.stale_after_h)
    apply = config.apply
    if getattr(args, "cc", None):
        apply = dataclasses.replace(apply, cc=tuple(args.cc))
    return dataclasses.replace(config, spark=spark, inputs=inputs, jobs=jobs, apply=apply)


def _check_options(args: argparse.Namespace) -> None:
    """Options that would do nothing in this combination are refused, not ignored."""
    if args.job != "housekeeping":
        return
    if not args.apply:
        for option, given in (("--plan DIR", args.plan), ("--cc", args.cc),
                              ("--allow-large-purge", args.allow_large_purge)):
            if given:
                raise ConfigError(f"{option} is for --apply")
    elif args.plan:
        ignored = [option for option, given in (
            ("--sqlite", args.sqlite), ("--postgres", args.postgres),
            ("--now-ms", args.now_ms is not None),
            ("--stale-after-h", args.stale_after_h is not None), ("--master", args.master),
            ("--out", args.out)) if given]
        if ignored:
            raise ConfigError(f"--apply --plan DIR applies a plan made before (no directory "
                              f"read, no Spark): {', '.join(ignored)} would do nothing")


def _check_inputs(job: str, inputs: InputSettings) -> DirectorySource | None:
    """Every input of ``job``, checked before Spark starts (InputError naming the absolute
    path it looked at); the GCD store, if the job reads it."""
    from pyjoynr.pipeline.readers import InputError, directory_source  # noqa: PLC0415

    out = Path(inputs.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"the output directory {out} is not a directory")
    if job == "ingest" and not (inputs.audit_dir or inputs.snapshot_dir):
        raise ConfigError("nothing to ingest: give --audit DIR and/or --snapshots DIR")
    if job in ("ingest", "report"):
        for given, what in ((inputs.audit_dir, "audit"), (inputs.snapshot_dir, "snapshots")):
            if not given:
                continue
            path = Path(given)
            if not path.is_dir():
                raise InputError(f"the {what} directory {path} does not exist"
                                 if not path.exists() else f"{path} is not a directory")
            try:
                with os.scandir(path):
                    pass
            except OSError as exc:
                raise InputError(f"cannot list {path}: {exc.strerror or exc}") from None
    if job == "ingest":
        return None
    if inputs.sqlite and Path(inputs.sqlite).is_dir():
        raise InputError(f"the GCD store {inputs.sqlite} is a directory, not an SQLite file")
    source = directory_source(inputs.sqlite, inputs.postgres)
    if inputs.sqlite:
        _check_sqlite_store(Path(inputs.sqlite))
    for needs, table, made_by in (("traffic", "audit", "ingest --audit DIR"),
                                  ("drift", "snapshots", "ingest --snapshots DIR"),
                                  # (the status rows tell drift the empty snapshots)
                                  ("drift", "ingest_files", "ingest --snapshots DIR")):
        if job == needs and not (out / table).is_dir():
            raise InputError(f"no table {table} in {out} (it is made by `bin/pipeline "
                             f"{made_by}`)")
    return source


def _check_sqlite_store(path: Path) -> None:
    """The SQLite file is a GCD store (its table discovery_entries has the columns read)."""
    from pyjoynr.pipeline.readers import InputError  # noqa: PLC0415
    from pyjoynr.pipeline.schemas import DIRECTORY_COLUMNS  # noqa: PLC0415

    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
            columns = {row[1] for row in db.execute("PRAGMA table_info(discovery_entries)")}
    except sqlite3.Error as exc:
        raise InputError(f"the GCD store {path} cannot be read as SQLite: {exc}") from None
    if not columns:
        raise InputError(f"the GCD store {path} has no table discovery_entries: not a GCD "
                         "store")
    missing = [c for c in DIRECTORY_COLUMNS if c not in columns]
    if missing:
        raise InputError(f"the GCD store {path}: discovery_entries has no column(s) "
                         f"{', '.join(missing)}: not a GCD store of this version")


def run(args: argparse.Namespace, config: PipelineConfig) -> int:
    """Run one command with its own Spark session, once every input has been checked."""
    inputs = config.inputs
    out = Path(inputs.out)
    job = args.job
    _check_options(args)
    if job == "housekeeping" and args.apply:
        from pyjoynr.pipeline.apply import targets_of  # noqa: PLC0415

        targets_of(config.apply.cc, config.apply.default_gbid)  # checked before Spark starts
        if args.plan:
            return _apply(Path(_absolute(args.plan, caller_dir())), config,
                          args.allow_large_purge)
    source = _check_inputs(job, inputs)
    now_given = getattr(args, "now_ms", None)
    now_ms = now_given if now_given is not None else int(time.time() * 1000)
    now_source = "--now-ms" if now_given is not None else "the machine clock"
    if job in NOW_JOBS:
        log.info("judging expiry%s at %s (%d epoch ms, from %s)",
                 " and staleness" if job in STALE_JOBS else "", _utc(now_ms), now_ms,
                 now_source)

    from pyjoynr.pipeline import commands  # noqa: PLC0415 - imports pyspark
    from pyjoynr.pipeline.session import spark_session  # noqa: PLC0415

    plan_dir = None
    with spark_session(config.spark, max_line_bytes=inputs.max_line_bytes) as (spark, progress):
        state = commands.Run(spark, progress, config, out, now_ms, now_source,
                             checks_now=job in NOW_JOBS)
        if job == "ingest":
            commands.ingest(state, inputs.audit_dir, inputs.snapshot_dir)
        else:
            assert source is not None
            if job == "report" and (inputs.audit_dir or inputs.snapshot_dir):
                commands.ingest(state, inputs.audit_dir, inputs.snapshot_dir)
            entries = commands.load_directory(state, source)
            try:
                if job == "directory":
                    commands.directory(state, entries)
                elif job == "traffic":
                    commands.traffic(state, entries)
                elif job == "drift":
                    commands.drift(state, entries)
                elif job == "housekeeping":
                    plan_dir = commands.housekeeping(state, entries, source)
                else:
                    from pyjoynr.pipeline.report import build_report  # noqa: PLC0415

                    page = build_report(state, entries, source)
                    log.info("report: %s", page)
            finally:
                entries.unpersist()
    if plan_dir is not None and args.apply:
        return _apply(plan_dir, config, args.allow_large_purge)
    return 0


def _utc(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _apply(plan_dir: Path, config: PipelineConfig, allow_large: bool) -> int:
    """Show what the plan does, refuse it if it removes too much, else carry it out."""
    from pyjoynr.pipeline.apply import (  # noqa: PLC0415 - imports libjoynr
        apply_plan,
        check_share,
        read_plan,
        targets_of,
    )

    targets = targets_of(config.apply.cc, config.apply.default_gbid)
    summary = read_plan(plan_dir)
    for line in summary.lines():
        log.info("apply: %s", line)
    check_share(summary, config.housekeeping.max_purge_share, allow_large)
    result = asyncio.run(apply_plan(plan_dir, targets, config.apply))
    return 0 if result.complete else 1


def _prog() -> str:
    """The name the pipeline was called by: pyjoynr-pipeline or python -m pyjoynr.pipeline."""
    return program_name("pyjoynr.pipeline", "pyjoynr-pipeline")


def main(argv: list[str] | None = None) -> int:
    require_extra(_prog(), "pipeline")
    parser, jobs = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the job's parser: its usage shows the options it has
        jobs[args.job].error(f"not an option of {args.job}: {' '.join(unknown)} (see "
                             f"{parser.prog} {args.job} --help)")
    logging.basicConfig(level=args.log_level,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
                        stream=sys.stderr)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    from pyjoynr.pipeline.readers import InputError  # noqa: PLC0415 - imports pyspark (no JVM)

    try:
        try:
            config = _config(args)
        except ConfigError:
            raise
        except ValueError as exc:  # an option's value the settings' own checks refuse
            raise ConfigError(f"options: {exc}") from None
        return run(args, config)
    except (ConfigError, InputError) as exc:
        sys.stderr.write(f"pipeline {args.job}: {exc}\n")
        return 2
    except FileNotFoundError as exc:
        sys.stderr.write(f"pipeline {args.job}: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"pipeline {args.job}: interrupted\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())

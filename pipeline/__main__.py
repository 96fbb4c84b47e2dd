"""``python -m pipeline`` (what ``bin/pipeline`` runs): the fleet data pipeline's commands.

Exit status: 0 done; 2 a missing or unusable input, or a bad configuration (the message says
which); 1 the job failed, or ``--apply`` could not carry out every call of the plan.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from pathlib import Path

from pipeline.config import DEFAULT_CONFIG, ENV_PREFIX, ConfigError, PipelineConfig

log = logging.getLogger("pipeline")

DESCRIPTION = """\
The fleet data pipeline: Spark jobs over the GCD's directory, the cluster controllers'
message audit logs and their routing table snapshots (docs/records.md, schema version 1).
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
deleting rows: right after planning, or a plan written before (--plan DIR).""",
    "report": """\
All of the above (ingesting first when --audit/--snapshots are given) into their tables and
one self-contained HTML page with charts: OUT/report/index.html.""",
}


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", type=Path, default=DEFAULT_CONFIG, metavar="FILE",
                        help="settings (default: %(default)s)")
    common.add_argument("--master", metavar="URL",
                        help="Spark master: local[*] (default) or spark://host:port")
    common.add_argument("--out", metavar="DIR", help="output directory (default var/pipeline)")
    common.add_argument("--now-ms", type=int, metavar="MS",
                        help="judge expiry and staleness at this time (default: now)")
    common.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--sqlite", metavar="FILE", help="the GCD store: an SQLite file")
    store.add_argument("--postgres", metavar="DSN",
                       help="the GCD store: postgresql://user[:password]@host:port/database")
    store.add_argument("--stale-after-h", type=float, metavar="HOURS",
                       help="a cluster controller is stale when no entry of it was seen for "
                            "this long (default: [jobs] stale_after_h)")
    raw = argparse.ArgumentParser(add_help=False)
    raw.add_argument("--audit", metavar="DIR", help="directory of audit-*.jsonl.gz files")
    raw.add_argument("--snapshots", metavar="DIR",
                     help="directory of routing-*.jsonl.gz files")

    parser = argparse.ArgumentParser(
        prog="pipeline", description=DESCRIPTION, epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    jobs = parser.add_subparsers(dest="job", required=True, metavar="JOB")
    formatter = argparse.RawDescriptionHelpFormatter
    jobs.add_parser("ingest", parents=[common, raw], description=JOBS["ingest"],
                    help="raw audit and snapshot files -> tables", formatter_class=formatter,
                    epilog=_epilog())
    for name, help_text in (("directory", "the directory's tables"),
                            ("traffic", "traffic per interface, GBID and hour"),
                            ("drift", "routing tables against the directory")):
        jobs.add_parser(name, parents=[common, store], description=JOBS[name], help=help_text,
                        formatter_class=formatter, epilog=_epilog())
    house = jobs.add_parser("housekeeping", parents=[common, store],
                            description=JOBS["housekeeping"], help="the purge plan (--apply)",
                            formatter_class=formatter, epilog=_epilog())
    house.add_argument("--apply", action="store_true",
                       help="carry the plan out through the GCD's interface")
    house.add_argument("--plan", metavar="DIR",
                       help="with --apply: a plan written before (OUT/housekeeping); no "
                            "directory is read")
    house.add_argument("--cc", action="append", default=None, metavar="[GBID=]URL",
                       help="a cluster controller to reach the GCD through (repeatable): the "
                            "GCD instance of its default backend GBID gets that GBID's removes "
                            "(without GBID=: [apply] default_gbid)")
    jobs.add_parser("report", parents=[common, store, raw], description=JOBS["report"],
                    help="every table and the HTML report", formatter_class=formatter,
                    epilog=_epilog())
    return parser


def _epilog() -> str:
    return (f"Every setting is documented in {DEFAULT_CONFIG}; an environment variable\n"
            f"{ENV_PREFIX}__<SECTION>__<KEY> overrides it (e.g. {ENV_PREFIX}__SPARK__MASTER),\n"
            "and the options above override both.\n\n"
            "Exit status: 0 done, 2 a missing or unusable input or bad settings, 1 the job\n"
            "failed or --apply could not make every call.")


def _config(args: argparse.Namespace) -> PipelineConfig:
    import dataclasses  # noqa: PLC0415

    config = PipelineConfig.load(args.config)
    spark = config.spark
    if args.master:
        spark = dataclasses.replace(spark, master=args.master)
    inputs = config.inputs
    for option, key in (("out", "out"), ("sqlite", "sqlite"), ("postgres", "postgres"),
                        ("audit", "audit_dir"), ("snapshots", "snapshot_dir")):
        value = getattr(args, option, None)
        if value:
            inputs = dataclasses.replace(inputs, **{key: value})
    jobs = config.jobs
    if getattr(args, "stale_after_h", None) is not None:
        jobs = dataclasses.replace(jobs, stale_after_h=args.stale_after_h)
    apply = config.apply
    if getattr(args, "cc", None):
        apply = dataclasses.replace(apply, cc=tuple(args.cc))
    return dataclasses.replace(config, spark=spark, inputs=inputs, jobs=jobs, apply=apply)


def run(args: argparse.Namespace, config: PipelineConfig) -> int:
    """Run one command with its own Spark session."""
    from pipeline import commands  # noqa: PLC0415 - imports pyspark
    from pipeline.readers import InputError, directory_source  # noqa: PLC0415
    from pipeline.session import spark_session  # noqa: PLC0415

    inputs = config.inputs
    out = Path(inputs.out).resolve()
    now_ms = args.now_ms if args.now_ms is not None else int(time.time() * 1000)
    job = args.job
    if job == "housekeeping" and args.apply:
        from pipeline.apply import targets_of  # noqa: PLC0415

        targets_of(config.apply.cc, config.apply.default_gbid)  # checked before Spark starts
        if args.plan:
            return _apply(Path(args.plan), config)
    if job == "housekeeping" and args.plan:
        raise ConfigError("--plan DIR is for --apply (a plan written before)")
    source = None
    if job in ("directory", "traffic", "drift", "housekeeping", "report"):
        source = directory_source(inputs.sqlite, inputs.postgres)  # checked before Spark starts
    if job == "ingest" and not (inputs.audit_dir or inputs.snapshot_dir):
        raise ConfigError("nothing to ingest: give --audit DIR and/or --snapshots DIR")
    for given, what in ((inputs.audit_dir, "audit"), (inputs.snapshot_dir, "snapshot")):
        if given and job in ("ingest", "report") and not Path(given).is_dir():
            raise InputError(f"the {what} directory {given} does not exist"
                             if not Path(given).exists() else f"{given} is not a directory")
    plan_dir = None
    with spark_session(config.spark, max_line_bytes=inputs.max_line_bytes) as (spark, progress):
        state = commands.Run(spark, progress, config, out, now_ms)
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
                    from pipeline.report import build_report  # noqa: PLC0415

                    page = build_report(state, entries, source)
                    log.info("report: %s", page)
            finally:
                entries.unpersist()
    if plan_dir is not None and args.apply:
        return _apply(plan_dir, config)
    return 0


def _apply(plan_dir: Path, config: PipelineConfig) -> int:
    from pipeline.apply import apply_plan, targets_of  # noqa: PLC0415 - imports libjoynr

    targets = targets_of(config.apply.cc, config.apply.default_gbid)
    result = asyncio.run(apply_plan(plan_dir, targets, config.apply))
    return 0 if result.complete else 1


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
                        stream=sys.stderr)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    from pipeline.readers import InputError  # noqa: PLC0415

    try:
        config = _config(args)
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

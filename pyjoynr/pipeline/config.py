"""The pipeline's settings: ``config/pipeline.toml`` (every setting with its default), overridden
by environment variables ``JOYNR_PIPELINE__<SECTION>__<KEY>`` and then by command-line options.

Loaded by the project's one loader (:func:`runtime.config.load_config`), so the rules are the
rest of the project's: unknown sections or keys, variables that name no setting and values of
the wrong type are errors that name the culprit (a typo must not be silently ignored); in a
variable, a list is one TOML value (``'["a", "b"]'``), never a comma-separated text. Every
number is checked against its range here (``__post_init__``), wherever it came from.

Relative paths in the settings (``[inputs]``) are relative to the working directory
(``bin/pipeline`` runs in the checkout); the command line resolves its own against the
caller's directory.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pyjoynr.runtime.config import ConfigError, load_config

__all__ = ["DEFAULT_CONFIG", "ENV_PREFIX", "ApplySettings", "ConfigError",
           "HousekeepingSettings", "InputSettings", "JobSettings", "PipelineConfig",
           "ReportSettings", "SparkSettings", "check_master"]

ENV_PREFIX = "JOYNR_PIPELINE"
#: the packaged default configuration (it documents every setting)
DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "config" / "pipeline.toml"

#: the Spark masters the pipeline runs on: local mode, or a standalone cluster
_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?|spark://[^\s/]+:[0-9]+")
#: a JVM memory size as Spark takes it: 512m, 2g, 2gb
_MEMORY = re.compile(r"[1-9][0-9]*([kmgt]b?)?", re.IGNORECASE)


#: the longest line a Hadoop line reader takes (an int, with room for the newline)
MAX_LINE_BYTES = 2**31 - 3


def check_master(master: str) -> str:
    """``master`` if it is a master the pipeline runs on, else ValueError saying which are."""
    if not _MASTER.fullmatch(master):
        raise ValueError(f"master must be local, local[N], local[*] or spark://host:port, "
                         f"got {master!r}")
    return master


def _at_least(section: object, name: str, least: float) -> None:
    value = getattr(section, name)
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= least):
        raise ValueError(f"{name} must be at least {least:g}, got {value!r}")


def _above(section: object, name: str, bound: float) -> None:
    value = getattr(section, name)
    if not (isinstance(value, int | float) and math.isfinite(value) and value > bound):
        raise ValueError(f"{name} must be more than {bound:g}, got {value!r}")


@dataclass(frozen=True)
class SparkSettings:
    #: the Spark master: local[*] (this machine, all cores) or spark://host:port (a cluster)
    master: str = "local[*]"
    app_name: str = "pyjoynr-pipeline"
    #: the driver JVM's heap (it holds only small aggregates; the data stays in the executors)
    driver_memory: str = "2g"
    #: the address executors reach the driver at; empty: 127.0.0.1 in local mode, else Spark's
    driver_host: str = ""
    #: partitions of a shuffle (joins, aggregations); adaptive execution merges small ones
    shuffle_partitions: int = 16
    #: parallel JDBC reads of the directory (ranges of its numeric ``bucket`` column)
    jdbc_partitions: int = 8
    #: JDBC driver jars (Debian's libpostgresql-jdbc-java and libxerial-sqlite-jdbc-java)
    jars: tuple[str, ...] = ("/usr/share/java/postgresql.jar", "/usr/share/java/sqlite-jdbc.jar")
    #: Spark's web UI (off: no port opened)
    ui: bool = False
    #: seconds between two progress lines of a running Spark job (0: none)
    progress_interval_s: float = 10.0

    def __post_init__(self) -> None:
        check_master(self.master)
        if not _MEMORY.fullmatch(self.driver_memory):
            raise ValueError(f"driver_memory must be a size such as 512m or 2g, got "
                             f"{self.driver_memory!r}")
        for name in ("shuffle_partitions", "jdbc_partitions"):
            _at_least(self, name, 1)
        _at_least(self, "progress_interval_s", 0)


@dataclass(frozen=True)
class InputSettings:
    #: the GCD store: an SQLite file, or a PostgreSQL DSN (postgresql://user[:pw]@host:port/db)
    sqlite: str = ""
    postgres: str = ""
    #: raw message audit files (audit-*.jsonl.gz) and routing table snapshots (routing-*.jsonl.gz)
    audit_dir: str = ""
    snapshot_dir: str = ""
    #: where every table, plan and the report go (and where the jobs read ingested tables)
    out: str = "var/pipeline"
    #: a record line longer than this (bytes) is rejected as too-long, never held in memory
    max_line_bytes: int = 1_048_576

    def __post_init__(self) -> None:
        _at_least(self, "max_line_bytes", 1)
        if self.max_line_bytes > MAX_LINE_BYTES:
            raise ValueError(f"max_line_bytes must be at most {MAX_LINE_BYTES}, got "
                             f"{self.max_line_bytes}")
        if not self.out:
            raise ValueError("out must name a directory, got ''")


@dataclass(frozen=True)
class JobSettings:
    #: a cluster controller whose entries were all last seen longer ago than this is stale
    stale_after_h: float = 24.0
    #: rows of the "top" tables (senders)
    top_n: int = 20
    #: warn when the newest last-seen of the directory (or the newest routing snapshot) is
    #: further than this from the "now" the run judges at, before or after it
    now_gap_warn_h: float = 24.0

    def __post_init__(self) -> None:
        _above(self, "stale_after_h", 0)
        _at_least(self, "top_n", 1)
        _above(self, "now_gap_warn_h", 0)


@dataclass(frozen=True)
class ReportSettings:
    #: interfaces drawn as their own series in a chart; the rest is summed as "other"
    chart_series: int = 8
    #: time bins of a chart at most (hours, widened to days and more for long ranges)
    max_chart_bins: int = 168
    #: rows of a table on the page at most (the Parquet tables hold every row)
    max_table_rows: int = 50

    def __post_init__(self) -> None:
        for name in ("chart_series", "max_chart_bins", "max_table_rows"):
            _at_least(self, name, 1)


@dataclass(frozen=True)
class HousekeepingSettings:
    #: --apply refuses a plan that removes more than this share of the directory's entries
    #: (0.1: a tenth) unless given --allow-large-purge
    max_purge_share: float = 0.1

    def __post_init__(self) -> None:
        _at_least(self, "max_purge_share", 0)
        if self.max_purge_share > 1:
            raise ValueError(f"max_purge_share must be at most 1 (the whole directory), got "
                             f"{self.max_purge_share!r}")


@dataclass(frozen=True)
class ApplySettings:
    #: cluster controllers the plan is applied through: "ws://host:port/" or "GBID=ws://..."
    #: (a URL without GBID= is the one of the default GBID, below)
    cc: tuple[str, ...] = ()
    default_gbid: str = "joynrdefaultgbid"
    #: seconds one call to the GCD may take
    call_timeout_s: float = 30.0
    #: GCD calls in flight at once
    concurrency: int = 8

    def __post_init__(self) -> None:
        _above(self, "call_timeout_s", 0)
        _at_least(self, "concurrency", 1)


@dataclass(frozen=True)
class PipelineConfig:
    spark: SparkSettings = field(default_factory=SparkSettings)
    inputs: InputSettings = field(default_factory=InputSettings)
    jobs: JobSettings = field(default_factory=JobSettings)
    report: ReportSettings = field(default_factory=ReportSettings)
    housekeeping: HousekeepingSettings = field(default_factory=HousekeepingSettings)
    apply: ApplySettings = field(default_factory=ApplySettings)

    @classmethod
    def load(cls, path: Path | None, env: Mapping[str, str] | None = None) -> PipelineConfig:
        """Defaults, then the TOML file (``None``: none), then the environment
        (:func:`runtime.config.load_config`); ConfigError naming the culprit."""
        try:
            return load_config(cls, path, env_prefix=ENV_PREFIX, env=env)
        except OSError as exc:  # a file that exists but cannot be read
            raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None

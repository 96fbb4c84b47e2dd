"""The pipeline's settings: ``config/pipeline.toml`` (every setting with its default), overridden
by environment variables ``JOYNR_PIPELINE__<SECTION>__<KEY>`` and then by command-line options.

Unknown sections or keys, and values of the wrong type, are errors that name the culprit (a typo
must not be silently ignored). The pipeline shares no code with the rest of the project (only
the record schemas of docs/records.md), so this small loader is its own.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_CONFIG", "ENV_PREFIX", "ApplySettings", "ConfigError", "InputSettings",
           "JobSettings", "PipelineConfig", "ReportSettings", "SparkSettings"]

ENV_PREFIX = "JOYNR_PIPELINE"
DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "config" / "pipeline.toml"


class ConfigError(ValueError):
    """The configuration is not usable; the message names the file, key and problem."""


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


@dataclass(frozen=True)
class JobSettings:
    #: a cluster controller whose entries were all last seen longer ago than this is stale
    stale_after_h: float = 24.0
    #: rows of the "top" tables (senders)
    top_n: int = 20


@dataclass(frozen=True)
class ReportSettings:
    #: interfaces drawn as their own series in a chart; the rest is summed as "other"
    chart_series: int = 8
    #: time bins of a chart at most (hours, widened to days and more for long ranges)
    max_chart_bins: int = 168
    #: rows of a table on the page at most (the Parquet tables hold every row)
    max_table_rows: int = 50


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


@dataclass(frozen=True)
class PipelineConfig:
    spark: SparkSettings = field(default_factory=SparkSettings)
    inputs: InputSettings = field(default_factory=InputSettings)
    jobs: JobSettings = field(default_factory=JobSettings)
    report: ReportSettings = field(default_factory=ReportSettings)
    apply: ApplySettings = field(default_factory=ApplySettings)

    @classmethod
    def load(cls, path: Path | None, env: Mapping[str, str] | None = None) -> PipelineConfig:
        """Defaults, then the TOML file (``None``: none), then the environment."""
        data: dict[str, Any] = {}
        where = "defaults"
        if path is not None:
            where = str(path)
            try:
                data = tomllib.loads(path.read_text())
            except OSError as exc:
                raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        sections = {f.name: f for f in dataclasses.fields(cls)}
        for name in data:
            if name not in sections:
                raise ConfigError(f"{where}: unknown section [{name}]")
        env = os.environ if env is None else env
        prefix = ENV_PREFIX + "__"
        overrides: dict[str, dict[str, str]] = {}
        for key, value in env.items():
            if not key.startswith(prefix):
                continue
            parts = key[len(prefix):].lower().split("__")
            if len(parts) != 2 or parts[0] not in sections:
                raise ConfigError(f"environment variable {key} names no setting")
            overrides.setdefault(parts[0], {})[parts[1]] = value
        made = {}
        for name in sections:
            made[name] = _section(_SECTIONS[name], data.get(name, {}),
                                  overrides.get(name, {}), f"{where} [{name}]", name)
        return cls(**made)


_SECTIONS: dict[str, type[Any]] = {
    "spark": SparkSettings, "inputs": InputSettings, "jobs": JobSettings,
    "report": ReportSettings, "apply": ApplySettings,
}


def _section(kind: type[Any], values: Any, env: dict[str, str], where: str, name: str
             ) -> Any:
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: expected a table")
    fields = {f.name: f for f in dataclasses.fields(kind)}
    converted: dict[str, Any] = {}
    for key, value in values.items():
        if key not in fields:
            raise ConfigError(f"{where}: unknown key {key!r}")
        converted[key] = _convert(value, fields[key].type, f"{where} {key}")
    for key, value in env.items():
        if key not in fields:
            raise ConfigError(f"environment variable {ENV_PREFIX}__{name.upper()}__"
                              f"{key.upper()} names no setting")
        converted[key] = _convert(value, fields[key].type, f"environment {key}")
    return kind(**converted)


def _convert(value: Any, annotation: Any, where: str) -> Any:
    """Check a TOML value, or parse an environment string, against a field's type."""
    text = isinstance(value, str)
    if annotation == "bool":
        if text and value.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return value.lower() in ("1", "true", "yes", "on")
        if isinstance(value, bool):
            return value
    elif annotation == "int":
        try:
            if text or (isinstance(value, int) and not isinstance(value, bool)):
                return int(value)
        except ValueError:
            pass
    elif annotation == "float":
        try:
            if text or (isinstance(value, int | float) and not isinstance(value, bool)):
                return float(value)
        except ValueError:
            pass
    elif annotation == "str":
        if text:
            return value
    elif annotation == "tuple[str, ...]":
        if text:
            return tuple(item.strip() for item in value.split(",") if item.strip())
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return tuple(value)
    else:  # pragma: no cover - a field type this loader does not know is a programming error
        raise TypeError(f"unsupported setting type {annotation!r}")
    raise ConfigError(f"{where}: expected {annotation}, got {value!r}")

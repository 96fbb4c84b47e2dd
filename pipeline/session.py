"""The one SparkSession of a command (jobs never make one), and the progress of its Spark jobs.

Local mode (``local[*]``, the default) needs nothing set up; ``spark://host:port`` runs the same
jobs on a standalone cluster, whose executors get the ``pipeline`` package shipped as a zip
(they need Python with pyspark, like any PySpark executor). Times are UTC everywhere
(``spark.sql.session.timeZone``): an hour or a date in a table is a UTC one.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from pipeline.config import SparkSettings

__all__ = ["Progress", "build_session", "spark_session"]

log = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).resolve().parent


def _package_zip() -> Path:
    """The ``pipeline`` package as a zip, for the executors of a cluster."""
    handle, name = tempfile.mkstemp(prefix="pipeline-", suffix=".zip")
    os.close(handle)
    with zipfile.ZipFile(name, "w") as archive:
        for source in sorted(PACKAGE_DIR.rglob("*.py")):
            archive.write(source, source.relative_to(PACKAGE_DIR.parent))
    return Path(name)


def build_session(settings: SparkSettings, *, max_line_bytes: int) -> SparkSession:
    """A SparkSession for ``settings`` (master, memory, JDBC jars, UTC, ...)."""
    local = settings.master.startswith("local")
    missing = [jar for jar in settings.jars if not Path(jar).is_file()]
    if missing:
        raise FileNotFoundError(
            f"JDBC driver jar(s) missing: {', '.join(missing)} (Debian: apt-get install -y "
            "libpostgresql-jdbc-java libxerial-sqlite-jdbc-java; bin/pipeline installs them "
            "when run as root)")
    driver_host = settings.driver_host or ("127.0.0.1" if local else "")
    if local:  # the driver's JVM binds to loopback only (and does not warn about the host)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = f"-Dlog4j2.configurationFile={(PACKAGE_DIR / 'log4j2.properties').as_uri()}"
    builder = (SparkSession.builder.master(settings.master).appName(settings.app_name)
               .config("spark.driver.memory", settings.driver_memory)
               .config("spark.driver.extraJavaOptions", log4j)
               .config("spark.jars", ",".join(settings.jars))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", str(settings.shuffle_partitions))
               .config("spark.sql.adaptive.enabled", "true")
               .config("spark.ui.enabled", str(settings.ui).lower())
               .config("spark.ui.showConsoleProgress", "false")
               # the executors' Python: this one (a cluster's workers need it at this path)
               .config("spark.pyspark.python", sys.executable)
               .config("spark.pyspark.driver.python", sys.executable)
               # over-long lines are skipped by Hadoop's line reader, never held in memory:
               # it keeps a line of L bytes when L + 1 (its newline) < maxlength
               .config("spark.hadoop.mapreduce.input.linerecordreader.line.maxlength",
                       str(max_line_bytes + 2))
               # damaged files never reach Spark's reader (pipeline.readers checks them
               # first); one changed meanwhile fails its task instead of vanishing
               .config("spark.sql.files.ignoreCorruptFiles", "false")
               .config("spark.sql.parquet.compression.codec", "zstd"))
    if driver_host:
        builder = (builder.config("spark.driver.host", driver_host)
                   .config("spark.driver.bindAddress", driver_host))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if not local:
        spark.sparkContext.addPyFile(str(_package_zip()))
    log.info("Spark %s session on %s (%d cores for tasks, shuffle partitions %d)",
             spark.version, settings.master, spark.sparkContext.defaultParallelism,
             settings.shuffle_partitions)
    return spark


@contextmanager
def spark_session(settings: SparkSettings, *, max_line_bytes: int
                  ) -> Iterator[tuple[SparkSession, Progress]]:
    """A session for one command, stopped at the end, with progress lines while jobs run."""
    spark = build_session(settings, max_line_bytes=max_line_bytes)
    progress = Progress(spark, settings.progress_interval_s)
    progress.start()
    try:
        yield spark, progress
    finally:
        progress.stop()
        spark.stop()


class Progress:
    """Logs each step of a command (start, end, seconds taken) and, every ``interval_s``
    seconds while a step runs, its Spark stages (tasks done / total)."""

    def __init__(self, spark: SparkSession, interval_s: float) -> None:
        self.spark = spark
        self.interval_s = interval_s
        self.current = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """One step: its Spark jobs carry ``name`` (as seen in the UI) and it is logged."""
        self.current = name
        self.spark.sparkContext.setJobDescription(name)
        started = time.monotonic()
        log.info("%s ...", name)
        try:
            yield
        finally:
            self.spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
            self.current = ""
        log.info("%s: done in %.1f s", name, time.monotonic() - started)

    def together(self, *actions: Callable[[], object]) -> None:
        """Run independent Spark actions (writes of tables) at once, each from a thread of
        its own: Spark schedules their jobs side by side, so the fixed cost of a small job
        (scheduling, committing its files) overlaps instead of adding up. The first failure
        is raised once all have ended."""
        description = self.current

        def run(action: Callable[[], object]) -> object:
            self.spark.sparkContext.setJobDescription(description)  # per thread
            return action()

        with ThreadPoolExecutor(max_workers=len(actions), thread_name_prefix="spark-job") as pool:
            futures = [pool.submit(run, action) for action in actions]
        for future in futures:
            future.result()

    def start(self) -> None:
        if self.interval_s > 0:
            self._thread = threading.Thread(target=self._run, name="spark-progress", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.report()
            except Exception as exc:  # the session is stopping: no more progress to show
                log.debug("progress: %s", exc)
                return

    def report(self) -> None:
        tracker = self.spark.sparkContext.statusTracker()
        for stage_id in tracker.getActiveStageIds():
            stage = tracker.getStageInfo(stage_id)
            if stage is None:
                continue
            log.info("%s: stage %d (%s): %d/%d tasks done, %d running",
                     self.current or "spark", stage_id, stage.name.split(" at ")[0],
                     stage.numCompletedTasks, stage.numTasks, stage.numActiveTasks)

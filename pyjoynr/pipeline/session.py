"""The one SparkSession of a command (jobs never make one), and the progress of its Spark jobs.

Local mode (``local[*]``, the default) needs nothing set up; ``spark://host:port`` runs the same
jobs on a standalone cluster, whose executors get the ``pipeline`` package shipped as a zip
(they need Python with pyspark, like any PySpark executor). Times are UTC everywhere
(``spark.sql.session.timeZone``): an hour or a date in a table is a UTC one.

Spark's own noise stays out of the user's output: the JVM logs warnings and errors only
(``log4j2.properties``), its standard error passes through a filter that drops the lines every
start prints and that say nothing about the run (:data:`JVM_NOISE`: the incubator module Spark
always loads), plan strings are not truncated (no warning about it), and progress lines name
the pipeline's step, never Spark's internal call sites.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from pyjoynr.pipeline.config import SparkSettings

__all__ = ["JVM_NOISE", "Progress", "build_session", "spark_session"]

log = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).resolve().parent


def _package_zip() -> Path:
    """The ``pyjoynr.pipeline`` package (and ``pyjoynr/__init__.py``, which imports nothing) as
    a zip, for the executors of a cluster."""
    handle, name = tempfile.mkstemp(prefix="pipeline-", suffix=".zip")
    os.close(handle)
    top = PACKAGE_DIR.parent
    with zipfile.ZipFile(name, "w") as archive:
        archive.write(top / "__init__.py", Path(top.name) / "__init__.py")
        for source in sorted(PACKAGE_DIR.rglob("*.py")):
            archive.write(source, source.relative_to(top.parent))
    return Path(name)


#: lines of the driver JVM's standard error that are dropped (logged at DEBUG): the JVM's
#: warning about the incubator module Spark's launcher always adds (--add-modules
#: jdk.incubator.vector), printed by the JVM itself at every start, whatever log4j says
JVM_NOISE = (re.compile(rb"WARNING: Using incubator modules: "),)


def _forward_jvm_stderr(read_fd: int) -> None:
    """Pass the JVM's standard error on to ours, line by line, less :data:`JVM_NOISE`; ends
    when the JVM has exited."""
    with os.fdopen(read_fd, "rb") as stream:
        for line in stream:
            if any(noise.match(line) for noise in JVM_NOISE):
                log.debug("JVM: %s", line.decode("utf-8", "replace").rstrip())
                continue
            try:
                sys.stderr.write(line.decode("utf-8", "replace"))
                sys.stderr.flush()
            except (OSError, ValueError):  # our stderr is closed (the process is ending)
                pass


def _start_jvm(conf: SparkConf) -> None:
    """Start the driver JVM (the py4j gateway) with ``conf``, its standard error through
    :func:`_forward_jvm_stderr`; nothing when this process has one already."""
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    read_fd, write_fd = os.pipe()
    threading.Thread(target=_forward_jvm_stderr, args=(read_fd,), name="jvm-stderr",
                     daemon=True).start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_fd})
    finally:
        os.close(write_fd)  # the JVM holds its own copy: the filter ends when the JVM does
    SparkContext._ensure_initialized(gateway=gateway)


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
    options: dict[str, bool | float | int | str | None] = {
        "spark.master": settings.master,
        "spark.app.name": settings.app_name,
        "spark.driver.memory": settings.driver_memory,
        "spark.driver.extraJavaOptions": log4j,
        "spark.jars": ",".join(settings.jars),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.enabled": str(settings.ui).lower(),
        "spark.ui.showConsoleProgress": "false",
        # plans are shown whole (the directory's rows have more than the default 25 fields;
        # a cut plan string costs a warning and helps nobody)
        "spark.sql.debug.maxToStringFields": "1000",
        # the executors' Python: this one (a cluster's workers need it at this path)
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        # over-long lines are skipped by Hadoop's line reader, never held in memory: it keeps
        # a line of L bytes when L + 1 (its newline) < maxlength
        "spark.hadoop.mapreduce.input.linerecordreader.line.maxlength":
            str(max_line_bytes + 2),
        # damaged files never reach Spark's reader (pipeline.readers checks them first); one
        # changed meanwhile fails its task instead of vanishing
        "spark.sql.files.ignoreCorruptFiles": "false",
        "spark.sql.parquet.compression.codec": "zstd",
    }
    if driver_host:
        options["spark.driver.host"] = driver_host
        options["spark.driver.bindAddress"] = driver_host
    _start_jvm(SparkConf(loadDefaults=False).setAll(
        [(key, str(value)) for key, value in options.items()]))
    spark = SparkSession.builder.config(map=options).getOrCreate()
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
        """A line per running Spark stage of the current step, named by the step (Spark's own
        name of a stage is a call site in its code, e.g. ``$anonfun$withThreadLocalCaptured$1``:
        no help to anyone). Between steps (small reads of small tables) nothing is said."""
        step = self.current  # read once: the step may end meanwhile
        if not step:
            return
        tracker = self.spark.sparkContext.statusTracker()
        for stage_id in sorted(tracker.getActiveStageIds()):
            stage = tracker.getStageInfo(stage_id)
            if stage is None:
                continue
            log.info("%s: stage %d: %d/%d tasks done, %d running", step, stage_id,
                     stage.numCompletedTasks, stage.numTasks, stage.numActiveTasks)

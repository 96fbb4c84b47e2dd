"""The pipeline unchanged on a Spark cluster: a standalone master and worker (from the pip
package, SPARK_HOME = the pyspark package) on loopback, and ``bin/pipeline report --master
spark://...`` run against it as a process; its tables hold the same figures as in local mode.
Also the command line itself: --help on each job, missing inputs as clear errors (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from pyjoynr.testing.cluster import free_port
from tests.pipeline import fleet
from tests.pipeline.conftest import FleetInputs

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).resolve().parent

pytestmark = pytest.mark.timeout(420)


def _wait(condition: object, what: str, timeout_s: float, process: subprocess.Popen[bytes],
          log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what}: the process exited with {process.returncode}:\n"
                                 f"{log.read_text(errors='replace')[-3000:]}")
        try:
            if condition():  # type: ignore[operator]
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{what} not reached within {timeout_s} s:\n"
                         f"{log.read_text(errors='replace')[-3000:]}")


class StandaloneCluster:
    """A Spark standalone master and one worker (2 cores, 2 GB) on 127.0.0.1."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.port, self.ui_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
                    "SPARK_WORKER_DIR": str(base / "work"), "SPARK_LOG_DIR": str(base / "logs"),
                    "SPARK_NO_DAEMONIZE": "1"}

    def _start(self, name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.base / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args], env=self.env, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.processes.append(process)
        return process, log

    def _workers_alive(self) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
            state = json.load(r)
        return any(w.get("state") == "ALIVE" for w in state.get("workers", []))

    def start(self) -> None:
        master, master_log = self._start(
            "master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(self.port), "--webui-port", str(self.ui_port))
        _wait(lambda: urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/",
                                             timeout=2), "the master's web UI", 60, master,
              master_log)
        self._start("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                    "--port", str(free_port()), "--webui-port", str(free_port()),
                    "--cores", "2", "--memory", "2g", self.url)
        _wait(self._workers_alive, "a worker registered with the master", 60, master,
              master_log)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def pipeline(*args: str, timeout_s: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyjoynr.pipeline", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout_s, check=False,
                          env={**os.environ, **env})


def test_the_report_on_a_standalone_cluster_gives_the_local_figures(
        spark_cluster: StandaloneCluster, fleet_inputs: FleetInputs, spark: SparkSession,
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = pipeline("report", "--master", spark_cluster.url, "--sqlite",
                    str(fleet_inputs.sqlite), "--audit", str(fleet_inputs.audit_dir),
                    "--snapshots", str(fleet_inputs.snapshot_dir), "--out", str(out),
                    "--now-ms", str(fleet.NOW), "--stale-after-h", str(fleet.STALE_AFTER_H),
                    timeout_s=360,
                    JOYNR_PIPELINE__SPARK__DRIVER_HOST="127.0.0.1",
                    JOYNR_PIPELINE__SPARK__DRIVER_MEMORY="1g",
                    JOYNR_PIPELINE__SPARK__PROGRESS_INTERVAL_S="2")
    assert done.returncode == 0, done.stderr[-5000:]
    assert f"Spark {pyspark.__version__} session on {spark_cluster.url}" in done.stderr
    # progress: every step says when it starts and how long it took
    assert "ingest: checking 6 file(s) ..." in done.stderr
    assert "traffic: hourly, drops, summary; senders; refusals: done in" in done.stderr
    assert (out / "report" / "index.html").exists()

    def table(name: str) -> list[dict[str, object]]:
        return [r.asDict(recursive=True) for r in spark.read.parquet(str(out / name)).collect()]

    # the tables the cluster wrote hold the figures the local-mode tests assert
    directory = table("directory/summary")[0]
    assert {k: directory[k] for k in fleet.DIRECTORY_SUMMARY} == fleet.DIRECTORY_SUMMARY
    assert table("traffic/summary")[0] == fleet.TRAFFIC_SUMMARY
    hourly = {(r["domain"], r["interface_name"], r["gbid"], r["hour_ms"]):
              (r["messages"], r["delivered"], r["queued"], r["dropped"], r["refused"],
               r["bytes"], r["queued_p50_ms"], r["queued_p99_ms"])
              for r in spark.read.parquet(str(out / "traffic/hourly"))
              .selectExpr("*", "unix_millis(hour) AS hour_ms").collect()}
    assert hourly == fleet.HOURLY
    assert {(r["proc"], r["participant_id"]): r["drift"]
            for r in table("drift/rows")} == fleet.DRIFT
    assert {(r["gbid"], r["participant_id"])
            for r in table("housekeeping/planned_entries")} == fleet.PLANNED
    assert {r["status"] for r in table("ingest_files")} == {"ok"}


def test_help_of_every_job() -> None:
    main = pipeline("--help")
    assert main.returncode == 0 and "JOB" in main.stdout
    for job, says in (("ingest", "audit-*.jsonl.gz"), ("directory", "stale"),
                      ("traffic", "p50/p99"), ("drift", "snapshots"),
                      ("housekeeping", "--apply"), ("report", "index.html")):
        shown = pipeline(job, "--help")
        assert shown.returncode == 0, shown.stderr
        assert says in shown.stdout and "--master" in shown.stdout, (job, shown.stdout)
        assert "JOYNR_PIPELINE__<SECTION>__<KEY>" in shown.stdout


def test_missing_inputs_stop_the_command_with_a_clear_message(tmp_path: Path) -> None:
    for args, says in (
            (("directory", "--sqlite", str(tmp_path / "none.sqlite")),
             "none.sqlite does not exist"),
            (("traffic",), "give the GCD store: either --sqlite FILE or --postgres DSN"),
            (("ingest",), "nothing to ingest"),
            (("ingest", "--audit", str(tmp_path / "nowhere")), "nowhere does not exist"),
            (("report", "--sqlite", str(tmp_path / "x"), "--postgres", "postgresql://h/db"),
             "not both")):
        done = pipeline(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert says in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    env_typo = pipeline("ingest", "--audit", str(tmp_path), JOYNR_PIPELINE__SPARK__MASTR="x")
    assert env_typo.returncode == 2 and "JOYNR_PIPELINE__SPARK__MASTR" in env_typo.stderr

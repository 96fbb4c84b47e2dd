"""housekeeping --apply through a running GCD: mosquitto, a GCD instance (SQLite store), a
cluster controller with a libjoynr provider; the plan is carried out over the GCD's joynr
interface and removes exactly the planned entries (less the ones that came back to life
between planning and applying), nothing else."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.gcd.interface import GCD_DOMAIN, GCD_PARTICIPANT_ID, GlobalCapabilitiesDirectory
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.gcd.store import StoredEntry
from pyjoynr.libjoynr import ProviderQos, ProviderScope, connect
from pyjoynr.libjoynr.advanced import Arbitration
from pyjoynr.pipeline import commands
from pyjoynr.pipeline.readers import directory_source
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import ClusterController
from tests.pipeline.fleet import HOUR, MINUTE
from tests.support.mqtt_cluster import WAIT_S, mqtt_cc_config
from tests.support.radio import RadioProvider

pytestmark = [pytest.mark.network, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
OWN, OTHER = "joynrdefaultgbid", "other"
FAR = 40 * 24 * HOUR


def row(gbid: str, pid: str, cc: str, last_seen: int, expiry: int) -> StoredEntry:
    return StoredEntry(gbid, pid, "d.house", "test/Thing", 1, 0, 0, "GLOBAL", True, "[]",
                       last_seen, expiry, "", f"joynr/cc/{cc}", cc)


async def keys(path: Path, pids: list[str]) -> set[tuple[str, str]]:
    """The (gbid, participant) rows of the store, expired or not, read through its API."""
    store = SqliteStore(path)
    await store.open()
    try:
        return {(r.gbid, r.participant_id) for pid in pids
                for r in await store.find_participant(pid, 0)}
    finally:
        await store.close()


async def run_cli(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pyjoynr.pipeline", *args, cwd=ROOT, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "JOYNR_PIPELINE__SPARK__MASTER": "local[2]",
             "JOYNR_PIPELINE__SPARK__SHUFFLE_PARTITIONS": "4"})
    try:
        out, _ = await asyncio.wait_for(process.communicate(), 240)
    except TimeoutError:
        process.kill()
        raise
    assert process.returncode is not None
    return process.returncode, out.decode(errors="replace")


async def test_apply_removes_exactly_the_planned_entries(make_run: Any, tmp_path: Path) -> None:
    now = int(time.time() * 1000)
    sqlite = tmp_path / "gcd.sqlite"
    rows = [
        row(OWN, "s1", "cc-gone-1", now - 48 * HOUR, now + FAR),     # stale: removeStale
        row(OTHER, "s1", "cc-gone-1", now - 50 * HOUR, now + FAR),   # (in every GBID)
        row(OWN, "s2", "cc-gone-2", now - 30 * HOUR, now - HOUR),    # stale and expired
        row(OWN, "s3", "cc-gone-3", now - 72 * HOUR, now + FAR),     # stale, touched later
        row(OWN, "e1", "cc-busy", now - HOUR, now - 10 * MINUTE),    # expired: remove
        row(OWN, "e2", "cc-busy", now - HOUR, now - 10 * MINUTE),    # expired, touched later
        row(OWN, "k1", "cc-busy", now - HOUR, now + FAR),            # live: stays
        row(OTHER, "k2", "cc-busy", now - HOUR, now + FAR),          # live: stays
    ]
    pids = sorted({r.participant_id for r in rows})
    store = SqliteStore(sqlite)
    await store.open()
    await store.add(rows)  # through the store's API, before the GCD loads it
    await store.close()

    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "broker"))
        gcd = await stack.enter_async_context(GcdService(GcdSettings(
            gbid=OWN, broker_url=broker.url, valid_gbids=[OWN, OTHER], store="sqlite",
            sqlite_path=sqlite, purge_interval_s=3600)))  # no purge of its own meanwhile
        await gcd.mqtt.wait_connected(WAIT_S)
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-live", {OWN: broker.url})))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        runtime = await connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
        stack.push_async_callback(runtime.close)
        provider_pid = await runtime.register_provider(
            "d.house", RadioProvider(), qos=ProviderQos(scope=ProviderScope.GLOBAL),
            await_global_registration=True)
        pids.append(provider_pid)
        before = await keys(sqlite, pids)
        assert len(before) == len(rows) + 1

        # the plan, read from the store the GCD is running on; Spark's steps run in a thread
        # of their own: they take seconds (more than a minute on a loaded machine), and the
        # GCD and the cluster controller on this event loop must keep serving their MQTT and
        # websocket connections meanwhile (a broker drops a client silent for 1.5 keep-alives)
        run = make_run(tmp_path / "out", now_ms=now)

        def plan() -> tuple[Path, set[tuple[str, str]]]:
            entries = commands.load_directory(run, directory_source(str(sqlite), ""))
            try:
                plan_dir = commands.housekeeping(run, entries, directory_source(str(sqlite), ""))
            finally:
                entries.unpersist()
            return plan_dir, {(r["gbid"], r["participant_id"]) for r in run.spark.read.parquet(
                str(plan_dir / "planned_entries")).collect()}

        plan_dir, planned = await asyncio.to_thread(plan)
        assert planned == {(OWN, "s1"), (OTHER, "s1"), (OWN, "s2"), (OWN, "s3"), (OWN, "e1"),
                           (OWN, "e2")}

        # between planning and applying, two planned entries come back to life: touched by
        # their cluster controllers (as a CC's periodic touch does, through the GCD)
        gcd_proxy: Any = await runtime.build_proxy(
            GlobalCapabilitiesDirectory, GCD_DOMAIN,
            arbitration=Arbitration.fixed(GCD_PARTICIPANT_ID), ttl_ms=10_000)
        await gcd_proxy.touch_participants("cc-gone-3", ["s3"])
        await gcd_proxy.touch_participants("cc-busy", ["e2"])

        # 6 of the directory's 9 entries: more than [housekeeping] max_purge_share (0.1), so
        # refused, with the plan shown, until told otherwise; nothing is removed meanwhile
        code, out = await run_cli("housekeeping", "--apply", "--plan", str(plan_dir),
                                  "--cc", cc.websocket_address.url)
        assert code == 2, out
        assert "apply: it removes 6 entries of the directory's 9 (66.7 %)" in out
        assert "apply:   cc-gone-1: 2 entries in joynrdefaultgbid, other" in out
        assert "refused: the plan removes 6 of the directory's 9 entries" in out
        assert not (plan_dir / "apply-result.jsonl").exists()
        assert await keys(sqlite, pids) == before
        code, out = await run_cli("housekeeping", "--apply", "--plan", str(plan_dir),
                                  "--cc", cc.websocket_address.url, "--allow-large-purge")
        assert code == 0, out
        results = [json.loads(line) for line in
                   (plan_dir / "apply-result.jsonl").read_text().splitlines()]
        outcomes = sorted((r["action"], r["participant_id"] if r["action"] == "remove"
                           else r["cluster_controller_id"], r["outcome"]) for r in results)
        assert outcomes == [
            ("remove", "e1", "done"), ("remove", "e2", "skipped-live"),
            ("removeStale", "cc-gone-1", "done"), ("removeStale", "cc-gone-2", "done"),
            ("removeStale", "cc-gone-3", "done")]
        after = await keys(sqlite, pids)
        assert after == before - (planned - {(OWN, "s3"), (OWN, "e2")})
        assert (OWN, provider_pid) in after

        # planning and applying in one command: nothing is left to do
        code, out = await run_cli("housekeeping", "--sqlite", str(sqlite), "--out",
                                  str(tmp_path / "out2"), "--apply", "--cc",
                                  f"{OWN}={cc.websocket_address.url}")
        assert code == 0, out
        assert "0 removeStale and 0 remove call(s) planned" in out
        assert await keys(sqlite, pids) == after


def test_apply_without_a_plan_or_a_cluster_controller_is_a_clear_error(tmp_path: Path) -> None:
    import subprocess  # noqa: PLC0415

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pyjoynr.pipeline", *args], cwd=ROOT,
                              text=True, capture_output=True, timeout=60, check=False)

    missing = cli("housekeeping", "--apply", "--plan", str(tmp_path), "--cc", "ws://127.0.0.1:9/")
    assert missing.returncode == 2
    assert "no housekeeping plan at" in missing.stderr
    (tmp_path / "plan.jsonl").write_text("")
    no_cc = cli("housekeeping", "--apply", "--plan", str(tmp_path))
    assert no_cc.returncode == 2 and "needs a cluster controller" in no_cc.stderr

"""Routing table snapshots (docs/records.md, snapshot v1): periodic ones of a real CC compared
row by row with its live routing table, the on-demand command against a running CC process,
the command's refusals, the bound on kept files."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.cluster_controller.snapshots import write_snapshot
from pyjoynr.libjoynr import ProviderQos, ProviderScope
from pyjoynr.libjoynr import connect as joynr_connect
from pyjoynr.runtime import records
from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.routing import NO_EXPIRY_MS, RoutingEntry
from pyjoynr.testing.cluster import cc_config, eventually
from tests.support.audit import read_jsonl_gz
from tests.support.mqtt_cluster import write_provisioning
from tests.support.processes import wait_for_line
from tests.support.radio import RadioProvider

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 10.0


def provisioning(tmp_path: Path) -> Path:
    return write_provisioning(tmp_path / "provisioning.toml", {
        "participant_id": "far-radio", "domain": "far", "interface": "test/Radio",
        "version": "1.2", "gbid": "far-gbid", "topic": "joynr/cc/far-cc"})


FAR_ROW = {"participant_id": "far-radio", "kind": "mqtt", "address": "far-gbid/joynr/cc/far-cc",
           "gbid": "far-gbid", "topic": "joynr/cc/far-cc", "global": True,
           "expiry_ms": NO_EXPIRY_MS, "sticky": True}


def expected(taken_ms: int, proc: str, entries: list[tuple[str, RoutingEntry]]
             ) -> list[dict[str, Any]]:
    return sorted((records.snapshot_record(taken_ms=taken_ms, proc=proc, participant_id=pid,
                                           entry=entry) for pid, entry in entries),
                  key=lambda row: row["participant_id"])


def newest(directory: Path) -> Path | None:
    files = sorted(directory.glob("routing-*.jsonl.gz"), key=lambda p: p.stat().st_mtime_ns)
    return files[-1] if files else None


async def test_periodic_snapshots_hold_exactly_the_live_routing_table(tmp_path: Path) -> None:
    snapshot_dir = tmp_path / "snapshots"
    async with ClusterController(cc_config(
            tmp_path, routing_snapshots__interval_s="0.1",
            routing_snapshots__dir=str(snapshot_dir),
            discovery__provisioning_file=str(provisioning(tmp_path)))) as cc:
        rt = await joynr_connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
        provider_pid = await rt.register_provider("snap.test", RadioProvider(),
                                                  qos=ProviderQos(scope=ProviderScope.LOCAL))

        def matches() -> bool:
            path = newest(snapshot_dir)
            if path is None:
                return False
            rows = sorted(read_jsonl_gz(path), key=lambda row: row["participant_id"])
            return bool(rows) and rows == expected(rows[0]["taken_ms"], cc.id,
                                                   list(cc.router.routing_entries()))

        # a snapshot taken after the registration equals the table row for row
        await eventually(matches, WAIT_S, "a snapshot equal to the live table")
        rows = {row["participant_id"]: row for row in read_jsonl_gz(newest(snapshot_dir))}
        taken = {row["taken_ms"] for row in rows.values()}
        assert len(taken) == 1
        assert all(list(row) == list(records.SNAPSHOT_FIELDS) for row in rows.values())
        assert {k: v for k, v in rows["far-radio"].items()
                if k not in ("v", "taken_ms", "proc")} == FAR_ROW
        provider_row = rows[provider_pid]
        assert provider_row["kind"] == "websocket"
        assert provider_row["address"] == rt.client_id
        assert provider_row["sticky"] is False and provider_row["gbid"] is None
        for system in (cc.config.system.routing_participant_id,
                       cc.config.system.discovery_participant_id):
            assert rows[system]["kind"] == "inprocess"
            assert rows[system]["address"] == "inprocess:ProviderSkeleton"
        assert cc.snapshots.written >= 1 and cc.snapshots.failed == 0
        await rt.close()
    assert not list(snapshot_dir.glob("*.part"))


async def test_take_writes_one_snapshot_now(tmp_path: Path) -> None:
    async with ClusterController(cc_config(tmp_path)) as cc:  # periodic snapshots off
        path = await cc.snapshots.take()
        assert path.parent == tmp_path / "routing-snapshots"  # the default directory
        assert re.fullmatch(rf"routing-{cc.id}-\d{{8}}T\d{{6}}Z-\d{{3}}\.jsonl\.gz", path.name)
        rows = read_jsonl_gz(path)
        assert sorted(rows, key=lambda row: row["participant_id"]) == expected(
            rows[0]["taken_ms"], cc.id, list(cc.router.routing_entries()))
        assert cc.snapshots.written == 1


def test_old_snapshots_beyond_max_files_are_deleted(tmp_path: Path) -> None:
    entry = RoutingEntry(WebSocketClientAddress("c"), False, NO_EXPIRY_MS, False)
    other = tmp_path / "routing-cc-other-20200101T000000Z.jsonl.gz"
    other.write_bytes(b"")  # another CC's: never touched
    paths = [write_snapshot(tmp_path, "cc-1", 1_700_000_000_000 + i * 1000, [("p", entry)],
                            max_files=3) for i in range(5)]
    assert sorted(tmp_path.glob("routing-cc-1-*")) == paths[2:]
    assert other.exists()
    assert read_jsonl_gz(paths[-1]) == [records.snapshot_record(
        taken_ms=1_700_000_004_000, proc="cc-1", participant_id="p", entry=entry)]
    # an empty table: an empty file
    empty = write_snapshot(tmp_path, "cc-2", 1_700_000_000_000, [])
    assert read_jsonl_gz(empty) == []


# ---------------------------------------------------------------------- a CC process


def process_env(tmp_path: Path) -> dict[str, str]:
    """A CC with no MQTT, no embedded broker or GCD, the provisioned far radio."""
    return {**os.environ,
            "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(tmp_path / "cc"),
            "JOYNR_CC__WEBSOCKET__PORT": "0",
            "JOYNR_CC__EMBEDDED_BROKER__ENABLED": "false",
            "JOYNR_CC__EMBEDDED_GCD__ENABLED": "false",
            "JOYNR_CC__MQTT__BACKENDS": "{}",
            "JOYNR_CC__DISCOVERY__PROVISIONING_FILE": str(provisioning(tmp_path)),
            "JOYNR_CC__ROUTING_SNAPSHOTS__INTERVAL_S": "0.5"}


def snapshot_command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyjoynr.cluster_controller", "snapshot", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
                          check=False)


async def test_the_snapshot_command_against_a_running_cluster_controller(tmp_path: Path
                                                                         ) -> None:
    env = process_env(tmp_path)
    proc = subprocess.Popen(  # noqa: ASYNC220 - started once, read line by line below
        [sys.executable, "-m", "pyjoynr.cluster_controller"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        started = wait_for_line(proc, "cluster controller cc-")[-1]
        url = re.search(r"connect to (ws://\S+);", started)
        assert url is not None, started
        cc_id = (tmp_path / "cc" / "cluster-controller-id").read_text().strip()
        pid_file = tmp_path / "cc" / "cluster-controller.pid"
        assert int(pid_file.read_text()) == proc.pid
        rt = await joynr_connect(url.group(1), timeout_ms=int(WAIT_S * 1000))
        provider_pid = await rt.register_provider("snap.process", RadioProvider())

        done = await asyncio.to_thread(snapshot_command, env)
        assert done.returncode == 0, done.stderr
        path = Path(done.stdout.strip())
        assert path.parent == tmp_path / "cc" / "routing-snapshots"
        assert path.name.startswith(f"routing-{cc_id}-")
        rows = {row["participant_id"]: row for row in read_jsonl_gz(path)}
        # exactly: the CC's two system providers, the provisioned radio, and every
        # participant the runtime registered with it (its in-process ones), at its connection
        own = {pid for pid, entry in rt.core.router.routing_entries()
               if entry.address.type_name == "InProcessAddress"}
        assert set(rows) == {"CC.RoutingProvider.ParticipantId",
                             "CC.DiscoveryProvider.ParticipantId",
                             "far-radio"} | own
        assert provider_pid in own
        assert {k: v for k, v in rows["far-radio"].items()
                if k not in ("v", "taken_ms", "proc")} == FAR_ROW
        for pid in own:
            assert (rows[pid]["kind"], rows[pid]["address"], rows[pid]["sticky"]) == (
                "websocket", rt.client_id, False)
        assert {row["proc"] for row in rows.values()} == {cc_id}

        # on demand means now: a provider registered since is in the next snapshot
        later_pid = await rt.register_provider("snap.process.later", RadioProvider())
        again = await asyncio.to_thread(snapshot_command, env, "--pid", str(proc.pid))
        assert again.returncode == 0, again.stderr
        later_path = Path(again.stdout.strip())
        later_rows = {row["participant_id"]: row for row in read_jsonl_gz(later_path)}
        assert later_pid in later_rows and later_pid not in rows
        # the periodic snapshots go on beside the ones on demand
        taken = next(iter(later_rows.values()))["taken_ms"]

        def periodic_after() -> bool:
            return any(read_jsonl_gz(p)[0]["taken_ms"] > taken
                       for p in later_path.parent.glob("routing-*.jsonl.gz"))

        await eventually(periodic_after, WAIT_S, "a periodic snapshot")
        await rt.close()

        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.to_thread(proc.communicate, timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    assert "routing snapshot:" in out
    assert not pid_file.exists()  # removed at the stop


def test_the_snapshot_command_refuses_what_is_not_a_cluster_controller(tmp_path: Path) -> None:
    env = process_env(tmp_path)
    missing = snapshot_command(env)
    assert missing.returncode == 1
    assert "no cluster controller process id" in missing.stderr
    # a stale pid file naming some other process: SIGUSR1 would end it, so nothing is sent
    other = subprocess.Popen(["sleep", "30"])
    try:
        pid_file = tmp_path / "cc" / "cluster-controller.pid"
        pid_file.parent.mkdir(parents=True)
        pid_file.write_text(f"{other.pid}\n")
        stale = snapshot_command(env)
        assert stale.returncode == 1
        assert f"process {other.pid} is not a running cluster controller" in stale.stderr
        assert other.poll() is None  # still running
    finally:
        other.kill()
        other.wait()
    bad = snapshot_command({**env, "JOYNR_CC__ROUTING_SNAPSHOTS__INTERVAL_S": "-1"})
    assert bad.returncode == 2 and "bad configuration" in bad.stderr


def test_mqtt_rows_keep_gbid_and_topic_apart() -> None:
    entry = RoutingEntry(MqttAddress("g", "a/b/c"), True, 7, False)
    row = records.snapshot_record(taken_ms=1, proc="p", participant_id="x", entry=entry)
    assert (row["address"], row["gbid"], row["topic"]) == ("g/a/b/c", "g", "a/b/c")

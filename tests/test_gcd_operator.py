"""What an operator of a GCD cluster sees, on real GCD processes, PostgreSQL and mosquitto:
instances of one backend told apart everywhere (logs, metrics, status page, MQTT client id,
database sessions), the store's row count named for what it is and dated, per-call lines at
DEBUG and failures rate-limited with counts, and readiness while the database is down."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.interface import GCD_DOMAIN
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory as Gcd
from pyjoynr.gcd.postgres_store import PostgresStore
from pyjoynr.gcd.store import StoredEntry
from pyjoynr.runtime.errors import ProviderRuntimeError
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.postgres import PostgresServer
from tests.support.admin import (
    Answer,
    ProgramProcess,
    eventually_async,
    gcd_process,
    health,
    http_get,
    scrape,
)
from tests.support.mqtt_cluster import mqtt_cc_config
from tests.test_gcd_service import entry, gcd_provisioning

pytestmark = pytest.mark.network

GBID = "joynrdefaultgbid"
STARTED = r"GCD for \S+ started and ready: instance (\S+), "


def postgres_env(dsn: str, data_dir: Path, **more: str) -> dict[str, str]:
    return {"JOYNR_GCD__GCD__STORE": "postgres", "JOYNR_GCD__GCD__POSTGRES_DSN": dsn,
            "JOYNR_GCD__GCD__DATA_DIR": str(data_dir), **more}


async def instance_id(gcd: ProgramProcess) -> str:
    return (await gcd.wait_for(STARTED, 40)).group(1)


async def session_names(dsn: str) -> set[str]:
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        return {r[0] for r in await conn.fetch(
            "SELECT application_name FROM pg_stat_activity WHERE datname = current_database()")}
    finally:
        await conn.close()


def facts_of(status: dict[str, Any], section_id: str) -> dict[str, Any]:
    (section,) = [s for s in status["sections"] if s["id"] == section_id]
    return dict(section["facts"])


async def test_instances_of_one_backend_are_told_apart_everywhere(tmp_path: Path) -> None:
    """Two instances of one backend, started from one directory (one configuration): each
    has an id of its own, in its log lines, joynr_gcd_info, the status page, its MQTT client
    id and the names of its PostgreSQL sessions; a restarted instance keeps its id."""
    async with PostgresServer() as postgres, Mosquitto(tmp_path / "broker") as broker:
        dsn = await postgres.create_database("gcd_ids")
        env = postgres_env(dsn, tmp_path / "gcd-state",
                           JOYNR_GCD__GCD__SHARED_SUBSCRIPTION_GROUP="g")
        one = gcd_process(tmp_path, broker.url, **env)
        two = gcd_process(tmp_path, broker.url, **env)
        try:
            ids = [await instance_id(one), await instance_id(two)]
            assert ids[0] != ids[1]
            for gcd, own in zip((one, two), ids, strict=True):
                other = ids[1] if own == ids[0] else ids[0]
                out = gcd.output()
                assert f"GCD {GBID} [{own}]: index ready" in out
                assert f"[{other}]" not in out
                admin = await gcd.admin_url()
                metrics = await scrape(admin)
                assert metrics["joynr_gcd_info", {"gbid": GBID, "store": "postgres",
                                                  "cluster": "default",
                                                  "instance_id": own}] == 1
                status = (await http_get(f"{admin}/status.json")).json()
                assert status["title"] == f"GCD for {GBID}, instance {own}"
                identity = facts_of(status, "identity")
                assert identity["instance id"] == own
                assert identity["client id"] == f"gcd-{GBID}-{own}"
                assert identity["instance id kept in"].startswith(str(tmp_path / "gcd-state"))
                assert facts_of(status, "gcd-sync")["instance id"] == own
            names = await session_names(dsn)
            for own in ids:
                assert {f"joynr-gcd-{own}", f"joynr-gcd-{own}-listen"} <= names, names
            assert "joynr-gcd" not in names
            # a restart keeps the id (the other instance keeps its own)
            assert await one.astop() == 0, one.output()[-3000:]
            one = gcd_process(tmp_path, broker.url, **env)
            assert await instance_id(one) == ids[0]
        finally:
            assert await one.astop() == 0, one.output()[-3000:]
            assert await two.astop() == 0, two.output()[-3000:]
        assert f"GCD {GBID} [{ids[1]}]" in two.output()


async def test_a_configured_instance_id_and_a_bad_one(tmp_path: Path) -> None:
    async with Mosquitto(tmp_path / "broker") as broker:
        gcd = gcd_process(tmp_path, broker.url, JOYNR_GCD__GCD__INSTANCE_ID="gcd-a.1",
                          JOYNR_GCD__GCD__DATA_DIR=str(tmp_path / "unused"))
        try:
            assert await instance_id(gcd) == "gcd-a.1"
        finally:
            assert await gcd.astop() == 0, gcd.output()[-3000:]
        assert not (tmp_path / "unused").exists()  # nothing generated, nothing kept
        bad = gcd_process(tmp_path, broker.url, JOYNR_GCD__GCD__INSTANCE_ID="a b/c")
        assert await bad.exited() == 2
        assert "an instance id is 1 to 48 of" in bad.output()


def stored(pid: str) -> StoredEntry:
    return StoredEntry(GBID, pid, "d", "i", 1, 0, 0, "GLOBAL", True, "[]", 0, 2**53, "",
                       "joynr/cc/x", "x")


async def _rows_counted(admin: str, rows: int) -> dict[str, Any] | None:
    metrics = await scrape(admin)
    if (not metrics.has("joynr_gcd_store_rows_checked")
            or metrics["joynr_gcd_store_rows_checked"] != rows):
        return None
    return {"age": metrics["joynr_gcd_store_rows_checked_age_seconds"],
            "index": metrics["joynr_gcd_index_rows_checked"],
            "status": (await http_get(f"{admin}/status.json")).json()}


async def test_the_store_row_count_is_named_for_what_it_is_and_dated(tmp_path: Path) -> None:
    """Rows written by another instance reach this one's index at once, while the store's
    row count is the one of the last repair: the figure says so, with its age, and the
    index's rows at the same moment beside it; the next repair counts again."""
    async with PostgresServer() as postgres, Mosquitto(tmp_path / "broker") as broker:
        dsn = await postgres.create_database("gcd_rows")
        gcd = gcd_process(tmp_path, broker.url, **postgres_env(
            dsn, tmp_path / "state", JOYNR_GCD__GCD__REPAIR_INTERVAL_S="3",
            JOYNR_GCD__GCD__SYNC_STATS_INTERVAL_S="1"))
        writer = PostgresStore(dsn)
        await writer.open()
        try:
            await instance_id(gcd)
            admin = await gcd.admin_url()
            loaded = await eventually_async(lambda: _rows_counted(admin, 0), "the load counted")
            assert loaded["index"] == 0
            await writer.add([stored(f"p{n}") for n in range(40)])
            await eventually_async(lambda: _index_rows(admin, 40), "the index has the rows")
            counted = await eventually_async(lambda: _rows_counted(admin, 40),
                                             "the repair counted the rows", 30)
            assert counted["index"] == 40 and 0 <= counted["age"] < 10
            sync = facts_of(counted["status"], "gcd-sync")
            assert re.fullmatch(r"40 rows \d+ s ago \(at a drift repair or load; the index "
                                r"had 40 then\)", sync["store rows, last counted"]), sync
            assert "store rows" not in sync  # no undated figure
            # the periodic line of the figures says the same
            await gcd.wait_for(r"store/index_rows_checked=40/40@\d+s_ago", 10)
        finally:
            await writer.close()
            assert await gcd.astop() == 0, gcd.output()[-3000:]


async def _index_rows(admin: str, rows: int) -> bool:
    return (await scrape(admin))["joynr_gcd_index_rows"] == rows


@asynccontextmanager
async def gcd_through_a_cc(tmp_path: Path, broker: Mosquitto, **env: str
                           ) -> AsyncIterator[tuple[ProgramProcess, Any]]:
    """A GCD process on the broker and a proxy to it in an in-process cluster controller."""
    gcd = gcd_process(tmp_path, broker.url, **env)
    try:
        async with AsyncExitStack() as stack:
            await instance_id(gcd)
            cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
                tmp_path / "cc", "cc-ops", {GBID: broker.url},
                discovery__provisioning_file=str(gcd_provisioning(tmp_path / "prov.toml")))))
            assert cc.mqtt is not None
            await cc.mqtt.wait_connected(10)
            yield gcd, await cc.runtime.build_proxy(Gcd, GCD_DOMAIN, ttl_ms=10_000)
    finally:
        gcd.stop()


async def test_calls_log_at_debug_and_failures_are_rate_limited_with_counts(
        tmp_path: Path) -> None:
    """Adds and removes write no INFO line each; while the database is down, 30 refused adds
    write one ERROR line per reason and a count of the rest (at the latest when the process
    stops), and the failures are counted by operation and reason."""
    async with PostgresServer() as postgres, Mosquitto(tmp_path / "broker") as broker:
        dsn = await postgres.create_database("gcd_logs")
        async with gcd_through_a_cc(tmp_path, broker, **postgres_env(
                dsn, tmp_path / "state", JOYNR_GCD__GCD__CATCH_UP_INTERVAL_S="0.5")
                ) as (gcd, proxy):
            for n in range(10):
                await proxy.add(entry(f"ok-{n}"))
            await proxy.remove_participants([f"ok-{n}" for n in range(5)])
            assert [line for line in gcd.output().splitlines()
                    if " INFO " in line and ("added" in line or "removed" in line)] == []
            admin = await gcd.admin_url()
            await postgres.stop()
            refused = 0
            for n in range(30):
                try:
                    await proxy.add(entry(f"down-{n}"))
                except ProviderRuntimeError as exc:
                    assert "storage failure" in exc.message
                    refused += 1
            assert refused == 30
            metrics = await scrape(admin)
            failures = metrics.labelled("joynr_gcd_store_failures_total")
            assert sum(v for labels, v in failures.items()
                       if dict(labels)["operation"] == "add") == 30, failures
            ready = await health(admin, "ready")  # lookups are still served: degraded
            assert ready.status == 200 and ready.json()["degraded"] is True
            assert await gcd.astop() == 0, gcd.output()[-3000:]
        await postgres.start()
    out = gcd.output()
    full = [line for line in out.splitlines() if " ERROR " in line and ": add failed (" in line]
    reasons = {re.search(r"add failed \(([a-z-]+)\)", line).group(1)  # type: ignore[union-attr]
               for line in full}
    assert 1 <= len(full) == len(reasons) <= 3, full
    summaries = [int(m.group(1)) for m in re.finditer(
        r"(\d+) more 'add failed \([a-z-]+\)' from the store", out)]
    assert len(full) + sum(summaries) == 30, (full, summaries)


async def _degraded(admin: str) -> Answer | None:
    answer = await health(admin, "ready")
    return answer if answer.json().get("degraded") else None


async def _not_ready(admin: str) -> Answer | None:
    answer = await health(admin, "ready")
    return answer if answer.status == 503 else None


async def test_readiness_while_the_database_is_down(tmp_path: Path) -> None:
    """The database stops: an instance with the default setting stays ready (200), its body
    saying degraded, the store named as the reason, the index loaded; one set to
    ready_when_store_down = false is not ready (503). Both are ready again once the database
    is back."""
    async with PostgresServer() as postgres, Mosquitto(tmp_path / "broker") as broker:
        dsn = await postgres.create_database("gcd_ready")
        common = {"JOYNR_GCD__ADMIN__PROBE_MAX_AGE_S": "0",
                  "JOYNR_GCD__ADMIN__PROBE_TIMEOUT_S": "1"}
        kept = gcd_process(tmp_path, broker.url,
                           **postgres_env(dsn, tmp_path / "a", **common))
        strict = gcd_process(tmp_path, broker.url, **postgres_env(
            dsn, tmp_path / "b", JOYNR_GCD__GCD__READY_WHEN_STORE_DOWN="false", **common))
        try:
            admins = [await kept.admin_url(), await strict.admin_url()]
            for admin in admins:
                await eventually_async(lambda a=admin: _ready(a), "ready", 40)
            await postgres.stop()
            answer = await eventually_async(lambda: _degraded(admins[0]), "degraded", 30)
            body = answer.json()
            assert answer.status == 200 and body["ok"] is True
            assert body["status"] == "ready, degraded" and body["reasons"] == []
            (reason,) = body["degraded_reasons"]
            assert reason.startswith("GCD store: postgres store does not answer")
            assert "lookups are answered from the index" in reason
            checks = {c["name"]: c for c in body["checks"]}
            assert checks["GCD store"]["ok"] is False and checks["GCD store"]["required"] is False
            assert checks["GCD index"]["ok"] is True
            status = (await http_get(f"{admins[0]}/status.json")).json()
            assert status["ready"] is True and status["degraded"] is True
            refused = await eventually_async(lambda: _not_ready(admins[1]), "not ready", 30)
            body = refused.json()
            assert body["ok"] is False and body["status"] == "not ready"
            assert any(r.startswith("GCD store: postgres store does not answer")
                       for r in body["reasons"])
            await postgres.start()
            for admin in admins:
                answer = await eventually_async(lambda a=admin: _ready(a), "ready again", 40)
                assert answer.json()["degraded"] is False
        finally:
            assert await kept.astop() == 0, kept.output()[-3000:]
            assert await strict.astop() == 0, strict.output()[-3000:]


async def _ready(admin: str) -> Answer | None:
    answer = await health(admin, "ready")
    return answer if answer.status == 200 and not answer.json()["degraded"] else None

"""joynr's Java cluster controllers of the test harness, two in one working directory: each keeps
its own ids (and MQTT client id), so that both stay connected to the broker and a call crosses
from one to the other through the GCD."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyjoynr.gcd.service import GcdService
from pyjoynr.testing.brokers import Mosquitto
from tests.support.java_oracles import JavaClusterController, JavaRadioApp, station

GBID = "joynrdefaultgbid"


async def test_two_java_ccs_of_one_directory_keep_their_own_ids(
        java_oracles: Any, tmp_path: Path, mosquitto: Mosquitto, joynr_gcd: GcdService) -> None:
    workdir = tmp_path / "java"
    ccs = [JavaClusterController(java_oracles, workdir, {GBID: mosquitto.url},
                                 name=f"java-cc-{name}") for name in ("a", "b")]
    apps: list[JavaRadioApp] = []
    try:
        # one after the other: the second starts when the first has written what it keeps
        for cc in ccs:
            await cc.start()
        apps = [JavaRadioApp(java_oracles, workdir, cc.url, name=f"java-app-{i}")
                for i, cc in enumerate(ccs)]
        for app in apps:
            await app.start()
        await apps[0].call("register", domain="workdir", scope="GLOBAL", timeoutMs=20_000,
                           timeout_s=25)
        await apps[1].call("proxy", domain="workdir", scope="GLOBAL_ONLY")
        assert await apps[1].call("addFavoriteStation", station=station("FM4"),
                                  timeout_s=25) is True
        ids = [(workdir / f"{cc.name}.persisted.properties").read_text(encoding="utf-8")
               for cc in ccs]
        assert "joynr.messaging.channelid" in ids[0] and ids[0] != ids[1]
    finally:
        for process in [*apps, *ccs]:
            await process.stop()

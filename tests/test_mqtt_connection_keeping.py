"""A broker connection kept through a stalled event loop, on real mosquitto.

mosquitto drops a client that sent nothing for 1.5 times its keep-alive interval. A cluster
controller and a GCD embedded in a process whose event loop is blocked by one long
synchronous step (a Spark job beside them, a big step on a starved machine) sent nothing
for that long: both lost their connections, and a message published meanwhile to the GCD
(which keeps no session) was lost. The native client's stall pinger writes the PINGREQ from
its own thread (transports.mqtt5.client).
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.testing.brokers import Mosquitto
from tests.support.mqtt_cluster import GBID, mqtt_cc_config

pytestmark = pytest.mark.network

WAIT_S = 10.0
KEEPALIVE_S = 2


@pytest.mark.parametrize("version", ["5", "3.1.1"])
async def test_a_loop_blocked_beyond_the_keepalive_keeps_its_broker_connection(
        tmp_path: Path, version: str) -> None:
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "broker"))
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-stalled", {GBID: broker.url}, mqtt__version=version,
            mqtt__keepalive_s=str(KEEPALIVE_S))))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        assert cc.mqtt.connection_count(GBID) == 1
        # one synchronous step: more than twice the 1.5 x keep-alive mosquitto waits
        time.sleep(3.5 * KEEPALIVE_S)  # noqa: ASYNC251 - the blocked loop is the point
        # whatever the broker did meanwhile, the loop sees it now: a closed socket, then
        # a reconnect; a kept connection answers a keep-alive round trip
        await asyncio.sleep(2 * KEEPALIVE_S)
        assert cc.mqtt.connection_count(GBID) == 1, cc.mqtt.backends[0].last_error
        assert cc.mqtt.connected(GBID)
    assert "exceeded timeout" not in broker.log.read_text(errors="replace")

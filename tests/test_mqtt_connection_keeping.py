"""A broker connection kept through a stalled event loop, on real mosquitto.

mosquitto drops a client that sent nothing for 1.5 times its keep-alive interval. A cluster
controller and a GCD embedded in a process whose event loop is blocked by one long
synchronous step (a Spark job beside them, a big step on a starved machine) sent nothing
for that long: both lost their connections, and a message published meanwhile to the GCD
(which keeps no session) was lost. The native client's stall pinger writes the PINGREQ from
its own thread, and a keep-alive check that runs late reads what arrived before it calls the
broker silent (transports.mqtt5.client). Both event loops: asyncio's reads the sockets before
it runs the timers that are due, uvloop (the programs' loop) runs the timers first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
import uvloop

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.testing.brokers import Mosquitto
from tests.support.mqtt_cluster import GBID, mqtt_cc_config

pytestmark = pytest.mark.network

WAIT_S = 10.0
KEEPALIVE_S = 2
LOOPS: dict[str, Callable[[Coroutine[Any, Any, None]], None]] = {
    "asyncio": asyncio.run, "uvloop": uvloop.run}


async def blocked_beyond_the_keepalive(tmp_path: Path, version: str) -> None:
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "broker"))
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-stalled", {GBID: broker.url}, mqtt__version=version,
            mqtt__keepalive_s=str(KEEPALIVE_S))))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        assert cc.mqtt.connection_count(GBID) == 1
        session = cc.mqtt.backends[0].session
        protocol = session._protocol  # type: ignore[union-attr]  # (the native client's)
        # the stall begins right after a PINGREQ of the loop's own (in the keep-alive check's
        # loop turn): its answer waits unread in the socket when the loop runs again
        loop = asyncio.get_running_loop()
        stalled = loop.create_future()

        def stall() -> None:
            if protocol._keepalive.ping_sent_at is None:  # (not idle: no PINGREQ this time)
                loop.call_at(protocol._keepalive_due, stall)
                return
            # one synchronous step: more than twice the 1.5 x keep-alive mosquitto waits
            time.sleep(3.5 * KEEPALIVE_S)
            stalled.set_result(None)

        loop.call_at(protocol._keepalive_due, stall)
        await asyncio.wait_for(stalled, 5 * WAIT_S)
        # whatever the broker did meanwhile, the loop sees it now: a closed socket, then
        # a reconnect; a kept connection answers a keep-alive round trip
        await asyncio.sleep(2 * KEEPALIVE_S)
        assert cc.mqtt.connection_count(GBID) == 1, cc.mqtt.backends[0].last_error
        assert cc.mqtt.connected(GBID)
        assert protocol.stall_pings >= 1
    assert "exceeded timeout" not in broker.log.read_text(errors="replace")


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("version", ["5", "3.1.1"])
def test_a_loop_blocked_beyond_the_keepalive_keeps_its_broker_connection(
        tmp_path: Path, version: str, loop: str) -> None:
    LOOPS[loop](blocked_beyond_the_keepalive(tmp_path, version))

"""Websocket transport details: TLS (wss) and keep-alive (dead connections are detected)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from cluster_controller.controller import ClusterController
from libjoynr.runtime import connect
from tests.support.cluster import cc_config, eventually
from tests.support.radio import Radio, RadioProvider
from tests.support.tls import self_signed_certificate
from transports.websocket_client import WebSocketClientSettings


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path)


async def test_wss_when_a_certificate_is_configured(tmp_path, certificate):
    cert, key = certificate
    config = cc_config(tmp_path, websocket__tls_certificate=cert, websocket__tls_private_key=key)
    async with ClusterController(config) as cc:
        assert cc.websocket_address.protocol == "wss"
        trusted = ssl.create_default_context(cafile=str(cert))
        settings = WebSocketClientSettings(ssl_context=trusted)
        provider_rt = await connect(cc.websocket_address, transport_settings=settings)
        consumer = await connect(cc.websocket_address, transport_settings=settings)
        try:
            await provider_rt.register_provider("d", RadioProvider())
            proxy = await consumer.build_proxy(Radio, "d")
            assert await proxy.current_station.get() == "FM4"
        finally:
            await provider_rt.stop()
            await consumer.stop()

        # a client that does not trust the certificate does not get in
        with pytest.raises(ConnectionError):
            await connect(cc.websocket_address, timeout_s=1.0,
                          transport_settings=WebSocketClientSettings(
                              ssl_context=ssl.create_default_context()))


async def test_a_dead_connection_is_detected_and_its_id_can_be_taken_over(tmp_path):
    config = cc_config(tmp_path, websocket__ping_interval_s=0.1, websocket__ping_timeout_s=0.2)
    async with ClusterController(config) as cc:
        fast = WebSocketClientSettings(ping_interval_s=0.1, ping_timeout_s=0.2,
                                       reconnect_initial_s=10, reconnect_max_s=10)
        victim = await connect(cc.websocket_address, transport_settings=fast)
        try:
            pid = await victim.register_provider("d", RadioProvider())
            assert pid in cc.routing_table
            # the victim's process hangs: it stops reading its socket, so it answers no ping
            outbox = victim.transport._outbox
            assert outbox is not None
            outbox.ws.transport.pause_reading()
            await eventually(lambda: victim.client_id not in cc.websocket.clients,
                             timeout_s=5, what="dead connection detected")
            assert pid not in cc.routing_table
            # the same id may now connect again (e.g. the restarted process)
            again = await connect(cc.websocket_address, client_id=victim.client_id)
            try:
                assert victim.client_id in cc.websocket.clients
            finally:
                await again.stop()
        finally:
            await victim.stop()
            await asyncio.sleep(0)


async def test_two_claimants_of_a_dead_id_one_wins(tmp_path):
    config = cc_config(tmp_path, websocket__ping_interval_s=5, websocket__ping_timeout_s=0.3)
    async with ClusterController(config) as cc:
        quiet = WebSocketClientSettings(ping_interval_s=5, ping_timeout_s=5,
                                        reconnect_initial_s=10, reconnect_max_s=10)
        victim = await connect(cc.websocket_address, transport_settings=quiet)
        outbox = victim.transport._outbox
        assert outbox is not None
        outbox.ws.transport.pause_reading()  # hung: it will not answer the CC's ping
        claims = [
            connect(cc.websocket_address, client_id=victim.client_id, timeout_s=2.0,
                    transport_settings=quiet)
            for _ in range(2)
        ]
        results = await asyncio.gather(*claims, return_exceptions=True)
        try:
            winners = [r for r in results if not isinstance(r, BaseException)]
            assert len(winners) == 1, results
            assert isinstance(next(r for r in results if isinstance(r, BaseException)),
                              ConnectionError)
            assert cc.websocket.counters["id-in-use"] >= 1
            assert cc.websocket.counters["replaced-dead"] == 1
        finally:
            for runtime in winners:
                await runtime.stop()
            await victim.stop()

"""The pytest plugin of pyjoynr: fixtures that start real joynr parts for an application's
integration tests, each on free loopback ports and cleaned up after the test.

========================== =================================================================
fixture                    what it gives
========================== =================================================================
``joynr_cc``               a cluster controller in the test's process with an embedded MQTT
                           broker (amqtt) and an embedded GCD (SQLite): a whole joynr system
``joynr_runtimes``         ``await joynr_runtimes()``: a libjoynr runtime connected to
                           ``joynr_cc`` (options go to ``connect``); all are stopped after
``joynr_runtime``          one such runtime
``mosquitto``              a mosquitto broker (``pyjoynr.testing.brokers.Mosquitto``)
``joynr_gcd``              a GCD instance (SQLite) on ``mosquitto``
``joynr_postgres_gcd``     a GCD instance whose store is a throwaway PostgreSQL database
``joynr_cc_pair``          two cluster controllers over ``mosquitto`` with ``joynr_gcd``:
                           discovery and calls across hosts
========================== =================================================================

The fixtures are ``async``: the tests run under pytest-asyncio (``asyncio_mode = "auto"``, or
``@pytest.mark.asyncio``). A provider and a consumer in a dozen lines::

    from pyjoynr import Provider, interface

    @interface("test/Echo", version=(1, 0))
    class Echo:
        async def echo(self, text: str) -> str: ...

    class EchoProvider(Provider, interface=Echo):
        async def echo(self, text: str) -> str:
            return text

    async def test_echo(joynr_runtimes):
        provider_side, consumer_side = await joynr_runtimes(), await joynr_runtimes()
        await provider_side.register_provider("test", EchoProvider())
        echo = await consumer_side.build_proxy(Echo, "test", ttl_ms=5_000)
        assert await echo.echo("hi") == "hi"
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pyjoynr.libjoynr import LibjoynrRuntime, connect
from pyjoynr.runtime.extras import missing_modules

if TYPE_CHECKING:
    from pyjoynr.cluster_controller.controller import ClusterController
    from pyjoynr.gcd.service import GcdService
    from pyjoynr.testing.brokers import Mosquitto

# pytest loads this plugin (an entry point) in every environment pyjoynr is installed in, bare
# ones too: what the fixtures run (the cc and gcd extras) is imported when a fixture starts,
# after _require, so that pytest works without the testing extra and a fixture says what it needs

__all__ = ["joynr_cc", "joynr_cc_pair", "joynr_gcd", "joynr_postgres_gcd", "joynr_runtime",
           "joynr_runtimes", "mosquitto"]

GBID = "joynrdefaultgbid"
#: how long a fixture waits for a connection to its broker (s)
WAIT_S = 20.0


def _require() -> None:
    """Fail the test in one line naming the testing extra when a module of it is missing."""
    missing = missing_modules("testing")
    if missing:
        pytest.fail(f"pyjoynr's fixtures need the 'testing' extra of pyjoynr (missing: "
                    f"{', '.join(missing)}): pip install 'pyjoynr[testing]'", pytrace=False)


def _whole_system(data_dir: Path, **overrides: Any) -> Any:
    """A cluster controller configuration with the embedded broker and GCD on free ports."""
    from pyjoynr.testing.cluster import cc_config  # noqa: PLC0415

    return cc_config(data_dir, embedded_broker__enabled="true", embedded_broker__port="0",
                     embedded_gcd__enabled="true", mqtt__backends=f'{{{GBID} = "embedded"}}',
                     **overrides)


@pytest.fixture
async def joynr_cc(tmp_path: Path) -> AsyncIterator[ClusterController]:
    """A cluster controller with an embedded MQTT broker and an embedded GCD, ready."""
    _require()
    from pyjoynr.cluster_controller.controller import ClusterController  # noqa: PLC0415

    async with ClusterController(_whole_system(tmp_path / "joynr-cc")) as controller:
        yield controller


@pytest.fixture
async def joynr_runtimes(joynr_cc: ClusterController
                         ) -> AsyncIterator[Callable[..., Awaitable[LibjoynrRuntime]]]:
    """``await joynr_runtimes(**options)``: a libjoynr runtime connected to ``joynr_cc``
    (``options`` go to :func:`pyjoynr.connect`); every one is stopped after the test."""
    started: list[LibjoynrRuntime] = []

    async def start(**options: Any) -> LibjoynrRuntime:
        runtime = await connect(joynr_cc.websocket_address.url, **options)
        started.append(runtime)
        return runtime

    yield start
    for runtime in reversed(started):
        await runtime.core.stop()


@pytest.fixture
async def joynr_runtime(joynr_runtimes: Callable[..., Awaitable[LibjoynrRuntime]]
                        ) -> LibjoynrRuntime:
    """A libjoynr runtime connected to ``joynr_cc``."""
    return await joynr_runtimes()


@pytest.fixture
async def mosquitto(tmp_path: Path) -> AsyncIterator[Mosquitto]:
    """A mosquitto broker on a free port (persistent sessions that survive a crash); fails the
    test when mosquitto is not installed."""
    _require()
    from pyjoynr.testing.brokers import Mosquitto  # noqa: PLC0415

    async with Mosquitto(tmp_path / "mosquitto") as broker:
        yield broker


@pytest.fixture
async def joynr_gcd(tmp_path: Path, mosquitto: Mosquitto) -> AsyncIterator[GcdService]:
    """A GCD instance (SQLite) on ``mosquitto``, as a fleet runs it: a service of its own."""
    from pyjoynr.gcd.service import GcdService, GcdSettings  # noqa: PLC0415

    settings = GcdSettings(broker_url=mosquitto.url, sqlite_path=tmp_path / "joynr-gcd.sqlite",
                           data_dir=tmp_path / "joynr-gcd")
    async with GcdService(settings) as service:
        await service.mqtt.wait_connected(WAIT_S)
        yield service


@pytest.fixture
async def joynr_postgres_gcd(tmp_path: Path, mosquitto: Mosquitto
                             ) -> AsyncIterator[GcdService]:
    """A GCD instance on ``mosquitto`` whose store is a throwaway PostgreSQL database (the
    store several instances share); fails the test when PostgreSQL is not installed."""
    from pyjoynr.gcd.service import GcdService, GcdSettings  # noqa: PLC0415
    from pyjoynr.testing.postgres import PostgresServer  # noqa: PLC0415 - needs asyncpg

    async with PostgresServer() as server:
        dsn = await server.create_database("joynr_gcd")
        settings = GcdSettings(broker_url=mosquitto.url, store="postgres", postgres_dsn=dsn,
                               data_dir=tmp_path / "joynr-gcd")
        async with GcdService(settings) as service:
            await service.mqtt.wait_connected(WAIT_S)
            yield service


@pytest.fixture
async def joynr_cc_pair(tmp_path: Path, mosquitto: Mosquitto, joynr_gcd: GcdService
                        ) -> AsyncIterator[tuple[ClusterController, ClusterController]]:
    """Two cluster controllers over ``mosquitto`` with ``joynr_gcd``, as two hosts of one fleet:
    a provider registered (scope GLOBAL) behind one is found and called from the other. A test
    that wants the PostgreSQL-backed GCD overrides ``joynr_gcd`` with ``joynr_postgres_gcd``."""
    from pyjoynr.cluster_controller.controller import ClusterController  # noqa: PLC0415
    from pyjoynr.testing.cluster import cc_config  # noqa: PLC0415

    backends = f'{{{GBID} = "{mosquitto.url}"}}'
    pair = [ClusterController(cc_config(
        tmp_path / f"joynr-cc-{n}", cluster_controller__id=f"cc-{n}-{uuid.uuid4().hex[:6]}",
        mqtt__backends=backends)) for n in (1, 2)]
    async with pair[0] as first, pair[1] as second:
        for cc in (first, second):
            assert cc.mqtt is not None
            await cc.mqtt.wait_connected(WAIT_S)
        yield first, second

"""Suite-wide rules.

A test that cannot run because something is missing must fail, never be skipped silently:
every skip is turned into a failure that names its reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from pyjoynr.libjoynr import LibjoynrRuntime, connect
from tests.support.cluster import ClusterController, cc_config

settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped tests are not allowed in this suite: {reason}"


@pytest.fixture
async def cc(tmp_path) -> AsyncIterator[ClusterController]:
    """A real cluster controller on a free loopback port."""
    async with ClusterController(cc_config(tmp_path)) as controller:
        yield controller


@pytest.fixture
async def runtimes(cc) -> AsyncIterator[Callable[..., Awaitable[LibjoynrRuntime]]]:
    """Factory of libjoynr runtimes connected to ``cc``; all are closed at the end."""
    started: list[LibjoynrRuntime] = []

    async def start(**options: Any) -> LibjoynrRuntime:
        runtime = await connect(cc.websocket_address.url, **options)
        started.append(runtime)
        return runtime

    yield start
    for runtime in started:
        await runtime.stop()


from tests.support.gcd_stores import store  # noqa: E402, F401 - the fixture, suite-wide
from tests.support.mqtt_clients import mqtt_client  # noqa: E402, F401 - the fixture

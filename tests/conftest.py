"""Suite-wide rules.

A test that cannot run because something is missing must fail, never be skipped silently:
every skip is turned into a failure that names its reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from pyjoynr.libjoynr import LibjoynrRuntime
from pyjoynr.testing.cluster import ClusterController, cc_config

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
    """A real cluster controller on a free loopback port (no MQTT: the plugin's ``joynr_cc``
    with its embedded broker and GCD is for tests that need them)."""
    async with ClusterController(cc_config(tmp_path)) as controller:
        yield controller


@pytest.fixture
def joynr_cc(cc: ClusterController) -> ClusterController:
    """The suite's ``cc`` serves the plugin's fixtures that build on ``joynr_cc``
    (``joynr_runtimes``, ``joynr_runtime``), as an application may override them."""
    return cc


@pytest.fixture
def runtimes(joynr_runtimes: Callable[..., Awaitable[LibjoynrRuntime]]
             ) -> Callable[..., Awaitable[LibjoynrRuntime]]:
    """Factory of libjoynr runtimes connected to ``cc``: the plugin's ``joynr_runtimes``."""
    return joynr_runtimes


from tests.support.gcd_stores import store  # noqa: E402, F401 - the fixture, suite-wide
from tests.support.mqtt_clients import mqtt_client  # noqa: E402, F401 - the fixture


@pytest.fixture(scope="session")
def java_oracles() -> Any:
    """joynr's own Java runtimes (tests/oracles/java), built once per source state; a build that
    fails fails the test with Maven's log."""
    from tests.support.java_oracles import build  # noqa: PLC0415

    return build()

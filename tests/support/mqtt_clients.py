"""The MQTT suite runs on both MQTT clients: the project's own ("native", the default) and
aiomqtt. A test file opts in with ``pytestmark = pytest.mark.usefixtures("mqtt_client")``;
its tests then run once per client (ids ``[native]`` / ``[aiomqtt]``), and every cluster
controller made by :func:`tests.support.cluster.cc_config` meanwhile uses that client
(``[mqtt] client``), as does a GCD whose settings take :func:`current`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import cluster
from transports.mqtt_settings import CLIENTS


def current() -> str:
    """The client the running test uses (the default outside the parameterised files)."""
    return cluster.MQTT_CLIENT or "native"


@pytest.fixture(params=CLIENTS)
def mqtt_client(request: pytest.FixtureRequest) -> Iterator[str]:
    cluster.MQTT_CLIENT = request.param
    try:
        yield request.param
    finally:
        cluster.MQTT_CLIENT = None

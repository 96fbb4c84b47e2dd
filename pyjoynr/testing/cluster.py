"""Starting real cluster controllers and libjoynr runtimes in tests."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyjoynr.cluster_controller.config import ClusterControllerConfig
from pyjoynr.cluster_controller.controller import ClusterController

#: the [mqtt] client of the CCs made here (tests.support.mqtt_clients); None: the default
MQTT_CLIENT: str | None = None


def cc_config(data_dir: Path, **overrides: Any) -> ClusterControllerConfig:
    """A CC configuration on a free port; overrides like websocket__port=1234."""
    env = {
        "JOYNR_CC__WEBSOCKET__PORT": "0",
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": str(data_dir),
        "JOYNR_CC__ROUTER__SWEEP_INTERVAL_MS": "50",
        "JOYNR_CC__ADMIN__PORT": "0",  # several CCs at once: any free port each
    }
    if MQTT_CLIENT is not None:
        env["JOYNR_CC__MQTT__CLIENT"] = MQTT_CLIENT
    env.update({f"JOYNR_CC__{key.upper()}": str(value) for key, value in overrides.items()})
    return ClusterControllerConfig.load(None, env=env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def eventually(condition: Callable[[], object], timeout_s: float = 5.0,
                     what: str = "condition") -> None:
    """Wait until ``condition()`` is true, at most ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s} s")
        await asyncio.sleep(0.01)


__all__ = ["ClusterController", "cc_config", "eventually", "free_port"]

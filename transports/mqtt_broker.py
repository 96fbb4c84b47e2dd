"""The embedded MQTT broker (amqtt) that the default configuration starts in the CC process.

It lets ``bin/cluster-controller`` run with no broker installed. amqtt speaks MQTT 3.1.1 only
and is slow next to mosquitto (see machine notes): use it for development and single-host
set-ups, a real broker (mosquitto, ...) in production.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass

from amqtt.broker import Broker

from runtime.logs import get_logger

__all__ = ["EmbeddedBroker", "EmbeddedBrokerSettings"]

log = get_logger(__name__)


@dataclass(frozen=True)
class EmbeddedBrokerSettings:
    """The ``[embedded_broker]`` section of the cluster controller's configuration."""

    #: start an MQTT broker (amqtt, MQTT 3.1.1) inside the CC; backends name it "embedded"
    enabled: bool = False
    host: str = "127.0.0.1"
    #: 0: any free port
    port: int = 1883

    def __post_init__(self) -> None:
        if not 0 <= self.port < 65536:
            raise ValueError(f"port must be in 0..65535, got {self.port}")


class EmbeddedBroker:
    """``async with EmbeddedBroker(settings) as broker:`` an amqtt broker on host:port."""

    def __init__(self, settings: EmbeddedBrokerSettings) -> None:
        self.settings = settings
        self.port = settings.port
        self._broker: Broker | None = None

    @property
    def url(self) -> str:
        return f"mqtt://{self.settings.host}:{self.port}"

    async def start(self) -> None:
        s = self.settings
        port = s.port or _free_port(s.host)
        # amqtt reports a taken port only in its log; check first for a clear error
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((s.host, port))
        except OSError as exc:
            raise OSError(f"embedded MQTT broker: cannot listen on {s.host}:{port}: "
                          f"{exc.strerror}") from None
        finally:
            probe.close()
        broker = Broker({
            "listeners": {"default": {"type": "tcp", "bind": f"{s.host}:{port}"}},
            "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin":
                        {"allow_anonymous": True}},
        })
        await broker.start()
        self._broker, self.port = broker, port
        log.info("embedded MQTT broker (amqtt, MQTT 3.1.1) listening on %s", self.url)

    async def stop(self) -> None:
        broker, self._broker = self._broker, None
        if broker is not None:
            try:
                await asyncio.wait_for(broker.shutdown(), 5)
            except Exception:
                log.exception("embedded MQTT broker did not shut down cleanly")

    async def __aenter__(self) -> EmbeddedBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])

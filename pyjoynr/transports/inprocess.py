"""In-process transport: hands messages to a participant living in this process."""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol, cast

from pyjoynr.runtime.addresses import Address, InProcessAddress
from pyjoynr.runtime.logs import get_logger, peer_of
from pyjoynr.runtime.messages import Message
from pyjoynr.runtime.telemetry import Telemetry

__all__ = ["InProcessTransport", "MessageReceiver"]

log = get_logger(__name__)


class MessageReceiver(Protocol):
    """The skeleton behind an InProcessAddress."""

    def receive(self, message: Message) -> None: ...


class InProcessTransport:
    """Hands messages to participants in this process.

    A message that arrived from the network is delivered at once (the caller is a transport's
    receive loop); one routed by code in this process is delivered on the next loop iteration,
    so that routing never re-enters the participant that is sending.

    A participant that fails on a message is a defect, but a message from the network can
    trigger it each time: with ``telemetry`` (the process's, runtime.telemetry), the failure is
    counted (``inprocess-failed`` in its counters) and logged with its traceback rate-limited
    per sender's connection (the first in full); without, logged every time.
    """

    def __init__(self, telemetry: Telemetry | None = None) -> None:
        self.telemetry = telemetry

    def send(self, address: Address, message: Message) -> bool:
        assert isinstance(address, InProcessAddress)
        skeleton = cast(MessageReceiver, address.skeleton)
        if message.origin is not None:
            self._deliver(skeleton, message)
        else:
            asyncio.get_running_loop().call_soon(self._deliver, skeleton, message)
        return True

    def _deliver(self, skeleton: MessageReceiver, message: Message) -> None:
        try:
            skeleton.receive(message)
        except Exception:
            telemetry = self.telemetry
            if telemetry is None:
                log.exception("in-process participant failed on %s", message.describe())
                return
            telemetry.counters["inprocess-failed"] += 1
            telemetry.warn(log, "inprocess-failed", peer_of(message.origin),
                           "in-process participant failed on %s", message.describe(),
                           level=logging.ERROR, exc_info=True)

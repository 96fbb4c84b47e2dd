"""In-process transport: hands messages to a participant living in this process."""

from __future__ import annotations

import asyncio
from typing import Protocol, cast

from pyjoynr.runtime.addresses import Address, InProcessAddress
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import Message

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
    """

    def send(self, address: Address, message: Message) -> bool:
        assert isinstance(address, InProcessAddress)
        skeleton = cast(MessageReceiver, address.skeleton)
        if message.origin is not None:
            _deliver(skeleton, message)
        else:
            asyncio.get_running_loop().call_soon(_deliver, skeleton, message)
        return True


def _deliver(skeleton: MessageReceiver, message: Message) -> None:
    try:
        skeleton.receive(message)
    except Exception:
        log.exception("in-process participant failed on %s", message.describe())

"""What a cluster controller's router handed to its transports, seen through its audit hook,
for tests that check what travelled (frames, bodies) on real connections."""

from __future__ import annotations

import json
from typing import Any

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.runtime.addresses import Address, WebSocketClientAddress
from pyjoynr.runtime.bodies import BodyFormat, format_of
from pyjoynr.runtime.messages import Message, MessageType

__all__ = ["Wire"]


class Wire:
    """The messages the cluster controller's router handed to a transport (its audit hook;
    an audit log that was set is told as well)."""

    def __init__(self, cc: ClusterController) -> None:
        self.seen: list[Message] = []
        self._next = cc.audit
        cc.telemetry.set_audit(self)

    def delivered(self, message: Message, hop: Address, queued_ms: int) -> None:
        self.seen.append(message)
        if self._next is not None:
            self._next.delivered(message, hop, queued_ms)

    def decided(self, message: Message, outcome: str, hop: Address | None = None,
                reason: str | None = None, peer: str | None = None) -> None:
        if self._next is not None:
            self._next.decided(message, outcome, hop, reason, peer)

    def kinds(self, kind: MessageType, *, sender: str | None = None,
              recipient: str | None = None) -> list[Message]:
        """The messages of ``kind`` (from ``sender``, to ``recipient``), in order."""
        return [m for m in self.seen if m.type is kind
                and sender in (None, m.sender) and recipient in (None, m.recipient)]

    def bodies(self, kind: MessageType, *, sender: str | None = None,
               recipient: str | None = None) -> list[bytes]:
        return [m.body for m in self.kinds(kind, sender=sender, recipient=recipient)]

    def json(self, kind: MessageType, **who: str) -> list[dict[str, Any]]:
        """The bodies of ``kind`` (from ``sender``, to ``recipient``), each checked to be
        joynr JSON, parsed."""
        found = []
        for body in self.bodies(kind, **who):
            assert format_of(body) is BodyFormat.JSON, body[:80]
            found.append(json.loads(body))
        return found

    def sent_by(self, client_id: str) -> list[Message]:
        """What the websocket client ``client_id`` sent (arrived over its connection)."""
        own = WebSocketClientAddress(client_id)
        return [m for m in self.seen if m.origin == own]

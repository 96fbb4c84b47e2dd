"""The state of an MQTT client session: pure, no I/O, time given as input.

- packet ids: allocated 1..65535, never one in use (QoS 1 publishes, subscribes and
  unsubscribes share the space);
- outgoing QoS 1 publishes in flight, keyed by packet id (an acknowledgement is one dict
  pop); at most the server's receive maximum at once, the rest wait in order and go out as
  acknowledgements free room;
- after a reconnect with the session kept by the server, a publish that was in flight goes out
  again with its original packet id (:meth:`Session.publish_again`; the client sets DUP),
  new ones get ids above those (:meth:`Session.start_ids_at`); the caller (the transport)
  keeps what was in flight across connections and sends it again first, in order;
- keep-alive deadlines (:class:`KeepAlive`).

The client (transports.mqtt.mqtt5.client) writes what these methods tell it to; what an entry
carries (``Outbound.token``: the client keeps its future there) is the caller's business.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["KeepAlive", "Outbound", "PacketIdsExhausted", "Session"]

MAX_PACKET_ID: Final = 65_535


class PacketIdsExhausted(Exception):
    """All 65535 packet ids are in use."""


@dataclass(slots=True)
class Outbound:
    """One QoS 1 PUBLISH: its parts (encoded as the client will write them) and the caller's
    token. ``packet_id`` is 0 while it waits for room."""

    topic: bytes
    payload: bytes
    properties: bytes
    token: Any = None
    packet_id: int = 0


class Session:
    def __init__(self, receive_maximum: int = MAX_PACKET_ID) -> None:
        #: the most QoS 1 publishes unacknowledged at once (the server's receive maximum,
        #: or the client's own limit if lower)
        self.receive_maximum = receive_maximum
        #: packet id -> what waits for its PUBACK, in the order sent
        self.inflight: dict[int, Outbound] = {}
        #: publishes waiting for room in the window, in order
        self.waiting: deque[Outbound] = deque()
        #: packet id -> the token of a SUBSCRIBE or UNSUBSCRIBE waiting for its answer
        self.requests: dict[int, Any] = {}
        self._next_id = 1

    # ------------------------------------------------------------------ packet ids

    def _allocate(self) -> int:
        inflight, requests = self.inflight, self.requests
        if len(inflight) + len(requests) >= MAX_PACKET_ID:
            raise PacketIdsExhausted("all 65535 packet ids are in use")
        pid = self._next_id
        while pid in inflight or pid in requests:
            pid = pid + 1 if pid < MAX_PACKET_ID else 1
        self._next_id = pid + 1 if pid < MAX_PACKET_ID else 1
        return pid

    def request(self, token: Any) -> int:
        """A packet id for a SUBSCRIBE or UNSUBSCRIBE, ``token`` kept until its answer."""
        pid = self._allocate()
        self.requests[pid] = token
        return pid

    def answered(self, packet_id: int) -> Any:
        """The token of the request that ``packet_id`` answers; KeyError if none waits."""
        return self.requests.pop(packet_id)

    # ------------------------------------------------------------------ publishes

    def publish(self, item: Outbound) -> bool:
        """Take a QoS 1 publish: True when it may go out now (``item.packet_id`` set), False
        when it waits for room (it goes out from :meth:`acknowledged`)."""
        if self.waiting or len(self.inflight) >= self.receive_maximum:
            self.waiting.append(item)
            return False
        pid = item.packet_id = self._allocate()
        self.inflight[pid] = item
        return True

    def publish_again(self, item: Outbound, packet_id: int) -> bool:
        """Take a QoS 1 publish that was in flight on an earlier connection of a session the
        server kept, to go out again with its original ``packet_id`` (and DUP): True when it
        may (the id is free and the window has room); otherwise it is taken as a new publish
        (:meth:`publish`: a new id when it goes out) and False is returned."""
        if (0 < packet_id <= MAX_PACKET_ID and not self.waiting
                and len(self.inflight) < self.receive_maximum
                and packet_id not in self.inflight and packet_id not in self.requests):
            item.packet_id = packet_id
            self.inflight[packet_id] = item
            return True
        self.publish(item)
        return False

    def start_ids_at(self, packet_id: int) -> None:
        """Allocate new packet ids from ``packet_id`` on (above the ids of publishes that go
        out again with theirs)."""
        self._next_id = packet_id if 0 < packet_id <= MAX_PACKET_ID else 1

    def acknowledged(self, packet_id: int) -> tuple[Outbound | None, list[Outbound]]:
        """A PUBACK: the publish it acknowledges (None for an unknown id) and the waiting
        publishes that may go out now (packet ids set)."""
        item = self.inflight.pop(packet_id, None)
        released: list[Outbound] = []
        waiting = self.waiting
        while waiting and len(self.inflight) < self.receive_maximum:
            released.append(waiting.popleft())
            pid = released[-1].packet_id = self._allocate()
            self.inflight[pid] = released[-1]
        return item, released

    def abandon(self) -> list[Outbound]:
        """The connection is over for good: every publish not acknowledged, in order (in
        flight, then waiting), and the state emptied."""
        items = [*self.inflight.values(), *self.waiting]
        self.inflight.clear()
        self.waiting.clear()
        self.requests.clear()
        return items


class KeepAlive:
    """When to send PINGREQ and when the server is gone.

    The client must send a packet at least every ``interval_s``; when it has not, it sends
    PINGREQ. The server must answer: when nothing at all arrived within ``interval_s`` after
    a PINGREQ, the connection is dead. ``interval_s`` 0: no keep-alive."""

    def __init__(self, interval_s: float, now: float) -> None:
        self.interval_s = interval_s
        self.last_sent = now
        self.ping_sent_at: float | None = None

    def sent(self, now: float) -> None:
        self.last_sent = now

    def received(self, now: float) -> None:
        self.ping_sent_at = None

    def poll(self, now: float) -> tuple[str | None, float]:
        """What to do now ("ping", "dead" or None) and when to ask again (seconds from
        ``now``; inf without keep-alive)."""
        interval = self.interval_s
        if interval <= 0:
            return None, float("inf")
        if self.ping_sent_at is not None:
            if now - self.ping_sent_at >= interval:
                return "dead", float("inf")
            return None, self.ping_sent_at + interval - now
        if now - self.last_sent >= interval:
            self.ping_sent_at = self.last_sent = now
            return "ping", interval
        return None, self.last_sent + interval - now

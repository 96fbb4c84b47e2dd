"""The record schemas the processes write for the fleet data pipeline (docs/records.md).

Pure module: no I/O. It holds, for each schema, its version, its field names in order, the
file name rules and the builders of one record: the message audit log (:func:`audit_record`,
one record per routing decision, and :func:`audit_line`, the same record as its JSON line,
built without an intermediate dict for the writer thread) and the routing table snapshot
(:func:`snapshot_record` / :func:`snapshot_line`). The writers (:mod:`runtime.audit`,
:mod:`cluster_controller.snapshots`) and the tests use these; the pipeline (``pipeline/``) does
not import project code and follows docs/records.md, which documents the same fields.

A change to a record's fields is a new schema version: readers keep the old ones.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

from pyjoynr.runtime.addresses import (
    Address,
    InProcessAddress,
    MqttAddress,
    UdsAddress,
    UdsClientAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.logs import escape
from pyjoynr.runtime.routing import NO_EXPIRY_MS, RoutingEntry
from pyjoynr.runtime.rules import (
    EXPIRED,
    EXPIRED_IN_QUEUE,
    NO_ROUTE,
    QUEUE_FULL,
    QUEUE_SHARE_USED,
    QUEUE_WAIT_EXCEEDED,
)

__all__ = [
    "ADDRESS_KINDS",
    "AUDIT_FIELDS",
    "AUDIT_SCHEMA_VERSION",
    "DELIVERED",
    "DROPPED",
    "DROP_REASONS",
    "HOP_INPROCESS",
    "HOP_MQTT",
    "HOP_WEBSOCKET",
    "HOP_WEBSOCKET_CLIENT",
    "OUTCOMES",
    "QUEUED",
    "REFUSED",
    "SNAPSHOT_FIELDS",
    "SNAPSHOT_SCHEMA_VERSION",
    "AuditLineEncoder",
    "address_gbid",
    "address_kind",
    "address_text",
    "audit_file_name",
    "audit_line",
    "audit_record",
    "file_process_id",
    "json_string",
    "outcome_of",
    "snapshot_file_name",
    "snapshot_line",
    "snapshot_lines",
    "snapshot_record",
    "utc_stamp",
]

AUDIT_SCHEMA_VERSION: Final = 1
SNAPSHOT_SCHEMA_VERSION: Final = 1

#: the keys of an audit record, in the order they are written
AUDIT_FIELDS: Final = ("v", "ts", "proc", "id", "type", "sender", "recipient", "hop", "gbid",
                       "bytes", "outcome", "reason", "peer", "queued_ms")
#: the keys of a routing snapshot record, in the order they are written
SNAPSHOT_FIELDS: Final = ("v", "taken_ms", "proc", "participant_id", "kind", "address", "gbid",
                          "topic", "global", "expiry_ms", "sticky")

# ---------------------------------------------------------------------- outcomes

#: handed to a transport that accepted it
DELIVERED: Final = "delivered"
#: put in a queue (no route yet, or the transport refused it for now)
QUEUED: Final = "queued"
#: dropped by the router or a transport queue (expired, queue full, no transport, ...)
DROPPED: Final = "dropped"
#: refused by a rule of admission or forwarding (spoofed sender, relay, forged multicast, ...)
REFUSED: Final = "refused"
OUTCOMES: Final = (DELIVERED, QUEUED, DROPPED, REFUSED)

#: the reasons that make a message "dropped" rather than "refused": time and room, not a rule
#: about who may send what where. "no-transport" (no transport for the next hop's address
#: type), "duplicate" (an MQTT redelivery), "unpublishable" (the MQTT client refused it) and
#: "too-big" (larger than the hop's frame or message limit) are the transports' own.
DROP_REASONS: Final = frozenset({EXPIRED, EXPIRED_IN_QUEUE, QUEUE_FULL, QUEUE_SHARE_USED,
                                 QUEUE_WAIT_EXCEEDED, NO_ROUTE, "no-transport", "duplicate",
                                 "unpublishable", "too-big"})


def outcome_of(reason: str) -> str:
    """The outcome of a message that was not routed for ``reason``: DROPPED or REFUSED."""
    return DROPPED if reason in DROP_REASONS else REFUSED


# ---------------------------------------------------------------------- addresses

#: address kinds (the ``hop`` of an audit record, the ``kind`` of a snapshot record)
HOP_INPROCESS: Final = "inprocess"
#: a libjoynr runtime connected to this cluster controller (WebSocketClientAddress)
HOP_WEBSOCKET: Final = "websocket"
#: a cluster controller's websocket server, seen from a libjoynr runtime (WebSocketAddress)
HOP_WEBSOCKET_CLIENT: Final = "websocket-client"
HOP_MQTT: Final = "mqtt"
#: a libjoynr runtime connected to this cluster controller's Unix domain socket
#: (UdsClientAddress)
HOP_UDS: Final = "uds"
#: a cluster controller's Unix domain socket, seen from a libjoynr runtime (UdsAddress)
HOP_UDS_CLIENT: Final = "uds-client"

#: the kind of each address type
ADDRESS_KINDS: Final[dict[type[Address], str]] = {
    InProcessAddress: HOP_INPROCESS,
    WebSocketClientAddress: HOP_WEBSOCKET,
    WebSocketAddress: HOP_WEBSOCKET_CLIENT,
    MqttAddress: HOP_MQTT,
    UdsClientAddress: HOP_UDS,
    UdsAddress: HOP_UDS_CLIENT,
}


def address_kind(address: Address) -> str:
    """The kind of ``address``: one of the HOP_* names (an unknown type: its class name in
    lower case)."""
    kind = ADDRESS_KINDS.get(type(address))
    return kind if kind is not None else type(address).__name__.lower()


def address_gbid(address: Address | None) -> str | None:
    """The GBID of an MQTT address; None for any other address."""
    return address.broker_uri if type(address) is MqttAddress else None


def address_text(address: Address) -> str:
    """``address`` as stable text (docs/records.md): MQTT ``<gbid>/<topic>``, a websocket
    client its client id, a websocket server its URL, an in-process participant
    ``inprocess:<class of its skeleton>``."""
    if type(address) is MqttAddress:
        return f"{address.broker_uri}/{address.topic}"
    if type(address) is WebSocketClientAddress or type(address) is UdsClientAddress:
        return address.id
    if type(address) is UdsAddress:
        return address.url
    if type(address) is WebSocketAddress:
        return address.url
    if type(address) is InProcessAddress:
        return f"inprocess:{type(address.skeleton).__name__}"
    return repr(address)


# ---------------------------------------------------------------------- file names

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]")


def file_process_id(process_id: str) -> str:
    """``process_id`` as it appears in file names: characters outside ``[A-Za-z0-9._-]``
    replaced by ``_``."""
    return _UNSAFE.sub("_", process_id)


def utc_stamp(epoch_ms: int) -> str:
    """``yyyymmddTHHMMSSZ`` of an epoch millisecond time, in UTC."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(epoch_ms // 1000))


def audit_file_name(process_id: str, opened_ms: int, seq: int) -> str:
    """``audit-<process_id>-<UTC yyyymmddTHHMMSSZ>-<seq:06d>.jsonl.gz`` (a file being written
    has ``.part`` appended)."""
    return f"audit-{file_process_id(process_id)}-{utc_stamp(opened_ms)}-{seq:06d}.jsonl.gz"


def snapshot_file_name(process_id: str, taken_ms: int) -> str:
    """``routing-<process_id>-<UTC yyyymmddTHHMMSSZ>-<milliseconds:03d>.jsonl.gz`` (two
    snapshots within one second keep apart; the names sort by time)."""
    return (f"routing-{file_process_id(process_id)}-{utc_stamp(taken_ms)}-"
            f"{taken_ms % 1000:03d}.jsonl.gz")


# ---------------------------------------------------------------------- audit records


def audit_record(*, ts: int, proc: str, message_id: str, message_type: str, sender: str,
                 recipient: str, hop: str | None, gbid: str | None, size: int, outcome: str,
                 reason: str | None = None, peer: str | None = None,
                 queued_ms: int | None = None) -> dict[str, Any]:
    """One audit record (schema version 1) as a dict with exactly the keys AUDIT_FIELDS.

    ``message_type``: the wire name of the type (``rq``, ``o``, ...); ``hop``: an address kind
    or None; ``size``: the message's bytes; ``peer`` (refusals only) is escaped like a log
    line (runtime.logs.escape)."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}")
    return {
        "v": AUDIT_SCHEMA_VERSION,
        "ts": ts,
        "proc": proc,
        "id": message_id,
        "type": message_type,
        "sender": sender,
        "recipient": recipient,
        "hop": hop,
        "gbid": gbid,
        "bytes": size,
        "outcome": outcome,
        "reason": reason,
        "peer": None if peer is None else escape(peer),
        "queued_ms": queued_ms,
    }


#: a str as a JSON string (ASCII, every other character escaped; the C encoder of json)
json_string: Callable[[str], str] = json.encoder.encode_basestring_ascii
_json_str = json_string


def _json_opt(value: str | None) -> str:
    return "null" if value is None else _json_str(value)


def audit_line(*, ts: int, proc: str, message_id: str, message_type: str, sender: str,
               recipient: str, hop: str | None, gbid: str | None, size: int, outcome: str,
               reason: str | None = None, peer: str | None = None,
               queued_ms: int | None = None) -> str:
    """The JSON line (without its newline) of :func:`audit_record` with the same arguments:
    the same object, keys in the order AUDIT_FIELDS, built by string formatting (several
    times faster than ``json.dumps`` of the dict; the writer encodes every record)."""
    return (f'{{"v":{AUDIT_SCHEMA_VERSION},"ts":{int(ts)},"proc":{_json_str(proc)},'
            f'"id":{_json_str(message_id)},"type":{_json_str(message_type)},'
            f'"sender":{_json_str(sender)},"recipient":{_json_str(recipient)},'
            f'"hop":{_json_opt(hop)},"gbid":{_json_opt(gbid)},"bytes":{int(size)},'
            f'"outcome":{_json_str(outcome)},"reason":{_json_opt(reason)},'
            f'"peer":{_json_opt(None if peer is None else escape(peer))},'
            f'"queued_ms":{"null" if queued_ms is None else int(queued_ms)}}}')


class AuditLineEncoder:
    """Encodes many audit records of one process fast (the writer thread's loop): the same
    lines as :func:`audit_line`. A line is ``head + ts + proc + id + middle + bytes + tail +
    queued_ms + "}"``, where the JSON of the fields that repeat from record to record
    (:meth:`middle`: type, sender, recipient, hop, GBID; :meth:`tail`: outcome, reason,
    peer) is built once per distinct combination and kept: at most ``max_cached``
    combinations of each kind, holding at most ``max_cached_chars`` characters in all (the
    strings come from the network); then it starts afresh."""

    def __init__(self, proc: str, max_cached: int = 4096,
                 max_cached_chars: int = 4 * 1024 * 1024) -> None:
        #: the constant parts: before ts, between ts and the message id
        self.head = f'{{"v":{AUDIT_SCHEMA_VERSION},"ts":'
        self.proc = f',"proc":{_json_str(proc)},"id":'
        self.max_cached = max_cached
        self.max_cached_chars = max_cached_chars
        self._chars = 0
        self._middle: dict[tuple[str, str, str, object, str | None], str] = {}
        self._tail: dict[tuple[str, str | None, str | None], str] = {}

    @property
    def cached(self) -> tuple[int, int]:
        """The combinations and characters held in the caches."""
        return len(self._middle) + len(self._tail), self._chars

    def _room_for(self, cache: dict[Any, str], text: str) -> None:
        """Forget the cached parts when ``cache`` is full or ``text`` would take the
        characters held over the bound."""
        self._chars += len(text)
        if len(cache) >= self.max_cached or self._chars > self.max_cached_chars:
            self._middle.clear()
            self._tail.clear()
            self._chars = len(text)

    def middle(self, key: tuple[str, str, str, object, str | None], hop: str | None) -> str:
        """``,"type":..,"sender":..,"recipient":..,"hop":..,"gbid":..,"bytes":`` for ``key``
        = (type, sender, recipient, anything that decides ``hop``, gbid)."""
        middle = self._middle.get(key)
        if middle is None:
            message_type, sender, recipient, _, gbid = key
            middle = (f',"type":{_json_str(message_type)},"sender":{_json_str(sender)},'
                      f'"recipient":{_json_str(recipient)},"hop":{_json_opt(hop)},'
                      f'"gbid":{_json_opt(gbid)},"bytes":')
            self._room_for(self._middle, middle)
            self._middle[key] = middle
        return middle

    def tail(self, outcome: str, reason: str | None, peer: str | None) -> str:
        """``,"outcome":..,"reason":..,"peer":..,"queued_ms":``."""
        key = (outcome, reason, peer)
        tail = self._tail.get(key)
        if tail is None:
            tail = (f',"outcome":{_json_str(outcome)},"reason":{_json_opt(reason)},'
                    f'"peer":{_json_opt(None if peer is None else escape(peer))},"queued_ms":')
            self._room_for(self._tail, tail)
            self._tail[key] = tail
        return tail

    def line(self, ts: int, message_id: str, message_type: str, sender: str,  # noqa: PLR0917
             recipient: str, hop: str | None, gbid: str | None, size: int, outcome: str,
             reason: str | None, peer: str | None, queued_ms: int | None) -> str:
        """The line of one record (arguments as for :func:`audit_line`, positional)."""
        middle = self.middle((message_type, sender, recipient, hop, gbid), hop)
        return (f"{self.head}{int(ts)}{self.proc}{_json_str(message_id)}{middle}{int(size)}"
                f"{self.tail(outcome, reason, peer)}"
                f"{'null' if queued_ms is None else int(queued_ms)}}}")


# ---------------------------------------------------------------------- snapshot records


def snapshot_record(*, taken_ms: int, proc: str, participant_id: str, entry: RoutingEntry
                    ) -> dict[str, Any]:
    """One routing snapshot record (schema version 1): ``participant_id``'s routing entry, a
    dict with exactly the keys SNAPSHOT_FIELDS."""
    address = entry.address
    is_mqtt = type(address) is MqttAddress
    return {
        "v": SNAPSHOT_SCHEMA_VERSION,
        "taken_ms": taken_ms,
        "proc": proc,
        "participant_id": participant_id,
        "kind": address_kind(address),
        "address": address_text(address),
        "gbid": address.broker_uri if is_mqtt else None,  # type: ignore[attr-defined]
        "topic": address.topic if is_mqtt else None,  # type: ignore[attr-defined]
        "global": bool(entry.is_globally_visible),
        "expiry_ms": min(int(entry.expiry_date_ms), NO_EXPIRY_MS),
        "sticky": bool(entry.is_sticky),
    }


def snapshot_line(*, taken_ms: int, proc: str, participant_id: str, entry: RoutingEntry
                  ) -> str:
    """The JSON line (without its newline) of :func:`snapshot_record`."""
    return json.dumps(snapshot_record(taken_ms=taken_ms, proc=proc,
                                      participant_id=participant_id, entry=entry),
                      separators=(",", ":"))


def snapshot_lines(taken_ms: int, proc: str, entries: Iterable[tuple[str, RoutingEntry]]
                   ) -> Iterable[str]:
    """The JSON lines of a whole snapshot (``entries``: the table's (participantId, entry)
    pairs), one per entry, each ending in a newline."""
    for participant_id, entry in entries:
        yield snapshot_line(taken_ms=taken_ms, proc=proc, participant_id=participant_id,
                            entry=entry) + "\n"

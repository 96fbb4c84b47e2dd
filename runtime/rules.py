"""The admission and forwarding rules of a runtime, in one place.

Pure module: no asyncio, no sockets, no logging, no state. Each rule is a function of plain
values (message fields, addresses, routing entries that the caller looked up, the time in epoch
milliseconds) and returns what to do. A transport or the router decodes, asks here, and acts:
counts, logs, drops, answers or routes. An expected rejection is a value, never an exception:
a :class:`Refusal` with a short ``reason`` (the counter key, one of the constants below) and a
``detail`` for the log line; a :class:`Notice` is something to count and log that does not stop
the message.

The rules
=========

Time
    A message whose expiry date lies before now is not routed (:func:`check_expiry`); one that
    expires while it waits in a queue is dropped and, if it is a request, its sender is told
    (:func:`check_queued`). A message waits only while its recipient's queue and all queues
    together have room (:func:`admit_to_queue`).

Who may send what
    A websocket client speaks only for its own participants: a message whose sender is routed
    to another address is refused as a spoofed sender (:func:`admit_from_client`). A message
    that arrives from an MQTT backend is refused when it is expired or when its recipient is
    behind MQTT too (:func:`admit_from_backend`). The cluster controller's own providers
    (Routing, the local directory) serve callers that arrive over MQTT not at all
    (:func:`admit_caller`): over MQTT a caller's identity cannot be checked.

Acting for a participant
    A call acts for a participant when it comes from this process or when the participant is
    routed to the connection the call arrived over (:func:`check_owner`). A websocket client
    may add a next hop only for its own connection; code of this process only for websocket
    clients (:func:`check_next_hop`).

Answers to requests over MQTT
    A request that arrives from a backend teaches the routing table how to answer its sender
    (:func:`reply_route`): at its replyTo topic, in the backend it arrived from (the GBID of
    the connection, whatever the replyTo says), until the request's expiry plus a grace period.
    The sender chooses that expiry, so it is capped at now plus a maximum first. A request
    without an MQTT replyTo cannot be answered and is refused. If the table refuses the route
    (:func:`reply_route_learned`), a replyTo naming this cluster controller itself is refused
    (answers would loop back here); a local or sticky route of the sender wins, and the request
    goes on. Requests that leave for a backend carry this cluster controller's global address as
    replyTo, whatever the local sender wrote (:func:`outgoing_reply_to`).

Forwarding
    Checked for every next hop (:func:`check_forward`): a message that arrived from a backend is
    not relayed to a backend, the same or another (a cluster controller delivers what comes over
    MQTT to its local participants only); a libjoynr runtime drops a message from its cluster
    controller that has no route here, and answers it if it is a request (sending it back would
    loop).

Multicast
    A multicast goes once to each next hop of its receivers, to the cluster controller of a
    libjoynr runtime unless it came from there, and never back where it came from
    (:func:`multicast_hops`). A cluster controller publishes it to the backends only when its
    provider is routed here, globally visible and not itself behind MQTT, and the multicast
    did not come from MQTT (:func:`publishes_globally`). A receiver of a provider behind MQTT
    needs a subscription in that provider's backend (:func:`multicast_backend`).

Where rules of identity and admission are added, they go here, with their tests in
``tests/unit/test_rules.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from runtime.addresses import Address, MqttAddress, WebSocketClientAddress
from runtime.messages import REQUEST_TYPES, Message, MessageType
from runtime.routing import NO_EXPIRY_MS, PutResult, RoutingEntry

__all__ = [
    "BAD_REPLY_TO",
    "EXPIRED",
    "EXPIRED_IN_QUEUE",
    "FOREIGN_NEXT_HOP",
    "NOT_A_CLIENT_ADDRESS",
    "NOT_OWNER",
    "NO_REPLY_TO",
    "NO_ROUTE",
    "QUEUE_FULL",
    "REFUSED_RELAY",
    "REMOTE_CALLER",
    "REPLY_TO_NOT_LEARNED",
    "SPOOFED_SENDER",
    "Notice",
    "Refusal",
    "ReplyRoute",
    "admit_caller",
    "admit_from_backend",
    "admit_from_client",
    "admit_to_queue",
    "check_expiry",
    "check_forward",
    "check_next_hop",
    "check_owner",
    "check_queued",
    "multicast_backend",
    "multicast_hops",
    "outgoing_reply_to",
    "publishes_globally",
    "reply_route",
    "reply_route_learned",
]

# enum members as module constants for the per-message paths (cheaper to look up in 3.11)
_MULTICAST = MessageType.MULTICAST

# ---------------------------------------------------------------------- reason codes
# (the keys under which the acting component counts; the router prefixes its drops "dropped-")

#: the message expired before it could be routed
EXPIRED: Final = "expired"
#: the message expired while it waited in a queue
EXPIRED_IN_QUEUE: Final = "expired-in-queue"
#: no room in the queue of the recipient or in all queues together
QUEUE_FULL: Final = "queue-full"
#: a websocket client sent a message in the name of a participant routed elsewhere
SPOOFED_SENDER: Final = "spoofed-sender"
#: a message from a backend whose next hop is behind a backend too
REFUSED_RELAY: Final = "refused-relay"
#: a message from the cluster controller that has no route in this libjoynr runtime
NO_ROUTE: Final = "no-route"
#: a request from a backend without an MQTT replyTo: it cannot be answered
NO_REPLY_TO: Final = "no-reply-to"
#: a request from a backend whose replyTo is this cluster controller itself
BAD_REPLY_TO: Final = "bad-reply-to"
#: a request's replyTo was not learned because the sender has a route that wins (a notice)
REPLY_TO_NOT_LEARNED: Final = "reply-to-not-learned"
#: a call over MQTT to a provider that serves local participants only
REMOTE_CALLER: Final = "remote-caller"
#: a call acting for a participant that is not routed to the caller
NOT_OWNER: Final = "not-owner"
#: add_next_hop from a websocket client for an address that is not its own connection
FOREIGN_NEXT_HOP: Final = "refused-foreign-next-hop"
#: add_next_hop from this process for an address that is not a websocket client's
NOT_A_CLIENT_ADDRESS: Final = "not-a-client-address"


@dataclass(frozen=True, slots=True)
class Refusal:
    """The message (or call) is refused: count it under ``reason``, log ``detail``, drop it.
    ``answer``: a refused request's sender is told (a message-not-sent error reply)."""

    reason: str
    detail: str
    answer: bool = False


@dataclass(frozen=True, slots=True)
class Notice:
    """Something to count under ``reason`` and log (``detail``); the message goes on."""

    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class ReplyRoute:
    """The route to learn for the sender of a request that arrived from a backend."""

    participant_id: str
    address: MqttAddress
    expiry_date_ms: int


# ---------------------------------------------------------------------- time and queues


def check_expiry(expiry_date_ms: int, now_ms: int) -> Refusal | None:
    """A message is routed up to and including its expiry date, not after."""
    if expiry_date_ms >= now_ms:
        return None
    return Refusal(EXPIRED, f"expired {now_ms - expiry_date_ms} ms ago")


def check_queued(expiry_date_ms: int, now_ms: int) -> Refusal | None:
    """A queued message leaves its queue when it expires; a request's sender is told."""
    if expiry_date_ms >= now_ms:
        return None
    return Refusal(EXPIRED_IN_QUEUE, "expired while waiting for a route or a connection",
                   answer=True)


def admit_to_queue(queued_for_recipient: int, queued_total: int, *, max_per_recipient: int,
                   max_total: int, why: str) -> Refusal | None:
    """A message may wait (``why``: the reason it cannot go out now) while its recipient's
    queue holds fewer than ``max_per_recipient`` and all queues fewer than ``max_total``."""
    if queued_for_recipient < max_per_recipient and queued_total < max_total:
        return None
    return Refusal(QUEUE_FULL, f"queue full ({why})", answer=True)


# ---------------------------------------------------------------------- admission


def admit_from_client(sender_entry: RoutingEntry | None, origin: Address) -> Refusal | None:
    """A message from the websocket client at ``origin``, whose sender's routing entry is
    ``sender_entry``: refused when the sender is routed to another address."""
    if sender_entry is None:
        return None
    address = sender_entry.address
    if address is origin or address == origin:
        return None
    return Refusal(SPOOFED_SENDER, f"the sender is routed to {address!r}")


def admit_from_backend(message: Message, recipient_entry: RoutingEntry | None, now_ms: int
                       ) -> Refusal | None:
    """A message from an MQTT backend (``recipient_entry``: its recipient's routing entry):
    refused when expired, or when it is not a multicast and its recipient is behind MQTT."""
    refusal = check_expiry(message.expiry_date_ms, now_ms)
    if refusal is not None:
        return refusal
    if (message.type is not _MULTICAST and recipient_entry is not None
            and type(recipient_entry.address) is MqttAddress):
        return _relay_refusal(recipient_entry.address)
    return None


def admit_caller(origin: Address | None, serves_remote_callers: bool) -> Refusal | None:
    """A call to a provider: one that serves local participants only refuses callers that
    arrive over MQTT."""
    if serves_remote_callers or type(origin) is not MqttAddress:
        return None
    return Refusal(REMOTE_CALLER, "serves local participants only")


# ---------------------------------------------------------------------- identity


def check_owner(caller: Address | None, entry: RoutingEntry | None) -> Refusal | None:
    """Whether a call from ``caller`` (None: this process) may act for the participant whose
    routing entry is ``entry``: only if it is routed to the caller."""
    if caller is None or (entry is not None and entry.address == caller):
        return None
    return Refusal(NOT_OWNER, "it is not routed to the caller")


def check_next_hop(address: Address, caller: Address | None) -> Refusal | None:
    """add_next_hop(participant, ``address``) called by ``caller`` (None: this process)."""
    if caller is None:
        if type(address) is WebSocketClientAddress:
            return None
        return Refusal(NOT_A_CLIENT_ADDRESS, "only WebSocketClientAddresses are accepted")
    if address == caller:
        return None
    return Refusal(FOREIGN_NEXT_HOP,
                   f"{address!r} is not the caller's own address {caller!r}")


# ---------------------------------------------------------------------- replyTo


def reply_route(message: Message, *, gbid: str, now_ms: int, grace_ms: int, max_ttl_ms: int
                ) -> ReplyRoute | Refusal | None:
    """What a message that arrived from backend ``gbid`` teaches about answering its sender:
    nothing (None) unless it is a request; a refusal when it cannot be answered."""
    if message.type not in REQUEST_TYPES:
        return None
    reply_to = message.reply_to
    if type(reply_to) is not MqttAddress:
        return Refusal(NO_REPLY_TO,
                       f"a request without an MQTT replyTo ({reply_to!r}) cannot be answered")
    # the sender chooses the expiry: a learned route never outlives now + the maximum
    expiry = min(message.expiry_date_ms, now_ms + max_ttl_ms)
    return ReplyRoute(message.sender, reply_to.with_broker_uri(gbid),
                      min(expiry + grace_ms, NO_EXPIRY_MS))


def reply_route_learned(result: PutResult, route: ReplyRoute) -> Refusal | Notice | None:
    """What the routing table's answer to learning ``route`` means for the request."""
    if result.accepted:
        return None
    if result is PutResult.REJECTED_INVALID:
        return Refusal(BAD_REPLY_TO, f"replyTo {route.address!r} cannot be used (it is this "
                                     "cluster controller's own address)")
    return Notice(REPLY_TO_NOT_LEARNED, f"replyTo not learned: {result.reason}")


def outgoing_reply_to(message: Message, global_address: Address) -> Address | None:
    """The replyTo a message leaving for a backend must carry instead of its own (None: keep
    it): a request is answered at this cluster controller's global address."""
    if message.type in REQUEST_TYPES and message.reply_to != global_address:
        return global_address
    return None


# ---------------------------------------------------------------------- forwarding


def _relay_refusal(next_hop: Address) -> Refusal:
    return Refusal(REFUSED_RELAY, f"it came from MQTT and its recipient is behind MQTT too "
                                  f"({next_hop!r}); not relayed")


def check_forward(origin: Address | None, next_hop: Address, parent: Address | None
                  ) -> Refusal | None:
    """May a message that arrived from ``origin`` (None: made in this process) go to
    ``next_hop``? ``parent``: a libjoynr runtime's cluster controller."""
    if origin is None:
        return None
    if type(next_hop) is MqttAddress and type(origin) is MqttAddress:
        return _relay_refusal(next_hop)
    if parent is None:
        return None
    if (next_hop is parent or next_hop == parent) and (origin is parent or origin == parent):
        return Refusal(NO_ROUTE, "no route for a message from the cluster controller",
                       answer=True)
    return None


def multicast_hops(receiver_addresses: Iterable[Address], origin: Address | None,
                   parent: Address | None) -> set[Address]:
    """The next hops of a multicast: each receiver's address once, the parent unless it came
    from there, never ``origin``."""
    hops = set(receiver_addresses)
    if parent is not None and origin != parent:
        hops.add(parent)  # the cluster controller serves the other runtimes
    if origin is not None:
        hops.discard(origin)
    return hops


def publishes_globally(origin: Address | None, provider_entry: RoutingEntry | None) -> bool:
    """Whether a cluster controller publishes a multicast to the backends: its provider (the
    multicast's sender) is routed here, globally visible and not behind MQTT, and the
    multicast did not come from MQTT."""
    return (
        type(origin) is not MqttAddress
        and provider_entry is not None
        and provider_entry.is_globally_visible
        and type(provider_entry.address) is not MqttAddress
    )


def multicast_backend(provider_entry: RoutingEntry | None) -> str | None:
    """The backend (GBID) in which a receiver of this provider's multicasts must subscribe:
    the provider's own, when it is behind MQTT; None otherwise."""
    if provider_entry is None or type(provider_entry.address) is not MqttAddress:
        return None
    return provider_entry.address.broker_uri

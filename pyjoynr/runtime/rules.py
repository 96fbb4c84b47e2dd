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
    (:func:`check_queued`), and so does one that waited longer than a queue keeps any message,
    whatever expiry its sender chose. A message waits only while its recipient's queue and all
    queues together have room, counted in messages and in bytes, and while the connection it
    arrived over holds less than its share of all queues, so that one sender cannot take them
    all (:func:`queue_admission`: every bounded queue asks it, runtime.queues).

Who may send what
    A websocket client speaks only for its own participants: a message whose sender is routed
    to another address is refused as a spoofed sender (:func:`admit_from_client`). A message
    that arrives from an MQTT backend is refused when it is expired or when its recipient is
    behind MQTT too (:func:`admit_from_backend`). The cluster controller's own providers
    (Routing, the local directory) serve callers that arrive over MQTT not at all
    (:func:`admit_caller`): over MQTT a caller's identity cannot be checked.

Senders without a route
    Which messages from a websocket client may carry a sender that is not routed to the
    arriving connection (:func:`admit_from_client`)? A sender routed to another address is
    always refused (spoofed). A sender without any route is accepted only on the calls a
    participant makes as a caller: requests, one-way requests, subscription requests and
    subscription stops. A libjoynr runtime's Routing proxy registers itself with its very
    first call (its sender cannot be routed before), and a client that pipelines a proxy's
    add_next_hop and its first call sends the call before the CC has run add_next_hop; the
    answer to such a call waits in the cluster controller until its recipient is routed, and
    a caller's identity matters only where it acts for a participant, which is checked
    against the connection (:func:`check_owner`). The answers and multicasts of a provider
    (replies, subscription replies, publications, multicasts) are refused unless their sender
    is routed to the arriving connection: a provider is registered (add_next_hop) before
    anything can reach it, and the libjoynr runtime holds its messages after a reconnect until
    it has registered again. A multicast is accepted only from the provider its multicast id
    names (``<provider>/<broadcast>[/<partition>...]``), on the connection that provider is
    routed to (:func:`check_multicast_sender`); the router refuses a multicast whose sender is
    not its provider on every transport. A multicast that arrives from MQTT is accepted only
    for a provider that is itself behind MQTT: one of a provider local to this cluster
    controller (or unknown here) is a forgery from outside (:func:`admit_multicast_from_backend`).

Acting for a participant
    A call acts for a participant when it comes from this process or when the participant is
    routed to the connection the call arrived over (:func:`check_owner`). A websocket client
    may add a next hop only for its own connection; code of this process only for websocket
    clients (:func:`check_next_hop`). A participant routed to a live websocket connection
    cannot be claimed by another connection: only once the first one is gone (closed, or it
    fails a ping within the ping timeout) or has removed it (:func:`contested_owner`,
    :func:`check_claim`). A provider that restarts in a new runtime after a crash therefore
    gets its participantId back, and nobody takes it while its owner lives.

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

from pyjoynr.runtime.addresses import (
    CLIENT_ADDRESS_TYPES,
    Address,
    MqttAddress,
)
from pyjoynr.runtime.messages import REQUEST_TYPES, Message, MessageType
from pyjoynr.runtime.multicast import MulticastError, make_multicast_id
from pyjoynr.runtime.routing import NO_EXPIRY_MS, PutResult, RoutingEntry

__all__ = [
    "BAD_MULTICAST_RECEIVER",
    "BAD_OWNER",
    "BAD_REPLY_TO",
    "CLAIMED_FROM_DEAD",
    "DUPLICATE",
    "EXPIRED",
    "EXPIRED_IN_QUEUE",
    "FOREIGN_MULTICAST",
    "FOREIGN_NEXT_HOP",
    "FORGED_MULTICAST",
    "NOT_A_CLIENT_ADDRESS",
    "NOT_OWNER",
    "NO_REPLY_TO",
    "NO_ROUTE",
    "PARTICIPANT_IN_USE",
    "QUEUE_FULL",
    "QUEUE_SHARE_USED",
    "QUEUE_WAIT_EXCEEDED",
    "REFUSED_RELAY",
    "REMOTE_CALLER",
    "REPLY_TO_NOT_LEARNED",
    "SPOOFED_SENDER",
    "UNROUTED_SENDER",
    "VANISHED_PROVIDER_KEPT",
    "Notice",
    "Queued",
    "Refusal",
    "ReplyRoute",
    "admit_caller",
    "admit_from_backend",
    "admit_from_client",
    "admit_multicast_from_backend",
    "check_claim",
    "check_expiry",
    "check_forward",
    "check_multicast_receiver",
    "check_multicast_sender",
    "check_next_hop",
    "check_owner",
    "check_queued",
    "check_signature",
    "contested_owner",
    "exceeds_queue",
    "exceeds_share",
    "exceeds_total",
    "multicast_backend",
    "multicast_hops",
    "multicast_provider",
    "origin_share_of",
    "outgoing_reply_to",
    "publishes_globally",
    "queue_admission",
    "reply_route",
    "reply_route_learned",
    "vanished_provider",
]

# enum members as module constants for the per-message paths (cheaper to look up in 3.11)
_MULTICAST = MessageType.MULTICAST
#: what a provider sends: accepted from a websocket client only when the sender is routed there
_PROVIDER_TYPES = frozenset({MessageType.REPLY, MessageType.SUBSCRIPTION_REPLY,
                             MessageType.PUBLICATION, MessageType.MULTICAST})

# ---------------------------------------------------------------------- reason codes
# (the keys under which the acting component counts; the router prefixes its drops "dropped-")

#: the message expired before it could be routed
EXPIRED: Final = "expired"
#: the message expired while it waited in a queue
EXPIRED_IN_QUEUE: Final = "expired-in-queue"
#: no room in the queue of the recipient or in all queues together
QUEUE_FULL: Final = "queue-full"
#: the connection the message arrived over already holds its share of all queues
QUEUE_SHARE_USED: Final = "queue-share-used"
#: the message waited in a queue as long as any message may, whatever its expiry
QUEUE_WAIT_EXCEEDED: Final = "queue-wait-exceeded"
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
#: an answer or multicast from a websocket client whose sender has no route
UNROUTED_SENDER: Final = "unrouted-sender"
#: a multicast whose sender is not the provider its multicast id names
FORGED_MULTICAST: Final = "forged-multicast"
#: add/removeMulticastReceiver with a multicast id that is not a subscription pattern of the
#: provider named
BAD_MULTICAST_RECEIVER: Final = "bad-multicast-receiver"
#: a multicast from MQTT whose provider is not behind MQTT (local to this CC, or unknown)
FOREIGN_MULTICAST: Final = "foreign-multicast"
#: a claim of a participant routed to another, live websocket connection
PARTICIPANT_IN_USE: Final = "participant-in-use"
#: a participant claimed from a websocket connection that is gone (a notice)
CLAIMED_FROM_DEAD: Final = "claimed-from-dead-connection"
#: add_next_hop from a websocket client for an address that is not its own connection
FOREIGN_NEXT_HOP: Final = "refused-foreign-next-hop"
#: add_next_hop from this process for an address that is not a websocket client's
NOT_A_CLIENT_ADDRESS: Final = "not-a-client-address"
#: a provider of a vanished connection is kept after its grace period (a notice)
VANISHED_PROVIDER_KEPT: Final = "vanished-provider-kept"
#: a message on a connection with an owner id that is not custom-signed with that id
BAD_OWNER: Final = "bad-owner"
#: a message from a backend whose id was accepted before (MQTT QoS 1: at least once)
DUPLICATE: Final = "duplicate"


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


def check_queued(expiry_date_ms: int, now_ms: int, *, queued_at_ms: int | None = None,
                 max_wait_ms: int | None = None) -> Refusal | None:
    """A queued message leaves its queue when it expires, or when it has waited (since
    ``queued_at_ms``) longer than ``max_wait_ms``: its sender chose its expiry, and one that lies
    years ahead must not keep it in a queue for years. A request's sender is told."""
    if expiry_date_ms < now_ms:
        return Refusal(EXPIRED_IN_QUEUE, "expired while waiting for a route or a connection",
                       answer=True)
    if (queued_at_ms is not None and max_wait_ms is not None
            and now_ms - queued_at_ms > max_wait_ms):
        return Refusal(QUEUE_WAIT_EXCEEDED,
                       f"waited {now_ms - queued_at_ms} ms for a route or a connection, longer "
                       f"than a queue keeps any message ({max_wait_ms} ms)", answer=True)
    return None


@dataclass(frozen=True, slots=True)
class Queued:
    """What waits in a queue, or in several together: messages and the bytes they hold."""

    messages: int = 0
    bytes: int = 0


def origin_share_of(messages: int, bytes_: int, share: float) -> Queued:
    """What one sending connection may hold of queues taking ``messages`` messages and
    ``bytes_`` bytes: ``share`` of each, at least one message of any size."""
    return Queued(max(1, int(messages * share)), max(1, int(bytes_ * share)))


def exceeds_queue(queue: Queued, size: int, limits: Queued, *, holds: int | None = None
                  ) -> bool:
    """Would one more message of ``size`` bytes take a queue holding ``queue`` beyond its
    ``limits``? It takes fewer messages than ``limits.messages`` and bytes that fit in
    ``limits.bytes``, but while it holds nothing it takes one message of any size (a message
    that passed the frame size limit can always wait alone). ``holds``: the messages it holds
    when more than wait in it (an MQTT backend holds those in flight until the broker
    acknowledges them): they count for its bytes and for its being empty, not for its
    messages."""
    held = queue.messages if holds is None else holds
    return queue.messages >= limits.messages or (
        held > 0 and queue.bytes + size > limits.bytes)


def exceeds_total(total: Queued, size: int, limits: Queued) -> bool:
    """Would one more message of ``size`` bytes take queues holding ``total`` together beyond
    their ``limits``? All queues together take only what fits."""
    return total.messages >= limits.messages or total.bytes + size > limits.bytes


def exceeds_share(origin: Queued, size: int, share: Queued) -> bool:
    """Would one more message of ``size`` bytes take a connection holding ``origin`` beyond
    its ``share``? A connection holding nothing takes one message of any size. The one rule of
    a connection's share, for the router's queues and an MQTT backend's queue alike."""
    return origin.messages >= share.messages or (
        origin.messages > 0 and origin.bytes + size > share.bytes)


def queue_admission(size: int, queue: Queued, limits: Queued, *, why: str,
                    holds: int | None = None, total: Queued | None = None,
                    total_limits: Queued | None = None, origin: Queued | None = None,
                    share: Queued | None = None, name: str = "the recipient's queue"
                    ) -> Refusal | None:
    """May a message of ``size`` bytes wait in a queue (``why``: the reason it cannot go out
    now)? The one rule of every bounded queue (runtime.queues), in three parts, asked in this
    order:

    - the queue itself (``queue``, ``name`` in the refusal's detail) has room for it within its
      ``limits`` (:func:`exceeds_queue`; ``holds``: see there);
    - the queues it shares its limits with hold together (``total``) less than
      ``total_limits`` (:func:`exceeds_total`; None: it shares none);
    - the connection it arrived over holds (``origin``: what its messages hold; None for
      messages made in this process, which have no share of their own) less than its
      ``share`` (:func:`exceeds_share`; None: no share of its own)."""
    if exceeds_queue(queue, size, limits, holds=holds):
        return Refusal(QUEUE_FULL, f"queue full ({why}): {name} holds "
                                   f"{queue.messages} message(s), {queue.bytes} bytes",
                       answer=True)
    if total is not None and total_limits is not None and exceeds_total(total, size,
                                                                          total_limits):
        return Refusal(QUEUE_FULL, f"queue full ({why}): all queues hold {total.messages} "
                                   f"message(s), {total.bytes} bytes", answer=True)
    if origin is not None and share is not None and exceeds_share(origin, size, share):
        return Refusal(QUEUE_SHARE_USED,
                       f"queue full for its connection ({why}): its messages hold "
                       f"{origin.messages} message(s), {origin.bytes} bytes of all queues, "
                       f"its share is {share.messages} message(s), {share.bytes} bytes",
                       answer=True)
    return None


# ---------------------------------------------------------------------- admission


def admit_from_client(message: Message, sender_entry: RoutingEntry | None, origin: Address
                      ) -> Refusal | None:
    """A ``message`` from the websocket client at ``origin``, whose sender's routing entry is
    ``sender_entry``: refused when the sender is routed to another address; when it has no
    route and the message is what a provider sends (an answer, a multicast); and when it is a
    multicast whose sender is not the provider its id names."""
    if sender_entry is None:
        if message.type in _PROVIDER_TYPES:
            return Refusal(UNROUTED_SENDER, "the sender is not routed to this connection (a "
                                            "provider's answers and multicasts come from a "
                                            "registered provider)")
        return None
    address = sender_entry.address
    if not (address is origin or address == origin):
        return Refusal(SPOOFED_SENDER, f"the sender is routed to {address!r}")
    if message.type is _MULTICAST:
        return check_multicast_sender(message)
    return None


def check_signature(message: Message, signature: bytes) -> Refusal | None:
    """A message on a connection whose client certificate names an owner id must be
    custom-signed with exactly its UTF-8 bytes (``signature``), as joynr's C++ cluster
    controller requires."""
    if message.custom_signature == signature:
        return None
    owner_id = signature.decode("utf-8", "replace")
    return Refusal(BAD_OWNER, f"not custom-signed with the owner id {owner_id!r} of the "
                              "connection's certificate")


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


def multicast_provider(multicast_id: str) -> str:
    """The provider participantId a multicast id names (its first level)."""
    return multicast_id.partition("/")[0]


def _of_provider(multicast_id: str, provider: str) -> bool:
    """Whether ``multicast_id`` is one of ``provider``'s (``<provider>/<broadcast>...``)."""
    return (multicast_id.startswith(provider)
            and multicast_id[len(provider):len(provider) + 1] == "/")


def check_multicast_sender(message: Message) -> Refusal | None:
    """A multicast's sender must be the provider its id names (``<provider>/<broadcast>...``)."""
    sender, recipient = message.sender, message.recipient
    if _of_provider(recipient, sender):
        return None
    return Refusal(FORGED_MULTICAST, f"the sender {sender!r} is not the provider of multicast "
                                     f"{recipient!r}")


def admit_multicast_from_backend(message: Message, provider_entry: RoutingEntry | None
                                 ) -> Refusal | None:
    """A multicast from an MQTT backend (``provider_entry``: the routing entry of the provider
    its id names): its sender must be that provider, and the provider must be behind MQTT. A
    provider local to this cluster controller publishes its multicasts through it, never
    through a backend; one unknown here has no receivers that asked a backend for it."""
    refusal = check_multicast_sender(message)
    if refusal is not None:
        return refusal
    if provider_entry is None:
        return Refusal(FOREIGN_MULTICAST, f"its provider {message.sender!r} is not known here")
    if type(provider_entry.address) is not MqttAddress:
        return Refusal(FOREIGN_MULTICAST,
                       f"its provider {message.sender!r} is local to this cluster controller "
                       f"({provider_entry.address!r}): only the cluster controller publishes "
                       "its multicasts")
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


def check_multicast_receiver(multicast_id: str, subscriber: str, provider: str,
                             caller: Address | None, subscriber_entry: RoutingEntry | None
                             ) -> Refusal | None:
    """add/removeMulticastReceiver(``multicast_id``, ``subscriber``, ``provider``) called by
    ``caller`` (None: this process): the id is a subscription pattern of that provider
    (``<provider>/<broadcast>[/<partition>...]``, ``+`` and a last ``*`` allowed), and the
    subscriber (whose routing entry is ``subscriber_entry``) is the caller's (check_owner)."""
    if not _of_provider(multicast_id, provider):
        return Refusal(BAD_MULTICAST_RECEIVER, "multicast id does not belong to the provider")
    name, *partitions = multicast_id[len(provider) + 1:].split("/")
    try:
        make_multicast_id(provider, name, partitions, for_subscription=True)
    except MulticastError as exc:
        return Refusal(BAD_MULTICAST_RECEIVER, f"bad multicast id: {exc}")
    if check_owner(caller, subscriber_entry) is not None:
        return Refusal(NOT_OWNER,
                       f"multicast receiver {subscriber} is not a participant of the caller")
    return None


def check_next_hop(address: Address, caller: Address | None) -> Refusal | None:
    """add_next_hop(participant, ``address``) called by ``caller`` (None: this process)."""
    if caller is None:
        if type(address) in CLIENT_ADDRESS_TYPES:
            return None
        return Refusal(NOT_A_CLIENT_ADDRESS,
                       "only WebSocketClientAddresses and UdsClientAddresses are accepted")
    if address == caller:
        return None
    return Refusal(FOREIGN_NEXT_HOP,
                   f"{address!r} is not the caller's own address {caller!r}")


def contested_owner(caller: Address | None, entry: RoutingEntry | None
                    ) -> Address | None:
    """A claim of the participant whose routing entry is ``entry`` by ``caller`` (None: this
    process), e.g. add_next_hop: the websocket connection whose liveness decides it (then ask
    :func:`check_claim`), or None when the claim is not contested (this process, a participant
    without a route, one routed to the caller, or one routed elsewhere than to a websocket
    client: the routing table's precedence decides those)."""
    if caller is None or entry is None:
        return None
    address = entry.address
    if type(address) in CLIENT_ADDRESS_TYPES and address != caller:
        return address
    return None


def check_claim(participant_id: str, owner: Address, owner_alive: bool) -> Refusal | Notice:
    """A contested claim of ``participant_id``, routed to the websocket connection ``owner``:
    refused while that connection is alive (it answers a ping within the ping timeout);
    allowed (a notice) once it is gone, e.g. a provider restarted in a new runtime after a
    crash."""
    if owner_alive:
        return Refusal(PARTICIPANT_IN_USE,
                       f"{participant_id} is routed to the live connection {owner!r}")
    return Notice(CLAIMED_FROM_DEAD,
                  f"{participant_id} was routed to {owner!r}, which is gone: taken over")


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


# ---------------------------------------------------------------------- vanished providers


def vanished_provider(registered_again: bool, entry: RoutingEntry | None) -> Notice | None:
    """A provider whose websocket connection ended without unregistering it, when its grace
    period (``[discovery] vanished_provider_grace_s``) is over: None = remove its registration,
    in the local directory and in the GCD; a Notice = keep it, because it was registered again
    meanwhile (a restarted runtime re-using its participantId after a crash), or
    is routed again (``entry``: its runtime reconnected and re-registered its participants)."""
    if registered_again:
        return Notice(VANISHED_PROVIDER_KEPT, "registered again")
    if entry is not None:
        return Notice(VANISHED_PROVIDER_KEPT, f"routed again, to {entry.address!r}")
    return None

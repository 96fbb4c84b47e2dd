"""The cluster controller's access controller: the decisions of its access control tables
(:mod:`.store`) applied to what it routes and registers.

- Consumers: the router asks :meth:`AccessController.admit` (its delivery gate,
  runtime.router) before it hands a message to a transport. A request, one-way request,
  subscription request (attribute, broadcast, multicast) or subscription stop about to go to
  a participant of this host (a websocket or UDS client, or this process) is checked: its
  recipient's discovery entry names the domain and interface, the message's ``creator`` (the
  uid the router's way in gave it) the user, and the operation is read from its body when
  the entries that apply name operations. Whitelisted recipients (the cluster controller's
  own Routing and Discovery providers, the GCD) and every other message type (replies,
  publications, multicasts) pass unchecked, as in joynr's cluster controller.
- Providers: :meth:`AccessController.check_registration` is called by the local discovery
  for every registration of a provider (local or global scope) made by a libjoynr runtime.

A refusal is counted per reason (:attr:`AccessController.counters`), logged rate-limited per
reason and uid, recorded in the audit log by the router, and answered: a refused call with a
provider runtime error, a refused registration with joynr's own provider runtime error text.
In audit mode nothing is refused: what would have been is logged and counted
(``audit-would-refuse-...``) and let through.

No I/O here: the tables come from the caller (:mod:`.files` reads them), the recipient's
entry from the local discovery.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Protocol

from pyjoynr.cluster_controller.access.entries import MAX_NAME_CHARS, AccessTables, Permission
from pyjoynr.cluster_controller.access.store import AccessStore
from pyjoynr.runtime.addresses import (
    Address,
    InProcessAddress,
    UdsClientAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.bodies import BodyFormat, decode_body, format_of
from pyjoynr.runtime.errors import ProviderRuntimeError
from pyjoynr.runtime.interface import lower_camel
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import PAYLOAD_TYPES, PayloadError
from pyjoynr.runtime.records import REFUSED
from pyjoynr.runtime.rules import Refusal
from pyjoynr.runtime.telemetry import Telemetry

__all__ = ["CHECKED_TYPES", "AccessController", "ProviderInterface"]

log = get_logger(__name__)

#: the message types checked (joynr's cluster controller checks the same: every type but
#: replies, subscription replies, publications and multicasts)
CHECKED_TYPES = frozenset({
    MessageType.REQUEST, MessageType.ONE_WAY, MessageType.SUBSCRIPTION_REQUEST,
    MessageType.BROADCAST_SUBSCRIPTION_REQUEST, MessageType.MULTICAST_SUBSCRIPTION_REQUEST,
    MessageType.SUBSCRIPTION_STOP,
})
#: the next hops of participants on this host: a message to one of them is checked
LOCAL_HOPS = frozenset({WebSocketClientAddress, UdsClientAddress, InProcessAddress})
#: decisions kept between two changes of the tables; beyond, the cache starts anew (its keys
#: hold an operation name read from a message: bounded by the message's size)
MAX_CACHED_DECISIONS = 8192
#: the longest operation name looked up (longer ones are refused as malformed)
MAX_OPERATION_CHARS = 1_000

#: the uid asked for a message whose uid is longer than an entry's may be (it matches "*" only)
_UNNAMED_UID = "\0" * (MAX_NAME_CHARS + 1)

#: refusal reasons (counted as ``dropped-<reason>`` by the router and as ``refused-<reason>``
#: here)
DENIED = "acl-denied"
UNKNOWN_PROVIDER = "acl-unknown-provider"
NO_OPERATION = "acl-no-operation"
REGISTRATION_DENIED = "rcl-denied"


class ProviderInterface(Protocol):
    """What the access control needs of a provider's discovery entry."""

    @property
    def domain(self) -> str: ...

    @property
    def interface_name(self) -> str: ...


class AccessController:
    """The decisions of the access control tables for one cluster controller.

    ``resolve``: the domain and interface of a participant registered on this host (the
    local discovery's entry), None for one it does not know. ``whitelist``: recipients never
    checked. ``audit``: log and count what would be refused, refuse nothing."""

    def __init__(self, tables: Iterable[AccessTables],
                 resolve: Callable[[str], ProviderInterface | None], *,
                 whitelist: Iterable[str] = (), audit: bool = False,
                 telemetry: Telemetry | None = None) -> None:
        self.store = AccessStore(tables)
        self.audit = audit
        self._resolve = resolve
        self.whitelist = frozenset(whitelist)
        self._telemetry = Telemetry() if telemetry is None else telemetry
        #: refusals per reason (``refused-acl-denied``, ...), what audit mode let through
        #: (``audit-would-refuse-...``), checks made and decisions cached
        self.counters: Counter[str] = Counter()
        # (uid, domain, interface, operation or None) -> permission, for store.generation
        self._cache: dict[tuple[str, str, str, str | None], Permission | None] = {}
        self._cache_generation = self.store.generation

    # ------------------------------------------------------------------ the tables

    def replace(self, tables: Iterable[AccessTables]) -> None:
        """All entries anew (a reload of the provisioning files)."""
        self.store.replace(tables)

    def _cached(self) -> dict[tuple[str, str, str, str | None], Permission | None]:
        cache = self._cache
        generation = self.store.generation
        if generation != self._cache_generation or len(cache) >= MAX_CACHED_DECISIONS:
            cache.clear()
            self._cache_generation = generation
        return cache

    # ------------------------------------------------------------------ consumers

    def admit(self, message: Message, hop: Address) -> Refusal | None:
        """The router's delivery gate (runtime.router.DeliveryGate)."""
        kind = message.type
        if kind not in CHECKED_TYPES or type(hop) not in LOCAL_HOPS:
            return None
        recipient = message.recipient
        if recipient in self.whitelist:
            return None
        uid = message.creator or ""
        if len(uid) > MAX_NAME_CHARS:
            # (a trusted signature may be that long) no entry names it: asked as a uid no
            # entry can name, so that only "*" entries apply and the cache keys stay small
            uid = _UNNAMED_UID
        self.counters["checked"] += 1
        provider = self._resolve(recipient)
        if provider is None:
            return self._refuse(message, uid, UNKNOWN_PROVIDER,
                                f"access control: {recipient} is no provider registered on "
                                "this host")
        domain, interface = provider.domain, provider.interface_name
        cache = self._cached()
        key: tuple[str, str, str, str | None] = (uid, domain, interface, None)
        if key in cache:
            permission = cache[key]
        else:
            permission = cache[key] = self.store.interface_permission(uid, domain, interface)
        operation = "*"
        if permission is None:  # the entries that apply name operations
            if kind is MessageType.SUBSCRIPTION_STOP:
                # a stop names no operation; ending a subscription is never more than not
                # having it (joynr's C++ cluster controller drops such stops)
                return None
            found = _operation_of(message)
            if found is None:
                return self._refuse(message, uid, NO_OPERATION,
                                    f"access control: the operation of {message.type.name} "
                                    f"{message.id} cannot be read from its body")
            operation = found
            key = (uid, domain, interface, operation)
            if key in cache:
                permission = cache[key]
            else:
                permission = cache[key] = self.store.consumer_permission(
                    uid, domain, interface, operation)
        if permission is Permission.YES:
            return None
        what = (f"interface {interface}" if operation == "*"
                else f"operation {operation} of interface {interface}")
        shown = "(a uid longer than any entry's)" if uid is _UNNAMED_UID else repr(uid)
        return self._refuse(message, uid, DENIED,
                            f"access control: user {shown} may not call {what} on domain "
                            f"{domain!r} ({permission.name if permission else 'NO'})")

    def _refuse(self, message: Message, uid: str, reason: str, detail: str
                ) -> Refusal | None:
        if self.audit:
            self.counters[f"audit-would-refuse-{reason}"] += 1
            self._telemetry.warn(log, f"audit-{reason}", f"uid {uid}",
                                 "ACL AUDIT: %s would be refused (let through in audit "
                                 "mode): %s", message.describe(), detail)
            return None
        self.counters[f"refused-{reason}"] += 1
        return Refusal(reason, detail, answer=True)

    # ------------------------------------------------------------------ providers

    def check_registration(self, uid: str | None, domain: str, interface_name: str,
                           participant_id: str, request: Message | None = None) -> None:
        """May ``uid`` register a provider of ``interface_name`` on ``domain``? None: the
        cluster controller's own registration (not checked). Raises ProviderRuntimeError with
        joynr's text when not (audit mode: logs and returns); the refused ``request`` (the
        Discovery call) is recorded in the audit log (refused, ``rcl-denied``)."""
        if uid is None:
            return
        self.counters["checked-registration"] += 1
        permission = self.store.provider_permission(uid, domain, interface_name)
        if permission is Permission.YES:
            return
        if self.audit:
            self.counters[f"audit-would-refuse-{REGISTRATION_DENIED}"] += 1
            self._telemetry.warn(log, f"audit-{REGISTRATION_DENIED}", f"uid {uid}",
                                 "ACL AUDIT: user %r would not be allowed to register "
                                 "interface %r on domain %r (provider %s; let through in audit "
                                 "mode)", uid, interface_name, domain, participant_id)
            return
        self.counters[f"refused-{REGISTRATION_DENIED}"] += 1
        audit = self._telemetry.audit
        if audit is not None and request is not None:
            audit.decided(request, REFUSED, None, REGISTRATION_DENIED, f"uid {uid[:200]}")
        self._telemetry.warn(log, REGISTRATION_DENIED, f"uid {uid}",
                             "registration of provider %s refused: user %r may not register "
                             "interface %r on domain %r (%s)", participant_id, uid,
                             interface_name, domain, permission.name)
        raise ProviderRuntimeError(f"Provider does not have permissions to register "
                                   f"interface {interface_name} on domain {domain}.")


def _operation_of(message: Message) -> str | None:
    """The operation a request, one-way request or subscription request names (its method,
    attribute or broadcast); None when its body does not decode or names none."""
    try:
        payload = decode_body(PAYLOAD_TYPES[message.type], message.body)
    except (PayloadError, ValueError, KeyError):
        return None
    name = getattr(payload, "method_name", None)
    if name is None:
        name = getattr(payload, "subscribe_to_name", None)
    if type(name) is not str or not name or len(name) > MAX_OPERATION_CHARS:
        return None
    if format_of(message.body) is BodyFormat.JSON:
        return name
    # a msgpack body names it as the provider's Python code does; the entries, as joynr
    # does: the lowerCamelCase of that (runtime.interface), kept for the next message
    joynr_name = _JOYNR_NAMES.get(name)
    if joynr_name is None:
        if len(_JOYNR_NAMES) >= MAX_CACHED_DECISIONS:
            _JOYNR_NAMES.clear()
        joynr_name = _JOYNR_NAMES[name] = lower_camel(name)
    return joynr_name


#: msgpack bodies' operation names -> joynr's (at most MAX_CACHED_DECISIONS kept)
_JOYNR_NAMES: dict[str, str] = {}

"""The cluster controller's Routing provider (``system/Routing``): the next hops and multicast
receivers of its libjoynr runtimes.

It is registered in-process under a provisioned participantId with a sticky route, and serves
local participants only. The caller is the connection its request arrived over: a libjoynr
runtime registers next hops at its own address only, and removes or subscribes for its own
participants only (the rules are in runtime.rules). A participant routed to another live
connection cannot be claimed: ``liveness`` (the websocket server's ``connection_alive``)
decides whether its connection is gone (then it is taken over, as a provider restarted after a
crash needs) or alive (then the claim is refused).

It takes each of joynr's eight address structs of ``addNextHop`` (an overload each): a
WebSocketClientAddress or UdsClientAddress (the caller's own) is routed; the structs of
transports this cluster controller does not have (Channel, Browser, Binder) are refused with a
provider runtime error naming the struct and why; a WebSocketAddress, UdsAddress or
MqttAddress is refused by the rules as any address that is not the caller's own.

What one connection (and one owner id) may hold is bounded (runtime.quotas, through the
:class:`cluster_controller.bounds.ConnectionHolds` the cluster controller hands in):
its routes and its multicast receivers. A call beyond a bound is refused with a provider
runtime error that names the bound and its value, counted (the bounds' counters) and logged
rate-limited; what the connection holds already stays. ``remove_next_hop`` and
``remove_multicast_receiver`` give back what they remove; the end of the connection all."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pyjoynr.cluster_controller.bounds import ConnectionHolds
from pyjoynr.programming.generated import system
from pyjoynr.programming.generated.system import RoutingProviderBase
from pyjoynr.programming.providers import current_origin, earlier_form
from pyjoynr.programming.system_interfaces import (
    ADDRESS_TYPE_NAMES,
    address_of,
    address_to_json,
)
from pyjoynr.runtime.addresses import Address, AddressError, address_from_dict
from pyjoynr.runtime.errors import ProviderRuntimeError
from pyjoynr.runtime.interface import joynr_type_name
from pyjoynr.runtime.logs import get_logger, peer_of
from pyjoynr.runtime.quotas import MULTICAST_RECEIVERS, ROUTES
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.rules import (
    Refusal,
    check_claim,
    check_multicast_receiver,
    check_next_hop,
    check_owner,
    contested_owner,
)
from pyjoynr.runtime.telemetry import Telemetry

T = TypeVar("T")

log = get_logger(__name__)

#: the address structs of addNextHop no transport of this cluster controller reaches, and why
UNROUTABLE_ADDRESS_TYPES: dict[str, str] = {
    "joynr.system.RoutingTypes.ChannelAddress":
        "joynr's HTTP channel messaging, which joynr no longer supports",
    "joynr.system.RoutingTypes.BrowserAddress":
        "a browser window, which joynr no longer supports",
    "joynr.system.RoutingTypes.BinderAddress": "an Android binder service",
}
assert set(UNROUTABLE_ADDRESS_TYPES) <= set(ADDRESS_TYPE_NAMES)


def caller_may_act_for(router: MessageRouter, participant_id: str) -> bool:
    """Whether the current call may act for ``participant_id``: it comes from this process, or
    the participant is routed to the connection the call arrived over (see
    runtime.rules.check_owner)."""
    return check_owner(current_origin(), router.route_of(participant_id)) is None


class RoutingProvider(RoutingProviderBase):
    """The Routing provider's implementation over the cluster controller's router."""

    serves_remote_callers = False

    def __init__(self, router: MessageRouter, global_address: Address | None = None, *,
                 liveness: Callable[[Address], Awaitable[bool]] | None = None,
                 telemetry: Telemetry | None = None, holds: ConnectionHolds | None = None
                 ) -> None:
        """``telemetry``: the process's counters and limit of repeated warnings (its own by
        default). ``holds``: what each connection may hold (cluster_controller.bounds; none:
        unbounded)."""
        super().__init__()
        self.router = router
        self.telemetry = Telemetry() if telemetry is None else telemetry
        self._holds = ConnectionHolds(None, self.telemetry) if holds is None else holds
        #: whether the connection behind a WebSocketClientAddress is alive (None: every
        #: owner counts as alive)
        self._liveness = liveness
        # the CC's address serialized as JSON ("" without MQTT): both attributes read it
        self._address = "" if global_address is None else address_to_json(global_address)

    async def get_global_address(self) -> str:
        return self._address

    async def get_reply_to_address(self) -> str:
        return self._address

    # joynr's eight overloads of addNextHop, one per address struct
    async def add_next_hop_channel(self, participant_id: str,
                                   channel_address: system.ChannelAddress,
                                   is_globally_visible: bool) -> None:
        await self._add_next_hop(participant_id, channel_address, is_globally_visible)

    async def add_next_hop_mqtt(self, participant_id: str, mqtt_address: system.MqttAddress,
                                is_globally_visible: bool) -> None:
        await self._add_next_hop(participant_id, mqtt_address, is_globally_visible)

    async def add_next_hop_browser(self, participant_id: str,
                                   browser_address: system.BrowserAddress,
                                   is_globally_visible: bool) -> None:
        await self._add_next_hop(participant_id, browser_address, is_globally_visible)

    async def add_next_hop_web_socket(self, participant_id: str,
                                      web_socket_address: system.WebSocketAddress,
                                      is_globally_visible: bool) -> None:
        await self._add_next_hop(participant_id, web_socket_address, is_globally_visible)

    async def add_next_hop_uds(self, participant_id: str, uds_address: system.UdsAddress,
                               is_globally_visible: bool) -> None:
        await self._add_next_hop(participant_id, uds_address, is_globally_visible)

    async def add_next_hop_binder(self, participant_id: str,
                                  binder_address: system.BinderAddress,
                                  is_globally_visible: bool) -> None:
        await self._add_next_hop(participant_id, binder_address, is_globally_visible)

    async def add_next_hop(self, participant_id: str,
                           web_socket_client_address: system.WebSocketClientAddress,
                           is_globally_visible: bool) -> None:
        await self._add_next_hop(participant_id, web_socket_client_address, is_globally_visible)

    async def add_next_hop_uds_client(self, participant_id: str,
                                      uds_client_address: system.UdsClientAddress,
                                      is_globally_visible: bool) -> None:
        await self._add_next_hop(participant_id, uds_client_address, is_globally_visible)

    @earlier_form("add_next_hop", ("participant_id", str), ("address", dict[str, Any]),
                  ("is_globally_visible", bool))
    async def add_next_hop_map(self, participant_id: str, address: dict[str, Any],
                               is_globally_visible: bool) -> None:
        """``add_next_hop`` as this project's runtimes of earlier versions call it: the address
        as its joynr map (``_typeName`` and joynr's member names)."""
        kind = address.get("_typeName")
        if isinstance(kind, str):
            self._refuse_unroutable(participant_id, kind)
        try:
            decoded = address_from_dict(address)
        except AddressError as exc:
            raise ProviderRuntimeError(f"add_next_hop: bad address: {exc}") from None
        await self._route(participant_id, decoded, is_globally_visible)

    async def _add_next_hop(self, participant_id: str, address: system.Address,
                            is_globally_visible: bool) -> None:
        self._refuse_unroutable(participant_id, joynr_type_name(type(address)))
        try:
            decoded = address_of(address)
        except AddressError as exc:
            raise ProviderRuntimeError(f"add_next_hop: bad address: {exc}") from None
        await self._route(participant_id, decoded, is_globally_visible)

    def _refuse_unroutable(self, participant_id: str, kind: str) -> None:
        """A ProviderRuntimeError (counted, logged) for an address struct named ``kind`` that
        no transport of this cluster controller reaches."""
        unroutable = UNROUTABLE_ADDRESS_TYPES.get(kind)
        if unroutable is None:
            return
        short = kind.removeprefix("joynr.system.RoutingTypes.")
        self.telemetry.counters["unroutable-address-type"] += 1
        self.telemetry.warn(log, "unroutable-address-type", peer_of(current_origin()),
                            "add_next_hop %s -> %s refused: not routable here",
                            participant_id, short)
        raise ProviderRuntimeError(
            f"add_next_hop {participant_id} refused: a {short} names {unroutable}; this "
            "cluster controller has no transport for it")

    async def _route(self, participant_id: str, decoded: Address, is_globally_visible: bool
                     ) -> None:
        """Route ``participant_id`` to ``decoded`` if the rules let the caller."""
        caller = current_origin()
        refusal = check_next_hop(decoded, caller)
        if refusal is not None:
            self.telemetry.counters[refusal.reason] += 1
            self.telemetry.warn(log, refusal.reason, peer_of(caller),
                                "add_next_hop %s -> %r refused: %s", participant_id,
                                decoded, refusal.detail)
            raise ProviderRuntimeError(f"add_next_hop refused: {refusal.detail}")
        if caller is not None:
            decoded = caller  # the same address; the connection's own object compares fastest
            await self._claim(participant_id, caller)
            self._holds.hold(ROUTES, caller, participant_id, f"add_next_hop {participant_id}",
                             log)
        result = self.router.add_route(participant_id, decoded,
                                       is_globally_visible=is_globally_visible)
        if not result.accepted:
            self._holds.release(ROUTES, caller, participant_id)
            self.telemetry.warn(log, "route-refused", peer_of(caller),
                                "add_next_hop %s -> %r refused: %s", participant_id, decoded,
                                result.reason)
            raise ProviderRuntimeError(f"add_next_hop {participant_id} refused: {result.reason}")

    async def _claim(self, participant_id: str, caller: Address) -> None:
        """A websocket caller claims ``participant_id``: refused (ProviderRuntimeError) while
        it is routed to another live connection (runtime.rules.check_claim)."""
        router = self.router
        owner = contested_owner(caller, router.route_of(participant_id))
        if owner is None:
            return
        alive = True if self._liveness is None else await self._liveness(owner)
        if contested_owner(caller, router.route_of(participant_id)) not in (None, owner):
            alive = True  # another connection took it meanwhile: that one is alive
        outcome = check_claim(participant_id, owner, alive)
        self.telemetry.counters[outcome.reason] += 1
        if isinstance(outcome, Refusal):
            self.telemetry.warn(log, outcome.reason, peer_of(caller),
                                "add_next_hop %s from %r refused: %s", participant_id, caller,
                                outcome.detail)
            raise ProviderRuntimeError(f"add_next_hop refused: {outcome.detail}")
        self.telemetry.warn(log, outcome.reason, peer_of(caller), "add_next_hop %s from %r: %s",
                            participant_id, caller, outcome.detail)

    async def remove_next_hop(self, participant_id: str) -> None:
        router = self.router
        if router.has_route(participant_id) and not caller_may_act_for(router, participant_id):
            raise ProviderRuntimeError(
                f"remove_next_hop {participant_id} refused: it is not routed to the caller"
            )
        self.router.remove_route(participant_id)
        self._holds.release(ROUTES, current_origin(), participant_id)

    async def resolve_next_hop(self, participant_id: str) -> bool:
        return self.router.has_route(participant_id)

    async def add_multicast_receiver(self, multicast_id: str, subscriber_participant_id: str,
                                     provider_participant_id: str) -> None:
        self._check_multicast(multicast_id, subscriber_participant_id, provider_participant_id)
        self._holds.hold(MULTICAST_RECEIVERS, current_origin(),
                         (multicast_id, subscriber_participant_id),
                         f"add_multicast_receiver {multicast_id} for {subscriber_participant_id}",
                         log)
        self.router.add_multicast_receiver(multicast_id, subscriber_participant_id,
                                           provider_participant_id)

    async def remove_multicast_receiver(self, multicast_id: str, subscriber_participant_id: str,
                                        provider_participant_id: str) -> None:
        self._check_multicast(multicast_id, subscriber_participant_id, provider_participant_id)
        self.router.remove_multicast_receiver(multicast_id, subscriber_participant_id)
        self._holds.release(MULTICAST_RECEIVERS, current_origin(),
                            (multicast_id, subscriber_participant_id))

    def _check_multicast(self, multicast_id: str, subscriber: str, provider: str) -> None:
        refusal = check_multicast_receiver(multicast_id, subscriber, provider, current_origin(),
                                           self.router.route_of(subscriber))
        if refusal is not None:
            raise ProviderRuntimeError(refusal.detail)

"""The libjoynr runtime: an application's connection to its cluster controller."""

from __future__ import annotations

import asyncio
import logging
import uuid
from types import TracebackType
from typing import Any

from runtime.addresses import (
    AddressError,
    InProcessAddress,
    WebSocketAddress,
    WebSocketClientAddress,
    address_from_dict,
)
from runtime.dispatch import Proxy, ProxyEndpoint
from runtime.errors import JoynrError
from runtime.housekeeping import RouterHousekeeping
from runtime.interface import interface_def
from runtime.joynr_runtime import JoynrRuntime, _DirectoryCalls
from runtime.router import MessageRouter, RouterSettings
from runtime.routing import RoutingTable, RuntimeKind
from runtime.system_interfaces import (
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
    Discovery,
    Routing,
)
from runtime.tasks import TaskSupervisor
from transports.inprocess import InProcessTransport

log = logging.getLogger(__name__)


class RemoteSystem(_DirectoryCalls):
    """System services of a libjoynr runtime: proxies to the CC's Routing and Discovery."""

    def __init__(self, runtime: JoynrRuntime, own_address: WebSocketClientAddress,
                 routing_participant_id: str, discovery_participant_id: str,
                 ttl_ms: int) -> None:
        self.runtime = runtime
        self.own_address = own_address
        self.routing = self._system_proxy(Routing, routing_participant_id, ttl_ms)
        self.discovery = self._system_proxy(Discovery, discovery_participant_id, ttl_ms)

    def _system_proxy(self, interface: type, provider_id: str, ttl_ms: int) -> Proxy:
        endpoint = ProxyEndpoint(f"{uuid.uuid4()}")
        router = self.runtime.router
        router.add_route(endpoint.participant_id, endpoint.address, is_globally_visible=False)
        return Proxy(self.runtime, interface_def(interface), provider_id, endpoint, ttl_ms)

    async def register_system_proxies(self) -> None:
        # the first call registers the routing proxy itself: its reply finds the way back
        # because the CC adds the route before it answers
        for proxy in (self.routing, self.discovery):
            await self.routing.add_next_hop(proxy.participant_id, self.own_address.to_dict(),
                                            False)

    async def add_next_hop(self, participant_id: str, is_globally_visible: bool) -> None:
        await self.routing.add_next_hop(participant_id, self.own_address.to_dict(),
                                        is_globally_visible)

    async def remove_next_hop(self, participant_id: str) -> None:
        await self.routing.remove_next_hop(participant_id)

    async def add_multicast_receiver(self, pattern: str, subscriber: str, provider: str) -> None:
        await self.routing.add_multicast_receiver(pattern, subscriber, provider)

    async def remove_multicast_receiver(self, pattern: str, subscriber: str, provider: str
                                        ) -> None:
        await self.routing.remove_multicast_receiver(pattern, subscriber, provider)



class LibjoynrRuntime(JoynrRuntime):
    """A JoynrRuntime connected to its cluster controller over websocket."""

    def __init__(self, cc_address: WebSocketAddress, client_id: str, *,
                 routing_participant_id: str = DEFAULT_ROUTING_PARTICIPANT_ID,
                 discovery_participant_id: str = DEFAULT_DISCOVERY_PARTICIPANT_ID,
                 system_ttl_ms: int = 10_000, router_settings: RouterSettings | None = None,
                 transport_settings: Any = None) -> None:
        from transports.websocket_client import WebSocketClientTransport  # noqa: PLC0415

        table = RoutingTable(RuntimeKind.LIBJOYNR)
        router = MessageRouter(table, router_settings, parent=cc_address)
        own = WebSocketClientAddress(client_id)
        router.register_transport(InProcessAddress, InProcessTransport())
        super().__init__(router)
        self.client_id = client_id
        self.remote = RemoteSystem(self, own, routing_participant_id, discovery_participant_id,
                                   system_ttl_ms)
        self.system = self.remote
        self._first_connect: asyncio.Future[None] | None = None
        self.transport = WebSocketClientTransport(router, cc_address, client_id,
                                                  transport_settings,
                                                  on_connected=self._on_connected)
        #: the owner of this runtime's background tasks
        self.tasks = TaskSupervisor(f"libjoynr runtime {client_id}")
        #: the router's timers: queue sweep and retries, routing table purge
        self.housekeeping = RouterHousekeeping(router, self.tasks)

    async def _on_connected(self) -> None:
        await self.remote.register_system_proxies()
        try:
            address = await self.remote.routing.global_address.get()
            self.reply_to_address = address_from_dict(address) if address else None
        except (JoynrError, AddressError) as exc:
            log.warning("could not read the cluster controller's reply-to address: %s", exc)
        if self.transport.connections > 1:
            await self.reregister()
        if self._first_connect is not None and not self._first_connect.done():
            self._first_connect.set_result(None)

    async def flow_control(self) -> None:
        await self.transport.wait_writable()

    async def start(self, timeout_s: float = 10.0) -> None:
        self._first_connect = asyncio.get_running_loop().create_future()
        self.housekeeping.start()
        await self.transport.start(wait_s=None)
        try:
            await asyncio.wait_for(asyncio.shield(self._first_connect), timeout_s)
        except TimeoutError:
            await self.stop()
            raise ConnectionError(f"could not connect to the cluster controller at "
                                  f"{self.transport.cc_address.url} within {timeout_s} s"
                                  ) from None

    async def stop(self) -> None:
        await self.transport.stop()
        await self.housekeeping.stop()
        await self.tasks.close()

    async def close(self) -> None:
        """Unregister everything (while connected), then disconnect."""
        if self.transport.connected:
            try:
                await asyncio.wait_for(super().close(), 10)
            except TimeoutError:
                log.warning("unregistering took too long; disconnecting anyway")
        await self.stop()

    async def __aenter__(self) -> LibjoynrRuntime:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()


async def connect(url: str | WebSocketAddress, *, client_id: str | None = None,
                  timeout_s: float = 10.0, **options: Any) -> LibjoynrRuntime:
    """Start a libjoynr runtime connected to the cluster controller at ``url``."""
    if isinstance(url, str):
        from urllib.parse import urlsplit  # noqa: PLC0415

        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise ValueError(f"not a websocket url: {url!r}")
        address = WebSocketAddress(parts.scheme, parts.hostname,
                                   parts.port or (443 if parts.scheme == "wss" else 80),
                                   parts.path or "/")
    else:
        address = url
    runtime = LibjoynrRuntime(address, client_id or f"libjoynr-{uuid.uuid4()}", **options)
    await runtime.start(timeout_s)
    return runtime

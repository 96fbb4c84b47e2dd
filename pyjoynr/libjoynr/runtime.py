"""The libjoynr runtime: an application's connection to its cluster controller.

:func:`connect` starts a :class:`LibjoynrRuntime` connected over websocket to the cluster
controller at a ``ws://`` or ``wss://`` url; the runtime reaches the CC's Routing and Discovery
providers through proxies (:class:`RemoteSystem`), registers its participants there and does
so again after every reconnect. It owns one task supervisor for its background tasks (the
websocket connection, the router's timers).

    async with connect("ws://127.0.0.1:4242/") as runtime:
        ...

    runtime = await connect("ws://127.0.0.1:4242/")
    ...
    await runtime.close()

A :class:`LibjoynrRuntime` offers what an application calls (register and unregister
providers, build proxies, close); it runs on :class:`LibjoynrCore`, its ``core``: the
JoynrRuntime with the websocket transport, the router's timers and the system proxies, for
tools, tests and measurements (``runtime.core.stop()`` disconnects without unregistering).

On every connection (the first and each reconnect) the runtime first makes its system proxies
routable at the cluster controller and reads the cluster controller's reply-to address, then
(after a reconnect) registers its participants, multicast receivers and providers again: a
cluster controller forgets the routes of a connection that closed. The order depends on the
configured dialect (:class:`~libjoynr.config.LibjoynrConfig`):

- native: ``addNextHop`` of the routing proxy, ``addNextHop`` of the discovery proxy, then
  ``getGlobalAddress``, all with msgpack bodies;
- joynr (joynr's runtimes' start sequence, which a cluster controller of joynr's expects):
  ``addNextHop`` of the routing proxy's own participantId (its reply finds the way back because
  the cluster controller adds the route before it answers), ``getReplyToAddress``, then
  ``addNextHop`` of the discovery proxy, all with joynr's JSON bodies in SMRF frames.
"""

from __future__ import annotations

import asyncio
import uuid
import warnings
from collections.abc import Coroutine, Generator, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from pyjoynr.libjoynr.config import LibjoynrConfig
from pyjoynr.programming.discovery_types import (
    DEFAULT_PROVIDER_EXPIRY_MS,
    DiscoveryQos,
    ProviderQos,
)
from pyjoynr.programming.joynr_runtime import (
    DEFAULT_DISCOVERY_RETRY_MS,
    DEFAULT_TTL_MS,
    Arbitration,
    DirectoryCalls,
    JoynrRuntime,
)
from pyjoynr.programming.providers import Provider
from pyjoynr.programming.proxies import Proxy
from pyjoynr.programming.system_interfaces import (
    Discovery,
    Routing,
    address_from_json,
    address_struct,
)
from pyjoynr.runtime.addresses import (
    Address,
    AddressError,
    InProcessAddress,
    UdsAddress,
    UdsClientAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.errors import JoynrError
from pyjoynr.runtime.housekeeping import RouterHousekeeping
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import Message
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry
from pyjoynr.transports.inprocess import InProcessTransport
from pyjoynr.transports.uds.client import UdsClientTransport
from pyjoynr.transports.websocket.client import WebSocketClientTransport

__all__ = ["DEFAULT_CONNECT_TIMEOUT_MS", "Connect", "LibjoynrCore", "LibjoynrRuntime",
           "RemoteSystem", "connect"]

#: how long :func:`connect` waits for the first connection by default
DEFAULT_CONNECT_TIMEOUT_MS = 10_000

log = get_logger(__name__)


class RemoteSystem(DirectoryCalls):
    """System services of a libjoynr runtime: proxies to the CC's Routing and Discovery."""

    def __init__(self, runtime: JoynrRuntime, own_address: Address,
                 config: LibjoynrConfig) -> None:
        self.runtime = runtime
        self.own_address = own_address
        #: its own address as joynr's struct, what addNextHop takes
        self._own_struct = address_struct(own_address)
        self._uds = type(own_address) is UdsClientAddress
        self.joynr_dialect = config.joynr_dialect
        ttl_ms = config.system_ttl_ms
        # the system providers of this project's CC read both; joynr's read JSON only
        fmt = BodyFormat.JSON if config.joynr_dialect else BodyFormat.MSGPACK
        self.routing: Proxy = runtime.system_proxy(Routing, config.routing_participant_id,
                                                   ttl_ms, body_format=fmt)
        self.discovery: Proxy = runtime.system_proxy(Discovery,
                                                     config.discovery_participant_id, ttl_ms,
                                                     body_format=fmt)

    def directory(self, ttl_ms: int | None) -> Proxy:
        return self.discovery if ttl_ms is None else self.discovery.with_ttl(ttl_ms)

    async def start_sequence(self) -> None:
        """Make the system proxies routable at the cluster controller and read its reply-to
        address into the runtime's ``reply_to_address``, in the order of the runtime's dialect
        (see the module docstring). The first call registers the routing proxy itself: its
        reply finds the way back because the CC adds the route before it answers."""
        if not self.joynr_dialect:
            await self._add_own_hop(self.routing)
            await self._add_own_hop(self.discovery)
            await self._read_reply_to_address(self.routing.global_address)
            return
        await self._add_own_hop(self.routing)
        await self._read_reply_to_address(self.routing.reply_to_address)
        await self._add_own_hop(self.discovery)

    async def _add_own_hop(self, proxy: Proxy) -> None:
        await self.add_next_hop(proxy.participant_id, False)

    async def _read_reply_to_address(self, attribute: Any) -> None:
        """The runtime's reply-to address from a Routing address attribute (the address
        serialized as JSON; "": the CC has none); kept as it was when it cannot be read."""
        try:
            text = await attribute.get()
            self.runtime.reply_to_address = address_from_json(text) if text else None
        except (JoynrError, AddressError) as exc:
            log.warning("could not read the cluster controller's reply-to address: %s", exc)

    async def add_next_hop(self, participant_id: str, is_globally_visible: bool) -> None:
        # addNextHop's overload of the runtime's own address type
        if self._uds:
            await self.routing.add_next_hop_uds_client(participant_id, self._own_struct,
                                                       is_globally_visible)
        else:
            await self.routing.add_next_hop(participant_id, self._own_struct,
                                            is_globally_visible)

    async def remove_next_hop(self, participant_id: str) -> None:
        await self.routing.remove_next_hop(participant_id)

    async def add_multicast_receiver(self, pattern: str, subscriber: str, provider: str) -> None:
        await self.routing.add_multicast_receiver(pattern, subscriber, provider)

    async def remove_multicast_receiver(self, pattern: str, subscriber: str, provider: str
                                        ) -> None:
        await self.routing.remove_multicast_receiver(pattern, subscriber, provider)


class LibjoynrCore(JoynrRuntime):
    """The machinery of a :class:`LibjoynrRuntime`: a JoynrRuntime connected to its cluster
    controller over websocket or a Unix domain socket (the transport, the router and its
    timers, the system proxies, re-registration after a reconnect). An application reaches it
    as ``runtime.core``."""

    def __init__(self, cc_address: WebSocketAddress | UdsAddress, client_id: str,
                 config: LibjoynrConfig | None = None) -> None:
        config = config or LibjoynrConfig()
        self.config = config
        table = RoutingTable(RuntimeKind.LIBJOYNR)
        # what this runtime counts and logs rate-limited (runtime.telemetry; no audit)
        telemetry = Telemetry()
        router = MessageRouter(table, config.router, parent=cc_address, telemetry=telemetry)
        own: Address = (UdsClientAddress(client_id) if isinstance(cc_address, UdsAddress)
                        else WebSocketClientAddress(client_id))
        router.register_transport(InProcessAddress, InProcessTransport(telemetry))
        super().__init__(router, reply_grace_ms=config.reply_grace_ms,
                         multicast_body=config.multicast_body_format,
                         joynr_dialect=config.joynr_dialect, telemetry=telemetry)
        self.client_id = client_id
        self.remote = RemoteSystem(self, own, config)
        self._system_ids = frozenset({config.routing_participant_id,
                                      config.discovery_participant_id})
        self.system = self.remote
        self._first_connect: asyncio.Future[None] | None = None
        #: the owner of this runtime's background tasks
        self.tasks = TaskSupervisor(f"libjoynr runtime {client_id}")
        self.transport: WebSocketClientTransport | UdsClientTransport
        if isinstance(cc_address, UdsAddress):
            self.transport = UdsClientTransport(router, cc_address, client_id, config.uds_settings,
                                                on_connected=self._on_connected,
                                                tasks=self.tasks, early=self._early)
        else:
            self.transport = WebSocketClientTransport(router, cc_address, client_id,
                                                      config.websocket_settings,
                                                      on_connected=self._on_connected,
                                                      tasks=self.tasks, early=self._early)
        #: the router's timers: queue sweep and retries, routing table purge
        self.housekeeping = RouterHousekeeping(router, self.tasks)

    def _early(self, message: Message) -> bool:
        """What may go out before the runtime has registered (again) after a connect: its
        calls to the cluster controller's Routing and Discovery providers."""
        return message.recipient in self._system_ids

    async def _on_connected(self) -> None:
        await self.remote.start_sequence()
        if self.transport.connections > 1:
            await self.reregister()
        if self._first_connect is not None and not self._first_connect.done():
            self._first_connect.set_result(None)

    def flow_control(self) -> Coroutine[Any, Any, None]:
        # (the transport's coroutine itself: one coroutine fewer per one-way call)
        return self.transport.wait_writable()

    async def start(self, timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS) -> None:
        """Connect; ConnectionError when the first connection is not made within
        ``timeout_ms``."""
        self._first_connect = asyncio.get_running_loop().create_future()
        self.housekeeping.start()
        await self.transport.start(wait_s=None)
        try:
            await asyncio.wait_for(asyncio.shield(self._first_connect), timeout_ms / 1000)
        except TimeoutError:
            await self.stop()
            raise ConnectionError(f"could not connect to the cluster controller at "
                                  f"{self.transport.cc_address.url} within {timeout_ms} ms"
                                  ) from None

    async def stop(self) -> None:
        """Disconnect at once (no unregistering) and end everything still running."""
        await self.transport.stop()
        await self.housekeeping.stop()
        await self.end_calls()
        await self.tasks.close()

    async def close(self) -> None:
        """Unregister everything (while connected), then disconnect."""
        if self.transport.connected:
            try:
                await asyncio.wait_for(super().close(), 10)
            except TimeoutError:
                log.warning("unregistering took too long; disconnecting anyway")
        await self.stop()



class LibjoynrRuntime:
    """An application's runtime, connected to its cluster controller (made and started by
    :func:`connect`): register and unregister providers, build proxies, close.

    Everything else (the router, the transport, the system proxies, re-registration, the
    provider calls still running) is the machinery underneath, :attr:`core`
    (:class:`LibjoynrCore`, a :class:`~programming.joynr_runtime.JoynrRuntime`): for tools,
    tests and measurements, not for applications."""

    def __init__(self, cc_address: WebSocketAddress | UdsAddress, client_id: str,
                 config: LibjoynrConfig | None = None) -> None:
        #: the machinery: a JoynrRuntime connected over websocket or a Unix domain socket
        #: (see the class docstring)
        self.core = LibjoynrCore(cc_address, client_id, config)

    @property
    def config(self) -> LibjoynrConfig:
        """The configuration the runtime was made with."""
        return self.core.config

    @property
    def client_id(self) -> str:
        """The name of this runtime at its cluster controller."""
        return self.core.client_id

    async def register_provider(
        self,
        domain: str,
        provider: Provider,
        *,
        qos: ProviderQos | None = None,
        participant_id: str | None = None,
        expiry_ms: int = DEFAULT_PROVIDER_EXPIRY_MS,
        gbids: Sequence[str] = (),
        await_global_registration: bool = False,
    ) -> str:
        """Register ``provider`` in ``domain``; returns its participantId.

        Without ``qos`` it is registered at its cluster controller only; with
        ``ProviderQos(scope=ProviderScope.GLOBAL)`` also with the GCD, in ``gbids`` (default:
        all backends of the cluster controller), in the background or, with
        ``await_global_registration``, before this returns. ``participant_id`` fixes its
        participantId (a restarted provider takes its registration over); ``expiry_ms``: how
        long its entry lives without being refreshed."""
        return await self.core.register_provider(
            domain, provider, qos=qos, participant_id=participant_id, expiry_ms=expiry_ms,
            gbids=gbids, await_global_registration=await_global_registration)

    async def unregister_provider(self, provider_or_id: Provider | str) -> None:
        """Unregister a provider (the object, or its participantId)."""
        await self.core.unregister_provider(provider_or_id)

    async def build_proxy(
        self,
        interface: type,
        domain: str | list[str],
        *,
        discovery_qos: DiscoveryQos | None = None,
        arbitration: Arbitration | None = None,
        ttl_ms: int = DEFAULT_TTL_MS,
        discovery_retry_ms: int = DEFAULT_DISCOVERY_RETRY_MS,
        gbids: Sequence[str] = (),
        body_format: BodyFormat | None = None,
        discovery_retry_s: float | None = None,
    ) -> Proxy:
        """Discover a provider of ``interface`` in ``domain`` and build a proxy for it
        (:meth:`JoynrRuntime.build_proxy <programming.joynr_runtime.JoynrRuntime.build_proxy>`):
        ``ttl_ms`` is the time to live of its calls, ``discovery_qos`` bounds the discovery
        (DiscoveryError when no provider is found in time), which looks up again every
        ``discovery_retry_ms``. ``discovery_retry_s`` is the former name of
        ``discovery_retry_ms`` (in seconds; deprecated)."""
        if discovery_retry_s is not None:
            discovery_retry_ms = _from_seconds("build_proxy", "discovery_retry_s",
                                               "discovery_retry_ms", discovery_retry_s)
        return await self.core.build_proxy(
            interface, domain, discovery_qos=discovery_qos, arbitration=arbitration,
            ttl_ms=ttl_ms, discovery_retry_ms=discovery_retry_ms, gbids=gbids,
            body_format=body_format)

    async def close(self) -> None:
        """Close every proxy and unregister every provider (while connected), then
        disconnect."""
        await self.core.close()

    async def __aenter__(self) -> LibjoynrRuntime:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()


def _from_seconds(call: str, old: str, new: str, seconds: float) -> int:
    """A deprecated keyword in seconds, warned about (naming the new one) and turned into
    milliseconds."""
    warnings.warn(f"{call}({old}=...) is deprecated: pass {new}= (milliseconds)",
                  DeprecationWarning, stacklevel=3)
    return round(seconds * 1000)


def _cc_address(url: str | WebSocketAddress | UdsAddress) -> WebSocketAddress | UdsAddress:
    if isinstance(url, WebSocketAddress | UdsAddress):
        return url
    parts = urlsplit(url)
    if parts.scheme == "unix":
        # unix:///path/to/socket (the path is the socket file's, absolute)
        if parts.netloc or not parts.path.startswith("/") or parts.query or parts.fragment:
            raise ValueError(f"not a unix socket url (unix:///absolute/path): {url!r}")
        return UdsAddress(parts.path)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"not a websocket or unix socket url: {url!r}")
    return WebSocketAddress(parts.scheme, parts.hostname,
                            parts.port or (443 if parts.scheme == "wss" else 80),
                            parts.path or "/")


class Connect:
    """What :func:`connect` returns: await it for the started runtime, or use it as an async
    context manager (the runtime is closed on the way out)."""

    def __init__(self, url: str | WebSocketAddress | UdsAddress, config: LibjoynrConfig | None,
                 client_id: str | None, timeout_ms: int) -> None:
        self.address = _cc_address(url)
        self.config = config or LibjoynrConfig()
        self.client_id = client_id or f"libjoynr-{uuid.uuid4()}"
        self.timeout_ms = timeout_ms
        self._runtime: LibjoynrRuntime | None = None

    async def _start(self) -> LibjoynrRuntime:
        runtime = LibjoynrRuntime(self.address, self.client_id, self.config)
        await runtime.core.start(self.timeout_ms)
        return runtime

    def __await__(self) -> Generator[Any, None, LibjoynrRuntime]:
        return self._start().__await__()

    async def __aenter__(self) -> LibjoynrRuntime:
        self._runtime = await self._start()
        return self._runtime

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            await runtime.close()


def connect(url: str | WebSocketAddress | UdsAddress, *, config: LibjoynrConfig | None = None,
            client_id: str | None = None, timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
            timeout_s: float | None = None) -> Connect:
    """A libjoynr runtime connected to the cluster controller at ``url`` (``ws://`` or
    ``wss://``, or ``unix:///path/to/socket`` for its Unix domain socket on this host; or the
    WebSocketAddress or UdsAddress): ``async with connect(url) as runtime:``, or
    ``runtime = await connect(url)`` and ``await runtime.close()`` at the end.

    ``client_id`` names this runtime at the cluster controller (default: a new unique one);
    ``timeout_ms`` bounds the wait for the first connection (then ConnectionError);
    ``timeout_s`` is its former name, in seconds (deprecated). A url that is not a websocket
    url is a ValueError at once."""
    if timeout_s is not None:
        timeout_ms = _from_seconds("connect", "timeout_s", "timeout_ms", timeout_s)
    if not timeout_ms > 0:
        raise ValueError(f"timeout_ms must be > 0, got {timeout_ms!r}")
    return Connect(url, config, client_id, timeout_ms)

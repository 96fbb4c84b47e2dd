"""The application API: register providers, build proxies.

Two kinds of runtime share it:

- a **libjoynr runtime** (:func:`connect`; this is its ``core``) in an application process,
  connected to its cluster controller over websocket; it reaches the CC's Routing and
  Discovery providers through proxies and re-registers everything after a reconnect;
- the **in-process runtime** of the cluster controller itself (``ClusterController.runtime``),
  which uses the CC's router and directory directly.

    async with connect("ws://127.0.0.1:4242/") as runtime:
        await runtime.register_provider("my.domain", RadioProvider())
        radio = await runtime.build_proxy(Radio, "my.domain")
        await radio.add_favorite("FM4")

Body formats (runtime/bodies.py): every provider registered here carries the custom parameter
``pyjoynr-body`` = ``msgpack`` in its ProviderQos, so that this project's proxies write msgpack
to it; a proxy built through discovery writes msgpack to a provider whose entry carries it and
joynr's JSON to any other. Providers read both and answer in the format of the request.

joynr's dialect (``joynr_dialect``, a libjoynr runtime's setting for a cluster controller of
joynr's): proxies put the reply-to address only on their requests to providers that are not
local and make broadcast subscriptions with the multicast receiver alone (programming/proxies.py),
and a proxy's next hop is globally visible when its provider is not local, as joynr's
JavaScript runtime registers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pyjoynr.programming.body_format import proxy_body_format, with_body_parameter
from pyjoynr.programming.discovery_types import (
    DEFAULT_PROVIDER_EXPIRY_MS,
    DiscoveryEntry,
    DiscoveryEntryWithMetaInfo,
    DiscoveryQos,
    ProviderQos,
    ProviderScope,
    Version,
    local_provider_qos,
)
from pyjoynr.programming.generated import types
from pyjoynr.programming.providers import Provider, ProviderSkeleton
from pyjoynr.programming.proxies import Proxy, ProxyEndpoint
from pyjoynr.runtime.addresses import (
    Address,
)
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import ApplicationError, DiscoveryError, JoynrError
from pyjoynr.runtime.interface import InterfaceDef, interface_def
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import Message
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.telemetry import Telemetry

__all__ = ["Arbitration", "DirectoryCalls", "JoynrRuntime", "SystemServices"]

log = get_logger(__name__)

#: the time to live of a proxy's calls unless build_proxy is told otherwise
DEFAULT_TTL_MS = 60_000
#: how often build_proxy looks up again while no compatible provider is found
DEFAULT_DISCOVERY_RETRY_MS = 250


@dataclass(frozen=True)
class Arbitration:
    """How a proxy picks one provider among the discovered ones."""

    strategy: str = "highest_priority"  # highest_priority | keyword | fixed_participant | last_seen
    keyword: str = ""
    participant_id: str = ""

    @classmethod
    def keyword_(cls, keyword: str) -> Arbitration:
        return cls("keyword", keyword=keyword)

    @classmethod
    def fixed(cls, participant_id: str) -> Arbitration:
        return cls("fixed_participant", participant_id=participant_id)

    def choose(self, entries: list[DiscoveryEntryWithMetaInfo]
               ) -> DiscoveryEntryWithMetaInfo | None:
        if self.strategy == "keyword":
            entries = [e for e in entries if any(
                p.name == "keyword" and p.value == self.keyword for p in e.qos.custom_parameters)]
        if not entries:
            return None
        if self.strategy == "last_seen":
            return max(entries, key=lambda e: e.last_seen_date_ms)
        # highest priority; ties: local before global, then the participantId for determinism
        return max(entries, key=lambda e: (e.qos.priority, e.is_local, e.participant_id))


class SystemServices(Protocol):
    """What a runtime needs from its cluster controller (or from itself, inside the CC)."""

    async def add_next_hop(self, participant_id: str, is_globally_visible: bool) -> None: ...
    async def remove_next_hop(self, participant_id: str) -> None: ...
    async def add_multicast_receiver(self, pattern: str, subscriber: str, provider: str
                                     ) -> None: ...
    async def remove_multicast_receiver(self, pattern: str, subscriber: str, provider: str
                                        ) -> None: ...
    async def discovery_add(self, entry: DiscoveryEntry, await_global: bool = False,
                            gbids: Sequence[str] = ()) -> None: ...
    async def discovery_remove(self, participant_id: str) -> None: ...
    async def discovery_lookup(self, domains: list[str], interface_name: str,
                               qos: types.DiscoveryQos, gbids: Sequence[str] = (),
                               ttl_ms: int | None = None
                               ) -> list[DiscoveryEntryWithMetaInfo]: ...
    async def discovery_lookup_participant(self, participant_id: str, qos: types.DiscoveryQos,
                                           gbids: Sequence[str] = (),
                                           ttl_ms: int | None = None
                                           ) -> DiscoveryEntryWithMetaInfo: ...


class JoynrRuntime:
    """Registers providers and builds proxies over a router and the system services.

    ``system`` may be given later (assign :attr:`system`); a runtime without it (the GCD's)
    serves system providers only."""

    def __init__(self, router: MessageRouter, system: SystemServices | None = None, *,
                 reply_grace_ms: int = 1_000,
                 multicast_body: BodyFormat = BodyFormat.JSON,
                 joynr_dialect: bool = False, telemetry: Telemetry | None = None) -> None:
        """``telemetry``: the process's counters, limit of repeated warnings and audit hook
        (runtime.telemetry), shared with its router; its own by default."""
        self.router = router
        #: the process's counters and limit of repeated warnings, handed to the skeletons of
        #: the providers and the endpoints of the proxies made here
        self.telemetry = Telemetry() if telemetry is None else telemetry
        self._system = system
        #: milliseconds a proxy waits for a reply beyond its request's expiry date
        self.reply_grace_ms = reply_grace_ms
        #: the runtime behaves as joynr's runtimes do towards their cluster controller (see
        #: the module docstring); False: this project's native behaviour
        self.joynr_dialect = joynr_dialect
        #: the body format of the multicasts (broadcasts) of the providers registered here from
        #: now on: JSON (the default) since their receivers may be joynr's runtimes, which read
        #: JSON only and the provider cannot know who receives; msgpack (smaller, faster) only
        #: for fleets of this project's runtimes, which read both
        self.multicast_body = multicast_body
        self.reply_to_address: Address | None = None
        self._providers: dict[str, tuple[ProviderSkeleton, DiscoveryEntry]] = {}
        self._proxies: dict[str, tuple[Proxy, ProxyEndpoint]] = {}
        self._multicast_receivers: set[tuple[str, str, str]] = set()
        #: the runtime's own participants: sticky providers and proxies of known providers
        self._system_skeletons: list[ProviderSkeleton] = []
        self._system_endpoints: list[ProxyEndpoint] = []

    @property
    def system(self) -> SystemServices:
        """The cluster controller's Routing and Discovery (or the CC's own, inside it)."""
        if self._system is None:
            raise JoynrError("this runtime has no system services: system providers only")
        return self._system

    @system.setter
    def system(self, system: SystemServices) -> None:
        self._system = system

    async def flow_control(self) -> None:
        """Wait while the way to the cluster controller is congested (libjoynr only)."""

    # ------------------------------------------------------------------ providers

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

        Without ``qos`` it is registered at its cluster controller only, offering on-change
        subscriptions (:func:`~programming.discovery_types.local_provider_qos`). A ProviderQos
        made without arguments has joynr's defaults (GLOBAL, no on-change subscriptions).
        With ``qos.scope`` GLOBAL the cluster controller also registers it with the GCD, in
        ``gbids`` (default: all its backends); ``await_global_registration`` waits for that
        (and fails with the GCD's error), else it happens in the background. The entry's
        ProviderQos carries the custom parameter ``pyjoynr-body`` = ``msgpack`` (added to a copy
        of ``qos`` unless it names that parameter already)."""
        qos = with_body_parameter(qos or local_provider_qos())
        definition = interface_def(provider.interface)
        pid = participant_id or f"{uuid.uuid4()}"
        skeleton = ProviderSkeleton(self.router.route, self.telemetry, provider, pid,
                                    multicast_body=self.multicast_body)
        visible = qos.scope is ProviderScope.GLOBAL
        result = self.router.add_route(pid, skeleton.address, is_globally_visible=visible)
        if not result.accepted:
            raise JoynrError(f"cannot register provider {pid}: {result.reason}")
        now = now_ms()
        entry = DiscoveryEntry(
            provider_version=Version(*definition.version), domain=domain,
            interface_name=definition.name, participant_id=pid, qos=qos,
            last_seen_date_ms=now, expiry_date_ms=now + expiry_ms,
        )
        try:
            await self.system.add_next_hop(pid, visible)
        except BaseException:
            self.router.remove_route(pid)
            raise
        try:
            await self.system.discovery_add(entry, await_global_registration, gbids)
        except BaseException:
            # refused (e.g. by the GCD): the cluster controller forgets the route too
            with contextlib.suppress(JoynrError):
                await self.system.remove_next_hop(pid)
            self.router.remove_route(pid)
            raise
        provider.attach(skeleton)
        self._providers[pid] = (skeleton, entry)
        log.info("provider %s registered: %s in %s", pid, definition.name, domain)
        return pid

    async def unregister_provider(self, provider_or_id: Provider | str) -> None:
        if isinstance(provider_or_id, str):
            pids = [provider_or_id]
        else:
            pids = [pid for pid, (s, _) in self._providers.items()
                    if s.provider is provider_or_id]
        for pid in pids:
            found = self._providers.pop(pid, None)
            if found is None:
                continue
            skeleton, _ = found
            skeleton.provider.detach(skeleton)
            await skeleton.close()
            try:
                await self.system.discovery_remove(pid)
                await self.system.remove_next_hop(pid)
            finally:
                self.router.remove_route(pid)
            log.info("provider %s unregistered", pid)

    # ------------------------------------------------------------------ proxies

    async def build_proxy(
        self,
        interface: type,
        domain: str | list[str],
        *,
        discovery_qos: types.DiscoveryQos | None = None,
        arbitration: Arbitration | None = None,
        ttl_ms: int = DEFAULT_TTL_MS,
        discovery_retry_ms: int = DEFAULT_DISCOVERY_RETRY_MS,
        gbids: Sequence[str] = (),
        body_format: BodyFormat | None = None,
    ) -> Proxy:
        """Discover a provider of ``interface`` in ``domain`` (in ``gbids``, default: all
        backends of the cluster controller) and build a proxy for it.

        The proxy writes msgpack bodies when the provider's entry carries the custom parameter
        ``pyjoynr-body`` = ``msgpack`` (a provider of this project), joynr's JSON otherwise;
        ``body_format`` (not None) chooses instead.

        Discovery takes at most ``discovery_qos.discovery_timeout_ms`` (default 10 s), also
        when the GCD does not answer: the lookups are retried every ``discovery_retry_ms``
        until a compatible provider is found, then DiscoveryError says why not (no
        provider, or the last error, e.g. that the GCD did not answer). ``ttl_ms`` is the time
        to live of the proxy's calls."""
        if not discovery_retry_ms > 0:
            raise ValueError(f"discovery_retry_ms must be > 0, got {discovery_retry_ms!r}")
        definition = interface_def(interface)
        qos = discovery_qos or DiscoveryQos()
        if qos.discovery_timeout <= 0:
            raise ValueError("discovery_timeout_ms must be > 0, got "
                             f"{qos.discovery_timeout!r}")
        arbitration = arbitration or Arbitration()
        entry = await self._discover(definition, [domain] if isinstance(domain, str) else domain,
                                     qos, arbitration, discovery_retry_ms / 1000, gbids=gbids)
        pid = f"{uuid.uuid4()}"
        endpoint = ProxyEndpoint(pid, self.telemetry.warn, self.telemetry.counters)
        self.router.add_route(pid, endpoint.address, is_globally_visible=False)
        # joynr's dialect: globally visible when the provider is not local, as joynr's
        # JavaScript runtime registers a proxy
        visible = self.joynr_dialect and not entry.is_local
        try:
            await self.system.add_next_hop(pid, visible)
        except BaseException:
            self.router.remove_route(pid)
            raise
        if self.router.parent is not None:
            # how this runtime reaches the provider: through the CC, unless it lives here
            # (an InProcess entry has precedence and is kept)
            self.router.add_route(entry.participant_id, self.router.parent,
                                  is_globally_visible=not entry.is_local)
        fmt = proxy_body_format(entry) if body_format is None else body_format
        proxy = Proxy(self, definition, entry.participant_id, endpoint, ttl_ms, body_format=fmt,
                      provider_is_local=entry.is_local,
                      provider_is_joynrs=proxy_body_format(entry) is BodyFormat.JSON)
        self._proxies[pid] = (proxy, endpoint)
        log.info("proxy %s built for %s %s (provider %s, %s bodies)", pid, definition.name,
                 domain, entry.participant_id, fmt.value)
        return proxy

    async def _discover(self, definition: InterfaceDef, domains: list[str], qos: types.DiscoveryQos,
                        arbitration: Arbitration, retry_s: float, *, gbids: Sequence[str] = ()
                        ) -> DiscoveryEntryWithMetaInfo:
        """Look up until a compatible provider is found or ``qos.discovery_timeout_ms`` is
        over (then DiscoveryError, with the reason), every ``retry_s``. Each lookup may take
        what is left of the discovery timeout (the CC answers within it, also when the GCD
        does not answer). INTERNAL_ERROR (the GCD failed or did not answer) ends the search
        at once with a DiscoveryError saying so; a GBID the CC does not accept is an
        ApplicationError at once; other failures count as "not found yet"."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + qos.discovery_timeout / 1000
        major, minor = definition.version
        what = (arbitration.participant_id if arbitration.strategy == "fixed_participant"
                else f"{definition.name} v{major}.{minor} in {domains}")
        reason = ""  # the first error of the failures in a row (later ones had less time)
        while True:
            ttl_ms = max(int((deadline - loop.time()) * 1000), 1)
            found: list[DiscoveryEntryWithMetaInfo] = []
            failed = ""
            try:
                if arbitration.strategy == "fixed_participant":
                    found = [await self.system.discovery_lookup_participant(
                        arbitration.participant_id, qos, gbids, ttl_ms)]
                else:
                    found = await self.system.discovery_lookup(domains, definition.name, qos,
                                                               gbids, ttl_ms)
            except ApplicationError as exc:
                if exc.error in ("INVALID_GBID", "UNKNOWN_GBID"):
                    raise
                if exc.error == "INTERNAL_ERROR":  # the GCD failed or did not answer
                    raise DiscoveryError(f"no provider for {what}: {exc.message}") from None
                failed = f"{exc.error}: {exc.message}"
            except JoynrError as exc:
                failed = f"{type(exc).__name__}: {exc.message}"
            reason = (reason or failed) if failed else ""
            compatible = [e for e in found if e.provider_version.major_version == major
                          and e.provider_version.minor_version >= minor]
            chosen = arbitration.choose(compatible)
            if chosen is not None:
                return chosen
            if loop.time() + retry_s > deadline:
                why = reason or f"{len(found)} found, {len(compatible)} compatible"
                raise DiscoveryError(f"no provider for {what} within "
                                     f"{qos.discovery_timeout} ms ({why})")
            await asyncio.sleep(retry_s)

    def system_proxy(self, interface: type, participant_id: str, ttl_ms: int, *,
                     body_format: BodyFormat = BodyFormat.MSGPACK) -> Proxy:
        """A proxy of a provider whose participantId is known (no discovery) for the
        runtime's own use: the cluster controller's Routing and Discovery, the GCD. Only this
        runtime's router knows it (the caller tells the cluster controller, if needed).
        ``body_format``: what it writes (msgpack to this project's providers, JSON to joynr's;
        its answers are read in either). Its provider counts as local (joynr's runtimes
        provision the cluster controller's providers as local entries): in joynr's dialect its
        requests carry no replyTo."""
        endpoint = ProxyEndpoint(f"{uuid.uuid4()}", self.telemetry.warn,
                                 self.telemetry.counters)
        self.router.add_route(endpoint.participant_id, endpoint.address,
                              is_globally_visible=False)
        self._system_endpoints.append(endpoint)
        return Proxy(self, interface_def(interface), participant_id, endpoint, ttl_ms,
                     body_format=body_format, provider_is_local=True)

    async def forget_proxy(self, proxy: Proxy) -> None:
        """Remove a closed proxy's routes here and in the cluster controller (Proxy.close)."""
        if self._proxies.pop(proxy.participant_id, None) is None:
            return
        try:
            await self.system.remove_next_hop(proxy.participant_id)
        finally:
            self.router.remove_route(proxy.participant_id)

    # ------------------------------------------------------------------ multicast receivers

    async def add_multicast_receiver(self, pattern: str, subscriber: str, provider: str) -> None:
        """Deliver multicasts matching ``pattern`` to ``subscriber`` (here and in the
        cluster controller); kept for re-registration after a reconnect."""
        self.router.add_multicast_receiver(pattern, subscriber, provider)
        self._multicast_receivers.add((pattern, subscriber, provider))
        await self.system.add_multicast_receiver(pattern, subscriber, provider)

    async def remove_multicast_receiver(self, pattern: str, subscriber: str, provider: str
                                        ) -> None:
        self.router.remove_multicast_receiver(pattern, subscriber)
        self._multicast_receivers.discard((pattern, subscriber, provider))
        await self.system.remove_multicast_receiver(pattern, subscriber, provider)

    # ------------------------------------------------------------------ reconnect

    def local_participants(self) -> list[tuple[str, bool]]:
        """(participantId, globally visible) of every provider and proxy of this runtime."""
        participants = [(pid, e.qos.scope is ProviderScope.GLOBAL)
                        for pid, (_, e) in self._providers.items()]
        participants += [(pid, False) for pid in self._proxies]
        return participants

    async def reregister(self) -> None:
        """After a reconnect: tell the CC again about every participant, receiver, provider."""
        await asyncio.gather(*(self.system.add_next_hop(pid, visible)
                               for pid, visible in self.local_participants()))
        await asyncio.gather(*(self.system.add_multicast_receiver(*r)
                               for r in sorted(self._multicast_receivers)))
        await asyncio.gather(*(self.system.discovery_add(entry)
                               for _, entry in self._providers.values()))
        log.info("re-registered %d participant(s), %d multicast receiver(s), %d provider(s)",
                 len(self.local_participants()), len(self._multicast_receivers),
                 len(self._providers))

    def route(self, message: Message) -> bool:
        """Send ``message`` on its way through this runtime's router (the proxies' way out)."""
        return self.router.route(message)

    def register_system_provider(self, participant_id: str, provider: Provider) -> None:
        """A provider of the runtime itself: sticky route, not in the directory."""
        skeleton = ProviderSkeleton(self.router.route, self.telemetry, provider,
                                    participant_id, multicast_body=self.multicast_body)
        result = self.router.add_route(participant_id, skeleton.address,
                                       is_globally_visible=False, is_sticky=True)
        if not result.accepted:
            raise JoynrError(f"cannot provision {participant_id}: {result.reason}")
        provider.attach(skeleton)
        self._system_skeletons.append(skeleton)

    def _skeletons(self) -> list[ProviderSkeleton]:
        return [s for s, _ in self._providers.values()] + self._system_skeletons

    @property
    def calls_busy(self) -> int:
        """Provider calls of this runtime queued or running (not ended yet)."""
        return sum(len(s.calls) for s in self._skeletons())

    async def finish_calls(self) -> None:
        """Wait until the provider calls of this runtime have ended and answered, those that
        arrive meanwhile too (a graceful stop, before :meth:`end_calls`; the caller bounds
        the wait)."""
        while self.calls_busy:
            for skeleton in self._skeletons():
                await skeleton.calls.wait_done()

    async def end_calls(self) -> None:
        """Cancel the application code still running in this runtime: provider calls and
        async subscription callbacks (at shutdown; calls arriving afterwards are dropped)."""
        for skeleton in self._skeletons():
            await skeleton.close()
        for endpoint in [e for _, e in self._proxies.values()] + self._system_endpoints:
            await endpoint.close()

    async def close(self) -> None:
        """Close every proxy and unregister every provider, then end what still runs."""
        for proxy, _ in list(self._proxies.values()):
            try:
                await proxy.close()
            except JoynrError as exc:
                log.warning("closing proxy %s: %s", proxy.participant_id, exc)
        for pid in list(self._providers):
            try:
                await self.unregister_provider(pid)
            except JoynrError as exc:
                log.warning("unregistering provider %s: %s", pid, exc)
        await self.end_calls()


class DirectoryCalls:
    """The directory part of the system services: calls on ``self.discovery``, which is the
    CC's LocalDiscovery itself or a proxy of it (both have the Discovery interface's methods)."""

    discovery: Any

    async def discovery_add(self, entry: DiscoveryEntry, await_global: bool = False,
                            gbids: Sequence[str] = ()) -> None:
        await self.discovery.add_in_backends(entry, await_global, list(gbids))

    async def discovery_remove(self, participant_id: str) -> None:
        await self.discovery.remove(participant_id)

    def directory(self, ttl_ms: int | None) -> Any:
        """``discovery`` for one call with the time to live ``ttl_ms`` (None: its own). A
        direct call has none; RemoteSystem gives its proxy that time to live."""
        return self.discovery

    async def discovery_lookup(self, domains: list[str], interface_name: str,
                               qos: types.DiscoveryQos, gbids: Sequence[str] = (),
                               ttl_ms: int | None = None
                               ) -> list[DiscoveryEntryWithMetaInfo]:
        return await self.directory(ttl_ms).lookup_in_backends(domains, interface_name, qos,
                                                      list(gbids))

    async def discovery_lookup_participant(self, participant_id: str, qos: types.DiscoveryQos,
                                           gbids: Sequence[str] = (),
                                           ttl_ms: int | None = None
                                           ) -> DiscoveryEntryWithMetaInfo:
        return await self.directory(ttl_ms).lookup_participant_in(participant_id, qos,
                                                                  list(gbids))

"""libjoynr: everything an application needs, in one import (``from pyjoynr import ...``:
the package root re-exports it).

Declare an interface, implement a provider, connect to a cluster controller, register the
provider and call it through a proxy (from this or any other process of the cluster):

    import asyncio

    from pyjoynr import (ApplicationError, Provider, attribute, broadcast, connect, errors,
                         interface, one_way)

    @interface("vehicle/Radio", version=(1, 0))
    class Radio:
        current_station = attribute(str)              # get / set / on-change subscriptions
        new_station = broadcast(name=str)             # a multicast, with partitions
        async def add_favorite(self, name: str) -> bool: ...
        @one_way
        async def note(self, text: str) -> None: ...

    class RadioProvider(Provider, interface=Radio):
        async def add_favorite(self, name: str) -> bool:
            async with asyncio.timeout(1.0):          # provider methods run inside a task
                await asyncio.sleep(0)                # (say, a lookup of its own)
            return True
        async def note(self, text: str) -> None:
            print(text)

    async def main() -> None:
        async with connect("ws://127.0.0.1:4242/") as runtime:
            await runtime.register_provider("my.domain", RadioProvider(current_station="FM4"))
            radio = await runtime.build_proxy(Radio, "my.domain", ttl_ms=5_000)
            assert await radio.add_favorite("Oe1")
            await radio.note("hello")
            subscription = await radio.current_station.subscribe(print)
            await radio.new_station.subscribe(print, partitions=["AT", "+"])
            await subscription.unsubscribe()

``connect`` also works as ``runtime = await connect(url)`` ... ``await runtime.close()``; its
``config=`` takes a :class:`LibjoynrConfig` (with :class:`RouterSettings` and
:class:`WebSocketClientSettings` inside). ``LibjoynrConfig(dialect="joynr")`` connects to a
cluster controller of joynr's (Java or C++) as joynr's own runtimes do: joynr's frames, JSON
bodies and start sequence (see :mod:`libjoynr.config`).

Errors a call can raise: :class:`ApplicationError` (one of the method's modelled ``errors``),
:class:`ProviderRuntimeError` (the provider failed), :class:`MethodInvocationError` (no such
method or wrong parameters), :class:`DiscoveryError` (no provider found),
:class:`MessageNotSentError` (the message could not be sent or delivered before its expiry),
:class:`JoynrTimeoutError` (no reply in time); all are :class:`JoynrError`.

A provider that can answer a method in its wire form directly (say, from stored rows) may give
it a twin with :func:`wire_form_of`: calls that arrive as messages run the twin and skip
building and converting the typed result.
"""

from pyjoynr.libjoynr.config import LibjoynrConfig
from pyjoynr.libjoynr.runtime import LibjoynrRuntime, connect
from pyjoynr.programming.discovery_types import (
    CustomParameter,
    DiscoveryQos,
    DiscoveryScope,
    ProviderQos,
    ProviderScope,
)
from pyjoynr.programming.joynr_runtime import Arbitration
from pyjoynr.programming.providers import Provider, current_origin, wire_form_of
from pyjoynr.programming.proxies import Proxy
from pyjoynr.programming.subscribers import Subscription
from pyjoynr.programming.subscription_qos import (
    AttributeSubscriptionQos,
    MulticastSubscriptionQos,
    OnChangeSubscriptionQos,
    OnChangeWithKeepAliveSubscriptionQos,
    PeriodicSubscriptionQos,
)
from pyjoynr.programming.updates import Updates
from pyjoynr.runtime.errors import (
    ApplicationError,
    DiscoveryError,
    JoynrError,
    JoynrTimeoutError,
    MessageNotSentError,
    MethodInvocationError,
    ProviderRuntimeError,
    PublicationMissedError,
    SubscriptionError,
)
from pyjoynr.runtime.interface import attribute, broadcast, errors, interface, one_way, wire_name
from pyjoynr.runtime.router import RouterSettings
from pyjoynr.transports.websocket.settings import WebSocketClientSettings

__all__ = [
    "ApplicationError",
    "Arbitration",
    "AttributeSubscriptionQos",
    "CustomParameter",
    "DiscoveryError",
    "DiscoveryQos",
    "DiscoveryScope",
    "JoynrError",
    "JoynrTimeoutError",
    "LibjoynrConfig",
    "LibjoynrRuntime",
    "MessageNotSentError",
    "MethodInvocationError",
    "MulticastSubscriptionQos",
    "OnChangeSubscriptionQos",
    "OnChangeWithKeepAliveSubscriptionQos",
    "PeriodicSubscriptionQos",
    "Provider",
    "ProviderQos",
    "ProviderRuntimeError",
    "ProviderScope",
    "Proxy",
    "PublicationMissedError",
    "RouterSettings",
    "Subscription",
    "SubscriptionError",
    "Updates",
    "WebSocketClientSettings",
    "attribute",
    "broadcast",
    "connect",
    "current_origin",
    "errors",
    "interface",
    "one_way",
    "wire_form_of",
    "wire_name",
]

"""libjoynr: what an application uses, in one import (``from pyjoynr import ...``: the
package root re-exports it); docs/api.md documents every name.

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
``config=`` takes a :class:`LibjoynrConfig`. Times are milliseconds throughout (``ttl_ms``,
``timeout_ms``, ``discovery_retry_ms``, the QoS classes), as joynr's.
``LibjoynrConfig(dialect="joynr")`` connects to a cluster controller of joynr's (Java or C++)
as joynr's own runtimes do: joynr's frames, JSON bodies and start sequence (see
:mod:`libjoynr.config`).

Errors a call can raise are all :class:`JoynrError`; the ones an application usually tells
apart: :class:`ApplicationError` (one of the method's modelled ``errors``),
:class:`DiscoveryError` (no provider found), :class:`JoynrTimeoutError` (no reply in time).

What an application rarely needs (the other errors, the subscription QoS variants,
arbitration, the router's and websocket's settings, the wire hooks, the runtime's machinery)
is in :mod:`pyjoynr.libjoynr.advanced`. The names that were here before keep resolving, with a
DeprecationWarning that names their new place.
"""

import importlib
import warnings

from pyjoynr.libjoynr.config import LibjoynrConfig
from pyjoynr.libjoynr.runtime import LibjoynrRuntime, connect
from pyjoynr.programming.discovery_types import (
    DiscoveryQos,
    DiscoveryScope,
    ProviderQos,
    ProviderScope,
)
from pyjoynr.programming.providers import Provider
from pyjoynr.programming.proxies import Proxy
from pyjoynr.runtime.errors import ApplicationError, DiscoveryError, JoynrError, JoynrTimeoutError
from pyjoynr.runtime.interface import attribute, broadcast, errors, interface, one_way

#: the application API: the one list of its names (the package root derives its own from it;
#: docs/api.md documents each, a unit test keeps them the same)
__all__ = [
    "ApplicationError",
    "DiscoveryError",
    "DiscoveryQos",
    "DiscoveryScope",
    "JoynrError",
    "JoynrTimeoutError",
    "LibjoynrConfig",
    "LibjoynrRuntime",
    "Provider",
    "ProviderQos",
    "ProviderScope",
    "Proxy",
    "attribute",
    "broadcast",
    "connect",
    "errors",
    "interface",
    "one_way",
]

#: the names that were exported here before and are now in pyjoynr.libjoynr.advanced
MOVED_TO_ADVANCED = frozenset({
    "Arbitration", "AttributeSubscriptionQos", "CustomParameter", "MessageNotSentError",
    "MethodInvocationError", "MulticastSubscriptionQos", "OnChangeSubscriptionQos",
    "OnChangeWithKeepAliveSubscriptionQos", "PeriodicSubscriptionQos", "ProviderRuntimeError",
    "PublicationMissedError", "RouterSettings", "Subscription", "SubscriptionError", "Updates",
    "WebSocketClientSettings", "current_origin", "wire_form_of", "wire_name",
})


def moved(module: str, name: str, stacklevel: int) -> object:
    """A name that moved to the advanced module, looked up at ``module``: warns (naming the
    new place) and returns it; AttributeError for any other name."""
    if name not in MOVED_TO_ADVANCED:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(f"{module}.{name} has moved: import it from pyjoynr.libjoynr.advanced",
                  DeprecationWarning, stacklevel=stacklevel + 1)
    return getattr(importlib.import_module("pyjoynr.libjoynr.advanced"), name)


def __getattr__(name: str) -> object:
    return moved(__name__, name, stacklevel=2)

"""pyjoynr: a Python implementation of joynr.

An application needs one import: the libjoynr API is here (re-exported from
:mod:`pyjoynr.libjoynr`, imported when first used)::

    from pyjoynr import Provider, attribute, connect, interface

The programs and the parts they are made of are subpackages:

- :mod:`pyjoynr.libjoynr`: an application's runtime, connected to its cluster controller;
- :mod:`pyjoynr.cluster_controller`: the cluster controller program
  (``pyjoynr-cluster-controller``);
- :mod:`pyjoynr.gcd`: the Global Capabilities Directory program (``pyjoynr-gcd``);
- :mod:`pyjoynr.pipeline`: the fleet data pipeline on Spark (``pyjoynr-pipeline``; the
  ``pipeline`` extra installs PySpark);
- :mod:`pyjoynr.franca`: the Franca IDL generator (``pyjoynr-franca``, ``python -m
  pyjoynr.franca``);
- :mod:`pyjoynr.runtime`: the routing core (messages, codecs, routing table, rules, router,
  queues); :mod:`pyjoynr.programming`: the programming model on it (providers, proxies,
  subscriptions, discovery types); :mod:`pyjoynr.transports`: websocket, MQTT, in-process;
  :mod:`pyjoynr.admin`: the programs' admin endpoint;
- ``config/``: the programs' default configuration files, which document every setting.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyjoynr.libjoynr import (
        ApplicationError,
        Arbitration,
        AttributeSubscriptionQos,
        CustomParameter,
        DiscoveryError,
        DiscoveryQos,
        DiscoveryScope,
        JoynrError,
        JoynrTimeoutError,
        LibjoynrConfig,
        LibjoynrRuntime,
        MessageNotSentError,
        MethodInvocationError,
        MulticastSubscriptionQos,
        OnChangeSubscriptionQos,
        OnChangeWithKeepAliveSubscriptionQos,
        PeriodicSubscriptionQos,
        Provider,
        ProviderQos,
        ProviderRuntimeError,
        ProviderScope,
        Proxy,
        PublicationMissedError,
        RouterSettings,
        Subscription,
        SubscriptionError,
        Updates,
        WebSocketClientSettings,
        attribute,
        broadcast,
        connect,
        current_origin,
        errors,
        interface,
        one_way,
        wire_form_of,
        wire_name,
    )

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


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("pyjoynr.libjoynr"), name)

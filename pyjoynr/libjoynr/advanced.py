"""The advanced part of the libjoynr API: what an application rarely needs.

:mod:`pyjoynr.libjoynr` (``from pyjoynr import ...``) has what an application uses to declare,
provide, connect, call, subscribe and catch errors. This module has the rest, for tuning, for
tools and tests, and for joynr's less common features (docs/api.md documents every name):

- the errors that :class:`~pyjoynr.JoynrError` covers, for an application that tells them
  apart: :class:`ProviderRuntimeError`, :class:`MethodInvocationError`,
  :class:`MessageNotSentError`, :class:`PublicationMissedError`, :class:`SubscriptionError`;
- the subscription QoS variants (a subscription without one is on change) and the handles a
  subscription gives: :class:`Subscription`, :class:`Updates`;
- discovery beyond the default: :class:`Arbitration`, a provider's :class:`CustomParameter`;
- settings inside :class:`~pyjoynr.LibjoynrConfig`: :class:`RouterSettings` (queue limits,
  retries), :class:`WebSocketClientSettings` (frames, keep-alive, reconnect, TLS trust),
  :class:`UdsClientSettings` (the Unix domain socket: frames, dialect, reconnect);
- wire hooks: :func:`wire_name` (a member's name on the wire), :func:`wire_form_of` (a
  provider method's twin that answers in the wire form), :func:`current_origin` (who sent the
  call a provider method runs for);
- the runtime's machinery: :class:`LibjoynrCore`, which a
  :class:`~pyjoynr.LibjoynrRuntime` holds as ``runtime.core`` (router, transport, system
  proxies, provider calls still running), a :class:`JoynrRuntime` as the cluster controller's
  and the GCD's own runtimes are.

Times are milliseconds, as in the application API (RouterSettings' ``sweep_interval_ms``,
``retry_initial_ms`` and ``retry_max_ms`` too: a cluster controller's configuration file that
still names them in seconds, as earlier versions did, is read with a warning).
"""

from pyjoynr.libjoynr.runtime import LibjoynrCore
from pyjoynr.programming.discovery_types import CustomParameter
from pyjoynr.programming.joynr_runtime import Arbitration, JoynrRuntime
from pyjoynr.programming.providers import current_origin, wire_form_of
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
    MessageNotSentError,
    MethodInvocationError,
    ProviderRuntimeError,
    PublicationMissedError,
    SubscriptionError,
)
from pyjoynr.runtime.interface import wire_name
from pyjoynr.runtime.router import RouterSettings
from pyjoynr.transports.uds.settings import UdsClientSettings
from pyjoynr.transports.websocket.settings import WebSocketClientSettings

__all__ = [
    "Arbitration",
    "AttributeSubscriptionQos",
    "CustomParameter",
    "JoynrRuntime",
    "LibjoynrCore",
    "MessageNotSentError",
    "MethodInvocationError",
    "MulticastSubscriptionQos",
    "OnChangeSubscriptionQos",
    "OnChangeWithKeepAliveSubscriptionQos",
    "PeriodicSubscriptionQos",
    "ProviderRuntimeError",
    "PublicationMissedError",
    "RouterSettings",
    "Subscription",
    "SubscriptionError",
    "UdsClientSettings",
    "Updates",
    "WebSocketClientSettings",
    "current_origin",
    "wire_form_of",
    "wire_name",
]

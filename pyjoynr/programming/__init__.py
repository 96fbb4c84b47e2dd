"""The programming model every program's runtime is built from: providing an interface,
calling it through a proxy, subscribing to its attributes and broadcasts, discovering
providers. Built on the routing core (:mod:`pyjoynr.runtime`), whose router carries its
messages; it imports nothing else of the project (no transport, no program).

- ``joynr_runtime``: JoynrRuntime, registering providers and building proxies (the cluster
  controller, the GCD and libjoynr each make one);
- ``providers``, ``calls``: a provider and its skeleton, the tasks application code runs in;
- ``proxies``: a proxy and its endpoint: calls, replies, publications to its subscriptions;
- ``subscriptions`` (the provider side), ``subscribers`` (the proxy side), ``subscription_qos``,
  ``updates`` (a subscription as an async iterator);
- ``discovery_types``, ``system_interfaces``, ``access_control``, ``generated/``: the
  discovery types and the system interfaces (Routing, Discovery, the GCD, the access control
  types and AccessControlListEditor), generated from fidl/;
- ``body_format``: which body format a proxy writes to a provider.

An interface is declared with :mod:`runtime.interface` (its value types type joynr's JSON
bodies, so it lives with the codecs); what acts on an interface is here.
"""

"""Which body format a proxy writes to a provider, and how a provider of this project's says
that it reads msgpack. Pure module: no I/O.

The two formats themselves, and reading and writing them, are the core's
(:mod:`runtime.bodies`); the choice between them is made from a provider's discovery entry:
msgpack to a provider whose ProviderQos carries the custom parameter
:data:`~runtime.bodies.BODY_PARAMETER` = :data:`~runtime.bodies.BODY_PARAMETER_VALUE` (this
project's runtimes add it to every provider they register, :func:`with_body_parameter`;
joynr's runtimes never do), JSON otherwise (:func:`proxy_body_format`).
"""

from __future__ import annotations

import dataclasses

from pyjoynr.programming.discovery_types import CustomParameter, DiscoveryEntry, ProviderQos
from pyjoynr.runtime.bodies import BODY_PARAMETER, BODY_PARAMETER_VALUE, BodyFormat

__all__ = ["proxy_body_format", "with_body_parameter"]


def proxy_body_format(entry: DiscoveryEntry) -> BodyFormat:
    """The format a proxy writes to the provider of ``entry``: msgpack when the entry carries
    the custom parameter ``pyjoynr-body`` = ``msgpack``, JSON otherwise."""
    for parameter in entry.qos.custom_parameters:
        if parameter.name == BODY_PARAMETER and parameter.value == BODY_PARAMETER_VALUE:
            return BodyFormat.MSGPACK
    return BodyFormat.JSON


def with_body_parameter(qos: ProviderQos) -> ProviderQos:
    """``qos`` with the custom parameter ``pyjoynr-body`` = ``msgpack`` (a copy; ``qos`` as it
    is when it names the parameter already, whatever its value)."""
    if any(p.name == BODY_PARAMETER for p in qos.custom_parameters):
        return qos
    return dataclasses.replace(qos, custom_parameters=[
        *qos.custom_parameters, CustomParameter(BODY_PARAMETER, BODY_PARAMETER_VALUE)])

"""pyjoynr: a Python implementation of joynr.

An application needs one import: the libjoynr API is here (re-exported from
:mod:`pyjoynr.libjoynr`, imported when first used; docs/api.md documents it)::

    from pyjoynr import Provider, attribute, connect, interface

What an application rarely needs is in :mod:`pyjoynr.libjoynr.advanced`.

The programs and the parts they are made of are subpackages:

- :mod:`pyjoynr.libjoynr`: an application's runtime, connected to its cluster controller
  (:mod:`pyjoynr.libjoynr.advanced`: the rest of its API);
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
    # mypy reads the names from libjoynr's __all__, the one list of them
    from pyjoynr.libjoynr import *  # noqa: F403


def __getattr__(name: str) -> object:
    """libjoynr's names (and ``__all__``, its list of them), imported when first used; a name
    that moved to pyjoynr.libjoynr.advanced resolves with a DeprecationWarning."""
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    api = importlib.import_module("pyjoynr.libjoynr")
    if name == "__all__" or name in api.__all__:
        return getattr(api, name)
    return api.moved(__name__, name, stacklevel=2)

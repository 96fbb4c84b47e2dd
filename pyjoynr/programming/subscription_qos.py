"""joynr's SubscriptionQos family: what a subscriber asks of its publications. Pure module.

Every time is in **milliseconds**, as in joynr (``*_ms``); ``expiry_date_ms`` is an absolute
date (epoch ms), 0 for none. The classes and their fields, with joynr's defaults and bounds
(the same in joynr's Java, C++ and JavaScript runtimes):

========================================  =====================================================
class (joynr's type)                      fields
========================================  =====================================================
:class:`OnChangeSubscriptionQos`          ``min_interval_ms`` (1,000; 0..30 days): publications
                                          at most that often; a change within it is sent when it
                                          has passed (the latest value)
:class:`OnChangeWithKeepAliveSubscriptionQos`
                                          + ``max_interval_ms`` (60,000; 50..30 days, at least
                                          ``min_interval_ms``): the current value is published
                                          again when nothing was for that long;
                                          ``alert_after_interval_ms`` (0: never; else at least
                                          ``max_interval_ms``, at most 30 days)
:class:`PeriodicSubscriptionQos`          ``period_ms`` (60,000; 50..30 days): the current value
                                          every period; ``alert_after_interval_ms`` (0: never;
                                          else at least ``period_ms``)
:class:`MulticastSubscriptionQos`         ``expiry_date_ms`` only (non-selective broadcasts)
========================================  =====================================================

The unicast ones also have ``publication_ttl_ms`` (10,000; 100..30 days): how long one
publication lives on its way. ``alert_after_interval_ms``: the subscriber is told
(:class:`~runtime.errors.PublicationMissedError`) when no publication came for that long, and
again each interval while none comes.

Made by an application, a value outside its bounds raises ``ValueError`` naming the field and
the bound. Received from the wire (:func:`qos_from_wire`), values are brought into bounds as
joynr's Java runtime does (clamped; an alert interval raised to the period), so a subscriber
of any joynr runtime is served.

On the wire (msgpack bodies) a QoS is a map of its fields under these Python names plus
``type``, joynr's class name without ``joynr.`` (runtime/joynr_json.py writes joynr's JSON
with ``_typeName`` and joynr's member names).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

__all__ = [
    "DAY_MS",
    "MAX_MS",
    "AttributeSubscriptionQos",
    "MulticastSubscriptionQos",
    "OnChangeSubscriptionQos",
    "OnChangeWithKeepAliveSubscriptionQos",
    "PeriodicSubscriptionQos",
    "SubscriptionQos",
    "UnicastSubscriptionQos",
    "qos_from_wire",
]

DAY_MS: Final = 86_400_000
#: the largest value of every interval and ttl (joynr: 30 days)
MAX_MS: Final = 30 * DAY_MS

MIN_PUBLICATION_TTL_MS: Final = 100
DEFAULT_PUBLICATION_TTL_MS: Final = 10_000
DEFAULT_MIN_INTERVAL_MS: Final = 1_000
MIN_MAX_INTERVAL_MS: Final = 50
DEFAULT_MAX_INTERVAL_MS: Final = 60_000
MIN_PERIOD_MS: Final = 50
DEFAULT_PERIOD_MS: Final = 60_000
NO_ALERT_AFTER_INTERVAL: Final = 0
NO_EXPIRY_DATE: Final = 0


def _check(cls_name: str, field: str, value: object, low: int, high: int) -> None:
    if type(value) is not int:
        raise ValueError(f"{cls_name}.{field} must be an int (milliseconds), "
                         f"not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{cls_name}.{field} {value} is outside joynr's bounds {low}..{high}")


def _check_alert(cls_name: str, alert_after_ms: int, heartbeat_ms: int) -> None:
    """An alert interval is 0 (none) or between the heartbeat interval and 30 days."""
    if alert_after_ms != NO_ALERT_AFTER_INTERVAL:
        _check(cls_name, "alert_after_interval_ms", alert_after_ms, heartbeat_ms, MAX_MS)


@dataclass(frozen=True, slots=True)
class SubscriptionQos:
    """Base of the family: ``expiry_date_ms``, when the subscription ends (epoch ms; 0: never)."""

    #: joynr's type name without ``joynr.``
    wire_type: ClassVar[str] = "SubscriptionQos"

    expiry_date_ms: int = NO_EXPIRY_DATE

    def __post_init__(self) -> None:
        self._validate()

    def _validate(self) -> None:
        _check(type(self).__name__, "expiry_date_ms", self.expiry_date_ms, 0, 2**63 - 1)

    def to_wire(self) -> dict[str, Any]:
        """The map carried in msgpack bodies: the fields and ``type``."""
        out: dict[str, Any] = {f.name: getattr(self, f.name)
                               for f in dataclasses.fields(self)}
        out["type"] = self.wire_type
        return out

    def expired(self, now_ms: int) -> bool:
        return self.expiry_date_ms != NO_EXPIRY_DATE and now_ms >= self.expiry_date_ms

    @property
    def alert_after_ms(self) -> int:
        """The missed-publication interval (0: none); only the heartbeat kinds have one."""
        return 0


@dataclass(frozen=True, slots=True)
class UnicastSubscriptionQos(SubscriptionQos):
    """+ ``publication_ttl_ms``: how long each publication lives on its way."""

    wire_type: ClassVar[str] = "UnicastSubscriptionQos"

    publication_ttl_ms: int = DEFAULT_PUBLICATION_TTL_MS

    def _validate(self) -> None:
        SubscriptionQos._validate(self)
        _check(type(self).__name__, "publication_ttl_ms", self.publication_ttl_ms,
               MIN_PUBLICATION_TTL_MS, MAX_MS)


@dataclass(frozen=True, slots=True)
class OnChangeSubscriptionQos(UnicastSubscriptionQos):
    """Publications on every change, at most every ``min_interval_ms``."""

    wire_type: ClassVar[str] = "OnChangeSubscriptionQos"

    min_interval_ms: int = DEFAULT_MIN_INTERVAL_MS

    def _validate(self) -> None:
        UnicastSubscriptionQos._validate(self)
        _check(type(self).__name__, "min_interval_ms", self.min_interval_ms, 0, MAX_MS)


@dataclass(frozen=True, slots=True)
class OnChangeWithKeepAliveSubscriptionQos(OnChangeSubscriptionQos):
    """On change, and the current value again whenever nothing was published for
    ``max_interval_ms``; ``alert_after_interval_ms``: tell the subscriber when nothing came
    for that long (0: never)."""

    wire_type: ClassVar[str] = "OnChangeWithKeepAliveSubscriptionQos"

    max_interval_ms: int = DEFAULT_MAX_INTERVAL_MS
    alert_after_interval_ms: int = NO_ALERT_AFTER_INTERVAL

    def _validate(self) -> None:
        OnChangeSubscriptionQos._validate(self)
        name = type(self).__name__
        _check(name, "max_interval_ms", self.max_interval_ms,
               max(MIN_MAX_INTERVAL_MS, self.min_interval_ms), MAX_MS)
        _check_alert(name, self.alert_after_interval_ms, self.max_interval_ms)

    @property
    def alert_after_ms(self) -> int:
        return self.alert_after_interval_ms


@dataclass(frozen=True, slots=True)
class PeriodicSubscriptionQos(UnicastSubscriptionQos):
    """The current value every ``period_ms``; ``alert_after_interval_ms`` as for keep-alive."""

    wire_type: ClassVar[str] = "PeriodicSubscriptionQos"

    period_ms: int = DEFAULT_PERIOD_MS
    alert_after_interval_ms: int = NO_ALERT_AFTER_INTERVAL

    def _validate(self) -> None:
        UnicastSubscriptionQos._validate(self)
        name = type(self).__name__
        _check(name, "period_ms", self.period_ms, MIN_PERIOD_MS, MAX_MS)
        _check_alert(name, self.alert_after_interval_ms, self.period_ms)

    @property
    def alert_after_ms(self) -> int:
        return self.alert_after_interval_ms


@dataclass(frozen=True, slots=True)
class MulticastSubscriptionQos(SubscriptionQos):
    """A non-selective broadcast's subscription: its expiry date only."""

    wire_type: ClassVar[str] = "MulticastSubscriptionQos"


@dataclass(frozen=True, slots=True)
class AttributeSubscriptionQos(OnChangeSubscriptionQos):
    """This project's earlier name of the on-change QoS, with its earlier default: every change
    (``min_interval_ms`` 0). On the wire it is an :class:`OnChangeSubscriptionQos`."""

    min_interval_ms: int = 0


_KINDS: Final[dict[str, type[SubscriptionQos]]] = {
    cls.wire_type: cls for cls in (OnChangeSubscriptionQos,
                                   OnChangeWithKeepAliveSubscriptionQos,
                                   PeriodicSubscriptionQos, MulticastSubscriptionQos,
                                   UnicastSubscriptionQos, SubscriptionQos)}
#: the kinds a map without ``type`` may stand for, in the order they are tried
_INFERRED: Final = (OnChangeSubscriptionQos, OnChangeWithKeepAliveSubscriptionQos,
                    PeriodicSubscriptionQos)
_FIELDS: Final = {cls: frozenset(f.name for f in dataclasses.fields(cls))
                  for cls in _KINDS.values()}


def qos_from_wire(data: Mapping[str, Any],
                  default: type[SubscriptionQos] = OnChangeSubscriptionQos) -> SubscriptionQos:
    """The QoS of a received map (``type`` and fields; see the module docstring), with joynr's
    defaults for absent fields and every value brought into its bounds as joynr's Java runtime
    does. ``default``: the kind of a map without ``type`` whose fields it has (else the first
    kind whose fields it has). ``ValueError`` for a map that is no QoS (an unknown type, a
    field the kind does not have, a value that is no int, a negative expiry date)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"a qos must be a map, not {type(data).__name__}")
    fields = {key: value for key, value in data.items() if key != "type"}
    kind = data.get("type")
    cls: type[SubscriptionQos] | None
    if kind is None:
        keys = frozenset(fields)
        cls = default if keys <= _FIELDS[default] else next(
            (c for c in _INFERRED if keys <= _FIELDS[c]), None)
        if cls is None:
            raise ValueError(f"qos fields {sorted(map(str, keys))[:8]} fit no joynr QoS type")
    else:
        cls = _KINDS.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise ValueError(f"unknown qos type {str(kind)[:60]!r}")
        unknown = set(fields) - _FIELDS[cls]
        if unknown:
            raise ValueError(f"{kind} has no field {sorted(map(str, unknown))[0][:60]!r}")
    for key, value in fields.items():
        if type(value) is not int:
            raise ValueError(f"qos {str(key)[:60]} must be an int, not {type(value).__name__}")
    return cls(**_into_bounds(cls, fields))


def _clamp(value: int, low: int, high: int) -> int:
    return min(max(value, low), high)


def _into_bounds(cls: type[SubscriptionQos], fields: dict[str, int]) -> dict[str, int]:
    """``fields`` of a ``cls`` brought into joynr's bounds (absent ones stay absent: the
    defaults are in bounds)."""
    out = dict(fields)
    if out.get("expiry_date_ms", 0) < 0:
        # (joynr's JavaScript runtime would read it as "never"; a garbled date must not make
        # an endless subscription)
        raise ValueError(f"qos expiry_date_ms {out['expiry_date_ms']} is negative")
    if "publication_ttl_ms" in out:
        out["publication_ttl_ms"] = _clamp(out["publication_ttl_ms"], MIN_PUBLICATION_TTL_MS,
                                           MAX_MS)
    if "min_interval_ms" in out:
        out["min_interval_ms"] = _clamp(out["min_interval_ms"], 0, MAX_MS)
    minimum = out.get("min_interval_ms", DEFAULT_MIN_INTERVAL_MS)
    heartbeat = None
    if issubclass(cls, OnChangeWithKeepAliveSubscriptionQos):
        heartbeat = _clamp(out.get("max_interval_ms", DEFAULT_MAX_INTERVAL_MS),
                           MIN_MAX_INTERVAL_MS, MAX_MS)
        heartbeat = max(heartbeat, minimum)  # (joynr: raised to the minimum interval)
        out["max_interval_ms"] = heartbeat
    elif issubclass(cls, PeriodicSubscriptionQos):
        heartbeat = _clamp(out.get("period_ms", DEFAULT_PERIOD_MS), MIN_PERIOD_MS, MAX_MS)
        out["period_ms"] = heartbeat
    if heartbeat is not None and out.get("alert_after_interval_ms", 0) != 0:
        # joynr: an alert interval is at most 30 days and at least the heartbeat interval
        # (a negative one too)
        out["alert_after_interval_ms"] = max(min(out["alert_after_interval_ms"], MAX_MS),
                                             heartbeat)
    return out

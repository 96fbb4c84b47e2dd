"""programming/subscription_qos.py: joynr's QoS family, its defaults and bounds, how received
values are brought into bounds, and its wire forms (msgpack maps and joynr's JSON)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.programming.subscription_qos import (
    MAX_MS,
    AttributeSubscriptionQos,
    MulticastSubscriptionQos,
    OnChangeSubscriptionQos,
    OnChangeWithKeepAliveSubscriptionQos,
    PeriodicSubscriptionQos,
    SubscriptionQos,
    UnicastSubscriptionQos,
    qos_from_wire,
)
from pyjoynr.runtime import joynr_json
from pyjoynr.runtime.payloads import (
    BroadcastSubscriptionRequest,
    MulticastSubscriptionRequest,
    SubscriptionRequest,
)

DAY_MS = 86_400_000


# ---------------------------------------------------------------------- defaults, bounds


def test_defaults_are_joynrs() -> None:
    assert OnChangeSubscriptionQos() == OnChangeSubscriptionQos(
        expiry_date_ms=0, publication_ttl_ms=10_000, min_interval_ms=1_000)
    keep_alive = OnChangeWithKeepAliveSubscriptionQos()
    assert (keep_alive.min_interval_ms, keep_alive.max_interval_ms,
            keep_alive.alert_after_interval_ms) == (1_000, 60_000, 0)
    periodic = PeriodicSubscriptionQos()
    assert (periodic.period_ms, periodic.alert_after_interval_ms,
            periodic.publication_ttl_ms) == (60_000, 0, 10_000)
    assert MulticastSubscriptionQos().expiry_date_ms == 0
    # the project's earlier name: every change
    attribute = AttributeSubscriptionQos()
    assert attribute.min_interval_ms == 0
    assert isinstance(attribute, OnChangeSubscriptionQos)
    assert MAX_MS == 30 * DAY_MS


@pytest.mark.parametrize("make, field", [
    (lambda: OnChangeSubscriptionQos(publication_ttl_ms=99), "publication_ttl_ms"),
    (lambda: OnChangeSubscriptionQos(publication_ttl_ms=MAX_MS + 1), "publication_ttl_ms"),
    (lambda: OnChangeSubscriptionQos(min_interval_ms=-1), "min_interval_ms"),
    (lambda: OnChangeSubscriptionQos(min_interval_ms=MAX_MS + 1), "min_interval_ms"),
    (lambda: OnChangeSubscriptionQos(expiry_date_ms=-1), "expiry_date_ms"),
    (lambda: OnChangeWithKeepAliveSubscriptionQos(max_interval_ms=49), "max_interval_ms"),
    (lambda: OnChangeWithKeepAliveSubscriptionQos(min_interval_ms=5_000, max_interval_ms=4_999),
     "max_interval_ms"),
    (lambda: OnChangeWithKeepAliveSubscriptionQos(max_interval_ms=1_000,
                                                  alert_after_interval_ms=999),
     "alert_after_interval_ms"),
    (lambda: OnChangeWithKeepAliveSubscriptionQos(alert_after_interval_ms=MAX_MS + 1),
     "alert_after_interval_ms"),
    (lambda: PeriodicSubscriptionQos(period_ms=49), "period_ms"),
    (lambda: PeriodicSubscriptionQos(period_ms=MAX_MS + 1), "period_ms"),
    (lambda: PeriodicSubscriptionQos(period_ms=1_000, alert_after_interval_ms=500),
     "alert_after_interval_ms"),
    (lambda: PeriodicSubscriptionQos(period_ms=1.5), "period_ms"),  # type: ignore[arg-type]
    (lambda: OnChangeSubscriptionQos(min_interval_ms=True), "min_interval_ms"),
])
def test_a_value_out_of_bounds_raises_value_error_naming_the_field(make: Any, field: str
                                                                   ) -> None:
    with pytest.raises(ValueError, match=field):
        make()


def test_the_bounds_themselves_are_accepted() -> None:
    OnChangeSubscriptionQos(publication_ttl_ms=100, min_interval_ms=0)
    OnChangeSubscriptionQos(publication_ttl_ms=MAX_MS, min_interval_ms=MAX_MS)
    OnChangeWithKeepAliveSubscriptionQos(min_interval_ms=50, max_interval_ms=50,
                                         alert_after_interval_ms=50)
    OnChangeWithKeepAliveSubscriptionQos(max_interval_ms=MAX_MS, alert_after_interval_ms=MAX_MS)
    PeriodicSubscriptionQos(period_ms=50, alert_after_interval_ms=50)
    PeriodicSubscriptionQos(period_ms=MAX_MS)


def test_expired_and_alert_interval() -> None:
    assert not OnChangeSubscriptionQos().expired(10**15)  # 0: never
    assert OnChangeSubscriptionQos(expiry_date_ms=1_000).expired(1_000)
    assert not OnChangeSubscriptionQos(expiry_date_ms=1_000).expired(999)
    assert OnChangeSubscriptionQos().alert_after_ms == 0
    assert MulticastSubscriptionQos().alert_after_ms == 0
    assert OnChangeWithKeepAliveSubscriptionQos(
        min_interval_ms=0, max_interval_ms=100, alert_after_interval_ms=300).alert_after_ms == 300
    assert PeriodicSubscriptionQos(period_ms=100, alert_after_interval_ms=250
                                   ).alert_after_ms == 250


# ---------------------------------------------------------------------- received values


@pytest.mark.parametrize("data, expected", [
    ({"type": "OnChangeSubscriptionQos", "publication_ttl_ms": 5},
     OnChangeSubscriptionQos(publication_ttl_ms=100)),
    ({"type": "OnChangeSubscriptionQos", "publication_ttl_ms": 10**15},
     OnChangeSubscriptionQos(publication_ttl_ms=MAX_MS)),
    ({"type": "OnChangeSubscriptionQos", "min_interval_ms": -5},
     OnChangeSubscriptionQos(min_interval_ms=0)),
    ({"type": "OnChangeSubscriptionQos", "min_interval_ms": 10**15},
     OnChangeSubscriptionQos(min_interval_ms=MAX_MS)),
    # keep-alive: max raised to its minimum, then to the minimum interval
    ({"type": "OnChangeWithKeepAliveSubscriptionQos", "min_interval_ms": 0,
      "max_interval_ms": 10},
     OnChangeWithKeepAliveSubscriptionQos(min_interval_ms=0, max_interval_ms=50)),
    ({"type": "OnChangeWithKeepAliveSubscriptionQos", "min_interval_ms": 2_000,
      "max_interval_ms": 1_000},
     OnChangeWithKeepAliveSubscriptionQos(min_interval_ms=2_000, max_interval_ms=2_000)),
    # (an absent min interval is joynr's default, 1000)
    ({"type": "OnChangeWithKeepAliveSubscriptionQos", "max_interval_ms": 500},
     OnChangeWithKeepAliveSubscriptionQos(max_interval_ms=1_000)),
    # an alert interval: raised to the heartbeat interval, a negative one too; at most 30 d
    ({"type": "OnChangeWithKeepAliveSubscriptionQos", "min_interval_ms": 0,
      "max_interval_ms": 100, "alert_after_interval_ms": 70},
     OnChangeWithKeepAliveSubscriptionQos(min_interval_ms=0, max_interval_ms=100,
                                          alert_after_interval_ms=100)),
    ({"type": "OnChangeWithKeepAliveSubscriptionQos", "min_interval_ms": 0,
      "max_interval_ms": 100, "alert_after_interval_ms": -1},
     OnChangeWithKeepAliveSubscriptionQos(min_interval_ms=0, max_interval_ms=100,
                                          alert_after_interval_ms=100)),
    ({"type": "OnChangeWithKeepAliveSubscriptionQos", "alert_after_interval_ms": 10**15},
     OnChangeWithKeepAliveSubscriptionQos(alert_after_interval_ms=MAX_MS)),
    ({"type": "OnChangeWithKeepAliveSubscriptionQos", "alert_after_interval_ms": 0},
     OnChangeWithKeepAliveSubscriptionQos()),
    ({"type": "PeriodicSubscriptionQos", "period_ms": 1},
     PeriodicSubscriptionQos(period_ms=50)),
    ({"type": "PeriodicSubscriptionQos", "period_ms": 10**15},
     PeriodicSubscriptionQos(period_ms=MAX_MS)),
    ({"type": "PeriodicSubscriptionQos", "period_ms": 400, "alert_after_interval_ms": 10},
     PeriodicSubscriptionQos(period_ms=400, alert_after_interval_ms=400)),
])
def test_received_values_are_brought_into_bounds(data: dict[str, Any],
                                                 expected: SubscriptionQos) -> None:
    assert qos_from_wire(data) == expected


def test_a_received_negative_expiry_date_is_refused_not_read_as_never() -> None:
    with pytest.raises(ValueError, match="expiry_date_ms -7 is negative"):
        qos_from_wire({"type": "OnChangeSubscriptionQos", "expiry_date_ms": -7})


@pytest.mark.parametrize("data, default, expected", [
    ({}, OnChangeSubscriptionQos, OnChangeSubscriptionQos()),
    ({}, PeriodicSubscriptionQos, PeriodicSubscriptionQos()),
    ({}, MulticastSubscriptionQos, MulticastSubscriptionQos()),
    ({"min_interval_ms": 0}, OnChangeSubscriptionQos, OnChangeSubscriptionQos(min_interval_ms=0)),
    ({"period_ms": 300}, OnChangeSubscriptionQos, PeriodicSubscriptionQos(period_ms=300)),
    ({"max_interval_ms": 3_000}, OnChangeSubscriptionQos,
     OnChangeWithKeepAliveSubscriptionQos(max_interval_ms=3_000)),
    ({"expiry_date_ms": 5}, MulticastSubscriptionQos, MulticastSubscriptionQos(5)),
])
def test_a_map_without_type_is_the_default_kind_or_the_first_its_fields_fit(
        data: dict[str, Any], default: type[SubscriptionQos], expected: SubscriptionQos) -> None:
    assert qos_from_wire(data, default) == expected


@pytest.mark.parametrize("data, match", [
    ({"type": "FancySubscriptionQos"}, "unknown qos type"),
    ({"type": 7}, "unknown qos type"),
    ({"type": "OnChangeSubscriptionQos", "period_ms": 100}, "has no field"),
    ({"type": "MulticastSubscriptionQos", "publication_ttl_ms": 100}, "has no field"),
    ({"min_interval_ms": "100"}, "must be an int"),
    ({"min_interval_ms": 1.5}, "must be an int"),
    ({"min_interval_ms": True}, "must be an int"),
    ({"min_interval_ms": None}, "must be an int"),
    ({"period_ms": 100, "min_interval_ms": 0}, "fit no joynr QoS type"),
    ({"colour": 3}, "fit no joynr QoS type"),
])
def test_a_map_that_is_no_qos_raises_value_error(data: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        qos_from_wire(data)


@pytest.mark.parametrize("data", [[], "qos", None, 5])
def test_something_that_is_no_map_raises_value_error(data: Any) -> None:
    with pytest.raises(ValueError, match="must be a map"):
        qos_from_wire(data)


# ---------------------------------------------------------------------- wire forms

_interval = st.integers(min_value=50, max_value=MAX_MS)
_ttl = st.integers(min_value=100, max_value=MAX_MS)
_expiry = st.integers(min_value=0, max_value=2**63 - 1)


@st.composite
def any_qos(draw: st.DrawFn) -> SubscriptionQos:
    kind = draw(st.sampled_from(["on_change", "keep_alive", "periodic", "multicast",
                                 "attribute"]))
    expiry = draw(_expiry)
    if kind == "multicast":
        return MulticastSubscriptionQos(expiry)
    ttl = draw(_ttl)
    if kind == "periodic":
        period = draw(_interval)
        alert = draw(st.just(0) | st.integers(min_value=period, max_value=MAX_MS))
        return PeriodicSubscriptionQos(expiry, ttl, period, alert)
    minimum = draw(st.integers(min_value=0, max_value=MAX_MS))
    if kind == "on_change":
        return OnChangeSubscriptionQos(expiry, ttl, minimum)
    if kind == "attribute":
        return AttributeSubscriptionQos(expiry, ttl, minimum)
    maximum = draw(st.integers(min_value=max(minimum, 50), max_value=MAX_MS))
    alert = draw(st.just(0) | st.integers(min_value=maximum, max_value=MAX_MS))
    return OnChangeWithKeepAliveSubscriptionQos(expiry, ttl, minimum, maximum, alert)


def _same(received: SubscriptionQos, sent: SubscriptionQos) -> None:
    """``received`` is what was sent (an AttributeSubscriptionQos arrives as the
    OnChangeSubscriptionQos it is on the wire)."""
    assert received.to_wire() == sent.to_wire()
    expected = OnChangeSubscriptionQos if isinstance(sent, AttributeSubscriptionQos) else type(
        sent)
    assert type(received) is expected


@given(any_qos())
def test_to_wire_and_back(qos: SubscriptionQos) -> None:
    wire = qos.to_wire()
    assert wire["type"] == type(qos).wire_type
    _same(qos_from_wire(wire), qos)


def test_to_wire_names_the_fields_and_joynrs_type() -> None:
    assert PeriodicSubscriptionQos(7, 200, 300, 600).to_wire() == {
        "type": "PeriodicSubscriptionQos", "expiry_date_ms": 7, "publication_ttl_ms": 200,
        "period_ms": 300, "alert_after_interval_ms": 600}
    assert AttributeSubscriptionQos().to_wire() == {
        "type": "OnChangeSubscriptionQos", "expiry_date_ms": 0, "publication_ttl_ms": 10_000,
        "min_interval_ms": 0}
    assert MulticastSubscriptionQos(9).to_wire() == {"type": "MulticastSubscriptionQos",
                                                     "expiry_date_ms": 9}


def _json_round_trip(qos: SubscriptionQos) -> tuple[SubscriptionQos, dict[str, Any]]:
    """``qos`` in a request of its kind written as joynr JSON and read back; the read qos
    and the JSON qos object."""
    if isinstance(qos, MulticastSubscriptionQos):
        request: Any = MulticastSubscriptionRequest("sid", "news", "pid/news", qos.to_wire())
        default: type[SubscriptionQos] = MulticastSubscriptionQos
    elif isinstance(qos, PeriodicSubscriptionQos | OnChangeWithKeepAliveSubscriptionQos):
        request = SubscriptionRequest("sid", "level", qos.to_wire())
        default = OnChangeSubscriptionQos
    else:
        request = BroadcastSubscriptionRequest("sid", "signal", qos.to_wire(), {"genre": "pop"})
        default = OnChangeSubscriptionQos
    body = joynr_json.encode(request)
    decoded: Any = joynr_json.decode(type(request), body)
    assert type(decoded) is type(request)
    return qos_from_wire(decoded.qos, default), json.loads(body)["qos"]


@given(any_qos())
def test_joynr_json_round_trip_of_every_kind(qos: SubscriptionQos) -> None:
    received, as_json = _json_round_trip(qos)
    _same(received, qos)
    assert as_json["_typeName"] == "joynr." + type(received).wire_type


@pytest.mark.parametrize("qos, members", [
    (OnChangeSubscriptionQos(5, 200, 0),
     {"expiryDateMs": 5, "publicationTtlMs": 200, "minIntervalMs": 0}),
    (OnChangeWithKeepAliveSubscriptionQos(5, 200, 10, 100, 300),
     {"expiryDateMs": 5, "publicationTtlMs": 200, "minIntervalMs": 10, "maxIntervalMs": 100,
      "alertAfterIntervalMs": 300}),
    (PeriodicSubscriptionQos(5, 200, 100, 0),
     {"expiryDateMs": 5, "publicationTtlMs": 200, "periodMs": 100,
      "alertAfterIntervalMs": 0}),
    (MulticastSubscriptionQos(5), {"expiryDateMs": 5}),
])
def test_joynr_json_members(qos: SubscriptionQos, members: dict[str, Any]) -> None:
    received, as_json = _json_round_trip(qos)
    assert as_json == {"_typeName": "joynr." + qos.wire_type, **members}
    assert received == qos


def test_a_joynr_json_qos_with_few_members_keeps_its_kind() -> None:
    """joynr's runtimes write every member; one that writes few still names its kind, which
    survives the trip into the project's map (defaults fill the rest)."""
    for name, expected in [("joynr.PeriodicSubscriptionQos", PeriodicSubscriptionQos()),
                           ("joynr.OnChangeWithKeepAliveSubscriptionQos",
                            OnChangeWithKeepAliveSubscriptionQos()),
                           ("joynr.OnChangeSubscriptionQos", OnChangeSubscriptionQos())]:
        body = json.dumps({"_typeName": "joynr.SubscriptionRequest", "subscriptionId": "s",
                           "subscribedToName": "level", "qos": {"_typeName": name}}).encode()
        decoded = joynr_json.decode(SubscriptionRequest, body)
        assert isinstance(decoded, SubscriptionRequest)
        assert qos_from_wire(decoded.qos) == expected


def test_unicast_base_kind_is_read_as_what_it_is() -> None:
    assert type(qos_from_wire({"type": "UnicastSubscriptionQos"})) is UnicastSubscriptionQos

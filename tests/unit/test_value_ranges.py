"""Numbers from the wire are checked against joynr's ranges where they are typed
(``interface.from_wire``): every value in its type's range is taken, every other refused with
a ValueTypeError that names where, the value (cut) and the range; the fast decoders and the
step-by-step definition agree. The table is in docs/wire.md (value ranges)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.programming.discovery_types import (
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.runtime.interface import (
    Double,
    Float,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    ValueTypeError,
    datatype_name,
    from_wire,
    to_wire,
)
from pyjoynr.runtime.interface import _from_wire_checked as checked

#: (declared type, its name in the message, low, high)
INTEGERS: list[tuple[Any, str, int, int]] = [
    (Int8, "Int8 (Byte", -128, 127),
    (UInt8, "UInt8 (Byte", 0, 255),
    (Int16, "Int16 (Short", -32768, 32767),
    (UInt16, "UInt16 (Short", 0, 65535),
    (Int32, "Int32 (Integer", -(2 ** 31), 2 ** 31 - 1),
    (UInt32, "UInt32 (Integer", 0, 2 ** 32 - 1),
    (Int64, "Int64 (Long", -(2 ** 63), 2 ** 63 - 1),
    (int, "Int64 (Long", -(2 ** 63), 2 ** 63 - 1),
    (UInt64, "UInt64 (Long", 0, 2 ** 63 - 1),
]
FLOAT_MAX = 3.4028234663852886e38


def outcome(decode: Any, value: Any, tp: Any) -> Any:
    try:
        return ("ok", decode(value, tp, "p"))
    except ValueTypeError as exc:
        return ("refused", str(exc))


@pytest.mark.parametrize(("tp", "name", "low", "high"), INTEGERS)
@given(data=st.data())
def test_every_integer_in_range_is_taken_and_every_other_refused(
        tp: Any, name: str, low: int, high: int, data: st.DataObject) -> None:
    inside = data.draw(st.integers(low, high) | st.sampled_from([low, high]))
    assert from_wire(inside, tp, "p") == inside
    assert from_wire([inside, low, high], list[tp], "p") == [inside, low, high]
    outside = data.draw(st.integers(max_value=low - 1) | st.integers(min_value=high + 1)
                        | st.sampled_from([low - 1, high + 1, 2 ** 64, -(2 ** 64)]))
    for value, where in ((outside, "p"), ([low, outside], "p[1]")):
        with pytest.raises(ValueTypeError) as refused:
            from_wire(value, tp if where == "p" else list[tp], "p")
        message = str(refused.value)
        assert message.startswith(f"{where}: "), message
        assert f"out of the range of {name}: {low}..{high})" in message, message
        if outside.bit_length() <= 128:
            assert str(outside) in message
        assert outcome(from_wire, value, tp if where == "p" else list[tp]) == outcome(
            checked, value, tp if where == "p" else list[tp])


@given(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2 ** 1000), 2 ** 1000))
def test_every_finite_double_is_taken(value: float) -> None:
    for tp in (float, Double):
        assert from_wire(value, tp, "p") == float(value)
        assert type(from_wire(value, tp, "p")) is float


@given(st.floats(-FLOAT_MAX, FLOAT_MAX) | st.integers(-(2 ** 100), 2 ** 100))
def test_every_finite_single_is_taken(value: float) -> None:
    assert from_wire(value, Float, "p") == float(value)


@pytest.mark.parametrize("tp", [float, Double, Float])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 2 ** 1024, -(2 ** 5000)],
                         ids=["nan", "inf", "-inf", "2**1024", "-2**5000"])
def test_nan_the_infinities_and_numbers_beyond_a_double_are_refused(tp: Any, value: Any
                                                                    ) -> None:
    with pytest.raises(ValueTypeError, match=r"p: .* is out of the range of (Double|Float) "
                                             r"\(finite, at most"):
        from_wire(value, tp, "p")
    assert outcome(from_wire, value, tp) == outcome(checked, value, tp)


@given(st.floats(min_value=FLOAT_MAX, exclude_min=True) | st.floats(max_value=-FLOAT_MAX,
                                                                     exclude_max=True))
def test_a_double_beyond_a_single_is_refused_as_a_float(value: float) -> None:
    with pytest.raises(ValueTypeError, match=r"out of the range of Float"):
        from_wire(value, Float, "p")
    if math.isfinite(value):
        assert from_wire(value, float, "p") == value


def test_a_huge_integer_is_named_by_its_size_not_written_out() -> None:
    with pytest.raises(ValueTypeError) as refused:
        from_wire(10 ** 5000, int, "p")
    assert "an integer of 16610 bits is out of the range of Int64" in str(refused.value)
    assert len(str(refused.value)) < 200


def test_a_bool_is_no_integer_and_a_string_no_number() -> None:
    with pytest.raises(ValueTypeError, match="p: expected int, got bool"):
        from_wire(True, Int8, "p")
    with pytest.raises(ValueTypeError, match="p: expected a number, got str"):
        from_wire("1.5", Float, "p")


def test_the_generated_discovery_types_are_checked_field_by_field() -> None:
    """The GCD's and the Discovery provider's types: Version is Int32, the priority and the
    dates Int64, the scope an enumeration."""
    good = to_wire(GlobalDiscoveryEntry(
        Version(1, 2), "d", "i/I", "p", ProviderQos([], 5, ProviderScope.GLOBAL), 1, 2, "",
        "{}"))
    assert from_wire(good, GlobalDiscoveryEntry).qos.priority == 5
    for path, value, expected in (
            (("qos", "priority"), 2 ** 63, "e.qos.priority: 9223372036854775808 is out of "
                                           "the range of Int64 (Long"),
            (("provider_version", "major_version"), 2 ** 31,
             "e.provider_version.major_version: 2147483648 is out of the range of Int32 "
             "(Integer: -2147483648..2147483647)"),
            (("expiry_date_ms",), -(2 ** 63) - 1, "e.expiry_date_ms: -9223372036854775809 is "
                                                  "out of the range of Int64"),
            (("qos", "scope"), "EVERYWHERE", "e.qos.scope: 'EVERYWHERE' is not a "
                                             "ProviderScope")):
        bad = to_wire(from_wire(good, GlobalDiscoveryEntry))
        target = bad
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        with pytest.raises(ValueTypeError) as refused:
            from_wire(bad, GlobalDiscoveryEntry, "e")
        assert expected in str(refused.value)


def test_the_marks_do_not_change_the_datatype_names() -> None:
    """This project's paramDatatypes call every integer Long and both floats Double (joynr's
    names come from @joynr_datatypes)."""
    assert {datatype_name(tp) for tp, *_ in INTEGERS} == {"Long"}
    assert {datatype_name(tp) for tp in (float, Float, Double)} == {"Double"}
    assert datatype_name(list[Int8]) == "Long[]"
    assert datatype_name(Int32 | None) == "Long"

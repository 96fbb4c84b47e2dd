"""to_wire / from_wire (runtime.interface): the per-type converters give what the plain
recursive definition gives; the fast path of lists of plain values keeps the checks."""

from __future__ import annotations

import dataclasses
import enum
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.discovery_types import (
    CustomParameter,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from runtime.interface import PLAIN_TYPES, ValueTypeError, from_wire, to_wire


def reference_to_wire(value: Any) -> Any:
    """The definition: plain values as they are, enums by name, dataclasses as maps of their
    fields, lists and tuples as lists, maps by key; anything else as it is."""
    if type(value) in PLAIN_TYPES or value is None:
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: reference_to_wire(getattr(value, f.name))
                for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [reference_to_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: reference_to_wire(v) for k, v in value.items()}
    return value


class Colour(enum.Enum):
    RED = 1
    GREEN = "g"


class Level(enum.IntEnum):
    LOW = 1


@dataclasses.dataclass
class Inner:
    colour: Colour
    values: tuple[int, ...]


@dataclasses.dataclass(slots=True)
class Outer:
    name: str
    inner: Inner | None
    items: list[Inner]
    extra: dict[str, Any]


def entry(custom: list[CustomParameter]) -> GlobalDiscoveryEntry:
    return GlobalDiscoveryEntry(
        Version(2, 3), "d", "i/I", "p-1",
        ProviderQos(custom, 5, ProviderScope.GLOBAL, False), 10, 20, "key",
        {"_typeName": "joynr.system.RoutingTypes.MqttAddress", "brokerUri": "g",
         "topic": "joynr/cc/x"})


VALUES = [
    1, True, 1.5, "s", b"b", None, Colour.RED, Colour.GREEN, Level.LOW,
    [1, Colour.RED, (2, 3), {"a": Level.LOW}],
    OrderedDict(a=Colour.GREEN),
    Outer("o", Inner(Colour.RED, (1, 2)), [Inner(Colour.GREEN, ())], {"k": [Inner(
        Colour.RED, (3,))], "n": None}),
    Outer("o", None, [], {}),
    entry([]), entry([CustomParameter("a", "1"), CustomParameter("b", "2")]),
    Inner,  # a dataclass type is not a value of it: as it is
    object,
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_to_wire_is_the_recursive_definition(value: Any) -> None:
    assert to_wire(value) == reference_to_wire(value)
    assert to_wire(value) == reference_to_wire(value)  # again, with the converter made


leaves = st.one_of(st.integers(), st.booleans(), st.text(max_size=5), st.none(),
                   st.sampled_from(Colour), st.floats(allow_nan=False))
trees = st.recursive(leaves, lambda children: st.one_of(
    st.lists(children, max_size=4), st.tuples(children, children),
    st.dictionaries(st.text(max_size=3), children, max_size=3),
    st.builds(Inner, st.sampled_from(Colour), st.lists(st.integers(), max_size=3).map(tuple)),
    st.builds(Outer, st.text(max_size=3), st.none(), st.lists(st.builds(
        Inner, st.sampled_from(Colour), st.just(()))), st.dictionaries(
        st.text(max_size=3), children, max_size=2))), max_leaves=12)


@given(trees)
def test_to_wire_of_any_tree_is_the_recursive_definition(value: Any) -> None:
    assert to_wire(value) == reference_to_wire(value)


def test_a_list_of_plain_values_comes_back_as_a_new_list_of_them() -> None:
    value = ["a", "b"]
    typed = from_wire(value, list[str])
    assert typed == value and typed is not value
    assert from_wire([], list[int]) == []


@pytest.mark.parametrize(("value", "where"), [
    (["a", 1], r"p\[1\]: expected str, got int"),
    ([True], r"p\[0\]: expected int, got bool"),
    ("ab", "p: expected a list, got str"),
])
def test_a_list_with_a_value_of_another_type_is_refused_naming_it(value: Any, where: str
                                                                  ) -> None:
    with pytest.raises(ValueTypeError, match=where):
        from_wire(value, list[str] if value != [True] else list[int], "p")

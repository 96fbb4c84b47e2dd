"""to_wire / from_wire (runtime.interface): the per-type converters and decoders give what
the plain recursive definitions give (values and refusals alike); the fast path of lists of
plain values keeps the checks; named maps (keys as strings on the wire, read back typed)."""

from __future__ import annotations

import dataclasses
import enum
import types
from collections import OrderedDict
from typing import Any, Union

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.programming.discovery_types import (
    CustomParameter,
    DiscoveryQos,
    DiscoveryScope,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.runtime import interface
from pyjoynr.runtime.interface import (
    PLAIN_TYPES,
    Float,
    Int8,
    UInt64,
    ValueTypeError,
    datatype_name,
    from_wire,
    joynr_map_types,
    joynr_name,
    map_key_from_text,
    map_key_text,
    to_wire,
)


def reference_to_wire(value: Any) -> Any:
    """The definition: plain values as they are, enums by name, dataclasses as maps of their
    fields, lists and tuples as lists, maps by key (an int, bool or enum key as its text);
    anything else as it is."""
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
        return {reference_key(k): reference_to_wire(v) for k, v in value.items()}
    return value


def reference_key(key: Any) -> Any:
    if isinstance(key, enum.Enum):
        return key.name
    if type(key) is bool:
        return "true" if key else "false"
    return str(key) if type(key) is int else key


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


@joynr_name("test.Slots")
class Slots(dict[int, str]):
    """A named map keyed by integers."""


@joynr_name("test.ByColour")
class ByColour(dict[Colour, list[Slots]]):
    """A named map keyed by an enumeration, of a list of named maps."""


@joynr_name("test.Switches")
class Switches(dict[bool, Version | None]):
    """A named map keyed by booleans."""


@joynr_name("test.Names")
class Names(dict[str, int]):
    """A named map keyed by strings."""


def entry(custom: list[CustomParameter]) -> GlobalDiscoveryEntry:
    return GlobalDiscoveryEntry(
        Version(2, 3), "d", "i/I", "p-1",
        ProviderQos(custom, 5, ProviderScope.GLOBAL, False), 10, 20, "key",
        '{"_typeName":"joynr.system.RoutingTypes.MqttAddress","brokerUri":"g",'
        '"topic":"joynr/cc/x"}')


VALUES = [
    1, True, 1.5, "s", b"b", None, Colour.RED, Colour.GREEN, Level.LOW,
    [1, Colour.RED, (2, 3), {"a": Level.LOW}],
    OrderedDict(a=Colour.GREEN),
    Outer("o", Inner(Colour.RED, (1, 2)), [Inner(Colour.GREEN, ())], {"k": [Inner(
        Colour.RED, (3,))], "n": None}),
    Outer("o", None, [], {}),
    entry([]), entry([CustomParameter("a", "1"), CustomParameter("b", "2")]),
    Slots({1: "a", -2: "b"}), ByColour({Colour.GREEN: [Slots({0: "z"})], Colour.RED: []}),
    Switches({True: Version(1, 2), False: None}), Names({"1": 1}),
    {1: "a", False: "b", Colour.RED: "c", "d": 4},  # a plain dict: its keys as a named map's
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


# ---------------------------------------------------------------------- from_wire's decoders


def outcome(decode: Any, value: Any, tp: Any) -> tuple[str, str]:
    """What a decoding gives, comparable across implementations: the result's repr (types
    included: 1 and 1.0 differ) or the refusal's message."""
    try:
        return "typed", repr(decode(value, tp, "v"))
    except ValueTypeError as exc:
        return "refused", str(exc)


def checked(value: Any, tp: Any, where: str) -> Any:
    return interface._from_wire_checked(value, tp, where)


@dataclasses.dataclass(frozen=True)
class Node:
    """A dataclass whose fields hold itself (its decoder must find itself while made)."""

    name: str
    children: list[Node] = dataclasses.field(default_factory=list)
    parent: Node | None = None
    weight: float = 1.0


declared = st.recursive(
    st.sampled_from([int, bool, str, bytes, float, type(None), Any, Colour, Version,
                     ProviderQos, GlobalDiscoveryEntry, Inner, Outer, Node, DiscoveryQos,
                     Slots, ByColour, Switches, Names, Int8, UInt64, Float]),
    lambda inner: st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        st.tuples(inner, inner).map(lambda ab: Union[ab[0], ab[1]]),  # noqa: UP007
        inner.map(lambda t: Union[t, None])),  # noqa: UP007
    max_leaves=4)
wire_leaves = st.one_of(
    st.integers(), st.booleans(), st.text(max_size=4), st.binary(max_size=3), st.none(),
    st.floats(), st.sampled_from(["RED", "GREEN", "BLUE", "LOCAL", "GLOBAL", "name"]))
wire_trees = st.recursive(wire_leaves, lambda children: st.one_of(
    st.lists(children, max_size=3),
    st.dictionaries(st.sampled_from(["name", "children", "parent", "weight", "major_version",
                                     "minor_version", "colour", "x"]), children, max_size=4),
    st.dictionaries(st.text(max_size=2), children, max_size=2),
    st.dictionaries(st.sampled_from(["1", "-1", "01", "-0", "9223372036854775808", "true",
                                     "false", "RED", "GREEN", "LOW"]), children, max_size=3)),
    max_leaves=10)
int32s = st.integers(-2 ** 31, 2 ** 31 - 1)
int64s = st.integers(-2 ** 63, 2 ** 63 - 1)
typed_values = st.one_of(
    st.builds(Node, st.text(max_size=3), st.lists(st.builds(Node, st.text(max_size=2)),
                                                   max_size=2),
              st.none() | st.builds(Node, st.text(max_size=2)),
              st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(Version, int32s, int32s),
    st.lists(st.builds(entry, st.lists(st.builds(CustomParameter, st.text(max_size=2),
                                                 st.text(max_size=2)), max_size=2)),
             max_size=2),
    st.builds(DiscoveryQos, int64s, int64s, st.sampled_from(DiscoveryScope),
              st.booleans()),
    st.builds(Slots, st.dictionaries(st.integers(-2**63, 2**63 - 1), st.text(max_size=2),
                                     max_size=3)),
    st.builds(ByColour, st.dictionaries(st.sampled_from(Colour), st.lists(st.builds(
        Slots, st.dictionaries(st.integers(-5, 5), st.text(max_size=1), max_size=2)),
        max_size=2), max_size=2)),
    st.builds(Switches, st.dictionaries(st.booleans(), st.none() | st.builds(
        Version, int32s, int32s), max_size=2)))


@given(wire_trees, declared)
def test_from_wire_decides_as_its_step_by_step_definition_on_any_value(value: Any, tp: Any
                                                                       ) -> None:
    assert outcome(from_wire, value, tp) == outcome(checked, value, tp)


@given(typed_values, st.data())
def test_from_wire_of_a_sent_value_is_the_value_and_a_spoilt_one_is_refused_alike(
        value: Any, data: st.DataObject) -> None:
    tp = type(value) if not isinstance(value, list) else list[GlobalDiscoveryEntry]
    wire = to_wire(value)
    assert from_wire(wire, tp) == value
    assert outcome(from_wire, wire, tp) == outcome(checked, wire, tp)
    # one part of it replaced by something else: refused (or taken) as the definition says
    spoilt = spoil(wire, data.draw(wire_trees), data.draw(st.integers(0, 50)))
    assert outcome(from_wire, spoilt, tp) == outcome(checked, spoilt, tp)


def spoil(wire: Any, other: Any, n: int) -> Any:
    """``wire`` with its ``n``-th part (depth first, counting round) replaced by ``other``."""
    parts: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        for key in (range(len(node)) if isinstance(node, list) else
                    list(node) if isinstance(node, dict) else []):
            parts.append((node, key))
            walk(node[key])
    copy = copy_wire(wire)
    walk(copy)
    if not parts:
        return other
    node, key = parts[n % len(parts)]
    node[key] = other
    return copy


def copy_wire(wire: Any) -> Any:
    if isinstance(wire, list):
        return [copy_wire(v) for v in wire]
    if isinstance(wire, dict):
        return {k: copy_wire(v) for k, v in wire.items()}
    return wire


def test_the_decoders_keep_the_checks_of_the_definition() -> None:
    assert from_wire(3, float) == 3.0 and type(from_wire(3, float)) is float
    with pytest.raises(ValueTypeError, match=r"v\.weight: expected a number, got bool"):
        from_wire({"name": "n", "weight": True}, Node, "v")
    with pytest.raises(ValueTypeError, match=r"v\.children\[0\]: Node without name"):
        from_wire({"name": "n", "children": [{}]}, Node, "v")
    assert from_wire({"name": "n", "parent": {"name": "p"}, "extra": 1}, Node) == Node(
        "n", parent=Node("p"))
    with pytest.raises(ValueTypeError, match="unsupported declared type"):
        from_wire((1,), tuple[int])
    with pytest.raises(ValueTypeError, match=r"v\.values: unsupported declared type"):
        from_wire({"colour": "RED", "values": [1]}, Inner, "v")
    assert from_wire("RED", Union[int, Colour]) is Colour.RED  # noqa: UP007
    assert from_wire(None, Union[Colour, None]) is None  # noqa: UP007


# ---------------------------------------------------------------------- broadcast declarations


def test_selective_broadcast_declarations() -> None:
    @interface.interface("test/Declared")
    class Declared:
        news = interface.broadcast(text=str)
        signal = interface.broadcast(selective=True, filter_parameters=("genre", "country"),
                                     station=str, strength=int)
        open_signal = interface.broadcast(selective=True, station=str)

    broadcasts = interface.interface_def(Declared).broadcasts
    assert (broadcasts["news"].selective, broadcasts["news"].filter_parameters) == (False, ())
    assert broadcasts["news"].outputs == (("text", str),)
    signal = broadcasts["signal"]
    assert (signal.name, signal.selective, signal.filter_parameters) == (
        "signal", True, ("genre", "country"))
    assert signal.outputs == (("station", str), ("strength", int))
    assert broadcasts["open_signal"].filter_parameters == ()


@pytest.mark.parametrize("make, match", [
    (lambda: interface.broadcast(filter_parameters=("genre",), station=str), "only a selective"),
    (lambda: interface.broadcast(selective=True, filter_parameters="genre", station=str),
     "tuple of names"),
    (lambda: interface.broadcast(selective=True, filter_parameters=("genre", 1), station=str),
     "tuple of names"),
    (lambda: interface.broadcast(selective=True, filter_parameters=("g", "g"), station=str),
     "twice"),
    (lambda: interface.broadcast(selective="yes", station=str), "must be a bool"),
    (lambda: interface.broadcast(True, station=str), "positional"),  # type: ignore[misc]
])
def test_bad_broadcast_declarations_are_refused(make: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        make()


# ---------------------------------------------------------------------- named maps


def test_a_named_map_is_carried_with_its_keys_as_strings_and_read_back_typed() -> None:
    slots = Slots({10: "ten", -2**63: "min", 2: "two"})
    assert to_wire(slots) == {"10": "ten", "-9223372036854775808": "min", "2": "two"}
    assert type(to_wire(slots)) is dict  # the wire form is a plain map
    back = from_wire(to_wire(slots), Slots)
    assert back == slots and type(back) is Slots and list(back) == [10, -2**63, 2]
    nested = ByColour({Colour.GREEN: [Slots({1: "a"}), Slots()], Colour.RED: []})
    assert to_wire(nested) == {"GREEN": [{"1": "a"}, {}], "RED": []}
    back_nested = from_wire(to_wire(nested), ByColour)
    assert back_nested == nested and type(back_nested[Colour.GREEN][0]) is Slots
    # by the type's own decoder (not the step-by-step definition, which says why one refuses)
    decode = interface._decoder_of(ByColour)
    assert decode(to_wire(nested)) == nested and type(decode(to_wire(nested))) is ByColour
    with pytest.raises(interface._Refused):
        decode({"GREEN": [{"01": "a"}]})
    switches = Switches({True: Version(1, 2), False: None})
    assert to_wire(switches) == {"true": {"major_version": 1, "minor_version": 2},
                                 "false": None}
    assert from_wire(to_wire(switches), Switches) == switches
    assert from_wire({"_typeName": 1}, Names) == {"_typeName": 1}  # (no entry is special)
    # a plain dict where the named map is declared (as a provider may return it): the same
    assert to_wire({1: "a", 2: "b"}) == to_wire(Slots({1: "a", 2: "b"}))
    # their names and types
    assert datatype_name(Slots) == "test.Slots" and datatype_name(list[Slots]) == "test.Slots[]"
    assert joynr_map_types(ByColour) == (Colour, list[Slots])
    assert joynr_map_types(dict[int, str]) is None and joynr_map_types(Inner) is None


@pytest.mark.parametrize(("value", "tp", "message"), [
    ({"01": "a"}, Slots, r"v key: '01' is not an integer key"),
    ({"+1": "a"}, Slots, r"v key: '\+1' is not an integer key"),
    ({"-0": "a"}, Slots, r"v key: '-0' is not an integer key"),
    ({"1.0": "a"}, Slots, r"v key: '1.0' is not an integer key"),
    ({"9223372036854775808": "a"}, Slots, r"is not an integer key"),
    ({"1" * 5000: "a"}, Slots, r"is not an integer key"),
    ({1: "a"}, Slots, r"v key: a map key is a string on the wire, not a int"),
    ({"1": 1}, Slots, r"v\['1'\]: expected str, got int"),
    (["1", "a"], Slots, r"v: expected a Slots map, got list"),
    ({"True": None}, Switches, r"v key: 'True' is not a boolean key"),
    ({"BLUE": []}, ByColour, r"v key: 'BLUE' is not a Colour"),
    ({"RED": [{"x": "a"}]}, ByColour, r"v\['RED'\]\[0\] key: 'x' is not an integer key"),
])
def test_a_named_map_that_does_not_fit_is_refused_naming_where(value: Any, tp: Any,
                                                               message: str) -> None:
    with pytest.raises(ValueTypeError, match=message):
        from_wire(value, tp, "v")
    assert outcome(from_wire, value, tp) == outcome(checked, value, tp)


def test_map_keys_and_their_texts() -> None:
    assert [map_key_text(k) for k in ("s", 0, -7, True, False, Colour.GREEN, Level.LOW)] == [
        "s", "0", "-7", "true", "false", "GREEN", "LOW"]
    with pytest.raises(ValueTypeError, match="no form on the wire"):
        map_key_text(1.5)
    assert map_key_from_text("-9223372036854775808", int) == -2**63
    assert map_key_from_text("false", bool) is False
    assert map_key_from_text("RED", Colour) is Colour.RED
    with pytest.raises(ValueTypeError, match="unsupported map key type"):
        map_key_from_text("1.5", float)


def test_bad_named_map_declarations_are_refused() -> None:
    with pytest.raises(TypeError, match="keys of a named map are str, int, bool or an Enum"):
        joynr_name("x.Bad")(types.new_class("Bad", (dict[float, str],)))
    with pytest.raises(TypeError, match=r"a subclass of dict\[K, V\]"):
        joynr_name("x.Bare")(types.new_class("Bare", (dict,)))
    with pytest.raises(TypeError, match="forward reference"):
        joynr_name("x.Ahead")(types.new_class("Ahead", (dict[str, "Later"],)))  # type: ignore[name-defined]  # noqa: F821
    with pytest.raises(TypeError, match="no members to name"):
        joynr_name("x.Named", members={"a": "b"})(types.new_class("Named", (dict[str, int],)))

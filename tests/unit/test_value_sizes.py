"""Strings and arrays from the wire are checked against their declared bounds where they are
typed (``interface.from_wire``): a value at its bound is taken, one past it refused with a
ValueTypeError that names where, the size, the limit and (a string) its start, cut; the fast
decoders and the step-by-step definition agree. The system types declare their bounds as
Franca typedefs (``@details: maxLength N``) that the generator makes ``Annotated[...,
MaxLength(N)]``. The table is in docs/wire.md (value ranges)."""

from __future__ import annotations

from typing import Annotated, Any, get_type_hints

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.franca.generate import GenerationError, generate
from pyjoynr.franca.model import (
    ArrayOf,
    Field,
    Model,
    Named,
    Position,
    Primitive,
    StructType,
    TypeCollection,
    TypedefType,
)
from pyjoynr.programming.discovery_types import (
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.generated.infrastructure import GlobalCapabilitiesDirectory
from pyjoynr.programming.generated.types import AddressText, Identifier
from pyjoynr.runtime.interface import MaxLength, ValueTypeError, from_wire, to_wire
from pyjoynr.runtime.interface import _from_wire_checked as checked

#: (declared type, its name, its limit)
STRINGS: list[tuple[Any, str, int]] = [(Identifier, "Identifier", 1024),
                                       (AddressText, "AddressText", 4000)]


def declared(method: Any, argument: str) -> Any:
    """The declared type of a generated method's argument (with its bound)."""
    return get_type_hints(method, include_extras=True)[argument]


#: the bounded lists of the GCD, as generated from fidl/ (bounds on the arguments)
GBIDS = declared(GlobalCapabilitiesDirectory.add_in_backends, "gbids")
DOMAINS = declared(GlobalCapabilitiesDirectory.lookup, "domains")
PARTICIPANT_IDS = declared(GlobalCapabilitiesDirectory.touch_participants, "participant_ids")
ARRAYS: list[tuple[Any, str, int]] = [(GBIDS, "gbids", 100), (DOMAINS, "domains", 1000),
                                      (PARTICIPANT_IDS, "participantIds", 10000)]


def outcome(decode: Any, value: Any, tp: Any) -> Any:
    try:
        return ("ok", decode(value, tp, "p"))
    except ValueTypeError as exc:
        return ("refused", str(exc))


@pytest.mark.parametrize(("tp", "name", "limit"), STRINGS)
@given(data=st.data())
def test_a_string_up_to_its_bound_is_taken_and_a_longer_one_refused(
        tp: Any, name: str, limit: int, data: st.DataObject) -> None:
    size = data.draw(st.integers(0, limit) | st.just(limit))
    char = data.draw(st.characters(codec="utf-8"))
    assert from_wire(char * size, tp, "p") == char * size
    over = data.draw(st.integers(limit + 1, 4 * limit) | st.just(limit + 1))
    value = char * over
    with pytest.raises(ValueTypeError) as refused:
        from_wire(value, tp, "p")
    message = str(refused.value)
    assert message.startswith(f"p: {(char * 40)!r}... has {over} characters, over the limit "
                              f"of {name} ({limit} characters)"), message
    assert len(message) < 200 + len(repr(char * 40))
    assert outcome(from_wire, value, tp) == outcome(checked, value, tp)


@pytest.mark.parametrize(("tp", "name", "limit"), ARRAYS)
@given(data=st.data())
def test_an_array_up_to_its_bound_is_taken_and_a_longer_one_refused(
        tp: Any, name: str, limit: int, data: st.DataObject) -> None:
    size = data.draw(st.integers(0, limit) | st.just(limit))
    assert from_wire(["g"] * size, tp, "p") == ["g"] * size
    over = data.draw(st.integers(limit + 1, 10 * limit) | st.just(limit + 1))
    with pytest.raises(ValueTypeError) as refused:
        from_wire(["g"] * over, tp, "p")
    assert str(refused.value) == (f"p: {over} items, over the limit of {name} "
                                  f"({limit} items)")
    assert outcome(from_wire, ["g"] * over, tp) == outcome(checked, ["g"] * over, tp)


def test_the_items_of_an_array_keep_their_own_bound() -> None:
    value = ["g", "x" * 1025]
    with pytest.raises(ValueTypeError, match=r"^p\[1\]: 'x{40}'\.\.\. has 1025 characters, "
                                             r"over the limit of Identifier"):
        from_wire(value, GBIDS, "p")
    assert outcome(from_wire, value, GBIDS) == outcome(checked, value, GBIDS)


def test_a_value_of_another_type_is_refused_by_its_type_not_its_size() -> None:
    with pytest.raises(ValueTypeError, match="p: expected str, got list"):
        from_wire(["a"] * 2000, Identifier, "p")
    with pytest.raises(ValueTypeError, match="p: expected a list, got str"):
        from_wire("a" * 2000, GBIDS, "p")


def test_bytes_and_maps_count_bytes_and_entries() -> None:
    blob = Annotated[bytes, MaxLength(4, "Blob")]
    table = Annotated[dict[str, int], MaxLength(2, "Table")]
    assert from_wire(b"1234", blob, "p") == b"1234"
    assert from_wire({"a": 1, "b": 2}, table, "p") == {"a": 1, "b": 2}
    with pytest.raises(ValueTypeError, match=r"^p: 5 bytes, over the limit of Blob \(4 bytes"):
        from_wire(b"12345", blob, "p")
    with pytest.raises(ValueTypeError, match=r"^p: 3 entries, over the limit of Table"):
        from_wire({"a": 1, "b": 2, "c": 3}, table, "p")


def test_a_plain_string_or_list_has_no_bound_but_the_frame() -> None:
    assert len(from_wire("x" * 3_000_000, str, "p")) == 3_000_000
    assert len(from_wire(["x"] * 200_000, list[str], "p")) == 200_000


def test_the_discovery_entry_bounds_its_identifiers_and_its_address() -> None:
    good = to_wire(GlobalDiscoveryEntry(
        Version(1, 2), "d" * 1024, "i" * 1024, "p" * 1024,
        ProviderQos([], 5, ProviderScope.GLOBAL), 1, 2, "k" * 1024, "a" * 4000))
    assert from_wire(good, GlobalDiscoveryEntry).domain == "d" * 1024
    for name, size in (("domain", 2_000_000), ("interface_name", 1025),
                       ("participant_id", 1025), ("public_key_id", 1025), ("address", 4001)):
        bad = dict(good, **{name: "z" * size})
        with pytest.raises(ValueTypeError) as refused:
            from_wire(bad, GlobalDiscoveryEntry, "e")
        assert str(refused.value).startswith(f"e.{name}: 'zzzz"), str(refused.value)
        assert f"has {size} characters, over the limit" in str(refused.value)


# ====================================================================== the generator


def at(line: int) -> Position:
    return Position("bounds.fidl", line, 1)


def bounded_model(actual: Any) -> Model:
    name = TypedefType("Name", "vehicle", None, "joynr.vehicle.Name", actual,
                       "@description: A name.\n@details: maxLength 64", at(1))
    names = TypedefType("Names", "vehicle", None, "joynr.vehicle.Names",
                        ArrayOf(Named(name)), "@details: maxLength 8", at(2))
    station = StructType("Station", "vehicle", None, "joynr.vehicle.Station",
                         (Field("name", Named(name), "", at(3)),
                          Field("aliases", Named(names), "", at(3))), None, False, "", at(3))
    return Model((TypeCollection(None, "vehicle", None, (name, names, station), "", at(1)),),
                 (), ("bounds.fidl",))


def test_the_generator_declares_a_typedef_with_a_max_length_as_annotated() -> None:
    text = generate(bounded_model(Primitive("String")), "pkg")["pkg/vehicle.py"]
    assert "#: A name.\nName: TypeAlias = Annotated[str, MaxLength(64, \"Name\")]" in text
    assert "Names: TypeAlias = Annotated[list[Name], MaxLength(8, \"Names\")]" in text
    assert "maxLength" not in text
    assert "    name: Name = \"\"" in text


def test_the_generator_refuses_a_max_length_on_a_type_without_a_size() -> None:
    with pytest.raises(GenerationError, match="typedef Name: maxLength bounds a String, a "
                                              "ByteBuffer or an array, not Int32"):
        generate(bounded_model(Primitive("Int32")), "pkg")

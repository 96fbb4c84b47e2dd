"""The Franca IDL parser: every construct into the model, the joynr wire names, imports, and
every refusal with its exact ``file:line:column: message``.

The .fidl files are under tests/franca/parser/: radio/ (every construct, imports across files
and folders), wire/ (types shaped like joynr's own, to compare wire names with the ones this
project uses), classpath/, errors/ (one kind of problem per file).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pyjoynr.franca.parser
from pyjoynr.franca.model import (
    Arg,
    ArrayOf,
    ArrayType,
    EnumType,
    Interface,
    MapType,
    Method,
    Model,
    Named,
    Position,
    Primitive,
    StructType,
    TypeDecl,
    TypedefType,
    UnionType,
)
from pyjoynr.franca.parser import FrancaError, Problem, parse_files
from pyjoynr.gcd.interface import GCD_INTERFACE
from pyjoynr.programming import discovery_types
from pyjoynr.programming.system_interfaces import Discovery, Routing
from pyjoynr.runtime.interface import interface_def, joynr_type_name

HERE = Path(__file__).resolve().parent.parent / "franca" / "parser"
RADIO = HERE / "radio" / "radio.fidl"
RADIO_TYPES = HERE / "radio" / "radio_types.fidl"
BASE = HERE / "radio" / "common" / "base.fidl"
ERRORS = HERE / "errors"


def _decl(model: Model, wire_name: str) -> TypeDecl:
    found = [d for d in model.declarations() if d.wire_name == wire_name]
    assert len(found) == 1, wire_name
    return found[0]


def _enum(model: Model, wire_name: str) -> EnumType:
    found = _decl(model, wire_name)
    assert isinstance(found, EnumType)
    return found


def _interface(model: Model, wire_name: str) -> Interface:
    found = [i for i in model.interfaces if i.wire_name == wire_name]
    assert len(found) == 1, wire_name
    return found[0]


def _named(ref: object) -> TypeDecl:
    assert isinstance(ref, Named), ref
    return ref.decl


def _problems(path: Path, *paths: Path) -> list[str]:
    with pytest.raises(FrancaError) as caught:
        parse_files([str(path), *(str(p) for p in paths)])
    assert str(caught.value) == "\n".join(str(p) for p in caught.value.problems)
    return str(caught.value).splitlines()


@pytest.fixture(scope="module")
def radio() -> Model:
    return parse_files([str(RADIO)])


# ---------------------------------------------------------------------------------------------
# every construct


def test_files_are_read_once_in_import_order(radio: Model) -> None:
    # radio.fidl imports radio_types.fidl, then common/base.fidl twice (model and element)
    assert radio.files == (str(RADIO), str(RADIO_TYPES), str(BASE))
    assert [(c.package, c.name) for c in radio.type_collections] == [
        ("vehicle", None),
        ("vehicle", "RadioTypes"),
        ("common.base", None),
        ("common.base", "Units"),
    ]
    assert [i.wire_name for i in radio.interfaces] == ["vehicle/Radio", "vehicle/Dab",
                                                      "common/base/Clock"]


def test_type_collection_version_comment_and_order(radio: Model) -> None:
    anonymous, radio_types, base_anonymous, units = radio.type_collections
    assert anonymous.version is None
    assert anonymous.position == Position(str(RADIO), 7, 1)
    assert radio_types.version == (2, 1)
    assert units.version == (1, 0)
    assert base_anonymous.comment == (
        "@description: shared types, in a type collection without a name"
    )
    # constants are parsed and dropped
    assert [t.name for t in radio_types.types] == [
        "Country", "MoreCountries", "RadioStation", "DabStation", "TaggedStation",
        "StationList", "StationsByCountry", "Frequency", "Tuning", "Node",
    ]


def test_enumerations(radio: Model) -> None:
    country = _decl(radio, "joynr.vehicle.RadioTypes.Country")
    assert isinstance(country, EnumType)
    assert (country.package, country.owner, country.name) == ("vehicle", "RadioTypes", "Country")
    # commas between enumerators are optional; values decimal, hex, in a string, or none
    assert [(e.name, e.value) for e in country.enumerators] == [
        ("AUSTRALIA", 1), ("ITALY", 16), ("CANADA", 3), ("GERMANY", None),
    ]
    assert country.enumerators[0].comment == "@description: the first one"
    assert country.enumerators[1].comment == ""
    assert country.comment == "@description: a country\nwith a second line\n@see: nothing"
    assert country.position == Position(str(RADIO_TYPES), 14, 14)
    assert country.base is None

    more = _decl(radio, "joynr.vehicle.RadioTypes.MoreCountries")
    assert isinstance(more, EnumType)
    assert more.base is country
    assert [(e.name, e.value) for e in more.enumerators] == [("FRANCE", -2)]
    assert [e.name for e in more.all_enumerators()] == [
        "AUSTRALIA", "ITALY", "CANADA", "GERMANY", "FRANCE",
    ]

    unit = _decl(radio, "joynr.common.base.Units.Unit")
    assert isinstance(unit, EnumType)
    assert [e.name for e in unit.enumerators] == ["METRE", "SECOND", "KILOGRAM"]


def test_structs(radio: Model) -> None:
    station = _decl(radio, "joynr.vehicle.RadioTypes.RadioStation")
    assert isinstance(station, StructType)
    assert station.polymorphic and station.base is None
    assert [(f.name, f.type) for f in station.fields] == [
        ("name", Primitive("String")),
        ("trafficService", Primitive("Boolean")),
        ("country", Named(_decl(radio, "joynr.vehicle.RadioTypes.Country"))),
        ("logo", Primitive("ByteBuffer")),
        ("presets", ArrayOf(Primitive("UInt8"))),  # written `UInt8 [] presets`
    ]
    assert station.fields[0].comment == "@description: the station's name"
    assert station.fields[0].position == Position(str(RADIO_TYPES), 26, 10)

    dab = _decl(radio, "joynr.vehicle.RadioTypes.DabStation")
    assert isinstance(dab, StructType)
    assert dab.base is station and not dab.polymorphic
    assert [f.name for f in dab.fields] == ["ensemble"]

    # `polymorphic` and `extends` in either order
    tagged = _decl(radio, "joynr.vehicle.RadioTypes.TaggedStation")
    assert isinstance(tagged, StructType)
    assert tagged.base is dab and tagged.polymorphic

    # a struct that refers to itself: compared and printed without recursing
    node = _decl(radio, "joynr.vehicle.RadioTypes.Node")
    assert isinstance(node, StructType)
    children = node.fields[1].type
    assert isinstance(children, ArrayOf)
    assert _named(children.element) is node
    assert repr(children) == "ArrayOf(element=Named('joynr.vehicle.RadioTypes.Node'))"
    assert node == _decl(parse_files([str(RADIO)]), node.wire_name)

    local = _decl(radio, "joynr.vehicle.Local")  # fields named like keywords
    assert isinstance(local, StructType)
    assert [(f.name, f.type) for f in local.fields] == [
        ("in", Primitive("String")), ("out", Primitive("Int32")),
    ]


def test_array_map_typedef_union(radio: Model) -> None:
    station = _decl(radio, "joynr.vehicle.RadioTypes.RadioStation")
    stations = _decl(radio, "joynr.vehicle.RadioTypes.StationList")
    assert isinstance(stations, ArrayType)
    assert stations.element == Named(station)

    by_country = _decl(radio, "joynr.vehicle.RadioTypes.StationsByCountry")
    assert isinstance(by_country, MapType)
    assert by_country.key == Named(_decl(radio, "joynr.vehicle.RadioTypes.Country"))
    assert by_country.value == Named(stations)

    frequency = _decl(radio, "joynr.vehicle.RadioTypes.Frequency")
    assert isinstance(frequency, TypedefType)
    assert frequency.actual == Primitive("Double")

    tuning = _decl(radio, "joynr.vehicle.RadioTypes.Tuning")
    assert isinstance(tuning, UnionType)
    assert [(f.name, f.type) for f in tuning.fields] == [
        ("frequency", Named(frequency)), ("channel", Primitive("String")),
    ]
    assert tuning.base is None


def test_interface_attributes_and_name_lookup(radio: Model) -> None:
    iface = _interface(radio, "vehicle/Radio")
    assert (iface.name, iface.package, iface.version) == ("Radio", "vehicle", (1, 2))
    assert iface.comment == "@description: a car radio"
    assert iface.position == Position(str(RADIO), 12, 11)
    assert iface.base is None
    flags = [(a.name, a.readonly, a.no_subscriptions) for a in iface.attributes]
    assert flags == [
        ("currentStation", False, False),
        ("volume", True, False),
        ("mute", False, True),
        ("balance", True, True),  # `noSubscriptions readonly`
        ("countries", True, True),
        ("thing", False, False),
        ("unit", False, False),
        ("frequency", False, False),
    ]
    types = {a.name: a.type for a in iface.attributes}
    # through `import vehicle.RadioTypes.* from`
    assert _named(types["currentStation"]).wire_name == "joynr.vehicle.RadioTypes.RadioStation"
    # `RadioTypes.Country`: a type collection of the same package
    country = types["countries"]
    assert isinstance(country, ArrayOf)
    assert _named(country.element).wire_name == "joynr.vehicle.RadioTypes.Country"
    # fully qualified, from `import model`
    assert _named(types["thing"]).wire_name == "joynr.common.base.Thing"
    # `import common.base.Units.Unit from`: one element
    assert _named(types["unit"]).wire_name == "joynr.common.base.Units.Unit"
    assert isinstance(_named(types["frequency"]), TypedefType)
    assert types["volume"] == Primitive("Int32")


def test_methods_overloads_and_errors(radio: Model) -> None:
    iface = _interface(radio, "vehicle/Radio")
    assert [m.name for m in iface.methods] == [
        "addFavorite", "shuffle", "ping", "locate", "tune", "tune", "tune",
    ]
    add, shuffle, ping, locate, tune1, tune2, tune3 = iface.methods
    station = _decl(radio, "joynr.vehicle.RadioTypes.RadioStation")
    assert add == Method(
        name="addFavorite",
        in_args=(Arg("station", Named(station), "", Position(str(RADIO), 26, 21)),),
        out_args=(Arg("added", Primitive("Boolean"), "", Position(str(RADIO), 27, 17)),),
        fire_and_forget=False,
        errors=_enum(radio, "joynr.vehicle.AddFavoriteErrors"),  # interface-local
        comment="@description: adds a favourite station",
        position=Position(str(RADIO), 25, 9),
    )
    assert add.errors is not None and add.errors.owner == "Radio"
    assert (shuffle.fire_and_forget, shuffle.in_args, shuffle.out_args) == (True, (), ())
    assert ping.fire_and_forget and [a.name for a in ping.in_args] == ["n"]

    # several out arguments; an inline error enumeration, named as joynr names it
    geo = _decl(radio, "joynr.vehicle.GeoPosition")  # the package's anonymous collection
    assert [(a.name, a.type) for a in locate.out_args] == [
        ("position", Named(geo)), ("address", Primitive("String")),
    ]
    assert locate.errors is not None
    assert (locate.errors.name, locate.errors.wire_name) == (
        "LocateErrorEnum", "joynr.vehicle.Radio.LocateErrorEnum",
    )
    assert (locate.errors.package, locate.errors.owner) == ("vehicle", "Radio")
    assert [e.name for e in locate.errors.enumerators] == ["NO_FIX", "INTERNAL"]

    # overloads: the inline error enumerations are numbered per overload
    assert tune1.errors is not None and tune2.errors is not None
    assert tune1.errors.wire_name == "joynr.vehicle.Radio.Tune1ErrorEnum"
    assert tune1.errors.base is _decl(radio, "joynr.vehicle.Failure")
    assert [e.name for e in tune1.errors.all_enumerators()] == ["INTERNAL_ERROR", "OUT_OF_RANGE"]
    assert tune2.errors.wire_name == "joynr.vehicle.Radio.Tune2ErrorEnum"
    assert tune2.errors.base is None
    assert tune3.errors is None
    assert [a.name for a in tune3.in_args] == ["channel", "version"]  # `^version`
    assert tune1.in_args[0].type == Named(_decl(radio, "joynr.vehicle.RadioTypes.Frequency"))

    clock = _interface(radio, "common/base/Clock")
    assert clock.methods[0].errors is not None
    assert clock.methods[0].errors.wire_name == "joynr.common.base.Clock.NowErrorEnum"


def test_broadcasts_types_and_extends(radio: Model) -> None:
    iface = _interface(radio, "vehicle/Radio")
    assert [(b.name, b.selective, [a.name for a in b.out_args]) for b in iface.broadcasts] == [
        ("newStation", False, ["station", "position"]),
        ("weakSignal", True, ["station"]),
        ("ended", False, []),
    ]
    # types declared in an interface: the interface's name is not in their wire name
    assert [(t.name, t.owner, t.wire_name) for t in iface.types] == [
        ("AddFavoriteErrors", "Radio", "joynr.vehicle.AddFavoriteErrors"),
        ("Failure", "Radio", "joynr.vehicle.Failure"),
        ("Local", "Radio", "joynr.vehicle.Local"),
    ]
    dab = _interface(radio, "vehicle/Dab")
    assert dab.base is iface and dab.version == (1, 0)


def test_same_input_gives_an_equal_model(radio: Model) -> None:
    again = parse_files([str(RADIO), str(BASE)])  # base.fidl: given and imported, read once
    assert again == radio
    assert repr(again) == repr(radio)
    assert hash(again) == hash(radio)


# ---------------------------------------------------------------------------------------------
# wire names: the ones joynr's generators give, as this project already uses them


def test_wire_names_are_the_ones_the_runtime_uses() -> None:
    model = parse_files([str(HERE / "wire" / "system.fidl"), str(HERE / "wire" / "gcd.fidl")])
    for struct_or_enum in (discovery_types.Version, discovery_types.ProviderQos,
                           discovery_types.DiscoveryEntry, discovery_types.DiscoveryErrorCode):
        name = joynr_type_name(struct_or_enum)
        assert _decl(model, name).name == name.rsplit(".")[-1]
    mqtt = _decl(model, "joynr.system.RoutingTypes.MqttAddress")
    assert isinstance(mqtt, StructType) and mqtt.owner == "RoutingTypes"
    for declared in (Routing, Discovery):
        definition = interface_def(declared)
        iface = _interface(model, definition.name)
        assert iface.version == definition.version
    discovery = _interface(model, "system/Discovery")
    assert discovery.methods[0].errors is _decl(model, "joynr.types.DiscoveryError")
    assert _interface(model, GCD_INTERFACE).name == "GlobalCapabilitiesDirectory"


# ---------------------------------------------------------------------------------------------
# imports


def test_classpath_imports() -> None:
    path = HERE / "classpath" / "uses_classpath.fidl"
    model = parse_files([str(path)], classpath=[str(HERE / "radio")])
    holder = _decl(model, "joynr.user.Types.Holder")
    assert isinstance(holder, StructType)
    assert [_named(f.type).wire_name for f in holder.fields] == [
        "joynr.common.base.Thing", "joynr.common.base.Units.Unit",
    ]
    assert _problems(path) == [
        f"{path}:3:27: imported file not found on the classpath: 'classpath:/common/base.fidl'",
        f"{path}:6:18: unknown type 'Thing'",
        f"{path}:6:31: unknown type 'Units.Unit'",
    ]


def test_only_imported_files_are_visible() -> None:
    # both files are read, but not_imported.fidl does not import the one declaring the type
    path = ERRORS / "not_imported.fidl"
    assert _problems(path, ERRORS / "ambiguous_a.fidl") == [
        f"{path}:4:13: unknown type 'first.Shared'",
    ]


def test_missing_files() -> None:
    path = ERRORS / "missing_import.fidl"
    assert _problems(path) == [
        f"{path}:3:14: cannot read imported file 'nowhere.fidl': No such file or directory",
        f"{path}:4:21: cannot read imported file '../errors/absent/other.fidl': "
        "No such file or directory",
        f"{path}:7:13: unknown type 'Thing'",
    ]
    absent = HERE / "absent.fidl"
    assert _problems(absent) == [f"{absent}:1:1: cannot read file: No such file or directory"]


# ---------------------------------------------------------------------------------------------
# refusals


def test_syntax_errors_name_what_was_expected() -> None:
    path = ERRORS / "syntax.fidl"
    assert _problems(path) == [
        f"{path}:5:15: syntax error: unexpected '}}', expected a name",
    ]
    path = ERRORS / "unexpected_end.fidl"
    assert _problems(path) == [
        f"{path}:5:1: syntax error: unexpected end of file, expected one of 'array', "
        "'attribute', 'broadcast', 'const', 'enumeration', 'map', 'method', 'struct', "
        "'typedef', 'union', '}', a comment <** **>",
    ]


def test_unknown_types() -> None:
    path = ERRORS / "unknown_type.fidl"
    assert _problems(path) == [
        f"{path}:5:3: unknown type 'Colour'",
        f"{path}:6:3: unknown type 'Types.Shape'",
        f"{path}:8:15: unknown type 'elsewhere.Thing'",
        # a type of a named type collection needs its collection's name in an interface
        f"{path}:12:12: unknown type 'S'",
        f"{path}:13:18: unknown type 'Size'",
        f"{path}:14:22: unknown type 'S'",
        f"{path}:14:31: unknown type 'Weight'",
    ]


def test_ambiguous_type_names() -> None:
    path = ERRORS / "ambiguous.fidl"
    assert _problems(path) == [
        f"{path}:7:13: ambiguous type 'Shared': first.Shared, second.Shared",
    ]


def test_duplicate_names() -> None:
    path = ERRORS / "duplicate.fidl"
    assert _problems(path) == [
        f"{path}:4:29: duplicate field 'a', first declared at {path}:4:19",
        f"{path}:5:14: duplicate type 'dup.Types.S', first declared at {path}:4:9",
        f"{path}:6:22: duplicate enumerator 'A', first declared at {path}:6:18",
        f"{path}:11:19: duplicate attribute 'x', first declared at {path}:10:18",
        f"{path}:12:33: duplicate in-argument 'p', first declared at {path}:12:24",
        f"{path}:14:12: duplicate broadcast 'b', first declared at {path}:13:12",
        f"{path}:17:11: duplicate interface 'dup.I', first declared at {path}:9:11",
    ]


def test_overloads_must_differ_in_joynr_parameter_types() -> None:
    # names do not count, nor signedness (UInt32 and Int32 are joynr's Integer), nor typedefs
    path = ERRORS / "overload.fidl"
    first = f"{path}:8:9"
    assert _problems(path) == [
        f"{path}:9:9: method 'm' has the same in-argument types as its overload at {first}",
        f"{path}:10:9: method 'm' has the same in-argument types as its overload at {first}",
        f"{path}:11:9: method 'm' has the same in-argument types as its overload at {first}",
    ]


def test_cycles() -> None:
    path = ERRORS / "cycle.fidl"
    assert _problems(path) == [
        f"{path}:4:19: cyclic extends: A -> B -> C -> A",
        f"{path}:7:24: cyclic extends: E -> E",
        f"{path}:8:15: cyclic type definition: X -> Y -> Z -> X",
        f"{path}:13:21: cyclic extends: I -> J -> I",
    ]


def test_what_joynr_refuses() -> None:
    path = ERRORS / "refused.fidl"
    assert _problems(path) == [
        f'{path}:4:22: enumerator value must be a 64-bit integer, not "one"',
        f"{path}:4:33: enumerator value must be a 64-bit integer, not 99999999999999999999",
        f"{path}:5:19: 'S' cannot extend 'E': not a struct",
        f"{path}:6:13: Franca's type 'Integer' is not supported by joynr; "
        "use Int8, Int16, Int32 or Int64",
        f"{path}:7:30: field 'v' is already declared in 'T'",
        f"{path}:11:9: fireAndForget method 'send' cannot have out arguments or errors",
        f"{path}:12:22: error 'Types.S' is not an enumeration",
    ]


def test_what_francas_grammar_refuses_is_refused_saying_what_franca_takes() -> None:
    """An array as a typedef's type or a map's key or value, a Franca keyword as a selector
    (unless escaped with ``^``): Franca's grammar, so joynr's generator, refuses them."""
    path = ERRORS / "not_franca.fidl"
    assert _problems(path) == [
        f"{path}:3:17: typedef Ids: Franca's typedef takes no array (T[]); write T[] where it "
        "is used, bounded by a `@details: maxLength N` comment on the argument, field or "
        "attribute",
        f"{path}:4:25: map ByName: Franca's map takes no array (T[]) as its value; declare a "
        "struct holding the T[] (struct S { T[] items }) and map to it",
        f"{path}:5:14: map ByIds: Franca's map takes no array (T[]) as its key; declare a "
        "struct holding the T[] (struct S { T[] items }) and map from it",
        f"{path}:10:13: method add:in: 'in' is a Franca keyword, which Franca's grammar does "
        "not take as a selector; choose another word or escape it (method add:^in)",
        f"{path}:13:20: broadcast changed:selective: 'selective' is a Franca keyword, which "
        "Franca's grammar does not take as a selector; choose another word or escape it "
        "(broadcast changed:^selective)",
    ]


def test_a_structured_comment_franca_does_not_take_is_refused_where_francas_reading_ends(
        tmp_path: Path) -> None:
    """Franca reads a structured comment as annotations (``@tag: text``) whose text holds no
    unescaped ``*``, ``@`` or backslash: joynr's generator refuses a file with any other."""
    path = tmp_path / "comments.fidl"
    path.write_text(
        "package c\n"
        "typeCollection T {\n"
        '\t<** @description: a uid "*" is every user **> struct A { String s }\n'
        "\t<**\n\t\t@description: mail admin@example.org\n\t**> struct B { String s }\n"
        "\t<** just text **> struct C { String s }\n"
        "\t<** @description: a \\q **> struct D { String s }\n"
        # what Franca takes: escapes, several annotations, a tag with a dash
        '\t<** @description: a uid \\* or \\@ or \\" @see: A @my-tag: x **> '
        "struct E { String s }\n"
        "}\n")
    assert _problems(path) == [
        f"{path}:3:27: structured comment: an unescaped '*' ends Franca's annotation here; "
        "escape it (\\*) or reword",
        f"{path}:5:27: structured comment: an '@' that begins no annotation (@tag:) ends "
        "Franca's annotation here; escape it (\\@) or reword",
        f"{path}:7:6: a structured comment is a list of annotations (@description: ...): "
        "Franca's grammar does not take it without one",
        f"{path}:8:22: structured comment: an unescaped '\\' ends Franca's annotation here; "
        "escape it (\\\\) or reword",
    ]
    # the last alone is taken
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:2], lines[-2], "}"]))
    assert [d.name for d in parse_files([path]).declarations()] == ["E"]


def test_unreadable_input_is_refused_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = tmp_path / "binary.fidl"
    binary.write_bytes(b"package p\n\xff\xfe")
    assert _problems(binary) == [f"{binary}:2:1: not UTF-8 text"]
    monkeypatch.setattr(pyjoynr.franca.parser, "MAX_FILE_BYTES", 8)
    assert _problems(RADIO) == [
        f"{RADIO}:1:1: file is too large ({RADIO.stat().st_size} bytes, at most 8)"
    ]


def test_problem_form() -> None:
    problem = Problem(Position("a.fidl", 3, 7), "unknown type 'X'")
    assert str(problem) == "a.fidl:3:7: unknown type 'X'"
    error = FrancaError([problem, Problem(Position("b.fidl", 1, 1), "m")])
    assert str(error) == "a.fidl:3:7: unknown type 'X'\nb.fidl:1:1: m"
    assert isinstance(error, Exception) and len(error.problems) == 2

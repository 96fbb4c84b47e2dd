"""The Franca generator (franca/generate.py) and its command line (python -m pyjoynr.franca).

A small model built by hand is generated and compared with the checked-in golden files under
tests/franca/golden/ (any change of the output shows as a diff there; regenerate them with
``FRANCA_UPDATE_GOLDEN=1``). Then: the output is deterministic and formatted as ruff formats it;
the naming rules; what is refused, with where and why; the package written all or nothing;
the command line's exit codes and messages.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from pyjoynr.franca.__main__ import fidl_files
from pyjoynr.franca.generate import (
    GENERATED_MARK,
    PROVIDER_NAMES,
    PROXY_NAMES,
    GenerationError,
    generate,
    joynr_datatype,
    snake_case,
    write_package,
)
from pyjoynr.franca.model import (
    Arg,
    ArrayOf,
    ArrayType,
    Attribute,
    Broadcast,
    Enumerator,
    EnumType,
    Field,
    Interface,
    MapType,
    Method,
    Model,
    Named,
    Position,
    Primitive,
    StructType,
    TypeCollection,
    TypeDecl,
    TypedefType,
    TypeRef,
    UnionType,
)
from pyjoynr.franca.parser import parse_files
from pyjoynr.programming.providers import Provider
from pyjoynr.programming.proxies import Proxy

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "franca" / "golden"
FIDL = ROOT / "tests" / "franca" / "generated"
PYTHON = ROOT / ".venv" / "bin" / "python"
RUFF = ROOT / ".venv" / "bin" / "ruff"


# ====================================================================== a model by hand


def at(line: int, column: int = 1) -> Position:
    return Position("radio.fidl", line, column)


def p(name: str) -> Primitive:
    return Primitive(name)


def arg(name: str, tp: TypeRef, line: int = 1) -> Arg:
    return Arg(name, tp, "", at(line))


def enum(name: str, *names: str, owner: str | None = None, base: EnumType | None = None,
         line: int = 1, comment: str = "") -> EnumType:
    wire = f"joynr.vehicle.{owner}.{name}" if owner else f"joynr.vehicle.{name}"
    return EnumType(name, "vehicle", owner, wire,
                    tuple(Enumerator(n, None, "", at(line)) for n in names), base, comment,
                    at(line))


def struct(name: str, *fields: tuple[str, TypeRef], owner: str | None = None,
           base: StructType | None = None, polymorphic: bool = False, line: int = 1,
           comment: str = "") -> StructType:
    return StructType(name, "vehicle", owner, f"joynr.vehicle.{name}",
                      tuple(Field(n, t, "", at(line)) for n, t in fields), base, polymorphic,
                      comment, at(line))


def method(name: str, ins: tuple[Arg, ...] = (), outs: tuple[Arg, ...] = (), *,
           errors: EnumType | None = None, fire_and_forget: bool = False, line: int = 1,
           comment: str = "") -> Method:
    return Method(name, ins, outs, fire_and_forget, errors, comment, at(line))


def iface(name: str = "Radio", *, attributes: tuple[Attribute, ...] = (),
          methods: tuple[Method, ...] = (), broadcasts: tuple[Broadcast, ...] = (),
          types: tuple[TypeDecl, ...] = (), base: Interface | None = None,
          version: tuple[int, int] | None = (1, 2), comment: str = "") -> Interface:
    return Interface(name, "vehicle", f"vehicle/{name}", version, attributes, methods,
                     broadcasts, types, base, comment, at(1))


def model(*types: TypeDecl, interfaces: tuple[Interface, ...] = ()) -> Model:
    return Model((TypeCollection(None, "vehicle", None, types, "The radio's types.", at(1)),),
                 interfaces, ("models/radio.fidl",))


COUNTRY = enum("Country", "AUSTRIA", "germany", line=3, comment="@description: A country.")
STATION = struct("RadioStation", ("name", p("String")), ("trafficService", p("Boolean")),
                 ("country", Named(COUNTRY)), ("class", p("Int8")), ("rds_text", p("String")),
                 line=5, comment="@description: A radio station.\n@see: the radio")
GEO = struct("GeoPosition", ("latitude", p("Double")), ("longitude", p("Double")), line=9,
             polymorphic=True)
SPOT = struct("Spot", ("label", p("String")), base=GEO, line=10)
STATIONS = MapType("StationMap", "vehicle", None, "joynr.vehicle.StationMap", p("String"),
                   Named(STATION), "", at(12))
FREQUENCY = TypedefType("Frequency", "vehicle", None, "joynr.vehicle.Frequency", p("Float"),
                        "", at(13))
ADD_ERRORS = enum("AddFavoriteErrorEnum", "DUPLICATE", owner="Radio", line=20)
RADIO = iface(
    attributes=(
        Attribute("currentStation", Named(STATION), True, False, "The station.", at(15)),
        Attribute("volume", p("Int32"), False, True, "", at(16)),
    ),
    methods=(
        method("addFavorite", (arg("newFavoriteStation", Named(STATION)),),
               (arg("success", p("Boolean")),), errors=ADD_ERRORS, line=18,
               comment="@description: Adds a favorite."),
        method("addFavorite", (arg("name", p("String")), arg("channel", p("Int16"))),
               (arg("success", p("Boolean")),), line=22),
        method("getLocation", (), (arg("country", Named(COUNTRY)), arg("location", Named(GEO))),
               line=24),
        method("shuffle", (arg("seed", p("Int8")), arg("raw", p("ByteBuffer")),
                           arg("ids", ArrayOf(p("UInt64")))), fire_and_forget=True, line=26),
        method("close", (), (arg("closed", p("Boolean")),), line=27),
    ),
    broadcasts=(
        Broadcast("weakSignal", (arg("station", Named(STATION)),), False, "", at(30)),
        Broadcast("newStation", (arg("station", Named(STATION)),
                                 arg("frequency", Named(FREQUENCY))), True,
                  "@description: Found.\n@param: country (String) only these", at(32)),
    ),
)
GOLDEN_MODEL = model(COUNTRY, STATION, SPOT, GEO, STATIONS, FREQUENCY, interfaces=(RADIO,))


def golden_files() -> dict[str, str]:
    return generate(GOLDEN_MODEL, "radio_pkg")


# ====================================================================== golden, deterministic


def test_the_output_is_the_golden_one() -> None:
    files = golden_files()
    assert sorted(files) == ["radio_pkg/__init__.py", "radio_pkg/py.typed",
                             "radio_pkg/vehicle.py"]
    for path, text in files.items():
        golden = GOLDEN / (path.replace("/", "__") + ".golden")
        if os.environ.get("FRANCA_UPDATE_GOLDEN") == "1":
            golden.write_text(text, encoding="utf-8")
        assert golden.read_text(encoding="utf-8") == text, f"{path} differs from {golden}"


def test_the_output_is_deterministic() -> None:
    first = golden_files()
    rebuilt = dataclasses.replace(GOLDEN_MODEL)  # an equal model, made again
    assert generate(rebuilt, "radio_pkg") == first
    again = {k: v.encode() for k, v in golden_files().items()}
    assert again == {k: v.encode() for k, v in first.items()}
    for path, text in first.items():
        if path.endswith(".py"):
            assert text.startswith(f"{GENERATED_MARK} from radio.fidl -- do not edit.\n")


def test_the_output_is_formatted(tmp_path) -> None:
    write_package(golden_files(), tmp_path)
    result = subprocess.run([RUFF, "format", "--check", "--diff", "--line-length", "100",
                             "--no-cache", str(tmp_path / "radio_pkg")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_long_names_are_laid_out_as_ruff_formats_them(tmp_path) -> None:
    long = "AVeryLongNameOfATypeThatGoesOnAndOnAndOnBeyondWhatFitsOnOneLineOfCode"
    member = "VALUE_WITH_A_NAME_SO_LONG_THAT_ITS_ASSIGNMENT_DOES_NOT_FIT_ON_ONE_LINE_OF_CODE"
    big_enum = enum(long + "Enum", member, comment='"Quoted" first, as some models have it.')
    big_struct = struct(long + "Struct", ("value", Named(big_enum)), line=2)
    typedefs = [
        TypedefType(name=long + name, package="vehicle", owner=None,
                    wire_name=f"joynr.vehicle.{long}{name}", actual=actual, comment="",
                    position=at(3))
        for name, actual in (("List", ArrayOf(Named(big_struct))),
                             ("Plain", Named(big_struct)))]
    big_map = MapType(name=long + "Map", package="vehicle", owner=None,
                      wire_name=f"joynr.vehicle.{long}Map", key=p("String"),
                      value=Named(big_struct), comment="", position=at(4))
    # (before the types it needs in the model: the module makes them first)
    enum_map = MapType(name="ByEnum", package="vehicle", owner=None,
                       wire_name="joynr.vehicle.ByEnum", key=Named(big_enum),
                       value=ArrayOf(Named(big_map)), comment="", position=at(4))
    radio = iface(long, attributes=(
        Attribute("aLongAttributeName", Named(big_enum), False, False, "", at(5)),))
    files = generate(model(enum_map, big_enum, big_struct, *typedefs, big_map,
                           interfaces=(radio,)), "long_pkg")
    for path, text in files.items():
        if path.endswith(".py"):
            compile(text, path, "exec")
    write_package(files, tmp_path)
    result = subprocess.run([RUFF, "format", "--check", "--diff", "--line-length", "100",
                             "--no-cache", str(tmp_path / "long_pkg")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    text = files["long_pkg/vehicle.py"]
    assert f"{long}List: TypeAlias = list[\n" in text
    assert f"{long}Plain: TypeAlias = (\n" in text
    assert (f"class {long}Map(\n    dict[str, {long}Struct],\n):\n" in text)
    assert (f"class ByEnum(\n    dict[\n        {long}Enum,\n        list[{long}Map],\n    ],\n):\n"
            in text)
    assert text.index(f"class {long}Map(") < text.index("class ByEnum(")
    assert "        | None = None,\n" in text
    assert '    """ "Quoted" first' in text


def test_long_bounded_members_and_titles_are_laid_out_as_ruff_formats_them(tmp_path) -> None:
    """A bounded member (``Annotated[...]``) too long for ``= field(`` to end its first line
    is broken inside the annotation's brackets (on one line, or one item a line), as ruff
    format breaks it; a type collection's comment whose first line does not fit beside its
    title in the module's docstring goes under it."""
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "bounds.fidl").write_text(
        "package bounds\n"
        "<** @description: " + "A first line of a comment long enough to pass the line "
        "length beside the title. **>\n"
        "typeCollection Limits {\n"
        "\tenumeration Level { HIGH LOW }\n"
        "\tstruct Entry {\n"
        "\t\t<** @details: maxLength 16 **> Level[] possibleRequiredControlEntryLevels\n"
        "\t\t<** @details: maxLength 16 **> Level[] "
        "possibleRequiredControlEntryChangeLevelsOfTheEntryAndOfEveryOther\n"
        "\t\t<** @details: maxLength 1024 **> String "
        "aStringMemberWithANameLongEnoughToBreakItsBoundedAnnotation\n"
        "\t\t<** @details: maxLength 16 **> Level[] short\n"
        "\t}\n"
        "}\n")
    files = generate(parse_files([folder / "bounds.fidl"]), "bounds_pkg")
    text = files["bounds_pkg/bounds.py"]
    assert ("    possible_required_control_entry_levels: Annotated[\n"
            '        list[Level], MaxLength(16, "possibleRequiredControlEntryLevels")\n'
            "    ] = field(default_factory=list)\n") in text
    assert ("        list[Level],\n"
            '        MaxLength(16, "possibleRequiredControlEntryChangeLevels'
            'OfTheEntryAndOfEveryOther"),'
            "\n    ] = field(default_factory=list)\n") in text
    assert '    ] = ""\n' in text
    assert "Type collection Limits:\nA first line of a comment long enough" in text
    write_package(files, tmp_path / "out")
    for command in (["format", "--check", "--diff"], ["check", "--isolated", "--select", "E"]):
        result = subprocess.run([RUFF, *command, "--line-length", "100", "--no-cache",
                                 str(tmp_path / "out" / "bounds_pkg")],
                                capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr


# ====================================================================== names, datatypes


def test_snake_case_and_joynr_datatypes() -> None:
    assert snake_case("addFavoriteStation") == "add_favorite_station"
    assert snake_case("getURLValue") == "get_url_value"
    assert snake_case("x2Value") == "x2_value"
    assert [joynr_datatype(p(n)) for n in (
        "Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32", "Int64", "UInt64", "Float",
        "Double", "String", "Boolean", "ByteBuffer")] == [
        "Byte", "Byte", "Short", "Short", "Integer", "Integer", "Long", "Long", "Float",
        "Double", "String", "Boolean", "Byte[]"]
    assert joynr_datatype(ArrayOf(ArrayOf(p("Int16")))) == "Short[][]"
    assert joynr_datatype(Named(FREQUENCY)) == "Float"  # a typedef: its actual type
    assert joynr_datatype(ArrayOf(Named(STATION))) == "joynr.vehicle.RadioStation[]"
    assert joynr_datatype(Named(STATIONS)) == "joynr.vehicle.StationMap"


def test_the_reserved_member_names_are_those_of_proxy_and_provider() -> None:
    proxy_public = {n for n in dir(Proxy) if not n.startswith("_")}
    proxy_public |= {"participant_id", "provider_participant_id", "ttl_ms", "body_format",
                     "provider_is_local", "custom_headers"}  # (set in __init__)
    assert proxy_public <= PROXY_NAMES
    assert {n for n in dir(Provider) if not n.startswith("_")} | {"interface"} <= PROVIDER_NAMES


def test_names_of_types_members_and_overloads() -> None:
    text = golden_files()["radio_pkg/vehicle.py"]
    # fields: snake_case when lower_camel gives the Franca name back, else the Franca name;
    # a keyword gets "_" (lower_camel drops it again); others named in members=
    assert ('@joynr_name("joynr.vehicle.RadioStation", members={"rds_text": "rds_text"})'
            in text)
    assert "    traffic_service: bool = False\n" in text and "    class_: Int8 = 0\n" in text
    # enumerators as joynr names them (upper-cased)
    assert '    GERMANY = "GERMANY"\n' in text
    # overloads: the first keeps the name, the next is <name>_2 with the first's wire name
    assert '    @wire_name("add_favorite")\n' in text
    assert "    async def add_favorite_2(self, name: str, channel: Int16) -> bool: ...\n" in text
    # a member named as one of Proxy's: "_" appended
    assert "    async def close_(self) -> bool: ...\n" in text
    # several out arguments
    assert '    @outputs("country", "location")\n' in text
    assert "-> tuple[Country, GeoPosition]: ..." in text


def test_maps_are_named_classes_keyed_by_strings_integers_booleans_or_enumerations() -> None:
    keys = ["String", "Boolean", "Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32", "Int64",
            "UInt64"]
    maps = [MapType(f"By{key}", "vehicle", None, f"joynr.vehicle.By{key}", p(key),
                    p("String"), "", at(60)) for key in keys]
    mode = TypedefType("Mode", "vehicle", None, "joynr.vehicle.Mode", Named(COUNTRY), "",
                       at(61))
    stations = TypedefType("Stations", "vehicle", None, "joynr.vehicle.Stations",
                           ArrayOf(Named(STATION)), "", at(62))
    # an enumeration (through a typedef) to a typedef of an array: both written as what they
    # are (the class is made before the typedefs are)
    by_mode = MapType("ByMode", "vehicle", None, "joynr.vehicle.ByMode", Named(mode),
                      Named(stations), "@description: Stations by mode.", at(63))
    alias = TypedefType("ModeMap", "vehicle", None, "joynr.vehicle.ModeMap", Named(by_mode),
                        "", at(64))
    # overloads that differ in their maps only: told apart (by the maps' names)
    radio = iface(methods=(
        method("tune", (arg("presets", Named(maps[6])),), line=65),
        method("tune", (arg("presets", Named(maps[7])),), line=66),
        method("tune", (arg("presets", Named(alias)),), line=67),
    ))
    text = generate(model(by_mode, alias, mode, stations, *maps, COUNTRY, STATION,
                          interfaces=(radio,)), "pkg")["pkg/vehicle.py"]
    python = {"String": "str", "Boolean": "bool"}
    for key in keys:
        assert (f'@joynr_name("joynr.vehicle.By{key}")\nclass By{key}(dict[{python.get(key, "int")}'
                f', str]):\n    """The Franca map By{key}: {key} to String."""\n') in text
    assert ('@joynr_name("joynr.vehicle.ByMode")\nclass ByMode(dict[Country, list[RadioStation]]):'
            '\n    """Stations by mode."""\n') in text
    assert "ModeMap: TypeAlias = ByMode\n" in text and "TypeAlias = dict" not in text
    assert text.index("class Country(") < text.index("class ByMode(")
    assert text.index("class RadioStation:") < text.index("class ByMode(")
    assert text.index("class ByMode(") < text.index("ModeMap: TypeAlias")
    assert '    @joynr_datatypes("joynr.vehicle.ByInt32")\n    async def tune(' in text
    assert '    @joynr_datatypes("joynr.vehicle.ByUInt32")\n    async def tune_2(' in text
    assert '    @joynr_datatypes("joynr.vehicle.ByMode")\n    async def tune_3(' in text


def test_type_names_that_clash_are_qualified_or_suffixed() -> None:
    a = struct("Item", ("x", p("Int32")), owner="Left", line=3)
    b = struct("Item", ("y", p("Int32")), owner="Right", line=4)
    provider = struct("Provider", ("z", p("Int32")), line=5)
    m = Model((TypeCollection("Left", "vehicle", None, (a,), "", at(1)),
               TypeCollection("Right", "vehicle", None, (b, provider), "", at(2))), (),
              ("radio.fidl",))
    text = generate(m, "pkg")["pkg/vehicle.py"]
    assert "class Left_Item:" in text and "class Right_Item:" in text
    assert "class Provider_:" in text  # (Provider is a name the modules import)


# ====================================================================== refused


def refused(m: Model) -> list[str]:
    with pytest.raises(GenerationError) as info:
        generate(m, "pkg")
    return str(info.value).splitlines()


def test_what_joynr_or_this_runtime_cannot_have_is_refused_with_where_and_why() -> None:
    union = UnionType(name="Either", package="vehicle", owner=None,
                      wire_name="joynr.vehicle.Either",
                      fields=(Field("a", p("Int32"), "", at(40)),), base=None, comment="",
                      position=at(40))
    named_array = ArrayType("Stations", "vehicle", None, "joynr.vehicle.Stations", p("String"),
                            "", at(41))
    def keyed(name: str, key: TypeRef, line: int) -> MapType:
        return MapType(name, "vehicle", None, f"joynr.vehicle.{name}", key, p("String"), "",
                       at(line))
    bad_keys = [keyed("ByFloat", p("Float"), 42), keyed("ByDouble", p("Double"), 43),
                keyed("ByBytes", p("ByteBuffer"), 44), keyed("ByStation", Named(STATION), 45),
                keyed("ByNames", ArrayOf(p("String")), 46),
                keyed("ByFrequency", Named(FREQUENCY), 47)]  # (a typedef of Float)
    tree = keyed("Tree", p("String"), 48)
    tree = dataclasses.replace(tree, value=ArrayOf(Named(tree)))
    base = iface("Base", version=None)
    radio = iface(
        attributes=(Attribute("_station", p("String"), False, False, "", at(50, 5)),),
        methods=(
            method("seek", (arg("n", p("Int32")),), line=51),
            method("seek", (arg("n", p("Int64")),), line=52),
            method("getVolume", line=53),
        ),
        broadcasts=(Broadcast("_bad_name", (), False, "", at(54, 3)),),
        base=base)
    volume = Attribute("volume", p("Int32"), False, False, "", at(49))
    radio = dataclasses.replace(radio, attributes=(*radio.attributes, volume))
    lines = refused(model(union, named_array, *bad_keys, tree, interfaces=(radio, base)))
    assert lines == [
        "radio.fidl:41:1: array Stations: explicitly named arrays are not supported (joynr's "
        "generators refuse them); use an implicit array T[]",
        *[f"radio.fidl:{line}:1: map {name}: keys of type {key} are not supported (joynr's "
          "JSON carries map keys as strings: String, the integer types, Boolean or an "
          "enumeration)" for line, name, key in [
              (42, "ByFloat", "Float"), (43, "ByDouble", "Double"),
              (44, "ByBytes", "ByteBuffer"), (45, "ByStation", "RadioStation"),
              (46, "ByNames", "String[]"), (47, "ByFrequency", "Float")]],
        "radio.fidl:48:1: map Tree: contains itself (through its key or value types): not "
        "supported",
        "radio.fidl:50:5: attribute _station: a name that starts with '_' cannot be declared "
        "(Python keeps such names private)",
        "radio.fidl:53:1: method getVolume: clashes with the getter of attribute volume",
        "radio.fidl:54:3: broadcast _bad_name: a name that starts with '_' cannot be declared "
        "(Python keeps such names private)",
    ]


def test_more_refusals() -> None:
    twice = enum("Mode", "on", "ON", line=7)
    f_and_f = method("ping", (), (arg("pong", p("Boolean")),), fire_and_forget=True, line=8)
    other = Model((TypeCollection(None, "a.b", None, (), "", at(1)),
                   TypeCollection(None, "a_b", None, (), "", at(2))), (), ("radio.fidl",))
    assert refused(model(twice, interfaces=(iface(methods=(f_and_f,)),))) == [
        "radio.fidl:7:1: enumeration Mode: ON and on are both ON to joynr (upper-cased)",
        "radio.fidl:8:1: method ping: fireAndForget with out arguments or errors",
    ]
    assert refused(other) == [
        "radio.fidl:2:1: packages a.b and a_b would both be the module a_b"]
    with pytest.raises(GenerationError, match="package name 'class' is not a Python name"):
        generate(model(), "class")


def test_packages_whose_types_refer_to_each_other_are_refused() -> None:
    left = StructType("L", "left", None, "joynr.left.L", (), None, False, "", at(3))
    right = StructType("R", "right", None, "joynr.right.R",
                       (Field("l", Named(left), "", at(4)),), None, False, "", at(4))
    left = dataclasses.replace(left, fields=(Field("r", Named(right), "", at(3)),))
    m = Model((TypeCollection(None, "left", None, (left,), "", at(1)),
               TypeCollection(None, "right", None, (right,), "", at(2))), (), ("radio.fidl",))
    assert refused(m) == [
        "radio.fidl:1:1: the types of packages left -> right -> left refer to each other in a "
        "cycle: not supported (one module per package)"]


# ====================================================================== writing


def test_a_package_is_written_all_or_nothing(tmp_path) -> None:
    files = golden_files()
    target = write_package(files, tmp_path)
    assert target == tmp_path / "radio_pkg"
    assert (target / "vehicle.py").read_text() == files["radio_pkg/vehicle.py"]
    # a generated package is replaced by the new one (a file gone from it goes too)
    (target / "stale.py").write_text("x = 1\n")
    write_package(files, tmp_path)
    assert sorted(p.name for p in target.iterdir()) == ["__init__.py", "py.typed", "vehicle.py"]
    # an error while writing: nothing changes, nothing is left behind
    broken = {**files, "radio_pkg/vehicle.py/inner.py": "x = 1\n"}  # a file and a folder
    (target / "vehicle.py").write_text("# the old one\n")
    with pytest.raises(OSError):
        write_package(broken, tmp_path)
    assert (target / "vehicle.py").read_text() == "# the old one\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["radio_pkg"]


def test_a_folder_that_was_not_generated_is_not_replaced(tmp_path) -> None:
    mine = tmp_path / "radio_pkg"
    mine.mkdir()
    (mine / "__init__.py").write_text("# my own code\n")
    with pytest.raises(FileExistsError, match=r"was not generated by python -m pyjoynr\.franca"):
        write_package(golden_files(), tmp_path)
    assert (mine / "__init__.py").read_text() == "# my own code\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["radio_pkg"]
    with pytest.raises(ValueError, match="not a path inside the package"):
        write_package({"radio_pkg/../evil.py": ""}, tmp_path)


# ====================================================================== command line


def franca(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "pyjoynr.franca", *args], capture_output=True, text=True,
                          cwd=cwd, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_command_line(tmp_path) -> None:
    helped = franca("--help", cwd=tmp_path)
    assert helped.returncode == 0
    assert "usage: python -m pyjoynr.franca" in helped.stdout and "--package NAME" in helped.stdout
    assert "-o DIR, --output DIR" in helped.stdout

    done = franca("-o", str(tmp_path / "out"), "--package", "tuner_pkg", str(FIDL),
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    wrote = tmp_path / "out" / "tuner_pkg"
    assert done.stdout.startswith(f"python -m pyjoynr.franca: wrote {wrote} (")
    assert done.stdout.endswith(" from 2 files\n")
    written = {p.name for p in (tmp_path / "out" / "tuner_pkg").iterdir()}
    assert written == {"__init__.py", "py.typed", "showcase_common.py", "showcase_tuner.py"}
    # the same files named in another order and by name: the same package, byte for byte
    again = franca("-o", str(tmp_path / "again"), "--package", "tuner_pkg",
                   str(FIDL / "showcase.fidl"), str(FIDL / "common.fidl"), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    for name in written:
        assert ((tmp_path / "again" / "tuner_pkg" / name).read_bytes()
                == (tmp_path / "out" / "tuner_pkg" / name).read_bytes())


def test_the_command_line_reports_problems_with_exit_2(tmp_path) -> None:
    bad = tmp_path / "models" / "bad.fidl"
    bad.parent.mkdir()
    bad.write_text("package p\ninterface I {\n  method _mx {}\n  array U of Int32\n}\n")
    failed = franca("-o", str(tmp_path / "out"), str(tmp_path / "models"), cwd=tmp_path)
    assert failed.returncode == 2
    assert failed.stdout == ""
    assert failed.stderr.splitlines() == [
        f"{bad}:3:10: method _mx: a name that starts with '_' cannot be declared (Python keeps "
        "such names private)",
        f"{bad}:4:9: array U: explicitly named arrays are not supported (joynr's generators "
        "refuse them); use an implicit array T[]",
    ]
    assert not (tmp_path / "out").exists()
    broken = tmp_path / "broken.fidl"
    broken.write_text("package p\ninterface {\n")
    syntax = franca(str(broken), cwd=tmp_path)
    assert syntax.returncode == 2
    assert syntax.stderr.startswith(f"{broken}:2:")
    missing = franca(str(tmp_path / "nothing"), cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (2, f"{tmp_path / 'nothing'}: no such file "
                                                       "or folder\n")
    assert franca("--package", "not-a-name", str(FIDL), cwd=tmp_path).returncode == 2


def test_the_files_are_read_in_sorted_order(tmp_path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("b.fidl", "a.fidl", "sub/c.fidl", "notes.txt"):
        (tmp_path / name).write_text("package p\n")
    named = [str(tmp_path / "sub"), str(tmp_path / "b.fidl"), str(tmp_path)]
    assert fidl_files(named) == (
        [str(tmp_path / n) for n in ("a.fidl", "b.fidl", "sub/c.fidl")], [])
    assert fidl_files([str(tmp_path / "nothing")]) == (
        [], [f"{tmp_path / 'nothing'}: no such file or folder"])


def test_the_command_line_resolves_classpath_imports_in_the_folders_given(tmp_path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "types").mkdir(parents=True)
    (second / "types").mkdir(parents=True)
    (tmp_path / "models").mkdir()
    app = tmp_path / "models" / "app.fidl"
    app.write_text('package app\nimport shared.* from "classpath:/types/shared.fidl"\n'
                   "interface Player {\n  attribute Track current readonly\n}\n")
    (second / "types" / "shared.fidl").write_text(
        "package shared\ntypeCollection {\n  struct Track { String title }\n}\n")
    # not on the classpath: refused with where and why, nothing written
    alone = franca("-o", str(tmp_path / "out"), "--package", "player", str(app), cwd=tmp_path)
    assert alone.returncode == 2
    assert alone.stderr.startswith(f"{app}:2:")
    assert "imported file not found on the classpath: 'classpath:/types/shared.fidl'" in (
        alone.stderr)
    assert not (tmp_path / "out").exists()
    # found in the second folder given
    done = franca("-o", str(tmp_path / "out"), "--package", "player", "--classpath", str(first),
                  "--classpath", str(second), str(app), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(" from 2 files\n")
    written = (tmp_path / "out" / "player" / "shared.py").read_text()
    assert '@joynr_name("joynr.shared.Track")' in written and "    title: str = \"\"\n" in written
    # the folders are searched in the order given: the first that has the file wins
    (first / "types" / "shared.fidl").write_text(
        "package shared\ntypeCollection {\n  struct Track { Int32 number }\n}\n")
    again = franca("-o", str(tmp_path / "out"), "--package", "player", "--classpath", str(first),
                   "--classpath", str(second), str(app), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "    number: Int32 = 0\n" in (tmp_path / "out" / "player" / "shared.py").read_text()
    # a classpath that is no folder is refused before anything is read
    missing = franca("--classpath", str(tmp_path / "nowhere"), str(app), cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (
        2, f"{tmp_path / 'nowhere'}: --classpath names no folder\n")

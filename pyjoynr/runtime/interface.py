"""Declaring a joynr interface in Python, and converting typed values to and from the wire.

    @interface("vehicle/Radio", version=(1, 2))
    class Radio:
        current_station = attribute(str)                    # get, set, on-change subscriptions
        volume = attribute(int, readonly=True)
        new_station = broadcast(station=str, country=Country)  # a multicast
        weak_signal = broadcast(selective=True, filter_parameters=("genre",),
                                station=str)                     # filtered per subscriber

        async def add_favorite(self, station: str) -> bool: ...

        @errors(FavoriteError)                               # modelled errors (an Enum)
        async def remove_favorite(self, station: str) -> None: ...

        @one_way
        async def ping(self, n: int) -> None: ...

        @wire_name("lookup")                                 # an overload: same joynr method
        async def lookup_in_backends(self, domain: str, gbids: list[str]) -> list[str]: ...

        @outputs("country", "position")                     # several out arguments
        async def locate(self) -> tuple[Country, GeoPosition]: ...

Supported value types: ``int``, ``float``, ``bool``, ``str``, ``bytes``, ``None``, ``list[T]``,
``dict[str, T]``, ``T | None``, Enum classes (sent by member name), dataclasses (sent as maps
of their fields) and named maps (below). Values from the wire are checked against the declared
type; :class:`ValueTypeError` says which part did not fit.

Numbers are checked against joynr's ranges where they are made from the wire (``from_wire``,
the one place every interface's typed values come from): an ``int`` is joynr's Long (64-bit
signed), a ``float`` its Double (finite); the narrower Franca widths are declared with the
aliases :data:`Int8` ... :data:`UInt64` and :data:`Float` (``Annotated[int, IntRange(...)]``,
an ``int`` to mypy), as the Franca generator declares them. NaN and the infinities are refused
(joynr's JSON has no form for them), and so is an unknown enum literal. The table is in
docs/wire.md (value ranges).

Sizes are checked there too where a declaration bounds them: ``Annotated[str,
MaxLength(1024, "Identifier")]`` takes a string of at most 1,024 characters, ``Annotated[list[T],
MaxLength(100, "gbids")]`` a list of at most 100 items (bytes: bytes, a map: entries), as the
Franca generator declares the typedefs, arguments, fields and attributes that carry a
``maxLength`` (the system types' identifiers and addresses, the GBIDs of a discovery call). A
string or list without such a mark is bounded only by the
frame it came in.

A named map is a ``dict`` subclass under ``@joynr_name`` (as joynr generates a Franca ``map``:
a type of its own, named on the wire)::

    @joynr_name("vehicle.StationsByNumber")
    class StationsByNumber(dict[int, RadioStation]): ...

Its keys are ``str``, ``int``, ``bool`` or an Enum; on the wire they are strings, in both
codecs (joynr's JSON carries keys as strings, this project's msgpack bodies take string keys
only): an int as its decimal text, a bool as ``true``/``false``, an enum member by its name.
Its wire form is a plain map of those keys; reading it builds the class, keys and values
typed. Its datatype name (``paramDatatypes``) is its joynr name. In joynr's JSON it is an
object with the ``_typeName`` member beside the entries (``runtime/joynr_json.py``).

joynr names (for joynr's JSON payloads, ``runtime/joynr_json.py``): a struct or enum states its
joynr type name with ``@joynr_name("vehicle.RadioStation")`` (default: the Python class name)
and, where they are not the lowerCamelCase of the field names, its members' joynr names
(``members={"cache_max_age_ms": "cacheMaxAge"}``), and the members joynr carries as a string
holding their serialized JSON (``serialized=("address",)``: a map here and in msgpack, a
string in joynr's JSON). A method whose joynr parameter types are not the ones derived from
its annotations (``int`` is ``Long``, ``float`` ``Double``, ``bytes`` ``Byte[]``) states them
with ``@joynr_datatypes("Integer", "String")``; a parameter that is one of several joynr
structs (a map here, told by its ``_typeName``) names them all as a tuple:
``@joynr_datatypes("String", ("joynr.system.RoutingTypes.MqttAddress", ...), "Boolean")``.
The widths it declares (``Byte``, ``Short``, ``Integer``, ``Float``) name the parameters in
this project's own requests too (:func:`native_datatype`) where overloads differ only in
width, so that they are told apart; every other method keeps the widened names (``Long``,
``Double``) that earlier versions of this project sent and expect. A method, attribute or
broadcast is named on joynr's wire by the lowerCamelCase of its Python name, or by the name
given with ``joynr_name=`` (``attribute(int, joynr_name="my_attr")``,
``broadcast(joynr_name="my_event", ...)``, ``@wire_name("do_it", joynr_name="do_it")``).

A method with several out arguments names them with ``@outputs("a", "b")`` and returns the
tuple of their values (annotated ``tuple[A, B]``): the reply's ``response`` holds them in order,
each typed by its own declared type. A method with one out argument returns its value, one
without returns None.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Sized
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, cast

__all__ = [
    "EXACT_TYPES",
    "PLAIN_TYPES",
    "AttributeDef",
    "BroadcastDef",
    "Double",
    "Float",
    "FloatRange",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "IntRange",
    "InterfaceDef",
    "MaxLength",
    "MethodDef",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "ValueTypeError",
    "attribute",
    "broadcast",
    "datatype_name",
    "errors",
    "from_wire",
    "interface",
    "joynr_datatypes",
    "joynr_map_types",
    "joynr_member_names",
    "joynr_name",
    "joynr_serialized_members",
    "joynr_type_name",
    "lower_camel",
    "map_key_from_text",
    "map_key_text",
    "max_length",
    "member_joynr_name",
    "native_datatype",
    "one_way",
    "outputs",
    "to_wire",
    "widened_datatype",
    "wire_name",
]

C = TypeVar("C", bound=type)


class ValueTypeError(TypeError):
    """A value does not have the declared type; the message names where."""


# ---------------------------------------------------------------------- values


#: the value types sent as they are (a value of exactly one of them needs no conversion)
PLAIN_TYPES = frozenset({int, bool, str, bytes, float})
#: the value types taken from the wire as they are: a value of exactly one of them needs no
#: check (an int and a float are checked against their ranges, :func:`from_wire`)
EXACT_TYPES = frozenset({bool, str, bytes})


@dataclass(frozen=True)
class IntRange:
    """The range of one of joynr's integer types: the mark of :data:`Int8` ... :data:`UInt64`
    (``name`` the Franca type, ``joynr`` the type joynr's wire and Java name it by)."""

    name: str
    joynr: str
    low: int
    high: int


@dataclass(frozen=True)
class FloatRange:
    """The range of one of joynr's floating point types: finite, at most ``limit`` in
    magnitude (the mark of :data:`Float`; :data:`Double` is a ``float``)."""

    name: str
    limit: float


#: joynr's integer types (Franca's name; joynr's, as in paramDatatypes) and their ranges. The
#: unsigned ones take Franca's range, but UInt64 stops at 2**63 - 1 (joynr's JSON and Java's
#: Long carry no more); joynr's Java runtime reads UInt8/16/32 into signed types of their width
_INT8 = IntRange("Int8", "Byte", -(2 ** 7), 2 ** 7 - 1)
_INT16 = IntRange("Int16", "Short", -(2 ** 15), 2 ** 15 - 1)
_INT32 = IntRange("Int32", "Integer", -(2 ** 31), 2 ** 31 - 1)
_INT64 = IntRange("Int64", "Long", -(2 ** 63), 2 ** 63 - 1)
Int8 = Annotated[int, _INT8]
Int16 = Annotated[int, _INT16]
Int32 = Annotated[int, _INT32]
#: the same as a plain ``int``
Int64 = Annotated[int, _INT64]
UInt8 = Annotated[int, IntRange("UInt8", "Byte", 0, 2 ** 8 - 1)]
UInt16 = Annotated[int, IntRange("UInt16", "Short", 0, 2 ** 16 - 1)]
UInt32 = Annotated[int, IntRange("UInt32", "Integer", 0, 2 ** 32 - 1)]
UInt64 = Annotated[int, IntRange("UInt64", "Long", 0, 2 ** 63 - 1)]
_FLOAT = FloatRange("Float", 3.4028234663852886e38)  # the largest finite single
_DOUBLE = FloatRange("Double", 1.7976931348623157e308)  # the largest finite double
#: joynr's Float: single precision, finite
Float = Annotated[float, _FLOAT]
#: joynr's Double: the same as a plain ``float`` (finite)
Double = Annotated[float, _DOUBLE]


@dataclass(frozen=True)
class MaxLength:
    """The most a value of the declared type may hold, in its own unit: a ``str`` characters,
    ``bytes`` bytes, a ``list`` items, a map entries (``name`` the declaration, for the error
    message: the Franca typedef that carries it)."""

    limit: int
    name: str = ""


def _size_mark(tp: Any) -> tuple[Any, MaxLength | None]:
    """The base type of an ``Annotated`` type with a :class:`MaxLength` mark and the mark
    (any other type: itself and None)."""
    if typing.get_origin(tp) is Annotated:
        for mark in tp.__metadata__:
            if isinstance(mark, MaxLength):
                return tp.__origin__, mark
    return tp, None


def max_length(tp: Any) -> int | None:
    """The bound of a declared type marked with :class:`MaxLength` (characters, bytes, items or
    entries), or None: what a caller that sends many values splits them by."""
    mark = _size_mark(tp)[1]
    return mark.limit if mark is not None else None


def _sized_kind(base: Any) -> type[Sized] | tuple[type[Sized], ...]:
    """The Python type whose size a :class:`MaxLength` mark on ``base`` counts (a value of
    another type is refused by its type, not its size)."""
    kind = typing.get_origin(base) or base
    for sized in (str, bytes, list, dict):
        if kind is sized:
            return sized
    if isinstance(base, type) and issubclass(base, dict):
        return dict
    return ()


def _size_error(where: str, value: Any, mark: MaxLength) -> ValueTypeError:
    """The error of a value larger than its declared bound: names where, the size, the limit
    and (a string) the start of the value."""
    of = f" of {mark.name}" if mark.name else ""
    if isinstance(value, str):
        return ValueTypeError(f"{where}: {value[:40]!r}... has {len(value)} characters, over "
                              f"the limit{of} ({mark.limit} characters)")
    unit = "bytes" if isinstance(value, (bytes, bytearray)) else (
        "entries" if isinstance(value, dict) else "items")
    return ValueTypeError(f"{where}: {len(value)} {unit}, over the limit{of} "
                          f"({mark.limit} {unit})")


def _within(value: Any, tp: Any, where: str) -> Any:
    """``value`` when it holds at most what ``tp``'s :class:`MaxLength` mark takes (or ``tp``
    has none, or the value no size: its type is checked after); raises
    :func:`_size_error`'s ValueTypeError naming ``where`` when it holds more."""
    base, mark = _size_mark(tp)
    if mark is not None and isinstance(value, _sized_kind(base)) and len(value) > mark.limit:
        raise _size_error(where, value, mark)
    return value


def _range_mark(tp: Any) -> tuple[Any, IntRange | FloatRange | None]:
    """The base type of a declared type and its range: ``int`` Int64, ``float`` Double, an
    ``Annotated`` one its mark (another ``Annotated`` its base type's)."""
    if typing.get_origin(tp) is Annotated:
        base = tp.__origin__
        for mark in tp.__metadata__:
            if isinstance(mark, (IntRange, FloatRange)):
                return base, mark
        return _range_mark(base)
    if tp is int:
        return int, _INT64
    if tp is float:
        return float, _DOUBLE
    return tp, None


def _number_text(value: Any) -> str:
    """A number for an error message, cut (a huge integer by its size)."""
    if type(value) is int and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    return repr(value)[:60]


def _range_error(where: str, value: Any, mark: IntRange | FloatRange) -> ValueTypeError:
    """The error of a number outside its type's range: names where, the value (cut) and the
    range."""
    if isinstance(mark, IntRange):
        return ValueTypeError(f"{where}: {_number_text(value)} is out of the range of "
                              f"{mark.name} ({mark.joynr}: {mark.low}..{mark.high})")
    return ValueTypeError(f"{where}: {_number_text(value)} is out of the range of {mark.name} "
                          f"(finite, at most {mark.limit!r} in magnitude)")


def _checked_number(value: Any, mark: IntRange | FloatRange, where: str) -> Any:
    """``value`` as a number of ``mark``'s type, or None when it is of another type; raises
    :func:`_range_error`'s ValueTypeError naming ``where`` when it is out of the range."""
    kind = type(value)
    if isinstance(mark, IntRange):
        if kind is not int:
            return None
        if mark.low <= value <= mark.high:
            return value
        raise _range_error(where, value, mark)
    if kind is float:
        number = value
    elif kind is int:
        try:
            number = float(value)
        except OverflowError:
            raise _range_error(where, value, mark) from None
    else:
        return None
    if -mark.limit <= number <= mark.limit:  # (False for NaN)
        return number
    raise _range_error(where, value, mark)


def datatype_name(tp: Any) -> str:
    """joynr-style datatype name of a Python type (used to match overloads; every integer
    width is ``Long``, both float widths ``Double``)."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return datatype_name(tp.__origin__)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return datatype_name(args[0]) if len(args) == 1 else "Object"
    if origin is list:
        return datatype_name(typing.get_args(tp)[0]) + "[]"
    if origin is dict:
        return "Map"
    names: dict[Any, str] = {
        int: "Long", float: "Double", bool: "Boolean", str: "String", bytes: "ByteBuffer",
        type(None): "Void", Any: "Object",
    }
    found = names.get(tp)
    if found is not None:
        return found
    declared = vars(tp).get("__joynr_name__") if isinstance(tp, type) else None
    return declared if declared is not None else str(getattr(tp, "__name__", tp))


#: the number widths a declared joynr datatype may give a parameter's native datatype name
_NARROWER = {"Byte": "Long", "Short": "Long", "Integer": "Long", "Float": "Double"}


def _array_depth(name: str) -> tuple[str, int]:
    depth = 0
    while name.endswith("[]"):
        name, depth = name[:-2], depth + 1
    return name, depth


def native_datatype(tp: Any, declared: str | tuple[str, ...] | None = None) -> str:
    """A parameter's datatype name in this project's own requests: :func:`datatype_name`
    (every integer ``Long``, both floats ``Double``), but the width where the declaration
    gives one (``@joynr_datatypes("Integer")`` on an ``int``, ``"Float[]"`` on a
    ``list[float]``), so that overloads that differ only in width are told apart, as joynr
    tells them apart."""
    derived = datatype_name(tp)
    if isinstance(declared, str):
        base, depth = _array_depth(declared)
        wide, wide_depth = _array_depth(derived)
        if depth == wide_depth and _NARROWER.get(base) == wide:
            return declared
    return derived


def widened_datatype(name: str) -> str:
    """The name an earlier runtime of this project gave a parameter whose native datatype is
    ``name``: ``Long`` for ``Byte``, ``Short``, ``Integer``; ``Double`` for ``Float`` (arrays
    alike); other names as they are."""
    base, depth = _array_depth(name)
    return _NARROWER.get(base, base) + "[]" * depth


def lower_camel(name: str) -> str:
    """``current_station`` -> ``currentStation`` (a name without ``_`` stays as it is)."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def member_joynr_name(member: MethodDef | AttributeDef | BroadcastDef) -> str:
    """The name joynr's wire gives a method, attribute or broadcast: the one declared
    (``joynr_name=``, as the Franca generator declares a name that lowerCamelCase does not
    give back, ``do_it``), else the lowerCamelCase of its name (``current_station`` ->
    ``currentStation``)."""
    return member.joynr_name if member.joynr_name is not None else lower_camel(member.name)


def joynr_name(name: str | None = None, *, members: dict[str, str] | None = None,
               serialized: tuple[str, ...] = ()) -> Callable[[C], C]:
    """Class decorator for a dataclass, an Enum or a named map (a subclass of ``dict[K,
    V]``): its joynr type name (``vehicle.RadioStation``; default: the class name), the joynr
    names of those members that are not the lowerCamelCase of their field names, and the
    fields joynr carries as a string holding their serialized JSON (``serialized``). Only the
    class itself is named, not its subclasses (they inherit the member names and serialized
    fields, and a map's key and value types)."""
    def mark(cls: C) -> C:
        if isinstance(cls, type) and issubclass(cls, dict):
            if members or serialized:
                raise TypeError(f"{cls.__name__}: a named map has no members to name")
            type.__setattr__(cls, "__joynr_map__", _map_base_args(cls))
        elif not (dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum)):
            raise TypeError(f"{cls.__name__}: joynr_name names a dataclass, an Enum or a "
                            "subclass of dict[K, V]")
        if members or serialized:
            known = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(
                cls) else set()
            unknown = sorted((set(members or {}) | set(serialized)) - known)
            if unknown:
                raise TypeError(f"{cls.__name__}: joynr_name members {unknown} are not fields")
        type.__setattr__(cls, "__joynr_name__", name or cls.__name__)
        type.__setattr__(cls, "__joynr_members__", dict(members or {}))
        type.__setattr__(cls, "__joynr_serialized__", frozenset(serialized))
        return cls
    return mark


def _map_base_args(cls: type) -> tuple[Any, Any]:
    """The key and value types of a named map class: the arguments of its ``dict[K, V]``
    base (raises TypeError when it has none, or when they cannot be a named map's)."""
    for klass in cls.__mro__:
        for base in vars(klass).get("__orig_bases__", ()):
            if typing.get_origin(base) is dict and len(typing.get_args(base)) == 2:
                key, value = typing.get_args(base)
                if not (key in (str, int, bool)
                        or (isinstance(key, type) and issubclass(key, enum.Enum))):
                    raise TypeError(f"{cls.__name__}: the keys of a named map are str, int, "
                                    f"bool or an Enum, not {key!r}")
                if isinstance(value, (str, typing.ForwardRef)):
                    raise TypeError(f"{cls.__name__}: the value type of a named map must be "
                                    f"a type, not the forward reference {value!r}")
                return key, value
    raise TypeError(f"{cls.__name__}: a named map is a subclass of dict[K, V] (with its key "
                    "and value types)")


def joynr_map_types(tp: Any) -> tuple[Any, Any] | None:
    """The key and value types of a named map class (a ``dict`` subclass under
    :func:`joynr_name`, or a subclass of one), else None."""
    if not isinstance(tp, type) or not issubclass(tp, dict):
        return None
    found = getattr(tp, "__joynr_map__", None)
    return found if isinstance(found, tuple) else None


#: an integer key's text: decimal, no sign but a minus, no leading zeros (at most 19 digits:
#: the 64-bit range is checked after)
_INT_KEY = re.compile(r"-?(?:0|[1-9][0-9]{0,18})")
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def map_key_text(key: Any) -> str:
    """A named map's key as the wire carries it: a str as it is, a bool as ``true`` or
    ``false``, an int as its decimal text, an enum member by its name (ValueTypeError for a
    key of another type)."""
    kind = type(key)
    if kind is str:
        return cast(str, key)
    if kind is bool:
        return "true" if key else "false"
    if kind is int:
        return int.__repr__(key)
    if isinstance(key, enum.Enum):
        return key.name
    raise ValueTypeError(f"a map key of type {kind.__name__} has no form on the wire")


def map_key_from_text(text: Any, key_type: Any, where: str = "key") -> Any:
    """The key of type ``key_type`` that the wire's ``text`` stands for (the inverse of
    :func:`map_key_text`; an int in the 64-bit range, written as :func:`map_key_text` writes
    it); ValueTypeError naming ``where`` for a text that stands for none."""
    if type(text) is not str:
        raise ValueTypeError(f"{where}: a map key is a string on the wire, not a "
                             f"{type(text).__name__}")
    if key_type is str:
        return text
    if key_type is int:
        if _INT_KEY.fullmatch(text) and text != "-0":
            number = int(text)
            if _INT64_MIN <= number <= _INT64_MAX:
                return number
        raise ValueTypeError(f"{where}: {text[:40]!r} is not an integer key")
    if key_type is bool:
        if text in ("true", "false"):
            return text == "true"
        raise ValueTypeError(f"{where}: {text[:40]!r} is not a boolean key (true or false)")
    if isinstance(key_type, type) and issubclass(key_type, enum.Enum):
        member = key_type.__members__.get(text)
        if member is not None:
            return member
        raise ValueTypeError(f"{where}: {text[:40]!r} is not a {key_type.__name__}")
    raise ValueTypeError(f"{where}: unsupported map key type {key_type!r}")


def joynr_type_name(tp: type) -> str:
    """The joynr type name of a struct, enum or named map: as declared with
    :func:`joynr_name`, else its Python class name."""
    declared = vars(tp).get("__joynr_name__")
    return declared if isinstance(declared, str) else tp.__name__


def joynr_member_names(tp: type) -> dict[str, str]:
    """A dataclass's field names -> their joynr member names (declared on it or on the class
    that declares the field, else lowerCamelCase)."""
    declared: dict[str, str] = {}
    for cls in reversed(tp.__mro__):
        declared.update(vars(cls).get("__joynr_members__") or {})
    return {f.name: declared.get(f.name) or lower_camel(f.name)
            for f in dataclasses.fields(tp)}


def joynr_serialized_members(tp: type) -> frozenset[str]:
    """The fields of a dataclass that joynr carries as a string holding their serialized JSON
    (declared with :func:`joynr_name` on it or on a class it derives from)."""
    found: set[str] = set()
    for cls in tp.__mro__:
        found.update(vars(cls).get("__joynr_serialized__") or ())
    return frozenset(found)


def to_wire(value: Any) -> Any:
    """A msgpack-friendly form of a typed value."""
    kind = type(value)
    if kind in PLAIN_TYPES or value is None:
        return value
    convert = _CONVERTERS.get(kind)
    if convert is None:
        convert = _converter_of(kind)
    return convert(value)


def _same(value: Any) -> Any:
    return value


def _enum_name(value: Any) -> Any:
    return value.name


def _sequence(value: Any) -> Any:
    return [v if type(v) in PLAIN_TYPES else to_wire(v) for v in value]


def _mapping(value: Any) -> Any:
    # (keys other than str as a named map's are carried: a plain dict declared as one)
    return {k if type(k) is str else _key_text(k): v if type(v) in PLAIN_TYPES else to_wire(v)
            for k, v in value.items()}


def _key_text(key: Any) -> Any:
    """A map key in its wire form: an int, bool or enum member as a named map's key is
    carried (:func:`map_key_text`), any other as it is."""
    if type(key) in (int, bool) or isinstance(key, enum.Enum):
        return map_key_text(key)
    return key


def _dataclass_converter(names: tuple[str, ...]) -> Callable[[Any], Any]:
    """A function making the map of a dataclass with fields ``names``: spelled out field by
    field (made once per dataclass; several times faster than a loop over the fields)."""
    if not all(name.isidentifier() for name in names):  # (dataclass fields always are)
        def convert(value: Any) -> Any:
            return {name: to_wire(getattr(value, name)) for name in names}
        return convert
    lines = ["def convert(value):"]
    lines += [f"    v{i} = value.{name}" for i, name in enumerate(names)]
    # a field's value: as it is when plain, else through the converter of its type (to_wire
    # makes it when it is the first value of that type)
    lines.append("    return {" + ", ".join(
        f"{name!r}: v{i} if type(v{i}) in plain or v{i} is None "
        f"else (converters.get(type(v{i})) or to_wire)(v{i})"
        for i, name in enumerate(names)) + "}")
    namespace: dict[str, Any] = {"plain": PLAIN_TYPES, "to_wire": to_wire,
                                 "converters": _CONVERTERS}
    exec("\n".join(lines), namespace)  # the field names are identifiers (checked above)
    return cast(Callable[[Any], Any], namespace["convert"])


#: how to_wire converts a value of each type met so far (by type: the checks of the first
#: value of a type hold for every value of it)
_CONVERTERS: dict[type, Callable[[Any], Any]] = {}


def _converter_of(kind: type) -> Callable[[Any], Any]:
    convert: Callable[[Any], Any]
    if issubclass(kind, enum.Enum):
        convert = _enum_name
    elif dataclasses.is_dataclass(kind) and not issubclass(kind, type):
        convert = _dataclass_converter(tuple(f.name for f in dataclasses.fields(kind)))
    elif issubclass(kind, (list, tuple)):
        convert = _sequence
    elif issubclass(kind, dict):
        convert = _mapping
    else:
        convert = _same
    _CONVERTERS[kind] = convert
    return convert


def _all_of(values: list[Any], kind: type) -> bool:
    for value in values:  # noqa: SIM110 - a plain loop is faster than all() over a generator
        if type(value) is not kind:
            return False
    return True


@functools.cache
def _type_hints(tp: type) -> dict[str, Any]:
    """A dataclass's field types, with their range marks (computing them is slow; they never
    change)."""
    return typing.get_type_hints(tp, include_extras=True)


def from_wire(value: Any, tp: Any, where: str = "value") -> Any:
    """The typed value of ``value`` from the wire; raises ValueTypeError when it does not fit
    (naming ``where``, the value's place, and the part that did not fit: for a number out of
    its type's range, the value and the range)."""
    if type(value) is tp and (  # the common cases first
            tp in EXACT_TYPES or (tp is int and _INT64_MIN <= value <= _INT64_MAX)):
        return value
    try:
        decode = _DECODERS.get(tp) or _decoder_of(tp)
        return decode(value)
    except (_Refused, ValueTypeError, TypeError):
        pass  # (TypeError: a type that cannot be a key; its decoder is not kept)
    # the value does not fit: the step-by-step definition says where (and decides, should a
    # decoder ever disagree with it)
    return _from_wire_checked(value, tp, where)


class _Refused(Exception):
    """A decoder's "does not fit" (from_wire then asks _from_wire_checked where and why)."""


Decoder = Callable[[Any], Any]

#: from_wire's decoder of each declared type met so far: a function made once per type that
#: checks and converts a value without building the labels of its parts (they are made only
#: for a value that does not fit, by _from_wire_checked)
_DECODERS: dict[Any, Decoder] = {}


def _decoder_of(tp: Any) -> Decoder:
    """The decoder of ``tp``, made and kept on first use (raises TypeError when ``tp`` cannot
    be a dict key; from_wire then takes the step-by-step way)."""
    decoder = _DECODERS.get(tp)
    if decoder is None:
        decoder = _make_decoder(tp)  # (a dataclass keeps its own before its fields' are made)
        _DECODERS[tp] = decoder
    return decoder


def _refuse(value: Any) -> Any:
    raise _Refused


def _same_value(value: Any) -> Any:
    return value


def _exactly(kind: type) -> Decoder:
    def decode(value: Any) -> Any:
        if type(value) is kind:
            return value
        raise _Refused
    return decode


def _int_decoder(mark: IntRange) -> Decoder:
    low, high = mark.low, mark.high

    def decode(value: Any) -> Any:
        if type(value) is int and low <= value <= high:
            return value
        raise _Refused
    return decode


def _float_decoder(mark: FloatRange) -> Decoder:
    low, high = -mark.limit, mark.limit

    def decode(value: Any) -> Any:
        if type(value) is float:
            if low <= value <= high:  # (False for NaN)
                return value
        elif type(value) is int:
            try:
                number = float(value)
            except OverflowError:
                raise _Refused from None
            if low <= number <= high:
                return number
        raise _Refused
    return decode


def _nothing(value: Any) -> Any:
    if value is None:
        return None
    raise _Refused


def _make_decoder(tp: Any) -> Decoder:
    if tp is Any:
        return _same_value
    sized, size = _size_mark(tp)
    if size is not None:
        return _sized_decoder(sized, size.limit)
    base, mark = _range_mark(tp)
    if isinstance(mark, IntRange):
        return _int_decoder(mark)
    if isinstance(mark, FloatRange):
        return _float_decoder(mark)
    if base is not tp:  # (Annotated with marks of no range)
        return _decoder_of(base)
    if tp in EXACT_TYPES:
        return _exactly(tp)
    if tp is type(None) or tp is None:
        return _nothing
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        return _union_decoder(typing.get_args(tp))
    if origin is list:
        return _list_decoder(typing.get_args(tp)[0])
    if origin is dict:
        key_type, value_type = typing.get_args(tp)
        return _dict_decoder(_decoder_of(key_type), _decoder_of(value_type))
    map_types = joynr_map_types(tp)
    if map_types is not None:
        return _named_map_decoder(tp, *map_types)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        members = dict(tp.__members__)

        def decode_enum(value: Any) -> Any:
            if type(value) is str:
                member = members.get(value)
                if member is not None:
                    return member
            raise _Refused
        return decode_enum
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_decoder(tp)
    return _refuse  # an unsupported declared type (_from_wire_checked names it)


def _sized_decoder(base: Any, limit: int) -> Decoder:
    """The decoder of ``base`` that first refuses a value holding more than ``limit``."""
    if base is str:
        def decode_str(value: Any) -> Any:
            if type(value) is str and len(value) <= limit:
                return value
            raise _Refused
        return decode_str
    decode_base = _decoder_of(base)
    kind = _sized_kind(base)

    def decode(value: Any) -> Any:
        if isinstance(value, kind) and len(value) > limit:
            raise _Refused
        return decode_base(value)
    return decode


def _union_decoder(args: tuple[Any, ...]) -> Decoder:
    none_fits = type(None) in args
    choices = [_decoder_of(arg) for arg in args if arg is not type(None)]

    def decode(value: Any) -> Any:
        if value is None and none_fits:
            return None
        for choice in choices:  # the first that fits, in declared order
            try:
                return choice(value)
            except (_Refused, ValueTypeError):
                continue
        raise _Refused
    return decode


def _list_decoder(item: Any) -> Decoder:
    decode_item = _decoder_of(item)
    _, mark = _range_mark(item)
    if isinstance(mark, IntRange):
        low, high = mark.low, mark.high

        def decode_ints(value: Any) -> Any:
            if not isinstance(value, list):
                raise _Refused
            for v in value:
                if type(v) is not int or not low <= v <= high:
                    return [decode_item(v) for v in value]  # (which refuses)
            return list(value)  # the common case, one pass
        return decode_ints
    sized, size = _size_mark(item)
    if sized is str and size is not None:
        limit = size.limit

        def decode_strs(value: Any) -> Any:
            if not isinstance(value, list):
                raise _Refused
            for v in value:
                if type(v) is not str or len(v) > limit:
                    raise _Refused
            return list(value)  # the common case, one pass
        return decode_strs
    if item in EXACT_TYPES:
        def decode_plain(value: Any) -> Any:
            if not isinstance(value, list):
                raise _Refused
            if _all_of(value, item):  # the common case, one pass
                return list(value)
            return [decode_item(v) for v in value]
        return decode_plain

    def decode(value: Any) -> Any:
        if not isinstance(value, list):
            raise _Refused
        return [decode_item(v) for v in value]
    return decode


def _dict_decoder(decode_key: Decoder, decode_value: Decoder) -> Decoder:
    def decode(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _Refused
        return {decode_key(k): decode_value(v) for k, v in value.items()}
    return decode


def _named_map_decoder(tp: type, key_type: Any, value_type: Any) -> Decoder:
    decode_value = _decoder_of(value_type)

    def decode(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _Refused
        out = tp()
        for text, item in value.items():
            try:
                key = map_key_from_text(text, key_type)
            except ValueTypeError:
                raise _Refused from None
            if key in out:  # (two texts of one key: enum aliases)
                raise _Refused
            out[key] = decode_value(item)
        return out
    return decode


def _dataclass_decoder(tp: type) -> Decoder:
    #: (field, its exact type or None, its decoder, required), filled in below: the decoder is
    #: kept first, so that a dataclass whose fields contain itself finds it, and refuses every
    #: value until they are all there (a value decoded meanwhile takes the step-by-step way)
    fields: list[tuple[str, Any, Decoder, bool]] = []
    complete = False  # until then (fields being filled, or failed) it refuses every value

    def decode(value: Any) -> Any:
        if not complete or not isinstance(value, dict):
            raise _Refused
        kwargs = {}
        for name, plain, decode_field, required in fields:
            if name in value:
                v = value[name]
                kwargs[name] = v if type(v) is plain else decode_field(v)
            elif required:
                raise _Refused
        return tp(**kwargs)

    _DECODERS[tp] = decode
    # (should a field's type have no decoder, this raises and the decoder stays incomplete:
    # from_wire then takes the step-by-step way for this type and those made meanwhile)
    hints = _type_hints(tp)
    for f in dataclasses.fields(tp):
        hint = hints[f.name]
        fields.append((f.name, hint if hint in EXACT_TYPES else None, _decoder_of(hint),
                       f.default is dataclasses.MISSING
                       and f.default_factory is dataclasses.MISSING))
    complete = True
    return decode


def _from_wire_checked(value: Any, tp: Any, where: str = "value") -> Any:
    """from_wire's definition, one check after another, naming where a value does not fit
    (the decoders below give the same results faster; this says why one refused)."""
    if type(value) is tp and tp in EXACT_TYPES:  # the common case first
        return value
    if tp is Any:
        return value
    base, mark = _range_mark(tp)
    if mark is not None:
        number = _checked_number(value, mark, where)
        if number is not None:
            return number
        wanted = "int" if base is int else "a number"
        raise ValueTypeError(f"{where}: expected {wanted}, got {type(value).__name__}")
    if base is not tp:  # (Annotated with marks of no range: its size, then its base type)
        return _from_wire_checked(_within(value, tp, where), base, where)
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _from_wire_checked(value, arg, where)
            except ValueTypeError:
                continue
        raise ValueTypeError(f"{where}: {type(value).__name__} fits none of {tp}")
    if origin is list:
        if not isinstance(value, list):
            raise ValueTypeError(f"{where}: expected a list, got {type(value).__name__}")
        (item,) = typing.get_args(tp)
        if item in EXACT_TYPES and _all_of(value, item):  # the common case, no labels made
            return list(value)
        return [_from_wire_checked(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ValueTypeError(f"{where}: expected a map, got {type(value).__name__}")
        key_type, value_type = typing.get_args(tp)
        return {_from_wire_checked(k, key_type, f"{where} key"):
                _from_wire_checked(v, value_type, f"{where}[{k!r}]") for k, v in value.items()}
    map_types = joynr_map_types(tp)
    if map_types is not None:
        return _named_map_checked(value, tp, map_types, where)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if type(value) is str and value in tp.__members__:
            return tp[value]
        raise ValueTypeError(f"{where}: {str(value)[:40]!r} is not a {tp.__name__}")
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ValueTypeError(f"{where}: expected a {tp.__name__} map")
        hints = _type_hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in value:
                kwargs[f.name] = _from_wire_checked(value[f.name], hints[f.name],
                                                    f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueTypeError(f"{where}: {tp.__name__} without {f.name}")
        return tp(**kwargs)
    if tp is type(None) or tp is None:
        if value is None:
            return None
        raise ValueTypeError(f"{where}: expected nothing, got {type(value).__name__}")
    if tp in (bool, str, bytes):
        if type(value) is tp:
            return value
        raise ValueTypeError(f"{where}: expected {tp.__name__}, got {type(value).__name__}")
    raise ValueTypeError(f"{where}: unsupported declared type {tp!r}")


def _named_map_checked(value: Any, tp: type, map_types: tuple[Any, Any], where: str) -> Any:
    """A named map's value, checked step by step (as :func:`_from_wire_checked`)."""
    if not isinstance(value, dict):
        raise ValueTypeError(f"{where}: expected a {tp.__name__} map, got "
                             f"{type(value).__name__}")
    key_type, value_type = map_types
    out = tp()
    for text, item in value.items():
        key = map_key_from_text(text, key_type, f"{where} key")
        if key in out:
            raise ValueTypeError(f"{where}: the key {key!r} twice")
        out[key] = _from_wire_checked(item, value_type, f"{where}[{text!r}]")
    return out


# ---------------------------------------------------------------------- declarations


@dataclass(frozen=True)
class MethodDef:
    name: str
    params: tuple[tuple[str, Any], ...]
    returns: Any
    error_enum: type[enum.Enum] | None = None
    one_way: bool = False
    #: the joynr parameter types when declared with @joynr_datatypes (else derived); a tuple
    #: in place of a name: the joynr structs that parameter may be (told by its _typeName)
    joynr_datatypes: tuple[str | tuple[str, ...], ...] | None = None
    #: the out arguments (name, type) of a method declared with @outputs (several: ``returns``
    #: is then the tuple of their types); empty for a method with one out argument or none
    outputs: tuple[tuple[str, Any], ...] = ()
    #: its name on joynr's wire when that is not the lowerCamelCase of ``name``
    joynr_name: str | None = None
    param_datatypes: list[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        declared = self.joynr_datatypes or (None,) * len(self.params)
        object.__setattr__(self, "param_datatypes", [
            native_datatype(tp, d) for (_, tp), d in zip(self.params, declared, strict=False)])


@dataclass(frozen=True)
class AttributeDef:
    type: Any
    readonly: bool = False
    notifiable: bool = True
    name: str = ""
    #: its name on joynr's wire when that is not the lowerCamelCase of ``name``
    joynr_name: str | None = None


@dataclass(frozen=True)
class BroadcastDef:
    outputs: tuple[tuple[str, Any], ...]
    name: str = ""
    #: True: subscribers send a subscription request with filter parameters and get unicast
    #: publications the provider's filters let through; False: a multicast
    selective: bool = False
    #: the filter parameter names a subscription to a selective broadcast carries
    filter_parameters: tuple[str, ...] = ()
    #: its name on joynr's wire when that is not the lowerCamelCase of ``name``
    joynr_name: str | None = None


@dataclass(frozen=True)
class InterfaceDef:
    name: str
    version: tuple[int, int]
    methods: dict[str, MethodDef] = field(default_factory=dict)
    attributes: dict[str, AttributeDef] = field(default_factory=dict)
    broadcasts: dict[str, BroadcastDef] = field(default_factory=dict)
    #: the attributes' get_<name> / set_<name> methods (set only when writable), by name
    accessors: dict[str, MethodDef] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        # this project's own datatype names carry a declared width only where the method
        # needs it: among the methods of one name, those that the widened names
        # (:func:`widened_datatype`: every integer ``Long``, both floats ``Double``) tell
        # apart keep them, as every earlier runtime of this project named them, so a request
        # of either version reaches a provider of the other; only overloads that differ in
        # width alone are named by their widths
        overloads: dict[str, list[MethodDef]] = {}
        for method in self.methods.values():
            overloads.setdefault(method.name, []).append(method)
        for same in overloads.values():
            widened = [tuple(map(widened_datatype, m.param_datatypes)) for m in same]
            for method, names in zip(same, widened, strict=True):
                if widened.count(names) == 1:
                    object.__setattr__(method, "param_datatypes", list(names))
        accessors = {}
        for name, attr in self.attributes.items():
            accessors[f"get_{name}"] = MethodDef(f"get_{name}", (), attr.type)
            if not attr.readonly:
                accessors[f"set_{name}"] = MethodDef(f"set_{name}", (("value", attr.type),),
                                                     type(None))
        object.__setattr__(self, "accessors", accessors)


def _joynr_name_checked(joynr_name: str | None, where: str) -> str | None:
    if joynr_name is not None and not (isinstance(joynr_name, str) and joynr_name):
        raise TypeError(f"{where}(joynr_name=...) must be a non-empty string")
    return joynr_name


def attribute(tp: Any, *, readonly: bool = False, notifiable: bool = True,
              joynr_name: str | None = None) -> Any:
    """Declare an attribute of type ``tp`` (get; set unless readonly; subscribe if notifiable).
    ``joynr_name``: its name on joynr's wire where that is not the lowerCamelCase of the
    Python name (``my_attr`` for Franca's ``my_attr``; its accessors are then
    ``getMy_attr`` / ``setMy_attr``)."""
    return AttributeDef(tp, readonly, notifiable,
                        joynr_name=_joynr_name_checked(joynr_name, "attribute"))


def broadcast(*, selective: bool = False, filter_parameters: tuple[str, ...] = (),
              joynr_name: str | None = None, **outputs: Any) -> Any:
    """Declare a broadcast with named, typed output values (so no output can be named
    ``selective``, ``filter_parameters`` or ``joynr_name``; ``joynr_name``: its name on
    joynr's wire where that is not the lowerCamelCase of the Python name).

    ``selective=False`` (the default): a multicast, published to every subscriber whose
    partitions match. ``selective=True``: each subscriber subscribes with filter parameters
    (a map of strings, names ``filter_parameters``) and gets a publication of its own when the
    provider's filters of the broadcast let the values through
    (``Provider.add_broadcast_filter``)."""
    if not isinstance(selective, bool):
        raise TypeError(f"broadcast(selective=...) must be a bool, not {type(selective).__name__}")
    if isinstance(filter_parameters, str) or not all(
            isinstance(p, str) and p for p in filter_parameters):
        raise TypeError("broadcast(filter_parameters=...) must be a tuple of names")
    if filter_parameters and not selective:
        raise TypeError("only a selective broadcast has filter parameters")
    if len(set(filter_parameters)) != len(tuple(filter_parameters)):
        raise TypeError("broadcast(filter_parameters=...) names a parameter twice")
    return BroadcastDef(tuple(outputs.items()), selective=selective,
                        filter_parameters=tuple(filter_parameters),
                        joynr_name=_joynr_name_checked(joynr_name, "broadcast"))


def errors(error_enum: type[enum.Enum]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the modelled error enumeration of a method."""
    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__joynr_errors__ = error_enum  # type: ignore[attr-defined]
        return fn
    return mark


def one_way(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Declare a fire-and-forget method (no reply, returns None)."""
    fn.__joynr_one_way__ = True  # type: ignore[attr-defined]
    return fn


def joynr_datatypes(*names: str | tuple[str, ...]
                    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The joynr parameter types of a method (``"Integer"``, ``"Short"``, ``"Float"``, ...) where
    they differ from those derived from its annotations; one per parameter. A tuple of names
    for a parameter: it is one of these joynr structs (its value is a map whose ``_typeName``
    says which; joynr declares one overload per struct, this project one method)."""
    for name in names:
        if isinstance(name, tuple) and not (name and all(isinstance(n, str) for n in name)):
            raise TypeError(f"joynr_datatypes: {name!r} is not a tuple of type names")

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__joynr_datatypes__ = tuple(names)  # type: ignore[attr-defined]
        return fn
    return mark


def wire_name(name: str, *, joynr_name: str | None = None
              ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The method name on the wire of a Python method, when it differs: overloads (joynr
    methods of one name with different parameter types) are Python methods of different
    names. On joynr's wire the method is the lowerCamelCase of ``name``, or ``joynr_name``
    where that is given (a Franca name that lowerCamelCase does not give back: ``do_it``)."""
    _joynr_name_checked(joynr_name, "wire_name")

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__joynr_name__ = name  # type: ignore[attr-defined]
        fn.__joynr_wire_name__ = joynr_name  # type: ignore[attr-defined]
        return fn
    return mark


def outputs(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the out arguments of a method with several of them, by name and in order; the
    method returns the tuple of their values, annotated ``tuple[A, B, ...]`` (one type per
    name). A method with one out argument simply returns it."""
    if len(names) < 2:
        raise TypeError("outputs names two or more out arguments (one is the return value)")
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise TypeError(f"outputs: {names!r} are not distinct names")

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__joynr_outputs__ = tuple(names)  # type: ignore[attr-defined]
        return fn
    return mark


def _declared_outputs(where: str, names: tuple[str, ...] | None, returns: Any,
                      one: bool) -> tuple[tuple[str, Any], ...]:
    """The (name, type) of each out argument of a method declared with @outputs."""
    if names is None:
        return ()
    if one:
        raise TypeError(f"{where}: a one-way method has no out arguments")
    args = typing.get_args(returns) if typing.get_origin(returns) is tuple else ()
    if len(args) != len(names) or Ellipsis in args:
        raise TypeError(f"{where}: @outputs names {len(names)} out arguments, so it returns "
                        f"a tuple of {len(names)} types, not {returns!r}")
    return tuple(zip(names, args, strict=True))


def interface(name: str, *, version: tuple[int, int] = (1, 0)) -> Callable[[C], C]:
    """Class decorator: read the declarations into ``cls.__joynr__`` (an InterfaceDef)."""

    def build(cls: C) -> C:
        methods: dict[str, MethodDef] = {}
        attributes: dict[str, AttributeDef] = {}
        broadcasts: dict[str, BroadcastDef] = {}
        for attr_name, value in vars(cls).items():
            if isinstance(value, AttributeDef):
                attributes[attr_name] = dataclasses.replace(value, name=attr_name)
            elif isinstance(value, BroadcastDef):
                broadcasts[attr_name] = dataclasses.replace(value, name=attr_name)
            elif inspect.iscoroutinefunction(value) and not attr_name.startswith("_"):
                hints = typing.get_type_hints(value, include_extras=True)
                params = tuple(
                    (p, hints.get(p, Any))
                    for p in list(inspect.signature(value).parameters)[1:]
                )
                one = getattr(value, "__joynr_one_way__", False)
                joynr_types = getattr(value, "__joynr_datatypes__", None)
                if joynr_types is not None and len(joynr_types) != len(params):
                    raise TypeError(f"{cls.__name__}.{attr_name}: joynr_datatypes names "
                                    f"{len(joynr_types)} types for {len(params)} parameters")
                returns = hints.get("return", type(None))
                outs = _declared_outputs(f"{cls.__name__}.{attr_name}",
                                         getattr(value, "__joynr_outputs__", None), returns, one)
                methods[attr_name] = MethodDef(
                    getattr(value, "__joynr_name__", attr_name), params,
                    returns, getattr(value, "__joynr_errors__", None),
                    one, joynr_types, outs, getattr(value, "__joynr_wire_name__", None),
                )
        signatures: dict[tuple[str, tuple[str, ...]], str] = {}
        for attr_name, method in methods.items():
            key = (method.name, tuple(method.param_datatypes))
            if key in signatures:
                raise TypeError(f"{cls.__name__}: {attr_name} and {signatures[key]} are both "
                                f"{method.name}({', '.join(key[1])})")
            signatures[key] = attr_name
        clash = set(methods) & {f"{p}_{a}" for a in attributes for p in ("get", "set")}
        if clash:
            raise TypeError(f"{cls.__name__}: methods {sorted(clash)} clash with attribute "
                            "accessors")
        cls.__joynr__ = InterfaceDef(name, version, methods, attributes, broadcasts)  # type: ignore[attr-defined]
        return cls

    return build


def interface_def(cls: Any) -> InterfaceDef:
    definition = getattr(cls, "__joynr__", None)
    if not isinstance(definition, InterfaceDef):
        raise TypeError(f"{cls!r} is not declared with @interface")
    return definition

"""The resolved model of a set of Franca IDL files: the parser's output, the generator's input.

Every class is a frozen dataclass; the model is pure data (no I/O). Type references are
resolved: a :class:`Named` holds the declaration itself. Two models parsed from the same files
compare equal.

Names: ``name`` is the Franca name; ``package`` the Franca package (``"vehicle"``);
``owner`` the name of the type collection or interface that declares a type (``None`` for an
anonymous type collection); ``wire_name`` the name joynr's generators give the type on the wire
(its ``_typeName``, e.g. ``"joynr.vehicle.RadioStation"``) or, for an interface, joynr's interface
name (``"vehicle/Radio"``). ``comment`` is the text of the element's Franca structured comment
(``<** @description: ... **>``), or ``""``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "PRIMITIVE_NAMES",
    "Arg",
    "ArrayOf",
    "ArrayType",
    "Attribute",
    "Broadcast",
    "EnumType",
    "Enumerator",
    "Field",
    "Interface",
    "MapType",
    "Method",
    "Model",
    "Named",
    "Position",
    "Primitive",
    "StructType",
    "TypeCollection",
    "TypeDecl",
    "TypeRef",
    "TypedefType",
    "UnionType",
]

#: Franca's predefined types, as spelled in .fidl files.
PRIMITIVE_NAMES: tuple[str, ...] = (
    "Int8",
    "UInt8",
    "Int16",
    "UInt16",
    "Int32",
    "UInt32",
    "Int64",
    "UInt64",
    "Boolean",
    "Float",
    "Double",
    "String",
    "ByteBuffer",
)


@dataclass(frozen=True)
class Position:
    """Where an element starts: the file (as given or as reached by an import), 1-based."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


# ---------------------------------------------------------------------------------------------
# type references


@dataclass(frozen=True)
class Primitive:
    """A Franca predefined type: one of :data:`PRIMITIVE_NAMES`."""

    name: str


@dataclass(frozen=True)
class ArrayOf:
    """An implicit array, ``T[]`` in Franca."""

    element: TypeRef


@dataclass(frozen=True, eq=False)
class Named:
    """A reference to a declared type.

    Equality and hash go by the declaration's identity (kind, package, owner, name), not by
    its contents, so a struct that refers to itself (``Node`` with a ``Node[] children``
    field) does not recurse when compared or printed.
    """

    decl: TypeDecl

    @property
    def key(self) -> tuple[str, str, str | None, str]:
        """(kind, package, owner, name) of the declaration referred to."""
        d = self.decl
        return (type(d).__name__, d.package, d.owner, d.name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Named):
            return NotImplemented
        return self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Named({self.decl.wire_name!r})"


TypeRef = Primitive | ArrayOf | Named


# ---------------------------------------------------------------------------------------------
# declared types


@dataclass(frozen=True)
class Field:
    """A member of a struct or union."""

    name: str
    type: TypeRef
    comment: str
    position: Position


@dataclass(frozen=True)
class StructType:
    """``struct X [extends B] [polymorphic] { T a  U b }``; ``fields`` are its own (not the
    base's), in file order."""

    name: str
    package: str
    owner: str | None
    wire_name: str
    fields: tuple[Field, ...]
    base: StructType | None
    polymorphic: bool
    comment: str
    position: Position


@dataclass(frozen=True)
class Enumerator:
    """One value of an enumeration; ``value`` is the explicit ``= n`` if given."""

    name: str
    value: int | None
    comment: str
    position: Position

    @property
    def wire_name(self) -> str:
        """The enumerator's name on the wire: joynr's generators upper-case it."""
        return self.name.upper()


@dataclass(frozen=True)
class EnumType:
    """``enumeration X [extends B] { A B = 3 }``; ``enumerators`` are its own (not the base's),
    in file order. Also the inline ``error { A B }`` enumeration of a method."""

    name: str
    package: str
    owner: str | None
    wire_name: str
    enumerators: tuple[Enumerator, ...]
    base: EnumType | None
    comment: str
    position: Position

    def all_enumerators(self) -> tuple[Enumerator, ...]:
        """The base's enumerators (recursively) first, then this enumeration's own."""
        inherited = self.base.all_enumerators() if self.base is not None else ()
        return inherited + self.enumerators


@dataclass(frozen=True)
class ArrayType:
    """``array X of T``."""

    name: str
    package: str
    owner: str | None
    wire_name: str
    element: TypeRef
    comment: str
    position: Position


@dataclass(frozen=True)
class MapType:
    """``map X { K to V }``."""

    name: str
    package: str
    owner: str | None
    wire_name: str
    key: TypeRef
    value: TypeRef
    comment: str
    position: Position


@dataclass(frozen=True)
class TypedefType:
    """``typedef X is T``."""

    name: str
    package: str
    owner: str | None
    wire_name: str
    actual: TypeRef
    comment: str
    position: Position


@dataclass(frozen=True)
class UnionType:
    """``union X [extends B] { T a  U b }`` (parsed; joynr's generators do not support
    unions); ``fields`` are its own, in file order."""

    name: str
    package: str
    owner: str | None
    wire_name: str
    fields: tuple[Field, ...]
    base: UnionType | None
    comment: str
    position: Position


TypeDecl = StructType | EnumType | ArrayType | MapType | TypedefType | UnionType


# ---------------------------------------------------------------------------------------------
# interfaces


@dataclass(frozen=True)
class Arg:
    """An in or out argument of a method, or an out argument of a broadcast."""

    name: str
    type: TypeRef
    comment: str
    position: Position


@dataclass(frozen=True)
class Attribute:
    """``attribute T name [readonly] [noSubscriptions]``."""

    name: str
    type: TypeRef
    readonly: bool
    no_subscriptions: bool
    comment: str
    position: Position


@dataclass(frozen=True)
class Method:
    """``method name [fireAndForget] { in {...} out {...} error ... }``.

    ``errors`` is the named error enumeration (``error E``), or the enumeration the parser
    makes for an inline ``error { A B }`` / ``error extends E { C }`` (named and wire-named as
    joynr's generators name it; it is not listed in the interface's ``types``), or ``None``.
    """

    name: str
    in_args: tuple[Arg, ...]
    out_args: tuple[Arg, ...]
    fire_and_forget: bool
    errors: EnumType | None
    comment: str
    position: Position
    #: Franca's selector (``method add:inBackends``): what tells an overload apart by name
    selector: str | None = None


@dataclass(frozen=True)
class Broadcast:
    """``broadcast name [selective] { out {...} }``."""

    name: str
    out_args: tuple[Arg, ...]
    selective: bool
    comment: str
    position: Position


@dataclass(frozen=True)
class Interface:
    """``interface name [extends B] { version {...} attributes methods broadcasts types }``.

    ``methods`` are in file order; the overloads of a method are separate entries of the same
    name. ``types`` are the types declared inside the interface, in file order.
    """

    name: str
    package: str
    wire_name: str
    version: tuple[int, int] | None
    attributes: tuple[Attribute, ...]
    methods: tuple[Method, ...]
    broadcasts: tuple[Broadcast, ...]
    types: tuple[TypeDecl, ...]
    base: Interface | None
    comment: str
    position: Position


@dataclass(frozen=True)
class TypeCollection:
    """``typeCollection [name] { version {...} types }``; ``name`` is ``None`` if anonymous."""

    name: str | None
    package: str
    version: tuple[int, int] | None
    types: tuple[TypeDecl, ...]
    comment: str
    position: Position


@dataclass(frozen=True)
class Model:
    """Everything parsed: the type collections and interfaces of all files (the given ones
    and those reached by imports), each in file order, files in the order they were read."""

    type_collections: tuple[TypeCollection, ...]
    interfaces: tuple[Interface, ...]
    files: tuple[str, ...]

    def declarations(self) -> Iterator[TypeDecl]:
        """Every declared type: those of the type collections, then those of the interfaces
        (not the enumerations made for inline ``error {...}``)."""
        for collection in self.type_collections:
            yield from collection.types
        for iface in self.interfaces:
            yield from iface.types

"""joynr's version modes: a model whose versioned names carry their major version.

joynr's generators take ``-addVersionTo package|comment|none``. With ``package`` the major
version of a type collection or interface that declares one becomes a package level
``v<major>`` after the Franca package: the types it declares are named
``joynr.<package>.v<major>[.<Collection>].<Type>`` on the wire (the inline error
enumerations of an interface's methods ``joynr.<package>.v<major>.<Interface>.<Method>ErrorEnum``),
wherever they are referred to, so two versions of one interface and its types can be served
side by side. What does not change: the interface's name on the wire
(``<package>/<Interface>``: the two versions are told apart by the version of their
registrations), the names of types of a type collection without a version, enumerator and
member names. ``comment`` is ``package`` except for an interface whose structured comment says
``#noVersionGeneration``: it and the types it declares keep their unversioned names (joynr's
generators then name the types of versioned type collections it uses without their version
too, which gives one type two names: refused). ``none`` (the default) changes nothing.

:func:`with_versions` makes that model from the parser's: every versioned declaration gets
the package ``<package>.v<major>`` and the versioned wire name, every interface the package of
its version (its wire name stays), references follow. The generator then makes one module
per package as always: ``fleet.v1`` is the module ``fleet_v1`` beside ``fleet_v2`` and the
unversioned ``fleet``. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pyjoynr.franca.model import (
    Arg,
    ArrayOf,
    ArrayType,
    Broadcast,
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

__all__ = ["MODES", "NO_VERSION_GENERATION", "with_versions"]

#: the values of ``add_version_to`` (joynr's ``-addVersionTo``)
MODES = ("none", "package", "comment")
#: the mark in an interface's comment that keeps it unversioned in the mode ``comment``
NO_VERSION_GENERATION = "#noVersionGeneration"


def _major(version: tuple[int, int] | None) -> int | None:
    return None if version is None else version[0]


def _versioned_wire_name(decl: TypeDecl, major: int) -> str:
    prefix = f"joynr.{decl.package}" if decl.package else "joynr"
    assert decl.wire_name.startswith(prefix + ".")
    return f"{prefix}.v{major}{decl.wire_name[len(prefix):]}"


def _versioned_package(package: str, major: int) -> str:
    return f"{package}.v{major}" if package else f"v{major}"


class _Versioning:
    def __init__(self, model: Model, mode: str) -> None:
        self.model = model
        self.mode = mode
        #: id of a declaration -> the major version in its names (None: unversioned)
        self.major_of: dict[int, int | None] = {}
        self.copies: dict[int, TypeDecl] = {}
        self.problems: list[tuple[Position | None, str]] = []

    def interface_major(self, iface: Interface) -> int | None:
        if self.mode == "comment" and NO_VERSION_GENERATION in iface.comment:
            return None
        return _major(iface.version)

    def assign(self) -> None:
        for collection in self.model.type_collections:
            for decl in collection.types:
                self.major_of.setdefault(id(decl), _major(collection.version))
        for iface in self.model.interfaces:
            major = self.interface_major(iface)
            for decl in iface.types:
                self.major_of.setdefault(id(decl), major)
            for method in iface.methods:
                if method.errors is not None:  # an inline one is in no list of types
                    self.major_of.setdefault(id(method.errors), major)
        for iface in self.model.interfaces:
            if self.interface_major(iface) is not None or iface.version is None:
                continue
            for decl in self.referred(iface):
                major = self.major_of.get(id(decl))
                if major is not None:
                    self.problems.append((iface.position, (
                        f"interface {iface.name} says {NO_VERSION_GENERATION} but uses "
                        f"{_versioned_wire_name(decl, major)} of a versioned type collection: "
                        "joynr's generators name it without its version there and with it "
                        "elsewhere")))
                    break

    def referred(self, iface: Interface) -> list[TypeDecl]:
        refs: list[TypeRef] = [a.type for a in iface.attributes]
        for method in iface.methods:
            refs += [a.type for a in (*method.in_args, *method.out_args)]
            if method.errors is not None:
                refs.append(Named(method.errors))
        for b in iface.broadcasts:
            refs += [a.type for a in b.out_args]
        found: list[TypeDecl] = []
        for ref in refs:
            inner = ref
            while isinstance(inner, ArrayOf):
                inner = inner.element
            if isinstance(inner, Named):
                found.append(inner.decl)
        return found

    # ---- copies (two steps: types refer to each other, in cycles too)

    def copy(self, decl: TypeDecl) -> TypeDecl:
        made = self.copies.get(id(decl))
        if made is not None:
            return made
        major = self.major_of.get(id(decl))
        changes: dict[str, Any] = {}
        if major is not None:
            changes = {"package": _versioned_package(decl.package, major),
                       "wire_name": _versioned_wire_name(decl, major)}
        made = dataclasses.replace(decl, **changes)
        self.copies[id(decl)] = made
        refs: dict[str, Any] = {}
        if isinstance(decl, StructType | UnionType):
            refs["fields"] = tuple(self.field(f) for f in decl.fields)
            refs["base"] = None if decl.base is None else self.copy(decl.base)
        elif isinstance(decl, EnumType):
            refs["base"] = None if decl.base is None else self.copy(decl.base)
        elif isinstance(decl, ArrayType):
            refs["element"] = self.ref(decl.element)
        elif isinstance(decl, MapType):
            refs = {"key": self.ref(decl.key), "value": self.ref(decl.value)}
        elif isinstance(decl, TypedefType):
            refs["actual"] = self.ref(decl.actual)
        for key, value in refs.items():
            # the model's dataclasses are frozen; a copy is built in two steps as well
            object.__setattr__(made, key, value)
        return made

    def ref(self, ref: TypeRef) -> TypeRef:
        if isinstance(ref, Primitive):
            return ref
        if isinstance(ref, ArrayOf):
            return ArrayOf(self.ref(ref.element))
        return Named(self.copy(ref.decl))

    def field(self, item: Field) -> Field:
        return dataclasses.replace(item, type=self.ref(item.type))

    def arg(self, item: Arg) -> Arg:
        return dataclasses.replace(item, type=self.ref(item.type))

    def enum(self, decl: EnumType | None) -> EnumType | None:
        if decl is None:
            return None
        made = self.copy(decl)
        assert isinstance(made, EnumType)
        return made

    def interface(self, iface: Interface) -> Interface:
        major = self.interface_major(iface)
        return dataclasses.replace(
            iface,
            package=iface.package if major is None else _versioned_package(iface.package, major),
            attributes=tuple(dataclasses.replace(a, type=self.ref(a.type))
                             for a in iface.attributes),
            methods=tuple(self.method(m) for m in iface.methods),
            broadcasts=tuple(self.broadcast(b) for b in iface.broadcasts),
            types=tuple(self.copy(d) for d in iface.types),
            base=None,
        )

    def method(self, method: Method) -> Method:
        return dataclasses.replace(
            method, in_args=tuple(self.arg(a) for a in method.in_args),
            out_args=tuple(self.arg(a) for a in method.out_args),
            errors=self.enum(method.errors))

    def broadcast(self, item: Broadcast) -> Broadcast:
        return dataclasses.replace(item, out_args=tuple(self.arg(a) for a in item.out_args))

    def collection(self, collection: TypeCollection) -> TypeCollection:
        major = _major(collection.version)
        package = collection.package
        return dataclasses.replace(
            collection,
            package=package if major is None else _versioned_package(package, major),
            types=tuple(self.copy(d) for d in collection.types))

    def run(self) -> Model:
        self.assign()
        collections = tuple(self.collection(c) for c in self.model.type_collections)
        made = {id(i): self.interface(i) for i in self.model.interfaces}
        for iface in self.model.interfaces:
            if iface.base is not None and id(iface.base) in made:
                object.__setattr__(made[id(iface)], "base", made[id(iface.base)])
        return Model(collections, tuple(made[id(i)] for i in self.model.interfaces),
                     self.model.files)


def with_versions(model: Model, mode: str) -> tuple[Model, list[tuple[Position | None, str]]]:
    """``model`` with the names joynr's generators give its elements under ``-addVersionTo
    <mode>`` (``mode`` one of :data:`MODES`), and the problems that keep it from being
    generated so (an unversioned interface using versioned types in the mode
    ``comment``)."""
    if mode not in MODES:
        raise ValueError(f"add_version_to must be one of {', '.join(MODES)}, not {mode!r}")
    problems: list[tuple[Position | None, str]] = []
    if mode != "none":
        versioning = _Versioning(model, mode)
        model = versioning.run()
        problems = versioning.problems
    return model, problems + _same_names(model)


def _same_names(model: Model) -> list[tuple[Position | None, str]]:
    """Two major versions of an interface or type that keep one name (the parser takes them
    as long as their major versions differ)."""
    problems: list[tuple[Position | None, str]] = []
    hint = ("two major versions with one name: generate them with add_version_to "
            '"package" (joynr\'s -addVersionTo package), or one version at a time')
    first: dict[tuple[str, str], tuple[Position, int | None]] = {}
    for iface in model.interfaces:
        major = _major(iface.version)
        earlier, earlier_major = first.setdefault((iface.package, iface.name),
                                                  (iface.position, major))
        if earlier_major != major:
            problems.append((iface.position, f"interface {iface.wire_name} is declared at "
                                             f"{earlier} too: {hint}"))
    decls: list[tuple[TypeDecl, int | None]] = [
        (d, _major(c.version)) for c in model.type_collections for d in c.types]
    for iface in model.interfaces:
        decls += [(d, _major(iface.version)) for d in iface.types]
        decls += [(m.errors, _major(iface.version)) for m in iface.methods
                  if m.errors is not None and m.errors.owner == iface.name
                  and m.errors.package == iface.package]
    seen: dict[str, tuple[Position, int | None]] = {}
    for decl, major in decls:
        earlier, earlier_major = seen.setdefault(decl.wire_name, (decl.position, major))
        if earlier_major != major:
            problems.append((decl.position, f"type {decl.wire_name} is declared at {earlier} "
                                            f"too: {hint}"))
    return problems

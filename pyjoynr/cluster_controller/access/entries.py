"""The entries of access control and joynr's JSON provisioning format (pure: text in, values out).

A provisioning file is one JSON object with up to seven arrays, one per table
(:data:`TABLE_NAMES`); each element is an object whose ``"_typeName"`` names its joynr type and
whose other keys are the type's fields by their camelCase names. Reading is lenient where
joynr's own files vary (a table left out is empty, keys in any order) and strict everywhere
else: a field missing, unknown or of the wrong type, an enum value joynr does not know, a wrong
``_typeName`` or a string past its bound is an :class:`AccessFileError` naming the file, the
entry and the field. Writing gives all seven arrays with ``"_typeName"`` first, so that
``parse_tables(dump_tables(t), ...) == t``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

#: longest uid, domain, interface name, operation or listed domain, in characters
MAX_NAME_CHARS = 1_000
#: most entries in one provisioning file (all seven tables together)
MAX_FILE_ENTRIES = 1_000_000
#: most values in one list of trust levels or permissions (the enums have three and four)
MAX_ENUM_LIST = 16
#: most domains in one domain role entry
MAX_ROLE_DOMAINS = 10_000
#: how much of a refused value an error message quotes, in characters
QUOTE_CHARS = 60

#: the namespace of joynr's access control types
TYPE_PREFIX = "joynr.infrastructure.DacTypes."


class Permission(Enum):
    """What an entry grants: YES without asking, ASK the user first (treated as a refusal by a
    cluster controller, which has nobody to ask), NO."""

    YES = "YES"
    ASK = "ASK"
    NO = "NO"


_TRUST_RANK = {"NONE": 0, "LOW": 1, "MID": 2, "HIGH": 3}


class TrustLevel(Enum):
    """How far a requester is trusted. Declared in joynr's order; compared by rank,
    NONE < LOW < MID < HIGH, so that ``level >= required`` reads as "trusted enough"."""

    HIGH = "HIGH"
    MID = "MID"
    LOW = "LOW"
    NONE = "NONE"

    @property
    def rank(self) -> int:
        return _TRUST_RANK[self.value]

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, TrustLevel):
            return NotImplemented
        return self.rank >= other.rank

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, TrustLevel):
            return NotImplemented
        return self.rank > other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, TrustLevel):
            return NotImplemented
        return self.rank <= other.rank

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, TrustLevel):
            return NotImplemented
        return self.rank < other.rank


class Role(Enum):
    """What a domain role lets its holder change: MASTER the master and mediator tables, OWNER
    the owner tables, of the domains it lists."""

    MASTER = "MASTER"
    OWNER = "OWNER"


@dataclass(frozen=True, slots=True)
class MasterAccessControlEntry:
    """A master or mediator ACE: may ``uid`` call ``operation`` of ``interface_name`` on
    ``domain`` (``"*"`` for every user / operation; a domain or interface ending in ``"*"`` is a
    prefix), and what an owner entry below it may choose (the ``possible_*`` lists)."""

    uid: str
    domain: str
    interface_name: str
    default_required_trust_level: TrustLevel
    possible_required_trust_levels: tuple[TrustLevel, ...]
    default_required_control_entry_change_trust_level: TrustLevel
    possible_required_control_entry_change_trust_levels: tuple[TrustLevel, ...]
    operation: str
    default_consumer_permission: Permission
    possible_consumer_permissions: tuple[Permission, ...]

    @property
    def default_permission(self) -> Permission:
        return self.default_consumer_permission

    @property
    def possible_permissions(self) -> tuple[Permission, ...]:
        return self.possible_consumer_permissions


@dataclass(frozen=True, slots=True)
class OwnerAccessControlEntry:
    """An owner ACE: the owner's choice for one (uid, domain, interface, operation), valid only
    within what the master (or mediator) entry above it makes possible."""

    uid: str
    domain: str
    interface_name: str
    required_trust_level: TrustLevel
    required_ace_change_trust_level: TrustLevel
    operation: str
    consumer_permission: Permission

    @property
    def permission(self) -> Permission:
        return self.consumer_permission


@dataclass(frozen=True, slots=True)
class MasterRegistrationControlEntry:
    """A master or mediator RCE: may ``uid`` register a provider of ``interface_name`` on
    ``domain``."""

    uid: str
    domain: str
    interface_name: str
    default_required_trust_level: TrustLevel
    possible_required_trust_levels: tuple[TrustLevel, ...]
    default_required_control_entry_change_trust_level: TrustLevel
    possible_required_control_entry_change_trust_levels: tuple[TrustLevel, ...]
    default_provider_permission: Permission
    possible_provider_permissions: tuple[Permission, ...]

    @property
    def default_permission(self) -> Permission:
        return self.default_provider_permission

    @property
    def possible_permissions(self) -> tuple[Permission, ...]:
        return self.possible_provider_permissions


@dataclass(frozen=True, slots=True)
class OwnerRegistrationControlEntry:
    """An owner RCE: the owner's choice for one (uid, domain, interface)."""

    uid: str
    domain: str
    interface_name: str
    required_trust_level: TrustLevel
    required_ace_change_trust_level: TrustLevel
    provider_permission: Permission

    @property
    def permission(self) -> Permission:
        return self.provider_permission


@dataclass(frozen=True, slots=True)
class DomainRoleEntry:
    """``uid`` holds ``role`` for the listed domains (exact names; ``"*"`` is every domain)."""

    uid: str
    domains: tuple[str, ...]
    role: Role


MasterEntry = MasterAccessControlEntry | MasterRegistrationControlEntry
OwnerEntry = OwnerAccessControlEntry | OwnerRegistrationControlEntry
AccessEntry = MasterAccessControlEntry | OwnerAccessControlEntry
RegistrationEntry = MasterRegistrationControlEntry | OwnerRegistrationControlEntry
ControlEntry = MasterEntry | OwnerEntry
AnyEntry = ControlEntry | DomainRoleEntry


@dataclass(frozen=True, slots=True)
class AccessTables:
    """The seven tables of one provisioning file (or of a whole store), in order."""

    master_access: tuple[MasterAccessControlEntry, ...] = ()
    mediator_access: tuple[MasterAccessControlEntry, ...] = ()
    owner_access: tuple[OwnerAccessControlEntry, ...] = ()
    master_registration: tuple[MasterRegistrationControlEntry, ...] = ()
    mediator_registration: tuple[MasterRegistrationControlEntry, ...] = ()
    owner_registration: tuple[OwnerRegistrationControlEntry, ...] = ()
    domain_roles: tuple[DomainRoleEntry, ...] = ()

    def __len__(self) -> int:
        return sum(len(getattr(self, f.name)) for f in fields(self))


class AccessFileError(ValueError):
    """A provisioning file that cannot be taken: the message names the file, the entry
    (``masterAccessTable[3]``) and the field."""


# -- the format ---------------------------------------------------------------------------------

#: a field's kind: how its JSON value is read and written
_STR, _STR_LIST, _TRUST, _TRUST_LIST, _PERM, _PERM_LIST, _ROLE = range(7)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


_KINDS: dict[str, int] = {
    "uid": _STR, "domain": _STR, "interface_name": _STR, "operation": _STR,
    "domains": _STR_LIST, "role": _ROLE,
    "default_required_trust_level": _TRUST, "required_trust_level": _TRUST,
    "default_required_control_entry_change_trust_level": _TRUST,
    "required_ace_change_trust_level": _TRUST,
    "possible_required_trust_levels": _TRUST_LIST,
    "possible_required_control_entry_change_trust_levels": _TRUST_LIST,
    "default_consumer_permission": _PERM, "consumer_permission": _PERM,
    "default_provider_permission": _PERM, "provider_permission": _PERM,
    "possible_consumer_permissions": _PERM_LIST, "possible_provider_permissions": _PERM_LIST,
}


@dataclass(frozen=True, slots=True)
class _Kind:
    """One entry type as the format has it: joynr's type name, its fields in order."""

    cls: type[AnyEntry]
    type_name: str
    fields: tuple[tuple[str, str, int], ...]  # (JSON name, attribute, kind)


def _kind_of(cls: type[AnyEntry]) -> _Kind:
    return _Kind(cls, TYPE_PREFIX + cls.__name__,
                 tuple((_camel(f.name), f.name, _KINDS[f.name]) for f in fields(cls)))


_MASTER_ACE = _kind_of(MasterAccessControlEntry)
_OWNER_ACE = _kind_of(OwnerAccessControlEntry)
_MASTER_RCE = _kind_of(MasterRegistrationControlEntry)
_OWNER_RCE = _kind_of(OwnerRegistrationControlEntry)
_ROLE_ENTRY = _kind_of(DomainRoleEntry)

#: JSON table name -> (attribute of AccessTables, entry kind), in joynr's order
_TABLES: dict[str, tuple[str, _Kind]] = {
    "masterAccessTable": ("master_access", _MASTER_ACE),
    "mediatorAccessTable": ("mediator_access", _MASTER_ACE),
    "ownerAccessTable": ("owner_access", _OWNER_ACE),
    "masterRegistrationTable": ("master_registration", _MASTER_RCE),
    "mediatorRegistrationTable": ("mediator_registration", _MASTER_RCE),
    "ownerRegistrationTable": ("owner_registration", _OWNER_RCE),
    "domainRoleTable": ("domain_roles", _ROLE_ENTRY),
}
TABLE_NAMES = tuple(_TABLES)
#: attribute of AccessTables -> joynr's JSON table name
TABLE_ATTRIBUTES: dict[str, str] = {attr: name for name, (attr, _) in _TABLES.items()}


def _quote(value: object) -> str:
    text = repr(value)
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "..."


def _read_name(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{_quote(value)} is not a string")
    if len(value) > MAX_NAME_CHARS:
        raise ValueError(f"a string of {len(value)} characters, more than {MAX_NAME_CHARS}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON's "\ud800"): no file could hold it
        raise ValueError(f"{_quote(value)} is not Unicode text") from None
    return value


def _enum_reader(enum: type[Enum]) -> Callable[[object], Any]:
    names = ", ".join(member.value for member in enum)

    def read(value: object) -> Any:
        if isinstance(value, str) and value in enum.__members__:
            return enum[value]
        raise ValueError(f"{_quote(value)} is not one of {names}")
    return read


def _list_reader(item: Callable[[object], Any], bound: int) -> Callable[[object], Any]:
    def read(value: object) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise ValueError(f"{_quote(value)} is not a list")
        if len(value) > bound:
            raise ValueError(f"a list of {len(value)} values, more than {bound}")
        out = []
        for index, element in enumerate(value):
            try:
                out.append(item(element))
            except ValueError as error:
                raise ValueError(f"[{index}]: {error}") from None
        return tuple(out)
    return read


_READ_TRUST = _enum_reader(TrustLevel)
_READ_PERM = _enum_reader(Permission)
_READERS: dict[int, Callable[[object], Any]] = {
    _STR: _read_name,
    _STR_LIST: _list_reader(_read_name, MAX_ROLE_DOMAINS),
    _TRUST: _READ_TRUST,
    _TRUST_LIST: _list_reader(_READ_TRUST, MAX_ENUM_LIST),
    _PERM: _READ_PERM,
    _PERM_LIST: _list_reader(_READ_PERM, MAX_ENUM_LIST),
    _ROLE: _enum_reader(Role),
}


def _read_entry(kind: _Kind, element: object) -> AnyEntry:
    """One element of a table; ``ValueError`` with the field's name in front of the reason."""
    if not isinstance(element, dict):
        raise ValueError(f"{_quote(element)} is not an object")
    type_name = element.get("_typeName")
    if "_typeName" not in element:
        raise ValueError(f"_typeName: missing, {kind.type_name!r} expected")
    if type_name != kind.type_name:
        raise ValueError(f"_typeName: {_quote(type_name)} is not {kind.type_name!r}")
    values: dict[str, Any] = {}
    for json_name, attribute, field_kind in kind.fields:
        if json_name not in element:
            raise ValueError(f"{json_name}: missing")
        try:
            values[attribute] = _READERS[field_kind](element[json_name])
        except ValueError as error:
            raise ValueError(f"{json_name}: {error}") from None
    if len(element) != len(kind.fields) + 1:
        known = {name for name, _, _ in kind.fields} | {"_typeName"}
        unknown = sorted(str(key) for key in element if key not in known)
        raise ValueError(f"{_quote(unknown[0])}: not a field of {kind.type_name}")
    return kind.cls(**values)


def parse_tables(data: bytes | str, source: str) -> AccessTables:
    """The tables of one provisioning file; ``source`` names it in errors. Raises
    :class:`AccessFileError` on anything but a well-formed file within the bounds."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as error:  # JSONDecodeError, UnicodeDecodeError
        raise AccessFileError(f"{source}: not JSON: {error}") from None
    if not isinstance(document, dict):
        raise AccessFileError(
            f"{source}: not a JSON object with the tables {', '.join(TABLE_NAMES)}")
    for key in document:
        if key not in _TABLES:
            raise AccessFileError(f"{source}: {_quote(key)} is not one of the tables "
                                  f"{', '.join(TABLE_NAMES)}")
    count = 0
    for table_name in _TABLES:
        elements = document.get(table_name, [])
        if not isinstance(elements, list):
            raise AccessFileError(f"{source}: {table_name}: {_quote(elements)} is not a list")
        count += len(elements)
    if count > MAX_FILE_ENTRIES:
        raise AccessFileError(f"{source}: {count} entries, more than {MAX_FILE_ENTRIES}")
    tables: dict[str, tuple[AnyEntry, ...]] = {}
    for table_name, (attribute, kind) in _TABLES.items():
        elements = document.get(table_name, [])
        entries = []
        for index, element in enumerate(elements):
            try:
                entries.append(_read_entry(kind, element))
            except ValueError as error:
                raise AccessFileError(f"{source}: {table_name}[{index}].{error}") from None
        tables[attribute] = tuple(entries)
    return AccessTables(**tables)  # type: ignore[arg-type]


def _write_value(value: object) -> object:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_write_value(item) for item in value]
    return value


def _write_entry(kind: _Kind, entry: AnyEntry) -> dict[str, object]:
    out: dict[str, object] = {"_typeName": kind.type_name}
    for json_name, attribute, _ in kind.fields:
        out[json_name] = _write_value(getattr(entry, attribute))
    return out


def dump_tables(tables: AccessTables) -> str:
    """The tables in the provisioning format: all seven arrays, ``"_typeName"`` first."""
    document = {table_name: [_write_entry(kind, entry) for entry in getattr(tables, attribute)]
                for table_name, (attribute, kind) in _TABLES.items()}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def entry_problem(entry: AnyEntry) -> str | None:
    """What makes an entry built in code (an editor's update) unfit for a table, or None: the
    same types and bounds a file's entry is read with."""
    kind = {MasterAccessControlEntry: _MASTER_ACE, OwnerAccessControlEntry: _OWNER_ACE,
            MasterRegistrationControlEntry: _MASTER_RCE,
            OwnerRegistrationControlEntry: _OWNER_RCE, DomainRoleEntry: _ROLE_ENTRY}.get(
                type(entry))
    if kind is None:
        return f"{type(entry).__name__} is not an entry type"
    try:
        again = _read_entry(kind, _write_entry(kind, entry))
    except (ValueError, TypeError, AttributeError) as error:
        return str(error)
    if again != entry:  # a field of another type that writes the same (a str for an enum)
        return "a field of the wrong type"
    return None


def all_entries(tables: AccessTables) -> Iterable[AnyEntry]:
    """Every entry of the seven tables, table by table."""
    for f in fields(tables):
        yield from getattr(tables, f.name)

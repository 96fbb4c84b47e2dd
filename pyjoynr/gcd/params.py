"""Shared entry parameters of the GCD's in-memory index (pure: no I/O).

Rows whose entry parameters are identical - every field of :class:`gcd.store.StoredEntry`
except ``gbid`` (:data:`HASHED_FIELDS`) - share one immutable :class:`SharedParams` object in
memory (a participant registered in several GBIDs has one row per GBID with the same
parameters). A :class:`ParamsTable` finds the object by its content and counts the keys that
use it; the last key to go frees it.

Finding an object by content: the table is a dict keyed by the objects themselves, whose
``hash()`` is Python's hash of the field values and whose equality is exact - every field
equal *and of the same type* (:meth:`SharedParams.__eq__`), so ``1``, ``True`` and ``"1"``
never meet in one object, and no two parameter sets are one key. That exact typed key is the
identity used to intern; the canonical hash below is its portable, stable form (the same bytes
in every process and version), computed only where it is asked for - never on a load, a change
or a lookup (it was most of the cost of loading a row).

The canonical hash (:func:`params_digest`) is SHA-256 over typed, length-prefixed fields in the
fixed order of :data:`HASHED_FIELDS`: a header (``gcd.params/1`` and the number of fields), then
per field a type tag byte (``s`` text as UTF-8, ``i`` an integer as minimal signed big-endian
two's complement, ``b`` a bool as one byte, ``n`` None), a 4-byte big-endian length and the
payload. No two different parameter sets give the same input (no ambiguous concatenation, and
``1``, ``True`` and ``"1"`` differ by their tags), and one parameter set always gives the same
input. Two objects are the same parameters only when every field is equal with the same type
(:meth:`SharedParams.__eq__`); a hash only finds the candidate.

Every field of StoredEntry is declared either hashed (:data:`HASHED_FIELDS`) or unhashed
(:data:`UNHASHED_FIELDS`); a test fails when the entry grows a field that is in neither.
"""

from __future__ import annotations

import hashlib
import operator
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, cast, get_args

from pyjoynr.gcd.store import StoredEntry, entry_of, new_entry

__all__ = [
    "HASHED_FIELDS",
    "INTERNED_FIELDS",
    "PROFILE_FIELDS",
    "UNHASHED_FIELDS",
    "Found",
    "ParamsTable",
    "Profile",
    "SharedParams",
    "canonical_bytes",
    "entry_of_found",
    "found_of",
    "params_digest",
    "params_of_record",
]

#: the fields of StoredEntry that make up the shared parameters, in canonical hash order
HASHED_FIELDS: Final = (
    "participant_id",
    "domain",
    "interface_name",
    "major_version",
    "minor_version",
    "priority",
    "scope",
    "supports_on_change",
    "custom_parameters",
    "last_seen_ms",
    "expiry_ms",
    "public_key_id",
    "topic",
    "cluster_controller_id",
)
#: the fields of StoredEntry that are not part of the shared parameters (the key's GBID; the
#: provider's address is MqttAddress(gbid, topic), so its GBID is this one too)
UNHASHED_FIELDS: Final = frozenset({"gbid"})
#: text fields whose values repeat across many rows: kept once in memory (sys.intern)
INTERNED_FIELDS: Final = frozenset({"domain", "interface_name", "scope", "custom_parameters",
                                    "public_key_id", "topic", "cluster_controller_id"})

_HEADER: Final = b"gcd.params/1" + len(HASHED_FIELDS).to_bytes(2, "big")
_values = operator.attrgetter(*HASHED_FIELDS)
_INTERN_AT: Final = tuple(i for i, name in enumerate(HASHED_FIELDS) if name in INTERNED_FIELDS)


def _encode(value: object) -> bytes:
    if type(value) is str:
        payload = value.encode("utf-8", "surrogatepass")
        tag = b"s"
    elif type(value) is bool:
        payload = b"\x01" if value else b"\x00"
        tag = b"b"
    elif type(value) is int:
        payload = value.to_bytes(value.bit_length() // 8 + 1, "big", signed=True)
        tag = b"i"
    elif value is None:
        payload = b""
        tag = b"n"
    else:
        raise TypeError(f"entry parameters hold str, int, bool or None, not {type(value)!r}")
    return tag + len(payload).to_bytes(4, "big") + payload


#: fields whose values repeat across rows: their encodings are kept (per type, so that 1 and
#: True never share one), up to _CACHE_LIMIT values per type before the cache starts over
_CACHED_AT: Final = frozenset(i for i, name in enumerate(HASHED_FIELDS)
                              if name in INTERNED_FIELDS
                              or name in ("major_version", "minor_version", "priority"))
_CACHE_LIMIT: Final = 65_536
_str_cache: dict[str, bytes] = {}
_int_cache: dict[int, bytes] = {}


def canonical_bytes(values: Sequence[object]) -> bytes:
    """The canonical hash input of parameter values given in :data:`HASHED_FIELDS` order."""
    if len(values) != len(HASHED_FIELDS):
        raise ValueError(f"{len(HASHED_FIELDS)} parameter values expected, not {len(values)}")
    parts = [_HEADER]
    append = parts.append
    cached_at, str_cache, int_cache = _CACHED_AT, _str_cache, _int_cache
    for i, value in enumerate(values):
        if i in cached_at:
            kind = type(value)
            cache: dict[Any, bytes] | None = (str_cache if kind is str else
                                              int_cache if kind is int else None)
            if cache is not None:
                encoded = cache.get(value)
                if encoded is None:
                    encoded = _encode(value)
                    if len(cache) >= _CACHE_LIMIT:
                        cache.clear()
                    cache[value] = encoded
                append(encoded)
                continue
        append(_encode(value))
    return b"".join(parts)


def params_digest(entry: StoredEntry | SharedParams) -> bytes:
    """The canonical content hash (SHA-256, 32 bytes) of an entry's shared parameters."""
    return hashlib.sha256(canonical_bytes(_values(entry))).digest()


class SharedParams:
    """The parameters of one or more rows (all fields but ``gbid``): immutable, shared.

    Equal (``==``) to another only when every field is equal and of the same type; its
    ``hash()`` is Python's hash of the field values (equal parameters, equal hashes; values
    that Python hashes alike, such as ``1`` and ``True``, are told apart by ``==``). Its
    canonical, portable hash is :func:`params_digest`. Its reference count belongs to the
    ParamsTable that made it. Fields hold str, int, bool or None only (TypeError)."""

    __slots__ = (*HASHED_FIELDS, "_refs")

    # the fields, for type checkers (the slots above hold them)
    participant_id: str
    domain: str
    interface_name: str
    major_version: int
    minor_version: int
    priority: int
    scope: str
    supports_on_change: bool
    custom_parameters: str
    last_seen_ms: int
    expiry_ms: int
    public_key_id: str
    topic: str
    cluster_controller_id: str
    _refs: int

    def __init__(self, values: Sequence[Any]) -> None:
        if len(values) != len(HASHED_FIELDS):
            raise ValueError(f"{len(HASHED_FIELDS)} parameter values expected, "
                             f"not {len(values)}")
        if not _VALUE_TYPES.issuperset(map(type, values)):
            bad = next(v for v in values if type(v) not in _VALUE_TYPES)
            raise TypeError(f"entry parameters hold str, int, bool or None, not {type(bad)!r}")
        _fill(self, values)

    @classmethod
    def of(cls, entry: StoredEntry) -> SharedParams:
        """The parameters of ``entry`` (a new object, not yet shared)."""
        return cls(_values(entry))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"SharedParams are immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"SharedParams are immutable (cannot delete {name!r})")

    def values(self) -> tuple[Any, ...]:
        """The field values in :data:`HASHED_FIELDS` order."""
        return _values(self)

    def matches(self, entry: StoredEntry | SharedParams) -> bool:
        """Whether ``entry`` has exactly these parameters (same values, same types)."""
        return same_values(_values(self), _values(entry))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SharedParams):
            return NotImplemented
        return self is other or same_values(_values(self), _values(other))

    def __hash__(self) -> int:
        return hash(_values(self))

    @property
    def refs(self) -> int:
        """How many keys of its table use this object."""
        return self._refs

    def to_entry(self, gbid: str) -> StoredEntry:
        """The stored entry of these parameters in ``gbid``."""
        return entry_of(gbid, self)

    def __repr__(self) -> str:
        return f"SharedParams({self.participant_id!r}, {self.domain!r}, " \
               f"{self.interface_name!r}, refs={self._refs})"


_VALUE_TYPES: Final = frozenset({str, int, bool, type(None)})


def _slot_stores(source: str, offset: int, *, intern: bool = True) -> list[str]:
    """The lines that set the slots of ``self`` (a new SharedParams) from ``source[offset:]``
    (text fields of INTERNED_FIELDS interned unless ``intern`` is false, the reference count
    0), spelled out field by field through the slots' descriptors (its ``__setattr__``
    refuses; this is several times faster than a loop of ``object.__setattr__``)."""
    lines = []
    for i, name in enumerate(HASHED_FIELDS):
        value = f"{source}[{i + offset}]"
        if intern and i in _INTERN_AT:
            lines.append(f"    v = {value}")
            value = "intern(v) if type(v) is str else v"
        lines.append(f"    set_{name}(self, {value})")
    lines.append("    set__refs(self, 0)")
    return lines


def _compiled(lines: list[str], name: str) -> Any:
    namespace: dict[str, Any] = {f"set_{field}": getattr(SharedParams, field).__set__
                                 for field in (*HASHED_FIELDS, "_refs")}
    namespace.update(intern=sys.intern, new=object.__new__, SharedParams=SharedParams)
    exec("\n".join(lines), namespace)  # the names are the slots' (identifiers)
    return namespace[name]


#: ``_fill(params, values)``: the slots of a new SharedParams from its values
_fill: Final = cast(Callable[[SharedParams, Sequence[Any]], None], _compiled(
    ["def _fill(self, values):", *_slot_stores("values", 0)], "_fill"))
#: a new SharedParams read straight from a store record (the gbid first, then HASHED_FIELDS
#: in order: ``record[1:15]``)
_params_of_record: Final = cast(Callable[[Sequence[Any]], SharedParams], _compiled(
    ["def params_of_record(record):", "    self = new(SharedParams)",
     *_slot_stores("record", 1), "    return self"], "params_of_record"))
#: the fields of a profile (gcd.index): all of HASHED_FIELDS but the participant id and the
#: two times, in their order
PROFILE_FIELDS: Final = tuple(name for name in HASHED_FIELDS
                              if name not in ("participant_id", "last_seen_ms", "expiry_ms"))


#: the parameters a row shares with the other rows of its kind: the values of
#: :data:`PROFILE_FIELDS` in their order (a plain tuple: read by unpacking it, which is one
#: step in C). The index keeps one per distinct set of them and its rows refer to it; a
#: lookup's answer hands that same object out (:data:`Found`), so an answer makes no
#: parameter object.
Profile = tuple[str, str, int, int, int, str, bool, str, str, str, str]
assert len(get_args(Profile)) == len(PROFILE_FIELDS)

#: a looked-up row, as the index answers a lookup and the GCD provider reads it:
#: ``(participant_id, gbid, last_seen_ms, expiry_ms, profile)``. A plain tuple, made once per
#: row of an answer (the one object an answer makes per row); a list of them sorts by
#: (participant_id, gbid) without a key (a key is one row: the comparison ends there).
Found = tuple[str, str, int, int, Profile]
_profile_values: Final = operator.attrgetter(*PROFILE_FIELDS)


def found_of(entry: StoredEntry) -> Found:
    """The looked-up row of a stored entry (a new Profile: for rows not in an index)."""
    return (entry.participant_id, entry.gbid, entry.last_seen_ms, entry.expiry_ms,
            _profile_values(entry))


def entry_of_found(found: Found) -> StoredEntry:
    """The StoredEntry of a looked-up row."""
    participant_id, gbid, last_seen_ms, expiry_ms, profile = found
    (domain, interface_name, major_version, minor_version, priority, scope, supports_on_change,
     custom_parameters, public_key_id, topic, cluster_controller_id) = profile
    return new_entry(gbid, participant_id, domain, interface_name, major_version, minor_version,
                     priority, scope, supports_on_change, custom_parameters, last_seen_ms,
                     expiry_ms, public_key_id, topic, cluster_controller_id)


_set_refs: Final = cast(Callable[[SharedParams, int], None], SharedParams._refs.__set__)  # type: ignore[attr-defined]


def params_of_record(record: Sequence[Any]) -> SharedParams:
    """A new SharedParams (not yet shared) of a store record: the gbid, then the values of
    :data:`HASHED_FIELDS` in their order, then anything (a load's version, bucket and row
    hash). Fields hold str, int, bool or None only (TypeError), as :class:`SharedParams`."""
    if not _VALUE_TYPES.issuperset(map(type, record)):
        bad = next(v for v in record if type(v) not in _VALUE_TYPES)
        raise TypeError(f"entry parameters hold str, int, bool or None, not {type(bad)!r}")
    if len(record) <= len(HASHED_FIELDS):
        raise ValueError(f"a record holds the gbid and {len(HASHED_FIELDS)} parameter values, "
                         f"not {len(record)} values")
    return _params_of_record(record)


def same_values(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Equal field by field, and of the same types (``1``, ``True`` and ``1.0`` differ)."""
    return a == b and list(map(type, a)) == list(map(type, b))


class ParamsTable:
    """The shared parameter objects of one index, found by content hash, reference-counted.

    :meth:`acquire` gives the one object with an entry's parameters (made on first use) and
    counts one more key using it; :meth:`release` counts one less and frees the object when no
    key uses it any more. Callers acquire once per key that holds the object and release once
    when the key lets it go (a key replaced by identical parameters keeps its object and neither
    acquires nor releases)."""

    __slots__ = ("_objects", "_refs_total")

    def __init__(self) -> None:
        self._objects: dict[SharedParams, SharedParams] = {}
        self._refs_total = 0

    def acquire(self, entry: StoredEntry | SharedParams, *,
                participant_id: str | None = None) -> SharedParams:
        """The shared object with the parameters of ``entry``, counted once more.

        ``participant_id``: a string equal to the entry's participant id that the caller
        already keeps (so that a participant's id is one object in memory, not one per
        version of its rows)."""
        values = _values(entry)
        if participant_id is not None:
            if participant_id != values[0]:
                raise ValueError(f"participant_id {participant_id!r} is not the entry's "
                                 f"({values[0]!r})")
            values = (participant_id, *values[1:])
        return self.adopt(SharedParams(values))

    def adopt(self, candidate: SharedParams) -> SharedParams:
        """:meth:`acquire` of an object the caller made (:func:`params_of_record`) and holds
        nowhere else: the table's object with its parameters (``candidate`` itself when the
        table had none), counted once more. (A load's way: no second object is made.)"""
        shared = self._objects.setdefault(candidate, candidate)
        _set_refs(shared, shared._refs + 1)
        self._refs_total += 1
        return shared

    def release(self, params: SharedParams) -> None:
        refs = params._refs - 1
        if refs < 0:
            raise ValueError(f"{params!r} is not held by any key")
        if refs == 0:
            held = self._objects.pop(params, None)
            if held is not params:
                if held is not None:
                    self._objects[held] = held
                raise ValueError(f"{params!r} is not held in this table")
        object.__setattr__(params, "_refs", refs)
        self._refs_total -= 1

    def find(self, entry: StoredEntry | SharedParams) -> SharedParams | None:
        """The shared object with the parameters of ``entry``, if any key uses one."""
        return self._objects.get(SharedParams(_values(entry)))

    def __len__(self) -> int:
        return len(self._objects)

    def __iter__(self) -> Iterator[SharedParams]:
        return iter(self._objects)

    @property
    def total_refs(self) -> int:
        """The sum of the reference counts of all objects (the keys holding one)."""
        return self._refs_total

    def clear(self) -> None:
        for params in self._objects:
            object.__setattr__(params, "_refs", 0)
        self._objects.clear()
        self._refs_total = 0

"""Shared entry parameters of the GCD index (gcd/params.py), as data: canonical hash (golden
vectors, ambiguity cases, hash ambiguity), field classification, sharing and
reference counts."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.gcd.params import (
    HASHED_FIELDS,
    INTERNED_FIELDS,
    UNHASHED_FIELDS,
    ParamsTable,
    SharedParams,
    canonical_bytes,
    params_digest,
)
from pyjoynr.gcd.store import StoredEntry


def entry(**changes: Any) -> StoredEntry:
    base = StoredEntry(gbid="joynrdefaultgbid", participant_id="p-1", domain="d",
                       interface_name="i", major_version=1, minor_version=0, priority=0,
                       scope="GLOBAL", supports_on_change=False, custom_parameters="[]",
                       last_seen_ms=0, expiry_ms=1, public_key_id="", topic="joynr/cc/cc-1",
                       cluster_controller_id="cc-1")
    return dataclasses.replace(base, **changes)


def fresh(value: Any) -> Any:
    """An equal value in a new object (as a database driver gives it)."""
    if type(value) is str:
        return "".join(list(value)) if len(value) != 1 else (value + "x")[:1]
    if type(value) is int:
        return int(str(value))
    return value


# -- classification: every field of StoredEntry is hashed or declared unhashed ----------------


def unclassified(field_names: set[str]) -> set[str]:
    return field_names - set(HASHED_FIELDS) - UNHASHED_FIELDS


def test_every_entry_field_is_hashed_or_declared_unhashed() -> None:
    names = {f.name for f in dataclasses.fields(StoredEntry)}
    assert unclassified(names) == set(), "classify the new field in gcd/params.py"
    assert not set(HASHED_FIELDS) & UNHASHED_FIELDS
    assert len(set(HASHED_FIELDS)) == len(HASHED_FIELDS)
    assert set(HASHED_FIELDS) <= names and names >= UNHASHED_FIELDS  # no stale names
    assert {"gbid"} == UNHASHED_FIELDS
    assert set(HASHED_FIELDS) >= INTERNED_FIELDS


def test_an_unclassified_field_fails_the_classification() -> None:
    # what the test above does when StoredEntry grows a field nobody classified
    @dataclasses.dataclass(frozen=True)
    class Grown(StoredEntry):  # type: ignore[misc]
        new_field: str = ""

    names = {f.name for f in dataclasses.fields(Grown)}
    assert unclassified(names) == {"new_field"}


# -- golden vectors: computed once, frozen --------------------------------------------------

GOLDEN = [
    (StoredEntry("joynrdefaultgbid", "p-1", "d", "i", 1, 0, 0, "GLOBAL", False, "[]", 0, 1, "",
                 "joynr/cc/cc-1", "cc-1"),
     "d127e64b6acc2359e467de755296a0895047f7819c0b8741fc5d6b32ead8babf"),
    (StoredEntry("gbid-2", "0b8e5a53-7c5c-4f32-9b42-2d5e2e5f0c11", "com.example.vehicle",
                 "radio/Radio", 47, 11, -3, "GLOBAL", True, '[["k","v"]]', 1790000000000,
                 1793628800000, "key-7", "joynr/cc/cc-\u00e9", "cc-\u00e9"),
     "297cd109f395b5dc842c736c0f82c0b6da6dc43713695bb001220ce7c9b44515"),
    (StoredEntry("g", "", "", "", 0, 0, 2**63 - 1, "LOCAL", False, "", -2**63, 2**63 - 1, "",
                 "", ""),
     "16b6844efeb1d3cc3ed7e025d03f8d2857d916f33cfabaf0a711d8445f4bfa8d"),
]


@pytest.mark.parametrize(("stored", "digest"), GOLDEN)
def test_golden_vectors(stored: StoredEntry, digest: str) -> None:
    assert params_digest(stored).hex() == digest
    assert params_digest(SharedParams.of(stored)).hex() == digest
    # the gbid is not part of the parameters
    assert params_digest(dataclasses.replace(stored, gbid="other")).hex() == digest


def test_canonical_input_layout() -> None:
    values = [getattr(GOLDEN[0][0], name) for name in HASHED_FIELDS]
    assert canonical_bytes(values) == (
        b"gcd.params/1\x00\x0e"
        b"s\x00\x00\x00\x03p-1" b"s\x00\x00\x00\x01d" b"s\x00\x00\x00\x01i"
        b"i\x00\x00\x00\x01\x01" b"i\x00\x00\x00\x01\x00" b"i\x00\x00\x00\x01\x00"
        b"s\x00\x00\x00\x06GLOBAL" b"b\x00\x00\x00\x01\x00" b"s\x00\x00\x00\x02[]"
        b"i\x00\x00\x00\x01\x00" b"i\x00\x00\x00\x01\x01" b"s\x00\x00\x00\x00"
        b"s\x00\x00\x00\rjoynr/cc/cc-1" b"s\x00\x00\x00\x04cc-1")
    assert params_digest(GOLDEN[0][0]) == hashlib.sha256(canonical_bytes(values)).digest()


# -- hazard 7: no two parameter sets share a hash, no parameter set has two -------------------

AMBIGUOUS = [
    # separators inside values
    (entry(domain="a|b", interface_name="c"), entry(domain="a", interface_name="b|c")),
    (entry(domain="ab", interface_name="c"), entry(domain="a", interface_name="bc")),
    (entry(domain="a\0", interface_name="b"), entry(domain="a", interface_name="\0b")),
    # a value ending in the next field's type tag (only the lengths tell them apart)
    (entry(domain="as", interface_name="b"), entry(domain="a", interface_name="sb")),
    # a value that looks like the framing of the next field
    (entry(domain="a", interface_name="b"),
     entry(domain="as\x00\x00\x00\x01b", interface_name="")),
    # empty values moved between fields
    (entry(public_key_id="", topic="x"), entry(public_key_id="x", topic="")),
    (entry(custom_parameters=""), entry(custom_parameters="[]")),
    (entry(public_key_id=""), entry(public_key_id=" ")),
    (entry(participant_id=""), entry(participant_id="\0")),
    # int vs bool vs str of one value
    (entry(supports_on_change=True), entry(supports_on_change=1)),  # type: ignore[arg-type]
    (entry(supports_on_change=False), entry(supports_on_change=0)),  # type: ignore[arg-type]
    (entry(major_version=1), entry(major_version=True)),
    (entry(priority=1), entry(priority="1")),  # type: ignore[arg-type]
    (entry(domain="1"), entry(domain=1)),  # type: ignore[arg-type]
    # integers of different widths and signs
    (entry(priority=255), entry(priority=-1)),
    (entry(priority=0), entry(priority=256)),
    (entry(last_seen_ms=2**63), entry(last_seen_ms=-2**63)),
    # integers moved between fields
    (entry(major_version=1, minor_version=0), entry(major_version=0, minor_version=1)),
    (entry(last_seen_ms=5, expiry_ms=6), entry(last_seen_ms=6, expiry_ms=5)),
    # precomposed vs decomposed text (the store compares by code point)
    (entry(domain="\u00e9"), entry(domain="e\u0301")),
]


@pytest.mark.parametrize(("a", "b"), AMBIGUOUS)
def test_different_parameters_never_share_a_hash(a: StoredEntry, b: StoredEntry) -> None:
    assert params_digest(a) != params_digest(b)
    assert SharedParams.of(a) != SharedParams.of(b)
    table = ParamsTable()
    assert table.acquire(a) is not table.acquire(b)
    assert len(table) == 2


_text = st.text(max_size=6)
_number = st.one_of(st.integers(-2**63, 2**63 - 1), st.booleans())
_entries = st.builds(
    StoredEntry, gbid=st.sampled_from(["g1", "g2"]), participant_id=_text, domain=_text,
    interface_name=_text, major_version=_number, minor_version=_number, priority=_number,
    scope=st.sampled_from(["GLOBAL", "LOCAL"]), supports_on_change=st.one_of(st.booleans(),
                                                                            st.integers(0, 1)),
    custom_parameters=_text, last_seen_ms=_number, expiry_ms=_number, public_key_id=_text,
    topic=_text, cluster_controller_id=_text)


def typed(stored: StoredEntry) -> tuple[tuple[type, Any], ...]:
    return tuple((type(getattr(stored, n)), getattr(stored, n)) for n in HASHED_FIELDS)


@given(_entries, _entries)
def test_hash_equal_exactly_when_parameters_equal(a: StoredEntry, b: StoredEntry) -> None:
    same = typed(a) == typed(b)
    assert (params_digest(a) == params_digest(b)) == same
    assert (SharedParams.of(a) == SharedParams.of(b)) == same


@given(_entries, st.sampled_from(["g1", "g2", "other"]))
def test_one_parameter_set_has_one_hash(a: StoredEntry, gbid: str) -> None:
    # fresh objects for every field, another gbid, through the encoding caches or not
    copy = StoredEntry(gbid, *[fresh(getattr(a, n)) for n in HASHED_FIELDS])
    assert params_digest(copy) == params_digest(a) == params_digest(a)
    assert hash(SharedParams.of(copy)) == hash(SharedParams.of(a))
    assert SharedParams.of(copy) == SharedParams.of(a)
    assert SharedParams.of(a).to_entry(a.gbid) == a


# -- sharing, interning, reference counts -------------------------------------------------------


def test_identical_parameters_share_one_object_counted_per_key() -> None:
    table = ParamsTable()
    in_g1 = table.acquire(entry(gbid="g1"))
    in_g2 = table.acquire(entry(gbid="g2", participant_id=fresh("p-1"), domain=fresh("d")))
    assert in_g1 is in_g2
    assert in_g1.refs == 2 and table.total_refs == 2 and len(table) == 1
    other = table.acquire(entry(priority=5))
    assert other is not in_g1 and len(table) == 2 and table.total_refs == 3
    table.release(in_g1)
    assert in_g1.refs == 1 and table.find(entry()) is in_g1
    table.release(in_g2)
    assert in_g1.refs == 0 and table.find(entry()) is None  # the last key freed it
    assert len(table) == 1 and table.total_refs == 1
    with pytest.raises(ValueError):
        table.release(in_g1)  # not held any more
    assert len(table) == 1 and table.total_refs == 1
    table.release(other)
    assert len(table) == 0 and table.total_refs == 0


def test_releasing_an_equal_object_of_another_table_changes_nothing() -> None:
    ours, theirs = ParamsTable(), ParamsTable()
    held = ours.acquire(entry())
    foreign = theirs.acquire(entry())
    with pytest.raises(ValueError):
        ours.release(foreign)
    assert ours.find(entry()) is held and held.refs == 1 and len(ours) == 1


def test_repeated_text_is_interned() -> None:
    table = ParamsTable()
    a = table.acquire(entry(participant_id="a", domain="".join(["dom", "ain"]),
                            topic="".join(["t", "1"]), cluster_controller_id="".join("cc")))
    b = table.acquire(entry(participant_id="b", domain="".join(["doma", "in"]),
                            topic="".join(["t", "1"]), cluster_controller_id="".join("cc")))
    for name in INTERNED_FIELDS:
        assert getattr(a, name) is getattr(b, name), name


def test_shared_parameters_are_immutable() -> None:
    params = SharedParams.of(entry())
    with pytest.raises(AttributeError):
        params.domain = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del params.domain
    with pytest.raises(AttributeError):
        params.gbid = "x"  # type: ignore[attr-defined]


def test_canonical_bytes_refuses_other_types_and_lengths() -> None:
    with pytest.raises(TypeError):
        params_digest(entry(priority=1.0))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        canonical_bytes(["a"])
    with pytest.raises(ValueError):
        ParamsTable().acquire(entry(), participant_id="someone else")
    # the table holds only what the canonical hash can encode, though it does not compute it
    for bad in (entry(priority=1.0), entry(domain=b"d"), entry(custom_parameters=[])):  # type: ignore[arg-type]
        table = ParamsTable()
        with pytest.raises(TypeError):
            table.acquire(bad)
        assert len(table) == 0 and table.total_refs == 0


def test_values_python_hashes_alike_are_different_parameters_in_one_table() -> None:
    # hash(1) == hash(True) == hash(1.0): the intern key tells them apart by type
    table = ParamsTable()
    one, true = entry(priority=1), entry(priority=True)
    assert hash(SharedParams.of(one)) == hash(SharedParams.of(true))
    a, b = table.acquire(one), table.acquire(true)
    assert a is not b and len(table) == 2
    assert table.find(entry(priority=1)) is a and table.find(entry(priority=True)) is b
    table.release(a)
    assert table.find(one) is None and table.find(true) is b

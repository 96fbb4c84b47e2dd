"""The access store (cluster_controller.access.store): lookup, decisions, editor changes.

Rows P1-P13 are the decisions of joynr's store-backed access controller tests, each run on an
empty store and on one holding only unrelated entries; S4-S33 its store tests as they apply
(S27 the nine-entry wildcard table, S28-S33 the update-validation sequences); the generic
exact / wildcard / only-wildcard cases run for the four entry kinds. Where joynr's C++ store
ignores the operation, the rows query the operation the entries name (the module docstring of
the store says why); the operation rule has its own tests. A randomized test holds the indexed
lookup against a reference that ranks every entry as the rules say.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyjoynr.cluster_controller.access.entries import (
    AccessTables,
    DomainRoleEntry,
    MasterAccessControlEntry,
    Permission,
    Role,
    parse_tables,
)
from pyjoynr.cluster_controller.access.store import MAX_STORE_ENTRIES, AccessStore, _Prefixes
from tests.support.access_entries import (
    ALL_LEVELS,
    ALL_PERMISSIONS,
    ASK,
    HIGH,
    LOW,
    MID,
    NO,
    NONE,
    YES,
    master_ace,
    master_rce,
    owner_ace,
    owner_rce,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "acl"


def unrelated_store() -> AccessStore:
    """Entries of other keys only (testUser on testDomain / this/is/a/test/interface)."""
    path = DATA / "unrelated.json"
    return AccessStore([parse_tables(path.read_bytes(), "unrelated.json")])


BASES = {"empty": AccessStore, "unrelated": unrelated_store}


# -- P: decisions of a store -------------------------------------------------------------------

def _p_entries(row: str) -> list[Any]:
    """The entries of a row, in the order they are stored (M/O x ACE/RCE of the fixture)."""
    aces = {
        "P3": [owner_ace(operation="operation1", permission=YES)],
        "P4": [owner_ace(operation="operation1", permission=YES),
               master_ace(operation="operation1", default=ASK, possible=(NO, ASK))],
        "P5": [owner_ace(operation="operation1", permission=ASK, level=MID),
               master_ace(operation="operation1")],
        "P6": [owner_ace(operation="*", permission=YES)],
        "P9": [owner_rce(permission=YES)],
        "P10": [owner_rce(permission=YES), master_rce(default=ASK, possible=(NO, ASK))],
        "P11": [owner_rce(permission=ASK, level=MID), master_rce()],
    }
    return aces.get(row, [])


def _store_with(base: str, entries: list[Any]) -> AccessStore:
    store = BASES[base]()
    for entry in entries:
        name = {"MasterAccessControlEntry": "master_access",
                "OwnerAccessControlEntry": "owner_access",
                "MasterRegistrationControlEntry": "master_registration",
                "OwnerRegistrationControlEntry": "owner_registration"}[type(entry).__name__]
        # stored as a file merges them: without validation
        store.replace([store.tables(), AccessTables(**{name: (entry,)})])
    return store


# (id, kind, trust level, expected)
P_ROWS = [
    ("P3-owner-ace", "consumer", HIGH, YES),
    ("P4-owner-ace-outside-master", "consumer", HIGH, NO),
    ("P5-owner-over-master-high", "consumer", HIGH, ASK),
    ("P5-owner-over-master-low", "consumer", LOW, NO),
    ("P6-owner-wildcard-operation", "consumer", HIGH, YES),
    ("P8-nothing-matches-ace", "consumer", HIGH, NO),
    ("P9-owner-rce", "provider", HIGH, YES),
    ("P10-owner-rce-outside-master", "provider", HIGH, NO),
    ("P11-owner-rce-over-master-high", "provider", HIGH, ASK),
    ("P11-owner-rce-over-master-low", "provider", LOW, NO),
    ("P13-nothing-matches-rce", "provider", HIGH, NO),
]


@pytest.mark.parametrize("base", list(BASES))
@pytest.mark.parametrize("row", P_ROWS, ids=[row[0] for row in P_ROWS])
def test_store_decisions(base: str, row: tuple[str, str, Any, Permission]) -> None:
    row_id, kind, level, expected = row
    store = _store_with(base, _p_entries(row_id.split("-")[0]))
    if kind == "consumer":
        got = store.consumer_permission("testUser", "domain1", "interface1", "operation1", level)
    else:
        got = store.provider_permission("testUser", "domain1", "interface1", level)
    assert got is expected


@pytest.mark.parametrize("base", list(BASES))
def test_p7_ambiguous_operations_need_the_operation(base: str) -> None:
    store = _store_with(base, [owner_ace(operation="operation1", permission=YES),
                               master_ace(operation="*")])
    assert store.interface_permission("testUser", "domain1", "interface1") is None
    assert store.consumer_permission("testUser", "domain1", "interface1", "operation1") is YES
    # another operation is the master's "*" entry alone (default NO)
    assert store.consumer_permission("testUser", "domain1", "interface1", "operation2") is NO


@pytest.mark.parametrize(("row", "domains", "expected"), [
    ("P1-listed-domain", ("domain1",), True),
    ("P2-wildcard-domain", ("*",), True),
    ("other-domain", ("domain2",), False),
    ("prefix-is-no-wildcard-for-roles", ("dom*",), False),
])
def test_has_role(row: str, domains: tuple[str, ...], expected: bool) -> None:
    store = AccessStore([AccessTables(domain_roles=(
        DomainRoleEntry("testUser", domains, Role.OWNER),))])
    assert store.has_role("testUser", "domain1", Role.OWNER) is expected
    assert not store.has_role("testUser", "domain1", Role.MASTER)
    assert not store.has_role("otherUser", "domain1", Role.OWNER)


# -- S: the store ------------------------------------------------------------------------------

E_M = master_ace("testUser1", "domain1", "interface1", "READ", level=LOW, levels=(LOW, MID),
                 change_levels=(LOW, MID), default=NO, possible=(NO, ASK))
E_O = owner_ace("testUser1", "domain1", "interface1", "READ", permission=NO)
DRE = DomainRoleEntry("testUser1", ("domain1",), Role.OWNER)


def test_s4_s5_s6_domain_roles() -> None:
    store = AccessStore([AccessTables(domain_roles=(DRE,))])
    assert store.domain_role("testUser1", Role.OWNER) == DRE
    changed = dataclasses.replace(DRE, domains=("domain1", "domain2"))
    assert store.update_domain_role(changed)
    assert store.domain_role("testUser1", Role.OWNER) == changed
    assert store.remove_domain_role("testUser1", Role.OWNER)
    assert store.domain_role("testUser1", Role.OWNER) is None
    assert not store.remove_domain_role("testUser1", Role.OWNER)


@pytest.mark.parametrize("table", ["master", "owner"])
def test_s7_s13_specific_uid_and_wildcard_uid(table: str) -> None:
    entry = E_M if table == "master" else E_O
    store = AccessStore()
    update = store.update_master_access if table == "master" else store.update_owner_access
    get = store.master_access if table == "master" else store.owner_access
    assert update(entry)  # type: ignore[arg-type]
    anyone = dataclasses.replace(entry, uid="*")
    assert update(anyone)  # type: ignore[arg-type]
    assert get("testUser1", "domain1", "interface1", "READ") == entry
    assert get("testUser2", "domain1", "interface1", "READ") == anyone
    assert len(store) == 2


def test_s8_wildcard_operation_answers_every_operation() -> None:
    entry = dataclasses.replace(E_M, operation="*")
    store = AccessStore([AccessTables(master_access=(entry,))])
    assert store.master_access("testUser1", "domain1", "interface1", "READ") == entry
    assert store.master_access("testUser1", "domain1", "interface1", "WRITE") == entry


@pytest.mark.parametrize("table", ["master", "owner"])
def test_s11_s12_s16_s17_update_and_remove(table: str) -> None:
    store = AccessStore()
    if table == "master":
        assert store.update_master_access(E_M)
        assert store.master_access("testUser1", "domain1", "interface1", "READ") == E_M
        assert store.remove_master_access("testUser1", "domain1", "interface1", "READ")
        assert store.master_access("testUser1", "domain1", "interface1", "READ") is None
        assert not store.remove_master_access("testUser1", "domain1", "interface1", "READ")
    else:
        assert store.update_owner_access(E_O)
        assert store.owner_access("testUser1", "domain1", "interface1", "READ") == E_O
        assert store.remove_owner_access("testUser1", "domain1", "interface1", "READ")
        assert store.owner_access("testUser1", "domain1", "interface1", "READ") is None
    assert len(store) == 0 and store.tables() == AccessTables()


def test_s19_s20_only_wildcard_operations() -> None:
    store = AccessStore()
    assert store.interface_permission("testUser1", "domain1", "interface1") is NO  # S20 empty
    store.update_owner_access(dataclasses.replace(E_O, operation="*"))
    store.update_master_access(dataclasses.replace(E_M, operation="*"))
    assert store.interface_permission("testUser1", "domain1", "interface1") is NO  # S20
    store.update_owner_access(E_O)  # S19: "*" and READ
    assert store.interface_permission("testUser1", "domain1", "interface1") is None


def test_s21_s22_allow_everything_and_deny_everything() -> None:
    everything = master_ace("*", "*", "*", "READ")
    store = AccessStore([AccessTables(master_access=(everything,))])
    assert store.master_access("joynr", "acl", "wildcards", "READ") == everything
    # the operation rule: an entry for READ does not answer another operation
    assert store.master_access("joynr", "acl", "wildcards", "*") is None
    assert AccessStore().master_access("user", "domain", "interfaceName", "*") is None
    assert AccessStore().consumer_permission("user", "domain", "interfaceName", "*") is NO


# S27: nine master entries for READ; query (uid, domain, interface) -> index expected
S27_ENTRIES = [master_ace(uid, domain, interface, "READ") for uid, domain, interface in [
    ("testUser1", "domain", "interfaceName"), ("testUser1", "domain", "interface*"),
    ("testUser1", "dom*", "interfaceName"), ("testUser1", "dom*", "interface*"),
    ("*", "domain", "interfaceName"), ("*", "domain", "interface*"),
    ("*", "dom*", "interfaceName"), ("*", "dom*", "interface*"), ("*", "*", "*")]]
S27_ROWS = [
    ("testUser1", "domain", "interfaceName", 0), ("testUser1", "domain", "interface1", 1),
    ("testUser1", "dom1", "interfaceName", 2), ("testUser1", "dom1", "interface1", 3),
    ("testUser2", "domain", "interfaceName", 4), ("testUser2", "domain", "interface1", 5),
    ("testUser2", "dom1", "interfaceName", 6), ("testUser2", "dom1", "interface1", 7),
    # beyond joynr's rows: only the last entry matches
    ("testUser2", "other", "other", 8),
]


@pytest.mark.parametrize("reverse", [False, True], ids=["stored-in-order", "stored-reversed"])
@pytest.mark.parametrize("row", S27_ROWS, ids=[f"S27-{r[0]}-{r[1]}-{r[2]}" for r in S27_ROWS])
def test_s27_closest_of_nine_wildcard_entries(row: tuple[str, str, str, int],
                                              reverse: bool) -> None:
    uid, domain, interface, expected = row
    entries = S27_ENTRIES[::-1] if reverse else S27_ENTRIES
    store = AccessStore([AccessTables(master_access=tuple(entries))])
    assert store.master_access(uid, domain, interface, "READ") == S27_ENTRIES[expected]


# S28-S33: an owner or mediator update validated against its parent, step by step
WITHOUT_LOW = (NONE, MID, HIGH)
WITHOUT_NONE = (LOW, MID, HIGH)
WITHOUT_NO = (YES, ASK)
WITHOUT_YES = (NO, ASK)
PARENT_STEPS: list[dict[str, Any]] = [
    {"levels": (), "change_levels": (), "possible": ()},
    {"levels": WITHOUT_LOW, "change_levels": ALL_LEVELS, "possible": ALL_PERMISSIONS},
    {"levels": ALL_LEVELS, "change_levels": ALL_LEVELS, "possible": WITHOUT_NO},
]


def _kind_makers(kind: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return (master_ace, owner_ace) if kind == "ace" else (master_rce, owner_rce)


def _key(kind: str) -> tuple[str, ...]:
    return ("testUser", "testDomain", "testInterface") + (("op",) if kind == "ace" else ())


@pytest.mark.parametrize("kind", ["ace", "rce"])
@pytest.mark.parametrize("parent", ["master", "mediator"],
                         ids=["S28-S29-by-master", "S30-S31-by-mediator"])
def test_owner_update_validated_against_parent(kind: str, parent: str) -> None:
    make_parent, make_owner = _kind_makers(kind)
    store = AccessStore()
    noun = "access" if kind == "ace" else "registration"
    update_parent = getattr(store, f"update_{parent}_{noun}")
    update_owner = getattr(store, f"update_owner_{noun}")
    test_owner = make_owner(*_key(kind), level=LOW, change_level=LOW, permission=NO)
    allowed_owner = make_owner(*_key(kind), level=MID, change_level=HIGH, permission=ASK)
    results = []
    for step in PARENT_STEPS:
        entry = make_parent(*_key(kind), level=LOW, default=NO, **step)
        results.append((update_parent(entry), update_owner(test_owner),
                        update_owner(allowed_owner)))
    assert results == [(True, False, False), (True, False, True), (True, False, True)]


@pytest.mark.parametrize("kind", ["ace", "rce"], ids=["S33-ace", "S32-rce"])
def test_mediator_update_validated_against_master(kind: str) -> None:
    make_master, _ = _kind_makers(kind)
    noun = "access" if kind == "ace" else "registration"
    store = AccessStore()
    update_master = getattr(store, f"update_master_{noun}")
    update_mediator = getattr(store, f"update_mediator_{noun}")
    start: dict[str, Any] = {"level": LOW, "levels": (), "change_level": LOW,
                             "change_levels": (), "default": NO, "possible": ()}
    allowed_start: dict[str, Any] = {"level": MID, "levels": WITHOUT_LOW, "change_level": HIGH,
                                     "change_levels": WITHOUT_LOW, "default": ASK,
                                     "possible": WITHOUT_NO}
    steps: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = [
        ({}, {}, {}),
        ({"levels": WITHOUT_LOW, "change_levels": ALL_LEVELS, "possible": ALL_PERMISSIONS},
         {}, {}),
        ({"levels": ALL_LEVELS, "change_levels": ALL_LEVELS, "possible": WITHOUT_NO}, {}, {}),
        ({"levels": WITHOUT_NONE, "change_levels": ALL_LEVELS, "possible": ALL_PERMISSIONS},
         {"levels": WITHOUT_LOW}, {"levels": WITHOUT_NONE}),
        ({"levels": ALL_LEVELS, "change_levels": ALL_LEVELS, "possible": WITHOUT_NO},
         {"levels": (), "default": ASK, "possible": WITHOUT_YES}, {"levels": WITHOUT_LOW}),
    ]
    results = []
    for master_changes, test_changes, allowed_changes in steps:
        results.append((
            update_master(make_master(*_key(kind), **(start | master_changes))),
            update_mediator(make_master(*_key(kind), **(start | test_changes))),
            update_mediator(make_master(*_key(kind), **(allowed_start | allowed_changes)))))
    assert results == [(True, False, False)] + [(True, False, True)] * 4


def test_rejected_update_stores_nothing_and_keeps_generation() -> None:
    store = AccessStore([AccessTables(master_access=(master_ace(possible=(NO,)),))])
    generation = store.generation
    assert not store.update_owner_access(owner_ace(permission=YES))
    assert store.generation == generation and len(store) == 1


# -- the generic cases: exact, wildcard, only-wildcard, for the four kinds ---------------------

GENERIC = [
    ("domain-exact", "domain/*", "DEFAULT_INTERFACE_NAME", "domain/*", "DEFAULT_INTERFACE_NAME"),
    ("domain-wildcard", "domain/*", "DEFAULT_INTERFACE_NAME", "domain/123",
     "DEFAULT_INTERFACE_NAME"),
    ("domain-only-wildcard", "*", "DEFAULT_INTERFACE_NAME", "domain/123",
     "DEFAULT_INTERFACE_NAME"),
    ("interface-exact", "DEFAULT_DOMAIN", "interface/*", "DEFAULT_DOMAIN", "interface/*"),
    ("interface-wildcard", "DEFAULT_DOMAIN", "interface/*", "DEFAULT_DOMAIN", "interface/123"),
    ("interface-only-wildcard", "DEFAULT_DOMAIN", "*", "DEFAULT_DOMAIN", "interface/123"),
]


@pytest.mark.parametrize("kind", ["master_access", "owner_access", "master_registration",
                                  "owner_registration"])
@pytest.mark.parametrize("case", GENERIC, ids=[case[0] for case in GENERIC])
def test_generic_lookup_then_remove(kind: str, case: tuple[str, str, str, str, str]) -> None:
    _, domain, interface, query_domain, query_interface = case
    operation = ("operationName",) if kind.endswith("access") else ()
    make = {"master_access": master_ace, "owner_access": owner_ace,
            "master_registration": master_rce, "owner_registration": owner_rce}[kind]
    entry = make("userId", domain, interface, *operation)
    store = AccessStore()
    assert getattr(store, f"update_{kind}")(entry)
    assert getattr(store, kind)("userId", query_domain, query_interface, *operation) == entry
    assert getattr(store, f"remove_{kind}")("userId", domain, interface, *operation)
    assert getattr(store, kind)("userId", query_domain, query_interface, *operation) is None


# -- the lookup order and the operation rule ---------------------------------------------------

def test_wildcard_uid_exact_key_beats_specific_uid_prefix() -> None:
    anyone = master_ace("*", "d", "i", default=NO)
    prefix = master_ace("u", "d*", "i", default=YES)
    store = AccessStore([AccessTables(master_access=(prefix, anyone))])
    assert store.master_access("u", "d", "i", "*") == anyone


def test_longer_prefix_and_exact_field_come_first() -> None:
    entries = (master_ace("u", "a*", "i"), master_ace("u", "a.b*", "i"),
               master_ace("u", "a.b.c", "x*"), master_ace("u", "a.b.c*", "i"))
    store = AccessStore([AccessTables(master_access=entries)])
    assert store.master_access("u", "a.b.c.d", "i", "*") == entries[3]
    assert store.master_access("u", "a.b.x", "i", "*") == entries[1]
    assert store.master_access("u", "a.b.c", "xyz", "*") == entries[2]  # exact domain first
    assert store.master_access("u", "b", "i", "*") is None
    assert store.master_access("u", "a", "i", "*") == entries[0]  # "a*" matches "a" itself


def test_star_inside_a_name_is_literal() -> None:
    store = AccessStore([AccessTables(master_access=(master_ace("u", "a*b", "i"),))])
    assert store.master_access("u", "axb", "i", "*") is None
    assert store.master_access("u", "a*b", "i", "*") is not None


@pytest.mark.parametrize(("entries", "operation", "expected"), [
    # an entry for READ answers READ only
    ((("READ", YES),), "READ", YES),
    ((("READ", YES),), "WRITE", NO),
    # "*" answers every operation; the exact one comes first at the same key
    ((("*", NO), ("READ", YES)), "READ", YES),
    ((("READ", YES), ("*", NO)), "READ", YES),
    ((("READ", YES), ("*", NO)), "WRITE", NO),
    ((("*", YES),), "ANY", YES),
], ids=["exact-only", "exact-does-not-answer-other", "exact-beats-star-stored-after",
        "exact-beats-star-stored-before", "other-gets-star", "star-answers-all"])
def test_operation_rule(entries: tuple[tuple[str, Permission], ...], operation: str,
                        expected: Permission) -> None:
    aces = tuple(master_ace(operation=op, default=permission) for op, permission in entries)
    store = AccessStore([AccessTables(master_access=aces)])
    assert store.consumer_permission("testUser", "domain1", "interface1", operation) is expected


def test_operation_entry_passed_over_goes_on_to_a_farther_key() -> None:
    near = master_ace("u", "d", "i", "READ", default=NO)
    far = master_ace("u", "d*", "i", "*", default=YES)
    store = AccessStore([AccessTables(master_access=(near, far))])
    assert store.consumer_permission("u", "d", "i", "READ") is NO
    assert store.consumer_permission("u", "d", "i", "WRITE") is YES
    assert store.interface_permission("u", "d", "i") is None
    # a "*" entry at the closest key answers for the whole interface; the farther one is unseen
    assert store.update_master_access(master_ace("u", "d", "i", "*", default=ASK))
    store.remove_master_access("u", "d", "i", "READ")
    assert store.interface_permission("u", "d", "i") is ASK


def test_interface_permission_of_each_access_table() -> None:
    for table in ("master", "mediator", "owner"):
        make = owner_ace if table == "owner" else master_ace
        store = AccessStore([AccessTables(**{f"{table}_access": (make(operation="READ"),)})])
        assert store.interface_permission("testUser", "domain1", "interface1") is None, table


# -- the store's own behaviour -----------------------------------------------------------------

def test_merge_later_tables_replace_same_key_and_generation_counts_changes() -> None:
    first = master_ace(default=NO)
    second = master_ace(default=YES)
    store = AccessStore([AccessTables(master_access=(first,)),
                         AccessTables(master_access=(second,))])
    assert len(store) == 1 and store.tables().master_access == (second,)
    assert store.consumer_permission("testUser", "domain1", "interface1", "x") is YES
    generation = store.generation
    store.replace([AccessTables(master_access=(first,))])
    assert store.generation == generation + 1
    assert store.consumer_permission("testUser", "domain1", "interface1", "x") is NO
    assert store.update_master_access(second) and store.generation == generation + 2
    assert store.remove_master_access("testUser", "domain1", "interface1", "*")
    assert store.generation == generation + 3
    assert not store.remove_master_access("testUser", "domain1", "interface1", "*")
    assert store.generation == generation + 3


def test_removed_or_replaced_wildcard_entry_is_gone_from_the_index() -> None:
    entry = master_ace("u", "d*", "i*", default=YES)
    store = AccessStore([AccessTables(master_access=(entry,))])
    assert store.update_master_access(dataclasses.replace(entry, default_consumer_permission=ASK))
    assert store.consumer_permission("u", "dx", "ix", "op") is ASK
    assert store.remove_master_access("u", "d*", "i*", "*")
    assert store.master_access("u", "dx", "ix", "op") is None
    assert store.consumer_permission("u", "dx", "ix", "op") is NO


def test_editor_refuses_entries_of_wrong_type_or_past_bounds() -> None:
    store = AccessStore()
    assert not store.update_master_access(master_ace(uid="u" * 1001))
    assert not store.update_master_access(master_ace(default="YES"))  # type: ignore[arg-type]
    assert not store.update_master_access(owner_ace())  # type: ignore[arg-type]
    assert not store.update_domain_role(DomainRoleEntry("u", ("d",), "MASTER"))  # type: ignore[arg-type]
    assert len(store) == 0 and store.generation == 0


def test_editor_refuses_a_new_key_when_full() -> None:
    store = AccessStore([AccessTables(master_access=(master_ace("a"), master_ace("b")))],
                        max_entries=2)
    assert not store.update_master_access(master_ace("c"))
    assert not store.update_domain_role(DomainRoleEntry("a", ("d",), Role.OWNER))
    assert store.update_master_access(master_ace("a", default=YES))  # an existing key
    assert len(store) == 2
    assert AccessStore().max_entries == MAX_STORE_ENTRIES == 1_000_000


# -- the indexed lookup against a reference ranking every entry -------------------------------

NAMES = st.sampled_from(["", "a", "ab", "abc", "b", "ba", "a.b", "a.bc"])
PATTERNS = st.one_of(NAMES, NAMES.map(lambda name: name + "*"))
UIDS = st.sampled_from(["u", "v", "*"])
OPS = st.sampled_from(["*", "READ", "WRITE"])


def _matches(pattern: str, value: str) -> bool:
    return pattern == value or (pattern.endswith("*") and value.startswith(pattern[:-1]))


def _reference(entries: list[MasterAccessControlEntry], uid: str, domain: str,
               interface: str, operation: str) -> MasterAccessControlEntry | None:
    """The closest entry by the rules, by ranking all of them."""
    def field_rank(pattern: str, value: str) -> tuple[int, int]:
        return (0, 0) if pattern == value else (1, -len(pattern))

    def rank(entry: MasterAccessControlEntry) -> tuple[Any, ...]:
        exact = entry.domain == domain and entry.interface_name == interface
        step = (0 if entry.uid == uid else 1) if exact else 2
        return (step, entry.uid != uid, field_rank(entry.domain, domain),
                field_rank(entry.interface_name, interface), entry.operation != operation)
    latest = {(e.uid, e.domain, e.interface_name, e.operation): e for e in entries}
    found = [e for e in latest.values()
             if e.uid in (uid, "*") and e.operation in (operation, "*")
             and _matches(e.domain, domain) and _matches(e.interface_name, interface)]
    return min(found, key=rank) if found else None


@settings(max_examples=300, deadline=None)
@given(entries=st.lists(st.tuples(UIDS, PATTERNS, PATTERNS, OPS), max_size=25),
       removed=st.lists(st.integers(0, 24), max_size=5),
       queries=st.lists(st.tuples(st.sampled_from(["u", "v"]), NAMES, NAMES, OPS),
                        min_size=1, max_size=10))
def test_lookup_equals_reference_ranking(entries: list[tuple[str, str, str, str]],
                                         removed: list[int],
                                         queries: list[tuple[str, str, str, str]]) -> None:
    aces = [master_ace(uid, domain, interface, op, default=YES)
            for uid, domain, interface, op in entries]
    store = AccessStore([AccessTables(master_access=tuple(aces))])
    kept = list(aces)
    for index in removed:
        if index < len(aces):
            ace = aces[index]
            key = (ace.uid, ace.domain, ace.interface_name, ace.operation)
            store.remove_master_access(*key)
            kept = [a for a in kept if (a.uid, a.domain, a.interface_name, a.operation) != key]
    for query in queries:
        assert store.master_access(*query) == _reference(kept, *query), query


def test_prefix_trie_finds_stored_prefixes_and_frees_what_is_removed() -> None:
    prefixes = _Prefixes()
    for prefix in ("ab", "abc", "x", "", "ab"):
        prefixes.add(prefix)
    assert prefixes.lengths("abcd") == [0, 2, 3]
    assert prefixes.lengths("a") == [0]
    prefixes.discard("ab")  # stored twice: still there
    assert prefixes.lengths("abcd") == [0, 2, 3]
    for prefix in ("ab", "abc", ""):
        prefixes.discard(prefix)
    assert prefixes.lengths("abcd") == []
    assert list(prefixes.root.children) == ["x"]
    prefixes.discard("x")
    assert prefixes.root.children == {} and prefixes.root.count == 0


def test_index_is_empty_after_every_entry_is_removed() -> None:
    entries = [master_ace("u", domain, interface, op) for domain, interface, op in [
        ("d*", "i", "*"), ("d*", "i", "READ"), ("da*", "i*", "*"), ("d", "i*", "*"),
        ("*", "*", "*")]]
    store = AccessStore([AccessTables(master_access=tuple(entries))])
    for entry in entries:
        assert store.remove_master_access(entry.uid, entry.domain, entry.interface_name,
                                          entry.operation)
    table = store._master_access
    assert table.by_key == {} and table.by_triple == {} and table.wild == {}

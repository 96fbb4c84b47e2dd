"""joynr's JSON provisioning format (cluster_controller.access.entries): read strictly, written
back, and the provisioning files under tests/data/acl/ loaded into a store and asked.

The files are the kinds joynr's own samples have: one application allowed everything (two such
files merged), a lite integration file with empty possible lists and domain roles, a domain
prefix file whose prefix entries must win over the application's "*" entry, and an interface
prefix file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyjoynr.cluster_controller.access.entries import (
    MAX_FILE_ENTRIES,
    MAX_NAME_CHARS,
    TABLE_NAMES,
    AccessFileError,
    AccessTables,
    DomainRoleEntry,
    MasterAccessControlEntry,
    MasterRegistrationControlEntry,
    OwnerAccessControlEntry,
    OwnerRegistrationControlEntry,
    Permission,
    Role,
    TrustLevel,
    dump_tables,
    parse_tables,
)
from pyjoynr.cluster_controller.access.store import AccessStore
from tests.support.access_entries import ASK, HIGH, NO, YES, master_ace

DATA = Path(__file__).resolve().parents[1] / "data" / "acl"


def load(*names: str) -> AccessStore:
    return AccessStore([parse_tables((DATA / name).read_bytes(), f"acl/{name}")
                        for name in names])


# -- the provisioning files --------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(path.name for path in DATA.glob("*.json")))
def test_every_file_reads_and_writes_back_the_same_tables(name: str) -> None:
    tables = parse_tables((DATA / name).read_text(encoding="utf-8"), name)
    assert len(tables) > 0
    assert parse_tables(dump_tables(tables), name) == tables


def test_two_applications_allowed_everything() -> None:
    store = load("navigation-app-everything.json", "media-app-everything.json")
    assert len(store) == 4
    for app in ("navigation-app", "media-app"):
        assert store.consumer_permission(app, "any.domain", "any/Interface", "anyMethod") is YES
        assert store.interface_permission(app, "any.domain", "any/Interface") is YES
        assert store.provider_permission(app, "any.domain", "any/Interface") is YES
        assert store.master_access(app, "d", "i", "op") == MasterAccessControlEntry(
            app, "*", "*", HIGH, (HIGH,), HIGH, (HIGH,), "*", YES, (YES, NO, ASK))
    assert store.consumer_permission("other-app", "any.domain", "any/Interface", "m") is NO
    assert store.provider_permission("other-app", "any.domain", "any/Interface") is NO


def test_lite_file_with_empty_possible_lists_and_roles() -> None:
    store = load("integration-lite.json")
    assert store.consumer_permission("it-consumer", "itDomain", "tests/IntegrationTest",
                                     "method") is YES
    assert store.provider_permission("it-provider", "itDomain", "tests/IntegrationTest") is YES
    # each uid only what it is given
    assert store.provider_permission("it-consumer", "itDomain", "tests/IntegrationTest") is NO
    assert store.consumer_permission("it-provider", "itDomain", "tests/IntegrationTest",
                                     "method") is NO
    assert store.has_role("it-admin", "itDomain", Role.MASTER)
    assert not store.has_role("it-admin", "otherDomain", Role.MASTER)
    assert store.has_role("it-admin", "otherDomain", Role.OWNER)


@pytest.mark.parametrize(("domain", "interface", "expected"), [
    ("vehicle.fleet.truck1", "fleet/telemetry/Position", YES),
    ("vehicle.fleet.van7", "fleet/telemetry/Speed", YES),
    ("vehicle.fleet.", "fleet/telemetry/Speed", YES),
    # the application's "*" entry (NO) answers what no prefix entry matches
    ("vehicle.fleet.truck1", "fleet/telemetry/Fuel", NO),
    ("vehicle.private.car", "fleet/telemetry/Position", NO),
])
def test_domain_prefix_entries_win_over_the_catch_all(domain: str, interface: str,
                                                      expected: Permission) -> None:
    store = load("domain-prefix.json")
    assert store.consumer_permission("fleet-app", domain, interface, "get") is expected
    entry = store.master_access("fleet-app", domain, interface, "get")
    assert entry is not None
    assert entry.domain == ("vehicle.fleet.*" if expected is YES else "*")


@pytest.mark.parametrize(("domain", "interface", "expected"), [
    ("region.north", "weather/report/Daily", YES),
    ("region.south", "weather/report/Hourly", YES),
    ("region.east", "weather/report/Daily", NO),
    ("region.north", "weather/forecast", NO),
])
def test_interface_prefix_entries(domain: str, interface: str, expected: Permission) -> None:
    store = load("interface-prefix.json")
    assert store.consumer_permission("weather-app", domain, interface, "get") is expected
    registration = YES if domain == "region.north" and expected is YES else NO
    assert store.provider_permission("weather-app", domain, interface) is registration


# -- the written form --------------------------------------------------------------------------

def test_dump_writes_all_seven_tables_type_name_first_in_joynr_field_order() -> None:
    document = json.loads(dump_tables(AccessTables(master_access=(master_ace(),))))
    assert list(document) == list(TABLE_NAMES) == [
        "masterAccessTable", "mediatorAccessTable", "ownerAccessTable",
        "masterRegistrationTable", "mediatorRegistrationTable", "ownerRegistrationTable",
        "domainRoleTable"]
    assert document["masterAccessTable"] == [{
        "_typeName": "joynr.infrastructure.DacTypes.MasterAccessControlEntry",
        "uid": "testUser", "domain": "domain1", "interfaceName": "interface1",
        "defaultRequiredTrustLevel": "LOW",
        "possibleRequiredTrustLevels": ["LOW", "MID", "HIGH"],
        "defaultRequiredControlEntryChangeTrustLevel": "LOW",
        "possibleRequiredControlEntryChangeTrustLevels": ["LOW", "MID", "HIGH"],
        "operation": "*", "defaultConsumerPermission": "NO",
        "possibleConsumerPermissions": ["NO", "ASK", "YES"]}]
    assert next(iter(document["masterAccessTable"][0])) == "_typeName"
    assert all(document[name] == [] for name in TABLE_NAMES[1:])


def test_missing_tables_are_empty_and_key_order_is_free() -> None:
    assert parse_tables("{}", "empty.json") == AccessTables()
    entry = {"role": "MASTER", "domains": ["d"], "uid": "u",
             "_typeName": "joynr.infrastructure.DacTypes.DomainRoleEntry"}
    tables = parse_tables(json.dumps({"domainRoleTable": [entry]}).encode(), "roles.json")
    assert tables.domain_roles == (DomainRoleEntry("u", ("d",), Role.MASTER),)


NAMES = st.text(max_size=12)
LEVELS = st.sampled_from(list(TrustLevel))
PERMISSIONS = st.sampled_from(list(Permission))
LEVEL_LISTS = st.lists(LEVELS, max_size=4).map(tuple)
PERMISSION_LISTS = st.lists(PERMISSIONS, max_size=3).map(tuple)
MASTER_ACES = st.builds(MasterAccessControlEntry, NAMES, NAMES, NAMES, LEVELS, LEVEL_LISTS,
                        LEVELS, LEVEL_LISTS, NAMES, PERMISSIONS, PERMISSION_LISTS)
MASTER_RCES = st.builds(MasterRegistrationControlEntry, NAMES, NAMES, NAMES, LEVELS,
                        LEVEL_LISTS, LEVELS, LEVEL_LISTS, PERMISSIONS, PERMISSION_LISTS)
TABLES = st.builds(
    AccessTables,
    st.lists(MASTER_ACES, max_size=3).map(tuple),
    st.lists(MASTER_ACES, max_size=3).map(tuple),
    st.lists(st.builds(OwnerAccessControlEntry, NAMES, NAMES, NAMES, LEVELS, LEVELS, NAMES,
                       PERMISSIONS), max_size=3).map(tuple),
    st.lists(MASTER_RCES, max_size=3).map(tuple),
    st.lists(MASTER_RCES, max_size=3).map(tuple),
    st.lists(st.builds(OwnerRegistrationControlEntry, NAMES, NAMES, NAMES, LEVELS, LEVELS,
                       PERMISSIONS), max_size=3).map(tuple),
    st.lists(st.builds(DomainRoleEntry, NAMES, st.lists(NAMES, max_size=3).map(tuple),
                       st.sampled_from(list(Role))), max_size=3).map(tuple))


@settings(max_examples=200, deadline=None)
@given(tables=TABLES)
def test_round_trip(tables: AccessTables) -> None:
    text = dump_tables(tables)
    assert parse_tables(text, "t.json") == tables
    assert parse_tables(text.encode(), "t.json") == tables
    assert dump_tables(AccessStore([tables]).tables()) == dump_tables(
        AccessStore([parse_tables(text, "t.json")]).tables())


# -- refusals: each names the file, the entry and the field ------------------------------------

def _good_document() -> dict[str, Any]:
    return json.loads(dump_tables(AccessTables(
        master_access=(master_ace(),) * 4,
        owner_registration=(OwnerRegistrationControlEntry("u", "d", "i", HIGH, HIGH, YES),),
        domain_roles=(DomainRoleEntry("u", ("d",), Role.OWNER),))))


def _set(path: str, value: Any) -> Any:
    def change(document: dict[str, Any]) -> None:
        table, index, field = path.split(".")
        document[table][int(index)][field] = value
    return change


def _drop(path: str) -> Any:
    def change(document: dict[str, Any]) -> None:
        table, index, field = path.split(".")
        del document[table][int(index)][field]
    return change


LONG = "x" * (MAX_NAME_CHARS + 1)
BAD: list[tuple[str, Any, str]] = [
    ("unknown-permission", _set("masterAccessTable.3.defaultConsumerPermission", "MAYBE"),
     "acl/apps.json: masterAccessTable[3].defaultConsumerPermission: 'MAYBE' is not one of "
     "YES, ASK, NO"),
    ("unknown-trust-level", _set("masterAccessTable.0.defaultRequiredTrustLevel", "TOP"),
     "masterAccessTable[0].defaultRequiredTrustLevel: 'TOP' is not one of HIGH, MID, LOW, NONE"),
    ("lower-case-enum", _set("masterAccessTable.1.defaultConsumerPermission", "yes"),
     "masterAccessTable[1].defaultConsumerPermission: 'yes' is not one of"),
    ("enum-as-number", _set("masterAccessTable.1.defaultConsumerPermission", 0),
     "masterAccessTable[1].defaultConsumerPermission: 0 is not one of"),
    ("unknown-in-list", _set("masterAccessTable.2.possibleConsumerPermissions", ["YES", "OK"]),
     "masterAccessTable[2].possibleConsumerPermissions: [1]: 'OK' is not one of"),
    ("list-not-list", _set("masterAccessTable.2.possibleRequiredTrustLevels", "HIGH"),
     "masterAccessTable[2].possibleRequiredTrustLevels: 'HIGH' is not a list"),
    ("list-too-long", _set("masterAccessTable.2.possibleRequiredTrustLevels", ["HIGH"] * 17),
     "masterAccessTable[2].possibleRequiredTrustLevels: a list of 17 values, more than 16"),
    ("uid-not-string", _set("masterAccessTable.0.uid", None),
     "masterAccessTable[0].uid: None is not a string"),
    ("domain-number", _set("masterAccessTable.0.domain", 7),
     "masterAccessTable[0].domain: 7 is not a string"),
    ("operation-bool", _set("masterAccessTable.0.operation", True),
     "masterAccessTable[0].operation: True is not a string"),
    ("uid-too-long", _set("masterAccessTable.0.uid", LONG),
     f"masterAccessTable[0].uid: a string of {MAX_NAME_CHARS + 1} characters, more than "
     f"{MAX_NAME_CHARS}"),
    ("interface-too-long", _set("ownerRegistrationTable.0.interfaceName", LONG),
     "ownerRegistrationTable[0].interfaceName: a string of 1001 characters"),
    ("role-domain-too-long", _set("domainRoleTable.0.domains", ["d", LONG]),
     "domainRoleTable[0].domains: [1]: a string of 1001 characters"),
    ("role-domain-not-string", _set("domainRoleTable.0.domains", [1]),
     "domainRoleTable[0].domains: [0]: 1 is not a string"),
    ("lone-surrogate", _set("masterAccessTable.0.domain", "d\ud800"),
     "masterAccessTable[0].domain: 'd\\ud800' is not Unicode text"),
    ("unknown-role", _set("domainRoleTable.0.role", "ADMIN"),
     "domainRoleTable[0].role: 'ADMIN' is not one of MASTER, OWNER"),
    ("missing-field", _drop("masterAccessTable.3.operation"),
     "masterAccessTable[3].operation: missing"),
    ("missing-permission", _drop("ownerRegistrationTable.0.providerPermission"),
     "ownerRegistrationTable[0].providerPermission: missing"),
    ("unknown-field", _set("masterAccessTable.0.comment", "x"),
     "masterAccessTable[0].'comment': not a field of "
     "joynr.infrastructure.DacTypes.MasterAccessControlEntry"),
    ("owner-field-in-master", _set("masterAccessTable.0.consumerPermission", "YES"),
     "masterAccessTable[0].'consumerPermission': not a field"),
    ("wrong-type-name", _set("masterAccessTable.1._typeName",
                             "joynr.infrastructure.DacTypes.OwnerAccessControlEntry"),
     "masterAccessTable[1]._typeName: 'joynr.infrastructure.DacTypes.OwnerAccessControlEntry' "
     "is not 'joynr.infrastructure.DacTypes.MasterAccessControlEntry'"),
    ("missing-type-name", _drop("ownerRegistrationTable.0._typeName"),
     "ownerRegistrationTable[0]._typeName: missing"),
]


@pytest.mark.parametrize(("change", "message"), [row[1:] for row in BAD],
                         ids=[row[0] for row in BAD])
def test_bad_entry_names_file_entry_and_field(change: Any, message: str) -> None:
    document = _good_document()
    change(document)
    with pytest.raises(AccessFileError) as raised:
        parse_tables(json.dumps(document), "acl/apps.json")
    assert str(raised.value).startswith("acl/apps.json: ")
    assert message in str(raised.value)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize(("data", "message"), [
    (b"", "acl/x.json: not JSON"),
    (b"{\"masterAccessTable\": [", "acl/x.json: not JSON"),
    (b"\xff\xfe\x00", "acl/x.json: not JSON"),
    ("[1, 2]", "acl/x.json: not a JSON object with the tables masterAccessTable"),
    ("null", "acl/x.json: not a JSON object"),
    ('"text"', "acl/x.json: not a JSON object"),
    ('{"masterAccessTable": {}}', "acl/x.json: masterAccessTable: {} is not a list"),
    ('{"masterAccessTable": [1]}', "acl/x.json: masterAccessTable[0].1 is not an object"),
    ('{"accessTable": []}', "acl/x.json: 'accessTable' is not one of the tables"),
    ("[" * 100_000 + "]" * 100_000, "acl/x.json: not JSON"),
], ids=["empty", "truncated", "not-utf8", "array", "null", "string", "table-not-list",
        "entry-not-object", "unknown-table", "deep-nesting"])
def test_not_a_provisioning_file(data: bytes | str, message: str) -> None:
    with pytest.raises(AccessFileError, match="^" + message.replace("[", r"\[")
                       .replace("{", r"\{").replace("}", r"\}")):
        parse_tables(data, "acl/x.json")


def test_bounded_entries_per_file() -> None:
    # counted over all tables before any entry is read (the elements here are not even entries)
    half = MAX_FILE_ENTRIES // 2
    text = ('{"masterAccessTable": [' + ",".join(["0"] * half) + '], "domainRoleTable": ['
            + ",".join(["0"] * (half + 1)) + "]}")
    with pytest.raises(AccessFileError,
                       match=f"^acl/big.json: {MAX_FILE_ENTRIES + 1} entries, more than "
                             f"{MAX_FILE_ENTRIES}$"):
        parse_tables(text, "acl/big.json")


def test_quoted_values_are_cut() -> None:
    document = _good_document()
    document["masterAccessTable"][0]["defaultConsumerPermission"] = "Y" * 5000
    with pytest.raises(AccessFileError) as raised:
        parse_tables(json.dumps(document), "acl/apps.json")
    assert len(str(raised.value)) < 200

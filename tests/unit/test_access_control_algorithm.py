"""The combination rule of access control (cluster_controller.access.algorithm), as tables.

Rows A1-A11 are the decisions of joynr's algorithm tests (all entries of one uid, domain,
interface; master and mediator default NO at LOW, possible NO/ASK/YES at LOW/MID/HIGH; owner NO
at LOW; each row names only what differs), V1-V5 its validator cases, which run once for access
entries and once for registration entries. Each row's id is in the test id.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyjoynr.cluster_controller.access.algorithm import (
    decide,
    mediator_valid,
    owner_fits,
    owner_valid,
)
from pyjoynr.cluster_controller.access.entries import Permission, TrustLevel
from tests.support.access_entries import (
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

# (id, master changes | None, mediator changes | None, owner changes | None, trust level, expected)
DECISIONS: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None,
                      TrustLevel, Permission]] = [
    ("A1-master-only", {"default": YES, "level": HIGH}, None, None, HIGH, YES),
    ("A2-trust-below-master", {"default": YES, "level": MID}, None, None, LOW, NO),
    ("A3-no-entry", None, None, None, HIGH, NO),
    ("A4-mediator-over-master", {"default": YES, "level": HIGH,
                                 "levels": (NONE, LOW, MID, HIGH)},
     {"default": ASK, "level": LOW}, None, LOW, ASK),
    ("A5-mediator-only", None, {"default": YES, "level": MID}, None, HIGH, YES),
    ("A6-invalid-mediator", {"possible": (NO,)},
     {"possible": (ASK, YES), "default": YES, "level": MID}, None, HIGH, NO),
    ("A7-owner-over-all", {"default": YES, "level": LOW}, {"default": ASK, "level": HIGH},
     {"permission": YES, "level": MID}, MID, YES),
    ("A8-owner-over-master", {"default": ASK, "level": LOW}, {},
     {"permission": YES, "level": HIGH}, HIGH, YES),
    ("A9-owner-only", None, None, {"permission": YES, "level": HIGH}, HIGH, YES),
    ("A10-owner-outside-mediator", None, {"possible": (NO,)}, {"permission": ASK}, HIGH, NO),
    ("A11-owner-outside-master", {"possible": (NO,)}, None, {"permission": ASK}, HIGH, NO),
    # the rule's edges, beyond joynr's rows
    ("owner-trust-too-low-no-fallback", {"default": YES, "level": LOW}, None,
     {"permission": YES, "level": HIGH}, MID, NO),
    ("mediator-trust-too-low-no-fallback", {"default": YES, "level": LOW},
     {"default": YES, "level": HIGH}, None, MID, NO),
    ("trust-equal-to-required", {"default": YES, "level": MID}, None, None, MID, YES),
    ("master-empty-possible-lists", {"default": YES, "level": HIGH, "possible": (),
                                     "levels": ()}, None, None, HIGH, YES),
]


@pytest.mark.parametrize("kind", ["ace", "rce"])
@pytest.mark.parametrize("row", DECISIONS, ids=[row[0] for row in DECISIONS])
def test_decide(kind: str, row: tuple[str, dict[str, Any] | None, dict[str, Any] | None,
                                      dict[str, Any] | None, TrustLevel, Permission]) -> None:
    _, master, mediator, owner, level, expected = row
    make_master = master_ace if kind == "ace" else master_rce
    make_owner = owner_ace if kind == "ace" else owner_rce
    assert decide(None if master is None else make_master(**master),
                  None if mediator is None else make_master(**mediator),
                  None if owner is None else make_owner(**owner), level) is expected


# validator fixture: master and mediator LOW of (LOW, MID), NO of (NO, ASK); owner ASK at MID
V_PARENT: dict[str, Any] = {"level": LOW, "levels": (LOW, MID), "change_level": LOW,
                            "change_levels": (MID, HIGH), "default": NO, "possible": (NO, ASK)}
V_OWNER: dict[str, Any] = {"level": MID, "change_level": HIGH, "permission": ASK}

VALIDATIONS: list[tuple[str, str, dict[str, Any], dict[str, Any], bool]] = [
    ("V1-mediator-permissions-beyond-master", "mediator", {"possible": (ASK, YES)}, {}, False),
    ("V2-mediator-levels-beyond-master", "mediator", {"levels": (HIGH, MID)}, {}, False),
    ("V3-mediator-valid", "mediator", {}, {}, True),
    ("V4-owner-valid", "owner", {}, {}, True),
    ("V5-owner-permission-beyond", "owner", {}, {"permission": YES}, False),
    # beyond joynr's rows
    ("mediator-default-beyond-master", "mediator", {"default": YES}, {}, False),
    ("mediator-level-beyond-master", "mediator", {"level": HIGH}, {}, False),
    ("owner-level-beyond", "owner", {}, {"level": HIGH}, False),
]


@pytest.mark.parametrize("kind", ["ace", "rce"])
@pytest.mark.parametrize(("check", "mediator_changes", "owner_changes", "expected"),
                         [row[1:] for row in VALIDATIONS], ids=[row[0] for row in VALIDATIONS])
def test_validators(kind: str, check: str, mediator_changes: dict[str, Any],
                    owner_changes: dict[str, Any], expected: bool) -> None:
    make_master = master_ace if kind == "ace" else master_rce
    make_owner = owner_ace if kind == "ace" else owner_rce
    master = make_master("testUser", "", "", **V_PARENT)
    mediator = make_master("testUser", "", "", **(V_PARENT | mediator_changes))
    owner = make_owner("testUser", "", "", **(V_OWNER | owner_changes))
    if check == "mediator":
        assert mediator_valid(master, mediator) is expected
    else:
        assert owner_valid(master, mediator, owner) is expected


def test_validators_without_parents_accept() -> None:
    assert mediator_valid(None, master_ace()) and mediator_valid(master_ace(), None)
    assert owner_valid(None, None, owner_ace(permission=YES))
    assert owner_fits(master_ace(), None)
    # without a mediator the owner answers to the master
    assert not owner_valid(master_ace(possible=(NO,)), None, owner_ace(permission=YES))


@pytest.mark.parametrize(("low", "high"), [(NONE, LOW), (LOW, MID), (MID, HIGH), (NONE, HIGH)])
def test_trust_levels_are_ordered_by_rank_not_declaration(low: TrustLevel,
                                                          high: TrustLevel) -> None:
    assert low < high and high > low and high >= low and low <= high
    assert not high < low and not low >= high
    same = TrustLevel(high.value)
    assert high >= same and high <= same and not high < same


def test_trust_levels_keep_joynr_names_and_declaration_order() -> None:
    assert [level.name for level in TrustLevel] == ["HIGH", "MID", "LOW", "NONE"]
    assert [p.name for p in Permission] == ["YES", "ASK", "NO"]
    assert sorted(TrustLevel) == [NONE, LOW, MID, HIGH]

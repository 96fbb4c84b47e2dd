"""Builders of access control entries for the tests: every field has the value most of joynr's
test fixtures give it, so that a test names only what it is about."""

from __future__ import annotations

from pyjoynr.cluster_controller.access.entries import (
    MasterAccessControlEntry,
    MasterRegistrationControlEntry,
    OwnerAccessControlEntry,
    OwnerRegistrationControlEntry,
    Permission,
    TrustLevel,
)

HIGH, MID, LOW, NONE = TrustLevel.HIGH, TrustLevel.MID, TrustLevel.LOW, TrustLevel.NONE
YES, ASK, NO = Permission.YES, Permission.ASK, Permission.NO
ALL_LEVELS = (NONE, LOW, MID, HIGH)
ALL_PERMISSIONS = (YES, NO, ASK)


def master_ace(uid: str = "testUser", domain: str = "domain1", interface: str = "interface1",
               operation: str = "*", *, default: Permission = NO,
               possible: tuple[Permission, ...] = (NO, ASK, YES), level: TrustLevel = LOW,
               levels: tuple[TrustLevel, ...] = (LOW, MID, HIGH),
               change_level: TrustLevel = LOW,
               change_levels: tuple[TrustLevel, ...] = (LOW, MID, HIGH),
               ) -> MasterAccessControlEntry:
    return MasterAccessControlEntry(uid, domain, interface, level, levels, change_level,
                                    change_levels, operation, default, possible)


def master_rce(uid: str = "testUser", domain: str = "domain1", interface: str = "interface1",
               *, default: Permission = NO, possible: tuple[Permission, ...] = (NO, ASK, YES),
               level: TrustLevel = LOW, levels: tuple[TrustLevel, ...] = (LOW, MID, HIGH),
               change_level: TrustLevel = LOW,
               change_levels: tuple[TrustLevel, ...] = (LOW, MID, HIGH),
               ) -> MasterRegistrationControlEntry:
    return MasterRegistrationControlEntry(uid, domain, interface, level, levels, change_level,
                                          change_levels, default, possible)


def owner_ace(uid: str = "testUser", domain: str = "domain1", interface: str = "interface1",
              operation: str = "*", *, permission: Permission = NO, level: TrustLevel = LOW,
              change_level: TrustLevel = LOW) -> OwnerAccessControlEntry:
    return OwnerAccessControlEntry(uid, domain, interface, level, change_level, operation,
                                   permission)


def owner_rce(uid: str = "testUser", domain: str = "domain1", interface: str = "interface1",
              *, permission: Permission = NO, level: TrustLevel = LOW,
              change_level: TrustLevel = LOW) -> OwnerRegistrationControlEntry:
    return OwnerRegistrationControlEntry(uid, domain, interface, level, change_level,
                                         permission)

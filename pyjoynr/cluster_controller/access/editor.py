"""joynr's AccessControlListEditor, served by the cluster controller: an owner changes its
owner entries at run time, a master its master and mediator entries.

Who may change what, as in joynr's cluster controller: the caller's uid (the creator of the
request: its connection's uid) must hold the domain role of the table for the entry's domain
(MASTER for master and mediator entries, OWNER for owner entries; a role entry lists the
domain or ``"*"``), else the call answers ``false`` and nothing changes. The calls themselves
are checked like any other call to a provider of this host: the caller needs an access entry
for ``infrastructure/AccessControlListEditor`` on ``io.joynr.system``. The store validates what
is stored (a mediator entry within its master, an owner entry within its mediator or master;
:mod:`.store`) and answers ``false`` for what it refuses. A change made is kept in the edits
file (:mod:`.files`) and outlives restarts and reloads of the provisioning files. In audit
mode a missing role is logged (``ACL AUDIT``) and the change made all the same.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import fields
from typing import Any

from pyjoynr.cluster_controller.access import entries as core
from pyjoynr.cluster_controller.access.files import AccessEdits
from pyjoynr.cluster_controller.access.store import AccessStore
from pyjoynr.programming.access_control import (
    AccessControlListEditorProviderBase,
    MasterAccessControlEntry,
    MasterRegistrationControlEntry,
    OwnerAccessControlEntry,
    OwnerRegistrationControlEntry,
)
from pyjoynr.programming.providers import current_creator
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.telemetry import Telemetry

__all__ = ["AccessControlListEditor"]

log = get_logger(__name__)

_ENUMS: dict[str, type[enum.Enum]] = {"TrustLevel": core.TrustLevel,
                                      "Permission": core.Permission, "Role": core.Role}
#: the table of each editor list, and the role it needs
_MASTER, _OWNER = core.Role.MASTER, core.Role.OWNER


def _core_value(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return _ENUMS[type(value).__name__][value.name]
    if isinstance(value, list):
        return tuple(_core_value(v) for v in value)
    return value


def _core(cls: type[Any], entry: Any) -> Any:
    """The store's entry of a generated (wire) entry: the same fields, by name."""
    return cls(**{f.name: _core_value(getattr(entry, f.name)) for f in fields(cls)})


class AccessControlListEditor(AccessControlListEditorProviderBase):
    """The editor over one cluster controller's tables (``store``) and its edits file."""

    def __init__(self, store: AccessStore, edits: AccessEdits, *, audit: bool = False,
                 telemetry: Telemetry | None = None) -> None:
        super().__init__()
        self.store = store
        self.edits = edits
        self.audit = audit
        self._telemetry = Telemetry() if telemetry is None else telemetry
        #: edit-<table>-<outcome>: changed, refused-role, invalid, absent (a removal of no
        #: entry)
        self.counters: Counter[str] = Counter()

    def _may(self, role: core.Role, domain: str, what: str) -> bool:
        uid = current_creator() or ""
        if self.store.has_role(uid, domain, role):
            return True
        if self.audit:
            self._telemetry.warn(log, "audit-acl-editor", f"uid {uid}",
                                 "ACL AUDIT: user %r does not have the role %s for domain %r "
                                 "(%s made all the same in audit mode)", uid, role.name, domain,
                                 what)
            return True
        self.counters[f"edit-{what}-refused-role"] += 1
        self._telemetry.warn(log, "acl-editor-role", f"uid {uid}",
                             "access control editor: %s refused: user %r does not have the "
                             "role %s for domain %r", what, uid, role.name, domain)
        return False

    def _update(self, table: str, role: core.Role, cls: type[Any], wire: Any) -> bool:
        if not self._may(role, wire.domain, f"update-{table}"):
            return False
        entry = _core(cls, wire)
        problem = core.entry_problem(entry)
        if problem is not None or not getattr(self.store, f"update_{table}")(entry):
            self.counters[f"edit-update-{table}-invalid"] += 1
            log.info("access control editor: update of %s %s refused: %s", table,
                     (entry.uid, entry.domain, entry.interface_name),
                     problem or "not within the entries above it")
            return False
        self.edits.updated(table, entry)
        self.counters[f"edit-update-{table}-changed"] += 1
        log.info("access control editor: %s entry %s put by %r", table,
                 (entry.uid, entry.domain, entry.interface_name), current_creator() or "")
        return True

    def _remove(self, table: str, role: core.Role, *key: str) -> bool:
        if not self._may(role, key[1], f"remove-{table}"):
            return False
        if not getattr(self.store, f"remove_{table}")(*key):
            self.counters[f"edit-remove-{table}-absent"] += 1
            return False
        self.edits.removed(table, key)
        self.counters[f"edit-remove-{table}-changed"] += 1
        log.info("access control editor: %s entry %s removed by %r", table, key,
                 current_creator() or "")
        return True

    # ------------------------------------------------------------------ the interface

    async def update_master_access_control_entry(
            self, updated_master_ace: MasterAccessControlEntry) -> bool:
        return self._update("master_access", _MASTER, core.MasterAccessControlEntry,
                            updated_master_ace)

    async def remove_master_access_control_entry(
            self, uid: str, domain_: str, interface_name: str, operation: str) -> bool:
        return self._remove("master_access", _MASTER, uid, domain_, interface_name, operation)

    async def update_mediator_access_control_entry(
            self, updated_mediator_ace: MasterAccessControlEntry) -> bool:
        return self._update("mediator_access", _MASTER, core.MasterAccessControlEntry,
                            updated_mediator_ace)

    async def remove_mediator_access_control_entry(
            self, uid: str, domain_: str, interface_name: str, operation: str) -> bool:
        return self._remove("mediator_access", _MASTER, uid, domain_, interface_name,
                            operation)

    async def update_owner_access_control_entry(
            self, updated_owner_ace: OwnerAccessControlEntry) -> bool:
        return self._update("owner_access", _OWNER, core.OwnerAccessControlEntry,
                            updated_owner_ace)

    async def remove_owner_access_control_entry(
            self, uid: str, domain_: str, interface_name: str, operation: str) -> bool:
        return self._remove("owner_access", _OWNER, uid, domain_, interface_name, operation)

    async def update_master_registration_control_entry(
            self, updated_master_rce: MasterRegistrationControlEntry) -> bool:
        return self._update("master_registration", _MASTER,
                            core.MasterRegistrationControlEntry, updated_master_rce)

    async def remove_master_registration_control_entry(
            self, uid: str, domain_: str, interface_name: str) -> bool:
        return self._remove("master_registration", _MASTER, uid, domain_, interface_name)

    async def update_mediator_registration_control_entry(
            self, updated_mediator_rce: MasterRegistrationControlEntry) -> bool:
        return self._update("mediator_registration", _MASTER,
                            core.MasterRegistrationControlEntry, updated_mediator_rce)

    async def remove_mediator_registration_control_entry(
            self, uid: str, domain_: str, interface_name: str) -> bool:
        return self._remove("mediator_registration", _MASTER, uid, domain_, interface_name)

    async def update_owner_registration_control_entry(
            self, updated_owner_rce: OwnerRegistrationControlEntry) -> bool:
        return self._update("owner_registration", _OWNER,
                            core.OwnerRegistrationControlEntry, updated_owner_rce)

    async def remove_owner_registration_control_entry(
            self, uid: str, domain_: str, interface_name: str) -> bool:
        return self._remove("owner_registration", _OWNER, uid, domain_, interface_name)

"""joynr's access control types and its AccessControlListEditor, as a cluster controller
serves the editor and an application calls it.

Generated from ``fidl/infrastructure/AccessControlTypes.fidl`` and
``fidl/infrastructure/AccessControlListEditor.fidl`` into
:mod:`programming.generated.infrastructure` and re-exported here with the editor's
well-known participant id and domain (joynr's defaults):

- the enumerations ``Permission`` (YES, ASK, NO), ``TrustLevel`` (HIGH, MID, LOW, NONE: ranked
  in that order downwards, not compared by declaration) and ``Role`` (MASTER, OWNER);
- the entries ``MasterAccessControlEntry`` (master and mediator access control lists),
  ``OwnerAccessControlEntry``, ``MasterRegistrationControlEntry`` (master and mediator
  registration control lists), ``OwnerRegistrationControlEntry``, their bases
  ``ControlEntry``, ``MasterControlEntry``, ``OwnerControlEntry``, and ``DomainRoleEntry``,
  each named ``joynr.infrastructure.DacTypes.<Name>`` on the wire;
- ``infrastructure/AccessControlListEditor`` version 0.1: ``update_*`` and ``remove_*`` of each
  of the six lists, answering ``success``.

A module of its own beside :mod:`programming.system_interfaces` (which every runtime imports
for Routing and Discovery): only what serves or calls the editor, or reads entries, imports
these.
"""

from __future__ import annotations

from typing import Final

from pyjoynr.programming.generated.infrastructure import (
    AccessControlListEditor,
    AccessControlListEditorProviderBase,
    AccessControlListEditorProxy,
    ControlEntry,
    DomainRoleEntry,
    MasterAccessControlEntry,
    MasterControlEntry,
    MasterRegistrationControlEntry,
    OwnerAccessControlEntry,
    OwnerControlEntry,
    OwnerRegistrationControlEntry,
    Permission,
    Role,
    TrustLevel,
    build_access_control_list_editor_proxy,
)
from pyjoynr.programming.system_interfaces import SYSTEM_SERVICES_DOMAIN

__all__ = [
    "ACL_EDITOR_DOMAIN",
    "ACL_EDITOR_PARTICIPANT_ID",
    "SYSTEM_SERVICES_DOMAIN",
    "AccessControlListEditor",
    "AccessControlListEditorProviderBase",
    "AccessControlListEditorProxy",
    "ControlEntry",
    "DomainRoleEntry",
    "MasterAccessControlEntry",
    "MasterControlEntry",
    "MasterRegistrationControlEntry",
    "OwnerAccessControlEntry",
    "OwnerControlEntry",
    "OwnerRegistrationControlEntry",
    "Permission",
    "Role",
    "TrustLevel",
    "build_access_control_list_editor_proxy",
]

#: joynr's participant id of a cluster controller's AccessControlListEditor provider
ACL_EDITOR_PARTICIPANT_ID: Final = "CC.AccessControlListEditor.ParticipantId"
#: the domain joynr registers it on: the system services' domain
ACL_EDITOR_DOMAIN: Final = SYSTEM_SERVICES_DOMAIN

"""Access control entries in joynr's JSON provisioning format, for tests: one function per
kind of entry (the defaults of each field are the permissive ones joynr's sample files use),
and :func:`write_tables` for a provisioning file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_TYPES = "joynr.infrastructure.DacTypes."
ALL_TRUST = ["HIGH", "MID", "LOW", "NONE"]
ALL_PERMISSIONS = ["YES", "NO", "ASK"]


def master_ace(uid: str, domain: str, interface: str, operation: str = "*",
               permission: str = "YES", *, possible: list[str] | None = None,
               trust: str = "HIGH", possible_trust: list[str] | None = None) -> dict[str, Any]:
    """A master (or mediator) access control entry."""
    return {"_typeName": _TYPES + "MasterAccessControlEntry", "uid": uid, "domain": domain,
            "interfaceName": interface, "defaultRequiredTrustLevel": trust,
            "possibleRequiredTrustLevels": ALL_TRUST if possible_trust is None
            else possible_trust,
            "defaultRequiredControlEntryChangeTrustLevel": "HIGH",
            "possibleRequiredControlEntryChangeTrustLevels": ALL_TRUST,
            "operation": operation, "defaultConsumerPermission": permission,
            "possibleConsumerPermissions": ALL_PERMISSIONS if possible is None else possible}


def owner_ace(uid: str, domain: str, interface: str, operation: str = "*",
              permission: str = "YES", *, trust: str = "LOW") -> dict[str, Any]:
    return {"_typeName": _TYPES + "OwnerAccessControlEntry", "uid": uid, "domain": domain,
            "interfaceName": interface, "requiredTrustLevel": trust,
            "requiredAceChangeTrustLevel": trust, "operation": operation,
            "consumerPermission": permission}


def master_rce(uid: str, domain: str, interface: str, permission: str = "YES",
               possible: list[str] | None = None) -> dict[str, Any]:
    """A master (or mediator) registration control entry."""
    return {"_typeName": _TYPES + "MasterRegistrationControlEntry", "uid": uid,
            "domain": domain, "interfaceName": interface, "defaultRequiredTrustLevel": "HIGH",
            "possibleRequiredTrustLevels": ALL_TRUST,
            "defaultRequiredControlEntryChangeTrustLevel": "HIGH",
            "possibleRequiredControlEntryChangeTrustLevels": ALL_TRUST,
            "defaultProviderPermission": permission,
            "possibleProviderPermissions": ALL_PERMISSIONS if possible is None else possible}


def owner_rce(uid: str, domain: str, interface: str, permission: str = "YES"
              ) -> dict[str, Any]:
    return {"_typeName": _TYPES + "OwnerRegistrationControlEntry", "uid": uid,
            "domain": domain, "interfaceName": interface, "requiredTrustLevel": "LOW",
            "requiredAceChangeTrustLevel": "LOW", "providerPermission": permission}


def domain_role(uid: str, domains: list[str], role: str) -> dict[str, Any]:
    return {"_typeName": _TYPES + "DomainRoleEntry", "uid": uid, "domains": domains,
            "role": role}


def write_tables(path: Path, **tables: list[dict[str, Any]]) -> Path:
    """A provisioning file with the tables given (joynr's names: masterAccessTable, ...) and
    the others empty, all seven present as joynr writes them."""
    names = ("masterAccessTable", "mediatorAccessTable", "ownerAccessTable",
             "masterRegistrationTable", "mediatorRegistrationTable", "ownerRegistrationTable",
             "domainRoleTable")
    unknown = set(tables) - set(names)
    assert not unknown, unknown
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({name: tables.get(name, []) for name in names}, indent=1),
                    encoding="utf-8")
    return path

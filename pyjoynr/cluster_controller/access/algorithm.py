"""The combination rule of access control (pure): validators and ``decide``.

Three entries may speak to one question (may this uid call this / register this): a master
entry, a mediator entry and an owner entry, each found in its own table. A mediator narrows its
master, an owner chooses within its mediator (or, without one, its master); an entry that
steps outside what its parent makes possible makes the whole triple invalid. The same
functions serve access entries (consumer permissions) and registration entries (provider
permissions): the entry types name their permission fields alike (``default_permission``,
``possible_permissions``, ``permission``).
"""

from __future__ import annotations

from .entries import MasterEntry, OwnerEntry, Permission, TrustLevel


def mediator_valid(master: MasterEntry | None, mediator: MasterEntry | None) -> bool:
    """A mediator stays within its master: its default permission and default trust level
    among the master's possible ones, its possible lists subsets of the master's. Without
    either entry there is nothing to break."""
    if master is None or mediator is None:
        return True
    possible_permissions = set(master.possible_permissions)
    possible_levels = set(master.possible_required_trust_levels)
    return (mediator.default_permission in possible_permissions
            and possible_permissions.issuperset(mediator.possible_permissions)
            and mediator.default_required_trust_level in possible_levels
            and possible_levels.issuperset(mediator.possible_required_trust_levels))


def owner_fits(parent: MasterEntry, owner: OwnerEntry | None) -> bool:
    """An owner's permission and required trust level among those its parent makes possible."""
    if owner is None:
        return True
    return (owner.permission in parent.possible_permissions
            and owner.required_trust_level in parent.possible_required_trust_levels)


def owner_valid(master: MasterEntry | None, mediator: MasterEntry | None,
                owner: OwnerEntry | None) -> bool:
    """The whole triple valid: with a mediator, the mediator within the master and the owner
    within the mediator; else the owner within the master; nothing to check without either."""
    if mediator is not None:
        return mediator_valid(master, mediator) and owner_fits(mediator, owner)
    if master is not None:
        return owner_fits(master, owner)
    return True


def decide(master: MasterEntry | None, mediator: MasterEntry | None, owner: OwnerEntry | None,
           trust_level: TrustLevel) -> Permission:
    """The permission of a triple for a requester of ``trust_level``: NO when the triple is
    invalid or empty; else the one entry of highest precedence present (owner, mediator,
    master) decides alone: its permission when the trust level reaches the level it requires,
    NO when not (no fallback to an entry below)."""
    if not owner_valid(master, mediator, owner):
        return Permission.NO
    if owner is not None:
        return owner.permission if trust_level >= owner.required_trust_level else Permission.NO
    parent = mediator if mediator is not None else master
    if parent is None:
        return Permission.NO
    if trust_level >= parent.default_required_trust_level:
        return parent.default_permission
    return Permission.NO

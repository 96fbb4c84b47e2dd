"""The access store (pure): the seven tables, their lookup, the decisions and the editor's changes.

Lookup. Each of the six control tables answers a query (uid, domain, interface[, operation])
with at most one entry, the closest that matches, in this order:

1. the entries of exactly (uid, domain, interface);
2. the entries of exactly ("*", domain, interface);
3. the entries whose domain or interface ends in ``"*"``, a plain string prefix (``"dom*"``
   matches ``"dom"``, ``"domain"`` and ``"dom.x"``; ``"*"`` alone matches everything; a ``"*"``
   elsewhere is a literal character), with the uid equal or ``"*"``, closest first: the
   query's own uid before ``"*"``, then per field (domain, then interface) the exact value
   before a prefix and a longer prefix before a shorter one.

Step 2 comes before step 3 as in joynr's cluster controller: ("*", "d", "i") wins over
("u", "d*", "i") for the query ("u", "d", "i").

Operations (access tables). joynr's C++ store ignores the operation when it looks an entry up
(with entries for READ and ``"*"`` at one key, a query for WRITE can get the READ entry), and
then asks for the operation only when the exact (uid, domain, interface) holds more than the
one ``"*"`` entry per table. This store honours the operation instead, in the lookup itself:
an entry for operation READ answers only READ, an entry for ``"*"`` answers every operation,
and at one (uid, domain, interface) the exact operation comes before ``"*"``; a key whose
entries do not answer the operation is passed over as if absent, and the lookup goes on to the
next key in the order above. So an entry never grants or denies an operation it does not
name, wherever it stands in the order. A query's operation ``"*"`` is answered only by
``"*"`` entries. :meth:`AccessStore.interface_permission` answers for a whole interface when
no operation can change the answer (the closest key with entries in each of the three tables
holds only a ``"*"`` entry), and None otherwise: the caller then reads the operation from the
message and asks :meth:`AccessStore.consumer_permission`.

Speed. Exact keys are dict lookups. Entries with a wildcard are indexed per uid, then per
stored domain, then by interface; the prefixes of the stored patterns are kept in a character
trie per uid (domains) and per stored domain (interfaces), so a query finds the patterns that
match it in one walk along its own domain and interface, which stops at the first character no
stored prefix continues with: no scan of the entries, and no work per stored prefix length.

Merging (the constructor, :meth:`AccessStore.replace`) takes the tables in order, a later entry
replacing one of the same key (ACE: uid, domain, interface, operation; RCE: uid, domain,
interface; domain role: uid, role), without validation; the decision validates each triple it
uses. The editor's updates validate as joynr's: master entries not at all, a mediator entry
against the master entry found for its key, an owner entry against the mediator and master
found; a removal needs an entry of exactly that key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

from .algorithm import decide, mediator_valid, owner_valid
from .entries import (
    AccessTables,
    ControlEntry,
    DomainRoleEntry,
    MasterAccessControlEntry,
    MasterRegistrationControlEntry,
    OwnerAccessControlEntry,
    OwnerRegistrationControlEntry,
    Permission,
    Role,
    TrustLevel,
    entry_problem,
)

#: the wildcard: every user, every operation; at the end of a domain or interface, a prefix
WILDCARD = "*"
#: most entries the editor's updates may grow the store to (all seven tables)
MAX_STORE_ENTRIES = 1_000_000

E = TypeVar("E", bound=ControlEntry)
Triple = tuple[str, str, str]


class _Trie:
    """One character of a set of stored prefixes: what follows it, and how many stored prefixes
    end here."""

    __slots__ = ("children", "count")

    def __init__(self) -> None:
        self.children: dict[str, _Trie] = {}
        self.count = 0


class _Prefixes:
    """The prefixes of the stored patterns (``"dom*"`` -> ``"dom"``), counted, in a character
    trie: the stored ones that a name starts with are found in one walk along the name, which
    stops at the first character no stored prefix continues with."""

    __slots__ = ("root",)

    def __init__(self) -> None:
        self.root = _Trie()

    def add(self, prefix: str) -> None:
        node = self.root
        for char in prefix:
            child = node.children.get(char)
            if child is None:
                child = node.children[char] = _Trie()
            node = child
        node.count += 1

    def discard(self, prefix: str) -> None:
        path = [self.root]
        for char in prefix:
            path.append(path[-1].children[char])
        path[-1].count -= 1
        for depth in range(len(prefix), 0, -1):  # drop the nodes nothing needs any more
            node = path[depth]
            if node.count or node.children:
                break
            del path[depth - 1].children[prefix[depth - 1]]

    def lengths(self, name: str) -> list[int]:
        """The lengths of the stored prefixes of ``name``, shortest first."""
        node = self.root
        found = [0] if node.count else []
        for index, char in enumerate(name):
            child = node.children.get(char)
            if child is None:
                break
            node = child
            if node.count:
                found.append(index + 1)
        return found


def _is_pattern(name: str) -> bool:
    return name.endswith(WILDCARD)


def _patterns(name: str, prefixes: _Prefixes) -> Iterator[str]:
    """``name`` itself, then the stored patterns that match it, longest first (each made only
    when the one before did not answer)."""
    yield name
    for length in reversed(prefixes.lengths(name)):
        pattern = name[:length] + WILDCARD
        if pattern != name:
            yield pattern


class _DomainNode:
    """The wildcard entries of one uid and one stored domain: their interfaces."""

    __slots__ = ("interface_prefixes", "interfaces")

    def __init__(self) -> None:
        self.interfaces: dict[str, int] = {}  # stored interface -> 1
        self.interface_prefixes = _Prefixes()


class _UidNode:
    """The wildcard entries of one uid: by stored domain."""

    __slots__ = ("domain_prefixes", "domains")

    def __init__(self) -> None:
        self.domains: dict[str, _DomainNode] = {}
        self.domain_prefixes = _Prefixes()


#: the answer of a table for a whole interface when the operation decides
_DEPENDS = object()


class _Table(Generic[E]):
    """One control table: entries by key, by (uid, domain, interface), and the wildcard index."""

    __slots__ = ("by_key", "by_triple", "operations", "wild")

    def __init__(self, operations: bool) -> None:
        self.operations = operations
        self.by_key: dict[tuple[str, ...], E] = {}
        self.by_triple: dict[Triple, dict[str, E]] = {}
        self.wild: dict[str, _UidNode] = {}

    def key(self, uid: str, domain: str, interface: str, operation: str) -> tuple[str, ...]:
        return (uid, domain, interface, operation) if self.operations else (
            uid, domain, interface)

    @staticmethod
    def operation_of(entry: ControlEntry) -> str:
        operation = getattr(entry, "operation", WILDCARD)
        assert isinstance(operation, str)
        return operation

    def put(self, entry: E) -> None:
        operation = self.operation_of(entry)
        triple = (entry.uid, entry.domain, entry.interface_name)
        self.by_key[self.key(*triple, operation)] = entry
        ops = self.by_triple.get(triple)
        if ops is None:
            ops = self.by_triple[triple] = {}
            if _is_pattern(entry.domain) or _is_pattern(entry.interface_name):
                self._index(triple)
        ops[operation] = entry

    def remove(self, uid: str, domain: str, interface: str, operation: str) -> bool:
        if self.by_key.pop(self.key(uid, domain, interface, operation), None) is None:
            return False
        triple = (uid, domain, interface)
        ops = self.by_triple[triple]
        del ops[operation]
        if not ops:
            del self.by_triple[triple]
            if _is_pattern(domain) or _is_pattern(interface):
                self._unindex(triple)
        return True

    def _index(self, triple: Triple) -> None:
        uid, domain, interface = triple
        uid_node = self.wild.get(uid)
        if uid_node is None:
            uid_node = self.wild[uid] = _UidNode()
        node = uid_node.domains.get(domain)
        if node is None:
            node = uid_node.domains[domain] = _DomainNode()
            if _is_pattern(domain):
                uid_node.domain_prefixes.add(domain[:-1])
        node.interfaces[interface] = 1
        if _is_pattern(interface):
            node.interface_prefixes.add(interface[:-1])

    def _unindex(self, triple: Triple) -> None:
        uid, domain, interface = triple
        uid_node = self.wild[uid]
        node = uid_node.domains[domain]
        del node.interfaces[interface]
        if _is_pattern(interface):
            node.interface_prefixes.discard(interface[:-1])
        if not node.interfaces:
            del uid_node.domains[domain]
            if _is_pattern(domain):
                uid_node.domain_prefixes.discard(domain[:-1])
            if not uid_node.domains:
                del self.wild[uid]

    def candidates(self, uid: str, domain: str, interface: str) -> Iterator[dict[str, E]]:
        """The entries (by operation) of each stored key matching the query, closest first."""
        by_triple = self.by_triple
        found = by_triple.get((uid, domain, interface))
        if found:
            yield found
        if uid != WILDCARD:
            found = by_triple.get((WILDCARD, domain, interface))
            if found:
                yield found
        if not self.wild:
            return
        for user in (uid, WILDCARD) if uid != WILDCARD else (uid,):
            uid_node = self.wild.get(user)
            if uid_node is None:
                continue
            for domain_pattern in _patterns(domain, uid_node.domain_prefixes):
                node = uid_node.domains.get(domain_pattern)
                if node is None:
                    continue
                for interface_pattern in _patterns(interface, node.interface_prefixes):
                    if interface_pattern in node.interfaces and (
                            domain_pattern != domain or interface_pattern != interface):
                        yield by_triple[(user, domain_pattern, interface_pattern)]

    def find(self, uid: str, domain: str, interface: str, operation: str = WILDCARD) -> E | None:
        """The closest entry that answers ``operation`` (its own, else a ``"*"`` one)."""
        for ops in self.candidates(uid, domain, interface):
            entry = ops.get(operation) or ops.get(WILDCARD)
            if entry is not None:
                return entry
        return None

    def find_interface(self, uid: str, domain: str, interface: str) -> E | object | None:
        """The entry answering every operation, :data:`_DEPENDS` when the closest key with
        entries holds one for an operation other than ``"*"``, None when nothing matches."""
        for ops in self.candidates(uid, domain, interface):
            if len(ops) == 1 and WILDCARD in ops:
                return ops[WILDCARD]
            return _DEPENDS
        return None


class AccessStore:
    """The seven tables of a cluster controller's access control, merged from provisioning
    files and changed by the editor; answers who may call and who may register."""

    def __init__(self, tables: Iterable[AccessTables] = (), *,
                 max_entries: int = MAX_STORE_ENTRIES) -> None:
        #: incremented on every change (a cache of decisions keys on it)
        self.generation = 0
        #: most entries the editor's updates may grow the store to (merging is not bounded
        #: here: each file is, by its reader)
        self.max_entries = max_entries
        self._reset()
        self._merge(tables)

    def _reset(self) -> None:
        self._master_access: _Table[MasterAccessControlEntry] = _Table(operations=True)
        self._mediator_access: _Table[MasterAccessControlEntry] = _Table(operations=True)
        self._owner_access: _Table[OwnerAccessControlEntry] = _Table(operations=True)
        self._master_registration: _Table[MasterRegistrationControlEntry] = _Table(False)
        self._mediator_registration: _Table[MasterRegistrationControlEntry] = _Table(False)
        self._owner_registration: _Table[OwnerRegistrationControlEntry] = _Table(False)
        self._roles: dict[tuple[str, Role], DomainRoleEntry] = {}

    def _merge(self, tables: Iterable[AccessTables]) -> None:
        for table in tables:
            for role_entry in table.domain_roles:
                self._roles[(role_entry.uid, role_entry.role)] = role_entry
            for ace in table.master_access:
                self._master_access.put(ace)
            for ace in table.mediator_access:
                self._mediator_access.put(ace)
            for owner_ace in table.owner_access:
                self._owner_access.put(owner_ace)
            for rce in table.master_registration:
                self._master_registration.put(rce)
            for rce in table.mediator_registration:
                self._mediator_registration.put(rce)
            for owner_rce in table.owner_registration:
                self._owner_registration.put(owner_rce)

    def replace(self, tables: Iterable[AccessTables]) -> None:
        """All tables anew from ``tables`` (a reload), merged as by the constructor."""
        self._reset()
        self._merge(tables)
        self.generation += 1

    def tables(self) -> AccessTables:
        """Every entry, table by table, in the order first stored."""
        return AccessTables(
            master_access=tuple(self._master_access.by_key.values()),
            mediator_access=tuple(self._mediator_access.by_key.values()),
            owner_access=tuple(self._owner_access.by_key.values()),
            master_registration=tuple(self._master_registration.by_key.values()),
            mediator_registration=tuple(self._mediator_registration.by_key.values()),
            owner_registration=tuple(self._owner_registration.by_key.values()),
            domain_roles=tuple(self._roles.values()))

    def __len__(self) -> int:
        return (len(self._master_access.by_key) + len(self._mediator_access.by_key)
                + len(self._owner_access.by_key) + len(self._master_registration.by_key)
                + len(self._mediator_registration.by_key)
                + len(self._owner_registration.by_key) + len(self._roles))

    # -- lookups: the closest entry of one table ------------------------------------------------

    def master_access(self, uid: str, domain: str, interface_name: str,
                      operation: str) -> MasterAccessControlEntry | None:
        return self._master_access.find(uid, domain, interface_name, operation)

    def mediator_access(self, uid: str, domain: str, interface_name: str,
                        operation: str) -> MasterAccessControlEntry | None:
        return self._mediator_access.find(uid, domain, interface_name, operation)

    def owner_access(self, uid: str, domain: str, interface_name: str,
                     operation: str) -> OwnerAccessControlEntry | None:
        return self._owner_access.find(uid, domain, interface_name, operation)

    def master_registration(self, uid: str, domain: str,
                            interface_name: str) -> MasterRegistrationControlEntry | None:
        return self._master_registration.find(uid, domain, interface_name)

    def mediator_registration(self, uid: str, domain: str,
                              interface_name: str) -> MasterRegistrationControlEntry | None:
        return self._mediator_registration.find(uid, domain, interface_name)

    def owner_registration(self, uid: str, domain: str,
                           interface_name: str) -> OwnerRegistrationControlEntry | None:
        return self._owner_registration.find(uid, domain, interface_name)

    def domain_role(self, uid: str, role: Role) -> DomainRoleEntry | None:
        return self._roles.get((uid, role))

    # -- decisions ------------------------------------------------------------------------------

    def consumer_permission(self, uid: str, domain: str, interface_name: str, operation: str,
                            trust_level: TrustLevel = TrustLevel.HIGH) -> Permission:
        """May ``uid`` call ``operation`` of ``interface_name`` on ``domain``."""
        return decide(self._master_access.find(uid, domain, interface_name, operation),
                      self._mediator_access.find(uid, domain, interface_name, operation),
                      self._owner_access.find(uid, domain, interface_name, operation),
                      trust_level)

    def interface_permission(self, uid: str, domain: str, interface_name: str,
                             trust_level: TrustLevel = TrustLevel.HIGH) -> Permission | None:
        """The permission for every operation of the interface, or None when it depends on the
        operation (ask :meth:`consumer_permission` with it)."""
        master = self._master_access.find_interface(uid, domain, interface_name)
        mediator = self._mediator_access.find_interface(uid, domain, interface_name)
        owner = self._owner_access.find_interface(uid, domain, interface_name)
        if master is _DEPENDS or mediator is _DEPENDS or owner is _DEPENDS:
            return None
        assert master is None or isinstance(master, MasterAccessControlEntry)
        assert mediator is None or isinstance(mediator, MasterAccessControlEntry)
        assert owner is None or isinstance(owner, OwnerAccessControlEntry)
        return decide(master, mediator, owner, trust_level)

    def provider_permission(self, uid: str, domain: str, interface_name: str,
                            trust_level: TrustLevel = TrustLevel.HIGH) -> Permission:
        """May ``uid`` register a provider of ``interface_name`` on ``domain``."""
        return decide(self._master_registration.find(uid, domain, interface_name),
                      self._mediator_registration.find(uid, domain, interface_name),
                      self._owner_registration.find(uid, domain, interface_name),
                      trust_level)

    def has_role(self, uid: str, domain: str, role: Role) -> bool:
        """``uid`` holds ``role`` for ``domain``: its entry lists the domain exactly or ``"*"``
        (no prefixes, no ``"*"`` uid)."""
        entry = self._roles.get((uid, role))
        return entry is not None and (domain in entry.domains or WILDCARD in entry.domains)

    # -- the editor's changes -------------------------------------------------------------------

    def _admit(self, entry: ControlEntry | DomainRoleEntry, exists: bool) -> bool:
        """An entry built elsewhere is of the right types and bounds, and fits in the store."""
        if entry_problem(entry) is not None:
            return False
        return exists or len(self) < self.max_entries

    def _stored(self, table: _Table[E], entry: E) -> bool:
        key = table.key(entry.uid, entry.domain, entry.interface_name, table.operation_of(entry))
        if not self._admit(entry, key in table.by_key):
            return False
        table.put(entry)
        self.generation += 1
        return True

    def _removed(self, table: _Table[E], uid: str, domain: str, interface_name: str,
                 operation: str = WILDCARD) -> bool:
        if not table.remove(uid, domain, interface_name, operation):
            return False
        self.generation += 1
        return True

    def update_master_access(self, entry: MasterAccessControlEntry) -> bool:
        return (isinstance(entry, MasterAccessControlEntry)
                and self._stored(self._master_access, entry))

    def remove_master_access(self, uid: str, domain: str, interface_name: str,
                             operation: str) -> bool:
        return self._removed(self._master_access, uid, domain, interface_name, operation)

    def update_mediator_access(self, entry: MasterAccessControlEntry) -> bool:
        if not isinstance(entry, MasterAccessControlEntry):
            return False
        master = self._master_access.find(entry.uid, entry.domain, entry.interface_name,
                                          entry.operation)
        return mediator_valid(master, entry) and self._stored(self._mediator_access, entry)

    def remove_mediator_access(self, uid: str, domain: str, interface_name: str,
                               operation: str) -> bool:
        return self._removed(self._mediator_access, uid, domain, interface_name, operation)

    def update_owner_access(self, entry: OwnerAccessControlEntry) -> bool:
        if not isinstance(entry, OwnerAccessControlEntry):
            return False
        key = (entry.uid, entry.domain, entry.interface_name, entry.operation)
        master = self._master_access.find(*key)
        mediator = self._mediator_access.find(*key)
        return owner_valid(master, mediator, entry) and self._stored(self._owner_access, entry)

    def remove_owner_access(self, uid: str, domain: str, interface_name: str,
                            operation: str) -> bool:
        return self._removed(self._owner_access, uid, domain, interface_name, operation)

    def update_master_registration(self, entry: MasterRegistrationControlEntry) -> bool:
        return (isinstance(entry, MasterRegistrationControlEntry)
                and self._stored(self._master_registration, entry))

    def remove_master_registration(self, uid: str, domain: str, interface_name: str) -> bool:
        return self._removed(self._master_registration, uid, domain, interface_name)

    def update_mediator_registration(self, entry: MasterRegistrationControlEntry) -> bool:
        if not isinstance(entry, MasterRegistrationControlEntry):
            return False
        master = self._master_registration.find(entry.uid, entry.domain, entry.interface_name)
        return (mediator_valid(master, entry)
                and self._stored(self._mediator_registration, entry))

    def remove_mediator_registration(self, uid: str, domain: str, interface_name: str) -> bool:
        return self._removed(self._mediator_registration, uid, domain, interface_name)

    def update_owner_registration(self, entry: OwnerRegistrationControlEntry) -> bool:
        if not isinstance(entry, OwnerRegistrationControlEntry):
            return False
        key = (entry.uid, entry.domain, entry.interface_name)
        master = self._master_registration.find(*key)
        mediator = self._mediator_registration.find(*key)
        return (owner_valid(master, mediator, entry)
                and self._stored(self._owner_registration, entry))

    def remove_owner_registration(self, uid: str, domain: str, interface_name: str) -> bool:
        return self._removed(self._owner_registration, uid, domain, interface_name)

    def update_domain_role(self, entry: DomainRoleEntry) -> bool:
        if not isinstance(entry, DomainRoleEntry):
            return False
        key = (entry.uid, entry.role)
        if not self._admit(entry, key in self._roles):
            return False
        self._roles[key] = entry
        self.generation += 1
        return True

    def remove_domain_role(self, uid: str, role: Role) -> bool:
        if self._roles.pop((uid, role), None) is None:
            return False
        self.generation += 1
        return True

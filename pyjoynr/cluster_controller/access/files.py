"""The files of access control: the provisioning directory (joynr's JSON format, read at start
and again when a file changes) and the changes made through the AccessControlListEditor (kept
in a file of their own, applied over the directory's entries each time they are read).

Reads and writes only; the format is :mod:`.entries`', the decisions :mod:`.store`'s.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyjoynr.cluster_controller.access.entries import (
    TABLE_ATTRIBUTES,
    AccessFileError,
    AccessTables,
    Role,
    dump_tables,
    parse_tables,
)
from pyjoynr.cluster_controller.access.store import AccessStore
from pyjoynr.runtime.logs import get_logger

__all__ = ["AccessEdits", "DirectoryState", "ProvisioningDirectory"]

log = get_logger(__name__)

#: the tables whose key has an operation
_ACCESS_TABLES = frozenset({"master_access", "mediator_access", "owner_access"})
#: the longest edits file read back (bytes)
MAX_EDITS_FILE_BYTES = 256 * 1024 * 1024

#: what the directory looked like: (file name, size, modification time in ns) of each file
DirectoryState = tuple[tuple[str, int, int], ...]


def key_of(table: str, entry: Any) -> tuple[str, ...]:
    """The key of ``entry`` in ``table`` (joynr's: uid, domain, interface[, operation]; for a
    domain role: uid, role)."""
    if table == "domain_roles":
        return (entry.uid, entry.role.name)
    if table in _ACCESS_TABLES:
        return (entry.uid, entry.domain, entry.interface_name, entry.operation)
    return (entry.uid, entry.domain, entry.interface_name)


@dataclass(frozen=True)
class ProvisioningDirectory:
    """Every regular file of ``path`` (not its sub-directories), in name order."""

    path: Path
    max_file_bytes: int

    def state(self) -> DirectoryState:
        """What the directory looks like now (to tell a change); empty when it is gone."""
        try:
            entries = sorted(os.scandir(self.path), key=lambda e: e.name)
        except OSError:
            return ()
        found = []
        for entry in entries:
            try:
                if entry.is_file():
                    st = entry.stat()
                    found.append((entry.name, st.st_size, st.st_mtime_ns))
            except OSError:
                continue  # (gone meanwhile: the next look sees it)
        return tuple(found)

    def read(self) -> tuple[list[AccessTables], DirectoryState]:
        """The tables of every file, in name order, and the state they were read in; an
        AccessFileError naming the file (and the entry and field) for the first bad one."""
        if not self.path.is_dir():
            raise AccessFileError(f"{self.path}: the access control entries directory does "
                                  "not exist or is no directory")
        state = self.state()
        tables = []
        for name, size, _ in state:
            file = self.path / name
            if size > self.max_file_bytes:
                raise AccessFileError(f"{file}: {size} bytes, more than max_file_bytes "
                                      f"({self.max_file_bytes})")
            try:
                with open(file, "rb") as f:
                    data = f.read(self.max_file_bytes + 1)
            except OSError as exc:
                raise AccessFileError(f"{file}: cannot be read: {exc.strerror or exc}"
                                      ) from None
            if len(data) > self.max_file_bytes:
                raise AccessFileError(f"{file}: more than max_file_bytes "
                                      f"({self.max_file_bytes})")
            tables.append(parse_tables(data, str(file)))
        return tables, state


class AccessEdits:
    """The changes made through the editor: entries put (by table and key) and keys removed,
    kept in ``path`` (JSON: ``{"updated": <the provisioning format>, "removed": {<table>:
    [key, ...]}}``, written anew after each change, atomically)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._updated: dict[tuple[str, tuple[str, ...]], Any] = {}
        self._removed: dict[tuple[str, tuple[str, ...]], None] = {}

    def __len__(self) -> int:
        return len(self._updated) + len(self._removed)

    def load(self) -> None:
        """Read the file back (none yet: no changes); AccessFileError when it is bad."""
        try:
            with open(self.path, "rb") as f:
                data = f.read(MAX_EDITS_FILE_BYTES + 1)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise AccessFileError(f"{self.path}: cannot be read: {exc.strerror or exc}"
                                  ) from None
        if len(data) > MAX_EDITS_FILE_BYTES:
            raise AccessFileError(f"{self.path}: larger than {MAX_EDITS_FILE_BYTES} bytes")
        try:
            document = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise AccessFileError(f"{self.path}: not JSON: {exc}") from None
        if not isinstance(document, dict) or set(document) - {"updated", "removed"}:
            raise AccessFileError(f"{self.path}: an object with \"updated\" and \"removed\" "
                                  "expected")
        updated = parse_tables(json.dumps(document.get("updated", {})),
                               f"{self.path}: updated")
        for table in TABLE_ATTRIBUTES:
            for entry in getattr(updated, table):
                self._updated[(table, key_of(table, entry))] = entry
        removed = document.get("removed", {})
        by_name = {name: table for table, name in TABLE_ATTRIBUTES.items()}
        if not isinstance(removed, dict):
            raise AccessFileError(f"{self.path}: removed: an object expected")
        for name, keys in removed.items():
            found = by_name.get(name)
            if found is None or not isinstance(keys, list):
                raise AccessFileError(f"{self.path}: removed.{name}: not a table")
            table = found
            size = 2 if table == "domain_roles" else 4 if table in _ACCESS_TABLES else 3
            for i, key in enumerate(keys):
                if (not isinstance(key, list) or len(key) != size
                        or not all(isinstance(k, str) for k in key)
                        or (table == "domain_roles" and key[1] not in Role.__members__)):
                    raise AccessFileError(f"{self.path}: removed.{name}[{i}]: a list of "
                                          f"{size} strings expected")
                self._removed[(table, tuple(key))] = None

    def tables(self) -> AccessTables:
        """The entries put, as tables (merged after the directory's)."""
        by_table: dict[str, list[Any]] = {table: [] for table in TABLE_ATTRIBUTES}
        for (table, _), entry in self._updated.items():
            by_table[table].append(entry)
        return AccessTables(**{table: tuple(entries) for table, entries in by_table.items()})

    def apply_removals(self, store: AccessStore) -> None:
        """Remove the keys removed through the editor (after the entries were put)."""
        for table, key in self._removed:
            if table == "domain_roles":
                store.remove_domain_role(key[0], Role[key[1]])
                continue
            remover: Callable[..., bool] = getattr(store, f"remove_{table}")
            remover(*key)

    def updated(self, table: str, entry: Any) -> None:
        key = (table, key_of(table, entry))
        self._removed.pop(key, None)
        self._updated[key] = entry
        self.save()

    def removed(self, table: str, key: tuple[str, ...]) -> None:
        self._updated.pop((table, key), None)
        self._removed[(table, key)] = None
        self.save()

    def save(self) -> None:
        removed: dict[str, list[list[str]]] = {}
        for table, key in self._removed:
            removed.setdefault(TABLE_ATTRIBUTES[table], []).append(list(key))
        document = {"updated": json.loads(dump_tables(self.tables())), "removed": removed}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(document, indent=1), encoding="utf-8")
        os.replace(tmp, self.path)

"""Access control in a running cluster controller: the access controller (:mod:`.control`)
with its tables read from the provisioning directory and the editor's changes (:mod:`.files`),
read again when a file of the directory changes.

At start an unreadable directory or a bad file stops the start (``AccessFileError``: file,
entry, field). On a change the files are read in a thread and replace the tables at once;
a bad file then keeps the tables in force (logged at ERROR, counted ``reload-failed``) until
the files are read well again.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from pyjoynr.cluster_controller.access.control import AccessController, ProviderInterface
from pyjoynr.cluster_controller.access.entries import AccessFileError, AccessTables
from pyjoynr.cluster_controller.access.files import (
    AccessEdits,
    DirectoryState,
    ProvisioningDirectory,
)
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry

__all__ = ["AccessControl"]

log = get_logger(__name__)


class AccessControl:
    """The tables, where they come from, and the controller that decides by them."""

    def __init__(self, directory: Path | None, edits_file: Path, *,
                 resolve: Callable[[str], ProviderInterface | None],
                 whitelist: Iterable[str] = (), audit: bool = False,
                 reload_interval_ms: int = 2000, max_file_bytes: int = 64 * 1024 * 1024,
                 telemetry: Telemetry | None = None) -> None:
        #: reloads (``reloaded``, ``reload-failed``) and editor calls (``edit-...``)
        self.counters: Counter[str] = Counter()
        self.directory = (None if directory is None
                          else ProvisioningDirectory(directory, max_file_bytes))
        self.edits = AccessEdits(edits_file)
        self.reload_interval_s = reload_interval_ms / 1000
        self._state: DirectoryState = ()
        tables = self._read()
        self.edits.load()
        self.controller = AccessController((), resolve, whitelist=whitelist, audit=audit,
                                           telemetry=telemetry)
        self._put_in_force(tables)
        self._task: asyncio.Task[None] | None = None
        log.info("access control %s: %d entries from %d file(s) in %s, %d change(s) made "
                 "through the editor (%s)", "in audit mode" if audit else "enabled",
                 len(self.controller.store), len(tables),
                 "no directory" if directory is None else directory, len(self.edits),
                 edits_file)

    def _read(self) -> list[AccessTables]:
        if self.directory is None:
            return []
        tables, self._state = self.directory.read()
        return tables

    # ------------------------------------------------------------------ reloads

    def start(self, tasks: TaskSupervisor) -> None:
        if self.directory is not None and self.reload_interval_s > 0:
            self._task = tasks.spawn(self._watch(), name="access-control-reload")

    async def stop(self, tasks: TaskSupervisor) -> None:
        task, self._task = self._task, None
        await tasks.cancel(task)

    async def _watch(self) -> None:
        directory = self.directory
        assert directory is not None
        while True:
            await asyncio.sleep(self.reload_interval_s)
            if directory.state() != self._state:
                await self.reload()

    async def reload(self) -> bool:
        """Read the directory again (in a thread) and put its tables in force, with the
        editor's changes over them; False (logged, counted) when a file is bad: the tables in
        force stay."""
        directory = self.directory
        if directory is None:
            return False
        try:
            tables, state = await asyncio.to_thread(directory.read)
        except AccessFileError as exc:
            self.counters["reload-failed"] += 1
            # the state that failed is not read again until it changes
            self._state = directory.state()
            log.error("access control entries not reloaded, the tables in force stay: %s", exc)
            return False
        self._state = state
        self._put_in_force(tables)
        self.counters["reloaded"] += 1
        log.info("access control entries reloaded: %d entries from %d file(s) in %s",
                 len(self.controller.store), len(tables), directory.path)
        return True

    def _put_in_force(self, tables: list[AccessTables]) -> None:
        """The tables of the files, with the editor's changes over them."""
        self.controller.replace([*tables, self.edits.tables()])
        self.edits.apply_removals(self.controller.store)

"""The id of a GCD instance: what tells the instances of one backend apart.

An operator names an instance with ``[gcd] instance_id``; without one, the instance takes an id
generated once and kept in a file under ``[gcd] data_dir``, so that it keeps its id across
restarts. Several instances may run from one directory (one host, one configuration): each
holds an exclusive lock (``flock``) on the id file it uses for as long as it runs, and an
instance that finds a file locked takes the next one (``instance-id``, ``instance-id.2``, ...).
An instance restarted after its peers keeps the slot it had, as long as they keep theirs.

The id appears in the instance's log lines (``GCD <gbid> [<id>]``), its metrics
(``joynr_gcd_info{instance_id=...}``), its status page, its default MQTT client id
(``gcd-<gbid>-<id>``) and the names of its database sessions (``application_name``
``joynr-gcd-<id>``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import uuid
from pathlib import Path
from typing import IO

from pyjoynr.runtime.logs import get_logger

__all__ = ["INSTANCE_ID", "MAX_SLOTS", "InstanceIdentity", "check_instance_id", "claim",
           "instance_id_from"]

log = get_logger(__name__)

#: what an instance id may be: it goes into MQTT client ids, metric labels and
#: PostgreSQL's application_name (63 bytes, of which the prefix takes 10)
INSTANCE_ID = re.compile(r"[A-Za-z0-9._-]{1,48}")
#: id files one directory offers: instances from one directory at the same time
MAX_SLOTS = 256
_FILE_NAME = "instance-id"


def check_instance_id(text: str) -> str:
    """``text`` if it is a valid instance id, else ValueError saying what is allowed."""
    if not isinstance(text, str) or not INSTANCE_ID.fullmatch(text):
        raise ValueError(f"an instance id is 1 to 48 of A-Z, a-z, 0-9, '.', '_' and '-', "
                         f"not {text!r}")
    return text


def instance_id_from(text: str) -> str:
    """An instance id made of any text (e.g. the id of the cluster controller a GCD is
    embedded in): every character an id may not hold becomes ``_``, cut to 48."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:48] or "_"


class InstanceIdentity:
    """An instance's id and, for a generated one, the lock on the file that keeps it
    (:meth:`release` gives the file up; so does the end of the process)."""

    def __init__(self, instance_id: str, path: Path | None = None,
                 handle: IO[str] | None = None) -> None:
        self.id = instance_id
        #: the file the id is kept in (None: configured)
        self.path = path
        self._handle = handle

    def __repr__(self) -> str:
        where = f" (kept in {self.path})" if self.path is not None else " (configured)"
        return f"instance {self.id}{where}"

    def release(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            handle.close()


def claim(configured: str, data_dir: Path) -> InstanceIdentity:
    """The configured id, or the id of the first id file under ``data_dir`` that no running
    instance holds (generated and written on first use). OSError when the directory cannot
    be written or every slot is held."""
    if configured:
        return InstanceIdentity(check_instance_id(configured))
    data_dir.mkdir(parents=True, exist_ok=True)
    for slot in range(1, MAX_SLOTS + 1):
        path = data_dir / (_FILE_NAME if slot == 1 else f"{_FILE_NAME}.{slot}")
        handle = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue  # a running instance holds it
        except BaseException:
            handle.close()
            raise
        try:
            handle.seek(0)
            kept = handle.read().strip()
            if INSTANCE_ID.fullmatch(kept):
                return InstanceIdentity(kept, path, handle)
            new_id = uuid.uuid4().hex[:12]
            handle.seek(0)
            handle.truncate()
            handle.write(new_id + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            handle.close()
            raise
        if kept:
            log.warning("%s held no valid instance id (%r); generated %s", path, kept[:60],
                        new_id)
        else:
            log.info("generated GCD instance id %s (kept in %s)", new_id, path)
        return InstanceIdentity(new_id, path, handle)
    raise OSError(f"every one of the {MAX_SLOTS} instance id files in {data_dir} is held by a "
                  "running instance; give this one [gcd] instance_id or a data_dir of its own")

"""Reading what the audit log and the routing snapshots wrote, in tests."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

from pyjoynr.runtime import records


def audit_files(directory: Path) -> list[Path]:
    """The closed audit files in ``directory`` (what a reader takes), oldest first."""
    return sorted(directory.glob("audit-*.jsonl.gz"))


def read_jsonl_gz(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="ascii") as file:
        return [json.loads(line) for line in file]


def read_audit(directory: Path, proc: str | None = None) -> list[dict[str, Any]]:
    """Every record of every closed audit file (of process ``proc``), in file order; each one
    checked against the schema (exact keys, version, outcome)."""
    found = []
    for path in audit_files(directory):
        if proc is not None and not path.name.startswith(
                f"audit-{records.file_process_id(proc)}-"):
            continue
        for record in read_jsonl_gz(path):
            assert list(record) == list(records.AUDIT_FIELDS), record
            assert record["v"] == 1
            assert record["outcome"] in records.OUTCOMES
            if proc is not None:
                assert record["proc"] == proc
            found.append(record)
    return found


def outcomes(found: list[dict[str, Any]]) -> Counter[tuple[str, str | None]]:
    """(outcome, reason) -> count."""
    return Counter((r["outcome"], r["reason"]) for r in found)


def between(found: list[dict[str, Any]], *participants: str) -> list[dict[str, Any]]:
    """The records of messages whose sender and recipient are both among ``participants``."""
    wanted = set(participants)
    return [r for r in found if r["sender"] in wanted and r["recipient"] in wanted]

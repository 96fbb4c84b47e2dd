"""Traffic is attributed by (participantId, the record's GBID) first: a participantId
registered as vehicle/Radio in one GBID and as vehicle/Navigation in another gets each record
under the interface of the record's own GBID. Without a row in the record's GBID (or without a
GBID: a local hop), the participant's rows decide when they agree; when they disagree the
record is "(registrations disagree)", counted as such, never filed under one of them.

A fleet made for it: the directory in a real GCD store (SQLite, through the store's API, read
over JDBC), the audit records in a file written to docs/records.md, each record made with the
interface it belongs to (so the expected figures are known by construction)."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from pathlib import Path
from typing import Any

from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.pipeline import commands
from pyjoynr.pipeline.jobs.traffic import AMBIGUOUS
from pyjoynr.pipeline.readers import directory_source
from tests.pipeline import fleet

G1, G2, G3 = "g1", "g2", "g3"
RADIO = ("d.car", "vehicle/Radio")
NAVIGATION = ("d.car", "vehicle/Navigation")
CLOCK = ("d.car", "vehicle/Clock")
HOME_RADIO = ("d.home", "vehicle/Radio")
DISAGREE = (AMBIGUOUS, AMBIGUOUS)
UNKNOWN = (fleet.UNKNOWN, fleet.UNKNOWN)

DIRECTORY = [
    # registered as two interfaces: one per GBID
    fleet.entry(G1, "dual-1", *RADIO, "cc-a"),
    fleet.entry(G2, "dual-1", *NAVIGATION, "cc-a"),
    # one row only
    fleet.entry(G1, "solo-1", *CLOCK, "cc-a"),
    # two rows that agree
    fleet.entry(G1, "twin-1", *HOME_RADIO, "cc-b"),
    fleet.entry(G2, "twin-1", *HOME_RADIO, "cc-b"),
]

_ids = itertools.count(1)


def make(n: int, mtype: str, provider: str, gbid: str | None, hop: str | None, *,
         refused: str | None = None) -> list[dict[str, Any]]:
    """``n`` records of type ``mtype`` concerning ``provider`` (its recipient for what a
    provider receives, its sender for what it sends); ``refused``: refused with that reason,
    from the backend of ``gbid``."""
    made = []
    for _ in range(n):
        number = next(_ids)
        sends = mtype in ("rp", "srp", "p", "m")
        sender, recipient = (provider, "consumer-1") if sends else ("consumer-1", provider)
        made.append(fleet.audit(fleet.H0 + number, "cc-a", f"m{number}", mtype, sender,
                                recipient, hop, gbid, 10,
                                "refused" if refused else "delivered", refused,
                                f"backend {gbid}" if refused else None))
    return made


#: (records, the (domain, interface) each belongs to)
CASES: list[tuple[list[dict[str, Any]], tuple[str, str]]] = [
    # dual-1 in the GBID of its Radio row, and of its Navigation row
    (make(3, "rq", "dual-1", G1, "mqtt"), RADIO),
    (make(1, "p", "dual-1", G1, "mqtt"), RADIO),  # a publication: the sender is the provider
    (make(2, "rq", "dual-1", G2, "mqtt"), NAVIGATION),
    (make(1, "rq", "dual-1", G2, None, refused="refused-relay"), NAVIGATION),
    # dual-1 without a row in the record's GBID, or without a GBID: its rows disagree
    (make(4, "rp", "dual-1", None, "websocket"), DISAGREE),
    (make(1, "o", "dual-1", G3, "mqtt"), DISAGREE),
    # solo-1 in a GBID it has no row in, and locally: its one row
    (make(2, "rq", "solo-1", G2, "mqtt"), CLOCK),
    (make(1, "rp", "solo-1", None, "websocket"), CLOCK),
    # twin-1's rows agree
    (make(1, "rq", "twin-1", G3, "mqtt"), HOME_RADIO),
    (make(1, "rq", "twin-1", G2, "mqtt"), HOME_RADIO),
    # not in the directory
    (make(1, "rq", "ghost-1", G1, "mqtt"), UNKNOWN),
]


def test_each_record_is_filed_under_the_interface_of_its_gbid(make_run: Any,
                                                              tmp_path: Path) -> None:
    sqlite = tmp_path / "gcd.sqlite"

    async def fill() -> None:
        store = SqliteStore(sqlite)
        await store.open()
        try:
            await fleet.fill_store(store, DIRECTORY)
        finally:
            await store.close()

    asyncio.run(fill())
    audit_dir = tmp_path / "audit"
    audit_dir.mkdir()
    records = [r for made, _ in CASES for r in made]
    (audit_dir / fleet.audit_name("cc-a", fleet.H0, 1)).write_bytes(fleet.jsonl_gz(records))

    run = make_run()
    commands.ingest(run, str(audit_dir), "")
    entries = commands.load_directory(run, directory_source(str(sqlite), ""))
    try:
        summary = commands.traffic(run, entries)
    finally:
        entries.unpersist()

    # (domain, interface, gbid, outcome) -> messages, from how the records were made
    expected = Counter((*interface, r["gbid"], r["outcome"])
                       for made, interface in CASES for r in made)
    assert expected == {
        (*RADIO, G1, "delivered"): 4,
        (*NAVIGATION, G2, "delivered"): 2, (*NAVIGATION, G2, "refused"): 1,
        (*DISAGREE, None, "delivered"): 4, (*DISAGREE, G3, "delivered"): 1,
        (*CLOCK, G2, "delivered"): 2, (*CLOCK, None, "delivered"): 1,
        (*HOME_RADIO, G3, "delivered"): 1, (*HOME_RADIO, G2, "delivered"): 1,
        (*UNKNOWN, G1, "delivered"): 1}
    outcomes: Counter[tuple[str, str, str | None, str]] = Counter()
    for row in run.spark.read.parquet(str(run.out / "traffic/outcomes")).collect():
        outcomes[(row["domain"], row["interface_name"], row["gbid"], row["outcome"])] += (
            row["records"])
    assert outcomes == expected
    assert (summary["messages"], summary["delivered"], summary["refused"],
            summary["unattributed"], summary["ambiguous"]) == (18, 17, 1, 1, 5)
    hourly = {(r["domain"], r["interface_name"], r["gbid"]): (r["messages"], r["bytes"])
              for r in run.spark.read.parquet(str(run.out / "traffic/hourly")).collect()}
    assert hourly[(*RADIO, G1)] == (4, 40)
    assert hourly[(*NAVIGATION, G2)] == (3, 20)
    assert hourly[(*DISAGREE, None)] == (4, 40)

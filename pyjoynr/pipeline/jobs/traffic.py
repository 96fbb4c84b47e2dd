"""The traffic job: where messages go, what they cost, what gets dropped and who is refused
(pure: DataFrames in and out).

Input: audit records (docs/records.md v1, as ingested: :data:`pipeline.schemas.AUDIT_V1`
fields) and the directory. An audit header names no interface, so each record is attributed
to the provider it concerns, by the record's message type (its wire code,
:data:`pipeline.schemas.MESSAGE_TYPES`): the recipient of the types a provider receives
(:data:`PROVIDER_RECEIVES`: requests, one-way messages, subscription requests of the three
kinds, subscription stops), the sender of the types it sends (:data:`PROVIDER_SENDS`:
replies, subscription replies, publications, multicasts). The provider is looked up in the
directory, which has one row per (GBID, participantId), and the attribution never guesses:

1. by (participantId, the record's ``gbid``): the row of the GBID the message went to or
   came from;
2. else (no such row, or a record without a GBID: a local hop) by participantId alone, when
   all the participant's rows name the same domain and interface;
3. else, when they disagree (a participantId registered as one interface in one GBID and
   as another in another), :data:`AMBIGUOUS`: counted as such (``summary.ambiguous``), not
   filed under one of them;
4. a provider not in the directory is :data:`UNKNOWN`, and so is a record of a type in
   neither list (ingest rejects those as ``bad-field``).

A **message** is a record of a final outcome (delivered, dropped or refused): a message that
waited in a queue has a ``queued`` record first and is counted once, by its final one.
Times are grouped by UTC hour. ``gbid`` is the backend of an MQTT hop (null for local hops).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

__all__ = [
    "AMBIGUOUS",
    "PROVIDER_RECEIVES",
    "PROVIDER_SENDS",
    "UNKNOWN",
    "attributed",
    "drops",
    "hourly",
    "interfaces",
    "outcomes",
    "refusals",
    "summary",
    "top_senders",
]

#: the wire codes of the message types a provider sends (docs/records.md, docs/wire.md):
#: reply, subscription reply, publication, multicast (a multicast's recipient is its
#: multicast id, its sender the provider)
PROVIDER_SENDS = ("rp", "srp", "p", "m")
#: the wire codes of the message types a provider receives: request, one-way, attribute,
#: broadcast and multicast subscription requests, subscription stop
PROVIDER_RECEIVES = ("rq", "o", "arq", "brq", "mrq", "sst")
#: domain and interface of a provider that is not in the directory
UNKNOWN = "(not in directory)"
#: domain and interface of a provider whose rows disagree on them, for a record whose GBID
#: has no row of it (or that has no GBID)
AMBIGUOUS = "(registrations disagree)"


def _final() -> Column:
    return F.col("outcome") != "queued"


def interfaces(directory: DataFrame) -> DataFrame:
    """One row per participant: ``participant_id``, ``by_gbid`` (GBID -> its row's domain and
    interface_name) and ``agreed`` (the domain and interface_name all its rows name; when they
    disagree, :data:`AMBIGUOUS` for both). Joined to the records once, by participantId."""
    named = F.struct("domain", "interface_name")
    return (directory.groupBy("participant_id")
            .agg(F.map_from_entries(F.collect_list(F.struct("gbid", named))).alias("by_gbid"),
                 F.min(named).alias("least"), F.max(named).alias("most"))
            .select("participant_id", "by_gbid",
                    F.when(F.col("least") == F.col("most"), F.col("least"))
                    .otherwise(F.struct(F.lit(AMBIGUOUS).alias("domain"),
                                        F.lit(AMBIGUOUS).alias("interface_name")))
                    .alias("agreed")))


def attributed(audit: DataFrame, provider_interfaces: DataFrame) -> DataFrame:
    """The audit records with the provider's ``domain`` and ``interface_name`` (see the module
    docstring: by the record's GBID first) and the UTC ``hour`` of the decision."""
    provider = (F.when(F.col("type").isin(*PROVIDER_SENDS), F.col("sender"))
                .when(F.col("type").isin(*PROVIDER_RECEIVES), F.col("recipient")))
    known = provider_interfaces.withColumnRenamed("participant_id", "provider")
    of_gbid = F.when(F.col("gbid").isNotNull(), F.element_at("by_gbid", F.col("gbid")))
    chosen = F.coalesce(of_gbid, F.col("agreed"))
    return (audit.withColumn("provider", provider)
            .join(known, "provider", "left")
            .withColumn("i", chosen)
            .select(F.coalesce("i.domain", F.lit(UNKNOWN)).alias("domain"),
                    F.coalesce("i.interface_name", F.lit(UNKNOWN)).alias("interface_name"),
                    "gbid",
                    F.date_trunc("hour", F.timestamp_millis("ts")).alias("hour"),
                    "outcome", "reason", "bytes", "queued_ms"))


def outcomes(records: DataFrame) -> DataFrame:
    """Per (domain, interface, GBID, hour, outcome, reason): records, bytes, and for delivered
    ones the p50 and p99 of the time queued. The one aggregation over the records: the other
    tables are drawn from it."""
    queued = F.when(F.col("outcome") == "delivered", F.col("queued_ms"))
    return (records.groupBy("domain", "interface_name", "gbid", "hour", "outcome", "reason")
            .agg(F.count(F.lit(1)).alias("records"),
                 F.sum("bytes").alias("bytes"),
                 F.percentile_approx(queued, [0.5, 0.99]).alias("queued_ms")))


def _records(outcome: str) -> Column:
    return F.sum(F.when(F.col("outcome") == outcome, F.col("records")).otherwise(0))


def hourly(per_outcome: DataFrame) -> DataFrame:
    """Per (domain, interface, GBID, hour): messages (final outcomes), delivered, queued,
    dropped, refused, bytes delivered, p50 and p99 ms queued of the delivered ones."""
    delivered = F.col("outcome") == "delivered"
    return (per_outcome.groupBy("domain", "interface_name", "gbid", "hour")
            .agg(F.sum(F.when(_final(), F.col("records")).otherwise(0)).alias("messages"),
                 _records("delivered").alias("delivered"),
                 _records("queued").alias("queued"),
                 _records("dropped").alias("dropped"),
                 _records("refused").alias("refused"),
                 F.sum(F.when(delivered, F.col("bytes")).otherwise(0)).alias("bytes"),
                 # delivered records have no reason: one group per hour holds them all
                 F.max(F.when(delivered, F.col("queued_ms")[0])).alias("queued_p50_ms"),
                 F.max(F.when(delivered, F.col("queued_ms")[1])).alias("queued_p99_ms"))
            # small (interfaces times GBIDs times hours): one partition, sorted, instead of a
            # global sort's extra sampling job
            .coalesce(1).sortWithinPartitions("hour", "domain", "interface_name", "gbid"))


def drops(per_outcome: DataFrame) -> DataFrame:
    """Dropped and refused messages per (domain, interface, GBID, hour, outcome, reason)."""
    return (per_outcome.where(F.col("outcome").isin("dropped", "refused"))
            .select("domain", "interface_name", "gbid", "hour", "outcome", "reason",
                    F.col("records").alias("messages"))
            .coalesce(1)
            .sortWithinPartitions("hour", "domain", "interface_name", "gbid", "outcome",
                                  "reason"))


def top_senders(audit: DataFrame, n: int) -> DataFrame:
    """The ``n`` participants that sent the most messages (ties: by participantId)."""
    return (audit.where(_final()).groupBy("sender")
            .agg(F.count(F.lit(1)).alias("messages"), F.sum("bytes").alias("bytes"))
            .orderBy(F.desc("messages"), "sender").limit(n))


def refusals(audit: DataFrame) -> DataFrame:
    """The security view: refused messages per reason and peer, with the first and last time
    (epoch ms). Small (reasons times peers): one partition, sorted, most messages first, so
    that its first rows as stored are the top ones (the report shows those)."""
    return (audit.where(F.col("outcome") == "refused").groupBy("reason", "peer")
            .agg(F.count(F.lit(1)).alias("messages"),
                 F.min("ts").alias("first_ms"), F.max("ts").alias("last_ms"))
            .coalesce(1).sortWithinPartitions(F.desc("messages"), "reason", "peer"))


def summary(per_outcome: DataFrame) -> DataFrame:
    """One row: records, messages, each outcome, bytes delivered, messages of providers not in
    the directory (``unattributed``), and of providers whose rows disagree on the interface
    with no row in the message's GBID (``ambiguous``)."""
    return per_outcome.agg(
        F.coalesce(F.sum("records"), F.lit(0)).alias("records"),
        F.coalesce(F.sum(F.when(_final(), F.col("records"))), F.lit(0)).alias("messages"),
        *(F.coalesce(_records(o), F.lit(0)).alias(o)
          for o in ("delivered", "queued", "dropped", "refused")),
        F.coalesce(F.sum(F.when(F.col("outcome") == "delivered", F.col("bytes"))), F.lit(0))
        .alias("bytes"),
        F.coalesce(F.sum(F.when(_final() & (F.col("domain") == UNKNOWN), F.col("records"))),
                   F.lit(0)).alias("unattributed"),
        F.coalesce(F.sum(F.when(_final() & (F.col("domain") == AMBIGUOUS), F.col("records"))),
                   F.lit(0)).alias("ambiguous"))

"""The pipeline's jobs: plain functions from DataFrames to DataFrames, built from Spark's
built-in functions (no Python UDF), making no session and doing no I/O; tested on small
frames built in the test.

- :mod:`pipeline.jobs.ingest` - lines -> records or counted rejects; per-file status;
- :mod:`pipeline.jobs.directory` - registrations, expired entries, cluster controllers and
  the stale ones, diverging registrations, participants of several cluster controllers;
- :mod:`pipeline.jobs.traffic` - per interface, GBID and hour; drops; senders; refusals;
- :mod:`pipeline.jobs.drift` - routing snapshots against the directory;
- :mod:`pipeline.jobs.housekeeping` - the purge plan.
"""

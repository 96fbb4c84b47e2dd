"""The fleet data pipeline: PySpark jobs over the GCD's directory, the cluster controllers'
message audit logs and their routing table snapshots (``bin/pipeline``; docs/pipeline.md).

It shares nothing with the rest of the project but the documented schemas: the record files
of docs/records.md, schema version 1 (its own Spark schemas of them in
:mod:`pipeline.schemas`), the GCD store's table ``discovery_entries`` (read over JDBC), and,
for ``housekeeping --apply`` only, the GCD's joynr interface reached through the public
libjoynr API; and the settings loader (:mod:`runtime.config`), whose rules it follows.

Modules, from the edges in:

- :mod:`pipeline.__main__` - the command line (``bin/pipeline <job>``, ``--help`` on each);
- :mod:`pipeline.config` - settings (``config/pipeline.toml``, environment, options);
- :mod:`pipeline.session` - the one SparkSession of a command, progress lines;
- :mod:`pipeline.schemas` - the input schemas, written out;
- :mod:`pipeline.readers` - record files (checked per file, then read), the directory over
  JDBC, the tables written before;
- :mod:`pipeline.jobs` - the jobs as plain functions from DataFrames to DataFrames (no
  session, no I/O): ingest, directory, traffic, drift, housekeeping;
- :mod:`pipeline.writers` - Parquet tables, the plan file;
- :mod:`pipeline.commands` - each command: readers -> jobs -> writers;
- :mod:`pipeline.report` - the HTML page (self-contained, charts drawn by inline script);
- :mod:`pipeline.apply` - carrying out a housekeeping plan through the GCD's interface.
"""

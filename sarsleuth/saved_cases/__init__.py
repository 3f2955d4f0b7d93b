"""A case on disk as Parquet, to query with SQL or reopen in a notebook
without parsing anything again.

Layout of a case directory (``analyze --save DIR``)::

    sarsleuth-case.json            what the directory holds (version, tables, hosts,
                                   each part's size and BLAKE2b digest), written last
    metrics/host=<name>/part-0.parquet    one partition per host, written by the
    events/host=<name>/part-0.parquet     host's own worker
    findings.parquet  incidents.parquet  fleet_incidents.parquet
    sources.parquet   hosts.parquet      summaries.parquet  limits.parquet

``hosts`` holds each host's facts (kernel, CPUs, memory, zone and where the
zone was read, the bundle); ``limits`` each configured limit a bundle gave
(sysctl values, nginx directives, nginx processes' limits) with the file
and line it was read from.

Every table has a ``host`` column of its own (the folder name is for people:
host names from inputs are percent-encoded there).  Times are instants in
UTC; a host whose clock was only its wall clock (zone unknown) has its times
stored as if they were UTC and ``wall_clock`` true in ``hosts``.

``tables`` writes the tables, ``folder`` makes the write whole or nothing
(a private folder renamed into place), ``reading`` reads them back, every
part checked against the marker first.
"""
from sarsleuth.saved_cases.layout import MARKER, PARTITIONED, TABLES
from sarsleuth.saved_cases.reading import StoredCase, load_case, run_sql
from sarsleuth.saved_cases.tables import (partition_name, prepare_case_dir, source_row, write_fleet_tables,
                                    write_host_tables)

__all__ = ["MARKER", "PARTITIONED", "TABLES", "StoredCase", "load_case", "run_sql", "partition_name",
           "prepare_case_dir", "source_row", "write_fleet_tables", "write_host_tables"]

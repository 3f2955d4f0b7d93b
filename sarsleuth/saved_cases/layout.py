"""What a case directory holds (see :mod:`sarsleuth.saved_cases`)."""

#: Written last: what the directory holds, and every part's size and digest.
MARKER = "sarsleuth-case.json"
TABLES = ("metrics", "events", "findings", "incidents", "fleet_incidents", "sources", "hosts", "summaries",
          "limits")
#: Tables written as one part per host (``metrics/host=NAME/part-0.parquet``).
PARTITIONED = ("metrics", "events")

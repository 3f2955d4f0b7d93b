"""The metrics of a source or a case, held compactly: one run per series.

A series is ``(host, section, device, metric)``; its run holds its sample
times and its values.  Time arrays are shared by every series sampled at
the same instants (the metrics of one device, the devices of one sa
record), and each run's values sit in the narrowest type that gives every
one of them back exactly (``int8`` for a counter that stays at 0,
``float32`` where float32 returns the same double, ``float64`` otherwise).
A one-second day of sa data so takes a fifth to a third of its file size
in memory, where the long table (21 bytes a value) took nearly three
times it.

The long table of the contract (``case.metrics``, ``source.metrics``,
``parse --format csv``) is built from the store when asked for, in time
order.  Detectors read series straight from the runs.

numpy and pandas are imported inside functions: the command line's
``--help`` and ``sniff`` import this module's users without them.
"""
from __future__ import annotations

from sarsleuth.metric_store.build import StoreBuilder, combine, from_long, narrowest
from sarsleuth.metric_store.runs import KEY_COLUMNS, Run, empty_long, joined_series, run_series
from sarsleuth.metric_store.store import MetricStore

__all__ = ["KEY_COLUMNS", "MetricStore", "Run", "StoreBuilder", "combine", "empty_long", "from_long",
           "joined_series", "narrowest", "run_series"]

"""sar history out to Prometheus: ``parse PATH... --format openmetrics``.

Every metric of the inputs (sa files of any sysstat, sar and sadf texts,
folders, archives, support bundles, or a saved case), on the case's
settled clock, as OpenMetrics text that ``promtool tsdb
create-blocks-from openmetrics`` turns into Prometheus blocks.  What each
sar metric is called there is data (``knowledge/metric_names.toml``, read
by :mod:`.names`); :mod:`.exposition` writes the text, :mod:`.command` is
the command line's side.
"""
from __future__ import annotations

from sarsleuth.openmetrics.exposition import Written, write

__all__ = ["Written", "write"]

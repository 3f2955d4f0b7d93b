"""What ``parse`` writes of a source: the contract's long table (metrics if
it has any, else its events), read whole or, for an sa file written by a
format that streams, a slice of records at a time; the fields of its
load-test reports.  The formats that write them are in
:mod:`sarsleuth.render` (``write_rows``, ``write_reports``).
"""
from __future__ import annotations

from sarsleuth.model import EVENT_COLUMNS, METRIC_COLUMNS
from sarsleuth.render._rows import Frames


def source_table(src):
    """The contract's long table for a source (metrics if it has any, else
    its events), typed as parsed: timestamps stay timestamps.  No copy."""
    if src.metrics is not None and len(src.metrics):
        return src.metrics[METRIC_COLUMNS]
    if src.events is not None and len(src.events):
        return src.events[EVENT_COLUMNS]
    from sarsleuth.model import empty_events
    return empty_events()[EVENT_COLUMNS]


def read_for_export(path, kind, fmt: str, options):
    """(Source, the frames after its first, or None) for ``parse --format
    fmt``: an sa file written by a format that streams (CSV, JSON lines) is
    read a slice of records at a time (a one-second day is tens of millions
    of rows, never held whole; ``src.metrics`` holds the first slice),
    anything else whole."""
    from sarsleuth import render
    from sarsleuth.parsers import parse, registry, sniff
    if getattr(render.get(fmt), "STREAMS", False) and (kind or sniff(path)[0]) == "sa":
        return registry()["sa"].stream(path, options)
    return parse(path, kind, options), None


def streamed_table(src, rest, settled) -> Frames:
    """The contract's metrics table of a streamed source: its first frame
    then ``rest``, each put on the clock that ``settled`` (the
    :class:`~sarsleuth.timebase.Settlement` of the source) chose."""
    import itertools

    from sarsleuth.timebase import hosts, zones
    source_zone = settled.host_zones.get(hosts.host_of(src))

    def on_clock(frames):
        for frame in frames:
            converted = zones.to_clock(frame["timestamp"], source_zone, settled.zone)
            if converted is not frame["timestamp"]:
                frame["timestamp"] = converted
            yield frame
    return Frames(METRIC_COLUMNS, itertools.chain([src.metrics], on_clock(rest)))


def reports_json(src) -> list:
    """Load-test reports as JSON-safe dicts."""
    from sarsleuth.compare import report_json
    return [report_json(r) for r in src.reports]

"""What ``parse`` writes of a source: the contract's long table (metrics if
it has any, else its events), read whole or, for an sa file written by a
format that streams, a slice of records at a time; the fields of its
load-test reports.  The formats that write them are in
:mod:`sarsleuth.render` (``write_rows``, ``write_reports``).
"""
from __future__ import annotations

import itertools
import os

from sarsleuth import render
from sarsleuth.inputs import named_paths as streams
from sarsleuth.errors import InputError
from sarsleuth.model import EVENT_COLUMNS, METRIC_COLUMNS, empty_events
from sarsleuth.inputs.parsers import ParseOptions, parse, registry, sniff
from sarsleuth.progress import reading
from sarsleuth.render.files import atomic_output, stdout
from sarsleuth.render.rows import Frames
from sarsleuth.inputs.gathering import stream_head_problem
from sarsleuth.timebase import hosts, settle, zones


def export_source(path, kind, fmt: str, output, opts, *, layout: str = "long", progress: bool = True, say,
                  terminal: bool = False) -> None:
    """The command: one input (a pipe copied once) read, put on its clock
    and written in format ``fmt`` onto ``output`` (stdout when None);
    warnings said through ``say`` before the table, the guesses (a year
    from the file's date, a zone) once it is out.  ``opts``: the checked
    :class:`~sarsleuth.options.Options`."""
    spooled = streams.Spooled()
    try:
        # a pipe is copied once (refused at its head when nothing reads it, unless --kind says what it is),
        # a device refused
        given = streams.spool([path], spooled, judge=None if kind else stream_head_problem)
        for name, reason in spooled.unreadable:
            raise InputError(name, reason)
        size = file_size(given[0])
        with reading([size], progress) as shown:
            shown.open(spooled.names.get(str(given[0]), str(path)), size)
            src, rest = read_for_export(given[0], kind, fmt,
                                        ParseOptions(year=opts.year, date_order=opts.date_order,
                                                     progress=shown.within), layout)
            if str(given[0]) in spooled.names:
                streams.relabel(src, str(given[0]), spooled.names[str(given[0])])
            settled = settle([src], registry(), tz=opts.tz, placed_by=("--tz",))
            for w in [*spooled.warnings, *src.warnings, *settled.warnings]:
                say(f"warning: {w}")
            if rest is not None:
                rest = streamed_table(src, rest, settled)
            # an sa file is read as it is written
            write_parsed(src, fmt, output, path, table=rest, layout=layout, terminal=terminal)
    finally:
        spooled.cleanup()
    for note in settled.notes:
        say(f"note: {note}")


def source_table(src):
    """The contract's long table for a source (metrics if it has any, else
    its events), typed as parsed: timestamps stay timestamps.  No copy."""
    if src.metrics is not None and len(src.metrics):
        return src.metrics[METRIC_COLUMNS]
    if src.events is not None and len(src.events):
        return src.events[EVENT_COLUMNS]
    return empty_events()[EVENT_COLUMNS]


def read_for_export(path, kind, fmt: str, options, layout: str = "long"):
    """(Source, the frames after its first, or None) for ``parse --format
    fmt``: an sa file written in the long layout by a format that streams
    (CSV, JSON lines) is read a slice of records at a time (a one-second
    day is tens of millions of rows, never held whole; ``src.metrics`` holds
    the first slice), anything else whole (the wide layout goes section by
    section over the whole file, from its compact store)."""
    if layout == "long" and getattr(render.get(fmt), "STREAMS", False) and (kind or sniff(path)[0]) == "sa":
        return registry()["sa"].stream(path, options)
    return parse(path, kind, options), None


def file_size(path) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def write_parsed(src, fmt: str, output, path, table=None, layout: str = "long", terminal: bool = False) -> None:
    """``parse``'s output of a Source onto ``output`` (a path, written
    whole or not at all) or standard output: load-test reports' fields (in
    a format that writes them), an sa file in sadf -d's layout, else the
    long table (``table``: the streamed frames of an sa file)."""
    if src.reports and render.writes(fmt, "reports"):
        write_reports, reports = render.writer(fmt, "reports"), reports_json(src)
        if output is None:
            _written(lambda out: write_reports(reports, out), stdout())
        else:
            with atomic_output(output, [path]) as fh:
                write_reports(reports, fh)
        return
    if layout == "wide":
        from sarsleuth.errors import UsageError
        from sarsleuth.render.export_wide import wide_layout_refusal, write_wide
        refusal = wide_layout_refusal(src)
        if refusal:
            raise UsageError(refusal)
        write = write_wide
    else:
        table, writer = source_table(src) if table is None else table, render.writer(fmt, "rows")

        def write(_src, out, terminal=False):
            writer(table, out, terminal=terminal)
    if output is None:
        _written(lambda out: write(src, out.buffer, terminal=terminal), stdout())
        return
    with atomic_output(output, [path], binary=True) as fh:
        write(src, fh)


def _written(write, out) -> None:
    """``write(out)``, flushed here so that a full disk is reported now."""
    write(out)
    out.flush()


def streamed_table(src, rest, settled) -> Frames:
    """The contract's metrics table of a streamed source: its first frame
    then ``rest``, each put on the clock that ``settled`` (the
    :class:`~sarsleuth.timebase.Settlement` of the source) chose."""
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
    # here, not at the top: the comparison module (pandas, the JSON writer)
    # is start-up an sa file's export does not need
    from sarsleuth.render.formats.json import report_json
    return [report_json(r) for r in src.reports]

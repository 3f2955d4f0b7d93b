"""What ``parse`` writes of every input at once: their metrics, in a
format of the registry that writes them (``write_metrics``:
``--format openmetrics``).  The inputs are read as one case (no detectors
run), or a saved case is reopened.

The store of the case is held (a quarter of the sa files' size, see
:mod:`sarsleuth.metric_store`) because OpenMetrics writes each family's
series together while the inputs hold every family in each record; the
text itself goes out a slice at a time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sarsleuth import render
from sarsleuth.errors import InputError, UsageError
from sarsleuth.knowledge.metric_names import LABEL, device_labels
from sarsleuth.metric_store import MetricStore, from_long
from sarsleuth.options import Options
from sarsleuth.render.files import atomic_output
from sarsleuth.saved_cases.layout import MARKER
from sarsleuth.saved_cases.reading import case_dir_of, read_marker, read_part, table_parts

#: Labels sarsleuth sets itself; ``--label`` may not take them.
RESERVED = frozenset({"host", "__name__"})


@dataclass
class Metrics:
    """The metrics of the inputs and what the user must hear about them."""

    store: object
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    skipped: list = field(default_factory=list)     # (path, reason)


def asked(fmt: str, paths, *, kind=None, labels=None) -> bool:
    """Does ``parse`` write every metric of the inputs (a format that
    writes metrics)?  Refuses what only those formats take (several
    inputs, ``--label``) with another, and ``--kind`` with them."""
    metric_formats = ", ".join(render.names("metrics"))
    if render.writes(fmt, "metrics"):
        if kind is not None:
            raise UsageError(f"--kind is for one file: --format {fmt} reads every input by its content")
        return True
    if labels:
        raise UsageError(f"--label is for --format {metric_formats}")
    if len(paths) != 1:
        raise UsageError(f"--format {fmt} reads one file: several inputs are for --format {metric_formats}")
    return False


def extra_labels(texts) -> tuple:
    """``--label NAME=VALUE`` options as (name, value) pairs."""
    out = {}
    taken = RESERVED | device_labels()
    for text in texts or ():
        name, eq, value = text.partition("=")
        if not eq or not LABEL.match(name) or name.startswith("__"):
            raise UsageError(f"--label {text!r}: expected NAME=VALUE, NAME a Prometheus label name")
        if name in taken:
            raise UsageError(f"--label {name}: sarsleuth sets that label itself "
                             f"({', '.join(sorted(taken - {'__name__'}))})")
        if name in out:
            raise UsageError(f"--label {name}: given twice")
        out[name] = value
    return tuple(sorted(out.items()))


def is_saved_case(path) -> bool:
    return Path(path).is_dir() and (Path(path) / MARKER).is_file()


def read(paths, options: Options) -> Metrics:
    """The metrics of ``paths`` on one clock: a saved case's as saved (UTC
    instants), anything else read as ``analyze`` reads it."""
    if len(paths) == 1 and is_saved_case(paths[0]):
        notes = [f"--{name} has no effect on a saved case: its times are instants"
                 for name, given in (("tz", options.tz), ("year", options.year), ("date-order", options.date_order))
                 if given]
        return Metrics(saved_store(paths[0]), notes=notes)
    if any(is_saved_case(p) for p in paths):
        raise UsageError("a saved case is exported on its own: give it as the only input")
    # here, not at the top: ``parse`` of one file asks :func:`asked` and
    # reads no case (the analysis and its detectors are 50 ms of start-up)
    from sarsleuth.analysis.pipeline import run
    done = run(paths, options, analyse=False)
    return Metrics(done.store, warnings=list(done.warnings), notes=list(done.notes),
                   skipped=[(s.path, s.reason) for s in done.skipped])


def saved_store(path):
    """The metric store of a saved case, one host's part at a time, each
    part checked against the case's marker first."""
    base = case_dir_of(path)
    runs = {}
    for part in table_parts(base, read_marker(base), "metrics"):
        frame = read_part(part).to_pandas()
        runs.update(from_long(frame).runs)
        del frame
    return MetricStore(runs)


def wall_clock_note(hosts) -> str:
    return (f"times of {', '.join(hosts)} are the host's wall clock (its zone is not known): written as if UTC; "
            "give --tz ZONE for instants")


def unmapped_warning(unmapped: dict) -> str:
    """One line naming what no Prometheus name exists for."""
    shown = ", ".join(f"{section} {metric}" for section, metric in sorted(unmapped)[:8])
    more = f" and {len(unmapped) - 8} more" if len(unmapped) > 8 else ""
    series = sum(unmapped.values())
    return (f"{series} series not exported: no Prometheus name for {shown}{more} "
            "(docs/metric-names.md lists every sar metric)")


def export(paths, fmt: str, output, options: Options, *, labels=(), say, to_stdout, terminal: bool = False) -> None:
    """The command: the metrics of ``paths`` in format ``fmt`` onto
    ``output`` (stdout when None, through ``to_stdout``), what was skipped,
    left out or guessed said through ``say``."""
    write = render.writer(fmt, "metrics")
    extra = extra_labels(labels)
    metrics = read(paths, options)
    for path, reason in metrics.skipped:
        say(f"warning: skipped {path}: {reason}")
    for w in metrics.warnings:
        say(f"warning: {w}")
    if not metrics.store:
        reasons = "; ".join(f"{p}: {r}" for p, r in metrics.skipped[:3])
        raise InputError(None, f"no metrics in the inputs{': ' + reasons if reasons else ''}")
    if output is None:
        done = []
        to_stdout(lambda out: done.append(write(metrics.store, out.buffer, labels=extra, terminal=terminal)))
        written = done[0]
    else:
        with atomic_output(output, paths, binary=True) as fh:
            written = write(metrics.store, fh, labels=extra)
    if written.unmapped:
        say(f"warning: {unmapped_warning(written.unmapped)}")
    if written.repeated:
        say(f"warning: {written.repeated} sample(s) left out: their series already had a value at that time "
            "(a wall clock's repeated hour, a clock stepped back)")
    for note in metrics.notes + ([wall_clock_note(written.wall_clock_hosts)] if written.wall_clock_hosts else []):
        say(f"note: {note}")

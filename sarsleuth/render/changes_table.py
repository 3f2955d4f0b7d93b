"""``sarsleuth changes``: a ranking of what changed as a table every
table format writes (records: the entries as incidents carry them)."""
from __future__ import annotations

from sarsleuth.analysis.pipeline import run
from sarsleuth.analysis.what_changed import entry_of, user_ranking
from sarsleuth.errors import InputError
from sarsleuth.model import iso
from sarsleuth.options import check_options, parse_window
from sarsleuth.render.table import Column, Table, key, number


def changes_table(changes, count: int, zone=None) -> Table:
    """The ``count`` changes ranked first (departing ones only), each with
    its baseline's and its window's level in sar's units."""
    records = [entry_of(changes, lead, (), zone, findings=False) for _, lead in changes.top(count).iterrows()]
    window = " to ".join(iso(t) or "" for t in changes.window)
    against = (" against " + " to ".join(iso(t) or "" for t in changes.baseline) if changes.baseline
               else " against the hours before it and the day before")
    hosts = sorted({r["host"] for r in records})
    note = "; ".join(changes.notes)
    if not records:
        note = "nothing departed from its baseline" + (f"; {note}" if note else "")
    return Table(
        title=f"What changed {window}{against}" + (f" on {', '.join(hosts)}" if hosts else ""),
        records=records, note=note, columns=[
            Column("#", key("rank"), numeric=True),
            *([Column("host", key("host"))] if len(hosts) > 1 else []),
            Column("series", key("series"), code=True),
            Column("unit", key("unit")),
            Column("", key("direction")),
            Column("baseline", lambda r: "none" if r["new"] else number(r["baseline"]), numeric=True),
            Column("window", lambda r: number(r["window"]), numeric=True),
            Column("baseline of", key("baseline_part")),
        ])


def changes_of_paths(paths, window, baseline, count: int, *, tz=None, year=None) -> Table:
    """``sarsleuth changes``: the inputs read (no detectors run) and ranked."""
    parse_window(window), parse_window(baseline)     # a usage error before anything is read
    read = run(paths, check_options(tz=tz, year=year), analyse=False)
    if not read.sources:
        reasons = "; ".join(s.reason for s in read.skipped[:3]) or "no input files"
        raise InputError(None, f"no usable input: {reasons}")
    found = user_ranking(read.store, read.events, read.sources, read.clock, window, baseline)
    return changes_table(found, count, read.clock.zone)

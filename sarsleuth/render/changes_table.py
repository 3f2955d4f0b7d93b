"""``sarsleuth changes``: a ranking of what changed as a table every
table format writes (records: the entries as incidents carry them), or,
with ``--hosts``, the hosts ranked by how much they departed in the
window."""
from __future__ import annotations

from sarsleuth.analysis.pipeline import run
from sarsleuth.analysis.what_changed import entry_of, hosts_departed, user_ranking
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


def hosts_table(changes, count: int, hosts=()) -> Table:
    """The hosts of a ranking, the one that departed most first: its
    departing entries, their summed score and its largest change; the
    hosts that departed nowhere are named in the note."""
    ranked = hosts_departed(changes).head(count)
    records = [{"rank": n, "host": r["host"], "entries": int(r["entries"]), "score": round(float(r["score"]), 3),
                "largest": r["largest"]} for n, r in enumerate(ranked.to_dict("records"), 1)]
    window = " to ".join(iso(t) or "" for t in changes.window)
    quiet = sorted(set(hosts) - {r["host"] for r in records})
    note = f"departed nowhere: {', '.join(quiet)}" if quiet else ""
    if not records:
        note = "no host departed from its baseline" + (f"; {note}" if note else "")
    return Table(title=f"Hosts that departed most {window}", records=records, note=note, columns=[
        Column("#", key("rank"), numeric=True), Column("host", key("host")),
        Column("changes", lambda r: number(r["entries"]), numeric=True),
        Column("score", lambda r: number(r["score"]), numeric=True),
        Column("largest", key("largest"), code=True)])


def changes_of_paths(paths, window, baseline, count: int, *, tz=None, year=None, by_host: bool = False) -> Table:
    """``sarsleuth changes``: the inputs read (no detectors run) and ranked
    (``by_host``: the hosts ranked)."""
    parse_window(window), parse_window(baseline)     # a usage error before anything is read
    read = run(paths, check_options(tz=tz, year=year), analyse=False)
    if not read.sources:
        reasons = "; ".join(s.reason for s in read.skipped[:3]) or "no input files"
        raise InputError(None, f"no usable input: {reasons}")
    found = user_ranking(read.store, read.events, read.sources, read.clock, window, baseline)
    if by_host:
        known = set(read.store.hosts() if read.store else ()) | {s.host for s in read.sources if s.host}
        return hosts_table(found, count, known)
    return changes_table(found, count, read.clock.zone)

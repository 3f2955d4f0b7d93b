"""Stage 3, combine: the sources' metrics and events as the case's one
metric store and one events table.

The same thing read twice counts once.  A sample rendered twice (``sa06``
and ``sar06.txt``) is one value; where the renderings differ, what sadc
wrote (the binary file) is used and the disagreement is said.  A log line
read through two files (syslog and kern.log, a file given twice,
overlapping excerpts, a ``dmesg`` and the syslog that copied it) is one
event; lines repeated within one file are real repeats."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sarsleuth.metric_store import MetricStore, combine
from sarsleuth.model import empty_events
from sarsleuth.timebase.clock import on_clock


@dataclass
class Combined:
    store: MetricStore
    events: pd.DataFrame
    reports: list = field(default_factory=list)
    #: duplicates counted once: {"events": n, "metric_values": n}
    merged: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def combine_sources(sources) -> Combined:
    """One metric store and one events table (in time order) for ``sources``."""
    events = [s.events for s in sources if s.events is not None and len(s.events)]
    # the same sample from two renderings (sa06 and sar06.txt) counts once;
    # where they differ, what sadc wrote (a binary file) is what is used
    holders = sorted((s for s in sources if s.store), key=lambda s: s.kind != "sa")
    store, merged, disagreements = combine([s.store for s in holders])
    out = Combined(store=store or MetricStore(), events=empty_events())
    if merged:
        out.merged["metric_values"] = merged
        out.notes.append(f"{merged} metric values appeared in more than one source and were counted once")
    out.warnings.extend(disagreement_warnings(disagreements, holders))
    if events:
        e = pd.concat(events, ignore_index=True)
        if len(events) > 1 or any("files" in s.meta for s in sources):
            # each file its own origin, also inside a source that holds several
            by_source = np.repeat(np.arange(len(events)), [len(x) for x in events])
            by_file = pd.factorize(e["file"].astype(object), use_na_sentinel=True)[0]
            origin = by_source * (int(by_file.max(initial=0)) + 2) + by_file + 1
            e, merged = _merge_duplicate_events(e, origin)
            if merged:
                out.merged["events"] = merged
                out.notes.append(f"{merged} log event(s) appeared in more than one file and were counted "
                                 "once (the same host, time and message)")
        out.events = e.sort_values(["timestamp", "file", "line"], kind="stable",
                                   na_position="last").reset_index(drop=True)
    for s in sources:
        for r in s.reports:
            r.setdefault("path", s.path)
            out.reports.append(r)
    return out


#: Seconds between a line's wall time in ``dmesg -T`` (boot time plus the
#: uptime, printed to the second) and in the syslog copy of it (when
#: rsyslog received it) that still make them one line.
COPY_SECONDS = 2.0


def _uptime_of_the_copy(events, origin):
    """Each row's uptime stamp; a row printed without one (``dmesg -T``)
    takes that of the same host's same message in another file within
    :data:`COPY_SECONDS`, so that the kernel's one line read from both
    files is known by one stamp."""
    uptime = events["uptime"]
    if not uptime.isna().any() or not uptime.notna().any():
        return uptime
    when = pd.to_datetime(events["timestamp"], utc=True, errors="coerce")
    rows = pd.DataFrame({"host": events["host"].astype(object).fillna("").astype(str),
                         "message": events["message"].astype(object).fillna("").astype(str),
                         "t": (when - pd.Timestamp(0, tz="UTC")).dt.total_seconds(),
                         "origin": origin, "uptime": uptime.to_numpy(dtype=float)})
    rows = rows[rows["t"].notna()].sort_values("t")
    without = rows[rows["uptime"].isna()].drop(columns="uptime")
    found = pd.merge_asof(without.reset_index(), rows[rows["uptime"].notna()].rename(columns={"origin": "theirs"}),
                          on="t", by=["host", "message"], direction="nearest", tolerance=COPY_SECONDS)
    found = found[found["uptime"].notna() & (found["theirs"] != found["origin"])]
    out = uptime.copy()
    out.loc[found["index"].to_numpy()] = found["uptime"].to_numpy()
    return out


def _merge_duplicate_events(events, origin):
    """The same event read through two files (syslog and kern.log, a file
    given twice, overlapping excerpts, a dmesg and the syslog that copied
    it) counts once.  Identity is the host, the message and the time (the
    kernel's uptime stamp when there is one: it survives the copy exactly,
    while a dmesg's wall time is only aligned).  Lines repeated *within* one
    file are real repeats: an event seen n times in one file and m times in
    another counts max(n, m) times (a row of repeats keeps the larger
    ``repeats`` and ``count``).  ``origin`` numbers the source of each row.
    Returns the events and how many lines were counted once."""
    uptime = _uptime_of_the_copy(events, origin)
    stamp = uptime.round(6).astype(object).where(uptime.notna(), events["timestamp"].astype(object))
    key = pd.DataFrame({"host": events["host"].astype(object).fillna(""),
                        "message": events["message"].astype(object), "stamp": stamp})
    key["origin"] = origin
    # the n-th copy of an identical line within its file
    key["nth"] = key.groupby(["host", "message", "stamp", "origin"], sort=False, dropna=False).cumcount()
    same = ["host", "message", "stamp", "nth"]
    duplicate = key.duplicated(same, keep="first").to_numpy()
    if not duplicate.any():
        return events, 0
    repeats = events["repeats"].fillna(1)
    merged = int(repeats[duplicate].sum())
    by = [key[c] for c in same]
    events = events.assign(
        repeats=repeats.groupby(by, sort=False, dropna=False).transform("max").astype("Int64"),
        count=events["count"].fillna(1).groupby(by, sort=False, dropna=False).transform("max").astype("Int64"))
    return events[~duplicate].reset_index(drop=True), merged


def disagreement_warnings(disagreements, holders) -> list[str]:
    """One warning per pair of sources that give one series different
    values at the same times: where they differ most, how many values
    differ, and which source the story uses."""
    pairs: dict = {}
    for d in disagreements:
        pairs.setdefault((d.kept_store, d.dropped_store), []).append(d)
    out = []
    for (kept, dropped), found in pairs.items():
        a, b = os.path.basename(holders[kept].path), os.path.basename(holders[dropped].path)
        first = max(found, key=lambda d: (d.gap, -d.stamp))
        host, section, device, metric = first.key
        when = pd.Timestamp(first.stamp, tz="UTC") if first.tz is not None else pd.Timestamp(first.stamp)
        when = on_clock(when, first.tz) if first.tz is not None else when
        what = f"{section} {metric}" + (f" of {device}" if device else "")
        why = " (the binary file sadc wrote)" if holders[kept].kind == "sa" else " (read first)"
        out.append(f"{a} and {b} disagree on {sum(d.count for d in found)} value(s) of {len(found)} series"
                   f"{f' of {host}' if host else ''}: {what} at {when.strftime('%Y-%m-%d %H:%M:%S')} is "
                   f"{first.kept:g} in {a} and {first.dropped:g} in {b}; the story uses {a}{why}")
    return out

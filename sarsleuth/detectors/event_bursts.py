"""Helpers shared by the log detectors: bursts of events in time, who
logged an event and how many lines it stands for."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class Burst:
    host: object
    rows: object        # DataFrame of the events in the burst
    start: object
    end: object
    aligned: bool

    @property
    def lines(self) -> int:
        """Log lines the burst stands for (``callbacks suppressed`` included)."""
        return int(self.rows["count"].fillna(1).sum())


#: Names a title lists before it says how many more there are.
TITLE_NAMES = 4


def listed(names, shown: int = TITLE_NAMES) -> str:
    """``a, b, c, d and 973 more``: a title stays a line however many
    programs, servers or packages a burst names (the refs keep them all)."""
    names = list(names)
    more = f" and {len(names) - shown:,} more" if len(names) > shown else ""
    return ", ".join(str(n) for n in names[:shown]) + more


def printed(rows) -> int:
    """Times the lines of event rows were printed: a row of identical lines
    stored once counts each of its ``repeats``."""
    if "repeats" not in rows:
        return len(rows)
    return int(rows["repeats"].fillna(1).sum())


def recurrences(findings: list, resource_of, count_of, until: str = "end"):
    """The same failure of one resource, bursts apart (a link that flaps
    all night, a program killed every few minutes, a CPU stalling again):
    each finding on the shared clock names ``resource_of(f)`` (a tuple,
    None for none) as its ``refs.resource`` (kb ``recurs`` then makes one
    incident of its times); yields, for each resource found in several
    findings, ``(resource, findings in time order, the sum of count_of,
    "from T1 to T2")``, T2 the last one's ``until`` ("start" or "end"),
    both dated when they are on different days."""
    by_resource: dict = {}
    for f in findings:
        resource = resource_of(f) if f.aligned else None
        if resource:
            f.refs["resource"] = list(resource)
            by_resource.setdefault((f.host, tuple(resource)), []).append(f)
    for (_host, resource), times in by_resource.items():
        if len(times) < 2:
            continue
        times.sort(key=lambda f: f.start)
        first, last = pd.Timestamp(times[0].start), pd.Timestamp(getattr(times[-1], until))
        said = "%H:%M:%S" if first.date() == last.date() else "%Y-%m-%d %H:%M:%S"
        yield resource, times, sum(int(count_of(f)) for f in times), f"from {first.strftime(said)} to {last.strftime(said)}"


def numbered(times: list, count_of):
    """Each finding of a recurrence with which of its times it holds:
    ``(finding, "3" or "3 to 5", how many)``."""
    seen = 0
    for f in times:
        n = int(count_of(f))
        yield f, (f"{seen + 1}" if n == 1 else f"{seen + 1} to {seen + n}"), n
        seen += n


def tell_recurring(findings: list, resource_of, count_of, told_of) -> None:
    """:func:`recurrences` told as bursts: each finding says which burst
    it is, and ``refs.recurring`` is ``told_of(resource, findings, times,
    span)`` for all of them."""
    for resource, times, count, span in recurrences(findings, resource_of, count_of):
        told = told_of(resource, times, count, span)
        for k, f in enumerate(times, 1):
            f.refs["recurring"] = told
            f.metrics["bursts_recurring"] = len(times)
            f.title += f"; burst {k} of {len(times)}"


#: process names that say nobody in particular logged a line
_NO_WRITER = ("None", "kernel")


def writer(row) -> str:
    """Who logged an event row: its syslog tag, nginx for its own
    error.log, '' for the kernel's lines (they name no program) and when
    nothing says."""
    proc = getattr(row, "process", None)
    if isinstance(proc, str) and proc and proc not in _NO_WRITER:
        return proc
    return "nginx" if str(getattr(row, "source", "")) == "nginx-error" else ""


def lines_by_writer(rows) -> dict:
    """{who logged: log lines} of a burst's rows, most first (then by
    name): :func:`writer` of every row at once, each row counted as
    :attr:`Burst.lines` counts it; rows nobody is said to have logged are
    left out."""
    if not len(rows):
        return {}
    proc = (rows["process"] if "process" in rows.columns else pd.Series(None, index=rows.index)).astype("string")
    who = proc.where(proc.notna() & ~proc.isin(("",) + _NO_WRITER))
    if "source" in rows.columns:
        who = who.mask(who.isna() & (rows["source"].astype(str) == "nginx-error"), "nginx")
    lines = rows["count"].fillna(1) if "count" in rows.columns else pd.Series(1, index=rows.index)
    totals = lines[who.notna()].groupby(who[who.notna()]).sum()
    return {str(k): int(v) for k, v in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))}


def lines_of(row) -> int:
    """The log lines an event row stands for (``callbacks suppressed`` and
    aggregated bursts included)."""
    n = getattr(row, "count", None)
    return int(n) if n is not None and n == n and n else 1


def bursts(events, gap_seconds: float = 600.0, by_host: bool = True) -> list[Burst]:
    """Split events into bursts separated by more than ``gap_seconds``.
    Events whose time is not on the shared clock (NaT) form one unaligned
    burst per host."""
    out: list[Burst] = []
    if events is None or not len(events):
        return out
    groups = events.groupby(events["host"].fillna(""), sort=True) if by_host else [("", events)]
    for host, part in groups:
        host = host or None
        timed = part[part["timestamp"].notna()].sort_values(["timestamp", "line"], kind="stable")
        untimed = part[part["timestamp"].isna()]
        if len(timed):
            # a row of repeats lasts from its first to its last line
            span = timed["repeat_span"].fillna(0.0) if "repeat_span" in timed else 0.0
            ends = timed["timestamp"] + pd.to_timedelta(span, unit="s")
            gaps = (timed["timestamp"] - ends.cummax().shift()).dt.total_seconds().fillna(0).to_numpy()
            cuts = (np.flatnonzero(gaps > gap_seconds)).tolist()
            for lo, hi in zip([0] + cuts, cuts + [len(timed)]):
                chunk = timed.iloc[lo:hi]
                out.append(Burst(host, chunk, chunk["timestamp"].iloc[0], ends.iloc[lo:hi].max(), True))
        if len(untimed):
            out.append(Burst(host, untimed.sort_values("line"), pd.NaT, pd.NaT, False))
    return out

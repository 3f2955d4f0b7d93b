"""How much CPU a process used during a finding, from ``ps`` snapshots.

``ps``'s %CPU is not the CPU a process uses now: it is its CPU time over
its whole life (procps divides the TIME column by the seconds since the
process started).  A collector started a second before its own ``ps``
shows 36 % after 0.7 s of CPU, and a daemon that idled for a week and
burnt a CPU for the last minute shows 0.6 %.  So the share of a window a
process took is estimated from what the snapshots do say:

- two snapshots of the same process (same PID and start): the CPU time it
  gained between them over the seconds between them, its rate then;
- one snapshot: its life-long rate, over the part of the window it was
  alive in; it started no earlier than its CPU time over its rate allows
  (a process of 36.6 % whose TIME is 0:00 has lived less than
  1 / 0.366 = 2.7 s).

A snapshot taken before the window says nothing of it.  A program's share
of one CPU over the part of the window the snapshot covers is its
processes' rates over the longest any of them was alive in it (a program
whose workers are killed and started again is there all along, each
worker young), in % as ``ps`` prints %CPU, so the thresholds that name a
program keep their meaning.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pandas as pd

_CPUTIME = re.compile(r"^(?:(?P<days>\d+)-)?(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d\d)(?:\.(?P<frac>\d+))?$")
#: TIME is printed to the second (or to the hundredth by ``ps -o cputime``
#: variants); what it hides is below this many seconds.
CPUTIME_STEP_S = 1.0


def cputime_seconds(text) -> float | None:
    """``ps``'s TIME (``0:00``, ``12:34``, ``01:02:03``, ``3-04:05:06``,
    ``1:23.45``) in seconds; None when it does not read as one."""
    m = _CPUTIME.match(str(text or "").strip())
    if not m:
        return None
    seconds = (int(m["days"] or 0) * 86400 + int(m["h"] or 0) * 3600 + int(m["m"]) * 60 + int(m["s"])
               + (float("0." + m["frac"]) if m["frac"] else 0.0))
    return float(seconds)


def _earliest_start(row, taken: pd.Timestamp) -> pd.Timestamp | None:
    """The earliest instant the process can have started: its CPU time at
    its life-long rate allows it only so long a life.  (Its START column is
    the host's wall clock to the minute, which the case's clock may not
    be: it is not used.)"""
    pct = _pct(row)
    cpu = cputime_seconds(getattr(row, "time", None))
    if pct <= 0 or cpu is None:
        return None
    return taken - pd.Timedelta(seconds=(cpu + CPUTIME_STEP_S) * 100.0 / pct)


def _pct(row) -> float:
    v = row._asdict().get("cpu_pct") if hasattr(row, "_asdict") else getattr(row, "cpu_pct", None)
    try:
        v = float(v)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(v) else v


def window_share(row, taken, start, end, earlier=None) -> tuple[float, float] | None:
    """How the process of ``row`` used the CPUs over the part of
    ``start``..``end`` a snapshot taken at ``taken`` covers: ``(rate,
    alive)``, its rate in % of one CPU and the fraction of that part it
    was alive in; None when the snapshot says nothing of the window (taken
    before it).  ``earlier``: ``(row, taken)`` of the same process in an
    earlier snapshot, whose CPU time gives its rate between the two."""
    try:
        taken, start, end = pd.Timestamp(taken), pd.Timestamp(start), pd.Timestamp(end)
    except (TypeError, ValueError):
        return None
    if taken < start:
        return None
    rate = _pct(row)
    if earlier is not None:
        before, then = earlier
        cpu_now, cpu_then = cputime_seconds(getattr(row, "time", None)), cputime_seconds(getattr(before, "time", None))
        between = (taken - pd.Timestamp(then)).total_seconds()
        if cpu_now is not None and cpu_then is not None and between > 0 and cpu_now >= cpu_then:
            rate = 100.0 * (cpu_now - cpu_then) / between
    covered_end = min(end, taken)
    span = (covered_end - start).total_seconds()
    if span <= 0:
        return rate, 1.0            # a window of one sample: the snapshot is read as it is
    began = _earliest_start(row, taken)
    alive_from = max(start, began) if began is not None else start
    return rate, min(1.0, max(0.0, (covered_end - alive_from).total_seconds()) / span)


#: A process below this %CPU adds too little to a burn to be counted in it
#: (and its age, CPU time over a small rate, is the least certain).
MIN_BURN_PCT = 10.0
#: A burn shorter than this is not told from a ps snapshot (TIME's second).
MIN_BURN_S = 5.0


@dataclass
class YoungBurn:
    """Processes that all started within ``seconds`` before a snapshot and
    used ``cpus_used`` CPUs on average since (``cpu_seconds`` of CPU
    time); ``rows``: (line, text) of their ps rows, busiest first."""

    began: pd.Timestamp
    seconds: float
    cpus_used: float
    cpu_seconds: float
    rows: list


def young_burn(frame, taken, ncpu: int, *, share: float, max_age_s: float) -> YoungBurn | None:
    """The longest span before ``taken`` (a snapshot's time) over which the
    processes of ``frame`` (ps rows, ``cpu_pct`` for ``%cpu``) that all
    started within it used at least ``share`` of ``ncpu`` CPUs, no longer
    than ``max_age_s``; None when there is none.

    A process's age is its CPU time over its life-long rate (the middle of
    the second TIME hides), and all of its CPU time falls within its life:
    the CPU time of the processes younger than a span, over the span, is
    what they used of the CPUs in it; the others used more on top."""
    taken = pd.Timestamp(taken)
    young = []
    for r in frame.itertuples(index=False):
        pct, cpu = _pct(r), cputime_seconds(getattr(r, "time", None))
        if pct < MIN_BURN_PCT or cpu is None:
            continue
        age = (cpu + CPUTIME_STEP_S / 2) * 100.0 / pct
        if age <= max_age_s:
            young.append((age, pct, r))
    young.sort(key=lambda x: x[0])
    best, used = None, 0.0
    for i, (age, pct, _r) in enumerate(young):
        used += pct / 100.0 * age
        if age >= MIN_BURN_S and used / (age * ncpu) >= share:
            best = (i, age, used)
    if best is None:
        return None
    i, age, used = best
    rows = sorted(young[:i + 1], key=lambda x: -x[1])
    # TIME is known to the second: so is the start it gives
    began = (taken - pd.Timedelta(seconds=age)).round("1s")
    return YoungBurn(began=began, seconds=age, cpus_used=used / age, cpu_seconds=used,
                     rows=[(int(r.line), str(r.text)) for _a, _p, r in rows])

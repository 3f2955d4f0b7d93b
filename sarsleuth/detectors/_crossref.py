"""Cross-source identities: the same process seen by the kernel and by nginx.

A worker that dies on signal 11 leaves an ``exited on signal 11`` line in
nginx's error.log and a ``segfault at`` line in the kernel log; a worker the
OOM killer picks leaves ``exited on signal 9`` and ``Killed process``.  Both
lines name the same PID: they are one event seen twice, and the detectors
say so (and the ranking counts it once).
"""
from __future__ import annotations

import re

from sarsleuth.model import Evidence

EXIT_RE = re.compile(r"(?P<what>worker|cache manager|cache loader|helper)? ?process (?P<pid>\d+) exited on signal "
                     r"(?P<sig>\d+)(?P<core> \(core dumped\))?")
KILLED_RE = re.compile(r"Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]*)\)(?P<rest>.*)")


def _line(v):
    try:
        return None if v is None or str(v) == "<NA>" else int(v)
    except (TypeError, ValueError):
        return None


def nginx_exits(ctx, signal: int) -> dict:
    """{pid: event row} of nginx ``exited on signal <signal>`` lines."""
    out = {}
    ev = ctx.events_of("worker-signal-exit")
    if ev is None or not len(ev):
        return out
    for r in ev.itertuples(index=False):
        m = EXIT_RE.search(str(r.message))
        if m and int(m["sig"]) == signal:
            out.setdefault(int(m["pid"]), r)
    return out


def oom_victims(ctx) -> dict:
    """{pid: (event row, comm)} of processes the OOM killer killed."""
    out = {}
    ev = ctx.events_of("oom-kill")
    if ev is None or not len(ev):
        return out
    for r in ev.itertuples(index=False):
        detail = r.detail if isinstance(r.detail, str) else ""
        killed = list(KILLED_RE.finditer(str(r.message))) or [
            m for m in KILLED_RE.finditer(detail) if m.group(0).startswith("Killed")]
        for m in killed:
            out.setdefault(int(m["pid"]), (r, m["comm"]))
    return out


def close_in_time(a, b, seconds: float) -> bool:
    """Are two event times within ``seconds``?  When either is not on the
    shared clock (NaT) the PID alone decides."""
    import pandas as pd
    ta, tb = getattr(a, "timestamp", None), getattr(b, "timestamp", None)
    if ta is None or tb is None or pd.isna(ta) or pd.isna(tb):
        return True
    try:
        return abs((pd.Timestamp(ta) - pd.Timestamp(tb)).total_seconds()) <= seconds
    except TypeError:  # naive vs aware: not comparable, trust the PID
        return True


def where(row) -> str:
    """``error.log:12`` for an event row."""
    import os
    line = _line(row.line)
    return os.path.basename(str(row.file)) + (f":{line}" if line else "")


def evidence_of(row, text: str) -> Evidence:
    return Evidence(str(row.file), _line(row.line), text)

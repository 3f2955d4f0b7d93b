"""Cross-source identities: the same process seen by the kernel and by nginx.

A worker that dies on signal 11 leaves an ``exited on signal 11`` line in
nginx's error.log and a ``segfault at`` line in the kernel log; a worker the
OOM killer picks leaves ``exited on signal 9`` and ``Killed process``.  Both
lines name the same PID: they are one event seen twice, and the detectors
say so (and the ranking counts it once).
"""
from __future__ import annotations

import os

import pandas as pd

from sarsleuth.knowledge.signatures import all_fields_of, fields_of
from sarsleuth.model import Evidence


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
        exit_ = fields_of("worker-signal-exit", str(r.message))
        if exit_ and int(exit_["signal"]) == signal:
            out.setdefault(int(exit_["pid"]), r)
    return out


def kills_of(message: str, detail) -> list[dict]:
    """What one ``oom-kill`` event says was killed: the fields of its
    message (a kernel kill, a systemd-oomd or earlyoom kill, or the kernel's
    choice when its kill line is missing), else the ``Killed process``
    lines of its detail.  A constraint summary alone names no kill."""
    def kills(text: str, chosen_too: bool) -> list[dict]:
        return [f for f in all_fields_of("oom-kill", text)
                if "constraint" not in f and (f.get("verb", "Killed") == "Killed" or chosen_too)]
    found = kills(str(message), True)
    if not found and isinstance(detail, str):
        found = kills(detail, False)
    return found


def oom_context(message: str, detail) -> dict:
    """The constraint and memory cgroup an OOM kill event reports."""
    text = f"{message}\n{detail if isinstance(detail, str) else ''}"
    out = {}
    for f in all_fields_of("oom-kill", text):
        if f.get("constraint"):
            out.setdefault("constraint", f["constraint"])
            if f.get("memcg"):
                out.setdefault("memcg", f["memcg"])
        if f.get("memcg_oom"):
            out.setdefault("constraint", "CONSTRAINT_MEMCG")
    return out


def oomd_usage(ctx) -> dict:
    """{(host, unit name): its memory use as systemd-oomd printed it} from
    the candidates systemd-oomd listed before a kill (``Current Memory
    Usage`` of each ``Path``; the killed cgroup is among them)."""
    out = {}
    ev = ctx.events_of("oomd-candidates")
    if ev is None or not len(ev):
        return out
    for r in ev.itertuples(index=False):
        unit = None
        for line in (r.detail.split("\n") if isinstance(r.detail, str) else []):
            f = fields_of("oomd-candidates", line) or {}
            if f.get("path"):
                unit = f["path"].rstrip("/").rsplit("/", 1)[-1]
            elif unit and f.get("figure") == "Current Memory Usage":
                out[(r.host if r.host == r.host else None, unit)] = f["usage"]
    return out


def oom_victims(ctx) -> dict:
    """{pid: (event row, comm)} of processes the OOM killer killed."""
    out = {}
    ev = ctx.events_of("oom-kill")
    if ev is None or not len(ev):
        return out
    for r in ev.itertuples(index=False):
        for kill in kills_of(r.message, r.detail):
            if kill.get("pid"):
                out.setdefault(int(kill["pid"]), (r, kill.get("comm")))
    return out


def close_in_time(a, b, seconds: float) -> bool:
    """Are two event times within ``seconds``?  When either is not on the
    shared clock (NaT) the PID alone decides."""
    ta, tb = getattr(a, "timestamp", None), getattr(b, "timestamp", None)
    if ta is None or tb is None or pd.isna(ta) or pd.isna(tb):
        return True
    try:
        return abs((pd.Timestamp(ta) - pd.Timestamp(tb)).total_seconds()) <= seconds
    except TypeError:  # naive vs aware: not comparable, trust the PID
        return True


def where(row) -> str:
    """``error.log:12`` for an event row."""
    line = _line(row.line)
    return os.path.basename(str(row.file)) + (f":{line}" if line else "")


def evidence_of(row, text: str) -> Evidence:
    """The row's line of its file, quoted verbatim once the findings are
    known (:func:`sarsleuth.inputs.evidence_lines.quote`); ``text`` until then, and when
    the file cannot be read again."""
    line = _line(row.line)
    return Evidence(str(row.file), line, text,
                    find=str(getattr(row, "message", "") or "") if line else None)

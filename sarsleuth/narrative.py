"""The plain-English paragraph of an incident.

It reads like the field reports' own conclusions: when (on one clock, with
the zone), the likely cause with its peak numbers, the effects in causal
order, the decisive log lines quoted with file and line, and what to do.
"""
from __future__ import annotations

import os

from sarsleuth.model import SEVERITY_RANK, Finding, Incident


def when(ts, with_date: bool = True) -> str:
    import pandas as pd
    if ts is None or pd.isna(ts):
        return "at an unknown time"
    ts = pd.Timestamp(ts)
    text = ts.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")
    return text


def zone_of(ts) -> str:
    """How the zone of a time is said: ``UTC``, ``UTC+08:00``,
    ``Europe/Paris, UTC+01:00`` or ``host wall clock, zone unknown``."""
    import pandas as pd
    if ts is None or pd.isna(ts):
        return ""
    ts = pd.Timestamp(ts)
    if ts.tzinfo is None:
        return "host wall clock, zone unknown"
    name = str(ts.tzinfo)
    off = ts.strftime("%z")
    off = f"{off[:3]}:{off[3:]}" if off else ""
    if name in ("UTC", "Z", "Etc/UTC") and off in ("+00:00", ""):
        return "UTC"
    if name in ("UTC", off) or name.startswith("UTC") or name.startswith("pytz.FixedOffset") or name[:1] in "+-":
        return f"UTC{off}"
    return f"{name}, UTC{off}"


def quote(finding: Finding, limit: int = 1) -> str:
    parts = []
    for ev in finding.evidence[:limit]:
        loc = os.path.basename(ev.path) if ev.path else ""
        if ev.line:
            loc += f":{ev.line}"
        text = ev.text if len(ev.text) <= 160 else ev.text[:157] + "..."
        parts.append(f"\"{text}\"" + (f" ({loc})" if loc else ""))
    return "; ".join(parts)


def _same_day(a, b) -> bool:
    import pandas as pd
    try:
        return pd.Timestamp(a).date() == pd.Timestamp(b).date()
    except (TypeError, ValueError):
        return True


def _span(f: Finding) -> str:
    """When a finding held: ``at T``, ``from A to B``, with its peak time
    when that is neither end, and dates when it crosses midnight."""
    import pandas as pd
    if not f.aligned or f.start is None or pd.isna(f.start):
        if (f.refs or {}).get("nginx_exit_pids"):
            return "(kernel lines without a time on the shared clock, dated by the same PIDs' exits in error.log)"
        return "(time not on the shared clock)"
    if f.end is None or pd.isna(f.end) or f.end == f.start:
        text = f"at {when(f.start, False)}"
    else:
        dated = not _same_day(f.start, f.end)
        text = f"from {when(f.start, dated)} to {when(f.end, dated)}"
    peak = (f.refs or {}).get("peak_time")
    if peak:
        try:
            p = pd.Timestamp(peak)
            if p.tzinfo is None and pd.Timestamp(f.start).tzinfo is not None:
                p = p.tz_localize(pd.Timestamp(f.start).tzinfo)
            if p != pd.Timestamp(f.start) and p != pd.Timestamp(f.end):
                text += f", peak at {when(p, False)}"
        except (TypeError, ValueError):
            pass
    return text


def _same_process(f: Finding, cause: Finding) -> int:
    """How many processes ``f`` shares with the cause (PIDs both name):
    the same crash or kill seen by nginx and by the kernel."""
    if f.detector not in ("worker-signal-exit", "segfault", "oom-kill"):
        return 0
    if cause.detector not in ("worker-signal-exit", "segfault", "oom-kill"):
        return 0
    return len(set(f.refs.get("pids") or []) & set(cause.refs.get("pids") or []))


def narrate(inc: Incident, cause: Finding, chain: dict | None) -> str:
    """Causes before effects: when and where, the likely cause with its peak
    and the log line that shows it, what it explains, what came before, its
    effects in causal order, what is not on the shared clock, and the first
    thing to do."""
    import pandas as pd
    where = f" on {', '.join(inc.hosts)}" if inc.hosts else ""
    if inc.start is not None and not pd.isna(inc.start):
        zone = zone_of(inc.start)
        dated = inc.end is not None and not _same_day(inc.start, inc.end)
        head = f"Between {when(inc.start)} and {when(inc.end, dated)} ({zone}){where}"
    else:
        head = f"At a time not on the shared clock{where}"
    what = chain["name"] if chain else cause.detector.replace("-", " ")
    sentences = [f"{head}: {what}."]
    cause_text = f"Likely cause: {cause.title} {_span(cause)}"
    q = quote(cause)
    if q:
        cause_text += f" [{q}]"
    sentences.append(cause_text + ".")
    if cause.explanation:
        sentences.append(cause.explanation)
    precursors = [f for f in inc.findings if f is not cause and f.aligned and inc.start is not None
                  and f.start is not None and not pd.isna(f.start) and f.start < inc.start]
    precursors.sort(key=lambda f: -SEVERITY_RANK[f.severity])
    if precursors:
        sentences.append("Already before it: " + "; ".join(f"{f.title} {_span(f)}" for f in precursors[:4]) + ".")
    effects = [f for f in inc.findings if f is not cause and f not in precursors]
    if effects:
        label = "Effects, in causal order" if chain else "Also seen"
        items = []
        for f in effects[:8]:
            item = f"{f.title} {_span(f)}"
            same = _same_process(f, cause)
            if same:
                item += f" (the same {same} process(es) as the cause, matched by PID: not additional ones)"
            q = quote(f)
            if q and f.evidence and f.evidence[0].line:
                item += f" [{q}]"
            items.append(item)
        sentences.append(f"{label}: " + "; ".join(items) + ".")
        if len(effects) > 8:
            sentences.append(f"({len(effects) - 8} more findings in the evidence list.)")
    unaligned = [f for f in inc.findings if not f.aligned]
    if unaligned:
        names = ", ".join(sorted({f.detector for f in unaligned}))
        sentences.append(f"{len(unaligned)} finding(s) ({names}) come from sources without a time on the shared "
                         "clock and were attached by PID or causal chain, not by time.")
    if inc.recommendations:
        sentences.append("What to do first: " + inc.recommendations[0])
    return " ".join(s.strip() for s in sentences if s.strip())


def quiet_summary(case) -> str:
    """What a case without incidents says: that nothing was found, in how
    many sources, and which detectors looked."""
    n = len(case.sources)
    kinds = sorted({s.kind for s in case.sources})
    low = len(case.findings)
    text = f"No incident found in {n} source(s)" + (f" ({', '.join(kinds)})" if kinds else "") + "."
    if low:
        text += f" {low} finding(s) below the reporting threshold are listed in the findings."
    return text + f" Checked: {', '.join(case.checked)}."

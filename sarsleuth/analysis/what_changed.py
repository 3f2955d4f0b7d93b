"""What changed, for a case: the ranking of :mod:`.departures` asked of a
case's store, events and sources, and each incident's "what else changed":
the few entries that departed most in its span, each saying which of the
incident's findings already names it.

An entry is told in sar's units, as sar's ``Average:`` line would print
the window and as its baseline ran: ``%iowait of cpu all up from 0.52 % to
31.80 % (peak 64.94 % at 15:05:03), 30 samples before, 5 in the window``.
"""
from __future__ import annotations

from functools import lru_cache

import pandas as pd

from sarsleuth.analysis.departures import BOUND, UNNAMED_HOST, Changes, named_by, rank
from sarsleuth.knowledge import causal_chains
from sarsleuth.knowledge.departures import (LOG_SECTION, LOG_UNIT, aggregate_devices, same_device, strain_direction,
                                            strain_resource, unexplained_rules)
from sarsleuth.analysis.user_window import dated, window_on_clock
from sarsleuth.detectors import registry
from sarsleuth.model import Incident, iso
from sarsleuth.options import parse_window
from sarsleuth.timebase.clock import Clock, on_clock, when


def host_coverage(sources, hosts=()) -> dict:
    """{host: (first, last)} of what the case holds of each host, every
    source counted (a log that holds no line of a kind before the window
    had none to give while the host was recorded); a source naming no
    host belongs to the one host there is."""
    named = {s.host for s in sources if s.host} | set(hosts)
    out: dict = {}
    for s in sources:
        host = s.host or (next(iter(named)) if len(named) == 1 else None)
        if host is None:
            continue
        lo, hi = s.span()
        if lo is None:
            continue
        try:
            old = out.get(host)
            out[host] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
        except TypeError:          # a wall clock beside an aware one: kept as first seen
            continue
    return out


def ranking(store, events, sources, window, *, baseline=None, hosts=None) -> Changes:
    """Every series of ``hosts`` (every host: None) ranked for ``window``."""
    return rank(store, events, window, baseline=baseline, hosts=hosts, coverage=host_coverage(sources))


def user_ranking(store, events, sources, clock, window, baseline=None, hosts=None) -> Changes:
    """The ranking for a window (and a baseline) the user gave: ``START..END``
    strings or ``(start, end)`` pairs, naive ends on the case's zone, ends
    without a date on the day the inputs cover, the notes saying which
    (``--window``'s rules: :mod:`sarsleuth.analysis.user_window`)."""
    placed, said = dated(parse_window(window), sources, clock.zone)
    placed = window_on_clock(placed, clock.zone)
    given, baseline_said = dated(parse_window(baseline), sources, clock.zone) if baseline is not None else (None, None)
    given = window_on_clock(given, clock.zone)
    found = ranking(store, events, sources, placed, baseline=given, hosts=hosts)
    found.notes[:0] = [n for n in (said, baseline_said) if n]
    return found


def hosts_departed(changes: Changes) -> pd.DataFrame:
    """Which hosts departed most in the window: per host, its departing
    entries, their summed score and its largest change, most first."""
    t = changes.table
    t = t[t["departs"] & t["lead"]]
    if not len(t):
        return pd.DataFrame(columns=["host", "entries", "score", "largest"])
    grouped = t.groupby("host", sort=False)
    out = pd.DataFrame({"entries": grouped.size(), "score": grouped["score"].sum(),
                        "largest": grouped.apply(lambda g: series_name(g.iloc[0]), include_groups=False)})
    return out.sort_values("score", ascending=False).reset_index()


def _number(value: float) -> str:
    return f"{value:,.2f}"


def _with_unit(value: float, unit: str) -> str:
    if unit == "%":
        return f"{_number(value)} %"
    if unit == "/min":
        return f"{_number(value)} a minute"
    return f"{_number(value)} {unit}".rstrip()


def series_name(row) -> str:
    """``%iowait of cpu all``, ``tcp-tw``, ``oom-kill lines of stress-ng``."""
    if row["section"] == LOG_SECTION:
        return f"{row['metric']} lines of {row['device']}"
    where = f"{row['section']} {row['device']}".strip() if row["device"] else row["section"]
    return f"{row['metric']} of {where}"


def entry_of(changes: Changes, lead, detectors=(), zone=None, findings: bool = True, folded=()) -> dict:
    """One entry of a ranking as stories and documents carry it
    (``findings`` False: a ranking with no findings to name it, no
    ``named_by``; ``folded``: the leads of entries told with it, first in
    its ``with``)."""
    columns = ["section", "metric", "device", "departs", "lead"]
    members = list(changes.members(int(lead["entry"]))[columns].itertuples(index=False))
    others = [series_name(r) for r in folded] + [series_name(r._asdict()) for r in members if r.departs and not r.lead]
    rows = members + [r for f in folded for r in changes.members(int(f["entry"]))[columns].itertuples(index=False)]
    named = sorted({d for r in rows if r.departs for d in named_by(detectors, r.section, r.metric, r.device)})
    peak_time = lead["peak_time"]
    out = {
        "rank": int(lead["entry"]),
        "host": lead["host"], "section": lead["section"], "device": lead["device"] or None,
        "metric": lead["metric"], "series": series_name(lead), "unit": lead["unit"],
        "direction": lead["direction"], "new": bool(lead["new"]),
        "baseline": _finite(lead["baseline"]), "window": _finite(lead["window"]), "peak": _finite(lead["peak"]),
        "peak_time": iso(on_clock(peak_time, zone)) if not pd.isna(peak_time) else None,
        "z": _finite(lead["z"]), "change": _finite(lead["change"]),
        "baseline_part": lead["baseline_part"], "baseline_samples": int(lead["baseline_samples"]),
        "window_samples": int(lead["window_samples"]),
        "baseline_from": iso(on_clock(lead["baseline_from"], zone)), "baseline_to": iso(on_clock(lead["baseline_to"], zone)),
        "with": others, "named_by": named,
    }
    if not findings:
        del out["named_by"]
    out["text"] = entry_text(out, zone)
    return out


def _finite(value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return round(v, 6) if v == v and abs(v) != float("inf") else None


def _lines(entry: dict) -> str:
    """A message kind's lines in the window, with their rate a minute when
    they are several over a minute or more (one line in one second is no
    "60 a minute")."""
    count, rate = entry["window_samples"], entry["window"] or 0
    said = f"{count:,} line" + ("s" if count != 1 else "")
    minutes = count / rate if rate else 0
    return said + (f" ({_with_unit(rate, LOG_UNIT)})" if count > 1 and minutes >= 1 and rate >= 0.01 else "")


def entry_text(entry: dict, zone=None) -> str:
    """One line of "what else changed"."""
    unit, name = entry["unit"], entry["series"]
    if entry["baseline_part"] == BOUND:
        bound = 100.0 if entry["direction"] == "up" else 0.0
        text = f"{name} at {_with_unit(entry['window'] or 0, unit)}"
        if entry["peak"] is not None and entry["peak_time"] and entry["window_samples"] > 1:
            text += f" (nearest its bound {_with_unit(entry['peak'], unit)} at {when(entry['peak_time'], False, zone)})"
        text += (f", {entry['window_samples']:,} sample(s) in the window and no record before it to compare "
                 f"with: read against its bound of {_with_unit(bound, unit)}")
    elif entry["new"] and entry["section"] != LOG_SECTION:
        # a counter that never counted: its level and peak, and the samples that held none
        text = f"{name}: new, {_with_unit(entry['window'] or 0, unit)} in the window"
        if entry["peak"] is not None and entry["peak_time"] and entry["window_samples"] > 1:
            text += f" (peak {_with_unit(entry['peak'], unit)} at {when(entry['peak_time'], False, zone)})"
        text += (f", none in the {entry['baseline_samples']:,} sample(s) {entry['baseline_part']}, "
                 f"{entry['window_samples']:,} in the window")
    elif entry["new"]:
        text = (f"{name}: new, {_lines(entry)} in the window (none in the "
                f"{entry['baseline_part']} baseline)")
    elif entry["section"] == LOG_SECTION:
        text = (f"{name} {entry['direction']} from {_with_unit(entry['baseline'] or 0, unit)} "
                f"{entry['baseline_part']} to {_lines(entry)} in the window")
    else:
        text = (f"{name} {entry['direction']} from {_with_unit(entry['baseline'] or 0, unit)} to "
                f"{_with_unit(entry['window'] or 0, unit)}")
        if entry["peak"] is not None and entry["peak_time"] and entry["window_samples"] > 1:
            text += f" (peak {_with_unit(entry['peak'], unit)} at {when(entry['peak_time'], False, zone)})"
        text += (f", {entry['baseline_samples']:,} sample(s) {entry['baseline_part']}, "
                 f"{entry['window_samples']:,} in the window")
    if entry["with"]:
        more = len(entry["with"]) - 3
        text += "; with " + ", ".join(entry["with"][:3]) + (f" and {more} more" if more > 0 else "")
    if "named_by" in entry:
        text += f" [named by {', '.join(entry['named_by'])}]" if entry["named_by"] else " [named by no finding]"
    return text


def incident_changes(inc: Incident, store, events, sources, clock: Clock, told: int | None = None) -> list:
    """The entries that departed most during ``inc`` on its hosts, each
    saying which of its findings names it."""
    if inc.start is None or pd.isna(inc.start):
        return []
    end = inc.end if inc.end is not None and not pd.isna(inc.end) else inc.start
    # an incident of files that name no host is the unnamed host's
    changes = ranking(store, events, sources, (inc.start, end), hosts=inc.hosts or [UNNAMED_HOST])
    detectors = sorted({f.detector for f in inc.findings})
    rules = unexplained_rules()
    count = told if told is not None else int(rules["told"])
    causes = [f.detector for f in inc.findings if f.role == "cause"]
    zone = inc.zone if inc.zone is not None else clock.zone
    return [entry_of(changes, lead, detectors, zone, folded=folded)
            for lead, folded in _told(changes, count, int(rules["told_logs"]), causes)]


def _told(changes: Changes, count: int, logs: int, causes) -> list:
    """The ``count`` lines told, in rank order, each ``(lead, [leads told
    with it])``: at most ``logs`` log message kinds, those the cause's
    detectors read first, then those read by a detector nearer the cause on
    its causal chain (a kernel's failed allocations before the timeouts
    they end in); a lead of the same thing as a line above it
    (:func:`_told_with`) joins that line instead of taking one."""
    leads = [lead for _, lead in changes.top(max(count * 4, 20)).iterrows()]
    kinds = [lead for lead in leads if lead["section"] == LOG_SECTION]
    order = next((c["order"] for c in causal_chains() if any(d in c["roots"] for d in causes)), [])

    def nearness(lead) -> int:
        on_chain = [order.index(d) for d in named_by(order, lead["section"], lead["metric"], lead["device"])]
        return min(on_chain, default=len(order))

    own = [lead for lead in kinds if named_by(causes, lead["section"], lead["metric"], lead["device"])]
    others = sorted((k for k in kinds if not any(k is o for o in own)), key=nearness)      # stable: rank order
    kept = {int(lead["entry"]) for lead in (own + others)[:logs]}
    told: list = []          # [(lead, [leads told with it])]
    for lead in leads:
        if lead["section"] == LOG_SECTION and int(lead["entry"]) not in kept:
            continue
        home = next((folded for first, folded in told if _told_with(lead, first)), None)
        if home is not None:
            home.append(lead)
        elif len(told) < count:
            told.append((lead, []))
    return told


def _readers(row) -> frozenset:
    """The detectors that read a row's series."""
    return _readers_of(row["section"], row["metric"], row["device"])


@lru_cache(maxsize=4096)
def _readers_of(section: str, metric: str, device) -> frozenset:
    return frozenset(named_by(sorted(registry()), section, metric, device))


def _strain_of(row) -> str | None:
    """The resource a departing row strains (``[strain.resource]``), None
    when its change is more work, not strain."""
    if row["section"] == LOG_SECTION or strain_direction(row["section"], row["metric"]) != row["direction"]:
        return None
    return strain_resource(row["section"], row["metric"])


def _told_with(lead, first) -> bool:
    """Is ``lead`` told in the line of ``first``, ranked above it: the same
    device in another section, or a strain of the whole host on the
    resource ``first`` strains (``[told]`` of knowledge/departures.toml)?"""
    if lead["host"] != first["host"]:
        return False
    if lead["section"] == first["section"] == LOG_SECTION:
        # one program's message kinds that one detector reads: one report's lines
        return lead["device"] == first["device"] and bool(_readers(lead) & _readers(first))
    if LOG_SECTION in (lead["section"], first["section"]):
        return False
    device = lead["device"] if isinstance(lead["device"], str) else ""
    if device and device == first["device"] and same_device(lead["section"], first["section"]):
        return True
    whole = not device or aggregate_devices().get(lead["section"]) == device
    resource = _strain_of(lead)
    return whole and resource is not None and resource == _strain_of(first)


def attach(incidents: list, store, events, sources, clock: Clock) -> None:
    """Each incident's "what else changed" (``Incident.changes`` and the
    story's ``changed`` lines)."""
    for inc in incidents:
        if inc.changes:
            continue
        inc.changes = incident_changes(inc, store, events, sources, clock)
        if inc.story is not None:
            inc.story["changed"] = [e["text"] for e in inc.changes]

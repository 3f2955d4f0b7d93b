"""The backstop: a stretch of a host's record in which several groups of
series depart together, one of them strain, and no detector found
anything on that host near it, becomes a finding (and so an incident) of
category ``other``: "unexplained change on host X: ...", told with the
series that changed (:mod:`.departures`), instead of "all quiet".

Two passes keep it cheap.  A screen marks, sample by sample, the values
of each series that lie far from its own segment's median (a segment: the
rows between restarts and gaps), so that a stretch in which several
groups (a section's device) are marked at once for long enough is a
candidate; only candidates are then ranked against their baseline as a
window, and kept when the ranking confirms the departures.  The rules are
``[unexplained]`` in ``knowledge/departures.toml``.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from sarsleuth.analysis.departure_spans import breaks_of
from sarsleuth.analysis.departure_stats import row_chunks, row_medians
from sarsleuth.analysis.departures import RestartIndex, hosted_events, rank
from sarsleuth.analysis.what_changed import entry_of, host_coverage
from sarsleuth.detectors.context import host_cpus
from sarsleuth.knowledge.departures import (LOG_SECTION, LOG_UNIT, aggregate_devices, baseline_rules, floor_of,
                                            printed_unit, statistics, strain_direction, strain_felt,
                                            strain_resource, unexplained_rules, weight_of)
from sarsleuth.model import Finding
from sarsleuth.timebase.clock import on_clock

#: Candidate stretches confirmed at most per host (each costs a ranking).
MAX_CANDIDATES = 4


def _group(key) -> tuple:
    host, section, device, _metric = key
    return (section, device)


def _segments(breaks, count: int) -> list:
    """``[(lo, hi)]`` rows between breaks, rows averaged across a gap left out."""
    cuts = sorted({0, count} | {int(i) for i in np.flatnonzero(breaks.invalid)}
                  | {int(i) + 1 for i in np.flatnonzero(breaks.invalid)})
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b - a >= 3]


def screen(members, restarts, rules: dict, stats: dict) -> list:
    """Candidate stretches ``[(start_ns, end_ns, tz, step_ns)]`` of one host's
    series sharing a time array: where at least ``min_groups`` groups, one
    of them strain in its direction, are marked at once for at least
    ``min_seconds`` and ``min_rows``."""
    tz = members[0][1].tz
    stamps = members[0][1].stamps
    if len(stamps) < 8 or not bool((stamps[1:] > stamps[:-1]).all()):
        return []
    breaks = breaks_of(stamps, restarts, float(baseline_rules()["gap_steps"]))
    width = len(stamps)
    groups: dict = {}
    strain_groups: dict = {}
    limit = float(rules["screen_z"])
    scale = float(stats["robust_scale"])
    for chunk in row_chunks(len(members), width):
        part = members[chunk]
        matrix = np.empty((len(part), width))
        for i, (_key, run) in enumerate(part):
            matrix[i] = run.values
        floors = np.array([floor_of(printed_unit(k[1], k[3])) for k, _r in part])
        above = np.zeros(matrix.shape, dtype=bool)
        below = np.zeros(matrix.shape, dtype=bool)
        for lo, hi in _segments(breaks, width):
            seg = matrix[:, lo:hi]
            # against the segment's median, and against its first quarter's
            # (a change that lasts most of a short record is its median)
            references = [seg]
            if (hi - lo) // 4 >= int(rules["min_baseline_samples"]):
                references.append(seg[:, :(hi - lo) // 4])
            for ref in references:
                ref = ref[:, ::max(1, -(-ref.shape[1] // int(stats["max_spread_samples"])))]   # a level needs no more
                with np.errstate(invalid="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    med = row_medians(ref)
                    spread = np.maximum(scale * row_medians(np.abs(ref - med[:, None])), floors)
                    above[:, lo:hi] |= seg > (med + limit * spread)[:, None]
                    below[:, lo:hi] |= seg < (med - limit * spread)[:, None]
        marked_rows = np.flatnonzero(above.any(axis=1) | below.any(axis=1))
        for i in marked_rows:
            key = part[i][0]
            g = _group(key)
            groups[g] = groups.get(g, np.zeros(width, dtype=bool)) | above[i] | below[i]
            way = strain_direction(key[1], key[3])
            if way is not None:
                hit = above[i] if way == "up" else below[i]
                if hit.any():
                    strain_groups[g] = strain_groups.get(g, np.zeros(width, dtype=bool)) | hit
    if len(groups) < int(rules["min_groups"]):
        return []
    together = np.sum(list(groups.values()), axis=0)
    strained = np.sum(list(strain_groups.values()), axis=0) if strain_groups else np.zeros(width, int)
    hot = (together >= int(rules["min_groups"])) & (strained >= int(rules["min_strain_groups"]))
    return [(int(stamps[a]), int(stamps[b - 1]), tz, breaks.step) for a, b in _runs(hot)
            if (stamps[b - 1] - stamps[a]) / 1e9 + breaks.step / 1e9 >= float(rules["min_seconds"])
            and b - a >= int(rules["min_rows"])]


def _runs(hot) -> list:
    """``[(a, b)]``: runs of marked rows, a gap of up to two unmarked rows bridged."""
    at = np.flatnonzero(hot)
    if not len(at):
        return []
    splits = np.flatnonzero(np.diff(at) > 3) + 1
    return [(int(run[0]), int(run[-1]) + 1) for run in np.split(at, splits)]


def _instant(ns: int, tz):
    ts = pd.Timestamp(ns, unit="ns")
    return ts.tz_localize("UTC").tz_convert(tz) if tz is not None else ts


def _near(findings, host, start, end, margin) -> bool:
    for f in findings:
        if f.host not in (host, None) or f.start is None or pd.isna(f.start):
            continue
        f_end = f.end if f.end is not None and not pd.isna(f.end) else f.start
        try:
            if pd.Timestamp(f.start) - margin <= end and pd.Timestamp(f_end) + margin >= start:
                return True
        except TypeError:        # a wall-clock finding beside an aware stretch
            continue
    return False


def unexplained(store, events, sources, findings, clock) -> list:
    """The backstop's findings of a case: one per confirmed stretch."""
    if not store:
        return []
    rules, stats = unexplained_rules(), statistics()
    margin = pd.Timedelta(seconds=float(rules["margin_seconds"]))
    coverage = host_coverage(sources)
    events = hosted_events(events, store)
    restarts = RestartIndex(events, baseline_rules()["restart_kinds"])
    by_host: dict = {}
    for key, run in store.runs.items():
        if key[0] is not None:
            by_host.setdefault(key[0], {}).setdefault(id(run.stamps), []).append((key, run))
    out = []
    for host, arrays in by_host.items():
        candidates = []
        for members in arrays.values():
            tz = members[0][1].tz
            candidates += screen(members, restarts.of(host, tz is not None), rules, stats)
        candidates.sort(key=lambda c: c[0] - c[1])            # the longest first
        cpus = host_cpus(sources, host, cpu_devices={k[2] for k in store.runs if k[:2] == (host, "cpu")})
        for start_ns, end_ns, tz, step in candidates[:MAX_CANDIDATES]:
            start, end = _instant(start_ns, tz), _instant(end_ns, tz)
            if _near(findings, host, start, end, margin) or _near(out, host, start, end, margin):
                continue
            found = _confirmed(store, events, restarts, coverage, host, (start, end), rules, clock, step / 1e9, cpus)
            if found is not None:
                out.append(found)
    return out


def _confirmed(store, events, restarts, coverage, host, window, rules, clock, step: float, ncpu: int | None = None):
    changes = rank(store, events, window, hosts=[host], coverage=coverage, restarts=restarts, after=False)
    top = changes.top(int(rules["told"]))
    # times of a row (wall clock or zoned, NaT where a part is empty) read one by one
    seconds = [(pd.Timestamp(b) - pd.Timestamp(a)).total_seconds() if not (pd.isna(a) or pd.isna(b)) else 0.0
               for a, b in zip(top["baseline_from"], top["baseline_to"])]
    # a message kind new to the window (no line in a baseline at least as
    # long) is known, not estimated: its baseline's stretches need no
    # count, once it is logged as often as the floor of a message rate
    # (a line a minute: one reload in a working day is no departure)
    new = top["new"].fillna(False).astype(bool) & (pd.to_numeric(top["window"], errors="coerce") >= floor_of(LOG_UNIT))
    counted = (top["baseline_samples"] >= int(rules["short_baseline_samples"])) | new
    enough = top[counted.to_numpy() & (np.asarray(seconds, dtype=float) >= float(rules["min_baseline_seconds"]))]
    # a group strains when any series told with it departed its strain's
    # way, felt: swap used climbing is strain whichever of the section's
    # series leads it, and so are pages swapped out moving with a disk's
    # writes; one CPU's share, folded into all the CPUs', is not the host's
    t = changes.table
    told = t[t["entry"].isin(enough["entry"]) & t["departs"]]
    strains = told[np.array([_strains(r, ncpu) for r in told.itertuples(index=False)], dtype=bool)]
    strain = [lead for _, lead in enough.iterrows()
              if ((strains["entry"] == lead["entry"]) & ((strains["section"] != lead["section"])
                                                          | (strains["device"] == lead["device"]))).any()]
    # groups counted by what departed, not by the ranking's entries: it
    # tells a disk's writes, the CPUs' wait and the pressure on I/O as one
    # entry when they move together in the window, which at a few rows of
    # ten seconds they always seem to.  A group is a section (every
    # interface's packets, every CPU's share: one), a program's messages;
    # the sums that repeat a figure counted whole (io: every disk; the
    # protocols' and softnet's packets; interrupts) are none of their own
    # unless they strain (UDP's errors), and neither is what the host or
    # its operator did (a reload, a link brought up: `[strain] never`)
    least = float(rules["least_group_weight"])
    groups = {(row.section, row.device if row.section == LOG_SECTION else None)
              for row in told.itertuples(index=False)
              if (weight_of(row.section) >= least or _strains(row, ncpu))
              and not (row.section == LOG_SECTION and strain_direction(row.section, row.metric) is None)}
    if len(groups) < int(rules["min_groups"]) or len(strain) < int(rules["min_strain_groups"]):
        return None
    # against a short baseline, two resources waited for or running out
    short = (enough["baseline_samples"] < int(rules["min_baseline_samples"])).to_numpy() & ~new[enough.index].to_numpy()
    resources = {strain_resource(row.section, row.metric) for row in strains.itertuples(index=False)}
    if short.any() and len(resources) < int(rules["short_baseline_strain_resources"]):
        return None
    zone = clock.story_zone([host], otherwise=clock.zone)
    entries = [entry_of(changes, lead, (), zone) for _, lead in enough.iterrows()]
    what = ", ".join(f"{e['series']} {e['direction']}" for e in entries[:3])
    return Finding(detector=str(rules["detector"]), title=f"unexplained change on host {host}: {what}",
                   severity=str(rules["severity"]), start=on_clock(window[0], zone), end=on_clock(window[1], zone),
                   host=host, metrics={"series_departed": len(entries), "strain_series": len(strain)},
                   explanation=("Several series departed together from this host's own baseline and no "
                                "detector's rule explains it: what changed is listed with the incident."),
                   category="other", refs={"changes": entries, "sample_seconds": step})


def _strains(row, ncpu: int | None) -> bool:
    """A series (departing) that moved its strain's way, to a felt level;
    of a section with an aggregate (the CPUs), the aggregate's: one CPU's
    share is one thread's."""
    aggregate = aggregate_devices().get(row.section)
    if aggregate is not None and row.device != aggregate:
        return False
    return strain_direction(row.section, row.metric) == row.direction and _felt(row, ncpu)


def _felt(row, ncpu: int | None) -> bool:
    """A strain series' window at the level at which the waiting is felt."""
    level = strain_felt(row.section, row.metric, ncpu)
    if level is None:
        return True
    if row.window != row.window:
        return False
    return float(row.window) <= level if row.direction == "down" else float(row.window) >= level


def titled(incidents) -> None:
    """An incident the backstop's finding causes is titled as the finding
    says it ("unexplained change on host X: ..."), not as an anomaly."""
    backstop = str(unexplained_rules()["detector"])
    for inc in incidents:
        cause = next((f for f in inc.findings if f.role == "cause"), None)
        if cause is not None and cause.detector == backstop:
            inc.title = cause.title

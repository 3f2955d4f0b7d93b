"""What changed: every series of a host ranked against its own baseline.

For a window (an incident's span, the user's ``--window``) each sar
series of each device and each log message kind of each program is
compared with the same host's record outside the window
(:mod:`.departure_spans`: the hours before it and the same hours of the
day before, never across a restart or a gap; or the baseline the user
gave), with the statistics of :mod:`.departure_stats` and
:mod:`.event_rates`.  The result is one row per series with a window and
a baseline, the departing ones first, most changed first, each with its
baseline's and its window's level in the unit sar prints it in.

Rows are then grouped into entries (:func:`entries`): one per section
and device, the items of a section with an aggregate (the CPUs) folded
into it, and a series that moves with one ranked above it inside the
window (the same disk as ``io`` and as its device) told with it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sarsleuth.analysis.departure_spans import breaks_of, row_spans, time_spans
from sarsleuth.analysis.departure_stats import (baseline_level, block_length, departure, new_change, none_before,
                                                row_chunks, window_stats)
from sarsleuth.analysis.event_rates import event_series, instants, rates
from sarsleuth.detectors import registry
from sarsleuth.knowledge.departures import (LOG_SECTION, aggregate_devices, baseline_rules, bound_rules, bound_side,
                                            floor_of, own_series, printed_unit, statistics, strain_direction,
                                            weight_of, whole_sections)

#: ``baseline_part`` of a share read against its physical bound (no baseline row at all).
BOUND = "bound"

#: Columns of the ranking (``case.changes()``, ``sarsleuth changes``).
COLUMNS = ["host", "section", "device", "metric", "unit", "baseline", "window", "difference", "ratio", "direction",
           "z", "change", "score", "new", "departs", "peak", "peak_time", "baseline_part", "baseline_samples", "window_samples",
           "baseline_from", "baseline_to", "window_from", "window_to", "entry", "lead"]


@dataclass
class Changes:
    """A ranking: the table (``COLUMNS``), what it could not compare and
    why, the window and the baseline it was asked for."""

    table: pd.DataFrame
    window: tuple
    baseline: tuple | None = None
    notes: list = field(default_factory=list)
    #: {series key: (window stamps, window values)} of the series ranked highest
    window_values: dict = field(default_factory=dict, repr=False)

    def top(self, count: int, host=None) -> pd.DataFrame:
        """The lead rows of the ``count`` entries ranked first (departing only)."""
        t = self.table
        t = t[t["departs"] & t["lead"]]
        if host is not None:
            t = t[t["host"] == host]
        return t.sort_values("entry", kind="stable").head(count)

    def members(self, entry: int) -> pd.DataFrame:
        """Every row of one entry, its lead first."""
        return self.table[self.table["entry"] == entry]


def _ns(ts, tz) -> int:
    """A time of the case's clock as the stamps of a run on ``tz`` hold it."""
    ts = pd.Timestamp(ts)
    if tz is not None:
        return (ts.tz_localize(tz) if ts.tzinfo is None else ts).value
    return (ts.tz_localize(None) if ts.tzinfo is not None else ts).value


def _time(ns, tz):
    if ns is None:
        return pd.NaT
    ts = pd.Timestamp(int(ns), unit="ns")
    return ts.tz_localize("UTC").tz_convert(tz) if tz is not None else ts


class RestartIndex:
    """The instants at which each host's record restarts (its reboots,
    sadc's restarts: ``restart_kinds``), read from a case's events once:
    every series of a host, and every window ranked, shares them."""

    def __init__(self, events, kinds):
        self._events = None
        if events is not None and len(events):
            ev = events[events["kind"].isin(list(kinds)).to_numpy()]
            self._events = ev[ev["timestamp"].notna()]
        self._known: dict = {}

    def of(self, host, tz_aware: bool) -> np.ndarray:
        key = (host, tz_aware)
        if key not in self._known:
            ev = self._events
            if ev is not None and len(ev):
                ev = ev[(ev["host"].astype(object) == host).to_numpy()]
            self._known[key] = (np.sort(instants(ev["timestamp"], tz_aware)) if ev is not None and len(ev)
                                else np.empty(0, dtype=np.int64))
        return self._known[key]


def rank(store, events, window, *, baseline=None, hosts=None, coverage=None,
         restarts: RestartIndex | None = None, after: bool = True) -> Changes:
    """Every series of ``hosts`` (every host: None) against its baseline
    for ``window`` ``(start, end)`` on the case's clock; ``baseline`` the
    user's ``(start, end)`` or None for the default; ``coverage`` {host:
    (start, end)} of what the host's logs span (the baseline of its log
    series); ``restarts`` the case's, when several windows are ranked;
    ``after`` False: never the rows after the window as its baseline (the
    backstop looks for departures from what came before)."""
    rules, stats = baseline_rules(), statistics()
    if not after:
        rules = {**rules, "after_when_none_before": False}
    events = hosted_events(events, store)
    restarts = restarts or RestartIndex(events, rules["restart_kinds"])
    hosts = list(hosts) if hosts is not None else _hosts(store, events)
    rows, kept, notes = [], {}, []
    groups: dict = {}
    for key, run in (store.runs.items() if store else ()):
        if key[0] in hosts:
            groups.setdefault((key[0], id(run.stamps)), []).append((key, run))
    unmatched = 0
    for (host, _), members in groups.items():
        found = _rank_group(members, window, baseline, restarts, rules, stats, kept)
        if found is None or any(r["baseline_part"] == BOUND for r in found[:1]):
            unmatched += len(members)
        rows.extend(found or [])
    for host in hosts:
        covered = (coverage or {}).get(host) or _recorded(store, host)
        rows.extend(_rank_events(events, restarts, host, window, baseline, rules, stats, covered))
    if unmatched:
        notes.append(f"{unmatched:,} series have no record in the window or none in a baseline before it "
                     f"(at least {rules['min_samples']} samples, not across a restart or a gap)")
    table = _table(rows)
    changes = Changes(table=table, window=tuple(window), baseline=tuple(baseline) if baseline else None, notes=notes,
                      window_values=kept)
    changes.table = entries(table, kept, stats)
    return changes


#: The host of a case whose files name none (a paste, a bare error.log).
UNNAMED_HOST = ""


def hosted_events(events, store):
    """Events with no host belong to the one host of the case, when there
    is one; in a case that names no host at all, to the unnamed one."""
    if events is None or not len(events) or not events["host"].isna().any():
        return events
    named = set(events["host"].dropna().astype(str)) | set(store.hosts() if store else [])
    if len(named) > 1:
        return events
    return events.assign(host=events["host"].astype(object).fillna(next(iter(named), UNNAMED_HOST)))


def _recorded(store, host):
    """When ``host``'s record begins and ends (its metrics), or None: a log
    holding no line of a kind before the window had none to give while
    the host was recorded."""
    if not store:
        return None
    lo, hi = store.select(lambda key: key[0] == host).span()
    return None if lo is None else (lo, hi)


def _hosts(store, events) -> list:
    found = list(store.hosts()) if store else []
    if events is not None and len(events):
        found += [h for h in events["host"].dropna().astype(str).unique() if h not in found]
    return found


def _rank_group(members, window, baseline, restarts: RestartIndex, rules, stats, kept):
    """The rows of the series sharing one time array; None when the window
    or every baseline part is empty there."""
    tz = members[0][1].tz
    stamps = members[0][1].stamps
    order = None
    if len(stamps) > 1 and not bool((stamps[1:] >= stamps[:-1]).all()):
        order = np.argsort(stamps, kind="stable")
        stamps = stamps[order]
    host = members[0][0][0]
    breaks = breaks_of(stamps, restarts.of(host, tz is not None), float(rules["gap_steps"]))
    w = (_ns(window[0], tz), _ns(window[1], tz))
    b = (_ns(baseline[0], tz), _ns(baseline[1], tz)) if baseline else None
    spans = row_spans(stamps, w, breaks, rules, b)
    lo, hi = spans.window
    if hi <= lo:
        return None
    if not spans.parts:
        return _bound_rows(members, stamps, order, (lo, hi), tz, stats, kept) or None
    width = len(stamps)
    out = []
    for chunk in row_chunks(len(members), width):
        keys = [k for k, _r in members[chunk]]
        matrix = np.empty((len(keys), width))
        for i, (_k, run) in enumerate(members[chunk]):
            values = run.values if order is None else run.values[order]
            matrix[i] = values
        units = [printed_unit(k[1], k[3]) for k in keys]
        floors = np.array([floor_of(u) for u in units])
        bounded = np.array([u == "%" for u in units])
        win = window_stats(matrix, lo, hi)
        # an error or strain counter (a rate of events: errors, drops,
        # retransmissions, pages swapped) at zero all through its baseline,
        # counting in most of the window at a level worth telling (its
        # unit's floor): new, as a message kind never logged.  Levels (a
        # queue, a share of time waiting) are measured as changes
        strain = np.array([strain_direction(k[1], k[3]) == "up" and u.endswith("/s") for k, u in zip(keys, units)]) \
            & (win.mean >= floors)
        best = None
        for name, pieces in spans.parts.items():
            level = baseline_level(matrix, pieces, block_length(hi - lo, sum(b - a for a, b in pieces)), stats)
            z, change = departure(win.mean, level, floors, bounded, stats)
            new = strain & none_before(matrix, pieces, lo, hi, int(rules["min_samples"])) if strain.any() else strain
            change = np.where(new, new_change(stats), change)
            cand = (name, pieces, level, z, change, new)
            if best is None:
                best = [cand] * len(keys)
            else:
                best = [cand if np.isfinite(change[i]) and (not np.isfinite(best[i][4][i])
                                                            or abs(change[i]) < abs(best[i][4][i])) else best[i]
                        for i in range(len(keys))]
        for i, key in enumerate(keys):
            name, pieces, level, z, change, new = best[i]
            if not np.isfinite(level.level[i]) or not win.samples[i]:
                continue
            up = win.mean[i] >= level.level[i]
            peak, at = (win.high[i], win.high_at[i]) if up else (win.low[i], win.low_at[i])
            out.append({"host": key[0], "section": key[1], "device": key[2], "metric": key[3], "unit": units[i],
                        "baseline": level.level[i], "window": win.mean[i], "z": z[i], "change": change[i],
                        "new": bool(new[i]),
                        "peak": peak, "peak_time": _time(stamps[lo + at], tz), "baseline_part": name,
                        "baseline_samples": int(level.samples[i]), "window_samples": int(win.samples[i]),
                        "baseline_from": _time(stamps[pieces[0][0]], tz), "baseline_to": _time(stamps[pieces[-1][1] - 1], tz),
                        "window_from": _time(stamps[lo], tz), "window_to": _time(stamps[hi - 1], tz)})
            if abs(z[i]) >= float(stats["min_z"]) and abs(change[i]) >= float(stats["min_change"]):
                # only a departing series may fold into another's entry: the others' windows are not kept
                kept[key] = (stamps[lo:hi], matrix[i, lo:hi].copy())
    return out


def _bound_rows(members, stamps, order, window, tz, stats, kept) -> list:
    """The shares among ``members`` read against their physical bound, for
    a window with no baseline row at all: the room each leaves at its row
    nearest the bound, measured as a change from the whole room to that
    (``[bound]`` of knowledge/departures.toml)."""
    lo, hi = window
    rules = bound_rules()
    out = []
    for key, run in members:
        side = bound_side(key[1], key[3])
        if side is None:
            continue
        values = (run.values if order is None else run.values[order])[lo:hi]
        present = ~np.isnan(values)
        if not present.any():
            continue
        room = np.where(present, 100.0 - values if side == "used" else values, np.inf)
        at = int(np.argmin(room))
        noise = floor_of("%")
        change = float(np.arcsinh(100.0 / noise) - np.arcsinh(max(0.0, float(room[at])) / noise))
        departs = bool(room[at] <= float(rules["room_left"]))
        out.append({"host": key[0], "section": key[1], "device": key[2], "metric": key[3], "unit": "%",
                    "baseline": np.nan, "window": float(values[present].mean()), "z": np.nan,
                    "change": change if side == "used" else -change, "at_bound": departs,
                    "peak": float(values[at]), "peak_time": _time(stamps[lo + at], tz), "baseline_part": BOUND,
                    "baseline_samples": 0, "window_samples": int(present.sum()),
                    "baseline_from": pd.NaT, "baseline_to": pd.NaT,
                    "window_from": _time(stamps[lo], tz), "window_to": _time(stamps[hi - 1], tz)})
        if departs:
            kept[key] = (stamps[lo:hi], values.copy())
    return out


def _rank_events(events, restarts: RestartIndex, host, window, baseline, rules, stats, coverage) -> list:
    """The rows of ``host``'s log message kinds."""
    aware = pd.Timestamp(window[0]).tzinfo is not None
    series = event_series(events, host, aware, rules["not_messages"])
    if not series:
        return []
    tz = pd.Timestamp(window[0]).tzinfo
    w = (_ns(window[0], None) if not aware else pd.Timestamp(window[0]).value,
         _ns(window[1], None) if not aware else pd.Timestamp(window[1]).value)
    b = None
    if baseline:
        b = tuple(pd.Timestamp(t).value if aware else _ns(t, None) for t in baseline)
    first = min(int(s.times[0]) for s in series)
    if coverage is not None:
        lo, hi = (pd.Timestamp(t).value if aware else _ns(t, None) for t in coverage)
        coverage = (min(lo, first), max(hi, w[1]))
    else:
        coverage = (first, w[1])
    win, parts = time_spans(w, restarts.of(host, aware), coverage, rules, b)
    out = []
    for s in series:
        found = rates(s, win, parts, stats)
        if found is None:
            continue
        _host, section, program, kind = s.key
        out.append({"host": host, "section": section, "device": program, "metric": kind, "unit": "/min",
                    "baseline": found["baseline"], "window": found["window"], "z": found["z"],
                    "change": found["change"], "new": found["new"], "peak": found["peak"], "peak_time": _time(found["peak_at"], tz),
                    "baseline_part": found["part"], "baseline_samples": found["baseline_samples"],
                    "window_samples": found["window_samples"], "baseline_from": _time(found["baseline_from"], tz),
                    "baseline_to": _time(found["baseline_to"], tz), "window_from": _time(found["window_from"], tz),
                    "window_to": _time(found["window_to"], tz)})
    return out


def _table(rows) -> pd.DataFrame:
    stats = statistics()
    if not rows:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in COLUMNS})
    t = pd.DataFrame(rows)
    t["difference"] = t["window"] - t["baseline"]
    with np.errstate(divide="ignore", invalid="ignore"):
        t["ratio"] = np.where(t["baseline"] != 0, t["window"] / t["baseline"].where(t["baseline"] != 0, np.nan), np.nan)
    t["direction"] = np.where(t["difference"] > 0, "up", np.where(t["difference"] < 0, "down", "flat"))
    bound = (t["baseline_part"] == BOUND).to_numpy()
    # a share read against its bound has no baseline level: its direction is the bound's
    t.loc[bound, "direction"] = np.where(t.loc[bound, "change"] > 0, "up", "down")
    t["new"] = t["new"].fillna(False).astype(bool) if "new" in t.columns else False
    at_bound = t["at_bound"].fillna(False).astype(bool) if "at_bound" in t.columns else False
    t["departs"] = ((t["z"].abs() >= float(stats["min_z"])) & (t["change"].abs() >= float(stats["min_change"]))
                    | t["new"] | at_bound)
    t["score"] = t["change"].abs() * t["section"].map(weight_of).astype(float)
    t["order"] = t["z"].abs()
    t = t.sort_values(["departs", "score", "order"], ascending=False, kind="stable").drop(columns="order")
    t = t.reset_index(drop=True)
    t["entry"], t["lead"] = 0, False
    return t[COLUMNS]


def entries(table: pd.DataFrame, kept: dict, stats: dict) -> pd.DataFrame:
    """Number the entries of a ranked table (``entry``, 1 first; ``lead``
    on the row that heads each): a section's device is one entry; a
    section's items fold into its aggregate row when that departed too;
    a departing series moving with one ranked above it inside the window
    joins that one's entry."""
    if not len(table):
        return table
    aggregate = aggregate_devices()
    whole = whole_sections()
    departing = table["departs"].to_numpy()
    keys = list(zip(table["host"], table["section"], table["device"], table["metric"]))
    aggregates = {(h, s) for h, s, d, _m in (k for k, dep in zip(keys, departing) if dep)
                  if aggregate.get(s) == d}
    # the row that heads an aggregate's entry: its own first departing row (cpu all, not the CPU ranked first)
    heads: dict = {}
    for i, (host, section, device, _metric) in enumerate(keys):
        if departing[i] and aggregate.get(section) == device:
            heads.setdefault((host, section, device), i)
    entry_of: dict = {}
    leads: list = []          # (group, key) of each entry's lead, in rank order
    numbers = np.zeros(len(table), dtype=int)
    lead = np.zeros(len(table), dtype=bool)
    threshold = float(stats["fold_correlation"])
    least = int(stats["fold_min_samples"])
    for i, key in enumerate(keys):
        host, section, device, metric = key
        group = (host, section, device, metric) if section == LOG_SECTION else (host, section, device)
        if section in whole:
            group = (host, section)
        if section in aggregate and device != aggregate[section] and (host, section) in aggregates and departing[i]:
            group = (host, section, aggregate[section])
        number = entry_of.get(group)
        if number is None and departing[i]:
            number = _moving_with(key, leads, kept, threshold, least)
        if number is None:
            number = len(leads) + 1
            head = heads.get(group, i)
            leads.append((group, keys[head]))
            lead[head] = True
        entry_of.setdefault(group, number)
        numbers[i] = number
    out = table.copy()
    out["entry"], out["lead"] = numbers, lead
    return out


def _moving_with(key, leads, kept, threshold: float, least: int):
    """The entry whose lead moves with ``key`` inside the window, or None."""
    mine = kept.get(key)
    if mine is None or len(mine[1]) < least:
        return None
    for number, (_group, other) in enumerate(leads, 1):
        theirs = kept.get(other)
        if theirs is None or other[0] != key[0] or theirs[0] is not mine[0] and not np.array_equal(theirs[0], mine[0]):
            continue
        a, b = mine[1], theirs[1]
        ok = ~(np.isnan(a) | np.isnan(b))
        if ok.sum() < least or np.std(a[ok]) == 0 or np.std(b[ok]) == 0:
            continue
        if abs(np.corrcoef(a[ok], b[ok])[0, 1]) >= threshold:
            return number
    return None


def read_by(detector: str) -> tuple:
    """The series ``detector`` reads, as ``(section, metric, None)``
    patterns (any device): its knowledge (kb.toml ``series``, the message
    kinds it counts) and the message kinds its class declares as inputs."""
    cls = registry().get(detector)
    kinds = [name.partition(":")[2] for name in getattr(cls, "inputs", ()) if name.startswith("events:")]
    return tuple(dict.fromkeys(own_series(detector) + tuple((LOG_SECTION, k, None) for k in kinds if k)))


def named_by(detectors, section: str, metric: str, device: str) -> list:
    """The detectors among ``detectors`` that read the series."""
    return [d for d in detectors if any(sec == section and met == metric and dev in (None, device)
                                        for sec, met, dev in read_by(d))]

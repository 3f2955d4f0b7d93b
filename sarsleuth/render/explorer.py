"""Every metric of the case for the HTML report's explorer: each host's
sar sections, each section's devices and its charts as sar groups them
(:mod:`sarsleuth.render.chart_groups`), the series reduced for display
with their extremes kept (:mod:`sarsleuth.render.decimation`: a column per
pixel over the host's whole span, and the incident windows at full
resolution up to :data:`WINDOW_COLUMNS` columns), written compactly
(:mod:`sarsleuth.render.compact_numbers`).  The page draws them with
uPlot (``templates/explorer.js``).

Times are seconds since 1970 (the instant; a wall clock read as UTC when
its zone is unknown) and are labelled on the case's clock, whose offsets
over the span are sent with them."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sarsleuth.metric_store.disk_names import labelled, names_of_case
from sarsleuth.render.chart_groups import charts_of, decimals_of, section_title
from sarsleuth.render.clock_ticks import epoch_seconds
from sarsleuth.render.compact_numbers import decimals_that_fit, encode_times, encode_values
from sarsleuth.render.decimation import extreme_rows
from sarsleuth.timebase.clock import zone_of

#: Columns over a host's whole span: about one per pixel of a wide chart.
COLUMNS = 700
#: Columns over each incident window (and its margin): drawn at full
#: resolution when it holds fewer than twice this many samples.
WINDOW_COLUMNS = 700
#: A time between two samples this many times the usual one is a gap: the
#: line breaks there.
GAP = 3.0
_NAT = np.iinfo(np.int64).min


@dataclass
class Section:
    name: str
    title: str
    devices: list                     # labels, in order
    charts: list                      # ChartSpec
    data: list = field(default_factory=list)   # per device: [{"t", "v"} per chart]


@dataclass
class Host:
    name: str
    sections: list
    lo: float
    hi: float
    incidents: list                   # [start, end, rank] in seconds
    series: int = 0                   # series of the metric store drawn


def explorer(case) -> list[Host]:
    """Every host of the case's metric store, with its sections."""
    store = case.store
    if not store:
        return []
    names = names_of_case(case) if any(k[1] == "disk" for k in store.runs) else {}
    keys: dict = {}
    for key in store.runs:
        keys.setdefault(key[0], {}).setdefault(key[1], {}).setdefault(key[2], []).append(key)
    hosts = []
    for host in sorted(keys, key=lambda h: (h is None, str(h))):
        sections = []
        lo = hi = None
        for section in sorted(keys[host], key=_section_order):
            devices = sorted(keys[host][section], key=_device_order)
            metrics = [k[3] for d in devices for k in keys[host][section][d]]
            charts = charts_of(section, metrics)
            label = (lambda d: labelled(d, names.get(host))) if section == "disk" else (lambda d: d or "")
            sections.append(Section(section, section_title(section), [label(d) for d in devices], charts))
            sections[-1].data = [{k[3]: store.runs[k] for k in keys[host][section][d]} for d in devices]
            for runs in sections[-1].data:
                for run in runs.values():
                    real = run.stamps[run.stamps != _NAT]
                    if len(real):
                        lo = real.min() if lo is None else min(lo, real.min())
                        hi = real.max() if hi is None else max(hi, real.max())
        if lo is None:
            continue
        hosts.append(Host(host or "", sections, lo / 1e9, hi / 1e9, _incidents_of(case, host),
                          sum(len(keys[host][sec][dev]) for sec in keys[host] for dev in keys[host][sec])))
    for h in hosts:
        for sec in h.sections:
            sec.data = [[_chart_data(runs, chart, h) for chart in sec.charts] for runs in sec.data]
    return hosts


def _incidents_of(case, host) -> list:
    out = []
    for inc in case.incidents:
        if inc.start is None or pd.isna(inc.start) or (host is not None and inc.hosts and host not in inc.hosts):
            continue
        end = inc.end if inc.end is not None and not pd.isna(inc.end) else inc.start
        out.append([epoch_seconds(inc.start), epoch_seconds(end), inc.rank])
    return out


def _chart_data(runs: dict, chart, host: Host) -> dict:
    """One chart of one device: its times and each metric's values, reduced."""
    present = [m for m in chart.metrics if m in runs]
    if not present:
        return {"t": "", "v": [""] * len(chart.metrics)}
    times, matrix = _aligned([runs.get(m) for m in chart.metrics])
    seconds = times / 1e9
    rows = [extreme_rows(seconds, matrix, COLUMNS, lo=host.lo, hi=host.hi)]
    for start, end, _rank in host.incidents:
        margin = max((end - start) * 0.5, 60.0)
        a, b = np.searchsorted(seconds, [start - margin, end + margin], side="left")
        # a window much shorter than the span: drawn finer (full resolution when it is short)
        if b > a and (end - start + 2 * margin) * 4 < host.hi - host.lo:
            rows.append(a + extreme_rows(seconds[a:b], matrix[a:b], WINDOW_COLUMNS))
    gaps = _gaps(seconds)
    rows.append(gaps)
    rows.append(gaps + 1)
    rows = np.unique(np.concatenate(rows))
    rows = rows[rows < len(seconds)]
    t, m = seconds[rows], matrix[rows]
    # a gap keeps the samples either side and breaks the line between them
    cut = np.flatnonzero(np.isin(rows[:-1], gaps))
    if len(cut):
        t = np.insert(t, cut + 1, (t[cut] + t[cut + 1]) / 2)
        m = np.insert(m, cut + 1, np.nan, axis=0)
    whole = bool(np.all(t == np.round(t)))
    out = {"t": encode_times(np.round(t if whole else t * 1000).astype(np.int64)), "v": []}
    if not whole:
        out["ms"] = 1
    for j, metric in enumerate(chart.metrics):
        d = decimals_that_fit(m[:, j], decimals_of(metric))
        out["v"].append(encode_values(m[:, j], d) if metric in runs else "")
        if d != decimals_of(metric):
            out.setdefault("d", {})[metric] = d
    return out


def _aligned(runs: list) -> tuple[np.ndarray, np.ndarray]:
    """(times in ns, values (n, k)) of runs on one time axis: the times of
    any, in order, one value per time (the first seen), NaN where a run
    has none."""
    runs = [r for r in runs]
    shared = [r for r in runs if r is not None]
    first = shared[0]
    if all(r.stamps is first.stamps for r in shared):
        stamps = first.stamps
        keep = stamps != _NAT
        order = np.argsort(stamps[keep], kind="stable")
        times = stamps[keep][order]
        distinct = np.concatenate(([True], times[1:] != times[:-1])) if len(times) else np.array([], bool)
        times = times[distinct]
        matrix = np.full((len(times), len(runs)), np.nan, order="F")
        pick = np.flatnonzero(keep)[order][distinct]
        for j, r in enumerate(runs):
            if r is not None:
                matrix[:, j] = r.values[pick]
        return times, matrix
    times = np.unique(np.concatenate([r.stamps[r.stamps != _NAT] for r in shared]))
    matrix = np.full((len(times), len(runs)), np.nan, order="F")
    for j, r in enumerate(runs):
        col = matrix[:, j]
        if r is not None:
            keep = r.stamps != _NAT
            stamps, values = r.stamps[keep], r.values[keep].astype(np.float64)
            # the first value seen at a time wins: written last so that it stays
            order = np.argsort(stamps, kind="stable")[::-1]
            col[np.searchsorted(times, stamps[order])] = values[order]
    return times, matrix


def _gaps(seconds) -> np.ndarray:
    """Rows after which the next sample comes :data:`GAP` times later than
    the usual interval (monitoring stopped, a restart)."""
    if len(seconds) < 3:
        return np.array([], dtype=np.int64)
    step = np.diff(seconds)
    usual = float(np.median(step))
    return np.flatnonzero(step > GAP * usual) if usual > 0 else np.array([], dtype=np.int64)


def payload(case, hosts: list[Host]) -> dict:
    """What the page's script reads: the clock, and each host's sections,
    charts and encoded data (names from inputs as they are: the page
    makes them visible and writes them as text)."""
    lo = min((h.lo for h in hosts), default=0.0)
    hi = max((h.hi for h in hosts), default=0.0)
    return {
        "zone": clock_name(case, lo),
        "offsets": offsets(case.tz, lo, hi),
        "hosts": [{"name": h.name, "lo": h.lo, "hi": h.hi, "incidents": h.incidents,
                   "sections": [{"name": s.name, "title": s.title, "devices": s.devices,
                                 "charts": [{"title": c.title, "unit": c.unit, "stacked": c.stacked,
                                             "metrics": list(c.metrics),
                                             "decimals": [decimals_of(m) for m in c.metrics]} for c in s.charts],
                                 "data": s.data} for s in h.sections]} for h in hosts],
    }


def clock_name(case, seconds: float) -> str:
    """How the explorer's clock is said: the case's zone at that time."""
    at = pd.Timestamp(seconds, unit="s", tz="UTC") if case.tz else pd.Timestamp(seconds, unit="s")
    return zone_of(at, case.tz) or "times as recorded"


def offsets(zone, lo: float, hi: float) -> list:
    """``[[from, offset seconds], ...]``: the zone's offsets from UTC from
    ``lo`` to ``hi`` (seconds since 1970), one entry per change; ``[[lo,
    0]]`` for the wall clock."""
    if zone is None:
        return [[lo, 0]]
    step = "h" if hi - lo < 5 * 366 * 86400 else "D"
    at = pd.date_range(pd.Timestamp(lo, unit="s", tz="UTC").floor("h"), pd.Timestamp(hi, unit="s", tz="UTC"),
                       freq=step)
    if not len(at):
        at = pd.DatetimeIndex([pd.Timestamp(lo, unit="s", tz="UTC")])
    wall = at.tz_convert(str(zone)).tz_localize(None)
    off = ((wall - at.tz_localize(None)).total_seconds()).astype(int)
    out = [[lo, int(off[0])]]
    for t, o in zip(at[1:], off[1:]):
        if o != out[-1][1]:
            out.append([epoch_seconds(t), int(o)])
    return out


_SECTION_ORDER = ["cpu", "queue", "memory", "swap", "paging", "swapping", "disk", "io", "net-dev", "net-edev",
                  "net-sock", "net-tcp", "net-etcp"]


def _section_order(section: str):
    return (_SECTION_ORDER.index(section) if section in _SECTION_ORDER else len(_SECTION_ORDER), section)


def _device_order(device: str):
    """all first, then CPUs and numbered devices in number order."""
    if device in ("all", ""):
        return (0, 0, "")
    m = re.fullmatch(r"(\D*)(\d+)", str(device))
    return (1, int(m.group(2)), m.group(1)) if m else (2, 0, str(device))

"""What to chart beside the story: the series that illustrate an incident
and the log events worth marking on them.  The analysis decides this once;
every output that draws (matplotlib's figures, the HTML report's charts)
draws what it is given here."""
from __future__ import annotations

import numpy as np
import pandas as pd

from sarsleuth.knowledge import kb_entry, unmarked_event_kinds

#: Events this far either side of a span are marked on its charts.
EVENT_MARGIN = pd.Timedelta(minutes=10)
#: An incident is drawn from its lead-up (the earliest onset of its cause
#: and effects), at most this long before its start.
MAX_LEAD_UP = pd.Timedelta(hours=6)
#: Room either side of what an incident's drawing frames, as a share of it,
#: and at least this much time.
FRAME_MARGIN = 0.1
MIN_MARGIN = pd.Timedelta(seconds=5)
#: Samples kept either side of the frame: the rise and the return show.
SAMPLES_AROUND = 2
#: A log message kind is drawn as its lines a minute in about this many
#: intervals of whole seconds over the frame (none shorter than a second).
RATE_INTERVALS = 60


def series_of(detector: str) -> list:
    """Which series illustrate a detector (knowledge base ``series``):
    (section, metric, device or None for the busiest device, unit)."""
    return [(sec, met, None if dev == "*" else dev, unit) for sec, met, dev, unit in kb_entry(detector).get("series", [])]


def devices_of(case, section, metric, host):
    """{device: Series} of one metric (every host's pieces of a device joined)."""
    if not case.store:
        return {}
    return case.store.grouped(section, lambda key: key[2], host=host, metric=metric)


def busiest_device(case, section, metric, host, start, end):
    """The device (not ``lo``) whose series peaks highest between ``start``
    and ``end`` (the whole series when ``start`` is None)."""
    best, peak = None, None
    for device, series in devices_of(case, section, metric, host).items():
        if device == "lo":
            continue
        if start is not None:
            series = series[(series.index >= start) & (series.index <= end)]
        if len(series) and (peak is None or series.max() > peak):
            best, peak = device, series.max()
    return best


def series(case, section, metric, device, host):
    """One device's series of a metric, or None."""
    return devices_of(case, section, metric, host).get(device)


def marked_events(events, start=None, end=None):
    """The log events to mark on a chart of ``start``..``end`` (and
    :data:`EVENT_MARGIN` either side): timed, aligned on the case's clock,
    of kinds worth a mark; None when there are none."""
    if events is None or not len(events):
        return None
    ev = events[events["timestamp"].notna()]
    if "aligned" in ev.columns:
        ev = ev[ev["aligned"].fillna(True).astype(bool)]
    if start is not None:
        ev = ev[(ev["timestamp"] >= start - EVENT_MARGIN) & (ev["timestamp"] <= end + EVENT_MARGIN)]
    ev = ev[~ev["kind"].isin(sorted(unmarked_event_kinds()))]
    return ev if len(ev) else None


def incident_panels(case, incident):
    """The series that illustrate an incident (knowledge base ``series`` of
    its findings' detectors; the busiest or the named disk), as
    ``[(section, metric, device, unit, series)]``, and the span to draw
    ``(lo, hi)`` (:func:`incident_frame`)."""
    panels, seen = [], set()
    host = incident.hosts[0] if incident.hosts else None
    start, end = incident.start, incident.end
    if start is None:
        return [], None
    for f in incident.findings:
        for section, metric, device, unit in series_of(f.detector):
            # the disk a finding names (the iowait spike's busiest) is the one drawn
            chosen = (f.refs or {}).get("busiest_disk") if section == "disk" else None
            dev = device if device is not None else (
                chosen or busiest_device(case, section, metric, host, start, end))
            if dev is None or (section, metric, dev) in seen:
                continue
            s = series(case, section, metric, dev, host)
            if s is None:
                continue
            seen.add((section, metric, dev))
            panels.append((section, metric, dev, unit, s))
    return panels, incident_frame(incident, [p[4] for p in panels])


def lead_up(incident):
    """When the story of an incident begins: the earliest onset of its
    cause and effects (less the sampling interval that onset may lie
    anywhere in), at most :data:`MAX_LEAD_UP` before its start; its start
    when none is earlier."""
    start = pd.Timestamp(incident.start)
    first = start
    for f in incident.findings:
        if f.role == "context" or not f.aligned or f.onset is None or pd.isna(f.onset):
            continue
        try:
            first = min(first, pd.Timestamp(f.onset) - f.resolution)
        except TypeError:          # a wall-clock finding beside aware times: not on this clock
            continue
    return max(first, start - MAX_LEAD_UP)


def incident_frame(incident, series=()):
    """``(lo, hi)``: the span an incident is drawn over, its lead-up
    (:func:`lead_up`) to its end, :data:`FRAME_MARGIN` of that either side
    and at least two samples of ``series`` before and after, so that the
    rise and the return show; cut to the time ``series`` cover, so that
    their lines run across the drawing.  None without a start."""
    if incident.start is None or pd.isna(incident.start):
        return None
    first = lead_up(incident)
    last = pd.Timestamp(incident.end) if incident.end is not None and not pd.isna(incident.end) else pd.Timestamp(
        incident.start)
    margin = max((last - first) * FRAME_MARGIN, MIN_MARGIN)
    lo, hi = first - margin, last + margin
    try:
        covered = []
        for s in series:
            if not len(s):
                continue
            covered.append((s.index[0], s.index[-1]))
            before = s.index[s.index < first]
            after = s.index[s.index > last]
            if len(before):
                lo = min(lo, before[max(0, len(before) - SAMPLES_AROUND)])
            if len(after):
                hi = max(hi, after[min(len(after) - 1, SAMPLES_AROUND - 1)])
        if covered:
            lo = max(lo, min(a for a, _b in covered))
            hi = min(hi, max(b for _a, b in covered))
    except TypeError:              # wall-clock series beside an aware incident: framed on the incident alone
        pass
    if hi <= lo:
        hi = lo + MIN_MARGIN
    return lo, hi


def log_rate(case, host, program, kind, lo, hi):
    """One message kind of one program on ``host`` as lines a minute in each
    interval of ``lo``..``hi`` (whole seconds, :data:`RATE_INTERVALS` of
    them or fewer), stamped at the interval's end as an sa row is; None
    when it has no line there.  The lines counted are those the ranking
    of what changed counts (:mod:`sarsleuth.analysis.event_rates`)."""
    from sarsleuth.analysis.event_rates import event_series
    from sarsleuth.knowledge.departures import baseline_rules

    if case.events is None or not len(case.events) or lo is None:
        return None
    lo, hi = pd.Timestamp(lo), pd.Timestamp(hi)
    aware = lo.tzinfo is not None
    found = [s for s in event_series(case.events, host, aware, baseline_rules()["not_messages"])
             if s.key[2:] == (program, kind)]
    if not found:
        return None
    step = max(1, -(-int((hi - lo).total_seconds()) // RATE_INTERVALS))
    first = lo.tz_convert("UTC").tz_localize(None) if aware else lo
    edges = pd.date_range(first, periods=-(-int((hi - lo).total_seconds()) // step) + 1, freq=f"{step}s")
    edges_ns = edges.as_unit("ns").asi8
    times, lines = found[0].times, found[0].lines
    at = pd.Series(lines).groupby(np.searchsorted(edges_ns, times, "right")).sum()
    counts = np.zeros(len(edges) - 1)
    inside = at[(at.index >= 1) & (at.index < len(edges))]
    counts[inside.index.to_numpy() - 1] = inside.to_numpy()
    if not counts.any():
        return None
    index = edges[1:]
    if aware:
        index = index.tz_localize("UTC").tz_convert(lo.tzinfo)
    return pd.Series(counts * 60.0 / step, index=index)

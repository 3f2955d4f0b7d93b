"""What to chart beside the story: the series that illustrate an incident
and the log events worth marking on them.  The analysis decides this once;
every output that draws (matplotlib's figures, the HTML report's charts)
draws what it is given here."""
from __future__ import annotations

import pandas as pd

from sarsleuth.knowledge import kb_entry, unmarked_event_kinds

#: Events this far either side of a span are marked on its charts.
EVENT_MARGIN = pd.Timedelta(minutes=10)


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
    ``(lo, hi)``: the incident and as long again either side."""
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
    span = max(pd.Timestamp(end) - pd.Timestamp(start), pd.Timedelta(minutes=5))
    return panels, (pd.Timestamp(start) - span, pd.Timestamp(end) + span)

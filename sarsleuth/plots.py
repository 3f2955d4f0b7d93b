"""Plots with matplotlib: one shared time axis per incident, log events
marked, the incident window shaded, large series decimated faithfully.

Decimation keeps the min and the max of each pixel-wide bucket, so a day at
1-second interval draws the same peaks as the raw data in a small file.
"""
from __future__ import annotations

#: Which series illustrate which detector: (section, metric, device or None
#: for "the busiest device in the window"), with the axis unit.
DETECTOR_SERIES = {
    "swap-climb": [("swap", "%swpused", "", "%")],
    "memory-pressure": [("memory", "%memused", "", "%")],
    "iowait-spike": [("cpu", "%iowait", "all", "%")],
    "cpu-saturation": [("cpu", "%idle", "all", "%")],
    "load-spike": [("queue", "ldavg-1", "", "load")],
    "nic-saturation": [("net-dev", "%ifutil", None, "%")],
    "loadtest-link-saturation": [("net-dev", "txkB/s", None, "kB/s")],
    "tcp-timewait": [("net-sock", "tcp-tw", "", "sockets")],
    "sar-gap": [("cpu", "%idle", "all", "%")],
}

MAX_POINTS = 2000


def decimate(series, max_points: int = MAX_POINTS):
    """Min/max per bucket so at most ~max_points points remain, peaks kept."""
    import numpy as np
    import pandas as pd
    n = len(series)
    if n <= max_points:
        return series
    buckets = max_points // 2
    edges = np.linspace(0, n, buckets + 1).astype(int)
    values = series.to_numpy(dtype=float)
    keep = []
    for a, b in zip(edges[:-1], edges[1:]):
        if b <= a:
            continue
        chunk = values[a:b]
        if np.all(np.isnan(chunk)):
            continue
        i, j = a + int(np.nanargmin(chunk)), a + int(np.nanargmax(chunk))
        keep.extend(sorted({i, j}))
    return pd.Series(values[keep], index=series.index[keep])


def _figure(nrows: int):
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    # labels come from inputs (device and metric names): never parse them as TeX
    plt.rcParams["text.parse_math"] = False
    plt.rcParams["svg.fonttype"] = "none"
    fig, axes = plt.subplots(nrows, 1, figsize=(9, 1.9 * nrows + 0.6), sharex=True, squeeze=False)
    return fig, [a[0] for a in axes]


def _busiest_device(case, section, metric, host, start, end):
    m = case.metrics
    sel = (m["section"] == section) & (m["metric"] == metric)
    if host is not None:
        sel &= m["host"] == host
    part = m[sel]
    if start is not None:
        part = part[(part["timestamp"] >= start) & (part["timestamp"] <= end)]
    part = part[~part["device"].isin(["lo"])]
    if not len(part):
        return None
    return part.groupby("device", observed=True)["value"].max().idxmax()


def _series(case, section, metric, device, host):
    m = case.metrics
    sel = (m["section"] == section) & (m["metric"] == metric) & (m["device"] == device)
    if host is not None:
        sel &= m["host"] == host
    part = m.loc[sel, ["timestamp", "value"]]
    if not len(part):
        return None
    return part.drop_duplicates("timestamp").set_index("timestamp")["value"].sort_index()


def _mark_events(ax, events, start=None, end=None, label=True):
    import pandas as pd
    if events is None or not len(events):
        return
    ev = events[events["timestamp"].notna()]
    if start is not None:
        pad = pd.Timedelta(minutes=10)
        ev = ev[(ev["timestamp"] >= start - pad) & (ev["timestamp"] <= end + pad)]
    ev = ev[~ev["kind"].isin(["worker-start", "sar-restart", "sar-comment", "loadtest-run", "ps-snapshot", "kernel-boot"])]
    seen = set()
    for kind, part in ev.groupby("kind"):
        times = part["timestamp"].drop_duplicates()
        for t in times.head(50):
            ax.axvline(t, color="tab:red", alpha=0.35, linewidth=0.8)
        if label and kind not in seen:
            seen.add(kind)
            ax.annotate(f"{kind} x{int(part['count'].fillna(1).sum())}", xy=(times.iloc[0], 1), xycoords=("data", "axes fraction"),
                        xytext=(2, -10 - 10 * (len(seen) - 1)), textcoords="offset points", fontsize=7, color="tab:red")


def plot_metric(case, section, metric, host=None, device=None, ax=None, events=True):
    """One metric over time with log events marked; returns the Axes."""
    if device is None:
        devs = case.metrics.loc[(case.metrics["section"] == section) & (case.metrics["metric"] == metric), "device"].unique()
        device = "all" if "all" in devs else (devs[0] if len(devs) else "")
    s = _series(case, section, metric, device, host)
    if s is None:
        raise KeyError(f"no {section}/{metric} (device {device!r}) in this case")
    if ax is None:
        _, axes = _figure(1)
        ax = axes[0]
    s = decimate(s)
    ax.plot(s.index, s.to_numpy(), linewidth=1.1, label=f"{metric}" + (f" ({device})" if device else ""))
    ax.set_ylabel(_unit_label(metric))
    ax.set_xlabel(f"time ({_zone_label(s.index)})")
    ax.set_title(f"{section}: {metric}" + (f" [{device}]" if device else ""), fontsize=9)
    ax.grid(alpha=0.3)
    if events:
        _mark_events(ax, case.events)
    return ax


def incident_figure(case, incident):
    """A figure with one panel per relevant metric on a shared time axis, the
    incident window shaded and its log events marked; None when the incident
    has no metric to show."""
    import pandas as pd
    panels, seen = [], set()
    host = incident.hosts[0] if incident.hosts else None
    start, end = incident.start, incident.end
    if start is None:
        return None
    for f in incident.findings:
        for section, metric, device, unit in DETECTOR_SERIES.get(f.detector, []):
            dev = device if device is not None else _busiest_device(case, section, metric, host, start, end)
            if dev is None or (section, metric, dev) in seen:
                continue
            s = _series(case, section, metric, dev, host)
            if s is None:
                continue
            seen.add((section, metric, dev))
            panels.append((section, metric, dev, unit, s))
    if not panels:
        return None
    span = max(pd.Timestamp(end) - pd.Timestamp(start), pd.Timedelta(minutes=5))
    lo, hi = pd.Timestamp(start) - span, pd.Timestamp(end) + span
    fig, axes = _figure(len(panels))
    for ax, (section, metric, dev, unit, s) in zip(axes, panels):
        w = s[(s.index >= lo) & (s.index <= hi)]
        if not len(w):
            w = s
        w = decimate(w)
        ax.plot(w.index, w.to_numpy(), linewidth=1.2, marker="." if len(w) < 60 else None, markersize=3)
        ax.axvspan(start, end, color="tab:orange", alpha=0.15)
        ax.set_ylabel(f"{metric}\n({unit})", fontsize=8)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
        if dev and dev not in ("all", ""):
            ax.set_title(f"{section} {dev}", fontsize=8, loc="right")
        _mark_events(ax, case.events, start, end, label=(ax is axes[0]))
    axes[-1].set_xlabel(f"time ({_zone_label(panels[0][4].index)})", fontsize=8)
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig


def _unit_label(metric: str) -> str:
    if metric.startswith("%"):
        return f"{metric} (%)"
    if metric.endswith("/s"):
        return f"{metric} (per second)"
    if metric.startswith("kb"):
        return f"{metric} (kB)"
    return metric


def _zone_label(index) -> str:
    tz = getattr(index, "tz", None)
    return str(tz) if tz is not None else "host wall clock"


def figure_svg(fig) -> str:
    import io
    import matplotlib.pyplot as plt
    buf = io.StringIO()
    # no metadata block: no date (reproducible output) and no RDF namespaces
    fig.savefig(buf, format="svg", bbox_inches="tight",
                metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):] if "<svg" in svg else svg

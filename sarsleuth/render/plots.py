"""Plots with matplotlib: one shared time axis per incident, log events
marked, the incident window shaded, large series decimated faithfully.

Decimation keeps the min and the max of each pixel-wide bucket, so a day at
1-second interval draws the same peaks as the raw data in a small file.
"""
from __future__ import annotations

import io

import numpy as np
import pandas as pd

from sarsleuth.metric_store.disk_names import labelled, names_of_case
from sarsleuth.analysis.charted import devices_of, incident_panels, marked_events, series

#: Event kinds drawn with a colour of their own; more kinds share the last.
EVENT_COLOURS = ["tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray"]


MAX_POINTS = 2000


def decimate(series, max_points: int = MAX_POINTS):
    """Min/max per bucket so at most ~max_points points remain, peaks kept."""
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
    # matplotlib (a third of a second) loads only when a plot is drawn, never for analyze alone
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    # labels come from inputs (device and metric names): never parse them as TeX
    plt.rcParams["text.parse_math"] = False
    plt.rcParams["text.usetex"] = False
    plt.rcParams["svg.fonttype"] = "none"
    fig, axes = plt.subplots(nrows, 1, figsize=(9, 1.9 * nrows + 0.6), sharex=True, squeeze=False)
    return fig, [a[0] for a in axes]


def _mark_events(ax, events, start=None, end=None, label=True):
    """Log events as thin vertical lines, one colour per kind.  Their names
    go in a legend below the plot, never on it: labels at event times pile
    up on each other when events cluster, as they do in an incident."""
    ev = marked_events(events, start, end)
    if ev is None:
        return []
    handles = []
    for i, (kind, part) in enumerate(ev.groupby("kind")):
        colour = EVENT_COLOURS[min(i, len(EVENT_COLOURS) - 1)]
        times = part["timestamp"].drop_duplicates()
        line = None
        for t in times.head(200):
            line = ax.axvline(t, color=colour, alpha=0.45, linewidth=0.9)
        if line is not None and label:
            count = int(part["count"].fillna(1).sum()) if "count" in part.columns else len(part)
            line.set_label(f"{kind} x{count:,}")
            handles.append(line)
    return handles


def _time_axis(ax, index) -> None:
    """Readable time ticks: enough of them (5 to 10), labelled concisely
    (the date once, then times), whatever the span."""
    import matplotlib.dates as mdates  # with the figure (see _figure)
    tz = getattr(index, "tz", None)
    locator = mdates.AutoDateLocator(minticks=6, maxticks=14, tz=tz)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=tz))


def _legend_below(fig, axes, handles) -> None:
    if handles:
        fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), fontsize=7, frameon=False,
                   title="log events (vertical lines)", title_fontsize=7, bbox_to_anchor=(0.5, 0.0))


def _disk_label(names: dict, host, device) -> str:
    """A device as outputs show it: ``dev253-0 (rhel-root)`` where the case
    names a disk sar labelled by its numbers (see sarsleuth.metric_store.disk_names)."""
    if host is not None:
        return labelled(device, names.get(host))
    named = {n.name if hasattr(n, "name") else n for per_host in names.values()
             for dev, n in per_host.items() if dev == device}
    return f"{device} ({next(iter(named))})" if len(named) == 1 else str(device)


def plot_metric(case, section, metric, host=None, device=None, ax=None, events=True):
    """One metric over time with log events marked; returns the Axes."""
    if device is None:
        devs = list(devices_of(case, section, metric, host))
        device = "all" if "all" in devs else (devs[0] if len(devs) else "")
    s = series(case, section, metric, device, host)
    if s is None:
        raise KeyError(f"no {section}/{metric} (device {device!r}) in this case")
    if ax is None:
        _, axes = _figure(1)
        ax = axes[0]
    s = decimate(s)
    shown = _disk_label(names_of_case(case), host, device) if device and section == "disk" else device
    ax.plot(s.index, s.to_numpy(), linewidth=1.1, label=f"{metric}" + (f" ({shown})" if shown else ""))
    ax.set_ylabel(_unit_label(metric))
    ax.set_xlabel(f"time ({_zone_label(s.index)})")
    ax.set_title(f"{section}: {metric}" + (f" [{shown}]" if shown else ""), fontsize=9)
    ax.grid(alpha=0.3)
    _time_axis(ax, s.index)
    if events and _mark_events(ax, case.events):
        ax.legend(loc="upper left", fontsize=7, framealpha=0.8)
    return ax


def incident_figure(case, incident):
    """A figure with one panel per relevant metric on a shared time axis
    (each panel with its own time labels), the incident window shaded and
    its log events marked; None when the incident has no metric to show."""
    panels, bounds = incident_panels(case, incident)
    if not panels:
        return None
    host = incident.hosts[0] if incident.hosts else None
    start, end = incident.start, incident.end
    lo, hi = bounds
    fig, axes = _figure(len(panels))
    names = names_of_case(case) if any(sec == "disk" for sec, *_ in panels) else {}
    handles = []
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
            ax.set_title(f"{section} {_disk_label(names, host, dev) if section == 'disk' else dev}",
                         fontsize=8, loc="right")
        marked = _mark_events(ax, case.events, start, end, label=(ax is axes[0]))
        handles = handles or marked
        _time_axis(ax, panels[0][4].index)
        ax.tick_params(labelbottom=True)        # every panel says its times, not only the lowest
    axes[-1].set_xlabel(f"time ({_zone_label(panels[0][4].index)})", fontsize=8)
    fig.tight_layout()
    if handles:
        rows = (len(handles) + 3) // 4
        # room below the time axis for the legend, in inches whatever the height
        fig.subplots_adjust(bottom=min(0.45, (0.75 + 0.18 * rows) / fig.get_figheight()))
        _legend_below(fig, axes, handles)
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
    import matplotlib.pyplot as plt  # with the figure (see _figure)
    buf = io.StringIO()
    # no metadata block: no date (reproducible output) and no RDF namespaces
    fig.savefig(buf, format="svg", bbox_inches="tight",
                metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):] if "<svg" in svg else svg

"""Plots with matplotlib: an incident's metrics on one time axis, its log
events marked, its window shaded (``--plots``), and one metric for the
Python API (``case.plot``); large series reduced with their extremes kept
(:mod:`sarsleuth.render.decimation`).

Times are drawn on the clock the story is told on (the incident's zone,
said under the axis), labelled by round steps (``15:00``, ``15:05``; the
seconds only when the step is under a minute) with the date in the title
and again wherever it changes.  Nothing here changes matplotlib's backend
or its settings: a figure written to a file is a standalone ``Figure``
(no pyplot), the API's figure is pyplot's on the session's own backend
(inline in a notebook), and the settings a drawing needs (labels from
inputs never read as TeX) hold only while it is drawn."""
from __future__ import annotations

import io
import textwrap

import pandas as pd

from sarsleuth.analysis.charted import devices_of, incident_panels, marked_events, series
from sarsleuth.metric_store.disk_names import labelled, names_of_case
from sarsleuth.render.chart_groups import unit_of
from sarsleuth.render.clock_ticks import dated_ticks
from sarsleuth.render.decimation import decimated
from sarsleuth.timebase.clock import on_clock, zone_of

#: Event kinds drawn with a colour of their own; more kinds share the last.
EVENT_COLOURS = ["tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray"]
#: Columns a series is reduced to (two points each: its lowest and highest sample).
COLUMNS = 1000
#: Time labels under a 9-inch axis.
TIME_LABELS = 8
#: Settings of every drawing: labels come from inputs (device and metric
#: names), never parsed as TeX; SVG text kept as text.
SETTINGS = {"text.parse_math": False, "text.usetex": False, "svg.fonttype": "none"}


def _settings():
    # matplotlib (a third of a second) loads only when a plot is drawn, never for analyze alone
    import matplotlib
    return matplotlib.rc_context(SETTINGS)


def _standalone(nrows: int, height: float):
    """A figure of ``nrows`` panels that no backend knows of (for files)."""
    from matplotlib.figure import Figure  # with the drawing (see _settings)
    fig = Figure(figsize=(9, height))
    axes = fig.subplots(nrows, 1, sharex=True, squeeze=False)
    return fig, [a[0] for a in axes]


def _on_clock(s, zone):
    """A series' times as the wall clock of ``zone`` shows them (naive, as
    matplotlib draws them), the zone said as :func:`zone_of` says it."""
    index = s.index
    if zone is not None and getattr(index, "tz", None) is not None:
        index = index.tz_convert(str(zone))
    said = zone_of(index[0]) if len(index) else ""
    if getattr(index, "tz", None) is not None:
        index = index.tz_localize(None)
    return pd.Series(s.to_numpy(), index=index), said


def _time_axis(ax, lo, hi, show_dates: bool = True) -> None:
    """Round times between ``lo`` and ``hi`` (naive wall clock) as the
    axis' labels; the date under a label where it changes (and under the
    first one when ``show_dates``)."""
    ticks = dated_ticks(lo, hi, TIME_LABELS)
    labels = []
    for i, t in enumerate(ticks):
        date = t.date if (show_dates or i) else ""
        labels.append(f"{t.label}\n{date}" if date else t.label)
    ax.set_xticks([t.at.to_pydatetime() for t in ticks])
    ax.set_xticklabels(labels)
    ax.set_xlim(lo.to_pydatetime(), hi.to_pydatetime())


def _mark_events(ax, events, start=None, end=None, label=True, zone=None):
    """Log events as thin vertical lines, one colour per kind.  Their names
    go in a legend below the plot, never on it: labels at event times pile
    up on each other when events cluster, as they do in an incident."""
    ev = marked_events(events, start, end)
    if ev is None:
        return []
    handles = []
    for i, (kind, part) in enumerate(ev.groupby("kind")):
        colour = EVENT_COLOURS[min(i, len(EVENT_COLOURS) - 1)]
        line = None
        for t in part["timestamp"].drop_duplicates().head(200):
            t = pd.Timestamp(on_clock(t, zone))
            line = ax.axvline(t.tz_localize(None) if t.tzinfo else t, color=colour, alpha=0.45, linewidth=0.9)
        if line is not None and label:
            count = int(part["count"].fillna(1).sum()) if "count" in part.columns else len(part)
            line.set_label(f"{kind} x{count:,}")
            handles.append(line)
    return handles


def _disk_label(names: dict, host, device) -> str:
    """A device as outputs show it: ``dev253-0 (rhel-root)`` where the case
    names a disk sar labelled by its numbers (see sarsleuth.metric_store.disk_names)."""
    if host is not None:
        return labelled(device, names.get(host))
    named = {n.name if hasattr(n, "name") else n for per_host in names.values()
             for dev, n in per_host.items() if dev == device}
    return f"{device} ({next(iter(named))})" if len(named) == 1 else str(device)


def plot_metric(case, section, metric, host=None, device=None, ax=None, events=True):
    """One metric over time with log events marked; returns the Axes (of
    a new pyplot figure, on the session's backend, when none is given)."""
    if device is None:
        devs = list(devices_of(case, section, metric, host))
        device = "all" if "all" in devs else (devs[0] if len(devs) else "")
    s = series(case, section, metric, device, host)
    if s is None:
        raise KeyError(f"no {section}/{metric} (device {device!r}) in this case")
    if ax is None:
        # the API's figure: pyplot's, on the session's backend; pyplot set up
        # before the drawing's settings (which it would otherwise undo on leaving)
        import matplotlib.pyplot as plt
        _fig, ax = plt.subplots(figsize=(9, 2.6))
    with _settings():
        drawn, zone = _on_clock(decimated(s, COLUMNS), None)
        shown = _disk_label(names_of_case(case), host, device) if device and section == "disk" else device
        ax.plot(drawn.index, drawn.to_numpy(), linewidth=1.1, label=f"{metric}" + (f" ({shown})" if shown else ""))
        unit = unit_of(section, metric)
        ax.set_ylabel(f"{metric} ({unit})" if unit else metric)
        ax.set_xlabel(f"time ({zone or 'host wall clock'})")
        ax.set_title(f"{section}: {metric}" + (f" [{shown}]" if shown else ""), fontsize=9)
        ax.grid(alpha=0.3)
        _time_axis(ax, drawn.index[0], drawn.index[-1])
        tz = getattr(s.index, "tz", None)
        if events and _mark_events(ax, case.events, zone=tz):
            ax.legend(loc="upper left", fontsize=7, framealpha=0.8)
    return ax


def incident_figure(case, incident):
    """A standalone figure (no backend touched) with one panel per
    relevant metric over the incident and its lead-up, on one time axis on
    the story's clock (each panel with its time labels), the incident
    window shaded, its log events marked and the incident as its title;
    None when the incident has no metric to show."""
    panels, bounds = incident_panels(case, incident)
    if not panels:
        return None
    host = incident.hosts[0] if incident.hosts else None
    zone = incident.zone
    lo, hi = (pd.Timestamp(on_clock(t, zone)) for t in bounds)
    start, end = (pd.Timestamp(on_clock(t, zone)) for t in (incident.start, incident.end))
    lo, hi, start, end = (t.tz_localize(None) if t.tzinfo else t for t in (lo, hi, start, end))
    names = names_of_case(case) if any(sec == "disk" for sec, *_ in panels) else {}
    handles, said = [], ""
    with _settings():
        fig, axes = _standalone(len(panels), 1.9 * len(panels) + 1.1)
        for ax, (section, metric, dev, unit, s) in zip(axes, panels):
            w, said = _on_clock(s, zone)
            w = w[(w.index >= lo) & (w.index <= hi)]
            if not len(w):
                continue
            w = decimated(w, COLUMNS)
            ax.plot(w.index, w.to_numpy(), linewidth=1.2, marker="." if len(w) < 60 else None, markersize=3)
            ax.axvspan(start, end, color="tab:orange", alpha=0.15)
            ax.set_ylabel(f"{metric}\n({unit})", fontsize=8)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=7)
            if dev and dev not in ("all", ""):
                ax.set_title(f"{section} {_disk_label(names, host, dev) if section == 'disk' else dev}",
                             fontsize=8, loc="right")
            marked = _mark_events(ax, case.events, bounds[0], bounds[1], label=(ax is axes[0]), zone=zone)
            handles = handles or marked
            _time_axis(ax, lo, hi, show_dates=False)
            ax.tick_params(labelbottom=True)        # every panel says its times, not only the lowest
        axes[-1].set_xlabel(f"time ({said or zone_of(bounds[0], zone) or 'host wall clock'})", fontsize=8)
        title = f"#{incident.rank} {incident.title}"
        fig.suptitle("\n".join(textwrap.wrap(title, 100)[:2]) + f"\n{lo.strftime('%Y-%m-%d')}", fontsize=9)
        fig.tight_layout()
        if handles:
            rows = (len(handles) + 3) // 4
            # room below the time axis for the legend, in inches whatever the height
            fig.subplots_adjust(bottom=min(0.45, (0.75 + 0.18 * rows) / fig.get_figheight()))
            fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), fontsize=7, frameon=False,
                       title="log events (vertical lines)", title_fontsize=7, bbox_to_anchor=(0.5, 0.0))
    return fig


def figure_svg(fig) -> str:
    """A figure as SVG text, without the metadata block (no date: the same
    figure gives the same bytes; no RDF namespaces)."""
    buf = io.StringIO()
    with _settings():
        fig.savefig(buf, format="svg", bbox_inches="tight",
                    metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    svg = buf.getvalue()
    return svg[svg.index("<svg"):] if "<svg" in svg else svg

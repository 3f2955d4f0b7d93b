"""The self-contained HTML report: inline CSS, incident charts and
timelines drawn inline (SVG, HTML: they read without a script), the
metrics explorer drawn by the two scripts the page carries and its
Content-Security-Policy lets run (:mod:`sarsleuth.render.page_scripts`),
no network; it reflows from 400 to 1920 pixels wide.  Jinja2 autoescaping is on, so every string that came from an input
is shown as text; file names that were not UTF-8 show U+FFFD for each
undecodable byte, and control and bidirectional characters (ESC, BEL,
U+202E) are written as visible escapes over the whole page (the page's own
markup holds none), hand-drawn SVG included."""
from __future__ import annotations

from sarsleuth.metric_store.disk_names import labelled, names_of_case
from sarsleuth.analysis.charted import incident_frame, incident_panels, log_rate, marked_events, series
from sarsleuth.knowledge.departures import LOG_SECTION
from sarsleuth.redaction.check import refuse_leak
from sarsleuth.render.charts import CHART_STYLE, chart_svg
from sarsleuth.render.explorer import clock_name, explorer, payload
from sarsleuth.render.files import write_text_file
from sarsleuth.render.fleet_html import build_fleet_html
from sarsleuth.render.page_scripts import digest, explorer_script, json_for_script, uplot_script, uplot_style
from sarsleuth.safe_text import visible, visible_tree
from sarsleuth.render.jinja import template
from sarsleuth.render.listed_times import ListedTimes
from sarsleuth.render.timeline import incident_timeline_html, overview_html
from sarsleuth.render.view import EVIDENCE_LINES, MAX_WARNINGS, View, host_lines, left_out, note_groups
from sarsleuth.timebase.clock import on_clock, when
from sarsleuth.version import __version__

#: Incidents given a plot (each costs a matplotlib figure).
MAX_PLOTS = 10


def build_html(case, plots: bool = True, view: View | None = None) -> str:
    view = view or View()
    drawn = list(case.incidents) if view.everything else list(case.incidents[:MAX_PLOTS])
    figures = {inc.id: incident_charts(case, inc) for inc in drawn} if plots else {}
    figures = {k: v for k, v in figures.items() if v}
    changed_figures = {inc.id: change_charts(case, inc) for inc in drawn} if plots else {}
    sources = []
    for s in case.sources:
        start, end = s.span()
        sources.append({"path": s.path, "kind": s.kind, "host": s.host or "", "start": when(start) if start is not None else "",
                        "end": when(end) if end is not None else "", "records": s.records, "warnings": s.warnings})
    # each finding carries its host's clock: sorted on the case's
    findings = sorted(case.findings, key=lambda f: (str(on_clock(f.start, case.tz)) if f.start is not None else "~",
                                                    f.detector))
    # each list across hosts on the clock it states (render/listed_times.py)
    listed, found = ListedTimes.of_incidents(case), ListedTimes.of_findings(case)
    zone = listed.heading(case.incidents[0].start) if case.incidents else ""
    plots_note = left_out(len(case.incidents), len(drawn), "incident(s) without a chart",
                          "--all draws a chart for every one") if plots else ""
    hosts = explorer(case) if plots else []
    scripts = [uplot_script(), explorer_script()] if hosts else []
    return visible(template("report.html.j2").render(
        case=case, incidents=case.incidents, findings=findings, sources=sources, figures=figures,
        changed_figures=changed_figures,
        version=__version__, zone=zone, listed=listed, found=found, skipped=case.skipped,
        found_zone=found.heading(findings[0].start) if findings and findings[0].start is not None else "",
        timeline=overview_html(case),
        timelines={inc.id: incident_timeline_html(case, inc) for inc in case.incidents},
        evidence_lines=None if view.everything else EVIDENCE_LINES + 1, plots_note=plots_note,
        anchors={str(id(f)): f"finding-{inc.id}-{i}" for inc in case.incidents for i, f in enumerate(inc.findings, 1)},
        host_lines=host_lines(getattr(case, "hosts", [])), notes=note_groups(case.notes),
        warnings=view.rows(case.warnings, MAX_WARNINGS),
        warnings_left=left_out(len(case.warnings), len(view.rows(case.warnings, MAX_WARNINGS)), "warning(s)",
                               "--all or --format json lists every one"),
        chart_style=CHART_STYLE, explorer=hosts, scripts=scripts, script_hashes=[digest(x) for x in scripts],
        explorer_json=json_for_script(visible_tree(payload(case, hosts))) if hosts else "",
        explorer_zone=clock_name(case, min(h.lo for h in hosts)) if hosts else "", uplot_css=uplot_style(),
    ))


def incident_charts(case, inc) -> list:
    """[{caption, svg, events}]: the metrics of an incident, each on its
    own chart with its time axis, the window shaded, its events marked."""
    panels, bounds = incident_panels(case, inc)
    if not panels:
        return []
    lo, hi = bounds
    host = inc.hosts[0] if inc.hosts else None
    ev = marked_events(case.events, lo, hi)
    if ev is not None and host is not None:
        ev = ev[ev["host"] == host]
    times = list(ev["timestamp"].drop_duplicates()[:200]) if ev is not None else []
    kinds = ", ".join(sorted(set(ev["kind"]))) if ev is not None and len(ev) else "none"
    names = names_of_case(case) if any(p[0] == "disk" for p in panels) else {}
    out = []
    for section, metric, dev, unit, series in panels:
        try:
            svg = chart_svg(series, lo, hi, window=(inc.start, inc.end), events=times, label=f"{section} {metric}",
                            unit=unit, zone=inc.zone)
        except TypeError:          # a wall-clock series beside an aware window
            svg = chart_svg(series, window=None, label=f"{section} {metric}", unit=unit)
        if svg:
            device = labelled(dev, names.get(host)) if section == "disk" else dev
            out.append({"caption": f"{metric} ({unit}), {section}" + (f" {device}" if device not in ("", "all") else ""),
                        "svg": svg, "events": kinds})
    return out


def change_charts(case, inc) -> list:
    """[{caption, svg}]: the series of an incident's "what else changed",
    each a small chart around the incident with its window shaded and its
    baseline's level drawn: a sar series as recorded, a log message kind
    as its lines a minute in each interval."""
    out = []
    bounds = incident_frame(inc)
    for entry in inc.changes:
        if bounds is None:
            continue
        lo, hi = bounds
        if entry.get("section") == LOG_SECTION:
            try:
                s = log_rate(case, entry["host"], entry.get("device") or "", entry["metric"], lo, hi)
            except TypeError:      # a wall-clock log beside an aware incident
                s = None
        else:
            s = series(case, entry["section"], entry["metric"], entry.get("device") or "", entry["host"])
        if s is None:
            continue
        try:
            svg = chart_svg(s, lo, hi, window=(inc.start, inc.end), label=entry["series"], unit=entry["unit"],
                            zone=inc.zone, level=entry.get("baseline"))
        except TypeError:          # a wall-clock series beside an aware window
            svg = chart_svg(s, window=None, label=entry["series"], unit=entry["unit"], level=entry.get("baseline"))
        if svg:
            unit = "lines a minute" if entry.get("section") == LOG_SECTION else entry["unit"] or "count"
            out.append({"caption": f"{entry['series']} ({unit}), {entry['direction']}",
                        "svg": svg})
    return out


def write_case(case, out, view: View | None = None) -> None:
    out.write(build_html(case, view=view))


def write_html(case, path, plots: bool = True, inputs=(), view: View | None = None) -> str:
    """Write the report to ``path`` whole or not at all (a temporary file
    renamed over it), never over one of ``inputs``."""
    text = build_html(case, plots=plots, view=view)
    refuse_leak(getattr(case, "redactor", None), text, path)     # a redacted case's last look
    write_text_file(path, text, inputs)
    return str(path)


def write_fleet(fleet, out) -> None:
    out.write(build_fleet_html(fleet))


def write_table(table, out) -> None:
    out.write(visible(template("table.html.j2").render(table=table, rows=table.rows())) + "\n")


def case_fragment(case) -> str:
    return visible(template("case.html.j2").render(case=case, listed=ListedTimes.of_incidents(case)))

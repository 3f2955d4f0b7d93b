"""The self-contained HTML report: inline CSS, plots inlined as SVG, no
network.  Jinja2 autoescaping is on, so every string that came from an input
is shown as text; file names that were not UTF-8 show U+FFFD for each
undecodable byte, and control and bidirectional characters (ESC, BEL,
U+202E) are written as visible escapes over the whole page (the page's own
markup holds none), hand-drawn SVG included."""
from __future__ import annotations

from sarsleuth import __version__
from sarsleuth.render._files import write_text_file
from sarsleuth.render._fleet_html import build_fleet_html
from sarsleuth.render._safe import visible
from sarsleuth.render._templates import template
from sarsleuth.render._timeline import timeline_svg
from sarsleuth.render._view import EVIDENCE_LINES, View, left_out
from sarsleuth.timebase.clock import on_clock, when, zone_of

#: Incidents given a plot (each costs a matplotlib figure).
MAX_PLOTS = 10


def build_html(case, plots: bool = True, view: View | None = None) -> str:
    view = view or View()
    figures = {}
    drawn = list(case.incidents) if view.everything else list(case.incidents[:MAX_PLOTS])
    if plots:
        from sarsleuth.plots import figure_svg, incident_figure
        for inc in drawn:
            fig = incident_figure(case, inc)
            if fig is not None:
                figures[inc.id] = figure_svg(fig)
    sources = []
    for s in case.sources:
        start, end = s.span()
        sources.append({"path": s.path, "kind": s.kind, "host": s.host or "", "start": when(start) if start is not None else "",
                        "end": when(end) if end is not None else "", "records": s.records, "warnings": s.warnings})
    # each finding carries its host's clock: sorted on the case's
    findings = sorted(case.findings, key=lambda f: (str(on_clock(f.start, case.tz)) if f.start is not None else "~",
                                                    f.detector))
    # the lists across hosts are on one stated zone, the case's
    zone = zone_of(case.incidents[0].start, case.tz) if case.incidents else ""
    plots_note = left_out(len(case.incidents), len(drawn), "incident(s) without a chart",
                          "--all draws a chart for every one") if plots else ""
    return visible(template("report.html.j2").render(
        case=case, incidents=case.incidents, findings=findings, sources=sources, figures=figures,
        version=__version__, zone=zone, skipped=case.skipped, timeline=timeline_svg(case),
        evidence_lines=None if view.everything else EVIDENCE_LINES + 1, plots_note=plots_note,
        anchors={str(id(f)): f"finding-{inc.id}-{i}" for inc in case.incidents for i, f in enumerate(inc.findings, 1)},
    ))


def write_case(case, out, view: View | None = None) -> None:
    out.write(build_html(case, view=view))


def write_html(case, path, plots: bool = True, inputs=(), view: View | None = None) -> str:
    """Write the report to ``path`` whole or not at all (a temporary file
    renamed over it), never over one of ``inputs``."""
    write_text_file(path, build_html(case, plots=plots, view=view), inputs)
    return str(path)


def write_fleet(fleet, out) -> None:
    out.write(build_fleet_html(fleet))


def write_table(table, out) -> None:
    out.write(visible(template("table.html.j2").render(table=table, rows=table.rows())) + "\n")


def case_fragment(case) -> str:
    return visible(template("case.html.j2").render(case=case))

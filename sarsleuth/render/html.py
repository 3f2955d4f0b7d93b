"""The self-contained HTML report: inline CSS, plots inlined as SVG, no
network.  Jinja2 autoescaping is on, so every string that came from an input
is shown as text; file names that were not UTF-8 show U+FFFD for each
undecodable byte, and control and bidirectional characters (ESC, BEL,
U+202E) are written as visible escapes over the whole page (the page's own
markup holds none), hand-drawn SVG included."""
from __future__ import annotations

from importlib import resources

from sarsleuth.render._safe import visible
from sarsleuth.render._view import EVIDENCE_LINES, View, code_spans, left_out
from sarsleuth.timebase.clock import on_clock, when, zone_of

#: Incidents given a plot (each costs a matplotlib figure).
MAX_PLOTS = 10


def _env():
    from jinja2 import Environment, select_autoescape
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    # ``ts|when`` on the time's own clock, ``ts|when(zone)`` on zone's
    env.filters["when"] = lambda ts, zone=None: when(ts, zone=zone)
    env.filters["basename"] = lambda p: str(p).replace("\\", "/").rsplit("/", 1)[-1]
    env.filters["spans"] = code_spans
    env.filters["zone"] = lambda ts, zone=None: zone_of(ts, zone)
    env.filters["string_id"] = lambda obj: str(id(obj))
    env.globals["zip"] = zip
    return env


def _read(name: str) -> str:
    return resources.files("sarsleuth.render").joinpath("templates", name).read_text("utf-8")


def _template(name: str):
    # the report embeds the incident fragment, so both share one template
    text = _read(name).replace("{% include_incident %}", _read("incident.html.j2"))
    return _env().from_string(text)


def build_html(case, plots: bool = True, view: View | None = None) -> str:
    from sarsleuth import __version__
    from sarsleuth.render._timeline import timeline_svg
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
    return visible(_template("report.html.j2").render(
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
    from sarsleuth.render._files import write_text_file
    write_text_file(path, build_html(case, plots=plots, view=view), inputs)
    return str(path)


def write_table(table, out) -> None:
    out.write(visible(_template("table.html.j2").render(table=table, rows=table.rows())) + "\n")


def incident_fragment(inc) -> str:
    return visible(_template("incident.html.j2").render(inc=inc, figure=None, evidence_lines=EVIDENCE_LINES + 1))


def case_fragment(case) -> str:
    return visible(_template("case.html.j2").render(case=case))

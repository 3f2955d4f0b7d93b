"""The Jinja2 templates of the HTML outputs (the report, a fleet, tables,
and the fragments a notebook shows), in one environment: autoescaping on,
and filters that say times on a given clock."""
from __future__ import annotations

from importlib import resources

from jinja2 import Environment, select_autoescape
from markupsafe import Markup, escape

from sarsleuth.model import Incident
from sarsleuth.safe_text import visible
from sarsleuth.render.view import EVIDENCE_LINES, code_spans, plain
from sarsleuth.timebase.clock import when, zone_of


def environment():
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    # ``ts|when`` on the time's own clock, ``ts|when(zone)`` on zone's
    env.filters["when"] = lambda ts, zone=None: when(ts, zone=zone)
    env.filters["basename"] = lambda p: str(p).replace("\\", "/").rsplit("/", 1)[-1]
    env.filters["spans"] = code_spans
    env.filters["uncoded"] = plain
    # story text with its `code` as <code>, never raw backticks
    env.filters["coded"] = lambda text: Markup("".join(f"<code>{escape(p)}</code>" if code else str(escape(p))
                                                       for p, code in code_spans(str(text or ""))))
    env.filters["zone"] = lambda ts, zone=None: zone_of(ts, zone)
    env.filters["string_id"] = lambda obj: str(id(obj))
    env.globals["zip"] = zip
    return env


def read(name: str) -> str:
    return resources.files("sarsleuth.render").joinpath("templates", name).read_text("utf-8")


def template(name: str):
    # the report embeds the incident fragment, so both share one template
    text = read(name).replace("{% include_incident %}", read("incident.html.j2"))
    return environment().from_string(text)


def incident_fragment(inc) -> str:
    """An incident as a notebook shows it."""
    return visible(template("incident.html.j2").render(inc=inc, figure=None, changed=None, inc_timeline=None,
                                                        evidence_lines=EVIDENCE_LINES + 1))


Incident.notebook_html = incident_fragment

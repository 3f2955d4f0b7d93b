"""The fleet's HTML report: fleet incidents first, a host x time heatmap of
the worst severity, and each host's own story one click away (a folded
section the heatmap and the incidents link to).  Self-contained, no script;
Jinja2 autoescaping makes everything from inputs text."""
from __future__ import annotations

import math
from html import escape

import pandas as pd

from sarsleuth.inputs.bundles.facts import disk_summary
from sarsleuth.model import SEVERITY_RANK
from sarsleuth.redaction.check import refuse_leak
from sarsleuth.render.files import write_text_file
from sarsleuth.safe_text import visible
from sarsleuth.render.jinja import environment, read
from sarsleuth.timebase.clock import on_fleet_clock
from sarsleuth.version import __version__

#: How the group of files that name no host is shown.
NO_HOST_LABEL = "(files naming no host)"

#: Columns of the heatmap at most; a cell covers a whole number of minutes.
HEAT_COLUMNS = 48
#: Hosts named in an incident before "and N more".
MAX_NAMED = 40
MAX_INCIDENTS = 50


def host_facts_line(h) -> str:
    """What a host is: kernel, CPUs, memory, zone, limits its bundle gave
    (empty when nothing is known)."""
    f, b = h.facts, h.host_facts or {}
    parts = []
    if f.get("hostname") and f.get("hostname") != h.host:
        parts.append(f"hostname {f['hostname']}")
    if f.get("kernel"):
        parts.append(f"kernel {f['kernel']}")
    if f.get("ncpu"):
        parts.append(f"{f['ncpu']} CPUs")
    if f.get("mem_total_kb"):
        parts.append(f"{f['mem_total_kb'] / 1048576:.1f} GiB RAM")
    if f.get("zone"):
        parts.append(f"zone {f['zone']}")
    n_limits = len(b.get("limits", {})) + sum(len(v) for v in b.get("nginx", {}).values())
    if n_limits:
        parts.append(f"{n_limits} limits read")
    disks = disk_summary(b.get("disk_names") or {})
    if disks:
        parts.append(disks)
    return ", ".join(parts)


def host_limits(h) -> list:
    """(name, value, where read, line text) of each sysctl and nginx limit of a
    host's bundle."""
    b = h.host_facts or {}
    rows = [(name, lim["value"], f"{lim['path']}:{lim['line']}" if lim.get("line") else lim["path"], lim["text"])
            for name, lim in sorted(b.get("limits", {}).items())]
    rows += [(name, lim["value"], f"{lim['path']}:{lim['line']}" if lim.get("line") else lim["path"], lim["text"])
             for name, values in b.get("nginx", {}).items() for lim in values]
    return rows


def _template(name: str):
    return environment().from_string(read(name))


def heatmap(fleet, columns: int = HEAT_COLUMNS) -> dict:
    """Rows of hosts with findings, cells of the worst severity in each time
    bin (on the fleet clock), and how many hosts had none."""
    timed = []
    for h in fleet.hosts:
        for f in h.findings:
            start, _ = on_fleet_clock(f.start)
            if start is None:
                continue
            end, _ = on_fleet_clock(f.end)
            timed.append((h.host, start, end if end is not None and end >= start else start, f.severity))
    quiet = sum(1 for h in fleet.hosts if not h.findings)
    if not timed:
        return {"rows": [], "labels": [], "quiet": quiet, "minutes": 0}
    lo = min(t[1] for t in timed).floor("min")
    hi = max(t[2] for t in timed).ceil("min") + pd.Timedelta(minutes=1)
    minutes = max(1, math.ceil((hi - lo).total_seconds() / 60 / columns))
    width = pd.Timedelta(minutes=minutes)
    n = max(1, math.ceil((hi - lo) / width))
    worst: dict = {}
    for host, start, end, severity in timed:
        cells = worst.setdefault(host, [None] * n)
        for k in range(int((start - lo) // width), min(n - 1, int((end - lo) // width)) + 1):
            if cells[k] is None or SEVERITY_RANK[severity] > SEVERITY_RANK[cells[k]]:
                cells[k] = severity
    labels = [(lo + k * width).strftime("%m-%d %H:%M") for k in range(n)]
    rows = [{"host": host, "cells": worst[host]} for host in sorted(worst)]
    return {"rows": rows, "labels": labels, "quiet": quiet, "minutes": minutes}


def build_fleet_html(fleet) -> str:
    heat = heatmap(fleet)
    anchors = {h.host: f"host-{i}" for i, h in enumerate(fleet.hosts)}
    wall = any(h.facts.get("wall_clock") for h in fleet.hosts if h.ok)
    clock = "UTC" + (" (hosts with an unknown zone: their wall clock)" if wall else "")
    return visible(_template("fleet.html.j2").render(
        fleet=fleet, heat=heat, anchors=anchors, version=__version__, clock=clock, max_named=MAX_NAMED,
        facts_line=host_facts_line, host_limits=host_limits,
        max_incidents=MAX_INCIDENTS, no_host=NO_HOST_LABEL, bin_label=f"= {heat['minutes']} minute(s)" if heat["minutes"] else ""))


def write_fleet_html(fleet, path, inputs=()) -> str:
    text = build_fleet_html(fleet)
    refuse_leak(getattr(fleet, "redactor", None), text, path)     # a redacted fleet's last look
    write_text_file(path, text, inputs)
    return str(path)


def fleet_fragment(fleet) -> str:
    """A notebook's view of a fleet: the fleet incidents."""
    rows = "".join(f"<tr><td>{i.rank}</td><td>{escape(i.severity)}</td><td>{escape(visible(i.title))}</td>"
                   f"<td>{len(i.hosts)}</td></tr>" for i in fleet.incidents[:20])
    return (f"<div><b>sarsleuth fleet</b>: {len(fleet.hosts)} hosts, {len(fleet.incidents)} fleet incidents"
            f"<table><tr><th>#</th><th>severity</th><th>incident</th><th>hosts</th></tr>{rows}</table></div>")

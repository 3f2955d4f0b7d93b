"""The fleet view in text and markdown: fleet incidents first (with the
hosts that saw each and those that did not), then each host's own story in
one line, then what could not be read."""
from __future__ import annotations

from sarsleuth.render.fleet_html import NO_HOST_LABEL, host_facts_line
from sarsleuth.render.view import MAX_WARNINGS
from sarsleuth.safe_text import shown, utf8

#: Hosts named in a line before "and N more".
NAMED_HOSTS = 12
#: Hosts named in "departed most in its window".
DEPARTED_NAMED = 5
#: Hosts whose facts are listed one a line.
MAX_FACT_LINES = 50


def host_list(hosts, limit: int = NAMED_HOSTS) -> str:
    named = ", ".join(hosts[:limit])
    return named + (f" and {len(hosts) - limit} more" if len(hosts) > limit else "") if hosts else "none"


def fleet_text(fleet, md_escape=None) -> str:
    """The fleet view as plain text, or as markdown with ``md_escape``
    (everything from inputs made safe for the medium)."""
    markdown = md_escape is not None
    safe = md_escape if markdown else shown
    lines = [f"# Fleet: {len(fleet.named)} hosts" if markdown else f"FLEET: {len(fleet.named)} hosts",
             "", safe(fleet.headline()), ""]
    lines.append("## Fleet incidents" if markdown else "Fleet incidents (widest first):")
    if not fleet.incidents:
        lines.append("none")
    for inc in fleet.incidents:
        bullet = "1." if markdown else f"#{inc.rank}"
        lines.append(f"{bullet} [{inc.severity}] {safe(inc.title)} (score {inc.score:.2f})")
        lines.append(f"   seen on: {safe(host_list(inc.hosts))}")
        lines.append(f"   not on: {safe(host_list(inc.hosts_without))}")
        if inc.departed:
            most = [f"{d['host']} ({d['entries']} change(s), largest {d['largest']})" for d in inc.departed[:DEPARTED_NAMED]]
            more = len(inc.departed) - DEPARTED_NAMED
            lines.append(f"   departed most in its window: {safe(', '.join(most))}" + (f" and {more} more" if more > 0 else ""))
        if inc.findings:
            lines.append(f"   e.g. {safe(inc.findings[0].host)}: {safe(inc.findings[0].title)}")
    lines += ["", "## Hosts" if markdown else "Hosts:"]
    quiet = [h.host for h in fleet.hosts if h.ok and not h.incidents and h.host]
    for h in fleet.hosts:
        name = h.host or NO_HOST_LABEL
        if not h.ok:
            lines.append(f"- {safe(name)}: not analysed: {safe(h.error)}")
        elif h.incidents:
            lines.append(f"- {safe(name)}: {len(h.incidents)} incident(s), worst {h.worst}; "
                         f"first: {safe(h.incidents[0].title)}")
    if quiet:
        lines.append(f"- {len(quiet)} host(s) without incident: {safe(host_list(quiet))}")
    known = [h for h in fleet.hosts if h.host_facts]
    if known:
        # what each bundle says of its machine: the zone its times are read in, the limits judged against
        lines += ["", "## Host facts" if markdown else "Host facts (from their bundles):"]
        for h in known[:MAX_FACT_LINES]:
            lines.append(f"- {safe(h.host or NO_HOST_LABEL)}: {safe(host_facts_line(h))}")
        if len(known) > MAX_FACT_LINES:
            lines.append(f"- and {len(known) - MAX_FACT_LINES} more (--format json lists them all)")
    if fleet.unplaced:
        lines += ["", f"{len(fleet.unplaced)} file(s) given to no host:"]
        lines += [f"- {safe(p)}: {safe(r)}" for p, r in fleet.unplaced[:10]]
    for warning in fleet.warnings[:MAX_WARNINGS]:
        lines.append(f"warning: {safe(warning)}")
    if len(fleet.warnings) > MAX_WARNINGS:
        lines.append(f"and {len(fleet.warnings) - MAX_WARNINGS:,} more warning(s): --format json lists every one")
    for note in fleet.notes[:6]:
        lines.append(f"note: {safe(note)}")
    return utf8("\n".join(lines) + "\n") if markdown else "\n".join(lines) + "\n"

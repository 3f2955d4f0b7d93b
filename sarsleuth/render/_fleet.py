"""The fleet view in text, markdown and JSON: fleet incidents first (with the
hosts that saw each and those that did not), then each host's own story in
one line, then what could not be read.  Query results of ``sarsleuth sql``
are shown here too."""
from __future__ import annotations

import json

from sarsleuth.render._fleet_html import NO_HOST_LABEL, host_facts_line
from sarsleuth.render._safe import shown, utf8, visible_tree

FORMATS = ("text", "markdown", "json", "jsonl", "html")
#: Hosts named in a line before "and N more".
NAMED_HOSTS = 12
#: Hosts whose facts are listed one a line.
MAX_FACT_LINES = 50


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        from sarsleuth.errors import UsageError
        raise UsageError(f"--format {fmt}: a fleet is shown as {', '.join(FORMATS)}")


def write_fleet(fmt: str, fleet, out) -> None:
    check_format(fmt)
    if fmt == "html":
        from sarsleuth.render._fleet_html import build_fleet_html  # noqa: F811 - jinja2 only when asked
        out.write(build_fleet_html(fleet))
    elif fmt == "jsonl":
        from sarsleuth.render.jsonl import write_fleet as write_jsonl
        write_jsonl(fleet, out)
    elif fmt == "json":
        from sarsleuth.render.json import plain
        out.write(json.dumps(visible_tree(plain(fleet.to_json())), indent=1, ensure_ascii=False) + "\n")
    else:
        out.write(fleet_text(fleet, markdown=fmt == "markdown"))


def host_list(hosts, limit: int = NAMED_HOSTS) -> str:
    named = ", ".join(hosts[:limit])
    return named + (f" and {len(hosts) - limit} more" if len(hosts) > limit else "") if hosts else "none"


def fleet_text(fleet, markdown: bool = False) -> str:
    """The fleet view as plain text or markdown (everything from inputs made
    safe for the medium)."""
    from sarsleuth.render.markdown import md_escape
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
    for note in fleet.notes[:6]:
        lines.append(f"note: {safe(note)}")
    return utf8("\n".join(lines) + "\n") if markdown else "\n".join(lines) + "\n"


def write_query_result(frame, fmt: str, out, terminal: bool = False) -> None:
    """A query result as a table (terminal), CSV or JSON records; CSV on a
    terminal shows control characters escaped."""
    from sarsleuth.render.json import plain
    frame = frame.map(lambda v: list(v) if hasattr(v, "tolist") and not isinstance(v, str) and getattr(v, "ndim", 0)
                      else v)
    if fmt == "json":
        records = frame.to_dict(orient="records")
        out.write(json.dumps(visible_tree(plain(records)), indent=1, ensure_ascii=False) + "\n")
        return
    if fmt == "csv":
        out.write((shown if terminal else utf8)(frame.to_csv(index=False)))
        return
    from sarsleuth.render._table import Column, Table, number
    from sarsleuth.render.text import write_table

    def cell(name):
        def show(record):
            value = record.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return number(value)
            if isinstance(value, list):
                return ", ".join(str(v) for v in value)
            return "" if value is None else str(plain(value))
        return show
    columns = [Column(str(c), cell(c), numeric=frame[c].dtype.kind in "iuf") for c in frame.columns]
    write_table(Table(title="", columns=columns, records=frame.to_dict(orient="records"),
                      note=f"{len(frame)} row(s)"), out)

"""Name resolution failing: a program that calls another service by name
cannot turn the name into an address (getaddrinfo's EAI_NONAME, EAI_AGAIN,
a Go, Java, Node or nginx resolver saying the same)."""
from __future__ import annotations

from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.event_bursts import bursts, lines_of, listed, writer
from sarsleuth.detectors.evidence import evidence_from_events
from sarsleuth.detectors.figures import Figures, measure
from sarsleuth.detectors.series import severity_for
from sarsleuth.knowledge.signatures import fields_of

#: getaddrinfo() results as Python and glibc number them -> what they mean
_MEANING = {"-2": "no such name", "-3": "no nameserver answered", "-4": "the nameserver failed",
            "-5": "the name has no address"}


class NameResolution(Detector):
    """Calls that failed because a name could not be resolved: Python's
    ``[Errno -3] Temporary failure in name resolution`` and ``[Errno -2]
    Name or service not known``, Java's ``UnknownHostException``, libpq's
    ``could not translate host name``, curl's ``Could not resolve host``,
    Go's ``lookup NAME on SERVER: no such host``, Node's ``getaddrinfo
    ENOTFOUND``, nginx's ``could not be resolved``.

    Why it matters: every call to a service named that way fails at once,
    before any connection is tried, so the service behind the name may be
    perfectly healthy while its callers answer errors (a 502 from an API
    whose payment call failed).  The usual causes are a name dropped from
    ``/etc/hosts``, a resolver (``/etc/resolv.conf``, systemd-resolved, the
    DNS server) that is unreachable or wrong, or a record deleted.  One
    failure, or a few within seconds, is the network's ordinary noise and
    is left alone.
    """

    id = "name-resolution"
    summary = "names that could not be resolved (getaddrinfo, Java, Go, Node, nginx): the names, the errors, who asked"
    inputs = ("events:name-resolution",)
    category = "upstream-failure"
    defaults = {"burst_gap_seconds": 600.0, "min_lines": 3, "min_seconds": 10.0, "min_lines_untimed": 10}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(self.id), self.params["burst_gap_seconds"]):
            n = b.lines
            span = (b.end - b.start).total_seconds() if b.aligned else None
            # a lone failure or a retry's few lines within seconds: transient, not an outage
            if n < self.params["min_lines"] or (span is not None and span < self.params["min_seconds"]):
                continue
            if span is None and n < self.params["min_lines_untimed"]:
                continue
            names: dict = {}
            errors: dict = {}
            errnos: dict = {}
            programs: dict = {}
            for r in b.rows.itertuples(index=False):
                k = lines_of(r)
                f = fields_of(self.id, str(r.message)) or {}
                if f.get("name"):
                    names[f["name"]] = names.get(f["name"], 0) + k
                if f.get("error"):
                    errors[f["error"].strip()] = errors.get(f["error"].strip(), 0) + k
                if f.get("errno", "").startswith("-"):
                    errnos[f["errno"]] = errnos.get(f["errno"], 0) + k
                who = writer(r)
                if who:
                    programs[who] = programs.get(who, 0) + k
            figs = Figures()
            count = figs.add(measure(ctx, "lines", "lines", b.host, start=b.start if b.aligned else None,
                                     end=b.end if b.aligned else None, kinds=(self.id,), fmt=",.0f"))
            long = figs.add(measure(ctx, "burst_seconds", "elapsed", b.host, start=b.start, end=b.end, fmt=".0f")
                            if b.aligned else None)
            # counts beside the names only when there is more than one to weigh
            by_lines = lambda d: [f"{k} ({v:,})" if len(d) > 1 else k
                                  for k, v in sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))]
            title = f"{count.text() if count else f'{n:,}'} x name resolution failed"
            if names:
                title += " for " + listed(by_lines(names), 3)
            if programs:
                title += " in " + listed(by_lines(programs), 3)
            if errors:
                title += ": " + listed(by_lines(errors), 2)
            if long is not None and round(long.value):
                title += f" over {long.text()} s"
            out.append(self.finding(
                title=title, figures=figs,
                severity=severity_for(n, [(1000, "critical"), (10, "high")], "medium"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"names": len(names), "programs": len(programs),
                         "no_such_name": errnos.get("-2", 0) + errnos.get("-5", 0)
                         + sum(v for e, v in errors.items() if e in ("ENOTFOUND", "no such host", "Host not found")),
                         "no_answer": errnos.get("-3", 0)
                         + sum(v for e, v in errors.items() if e == "EAI_AGAIN" or "i/o timeout" in e
                               or e.startswith("All attempts"))},
                evidence=evidence_from_events(ctx.clock, b.rows, 5),
                explanation=_explain(errnos, names) or None,
                refs={"names": sorted(names), "programs": sorted(programs),
                      "name": max(names, key=names.get) if names else "",
                      "program": max(programs, key=programs.get) if programs else ""},
            ))
        return out


def _explain(errnos: dict, names: dict) -> str:
    said = [f"{v:,} x errno {e} ({_MEANING[e]})" for e, v in sorted(errnos.items()) if e in _MEANING]
    if not said:
        return ""
    which = f" {listed(sorted(names), 3)}" if names else " the names"
    return (f"getaddrinfo() answered {', '.join(said)}: the host could not turn{which} into an address, "
            "so no connection was even tried.")

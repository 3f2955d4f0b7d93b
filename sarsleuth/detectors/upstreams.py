"""Upstream detectors: backends that are down (refused, unreachable, none
left alive), as a proxy logs them (slow ones, timeouts, are counted as
``upstream-timeout`` in ``knowledge/kb.toml``)."""
from __future__ import annotations

from sarsleuth.detectors.event_bursts import bursts
from sarsleuth.detectors.series import severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events
from sarsleuth.knowledge.signatures import fields_of

#: Where a line names no upstream (cut before its ``upstream: "..."``).
_UNNAMED = ""
#: errno of a failed connect() -> how it reads in a title
_CONNECT_ERRORS = {"111": "refused", "113": "no route to host", "101": "network unreachable",
                   "112": "host down", "2": "socket file missing"}
#: errnos that say the address could not be reached at all (ICMP, routing)
_UNREACHABLE = {"113", "101", "112"}


class UpstreamDown(Detector):
    """Upstream servers that refuse connections or cannot be reached, and
    upstream groups left with no live server: nginx ``connect() failed
    (111: Connection refused)``, ``(113: No route to host)``, ``upstream
    server temporarily disabled``, ``no live upstreams``; HAProxy ``Server
    B/S is DOWN``, ``backend B has no server available``.

    Why it matters: a refused or unreachable backend fails requests at once
    (502), not after a timeout; once every server of a group has failed
    ``max_fails`` times nginx stops trying them for ``fail_timeout`` and
    answers every request with an error.  The addresses name what is down.
    """

    id = "upstream-down"
    summary = "upstream servers refusing or unreachable, groups with no live upstreams: addresses, errnos, counts"
    inputs = ("events:upstream-down",)
    category = "upstream-failure"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(self.id), self.params["burst_gap_seconds"]):
            servers: dict = {}      # address -> {errno: lines}
            errors: dict = {}       # errno -> (text, lines)
            groups: dict = {}       # upstream group -> "no live upstreams" lines
            disabled: dict = {}     # address -> "temporarily disabled" lines
            down: dict = {}         # HAProxy server -> lines
            for msg, count in zip(b.rows["message"].astype(str), b.rows["count"].fillna(1).astype(int)):
                f = fields_of(self.id, msg) or {}
                state = f.get("state")
                where = f.get("address") or f.get("upstream") or _UNNAMED
                if f.get("errno"):
                    per = servers.setdefault(where, {})
                    per[f["errno"]] = per.get(f["errno"], 0) + count
                    text, n = errors.get(f["errno"], (f.get("error", ""), 0))
                    errors[f["errno"]] = (text, n + count)
                elif state in ("no live upstreams", "no server available"):
                    groups[where] = groups.get(where, 0) + count
                elif state == "temporarily disabled":
                    disabled[where] = disabled.get(where, 0) + count
                elif state == "DOWN":
                    down[where] = down.get(where, 0) + count
            n = b.lines
            refused = sum(per.get("111", 0) for per in servers.values())
            unreachable = sum(c for per in servers.values() for e, c in per.items() if e in _UNREACHABLE)
            no_live = sum(groups.values())
            named = {**{a: sum(per.values()) for a, per in servers.items()}, **down}
            for a, c in disabled.items():
                named.setdefault(a, 0)
            parts = []
            for addr, c in sorted(named.items(), key=lambda kv: -kv[1])[:4]:
                per = servers.get(addr, {})
                how = [f"{_CONNECT_ERRORS.get(e, 'errno ' + e)} {k} x"
                       for e, k in sorted(per.items(), key=lambda kv: -kv[1])]
                if addr in down:
                    how.append(f"marked DOWN {down[addr]} x")
                label = "an upstream the lines do not name" if addr == _UNNAMED else addr
                parts.append(f"{label} {', '.join(how)}" if how else f"{label} disabled")
            more = f" and {len(named) - 4} more" if len(named) > 4 else ""
            title = "upstream servers down: " + (", ".join(parts) + more if parts else "")
            if groups:
                title += ("; " if parts else "") + ", ".join(
                    f"{c} x no live upstreams" + ("" if g == _UNNAMED else f" in {g}")
                    for g, c in sorted(groups.items(), key=lambda kv: -kv[1])[:3])
            span = (b.end - b.start).total_seconds() if b.aligned else None
            if span:
                title += f" over {span:.0f} s"
            out.append(self.finding(
                title=title,
                severity=severity_for(n, [(1000, "critical"), (10, "high")], "high" if no_live else "medium"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"lines": n, "refused": refused, "unreachable": unreachable, "no_live": no_live,
                         # connections that failed, or servers a health check marked down
                         "connect_failures": sum(c for per in servers.values() for c in per.values())
                         + sum(down.values()),
                         "disabled": sum(disabled.values()), "servers": len(named), "groups": len(groups)},
                evidence=evidence_from_events(ctx.clock, b.rows, 6),
                explanation=_explain(errors, groups, disabled) or None,
                refs={"upstreams": sorted(a for a in named if a), "groups": sorted(g for g in groups if g),
                      "errnos": {e: n for e, (_, n) in sorted(errors.items())}},
            ))
        return out


def _explain(errors: dict, groups: dict, disabled: dict) -> str:
    parts = []
    if "111" in errors:
        parts.append(f"connect() was refused {errors['111'][1]} time(s) (ECONNREFUSED): nothing listened on "
                     "the backend's address, so its process was down, restarting or listening elsewhere.")
    reach = {e: v for e, v in errors.items() if e in _UNREACHABLE}
    if reach:
        parts.append(", ".join(f"{n:,} x {e} ({text})" for e, (text, n) in sorted(reach.items()))
                     + ": the backend's address could not be reached (an ICMP unreachable or no route: "
                       "a firewall rule, a route, the host itself).")
    if "2" in errors:
        parts.append("The backend's unix socket file did not exist: its server (PHP-FPM, a FastCGI or uwsgi "
                     "process) was not running.")
    if disabled:
        parts.append("nginx marked the failing servers unavailable for fail_timeout after max_fails failures.")
    if groups:
        names = ", ".join(sorted(g for g in groups if g)) or "its upstream group"
        parts.append(f"With every server of {names} marked failed, nginx answered requests with "
                     "'no live upstreams' (502) without trying any backend.")
    return " ".join(parts)

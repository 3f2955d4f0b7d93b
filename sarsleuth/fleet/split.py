"""Hosts that only a shared file names, told as hosts.

A fleet groups files by the hosts their heads name.  A central syslog of
many hosts, each a small share of its lines (32 hosts, 20,000 hosts), names
none of them firmly enough in its head: it is read whole, once, as the
files naming no host, and its findings carry the hosts they are about.
:func:`hosts_of_shared` turns that result into one result per host the
files name (findings and incidents each with its host, hosts without any
counted too), so that the fleet counts them, correlates them across hosts
and never says "0 hosts" above an incident on one of them.
"""
from __future__ import annotations

from sarsleuth.fleet.model import HostResult


def hosts_of_shared(results: list) -> tuple[list, list]:
    """``results`` with the files naming no host told per host: the hosts
    they name become results (merged into a host's own result when it has
    files of its own); returns the results and notes."""
    by_host = {r.host: r for r in results if r.host}
    out = [r for r in results if r.host]
    notes = []
    for r in results:
        if r.host:
            continue
        named = {str(h) for h in r.names.get("host", ())} | {f.host for f in r.findings if f.host}
        # the host names a worker settled (one spelling of each), as the fleet knows its hosts
        named = {_known(h, by_host) for h in named if h}
        if not r.ok or not named:
            out.append(r)
            continue
        for host in sorted(named):
            own = [f for f in r.findings if f.host == host]
            incidents = [i for i in r.incidents if host in i.hosts]
            if host in by_host:
                mine = by_host[host]
                mine.findings.extend(own)
                mine.incidents.extend(incidents)
                mine.files.extend(p for p in r.files if p not in mine.files)
                continue
            result = HostResult(host=host, files=list(r.files), facts={"zone": r.facts.get("zone"),
                                                                       "wall_clock": r.facts.get("wall_clock")},
                                findings=own, incidents=incidents, names={"host": [host]},
                                notes=[f"named in {len(r.files)} file(s) shared by {len(named):,} hosts (a central "
                                       "log): read once, its lines told per host"])
            by_host[host] = result
            out.append(result)
        r.findings = [f for f in r.findings if not f.host]
        r.incidents = [i for i in r.incidents if not i.hosts]
        out.append(r)
        notes.append(f"{len(r.files)} file(s) naming no host firmly in their first lines name {len(named):,} hosts "
                     "in those lines and their events: each is told as a host of the fleet")
    out.sort(key=lambda r: r.host)
    return out, notes


def _known(host: str, by_host: dict) -> str:
    """A host as the fleet already names it (``WEB1`` is ``web1``)."""
    for name in by_host:
        if name.casefold() == host.casefold():
            return name
    return host

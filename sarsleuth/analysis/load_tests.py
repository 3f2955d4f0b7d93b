"""Findings a load test drove: a CPU kept busy by the load generator (and
the servers its requests pass through) on the host it tests is the test's
doing, not an incident of the host (metric ``loadtest_driven``, which
kb.toml keeps from being a cause)."""
from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import pandas as pd

from sarsleuth.knowledge import programs


def driven_by_load_test(f, names: list, reports: list) -> None:
    """A CPU finding whose busiest program is a load generator running at
    the time (wrk on the host it tests) is the load test's doing: metric
    ``loadtest_driven`` (kb.toml keeps it from being a cause) and a
    sentence saying so."""
    generators = programs("load_generators")
    # the generator busiest, or busy beside only the web servers its requests go through
    if names[0] not in generators and not (
            any(n in generators for n in names)
            and all(n in generators or n in programs("web_servers") for n in names)):
        return
    for r in reports:
        start, end = r.get("start"), r.get("end")
        if r.get("tool") not in names or start is None or end is None:
            continue
        try:
            # a sample stamped at its end covers the interval before it
            since = pd.Timestamp(f.start) - pd.Timedelta(f.resolution)
            overlaps = pd.Timestamp(start) <= pd.Timestamp(f.end) and pd.Timestamp(end) >= since
        except (TypeError, ValueError):
            continue
        if overlaps:
            f.metrics["loadtest_driven"] = 1
            command = r.get("command") or r["tool"]
            f.refs["driven_by"] = command
            f.explanation = (f"{f.explanation} The busiest program was the load generator itself, "
                             f"`{command}`, running on this host: the load test kept the CPUs busy.").strip()
            return


#: Seconds a CPU finding may start before a load test's run or end after it
#: and still lie within it (the run's times come from its file's mtime and
#: duration; sar stamps a sample at its end).
_RUN_SLACK_S = 10.0


def within_a_local_load_test(f, reports: list) -> None:
    """A CPU finding with no ps snapshot taken during it that lies within
    a load test's run against this very host (a loopback address or the
    host's own name): the load generator and the server it drove kept the
    CPUs busy (``loadtest_driven``), said as an inference from the times."""
    for r in reports:
        start, end = r.get("start"), r.get("end")
        if start is None or end is None or not targets_host(r.get("url") or "", f.host):
            continue
        try:
            slack = max(pd.Timedelta(seconds=_RUN_SLACK_S), pd.Timedelta(f.resolution))
            inside = (pd.Timestamp(start) - slack <= pd.Timestamp(f.start)
                      and pd.Timestamp(f.end) <= pd.Timestamp(end) + slack)
        except (TypeError, ValueError):
            continue
        if inside:
            command = r.get("command") or r.get("tool") or "a load test"
            f.metrics["loadtest_driven"] = 1
            f.refs["driven_by"] = command
            f.explanation = (f"{f.explanation} No ps snapshot was taken while it lasted, but it lies within "
                             f"`{command}`'s run against this host: the load test (its generator and the "
                             "server it drove) kept the CPUs busy.").strip()
            return


def targets_host(url: str, host) -> bool:
    """Does a load test's URL point at the host it ran on (loopback, or the host's own name)?"""
    try:
        name = (urlsplit(url if "//" in url else "//" + url).hostname or "").lower()
    except ValueError:
        return False
    if not name:
        return False
    if name == "localhost" or (host is not None and name == str(host).lower()):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False

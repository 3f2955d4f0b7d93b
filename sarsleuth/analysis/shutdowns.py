"""Findings a host's own shutdown made: a host told to power off or reboot
stops its services, takes its links (and its containers' interfaces) down
and refuses new processes while it does.  Such findings, from the
shutdown's line until the host boots again (kb ``[shutdown]``), get the
metric ``during_shutdown`` and say so: timeline context, never an incident
(:mod:`sarsleuth.analysis.correlate`)."""
from __future__ import annotations

import pandas as pd

from sarsleuth.knowledge import knowledge_base

#: The event kinds that say a host started again.
BOOT_KINDS = ("kernel-boot", "sar-restart")
SHUTDOWN_KIND = "host-shutdown"


def during_shutdown(findings: list, events) -> None:
    """Mark the findings that lie within a host's shutdown."""
    rules = knowledge_base().get("shutdown") or {}
    detectors = set(rules.get("detectors", ()))
    if events is None or not len(events) or not detectors:
        return
    stops = events[(events["kind"] == SHUTDOWN_KIND) & events["timestamp"].notna()]
    if not len(stops):
        return
    boots = events[events["kind"].isin(BOOT_KINDS) & events["timestamp"].notna()]
    longest = pd.Timedelta(seconds=float(rules["within_seconds"]))
    spans = []
    for stop in stops.itertuples(index=False):
        until = stop.timestamp + longest
        after = boots[(boots["host"].astype(object) == stop.host)]
        try:
            later = after.loc[after["timestamp"] > stop.timestamp, "timestamp"]
        except TypeError:           # a boot on another clock
            later = after.iloc[0:0]["timestamp"]
        if len(later):
            until = min(until, later.min())
        spans.append((stop.host, stop.timestamp, until, f"{stop.file}:{stop.line}"))
    for f in findings:
        if f.detector not in detectors or f.start is None or pd.isna(f.start):
            continue
        for host, since, until, where in spans:
            if host not in (f.host, None):
                continue
            try:
                inside = since <= pd.Timestamp(f.start) <= until
            except TypeError:
                continue
            if inside:
                f.metrics["during_shutdown"] = 1
                f.refs["shutdown"] = where
                f.explanation = (f"{f.explanation} It came while the host was shutting down ({where}): stopping "
                                 "ends services, links and new processes then.").strip()
                break

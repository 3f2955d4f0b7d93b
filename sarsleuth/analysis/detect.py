"""Stage 4, detect: every detector over the case's metrics, events and
reports; the processes behind each finding named; what falls outside the
user's ``--window`` or under ``--min-severity`` left out; and every cited
line read again from its file, verbatim, before the story quotes it."""
from __future__ import annotations

from dataclasses import dataclass, field

from sarsleuth.analysis.shutdowns import during_shutdown
from sarsleuth.analysis import user_window
from sarsleuth.analysis.attribution import attribute
from sarsleuth.analysis.last_words import last_words
from sarsleuth.detectors import Context, run_all
from sarsleuth.detectors.bounds import counter_anomalies
from sarsleuth.inputs.evidence_lines import quote
from sarsleuth.model import SEVERITY_RANK, iso


@dataclass
class Detected:
    findings: list = field(default_factory=list)
    warnings: list = field(default_factory=list)


def detect(*, store, events, reports, sources, hosts, clock, config, options, link_speed_bps, window=None,
           copies=None) -> Detected:
    """The findings of one case.  ``copies``: {name in outputs: private
    copy} of streams and archive members, still on disk, to quote from."""
    ctx = Context(metrics=store, events=events, reports=reports, sources=sources, params=config.params,
                  link_speed_bps=link_speed_bps, user_signatures=config.signatures, host_facts=list(hosts),
                  clock=clock)
    findings, warnings = run_all(ctx)
    _rows_before(findings, ctx)
    warnings = counter_anomalies(sources, clock) + list(warnings)
    attribute(findings, sources, reports, copies)
    during_shutdown(findings, events)
    if window is not None:
        findings = [f for f in findings if user_window.in_window(f, window)]
    if options.min_severity:
        findings = [f for f in findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK[options.min_severity]]
    quote(findings, copies)       # before the story quotes them
    last_words(findings)          # from the lines read around them
    return Detected(findings=findings, warnings=list(warnings))


def _rows_before(findings, ctx) -> None:
    """For a finding a sampled row shows (refs ``sample_seconds``), the row
    before its first one, where the interval that row averages began (sar
    stamps 18:20:01 then 18:30:02: what the second shows began after
    18:20:01, not 600 s before 18:30:02), when it is within one and a half
    intervals of it (in place: refs ``sampled_from``)."""
    for f in findings:
        step = float((f.refs or {}).get("sample_seconds") or 0)
        if not step or not f.aligned or "sampled_from" in f.refs or f.start is None:
            continue
        times = ctx.sample_times(f.host)
        first = min(f.start, f.onset)
        try:
            at = int(times.searchsorted(first))
            before = times.iloc[at - 1] if at > 0 else None
        except TypeError:            # a wall clock beside an instant
            continue
        if before is not None and (first - before).total_seconds() <= 1.5 * step:
            if before.tzinfo is not None and first.tzinfo is not None:
                before = before.tz_convert(first.tzinfo)        # on the finding's clock, as its start
            f.refs["sampled_from"] = iso(before)

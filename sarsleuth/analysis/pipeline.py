"""The analysis of one case, stage by stage: gather what the user named
(:mod:`sarsleuth.inputs.gathering`), read it (:mod:`.read`), settle the
clock (:mod:`.settle`), combine what was read twice (:mod:`.combine`),
detect (:mod:`.detect`) and correlate (:mod:`.correlate`), then say what
else changed during each incident (:mod:`.what_changed`).  The story is
told from the result on demand (:mod:`.narrative`).  :class:`sarsleuth.Case`
is the API around it; an export stops after the combine stage."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from sarsleuth import detectors
from sarsleuth.analysis.combine import combine_sources
from sarsleuth.analysis.correlate import correlate
from sarsleuth.analysis.detect import detect
from sarsleuth.analysis.read import read_sources
from sarsleuth.analysis.settle import settle_clock
from sarsleuth.analysis.unexplained import titled, unexplained
from sarsleuth.analysis.what_changed import attach
from sarsleuth.config import Config, load_config
from sarsleuth.inputs.gathering import gather
from sarsleuth.inputs.parsers import ParseOptions
from sarsleuth.metric_store import MetricStore
from sarsleuth.model import empty_events
from sarsleuth.options import Options
from sarsleuth.timebase.clock import Clock


@dataclass
class Analysed:
    """Everything the stages found out about one case."""

    config: Config
    sources: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    hosts: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    clock: Clock = field(default_factory=Clock)
    window: tuple | None = None
    empty_window: str | None = None
    store: MetricStore = field(default_factory=MetricStore)
    events: object = field(default_factory=empty_events)
    reports: list = field(default_factory=list)
    merged: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)
    incidents: list = field(default_factory=list)
    checked: list = field(default_factory=list)


def run(paths, options: Options, *, progress: bool = False, select: dict | None = None,
        analyse: bool = True, named: bool = True, names: dict | None = None) -> Analysed:
    """Every stage on ``paths``; ``analyse`` False stops after combining
    (an export of the metrics needs no findings); ``named`` False: progress
    names no file (a redacted run); ``names``: {file: how the outputs name
    it}."""
    cfg = load_config(options.config)
    parse_options = ParseOptions(year=options.year, date_order=options.date_order,
                                 link_speed_bps=options.link_speed_bps or cfg.link_speed_bps,
                                 signatures=cfg.signatures)
    out = Analysed(config=cfg)
    # the private copies of streams and archive members stay until the
    # findings quote them: evidence is the line as the file has it
    with contextlib.ExitStack() as copies:
        read = read_sources(gather(paths, copies, select=select, names=names), parse_options, progress, named)
        out.sources, out.skipped, out.hosts = read.sources, read.skipped, read.hosts
        out.warnings.extend(read.warnings)
        out.notes.extend(read.notes)

        # an export (parse) has --tz but no --window
        placed_by = ("--window", "--tz") if analyse else ("--tz",)
        told = {w for src in out.sources for w in src.warnings}
        settled = settle_clock(out.sources, out.hosts, options, placed_by=placed_by)
        out.clock, out.window, out.empty_window = settled.clock, settled.window, settled.empty_window
        # what settling answered (a sar text's unknown date, dated by the other sources) is no warning now
        withdrawn = told - {w for src in out.sources for w in src.warnings}
        out.warnings = [w for w in out.warnings if w not in withdrawn]
        out.notes.extend(settled.notes)
        out.warnings.extend(settled.warnings)
        if out.empty_window:
            out.notes.insert(0, out.empty_window)

        combined = combine_sources(out.sources)
        out.store, out.events, out.reports, out.merged = (combined.store, combined.events, combined.reports,
                                                          combined.merged)
        out.notes.extend(combined.notes)
        out.warnings.extend(combined.warnings)

        if analyse:
            detected = detect(store=out.store, events=out.events, reports=out.reports, sources=out.sources,
                              hosts=out.hosts, clock=out.clock, config=cfg, options=options,
                              link_speed_bps=parse_options.link_speed_bps, window=out.window,
                              copies=read.copies)
            out.warnings.extend(detected.warnings)
            out.findings = detected.findings
            if out.window is None:
                # the backstop: departures together that no detector explains
                out.findings += unexplained(out.store, out.events, out.sources, out.findings, out.clock)
            out.incidents = correlate(list(out.findings), out.clock)
            titled(out.incidents)
            attach(out.incidents, out.store, out.events, out.sources, out.clock)
            out.checked = list(detectors.registry())
    return out

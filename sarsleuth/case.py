"""A case: every input of one post-mortem, read, put on one clock,
combined and analysed.  This is the Python API the notebooks use and the
object every output is rendered from.

:meth:`Case.load` runs the analysis wing's stages in order
(:mod:`sarsleuth.analysis`): gather the inputs, read them, settle the
clock, combine what was read twice, detect, correlate; the story is told
from the case on demand (:mod:`sarsleuth.analysis.narrative`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from sarsleuth.analysis.audit import audit as audit_story
from sarsleuth.analysis.narrative import quiet_summary
from sarsleuth.analysis.pipeline import run
from sarsleuth.analysis.read import Skipped
from sarsleuth.analysis.what_changed import hosts_departed, user_ranking
from sarsleuth.options import Options, check_options
from sarsleuth.redaction.case import redact_case
from sarsleuth.render.formats.html import case_fragment, write_html
from sarsleuth.render.formats.json import document
from sarsleuth.render.plots import plot_metric
from sarsleuth.timebase.clock import Clock

__all__ = ["Case", "Skipped"]

#: What a case takes from the analysis (:class:`sarsleuth.analysis.pipeline.Analysed`).
ANALYSED = ("sources", "skipped", "hosts", "warnings", "notes", "clock", "window", "empty_window", "store",
            "events", "reports", "merged", "findings", "incidents", "checked")


@dataclass
class Case:
    sources: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    store: object = None         # MetricStore of every source's metrics (see ``metrics``)
    events: object = None
    reports: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    incidents: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    clock: Clock = field(default_factory=Clock)  # the zones, settled once (sarsleuth.timebase.clock)
    checked: list = field(default_factory=list)
    window: tuple | None = None
    merged: dict = field(default_factory=dict)   # duplicates counted once: {"events": n, "metric_values": n}
    hosts: list = field(default_factory=list)    # HostFacts of every bundle read (sarsleuth.inputs.bundles.facts)
    #: "--window ... holds no data: ...", when the window misses every input
    empty_window: str | None = None
    #: what a redacted case says about itself (sarsleuth.redaction), None when not redacted
    redacted: str | None = None
    redactor: object = field(default=None, repr=False, compare=False)   # its stand-ins, when redacted
    #: the checked options the case was read with
    options: Options = field(default_factory=Options, repr=False, compare=False)
    #: the audit of its story against its data (sarsleuth.analysis.audit), when asked for
    audited: object = field(default=None, repr=False, compare=False)

    @property
    def tz(self) -> str | None:
        """The zone every time of the case is on (None: the hosts' wall clock)."""
        return self.clock.zone

    @property
    def host_zones(self) -> dict:
        """{host: zone its wall-clock times were read in}."""
        return dict(self.clock.host_zones)

    # ------------------------------------------------------------------ load
    @classmethod
    def load(cls, *paths, tz=None, year=None, window=None, link_speed=None, config=None,
             progress=False, date_order=None, min_severity=None, select=None, analyse=True,
             redact=False, options: Options | None = None, audit: bool = False,
             names: dict | None = None) -> "Case":
        """Read, settle on one clock and analyse every input of a case.
        ``options``: the checked options (:func:`sarsleuth.options.check_options`),
        made once by whoever took them from the user; without it, ``tz``,
        ``year``, ``window``, ``link_speed``, ``config``, ``date_order`` and
        ``min_severity`` are checked here.  ``select``: {archive path:
        labels of the bundles in it to read} (a fleet's host reads its own
        node of a collect archive); ``analyse`` False: read and settle
        only, no findings (an export); ``redact``: then replace every
        host, domain, address, user name and e-mail address by its
        stand-in (``case.redactor.mapping()`` says which); ``audit``: then
        audit the story against the data (``case.audited``, before any
        redaction); ``names``: {file: how every output names it} (the files
        ``analyze --here`` collected, by their place on the host)."""
        if len(paths) == 1 and isinstance(paths[0], (list, tuple)):
            paths = tuple(paths[0])
        opts = options if options is not None else check_options(
            tz=tz, year=year, window=window, link_speed=link_speed, date_order=date_order,
            min_severity=min_severity, config=config)
        done = run(paths, opts, progress=progress, select=select, analyse=analyse, named=not redact, names=names)
        case = cls(options=opts)
        for name in ANALYSED:
            setattr(case, name, getattr(done, name))
        if audit:
            case.audited = audit_story(case)
        if redact:
            case.redactor = redact_case(case, done.config.redact_patterns)
        return case

    # ------------------------------------------------------------------- API
    def changes(self, window, baseline=None, hosts=None) -> pd.DataFrame:
        """What changed in ``window`` against ``baseline`` (by default the
        hours before it and the same hours of the day before, never across
        a restart or a gap): every sar series per device and every log
        message kind per program, one row each, most changed first
        (``departs`` says which departed; ``entry`` numbers the changes,
        ``lead`` the row telling each).  Windows are ``"START..END"`` or
        ``(start, end)``; times on the case's clock (tz-aware where its zone
        is known).  ``attrs["notes"]`` says what could not be compared,
        ``attrs["hosts"]`` which hosts departed most."""
        found = user_ranking(self.store, self.events, self.sources, self.clock, window, baseline, hosts)
        table = found.table.copy()
        if self.clock.zone is not None:
            for column in ("peak_time", "baseline_from", "baseline_to", "window_from", "window_to"):
                times = pd.to_datetime(table[column])
                if getattr(times.dt, "tz", None) is not None:
                    table[column] = times.dt.tz_convert(self.clock.zone)
        table.attrs["notes"] = list(found.notes)
        table.attrs["hosts"] = hosts_departed(found)
        table.attrs["window"], table.attrs["baseline"] = found.window, found.baseline
        return table

    @property
    def metrics(self):
        """The long metrics table of the contract (``parse --format csv``
        columns, in time order), built from the store when first read."""
        cached = self.__dict__.get("_long")
        if cached is None or cached[0] is not self.store:
            from sarsleuth.model import empty_metrics
            cached = (self.store, self.store.to_long() if self.store else empty_metrics())
            self.__dict__["_long"] = cached
        return cached[1]

    def sar(self, section: str, host=None, device=None):
        """Wide frame of one sar section: tz-aware DatetimeIndex when the zone
        is known, one column per metric (device "all"/"" by default; pass
        ``device=None`` to get a (device, metric) column MultiIndex when the
        section has devices)."""
        store = self.store
        keys = [k for k in (store.runs if store else ()) if k[1] == section and (host is None or k[0] == host)]
        if not keys:
            raise KeyError(f"no sar section {section!r} in this case "
                           f"(have: {', '.join(sorted(store.sections() if store else [])) or 'none'})")
        devices = list(dict.fromkeys(k[2] for k in keys))
        if device is None and len(devices) == 1:
            device = devices[0]
        if device is None and "all" in devices:
            device = "all"
        label = (lambda key: key[3]) if device is not None else (lambda key: (key[2], key[3]))
        wide = pd.DataFrame(store.grouped(section, label, host=host, device=device))
        wide = wide.reindex(sorted(wide.columns), axis=1)
        wide.columns.name = None
        wide.index.name = "timestamp"
        return wide.sort_index()

    def to_json(self) -> dict:
        """The JSON document of ``analyze --format json``, as a dict."""
        return document(self)

    def host_facts(self, host):
        """The facts a bundle gave about ``host`` (any name it goes by), or None."""
        for h in self.hosts:
            if host in h.names():
                return h
        return None

    def headline(self) -> str:
        """One line on the whole case: the top incident, or that no incident
        was found and what was checked."""
        if not self.incidents:
            return quiet_summary(self)
        top = self.incidents[0]
        return f"{len(self.incidents)} incident(s); most important: {top.title} ({top.severity})."

    def report(self, path, plots: bool = True) -> str:
        return write_html(self, path, plots=plots)

    def plot(self, section: str, metric: str, host=None, device=None, ax=None, events: bool = True):
        return plot_metric(self, section, metric, host=host, device=device, ax=ax, events=events)

    def _repr_html_(self) -> str:
        return case_fragment(self)

    def __repr__(self) -> str:
        return (f"<Case {len(self.sources)} sources, {len(self.store or ())} metric values, {len(self.events)} events, "
                f"{len(self.findings)} findings, {len(self.incidents)} incidents>")

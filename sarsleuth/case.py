"""A case: every input of one post-mortem, parsed, aligned, analysed.

This is the Python API the notebooks use and the object every output is
rendered from.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sarsleuth import detectors, streams
from sarsleuth import window as user_window
from sarsleuth.attribution import attribute
from sarsleuth.bundles.expand import expand, has_facts
from sarsleuth.config import load_config
from sarsleuth.correlate import correlate
from sarsleuth.detectors import Context, run_all
from sarsleuth.errors import InputError
from sarsleuth.folding import Folds
from sarsleuth.metric_store import MetricStore, combine
from sarsleuth.model import SEVERITY_RANK, empty_events
from sarsleuth.narrative import quiet_summary
from sarsleuth.options import check_options
from sarsleuth.parsers import ParseOptions, parse, registry, sniff
from sarsleuth.parsers.logs import journal_binary
from sarsleuth.plots import plot_metric
from sarsleuth.progress import reading
from sarsleuth.quotes import quote
from sarsleuth.redaction.case import redact_case
from sarsleuth.render.html import case_fragment, write_html
from sarsleuth.render.json import document
from sarsleuth.streams import refusal
from sarsleuth.timebase import settle
from sarsleuth.timebase.clock import Clock, on_clock
from sarsleuth.timebase.hosts import attach_bundles


@dataclass
class Skipped:
    path: str
    reason: str


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
    hosts: list = field(default_factory=list)    # HostFacts of every bundle read (sarsleuth.bundles.facts)
    #: "--window ... holds no data: ...", when the window misses every input
    empty_window: str | None = None
    #: what a redacted case says about itself (sarsleuth.redaction), None when not redacted
    redacted: str | None = None
    redactor: object = field(default=None, repr=False, compare=False)   # its stand-ins, when redacted

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
             redact=False) -> "Case":
        """Read, settle on one clock and analyse every input of a case.
        ``select``: {archive path: labels of the bundles in it to read} (a
        fleet's host reads its own node of a collect archive); ``analyse``
        False: read and settle only, no findings (an export); ``redact``:
        then replace every host, domain, address, user name and e-mail
        address by its stand-in (``case.redactor.mapping()`` says which)."""
        if len(paths) == 1 and isinstance(paths[0], (list, tuple)):
            paths = tuple(paths[0])
        opts = check_options(tz=tz, year=year, window=window, link_speed=link_speed, date_order=date_order,
                             min_severity=min_severity)
        cfg = load_config(config)
        parse_options = ParseOptions(year=opts.year, date_order=opts.date_order,
                                     link_speed_bps=opts.link_speed_bps or cfg.link_speed_bps,
                                     signatures=cfg.signatures)
        case = cls()
        # the private copies of streams and archive members stay until the
        # findings quote them: evidence is the line as the file has it
        with contextlib.ExitStack() as copies:
            readable = case._read(paths, parse_options, progress, copies, select)
            case._settle(opts)
            case._combine()
            if analyse:
                case._analyse(cfg, opts, parse_options, readable)
        if redact:
            case.redactor = redact_case(case, cfg.redact_patterns)
        return case

    def _read_one(self, f: Path, names: dict, parse_options):
        """The Source of one file, or None when it is skipped (said in
        :attr:`skipped`).  Each file is sniffed and parsed in turn: parsing
        looks at the head again, which the sniff cache then still holds
        (however many files)."""
        name = journal_binary.shown_name(f, names)
        try:
            if isinstance(f, tuple):    # the journal files of one host
                return journal_binary.read_named(f, names, parse_options)
            too_big = refusal(f)        # a file found in a folder is capped as a named one is
            kind, reason = (None, too_big) if too_big else sniff(f)
            if kind is None:
                self.skipped.append(Skipped(name, reason))
                return None
            src = parse(f, kind, parse_options)
        except InputError as exc:
            self.skipped.append(Skipped(name, exc.one_line().replace(str(f), name)))
            return None
        if str(f) in names:
            streams.relabel(src, str(f), names[str(f)])
        return src

    def _read(self, paths, parse_options, progress, copies, select=None) -> dict:
        """Sniff and parse every input (folders walked, bundles and archives
        read by their layout, each file once, streams copied once so they
        can be sniffed and read).  Returns {name in outputs: the private
        copy it was read from}; ``copies`` (an ExitStack) removes them."""
        spooled = streams.Spooled()
        copies.callback(spooled.cleanup)
        folds = Folds()
        given = []
        spooled_paths = streams.spool(paths, spooled)
        self.skipped.extend(Skipped(name, why) for name, why in spooled.unreadable)
        for p in spooled_paths:
            why = streams.missing(p)
            if why:
                self.skipped.append(Skipped(str(p), why))
                continue
            given.append(p)
        bundles = expand(given, spooled.names, select)
        copies.callback(bundles.cleanup)
        self.skipped.extend(Skipped(label, why) for label, why in bundles.refused)
        self.warnings.extend(spooled.warnings)
        self.warnings.extend(bundles.warnings)
        self.notes.extend(bundles.notes)
        names = dict(spooled.names)
        facts_of = {}
        for e in bundles.entries:
            if e.name != e.path:
                names[e.path] = e.name
            if e.facts is not None:
                facts_of[e.path] = e.facts
        files = _distinct_files([Path(e.path) for e in bundles.entries], self.notes, names)
        files = journal_binary.gather(files)        # the journal files of one host: one source
        sizes = [journal_binary.unit_size(f) if isinstance(f, tuple) else _size(f) for f in files]
        with reading(sizes, progress) as shown:
            told = dataclasses.replace(parse_options, progress=shown.within)
            for f, size in zip(files, sizes):
                shown.open(journal_binary.shown_name(f, names), size)
                try:
                    src = self._read_one(f, names, told)
                finally:
                    shown.close()
                if src is None:
                    continue
                first = str(f[0] if isinstance(f, tuple) else f)
                if first in facts_of:
                    src.meta["bundle"] = facts_of[first].bundle
                folds.add(src)
                self.warnings.extend(src.warnings)
        # past a thousand files, small logs of one kind, host and clock are one source each
        self.sources = folds.sources()
        if folds.folding:
            folded = [s for s in self.sources if "files" in s.meta]
            if folded:
                self.notes.append(f"{sum(len(s.meta['files']) for s in folded)} log files are held as "
                                  f"{len(folded)} source(s), one per kind, host and clock (their events keep "
                                  "their files and lines)")
        found = bundles.bundles
        self.notes.extend(note for h in found for note in h.dropped)      # facts read but not used
        self.notes.extend(attach_bundles(self.sources, found))
        self.hosts = [h for h in found if has_facts(h)]
        return {name: copy for copy, name in names.items()}

    def _settle(self, opts):
        """Every source on one clock (zones, years, dmesg anchors, hosts)."""
        settled = settle(self.sources, registry(), tz=opts.tz,
                         host_zones={h.host: (h.timezone, h.timezone_from) for h in self.hosts if h.timezone})
        self.clock = settled.clock
        self.notes.extend(settled.notes)
        self.warnings.extend(settled.warnings)
        self.window = user_window.window_on_clock(opts.window, self.tz)
        if self.window is not None:
            placed = user_window.place_untimed_reports(self.sources, self.window)
            # their place is the window now, not the file's modification time
            self.notes[:] = [n for n in self.notes
                             if not any(n.startswith(f"{path}: placed at its file's modification time")
                                        for path in placed)]
            self.empty_window = user_window.window_misses(self.sources, self.window, self.tz, opts.window)
            if self.empty_window:
                self.notes.insert(0, self.empty_window)

    # --------------------------------------------------------------- combine
    def _combine(self):
        events = [s.events for s in self.sources if s.events is not None and len(s.events)]
        # the same sample from two renderings (sa06 and sar06.txt) counts once;
        # where they differ, what sadc wrote (a binary file) is what is used
        holders = sorted((s for s in self.sources if s.store), key=lambda s: s.kind != "sa")
        self.store, merged, disagreements = combine([s.store for s in holders])
        if merged:
            self.merged["metric_values"] = merged
            self.notes.append(f"{merged} metric values appeared in more than one source and were counted once")
        self.warnings.extend(disagreement_warnings(disagreements, holders))
        if not self.store:
            self.store = MetricStore()
        if events:
            e = pd.concat(events, ignore_index=True)
            if len(events) > 1 or any("files" in s.meta for s in self.sources):
                # each file its own origin, also inside a source that holds several
                by_source = np.repeat(np.arange(len(events)), [len(x) for x in events])
                by_file = pd.factorize(e["file"].astype(object), use_na_sentinel=True)[0]
                origin = by_source * (int(by_file.max(initial=0)) + 2) + by_file + 1
                e, merged = _merge_duplicate_events(e, origin)
                if merged:
                    self.merged["events"] = merged
                    self.notes.append(f"{merged} log event(s) appeared in more than one file and were counted "
                                      "once (the same host, time and message)")
            self.events = e.sort_values(["timestamp", "file", "line"], kind="stable",
                                        na_position="last").reset_index(drop=True)
        else:
            self.events = empty_events()
        for s in self.sources:
            for r in s.reports:
                r.setdefault("path", s.path)
                self.reports.append(r)

    # --------------------------------------------------------------- analyse
    def _analyse(self, cfg, opts, parse_options, copies=None):
        ctx = Context(metrics=self.store, events=self.events, reports=self.reports, sources=self.sources,
                      params=cfg.params, link_speed_bps=parse_options.link_speed_bps,
                      user_signatures=cfg.signatures, host_facts=list(self.hosts), clock=self.clock)
        findings, warns = run_all(ctx)
        self.warnings.extend(warns)
        attribute(findings, self.sources, self.reports)
        if self.window is not None:
            findings = [f for f in findings if user_window.in_window(f, self.window)]
        if opts.min_severity:
            findings = [f for f in findings if SEVERITY_RANK[f.severity] >= SEVERITY_RANK[opts.min_severity]]
        quote(findings, copies)       # before the story quotes them
        self.findings = findings
        self.incidents = correlate(list(findings), self.clock)
        self.checked = list(detectors.registry())

    # ------------------------------------------------------------------- API
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


def _distinct_files(files, notes, names=None) -> list:
    """Each file once, however often it was named (directly, through a
    folder, through a link).  ``names``: how the user knows a private copy
    (an archive member), for the note."""
    seen, out = {}, []
    for f in files:
        try:
            st = os.stat(f)
            key = (st.st_dev, st.st_ino)
        except OSError:
            key = ("path", os.path.abspath(str(f)))
        if key in seen:
            names = names or {}
            this, first = (names.get(str(p), str(p)) for p in (f, seen[key]))
            if this != first:
                notes.append(f"{this} is the same file as {first}: read once")
            elif str(f) not in names:      # a member kept for two reasons is not the user's doing
                notes.append(f"{this} was given more than once: read once")
            continue
        seen[key] = f
        out.append(f)
    return out


#: Seconds between a line's wall time in ``dmesg -T`` (boot time plus the
#: uptime, printed to the second) and in the syslog copy of it (when
#: rsyslog received it) that still make them one line.
COPY_SECONDS = 2.0


def _uptime_of_the_copy(events, origin):
    """Each row's uptime stamp; a row printed without one (``dmesg -T``)
    takes that of the same host's same message in another file within
    :data:`COPY_SECONDS`, so that the kernel's one line read from both
    files is known by one stamp."""
    uptime = events["uptime"]
    if not uptime.isna().any() or not uptime.notna().any():
        return uptime
    when = pd.to_datetime(events["timestamp"], utc=True, errors="coerce")
    rows = pd.DataFrame({"host": events["host"].astype(object).fillna("").astype(str),
                         "message": events["message"].astype(object).fillna("").astype(str),
                         "t": (when - pd.Timestamp(0, tz="UTC")).dt.total_seconds(),
                         "origin": origin, "uptime": uptime.to_numpy(dtype=float)})
    rows = rows[rows["t"].notna()].sort_values("t")
    without = rows[rows["uptime"].isna()].drop(columns="uptime")
    found = pd.merge_asof(without.reset_index(), rows[rows["uptime"].notna()].rename(columns={"origin": "theirs"}),
                          on="t", by=["host", "message"], direction="nearest", tolerance=COPY_SECONDS)
    found = found[found["uptime"].notna() & (found["theirs"] != found["origin"])]
    out = uptime.copy()
    out.loc[found["index"].to_numpy()] = found["uptime"].to_numpy()
    return out


def _merge_duplicate_events(events, origin):
    """The same event read through two files (syslog and kern.log, a file
    given twice, overlapping excerpts, a dmesg and the syslog that copied
    it) counts once.  Identity is the host, the message and the time (the
    kernel's uptime stamp when there is one: it survives the copy exactly,
    while a dmesg's wall time is only aligned).  Lines repeated *within* one
    file are real repeats: an event seen n times in one file and m times in
    another counts max(n, m) times (a row of repeats keeps the larger
    ``repeats`` and ``count``).  ``origin`` numbers the source of each row.
    Returns the events and how many lines were counted once."""
    uptime = _uptime_of_the_copy(events, origin)
    stamp = uptime.round(6).astype(object).where(uptime.notna(), events["timestamp"].astype(object))
    key = pd.DataFrame({"host": events["host"].astype(object).fillna(""),
                        "message": events["message"].astype(object), "stamp": stamp})
    key["origin"] = origin
    # the n-th copy of an identical line within its file
    key["nth"] = key.groupby(["host", "message", "stamp", "origin"], sort=False, dropna=False).cumcount()
    same = ["host", "message", "stamp", "nth"]
    duplicate = key.duplicated(same, keep="first").to_numpy()
    if not duplicate.any():
        return events, 0
    repeats = events["repeats"].fillna(1)
    merged = int(repeats[duplicate].sum())
    by = [key[c] for c in same]
    events = events.assign(
        repeats=repeats.groupby(by, sort=False, dropna=False).transform("max").astype("Int64"),
        count=events["count"].fillna(1).groupby(by, sort=False, dropna=False).transform("max").astype("Int64"))
    return events[~duplicate].reset_index(drop=True), merged


def disagreement_warnings(disagreements, holders) -> list[str]:
    """One warning per pair of sources that give one series different
    values at the same times: where they differ most, how many values
    differ, and which source the story uses."""
    pairs: dict = {}
    for d in disagreements:
        pairs.setdefault((d.kept_store, d.dropped_store), []).append(d)
    out = []
    for (kept, dropped), found in pairs.items():
        a, b = os.path.basename(holders[kept].path), os.path.basename(holders[dropped].path)
        first = max(found, key=lambda d: (d.gap, -d.stamp))
        host, section, device, metric = first.key
        when = pd.Timestamp(first.stamp, tz="UTC") if first.tz is not None else pd.Timestamp(first.stamp)
        when = on_clock(when, first.tz) if first.tz is not None else when
        what = f"{section} {metric}" + (f" of {device}" if device else "")
        why = " (the binary file sadc wrote)" if holders[kept].kind == "sa" else " (read first)"
        out.append(f"{a} and {b} disagree on {sum(d.count for d in found)} value(s) of {len(found)} series"
                   f"{f' of {host}' if host else ''}: {what} at {when.strftime('%Y-%m-%d %H:%M:%S')} is "
                   f"{first.kept:g} in {a} and {first.dropped:g} in {b}; the story uses {a}{why}")
    return out


def _size(path: Path) -> int | None:
    """Bytes of a file on disk, for the progress of reading."""
    try:
        return path.stat().st_size
    except OSError:
        return None

"""What detectors read: the normalized inputs of a case.

Detectors never read files and never talk to each other: they see the
case's series, events, load-test reports, host facts and clock through
:class:`Context` only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from sarsleuth.detectors.bounds import valid
from sarsleuth.detectors.evidence import PrintedRows
from sarsleuth.detectors.series import MIN_GAP_SECONDS, segment_ids
from sarsleuth.metric_store import MetricStore, from_long
from sarsleuth.timebase.clock import Clock

#: How sar and the sa reader write a restart record: the CPUs it came back with.
_RESTART_CPUS = re.compile(r"LINUX RESTART\s*\((\d+) CPU\)")


def host_cpus(sources, host, facts=None, cpu_devices=()) -> int | None:
    """A host's CPUs: as its sa file or sar's banner says, else its
    bundle, else the CPUs its series name (None when nothing says)."""
    for s in sources:
        if s.host == host and s.meta.get("ncpu"):
            return int(s.meta["ncpu"])
    if facts is not None and facts.ncpu:
        return int(facts.ncpu)
    return len([d for d in cpu_devices if d not in ("all", "")]) or None


@dataclass
class Context:
    """The normalized inputs of a case, as detectors see them.

    Metrics come as a :class:`~sarsleuth.metric_store.MetricStore` (a long
    DataFrame given instead is stored first): a series is read straight
    from its run, so it costs its own length, whatever the size of the
    case."""

    metrics: Any                 # MetricStore of all sources (deduplicated), or a long DataFrame
    events: Any                  # events DataFrame (all log sources)
    reports: list                # load-test report dicts
    sources: list                # parsed Source objects (for meta: ncpu, ps tables...)
    params: dict = field(default_factory=dict)   # {detector_id: {param: value}}
    link_speed_bps: float | None = None
    user_signatures: tuple = ()  # the case's own [[signature]] entries (config file)
    host_facts: list = field(default_factory=list)  # HostFacts read from bundles (sarsleuth.inputs.bundles.facts)
    #: the case's clock: a host's series are indexed on the clock its story
    #: is told on, so the times detectors write into titles and evidence
    #: are the host's wall clock (same instants)
    clock: Clock = field(default_factory=Clock)
    #: the printed rows metric values were read from (for evidence)
    printed: PrintedRows = field(init=False)
    _series_cache: dict = field(default_factory=dict)
    _sections: dict = field(default_factory=dict)
    _kinds: frozenset | None = None

    def __post_init__(self):
        if not isinstance(self.metrics, MetricStore):
            self.metrics = from_long(self.metrics)
        self.printed = PrintedRows(self.metrics, self.sources, self._section)

    # ---------------------------------------------------------------- inputs
    def available(self, name: str) -> bool:
        """Is an input a detector declares present?  ``metrics``,
        ``metrics:<section>``, ``events``, ``events:<kind>``, ``reports``, ``ps``,
        ``facts`` (a support bundle's host facts)."""
        what, _, detail = name.partition(":")
        if what == "metrics":
            return bool(self.metrics) and (not detail or self._section(detail) is not None)
        if what == "events":
            ev = self.events
            if ev is None or not len(ev):
                return False
            if not detail:
                return True
            if self._kinds is None:
                self._kinds = frozenset(ev["kind"].astype(str).unique())
            return detail in self._kinds
        if what == "reports":
            return bool(self.reports)
        if what == "ps":
            return bool(self.sources_of("ps"))
        if what == "facts":
            return bool(self.host_facts)
        raise ValueError(f"unknown detector input {name!r}")

    # --------------------------------------------------------------- metrics
    def _section(self, section: str):
        """``{(metric, device, host): series key}`` of one section, built
        once; None when the section is absent."""
        if section not in self._sections:
            self._sections[section] = self.metrics.section_index(section) or None
        return self._sections[section]

    def hosts(self, section: str | None = None) -> list:
        if section is None:
            return sorted(str(h) for h in self.metrics.hosts())
        index = self._section(section) or {}
        return sorted({k[2] for k in index if k[2] is not None})

    def series(self, section: str, metric: str, device: str = "", host=None):
        """One metric as a time-indexed Series for one host and device
        (sorted, duplicates dropped), or None when absent.  Values outside
        the metric's physical bounds are left out (counter anomalies:
        :mod:`sarsleuth.detectors.bounds`)."""
        key = (section, metric, device, host)
        if key in self._series_cache:
            return self._series_cache[key]
        out = None
        if host is not None:
            found = (self._section(section) or {}).get((metric, device, host))
            out = self.metrics.series(found) if found is not None else None
            if out is not None and len(out):
                out.index = self.clock.on_host_clock(out.index, host)
            else:
                out = None
        elif self._section(section):
            out = self.metrics.grouped(section, lambda key: 0, metric=metric, device=device).get(0)
        out = valid(out, section, metric)
        if out is not None and not len(out):
            out = None
        self._series_cache[key] = out
        return out

    def restarts(self, host):
        """Times the host restarted (sar's LINUX RESTART records, kernel
        boots in its logs), on its clock: a stretch of records ends there."""
        key = ("__restarts__", host)
        if key not in self._series_cache:
            ev = self.events_of("sar-restart", "kernel-boot")
            times = pd.DatetimeIndex([])
            if ev is not None and len(ev):
                rows = ev[(ev["host"] == host) & ev["timestamp"].notna()]
                if len(rows):
                    times = pd.DatetimeIndex(rows["timestamp"]).sort_values()
            self._series_cache[key] = times
        return self._series_cache[key]

    def segments(self, series, host, bridge_seconds: float = 0.0):
        """:func:`~sarsleuth.detectors.series.segment_ids` of a host's
        series: its stretches of records between gaps and restarts (for
        an episode, gaps of ``bridge_seconds`` or less do not cut it: a
        baseline or a trend never spans one, an episode may)."""
        restarts = self.restarts(host)
        aware = getattr(series.index, "tz", None) is not None
        if len(restarts) and (restarts.tz is not None) != aware:
            restarts = restarts[:0]       # wall clock and instants name no common time
        return segment_ids(series.index, restarts, max(MIN_GAP_SECONDS, bridge_seconds))

    def stretches(self, series, host):
        """The stretches an episode of a host's series stays within: cut at
        restarts and at gaps of more than a minute (see :meth:`segments`)."""
        return self.segments(series, host, bridge_seconds=60.0)

    def row_seconds(self, series, host):
        """The interval each sample of a host's series averages (numpy
        array of seconds): sar stamps a row at the end of the interval it
        covers, the seconds since the row before; a first row covers what
        its sa file recorded for it (the seconds since the record before,
        which sar reads but never prints), else the interval after it."""
        import numpy as np
        idx = pd.DatetimeIndex(series.index)
        n = len(idx)
        ns = np.asarray(idx.as_unit("ns").asi8, dtype=np.int64)
        out = np.full(n, np.nan)
        if n > 1:
            out[1:] = np.diff(ns) / 1e9
            out[0] = out[1]
        if n:
            # a sar text's header time: the record before its first row (where that row's interval began)
            wall = int((idx[:1].tz_localize(None) if idx.tz is not None else idx[:1]).as_unit("ns").asi8[0])
            for src in self.sources:
                covered = (src.meta or {}).get("first_row_seconds", {}).get(wall) if src.kind == "sar-text" else None
                if covered and src.host in (None, host):
                    out[0] = covered
                    break
        if n and idx.tz is not None:
            utc = np.asarray(idx.tz_convert("UTC").as_unit("ns").asi8, dtype=np.int64)
            for src in self.sources:
                times = (src.meta or {}).get("record_times") if src.kind == "sa" else None
                if times is None or src.host not in (None, host):
                    continue
                stamps, seconds = np.asarray(times[0], dtype=np.int64), np.asarray(times[1], dtype=float)
                at = np.searchsorted(stamps, utc[0])
                if at < len(stamps) and stamps[at] == utc[0] and seconds[at] > 0:
                    out[0] = seconds[at]
                    break
        return np.nan_to_num(out, nan=0.0)

    def devices(self, section: str, metric: str, host=None) -> list:
        index = self._section(section) or {}
        return sorted({dev for (mt, dev, h) in index if mt == metric and (host is None or h == host)})

    def sample_times(self, host):
        """Sorted distinct times at which the host's sar recorded anything."""
        key = ("__times__", host)
        if key not in self._series_cache:
            self._series_cache[key] = self.metrics.sample_times(host)
        return self._series_cache[key]

    # ------------------------------------------------------------ host facts
    def facts(self, host):
        """The HostFacts of ``host`` (any name it goes by), or None."""
        for h in self.host_facts:
            if host is not None and host in h.names():
                return h
        if host is None and len(self.host_facts) == 1:
            return self.host_facts[0]
        return None

    def limit(self, host, name: str):
        """A limit of the host as its bundle recorded it: a sysctl
        (``net.ipv4.tcp_max_tw_buckets``) or an nginx directive
        (``proxy_buffers``), as a :class:`~sarsleuth.inputs.bundles.facts.Limit`
        (value, path, line, the line verbatim), or None when unknown."""
        facts = self.facts(host)
        return facts.limit(name) if facts is not None else None

    def process_limit(self, host, program: str, row: str = "Max open files"):
        """The limit ``program`` ran with on ``host`` for a row of
        /proc/PID/limits, as its bundle recorded it (its /proc/PID/limits,
        nginx's ``worker_rlimit_nofile``, its systemd unit's
        ``LimitNOFILE``...), or None."""
        facts = self.facts(host)
        return facts.process_limit(program, row) if facts is not None else None

    def ncpu(self, host) -> int | None:
        return host_cpus(self.sources, host, self.facts(host), self.devices("cpu", "%idle", host))

    def ncpu_at(self, host, index):
        """The CPU count at each time of ``index`` (a numpy array), None
        when unknown: a sysstat restart record says how many CPUs the
        machine came back with (``LINUX RESTART (64 CPU)``), so a stretch
        after it is judged with its own count, the stretch before with the
        file header's."""
        import numpy as np
        import pandas as pd
        base = self.ncpu(host)
        counts = np.full(len(index), base or 0, dtype=float)
        restarts = self.events_of("sar-restart")
        if restarts is not None and len(restarts):
            own = restarts[(restarts["host"].astype(object) == host).to_numpy()]
            for when, message in sorted(zip(own["timestamp"], own["message"].astype(str)), key=lambda r: str(r[0])):
                found = _RESTART_CPUS.search(message)
                if found is None or pd.isna(when):
                    continue
                try:
                    counts[np.asarray(index >= when)] = int(found.group(1))
                except TypeError:      # a wall clock beside an aware time: cannot be placed
                    continue
        counts[counts <= 0] = np.nan
        return None if np.isnan(counts).all() else counts

    # ---------------------------------------------------------------- events
    def events_of(self, *kinds: str):
        ev = self.events
        if ev is None or not len(ev):
            return ev
        return ev[ev["kind"].isin(kinds)]

    def sources_of(self, kind: str) -> list:
        return [s for s in self.sources if s.kind == kind]

"""Pressure stall information (sar -q PSI, sysstat 12.x; Linux 4.20+).

PSI is the kernel's own measure of which resource held tasks back: the
share of time at least one task waited for the CPU, for memory (reclaim,
refaults, swap-in) or for I/O ("some"), and for memory and I/O the share
of time no task could run at all ("full").  It is the direct answer to
"what stalled the work", where %iowait and the load average are indirect.
sysstat prints the share over each interval (%scpu, %smem, %fmem, %sio,
%fio) beside the kernel's running averages; the per-interval share is the
one read here.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sarsleuth.detectors.figures import Figures, already_above, baseline_at, given, measure, series_of
from sarsleuth.detectors.series import episodes, fmt_time, onset_ref, peak_ref, severity_for, takeoff_before
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import limit_evidence, metric_evidence
from sarsleuth.model import iso


class _PressureStall(Detector):
    """Tasks stalled on one resource for a large share of the time."""

    #: (sar section, "some" column, "full" column or None, words for the story,
    #: the file of /proc/pressure)
    resource: tuple = ()
    defaults = {"some_pct": 20.0, "full_pct": 10.0, "max_gap_samples": 2, "min_duration_seconds": 20.0}

    def run(self, ctx: Context):
        section, some_col, full_col, words, _file = self.resource
        out = []
        p = self.params
        recorded = set(ctx.hosts(section))
        for facts in ctx.host_facts:
            if facts.host not in recorded and facts.pressure.get(_file):
                out.extend(self._at_collection(facts, words, ctx.clock.host_zone(facts.host)))
        for host in sorted(recorded):
            some = ctx.series(section, some_col, host=host)
            if some is None:
                continue
            # the share of each row's own interval: one row of a minute is a clear state on its own
            seconds = ctx.row_seconds(some, host)
            full = ctx.series(section, full_col, host=host) if full_col else None
            full = full.reindex(some.index) if full is not None else None
            bound = self._thresholds(ctx, host, some)
            hit = some >= bound
            if full is not None:
                hit |= (full >= p["full_pct"]).fillna(False)
            some_key = (section, some_col, "")
            segments = ctx.segments(some, host)
            for ep in episodes(some, hit.to_numpy(), p["max_gap_samples"], segments=ctx.stretches(some, host)):
                inside = np.asarray((some.index >= ep.start) & (some.index <= ep.end))
                if float(seconds[inside].sum()) < p["min_duration_seconds"]:
                    continue
                figs = Figures()
                mean = figs.add(measure(ctx, "mean_some_pct", "mean", host, some_key, ep.start, ep.end, fmt=".1f"))
                peak = figs.add(measure(ctx, "peak_some_pct", "max", host, some_key, ep.start, ep.end, fmt=".1f"))
                figs.add(measure(ctx, "samples", "samples", host, some_key, ep.start, ep.end, fmt="d"))
                stalled_for(ctx, figs, host, some_key, ep, p["min_duration_seconds"])
                title = f"Tasks stalled on {words} {mean.text()} % of the time (PSI some, peak {peak.text()} %"
                mean_full = None
                if full is not None:
                    full_key = (section, full_col, "")
                    figs.add(measure(ctx, "peak_full_pct", "max", host, full_key, ep.start, ep.end, fmt=".1f"))
                    mean_full = figs.add(measure(ctx, "mean_full_pct", "mean", host, full_key, ep.start, ep.end,
                                                 fmt=".1f"))
                    if mean_full is not None:
                        title += f"; no task could run {mean_full.text()} % of the time"
                title += ")" + self._beside(ctx, figs, host, ep)
                sev = severity_for(max(mean.value, 2 * (mean_full.value if mean_full else 0.0)),
                                   [(60, "high"), (30, "medium")], default="low")
                base = baseline_at(ctx, "baseline_some_pct", host, some_key, some, ep.start, segments)
                text = (f"{some_col} {mean.text('.2f')} on average from {fmt_time(ep.start)} to {fmt_time(ep.end)}, "
                        f"peak {peak.text('.2f')} at {fmt_time(peak.at)}")
                refs = {**peak_ref(ep), **onset_ref(some, ep, base.value if base else 0.0)}
                # a share of each row's own interval: what the first row shows
                # may have begun anywhere in it
                refs["sample_seconds"] = float(seconds[inside].max())
                if "onset" in refs:
                    figs.add(base)
                    refs["start_said"] = already_above(ctx, figs, host, some_key, ep.start, some_col, base, " %")
                took_off = takeoff_before(some, ep, base.value, ctx.stretches(some, host)) if base else None
                if took_off is not None:
                    # the stall began in the rows that climbed to the threshold
                    refs["onset"] = iso(took_off)
                    figs.add(base)
                    then = figs.add(measure(ctx, "some_at_onset_pct", "at", host, some_key, at=took_off,
                                            fmt=".1f"))
                    crossed = figs.add(given("some_threshold_pct", float(bound[ep.start]), origin="threshold",
                                             fmt="g", host=host))
                    refs["onset_said"] = (f"{some_col} took off at {fmt_time(took_off)} ({then.text()} %, usually "
                                          f"{base.text()} %), below {crossed.text()} % until {fmt_time(ep.start)}")
                out.append(self.finding(
                    title=title, severity=sev, start=ep.start, end=ep.end, host=host, figures=figs, refs=refs,
                    evidence=[metric_evidence(ctx, section, host, peak.at, text, metric=some_col)],
                ))
        return out

    def _beside(self, ctx: Context, figs: Figures, host, ep) -> str:
        """What else the title says of the episode (nothing here)."""
        return ""

    def _thresholds(self, ctx: Context, host, some) -> pd.Series:
        """The "some" share at which each sample stalls."""
        return pd.Series(float(self.params["some_pct"]), index=some.index)

    def _at_collection(self, facts, words: str, zone) -> list:
        """A bundle's /proc/pressure, for a host without sar's PSI: the share
        of the last minute and five minutes before it was made.  On the
        shared clock only when both the bundle's time and the host's zone
        are known."""
        p = self.params
        kinds = facts.pressure[self.resource[4]]
        some, some_line = kinds.get("some", ({}, None))
        full, full_line = kinds.get("full", ({}, None))
        stalled = some.get("avg60", 0.0) >= p["some_pct"] or (full and full.get("avg60", 0.0) >= p["full_pct"])
        if not stalled:
            return []
        try:
            end = pd.Timestamp(facts.collected) if facts.collected else None
        except (TypeError, ValueError):
            end = None
        aligned = end is not None and end.tzinfo is not None and zone is not None
        if aligned:
            end = end.tz_convert(zone)
        figs = Figures()

        def read(name, kind, value, line):
            return figs.add(given(name, value, origin=f"{line.path}:{line.line}" if line is not None else kind,
                                  fmt=".1f", host=facts.host))

        title = (f"Tasks stalled on {words} {read('avg60_some_pct', 'some', some['avg60'], some_line).text()} % of "
                 f"the last minute before the bundle was made "
                 f"({read('avg300_some_pct', 'some', some['avg300'], some_line).text()} % of the last 5 minutes; PSI some"
                 + (f", no task could run {read('avg60_full_pct', 'full', full['avg60'], full_line).text()} % of the "
                    f"last minute" if full else "") + ")")
        if full:
            read("avg300_full_pct", "full", full["avg300"], full_line)
        sev = severity_for(max(some.get("avg60", 0.0), 2 * (full or {}).get("avg60", 0.0)),
                           [(60, "high"), (30, "medium")], default="low")
        lines = [limit_evidence(line) for line in (some_line, full_line) if line is not None]
        return [self.finding(title=title, severity=sev, start=None if end is None else end - pd.Timedelta(minutes=1),
                             end=end, host=facts.host, figures=figs, evidence=lines, aligned=aligned)]


def stalled_for(ctx: Context, figs: Figures, host, key, ep, least_seconds: float):
    """How long tasks stalled over the episode, in all: its PSI share times
    each row's seconds (a share of a minute's row counts for the minute),
    which no sampling interval changes; and that over the detector's least
    duration (``stalled_over_least``: under 1, a burst)."""
    figs.add(measure(ctx, "stalled_pct_seconds", "sum", host, key, ep.start, ep.end, fmt=",.0f"))
    figs.add(given("whole_pct", 100.0, origin="threshold", fmt=".0f", host=host))
    stalled = figs.add(measure(ctx, "stalled_seconds", "ratio", host, of=("stalled_pct_seconds", "whole_pct"),
                               known=figs.by_name(), fmt=".1f"))
    if stalled is None:
        return None
    figs.add(given("least_seconds", float(least_seconds), origin="threshold", fmt=".0f", host=host))
    return figs.add(measure(ctx, "stalled_over_least", "ratio", host, of=("stalled_seconds", "least_seconds"),
                            known=figs.by_name()))


class CpuPressure(_PressureStall):
    """Runnable tasks waiting for a CPU a large share of the time (PSI)."""

    id = "cpu-stall"
    summary = ("tasks waiting for a CPU a large share of the time (PSI cpu some, sar -q PSI); with the CPUs "
               "mostly idle, a CPU quota throttling them")
    inputs = ("metrics:psi-cpu", "facts")
    category = "cpu-saturation"
    resource = ("psi-cpu", "%scpu", None, "the CPU", "cpu")
    defaults = {**_PressureStall.defaults, "some_pct": 50.0, "held_back_busy_pct": 50.0, "held_back_some_pct": 25.0}

    def _thresholds(self, ctx: Context, host, some) -> pd.Series:
        """``some_pct``, or ``held_back_some_pct`` where the CPUs were
        ``held_back_busy_pct`` busy or less: tasks waiting for a CPU while
        most of them idle is never a host's ordinary contention (a quota or
        an affinity holds them back), and a row's average of a throttled
        service's waits stays under half the time."""
        p = self.params
        busy = series_of(ctx, host, ("cpu", "%busy", "all"))
        idle = (busy.reindex(some.index) <= p["held_back_busy_pct"]).fillna(False) if busy is not None else False
        return pd.Series(np.where(idle, p["held_back_some_pct"], p["some_pct"]), index=some.index, dtype=float)

    def _beside(self, ctx: Context, figs: Figures, host, ep) -> str:
        """How busy the CPUs were meanwhile.  A task waits for a CPU while
        the CPUs are mostly idle only when it is not let run: its cgroup
        spent its CPU quota for the period (CFS bandwidth control, cgroup
        cpu.max, systemd CPUQuota=: throttled until the next period), or
        it is pinned to CPUs that are busy.  Said as that guess; kb.toml
        lets such a stall be a cause (metric ``mean_busy_pct``)."""
        busy = figs.add(measure(ctx, "mean_busy_pct", "mean", host, ("cpu", "%busy", "all"), ep.start, ep.end,
                                fmt=".1f"))
        if busy is None:
            return ""
        if busy.value > self.params["held_back_busy_pct"]:
            return f", the CPUs {busy.text()} % busy"
        return (f", while the CPUs were only {busy.text()} % busy: held back by a CPU quota (cgroup cpu.max, "
                "CPUQuota=) or pinned to busy CPUs, a guess from the idle CPUs")


class MemoryPressureStall(_PressureStall):
    """Tasks stalled on memory (reclaim, refaults, swap-in) (PSI)."""

    id = "memory-stall"
    summary = "tasks stalled on memory: reclaim, refaults, swap-in (PSI memory some/full, sar -q PSI)"
    inputs = ("metrics:psi-mem", "facts")
    category = "memory-exhaustion"
    resource = ("psi-mem", "%smem", "%fmem", "memory", "memory")
    defaults = {**_PressureStall.defaults, "some_pct": 10.0, "full_pct": 5.0}


class IoPressureStall(_PressureStall):
    """Tasks stalled on I/O (PSI)."""

    id = "io-stall"
    summary = "tasks stalled on I/O a large share of the time (PSI io some/full, sar -q PSI)"
    inputs = ("metrics:psi-io", "facts")
    category = "io-saturation"
    resource = ("psi-io", "%sio", "%fio", "I/O", "io")

"""The CPUs and the run queue over sar data: CPUs without idle time (or
losing it to %steal), and a load average that jumps from its own usual
level, climbs past the CPU count or holds tasks blocked."""
from __future__ import annotations

import numpy as np
import pandas as pd

from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.cpu_io import _hold_samples, above_prior_baseline, coarse_rows
from sarsleuth.detectors.evidence import metric_evidence
from sarsleuth.detectors.figures import Figures, already_above, baseline_at, given, measure
from sarsleuth.detectors.series import episodes, fmt_time, interval_words, onset_ref, peak_ref, severity_for


class CpuSaturation(Detector):
    """CPU "all" with almost no idle time, or with a high %steal, for several
    samples in a row.

    Why it matters: saturated CPUs queue work; steal means the hypervisor is
    withholding CPU the guest thinks it has.
    """

    id = "cpu-saturation"
    summary = "CPUs without idle time (or losing it to %steal) for several samples"
    inputs = ("metrics",)
    category = "cpu-saturation"
    defaults = {"idle_floor_pct": 5.0, "steal_pct": 10.0, "min_samples": 2, "max_gap_samples": 1,
                "min_duration_seconds": 30.0,
                # a row averaging a minute or more: a burn shorter than it is diluted
                "coarse_busy_pct": 70.0, "coarse_margin_pct": 30.0}

    def run(self, ctx: Context):
        out = []
        key = ("cpu", "%busy", "all")
        for host in ctx.hosts("cpu"):
            idle = ctx.series("cpu", "%idle", device="all", host=host)
            if idle is None:
                continue
            busy_pct = 100 - idle
            iowait = ctx.series("cpu", "%iowait", device="all", host=host)
            if iowait is not None:
                # a CPU waiting for I/O is idle as far as work goes: %iowait
                # is the disk's story, not the CPUs' (figures.DERIVED)
                busy_pct = busy_pct - iowait.reindex(idle.index).fillna(0)
            steal = ctx.series("cpu", "%steal", device="all", host=host)
            p = self.params
            busy = busy_pct >= 100 - p["idle_floor_pct"]
            if steal is not None:
                busy |= steal.reindex(idle.index).fillna(0) >= p["steal_pct"]
            coarse = coarse_rows(ctx, busy_pct, host, p["coarse_busy_pct"], p["coarse_margin_pct"],
                                 ctx.segments(idle, host))
            seconds = ctx.row_seconds(busy_pct, host)
            for ep in episodes(busy_pct, busy.to_numpy() | coarse, p["max_gap_samples"],
                               segments=ctx.stretches(idle, host)):
                inside = np.asarray((busy_pct.index >= ep.start) & (busy_pct.index <= ep.end))
                lone = bool(coarse[inside].any())
                covered = float(seconds[inside].sum())
                if not lone and (ep.samples < p["min_samples"] or covered < p["min_duration_seconds"]):
                    continue
                figs = Figures()
                peak = figs.add(measure(ctx, "peak_busy_pct", "max", host, key, ep.start, ep.end, fmt=".1f"))
                figs.add(measure(ctx, "samples", "samples", host, key, ep.start, ep.end, fmt="d"))
                stolen = None
                if steal is not None:
                    stolen = figs.add(measure(ctx, "peak_steal_pct", "max", host, ("cpu", "%steal", "all"),
                                              ep.start, ep.end, fmt=".1f"))
                by_steal = stolen is not None and stolen.value >= p["steal_pct"]
                refs = peak_ref(ep)
                if lone and peak.value < 100 - p["idle_floor_pct"]:
                    # what a coarse row says: busy on average over its interval
                    step = float(seconds[inside].max())
                    refs["sample_seconds"] = step
                    title = (f"CPUs {peak.text()} % busy on average over a {interval_words(step)} sample, "
                             "a burst within it averaged in")
                else:
                    title = (f"CPU lost up to {stolen.text()} % to the hypervisor (%steal)" if by_steal
                             else f"CPUs saturated: {peak.text()} % busy")
                sev = "high" if peak.value >= 99 or by_steal else "medium"
                text = f"CPUs {peak.text()} % busy (neither idle nor waiting for I/O) at {fmt_time(peak.at)}"
                out.append(self.finding(
                    title=title, severity=sev, start=ep.start, end=ep.end, host=host, figures=figs,
                    refs=refs, evidence=[metric_evidence(ctx, "cpu", host, peak.at, text)],
                ))
        return out


class LoadSpike(Detector):
    """The load average jumping far above its own usual level, climbing past
    the CPU count, or many blocked tasks (sar -q).

    A jump is measured against the level before it and that level's own
    variability: it must be ``jump_factor`` times the usual level, at least
    ``jump_min_load``, and rise above it by more than ``spread_factor``
    times the spread of the samples it is measured against (a load that
    wanders between 4 and 6 does not jump when it reads 5.5).  A load
    already past the CPU count before is not an onset.

    Why it matters: report 002 saw load go 0.8 -> 4 in 13 s as connections
    piled up; blocked tasks point at I/O.
    """

    id = "load-spike"
    summary = "ldavg-1 / runq-sz far above the CPU count or jumping from baseline; blocked tasks"
    inputs = ("metrics",)
    category = "cpu-saturation"
    defaults = {
        "per_cpu_factor": 2.0,     # ldavg-1 above this x CPUs
        "jump_factor": 4.0,        # or this x the host's usual load ...
        "jump_min_load": 2.0,      # ... and at least this much
        "spread_factor": 4.0,      # ... rising above it by this many times its spread
        "blocked_per_cpu": 0.5,    # blocked tasks above this x CPUs ...
        "min_blocked": 4,          # ... and at least this many
        "min_duration_seconds": 0.0,  # ldavg-1 is already a 1-minute average
        "max_gap_samples": 1,
    }

    def run(self, ctx: Context):
        out = []
        key = ("queue", "ldavg-1", "")
        for host in ctx.hosts("queue"):
            load = ctx.series(*key, host=host)
            if load is None or len(load) < 2:
                continue
            p = self.params
            # each stretch between restarts judged with the CPUs it ran on
            cpus_at = ctx.ncpu_at(host, load.index)
            segments = ctx.segments(load, host)
            spread = _spread(load, segments)

            def jump_over(base):
                return np.maximum(p["jump_factor"] * np.maximum(base, 0.05), p["jump_min_load"])

            mask, bases = above_prior_baseline(load, jump_over, _hold_samples(load, p["max_gap_samples"]), segments)
            jumped = mask & (load.to_numpy() - bases > p["spread_factor"] * spread)
            cond = pd.Series(jumped, index=load.index)
            levels = p["per_cpu_factor"] * np.nan_to_num(cpus_at, nan=np.inf) if cpus_at is not None else None
            if levels is not None:  # without the CPU count only the jump from baseline is meaningful
                cond |= (load.to_numpy() >= levels) & (bases < levels)
            blocked = ctx.series("queue", "blocked", host=host)
            if blocked is not None:
                per_cpu = p["blocked_per_cpu"] * (np.nan_to_num(cpus_at, nan=1.0) if cpus_at is not None else 1.0)
                cond |= blocked.reindex(load.index).fillna(0).to_numpy() >= np.maximum(p["min_blocked"], per_cpu)
            for ep in episodes(load, cond.to_numpy(), p["max_gap_samples"],
                               min_duration_seconds=p["min_duration_seconds"], segments=ctx.stretches(load, host)):
                figs = Figures()
                peak = figs.add(measure(ctx, "peak_ldavg_1", "max", host, key, ep.start, ep.end))
                base = figs.add(baseline_at(ctx, "baseline_ldavg_1", host, key, load, ep.start, segments))
                at_peak = load.index.get_loc(peak.at)
                # the CPUs the machine ran on at the peak (a restart may have changed them)
                cpus = figs.add(measure(ctx, "ncpu", "ncpu", host, at=peak.at, fmt="d"))
                ncpu = int(cpus.value) if cpus is not None else None
                level = p["per_cpu_factor"] * ncpu if ncpu else None
                for name, metric in (("peak_runq_sz", "runq-sz"), ("peak_blocked", "blocked")):
                    figs.add(measure(ctx, name, "max", host, ("queue", metric, ""), ep.start, ep.end, fmt=".0f"))
                cpus = f", {ncpu} CPUs" if ncpu else ""
                if jumped[at_peak]:
                    title = f"Load average jumped to {peak.text()} (baseline {base.text()}{cpus})"
                elif level is not None and peak.value >= level:
                    per_cpu = figs.add(given("per_cpu_factor", p["per_cpu_factor"], origin="threshold", fmt="g",
                                             host=host))
                    title = (f"Load average rose to {peak.text()}, past {per_cpu.text()} per CPU ({ncpu} CPUs; "
                             f"baseline {base.text()})")
                else:
                    most = figs.get("peak_blocked")
                    title = (f"{most.text() if most else 'Many'} tasks blocked (load average {peak.text()}, "
                             f"baseline {base.text()}{cpus})")
                ratio = peak.value / ncpu if ncpu else peak.value / max(base.value, 0.05) / 4
                sev = severity_for(ratio, [(4, "high"), (1.5, "medium")])
                refs = {**peak_ref(ep), **onset_ref(load, ep, base.value)}
                if "onset" in refs:
                    refs["start_said"] = already_above(ctx, figs, host, key, ep.start, "ldavg-1", base)
                out.append(self.finding(
                    title=title, severity=sev, start=ep.start, end=ep.end, host=host, figures=figs, refs=refs,
                    evidence=[metric_evidence(ctx, "queue", host, peak.at,
                                              f"ldavg-1 {base.text()} -> {peak.text()} at {fmt_time(peak.at)}")],
                ))
        return out


def _spread(load, segments) -> np.ndarray:
    """How much the load wanders before each sample: 1.4826 times the
    median absolute deviation of the samples of the 15 minutes before it
    in its stretch of records (0 where there are fewer than three)."""
    out = np.zeros(len(load))
    seg = np.asarray(segments)
    for sid in np.unique(seg):
        at = np.flatnonzero(seg == sid)
        part = load.iloc[at]
        mad = part.rolling("15min", closed="left", min_periods=3).apply(
            lambda w: float(np.median(np.abs(w - np.median(w)))), raw=True)
        out[at] = np.nan_to_num(1.4826 * mad.to_numpy(dtype=float))
    return out

"""The CPUs and the run queue over sar data: CPUs without idle time (or
losing it to %steal), and a load average that jumps from its own usual
level, climbs past the CPU count or holds tasks blocked."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from sarsleuth.analysis.process_cpu import young_burn
from sarsleuth.analysis.ps_snapshots import snapshots_of, without_collectors
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.cpu_io import (COARSE_SECONDS, _hold_samples, above_prior_baseline, busy_part_rows,
                                       coarse_rows, taken_at)
from sarsleuth.detectors.evidence import metric_evidence
from sarsleuth.detectors.figures import Figures, already_above, baseline_at, given, measure
from sarsleuth.detectors.series import episodes, fmt_time, interval_words, onset_ref, peak_ref, severity_for
from sarsleuth.knowledge import kb_entry
from sarsleuth.model import SEVERITY_RANK, Evidence


#: How much earlier than the rows' own interval a ps snapshot must date a
#: burn for its finding to be told beside theirs.
EARLIER_S = 5.0


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
                "coarse_busy_pct": 70.0, "coarse_margin_pct": 30.0,
                # ... or busy this share of it (and min_duration_seconds or longer), far above the
                # usual, with tasks waiting for a CPU (PSI cpu some) this share of the busy time
                "coarse_part_busy_pct": 25.0, "coarse_waiting_pct": 25.0}

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
            part = self._waited_part(ctx, host, busy_pct, seconds, ctx.segments(idle, host)) & ~coarse
            coarse |= part
            stolen_at = steal.reindex(busy_pct.index).fillna(0).to_numpy() if steal is not None else None
            for ep in episodes(busy_pct, busy.to_numpy() | coarse, p["max_gap_samples"],
                               segments=ctx.stretches(idle, host)):
                inside = np.asarray((busy_pct.index >= ep.start) & (busy_pct.index <= ep.end))
                lone = bool(coarse[inside].any())
                covered = float(seconds[inside].sum())
                # a row of a minute or more whose average is stolen time: the hypervisor held the
                # CPUs over all of it (a one-row paste of sar -u is the whole record)
                stolen_rows = (stolen_at is not None and covered >= COARSE_SECONDS
                               and float(stolen_at[inside].max()) >= p["steal_pct"])
                if not (lone or stolen_rows) and (ep.samples < p["min_samples"]
                                                  or covered < p["min_duration_seconds"]):
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
                    waited = (self._waiting_while_busy(ctx, figs, host, peak)
                              if part[np.asarray(busy_pct.index == peak.at)].any() else None)
                    if waited is not None:
                        title += (f", tasks waiting for a CPU {figs['some_cpu_pct_at_peak'].text()} % of the "
                                  f"sample ({waited.text()} % of the time the CPUs were busy)")
                else:
                    title = (f"CPU lost up to {stolen.text()} % to the hypervisor (%steal)" if by_steal
                             else f"CPUs saturated: {peak.text()} % busy")
                sev = "high" if peak.value >= 99 or by_steal else "medium"
                text = f"CPUs {peak.text()} % busy (neither idle nor waiting for I/O) at {fmt_time(peak.at)}"
                out.append(self.finding(
                    title=title, severity=sev, start=ep.start, end=ep.end, host=host, figures=figs,
                    refs=refs, evidence=[metric_evidence(ctx, "cpu", host, peak.at, text)],
                ))
            out += self._burns_seen_by_ps(ctx, host, busy_pct, seconds, out)
        return out

    def _waited_part(self, ctx: Context, host, busy_pct, seconds, segments) -> np.ndarray:
        """Coarse rows in which the CPUs were saturated for a part of the
        interval: busy ``coarse_part_busy_pct`` of it or more (and at least
        ``min_duration_seconds``), far above their usual level, with tasks
        waiting for a CPU (PSI cpu some, the share of the row) for
        ``coarse_waiting_pct`` of the time they were busy or more.  Busy
        half a row all along (one task per CPU, none waiting) and saturated
        half of it (more tasks than CPUs, then idle) both read 50 %; the
        tasks that waited tell them apart."""
        p = self.params
        some = ctx.series("psi-cpu", "%scpu", host=host)
        if some is None:
            return np.zeros(len(busy_pct), dtype=bool)
        return busy_part_rows(ctx, busy_pct, some, host, seconds, segments, floor=p["coarse_part_busy_pct"],
                              margin=p["coarse_margin_pct"], least_seconds=p["min_duration_seconds"],
                              while_busy_at_least=p["coarse_waiting_pct"])

    @staticmethod
    def _waiting_while_busy(ctx: Context, figs: Figures, host, peak):
        """The share of the busy time tasks waited for a CPU, in the peak's
        row: PSI cpu some over the row's busy share."""
        some = figs.add(measure(ctx, "some_cpu_pct_at_peak", "at", host, ("psi-cpu", "%scpu", ""), at=peak.at))
        if some is None or not peak.value:
            return None
        return figs.add(measure(ctx, "waiting_while_busy_pct", "ratio", host,
                                of=("some_cpu_pct_at_peak", "peak_busy_pct"), known=figs.by_name(), factor=100.0,
                                fmt=".1f"))

    def _burns_seen_by_ps(self, ctx: Context, host, busy_pct, seconds, found) -> list:
        """CPUs saturated by processes younger than the sample around them.

        A coarse row averages a burn into its interval (a minute's row of
        50 % on two CPUs holds a 30 s burn at 100 %), but a ps snapshot
        taken in it tells more: a process's %CPU is its CPU time over its
        life, so for a process younger than the row it is its rate since it
        started, and its age is its CPU time over that rate.  Processes that
        all started in the last ``A`` seconds and used, together, all but
        the idle floor of the CPUs over those seconds, kept them saturated
        then.  Collectors (what gathered the files) are left out."""
        if not len(busy_pct) or float(np.nanmax(seconds)) < COARSE_SECONDS:
            return []
        p = self.params
        out = []
        stamps = busy_pct.index
        for snap in snapshots_of(ctx.sources, host):
            if snap.time is None or (snap.time.tzinfo is None) != (stamps.tz is None):
                continue
            after = stamps[stamps >= snap.time]
            # the row around the snapshot (stamped at the end of its interval), else the last row's interval
            k = stamps.get_loc(after[0]) if len(after) else len(stamps) - 1
            row_s = float(seconds[k])
            if row_s < COARSE_SECONDS or (not len(after) and (snap.time - stamps[-1]).total_seconds() > row_s):
                continue
            # a finding of the rows covers the interval the snapshot is in:
            # the snapshot adds only a burn that began before that interval
            # (a first row that averaged the burn's first seconds in with
            # the calm before them)
            row = pd.Timedelta(seconds=row_s)
            covering = [f for f in found + out if f.host == host and f.start - row <= snap.time <= f.end + row]
            ncpu = ctx.ncpu_at(host, pd.DatetimeIndex([stamps[k]]))
            ncpu = int(ncpu[0]) if ncpu is not None and ncpu[0] == ncpu[0] else ctx.ncpu(host)
            if not ncpu:
                continue
            burn = young_burn(without_collectors(snap), snap.time, ncpu, share=1 - 2 * p["idle_floor_pct"] / 100,
                              max_age_s=row_s)
            if burn is None or any(burn.began >= f.start - row - pd.Timedelta(seconds=EARLIER_S) for f in covering):
                continue
            covered = len(after) > 0
            if covered and burn.cpu_seconds > _row_cpu_seconds(busy_pct, seconds, ncpu, burn.began, snap.time):
                continue        # more CPU than the rows hold: the clocks of ps and sar disagree
            out.append(self._young_burn_finding(ctx, host, snap, burn, ncpu, stamps[k] if covered else None, row_s))
        return out

    def _young_burn_finding(self, ctx, host, snap, burn, ncpu, row_at, row_s):
        figs = Figures()
        span = figs.add(measure(ctx, "burn_seconds", "elapsed", host, start=burn.began, end=snap.time, fmt=".0f"))
        where = f"{os.path.basename(snap.path)}:{burn.rows[0][0]}"
        used = figs.add(given("cpus_used", burn.cpus_used, origin=where, fmt=".2f", host=host))
        cpus = figs.add(measure(ctx, "ncpu", "ncpu", host, at=row_at, fmt=".0f")) or figs.add(
            given("ncpu", ncpu, origin="inferred", fmt=".0f", host=host))
        procs = figs.add(given("young_processes", len(burn.rows), origin=where, fmt=".0f", host=host))
        title = (f"CPUs saturated for the {span.text()} s before a ps snapshot: {procs.text()} process(es) started "
                 f"since used {used.text()} of the {cpus.text()} CPUs")
        refs = {"sample_seconds": row_s, "seen_by": "ps"}
        if row_at is not None:
            row = figs.add(measure(ctx, "row_busy_pct", "at", host, ("cpu", "%busy", "all"), at=row_at, fmt=".1f"))
            if row is not None:
                title += f"; the {interval_words(row_s)} sample around it averages {row.text()} % busy"
        evidence = [Evidence(path=snap.path, line=line, text=row_text) for line, row_text in burn.rows[:3]]
        return self.finding(title=title, severity="high" if burn.cpus_used >= 0.95 * ncpu else "medium",
                            start=burn.began, end=snap.time, host=host, figures=figs, refs=refs,
                            evidence=evidence)


def _row_cpu_seconds(busy_pct, seconds, ncpu: int, start, end) -> float:
    """The most CPU time the rows overlapping ``start``..``end`` allow in
    it: each row's busy share of its whole interval (a part of a row holds
    at most all of it), plus TIME's second per CPU."""
    stamps = busy_pct.index
    begins = stamps - pd.to_timedelta(seconds, unit="s")
    over = np.asarray((stamps > start) & (begins < end))
    busy = np.nan_to_num(busy_pct.to_numpy(dtype=float)[over], nan=100.0)
    return float((busy / 100 * ncpu * np.asarray(seconds)[over]).sum()) + 2.0 * ncpu


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
        "task_rate_factor": 10.0,  # context switches or forks this x their usual rate are said
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

            mask, bases, taken = above_prior_baseline(load, jump_over, _hold_samples(load, p["max_gap_samples"]),
                                                      segments)
            # the spread, like the level, is the one before the excursion (its own rise is no usual wander)
            before = spread[np.searchsorted(load.index, taken)]
            jumped = mask & (load.to_numpy() - bases > p["spread_factor"] * before)
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
                base = figs.add(baseline_at(ctx, "baseline_ldavg_1", host, key, load, taken_at(taken, load, ep.start),
                                            segments))
                at_peak = load.index.get_loc(peak.at)
                # the CPUs the machine ran on at the peak (a restart may have changed them)
                cpus = figs.add(measure(ctx, "ncpu", "ncpu", host, at=peak.at, fmt="d"))
                ncpu = int(cpus.value) if cpus is not None else None
                level = p["per_cpu_factor"] * ncpu if ncpu else None
                for name, metric in (("peak_runq_sz", "runq-sz"), ("peak_blocked", "blocked")):
                    figs.add(measure(ctx, name, "max", host, ("queue", metric, ""), ep.start, ep.end, fmt=".0f"))
                self._against_the_cpus(ctx, figs, host, ncpu)
                switching = self._task_rates(ctx, figs, host, ep, taken_at(taken, load, ep.start))
                cpus = f", {ncpu} CPUs" if ncpu else ""
                if jumped[at_peak]:
                    title = f"Load average jumped to {peak.text()} (baseline {base.text()}{cpus}){switching}"
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
                if not ncpu:
                    # a jump against its own baseline, the CPUs unknown: no more than
                    # the same load told against the CPUs would be
                    sev = min(sev, "medium", key=SEVERITY_RANK.get)
                refs = {**peak_ref(ep), **onset_ref(load, ep, base.value)}
                if "onset" in refs:
                    refs["start_said"] = already_above(ctx, figs, host, key, ep.start, "ldavg-1", base)
                recorded = any(ctx.series("tasks", m, host=host) is not None for m in ("cswch/s", "proc/s"))
                out.append(self.finding(
                    title=title, severity=sev, start=ep.start, end=ep.end, host=host, figures=figs, refs=refs,
                    metrics={"task_rates_recorded": int(recorded)},
                    explanation=None if ncpu else kb_entry(self.id)["explanation_cpus_unknown"],
                    evidence=[metric_evidence(ctx, "queue", host, peak.at,
                                              f"ldavg-1 {base.text()} -> {peak.text()} at {fmt_time(peak.at)}")],
                ))
        return out

    def _task_rates(self, ctx: Context, figs: Figures, host, ep, since) -> str:
        """Context switches and process creations (``sar -w``) beside the
        jump, against their level before it: a context-switch storm (threads
        taking turns on the CPUs) or a fork storm is what the queue was made
        of.  Returns what the title says of the one that rose most."""
        told = ""
        for metric, name in (("cswch/s", "cswch"), ("proc/s", "proc")):
            found = _rate_figures(ctx, figs, host, ep, since, metric, name)
            if found and found[0].value >= self.params["task_rate_factor"] * found[1].value and not told:
                told = f", {metric} up to {found[0].text()} (usually {found[1].text()})"
        return told

    def _against_the_cpus(self, ctx: Context, figs: Figures, host, ncpu) -> None:
        """The load at its peak per CPU (``load_per_cpu``) and the blocked
        tasks over the number that counts as many (``blocked_over_least``):
        a jump that leaves most CPUs idle, with few tasks blocked, is more
        work started, not saturation (kb ``context_if``: 0.2 to 2.7 on 24
        CPUs)."""
        if not ncpu:
            return
        figs.add(measure(ctx, "load_per_cpu", "ratio", host, of=("peak_ldavg_1", "ncpu"), known=figs.by_name()))
        if "peak_blocked" in figs:
            p = self.params
            least = max(float(p["min_blocked"]), p["blocked_per_cpu"] * ncpu)
            figs.add(given("least_blocked", least, origin="threshold", fmt="g", host=host))
            figs.add(measure(ctx, "blocked_over_least", "ratio", host, of=("peak_blocked", "least_blocked"),
                             known=figs.by_name()))


def _rate_figures(ctx: Context, figs: Figures, host, ep, since, metric: str, name: str):
    """The peak of a ``sar -w`` rate in the episode, its level before
    ``since`` and their ratio (``name``: ``cswch`` makes ``peak_cswch_per_s``,
    ``baseline_cswch_per_s``, ``cswch_ratio``); None without the series."""
    key = ("tasks", metric, "")
    rate = ctx.series(*key, host=host)
    if rate is None or not len(rate.dropna()):
        return None
    peak = figs.add(measure(ctx, f"peak_{name}_per_s", "max", host, key, ep.start, ep.end, fmt=",.2f"))
    usual = figs.add(baseline_at(ctx, f"baseline_{name}_per_s", host, key, rate, since, ctx.segments(rate, host),
                                 fmt=",.2f", fallback=False))
    if peak is None or usual is None or usual.value <= 0:
        return None
    figs.add(measure(ctx, f"{name}_ratio", "ratio", host, of=(peak.name, usual.name), known=figs.by_name()))
    return peak, usual


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

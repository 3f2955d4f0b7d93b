"""CPU, I/O wait and load detectors over sar data."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from sarsleuth.detectors.series import baseline, episodes, fmt_time, onset_ref, peak_ref, severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import metric_evidence
from sarsleuth.metric_store.disk_names import disk_names, labelled
from sarsleuth.knowledge import kb_entry
from sarsleuth.model import Evidence, iso

#: How far back the usual level of a series is looked for, before each sample.
PRIOR_WINDOW = "15min"


def above_prior_baseline(series, threshold_for, hold_samples: int):
    """Which samples exceed ``threshold_for(baseline)``, the baseline being
    the median of the series over the window *before* each sample and held
    fixed from the first sample of an excursion until ``hold_samples``
    quiet samples end it: an incident never raises its own baseline (a
    burst that fills most of a short recording is still measured against
    what came before it).  ``threshold_for`` takes numpy arrays.  Returns
    (mask, baseline per sample)."""
    values = series.to_numpy(dtype=float)
    prior = series.rolling(PRIOR_WINDOW, closed="left", min_periods=1).median().to_numpy(dtype=float)
    # nothing before the first sample: the series' own low quartile stands
    # in, or the level it settles at in its last quarter when lower (a
    # recording that starts inside the incident has its calm after it)
    tail = series.iloc[-max(1, len(series) // 4):]
    fallback = min(baseline(series, 0.25), baseline(tail, 0.5))
    bases = np.where(np.isnan(prior), fallback, prior)
    with np.errstate(invalid="ignore"):
        mask = values >= threshold_for(bases)
    # walk the excursions only: from each first hit the baseline stays
    # frozen until the series has been quiet for hold_samples samples
    i, n = 0, len(values)
    while i < n:
        hits = np.flatnonzero(mask[i:])
        if not len(hits):
            break
        i += int(hits[0])
        frozen, quiet = bases[i], 0
        while i < n and quiet <= hold_samples:
            bases[i] = frozen
            mask[i] = bool(values[i] >= threshold_for(frozen))
            quiet = 0 if mask[i] else quiet + 1
            i += 1
    return mask, bases


#: The busiest disk's latencies, as sar names them (a file has those its
#: sysstat printed: await; r_await and w_await in newer ones).
DISK_LATENCIES = ("await", "r_await", "w_await")


def busiest_disk(ctx: Context, host, start, end, names: dict):
    """The disk of ``host`` whose %util peaked highest from ``start`` to
    ``end``: (device label, time of that peak (the earliest when it
    peaked several times), {metric: value sar gave at that time}), or None
    when the host recorded no disk then.  A named disk that is the name of
    a ``devM-N`` disk of the same host (``names``, from
    :mod:`sarsleuth.metric_store.disk_names`: a ``sar -d -p`` rendering beside the sa file)
    is the same disk: it is counted once, under the label recorded.  Read
    from the store's runs, so a host's hundreds of disks over a one-second
    day are never all held as series."""
    store = ctx.metrics
    index = {(metric, dev): key for (metric, dev, h), key in store.section_index("disk").items() if h == host}
    devices = sorted(dev for metric, dev in index if metric == "%util")
    copies = {n.name for dev, n in names.items() if dev in devices}
    aware = pd.Timestamp(start).tzinfo is not None
    lo, hi = _utc_ns(start), _utc_ns(end)
    best = None
    for dev in devices:
        run = store.runs[index[("%util", dev)]]
        if dev in copies or (run.tz is not None) != aware:
            continue
        inside = np.flatnonzero((run.stamps >= lo) & (run.stamps <= hi))
        inside = inside[np.argsort(run.stamps[inside], kind="stable")]
        values = run.values[inside].astype(float)
        if not len(values) or np.isnan(values).all():
            continue
        k = int(np.nanargmax(values))
        if best is None or values[k] > best[2]:
            best = (dev, int(run.stamps[inside[k]]), float(values[k]))
    if best is None:
        return None
    dev, stamp, peak = best
    figures = {"%util": peak}
    for metric in DISK_LATENCIES:
        key = index.get((metric, dev))
        if key is None:
            continue
        run = store.runs[key]
        at = np.flatnonzero(run.stamps == stamp)[:1]
        if len(at) and not np.isnan(float(run.values[at[0]])):
            figures[metric] = float(run.values[at[0]])
    when = ctx.clock.on_host_clock(pd.Timestamp(stamp, tz="UTC"), host) if aware else pd.Timestamp(stamp)
    return dev, when, figures


def _utc_ns(ts) -> int:
    """A time as the store keeps it: UTC nanoseconds, or wall-clock ones
    for a time without a zone."""
    t = pd.Timestamp(ts)
    if t.tzinfo is not None:
        t = t.tz_convert("UTC").tz_localize(None)
    return int(t.as_unit("ns").value)


def _disk_metrics(figures: dict) -> dict:
    out = {"busiest_disk_util_pct": figures["%util"]}
    out.update({f"busiest_disk_{m}_ms": figures[m] for m in DISK_LATENCIES if m in figures})
    return out


def _disk_evidence(ctx: Context, host, dev, when, figures: dict, names: dict) -> tuple:
    """(evidence, sentence) of the busiest disk: the row sar printed for it
    (the recorded label's, else the ``sar -d -p`` row of its name), or for
    a binary sa file a sentence with its label, name and numbers; the
    sentence says it all, and where the name was read."""
    latencies = ", ".join(f"{m} {figures[m]:.2f} ms" for m in DISK_LATENCIES if m in figures)
    said = (f"{labelled(dev, names)}, %util {figures['%util']:.2f} at {fmt_time(when)}"
            + (f", {latencies}" if latencies else ""))
    ev = metric_evidence(ctx, "disk", host, when, f"busiest disk {said}", device=dev, metric="%util")
    named = names.get(dev)
    if ev.line is None and named is not None:
        row = ctx.printed.row_line("disk", host, when, device=named.name, metric="%util")
        if row is not None:
            ev = Evidence(path=row[0], line=row[1], text=row[2])
    if named is not None:
        said += f" (named by {os.path.basename(named.where)})"
    return ev, said


def _hold_samples(series, max_gap_samples: int, bridge_seconds: float = 60.0) -> int:
    if len(series) < 2:
        return max_gap_samples
    step = float(np.median(np.diff(series.index.asi8))) / 1e9 or 1.0
    return max(max_gap_samples, int(bridge_seconds / step))


class IowaitSpike(Detector):
    """%iowait (CPU "all") far above the host's own baseline and above an
    absolute floor.

    Why it matters: CPUs idle waiting for disk mean the storage (or swap) has
    become the bottleneck; report 000 went from 0.01 % to 64.94 % while the
    proxy swapped.
    """

    id = "iowait-spike"
    summary = "%iowait far above the host's own baseline (and above an absolute floor)"
    inputs = ("metrics",)
    category = "io-saturation"
    defaults = {
        "abs_floor_pct": 10.0,     # never fire below this %iowait
        "baseline_factor": 4.0,    # ... nor below this many times the host's median
        "baseline_margin_pct": 5.0, # ... nor below median + this margin
        "max_gap_samples": 1,
        "min_duration_seconds": 30.0,  # a 1-second blip in 1-second data is noise
    }

    def run(self, ctx: Context):
        out = []
        metric = "%iowait"
        names = None
        for host in ctx.hosts("cpu"):
            s = ctx.series("cpu", metric, device="all", host=host)
            if s is None or len(s) < 2:
                continue
            p = self.params

            def threshold_for(base):
                return np.maximum(np.maximum(p["abs_floor_pct"], base * p["baseline_factor"]),
                                  base + p["baseline_margin_pct"])

            mask, bases = above_prior_baseline(s, threshold_for, _hold_samples(s, p["max_gap_samples"]))
            for ep in episodes(s, mask, p["max_gap_samples"], min_duration_seconds=p["min_duration_seconds"]):
                base = float(bases[s.index.get_loc(ep.start)])
                threshold = threshold_for(base)
                sev = severity_for(ep.peak, [(80, "critical"), (40, "high"), (20, "medium")])
                text = (f"%iowait peak {ep.peak:.2f} at {fmt_time(ep.peak_time)} "
                        f"(baseline {base:.2f}); above {threshold:.1f} from {fmt_time(ep.start)} to {fmt_time(ep.end)}")
                metrics = {"peak_iowait_pct": ep.peak, "baseline_iowait_pct": base,
                           "threshold_pct": threshold, "samples": ep.samples}
                refs = {**peak_ref(ep), **onset_ref(s, ep, base)}
                evidence = [metric_evidence(ctx, "cpu", host, ep.peak_time, text)]
                explanation = kb_entry(self.id).get("explanation", "")
                if names is None:
                    names = disk_names(ctx.sources, ctx.host_facts)
                disk = busiest_disk(ctx, host, ep.start, ep.end, names.get(host, {}))
                if disk is not None:
                    dev, when, figures = disk
                    ev, sentence = _disk_evidence(ctx, host, dev, when, figures, names.get(host, {}))
                    metrics.update(_disk_metrics(figures))
                    refs.update({"busiest_disk": dev, "busiest_disk_peak_time": iso(when)})
                    if dev in names.get(host, {}):
                        refs["busiest_disk_name"] = names[host][dev].name
                    evidence.append(ev)
                    explanation = f"{explanation} The busiest disk over the episode was {sentence}."
                out.append(self.finding(
                    title=f"I/O wait spiked to {ep.peak:.2f} % (baseline {base:.2f} %)",
                    severity=sev, start=ep.start, end=ep.end, host=host, metrics=metrics,
                    refs=refs, evidence=evidence, explanation=explanation,
                ))
        return out


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
                "min_duration_seconds": 30.0}

    def run(self, ctx: Context):
        out = []
        for host in ctx.hosts("cpu"):
            idle = ctx.series("cpu", "%idle", device="all", host=host)
            if idle is None:
                continue
            steal = ctx.series("cpu", "%steal", device="all", host=host)
            iowait = ctx.series("cpu", "%iowait", device="all", host=host)
            p = self.params
            # a CPU waiting for I/O is idle as far as work goes: %iowait is
            # the disk's story, not the CPUs'
            spare = idle + iowait.reindex(idle.index).fillna(0) if iowait is not None else idle
            busy = spare <= p["idle_floor_pct"]
            if steal is not None:
                busy |= steal.reindex(idle.index).fillna(0) >= p["steal_pct"]
            for ep in episodes(100 - spare, busy.to_numpy(), p["max_gap_samples"],
                                  min_duration_seconds=p["min_duration_seconds"]):
                if ep.samples < p["min_samples"]:
                    continue
                metrics = {"peak_busy_pct": ep.peak, "samples": ep.samples}
                if steal is not None:
                    w = steal[(steal.index >= ep.start) & (steal.index <= ep.end)]
                    if len(w):
                        metrics["peak_steal_pct"] = float(w.max())
                stolen = metrics.get("peak_steal_pct", 0) >= p["steal_pct"]
                title = (f"CPU lost up to {metrics['peak_steal_pct']:.1f} % to the hypervisor (%steal)" if stolen
                         else f"CPUs saturated: {ep.peak:.1f} % busy")
                sev = "high" if ep.peak >= 99 or stolen else "medium"
                out.append(self.finding(
                    title=title, severity=sev, start=ep.start, end=ep.end, host=host, metrics=metrics,
                    refs=peak_ref(ep), evidence=[metric_evidence(ctx, "cpu", host, ep.peak_time,
                                               f"%idle and %iowait down to {100 - ep.peak:.2f} at {fmt_time(ep.peak_time)}")],
                ))
        return out


class LoadSpike(Detector):
    """Run queue / load average far above the CPU count, a sudden jump from a
    low baseline, or many blocked tasks (sar -q).

    Why it matters: report 002 saw load go 0.8 -> 4 in 13 s as connections
    piled up; blocked tasks point at I/O.
    """

    id = "load-spike"
    summary = "ldavg-1 / runq-sz far above the CPU count or jumping from baseline; blocked tasks"
    inputs = ("metrics",)
    category = "cpu-saturation"
    defaults = {
        "per_cpu_factor": 2.0,     # ldavg-1 above this x CPUs
        "jump_factor": 4.0,        # or this x the host's median load ...
        "jump_min_load": 2.0,      # ... and at least this much
        "blocked_per_cpu": 0.5,    # blocked tasks above this x CPUs ...
        "min_blocked": 4,          # ... and at least this many
        "min_duration_seconds": 0.0,  # ldavg-1 is already a 1-minute average
        "max_gap_samples": 1,
    }

    def run(self, ctx: Context):
        out = []
        for host in ctx.hosts("queue"):
            load = ctx.series("queue", "ldavg-1", host=host)
            if load is None or len(load) < 2:
                continue
            p = self.params
            # each stretch between restarts judged with the CPUs it ran on
            cpus_at = ctx.ncpu_at(host, load.index)
            mask, bases = above_prior_baseline(
                load, lambda b: np.maximum(p["jump_factor"] * np.maximum(b, 0.05), p["jump_min_load"]),
                _hold_samples(load, p["max_gap_samples"]))
            import pandas as pd
            cond = pd.Series(mask, index=load.index)
            if cpus_at is not None:  # without the CPU count only the jump from baseline is meaningful
                cond |= load.to_numpy() >= p["per_cpu_factor"] * np.nan_to_num(cpus_at, nan=np.inf)
            blocked = ctx.series("queue", "blocked", host=host)
            if blocked is not None:
                per_cpu = p["blocked_per_cpu"] * (np.nan_to_num(cpus_at, nan=1.0) if cpus_at is not None else 1.0)
                cond |= blocked.reindex(load.index).fillna(0).to_numpy() >= np.maximum(p["min_blocked"], per_cpu)
            for ep in episodes(load, cond.to_numpy(), p["max_gap_samples"],
                                  min_duration_seconds=p["min_duration_seconds"]):
                base = float(bases[load.index.get_loc(ep.start)])
                where = np.flatnonzero(np.asarray(load.index == ep.peak_time))
                at_peak = cpus_at[where[0]] if cpus_at is not None and len(where) else np.nan
                known_ncpu = None if np.isnan(at_peak) else int(at_peak)
                ncpu = known_ncpu or 1
                metrics = {"peak_ldavg_1": ep.peak, "baseline_ldavg_1": base, "ncpu": known_ncpu}
                runq = ctx.series("queue", "runq-sz", host=host)
                if runq is not None:
                    w = runq[(runq.index >= ep.start) & (runq.index <= ep.end)]
                    if len(w):
                        metrics["peak_runq_sz"] = float(w.max())
                if blocked is not None:
                    w = blocked[(blocked.index >= ep.start) & (blocked.index <= ep.end)]
                    if len(w):
                        metrics["peak_blocked"] = float(w.max())
                ratio = ep.peak / ncpu if known_ncpu else ep.peak / max(base, 0.05) / 4
                sev = severity_for(ratio, [(4, "high"), (1.5, "medium")])
                cpus = f", {known_ncpu} CPUs" if known_ncpu else ""
                out.append(self.finding(
                    title=f"Load average jumped to {ep.peak:.2f} (baseline {base:.2f}{cpus})",
                    severity=sev, start=ep.start, end=ep.end, host=host, metrics=metrics,
                    refs={**peak_ref(ep), **onset_ref(load, ep, base)},
                    evidence=[metric_evidence(ctx, "queue", host, ep.peak_time,
                                               f"ldavg-1 {base:.2f} -> {ep.peak:.2f} at {fmt_time(ep.peak_time)}")],
                ))
        return out


class SarGap(Detector):
    """Holes in the sar sampling much longer than the usual interval.

    Why it matters: sadc runs from cron or a timer; when a host is so loaded it
    cannot run it (report 002's "monitoring gaps"), the gap is itself evidence.
    Restarts (LINUX RESTART) explain a gap and are said so.
    """

    id = "sar-gap"
    summary = "sar sampling stopped for much longer than its usual interval (monitoring stalled)"
    inputs = ("metrics",)
    category = "other"
    defaults = {"factor": 3.0, "min_gap_seconds": 10.0}

    def run(self, ctx: Context):
        out = []
        if not ctx.metrics:
            return out
        for host in ctx.hosts():
            ts = ctx.sample_times(host)
            if len(ts) < 4:
                continue
            deltas = ts.diff().dt.total_seconds().to_numpy()[1:]
            usual = float(np.median(deltas))
            limit = max(self.params["factor"] * usual, self.params["min_gap_seconds"])
            for i in np.flatnonzero(deltas > limit):
                start, end = ts.iloc[i], ts.iloc[i + 1]
                gap = float(deltas[i])
                restarted = self._restart_between(ctx, host, start, end)
                if restarted:
                    continue
                out.append(self.finding(
                    title=f"No sar samples for {gap:.0f} s (usual interval {usual:.0f} s)",
                    # a stall of fast (<= 1 min) sampling is notable; hours
                    # missing from a 10-minute daily file are usually a host
                    # that was off, said at low severity
                    severity="medium" if usual <= 60 and gap >= 10 * usual else "low",
                    start=start, end=end, host=host,
                    metrics={"gap_seconds": gap, "usual_interval_seconds": usual},
                    evidence=[metric_evidence(ctx, "cpu", host, start,
                                               f"samples at {fmt_time(start)} and next at {fmt_time(end)}")],
                ))
        return out

    @staticmethod
    def _restart_between(ctx: Context, host, start, end) -> bool:
        ev = ctx.events_of("sar-restart")
        if ev is None or not len(ev):
            return False
        ts = ev["timestamp"]
        try:
            return bool(((ts >= start) & (ts <= end)).any())
        except TypeError:
            return False

"""I/O wait over sar data (with the busiest disk of an episode), the\nbaselines the metric detectors share, and gaps in the sampling."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from sarsleuth.detectors.bounds import bound_of
from sarsleuth.detectors.figures import Figures, already_above, baseline_at, given, measure, prior_levels
from sarsleuth.detectors.series import episodes, fmt_time, interval_words, onset_ref, peak_ref, severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import metric_evidence
from sarsleuth.metric_store.disk_names import disk_names, labelled
from sarsleuth.knowledge import kb_entry
from sarsleuth.model import Evidence, iso

def above_prior_baseline(series, threshold_for, hold_samples: int, segments):
    """Which samples exceed ``threshold_for(baseline)``, the baseline being
    the usual level before each sample (:func:`~sarsleuth.detectors.figures.prior_levels`:
    the median of the 15 minutes before it in its stretch of records,
    ``segments``) and held fixed from the first sample of an excursion
    until ``hold_samples`` quiet samples end it: an incident never raises
    its own baseline (a burst that fills most of a short recording is
    still measured against what came before it), nor does a gap or a
    restart in it: an excursion still on at the last row of a stretch
    goes on with the same baseline into the next stretch as long as that
    one's rows stay over its threshold (the records stopped during the
    incident and resumed with it; the level they resumed at is no usual
    level).  ``threshold_for`` takes numpy arrays.  Returns (mask,
    baseline per sample, the time each sample's baseline was taken at:
    where its excursion began, for :func:`baseline_at` to say it)."""
    values = series.to_numpy(dtype=float)
    bases = prior_levels(series, segments)
    taken = np.arange(len(values))
    seg = np.asarray(segments)
    with np.errstate(invalid="ignore"):
        mask = values >= threshold_for(bases)
    # walk the excursions only: from each first hit the baseline stays
    # frozen until the series has been quiet for hold_samples samples (or
    # its stretch of records ends)
    i, n = 0, len(values)
    while i < n:
        hits = np.flatnonzero(mask[i:])
        if not len(hits):
            break
        i += int(hits[0])
        frozen, quiet, stretch, began = bases[i], 0, seg[i], i
        while i < n and quiet <= hold_samples:
            if seg[i] != stretch:
                if quiet or not bool(values[i] >= threshold_for(frozen)):
                    break
                stretch = seg[i]
            bases[i], taken[i] = frozen, began
            mask[i] = bool(values[i] >= threshold_for(frozen))
            quiet = 0 if mask[i] else quiet + 1
            i += 1
    return mask, bases, series.index[taken]


def taken_at(taken, series, t):
    """When the baseline of the excursion holding ``t`` was taken (``t``
    itself outside one): :func:`above_prior_baseline`'s third value."""
    pos = min(int(np.searchsorted(series.index, t)), len(series) - 1)
    return min(t, taken[pos])


#: A sample that averages this long or longer is coarse: a burst shorter
#: than its interval is diluted into its mean (a CPU burn at 100 % is a
#: row of 70 % or 86 % at one minute), and a recording of a few minutes
#: holds one or two such rows, no usual level to judge them against.
COARSE_SECONDS = 60.0


#: A stretch of records with fewer rows than this has no usual level.
USUAL_ROWS = 3


def coarse_rows(ctx: Context, series, host, floor: float, margin: float, segments) -> np.ndarray:
    """Which samples show a clear state on their own: samples of a coarse
    interval (:data:`COARSE_SECONDS` or more, sar's row stamped at the end
    of the interval it averages) at ``floor`` or above, and ``margin``
    above the usual level of their stretch of records (``segments``: the
    one before them, else the stretch's own); in a stretch of fewer than
    :data:`USUAL_ROWS` rows (a recording of a few minutes at one row a
    minute) there is none, and a row is judged on ``floor`` alone.  The
    absolute bound of a detector that otherwise wants a baseline of many
    rows."""
    values = series.to_numpy(dtype=float)
    coarse = ctx.row_seconds(series, host) >= COARSE_SECONDS
    if not coarse.any():
        return np.zeros(len(values), dtype=bool)
    prior = prior_levels(series, segments)
    seg = np.asarray(segments)
    _ids, where, counts = np.unique(seg, return_inverse=True, return_counts=True)
    prior[counts[where] < USUAL_ROWS] = np.nan
    with np.errstate(invalid="ignore"):
        over = coarse & (values >= floor)
        mask = over & (np.isnan(prior) | (values >= prior + margin))
    # an excursion never raises its own usual level: the rows after a clear
    # one in its stretch are measured against the level before it
    n, after = len(values), 0
    for i in np.flatnonzero(mask):
        if i < after:
            continue            # already in the run of an earlier clear row
        frozen, j = prior[i], i + 1
        while j < n and seg[j] == seg[i] and over[j] and (np.isnan(frozen) or values[j] >= frozen + margin):
            mask[j] = True
            j += 1
        after = j
    return mask


def busy_part_rows(ctx: Context, busy_series, during, host, seconds, segments, *, floor: float, margin: float,
                   least_seconds: float, while_busy_at_least: float) -> np.ndarray:
    """Coarse rows busy for a part of their interval that was itself
    saturated: ``busy_series`` (a share of the row, %) at ``floor`` or
    more and ``margin`` above its usual level (:func:`coarse_rows`), busy
    ``least_seconds`` or more, and ``during`` (a row's average of what
    only happens while busy: requests in flight, tasks waiting) over the
    busy share at ``while_busy_at_least`` or more."""
    busy = busy_series.to_numpy(dtype=float)
    over = during.reindex(busy_series.index).to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        while_busy = np.where(busy > 0, 100.0 * over / busy, np.nan)
        long_enough = busy / 100.0 * seconds >= least_seconds
        rows = coarse_rows(ctx, busy_series, host, floor, margin, segments)
        return rows & long_enough & (while_busy >= while_busy_at_least)


def without_usual_level(ctx: Context, series, host, segments) -> np.ndarray:
    """Which samples are coarse rows (:data:`COARSE_SECONDS` or more) in a
    stretch of records too short for a usual level (fewer than
    :data:`USUAL_ROWS` rows): nothing before them to compare with, so a
    detector judges them on its absolute bound alone."""
    coarse = ctx.row_seconds(series, host) >= COARSE_SECONDS
    seg = np.asarray(segments)
    if not coarse.any() or not len(seg):
        return np.zeros(len(series), dtype=bool)
    _ids, where, counts = np.unique(seg, return_inverse=True, return_counts=True)
    return coarse & (counts[where] < USUAL_ROWS)


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
        values[bound_of("disk", "%util").outside(values)] = np.nan      # counter anomalies are no peak
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
        if len(at) and not np.isnan(float(run.values[at[0]])) \
                and not bound_of("disk", metric).outside([run.values[at[0]]])[0]:
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


def _disk_figures(ctx: Context, host, dev, when, start, end) -> list:
    """The busiest disk's figures: its %util peak over the episode, and
    the latencies sar gave at that peak."""
    out = [measure(ctx, "busiest_disk_util_pct", "max", host, ("disk", "%util", dev), start, end)]
    out += [measure(ctx, f"busiest_disk_{m}_ms", "at", host, ("disk", m, dev), at=when) for m in DISK_LATENCIES]
    return [f for f in out if f is not None]


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
        names = None
        key = ("cpu", "%iowait", "all")
        for host in ctx.hosts("cpu"):
            s = ctx.series(*key, host=host)
            if s is None:
                continue
            p = self.params

            def threshold_for(base):
                return np.maximum(np.maximum(p["abs_floor_pct"], base * p["baseline_factor"]),
                                  base + p["baseline_margin_pct"])

            segments = ctx.segments(s, host)
            # a row of a minute or more at the floor is a clear state on its own
            coarse = coarse_rows(ctx, s, host, p["abs_floor_pct"], p["baseline_margin_pct"], segments)
            if len(s) < 2 and not coarse.any():
                continue
            mask, _bases, taken = above_prior_baseline(s, threshold_for, _hold_samples(s, p["max_gap_samples"]),
                                                       segments)
            seconds = ctx.row_seconds(s, host)
            for ep in episodes(s, mask | coarse, p["max_gap_samples"], segments=ctx.stretches(s, host)):
                inside = np.asarray((s.index >= ep.start) & (s.index <= ep.end))
                lone = bool(coarse[inside].any())
                if not lone and float(seconds[inside].sum()) < p["min_duration_seconds"]:
                    continue
                figs = Figures()
                peak = figs.add(measure(ctx, "peak_iowait_pct", "max", host, key, ep.start, ep.end))
                base = figs.add(baseline_at(ctx, "baseline_iowait_pct", host, key, s, taken_at(taken, s, ep.start),
                                            segments))
                # the bound the episode crossed: the baseline's, or a coarse
                # row's own (the floor, and the margin over the usual level)
                bound = (threshold_for(base.value) if bool(mask[inside].any()) else
                         max(p["abs_floor_pct"], base.value + p["baseline_margin_pct"]))
                threshold = figs.add(given("threshold_pct", float(bound), origin="threshold", fmt=".1f", host=host))
                figs.add(measure(ctx, "samples", "samples", host, key, ep.start, ep.end, fmt="d"))
                waiting = self._cpus_waiting(ctx, figs, host, key, peak, ep, p["min_duration_seconds"])
                sev = severity_for(peak.value, [(80, "critical"), (40, "high"), (20, "medium")])
                text = (f"%iowait peak {peak.text()} at {fmt_time(peak.at)} (baseline {base.text()}); "
                        f"above {threshold.text()} from {fmt_time(ep.start)} to {fmt_time(ep.end)}")
                refs = {**peak_ref(ep), **onset_ref(s, ep, base.value)}
                if lone:
                    refs["sample_seconds"] = float(seconds[inside].max())
                if "onset" in refs:
                    refs["start_said"] = already_above(ctx, figs, host, key, ep.start, "%iowait", base, " %")
                evidence = [metric_evidence(ctx, "cpu", host, peak.at, text)]
                explanation = kb_entry(self.id).get("explanation", "")
                if names is None:
                    names = disk_names(ctx.sources, ctx.host_facts)
                disk = busiest_disk(ctx, host, ep.start, ep.end, names.get(host, {}))
                if disk is not None:
                    dev, when, at_peak = disk
                    ev, sentence = _disk_evidence(ctx, host, dev, when, at_peak, names.get(host, {}))
                    for fig in _disk_figures(ctx, host, dev, when, ep.start, ep.end):
                        figs.add(fig)
                    # a task waits on I/O in flight on a disk no longer than the
                    # disk has any in flight (%util): a wait longer than that is
                    # on something else (a throttle, a remote filesystem, a lock)
                    figs.add(measure(ctx, "busiest_disk_util_over_iowait", "ratio", host,
                                     of=("busiest_disk_util_pct", "peak_iowait_pct"), known=figs.by_name()))
                    refs.update({"busiest_disk": dev, "busiest_disk_peak_time": iso(when)})
                    if dev in names.get(host, {}):
                        refs["busiest_disk_name"] = names[host][dev].name
                    evidence.append(ev)
                    explanation = f"{explanation} The busiest disk over the episode was {sentence}."
                if waiting is not None and waiting.value <= 1 and "cpu_seconds_waiting" in figs:
                    explanation = (f"{explanation} At its peak the wait was no more than one CPU's share of "
                                   f"the time ({figs['one_cpu_pct'].text()} % of {figs['ncpu'].text()} CPUs): "
                                   "the kernel counts a CPU as waiting for I/O only while a task that last ran "
                                   "on it waits, so one task may have waited alone, on its own reads or writes, "
                                   f"{figs['cpu_seconds_waiting'].text('.1f')} s in all.")
                title = f"I/O wait spiked to {peak.text()} % (baseline {base.text()} %)"
                if lone and base.value >= peak.value:
                    # no row before it to be a usual level: what the row says on its own
                    title = f"I/O wait {peak.text()} % on average over a {interval_words(refs['sample_seconds'])} sample"
                out.append(self.finding(
                    title=title,
                    severity=sev, start=ep.start, end=ep.end, host=host, figures=figs,
                    refs=refs, evidence=evidence, explanation=explanation,
                ))
        return out


    @staticmethod
    def _cpus_waiting(ctx: Context, figs: Figures, host, key, peak, ep, least_seconds: float):
        """How many CPUs' worth of time waited for I/O at the peak: its
        %iowait over one CPU's share of the time (100 % / CPUs); above 1,
        two tasks or more waited at once.  And the CPU-seconds waited over
        the episode (%iowait times each row's seconds, over one CPU's
        share), which no sampling interval changes, and that over the
        detector's least duration (``waited_over_least``)."""
        cpus = figs.add(measure(ctx, "ncpu", "ncpu", host, at=peak.at, fmt=".0f"))
        if cpus is None or not cpus.value:
            return None
        figs.add(given("whole_pct", 100.0, origin="threshold", fmt=".0f", host=host))
        figs.add(measure(ctx, "one_cpu_pct", "ratio", host, of=("whole_pct", "ncpu"), known=figs.by_name(),
                         fmt=".1f"))
        figs.add(measure(ctx, "iowait_pct_seconds", "sum", host, key, ep.start, ep.end, fmt=",.0f"))
        waited = figs.add(measure(ctx, "cpu_seconds_waiting", "ratio", host, of=("iowait_pct_seconds", "one_cpu_pct"),
                                  known=figs.by_name(), fmt=".1f"))
        if waited is not None:
            figs.add(given("least_seconds", float(least_seconds), origin="threshold", fmt=".0f", host=host))
            figs.add(measure(ctx, "waited_over_least", "ratio", host, of=("cpu_seconds_waiting", "least_seconds"),
                             known=figs.by_name()))
        return figs.add(measure(ctx, "cpus_waiting", "ratio", host, of=("peak_iowait_pct", "one_cpu_pct"),
                                known=figs.by_name()))


class SarGap(Detector):
    """Holes in the sar sampling much longer than the usual interval.

    Why it matters: sadc runs from cron or a timer; when a host is so loaded it
    cannot run it (report 002's "monitoring gaps"), the gap is itself evidence.
    Restarts (LINUX RESTART) explain a gap and are said so; rows a paste
    left out (a ``...`` line) are no gap, nor is the time between two
    pastes of different tables, or between two sar commands pasted one
    after the other (two banners of one day).
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
                if self._restart_between(ctx, host, start, end) or not ctx.printed.one_record(host, start, end) \
                        or not ctx.printed.one_invocation(host, start, end):
                    continue        # a restart, or two pastes or commands: no stall of one recording
                figs = Figures()
                hole = figs.add(measure(ctx, "gap_seconds", "elapsed", host, start=start, end=end, fmt=".0f"))
                step = figs.add(measure(ctx, "usual_interval_seconds", "step", host, fmt=".0f"))
                out.append(self.finding(
                    title=f"No sar samples for {hole.text()} s (usual interval {step.text()} s)",
                    # a stall of fast (<= 1 min) sampling is notable; hours
                    # missing from a 10-minute daily file are usually a host
                    # that was off, said at low severity
                    severity="medium" if usual <= 60 and gap >= 10 * usual else "low",
                    start=start, end=end, host=host, figures=figs,
                    evidence=[metric_evidence(ctx, "cpu", host, start,
                                               f"samples at {fmt_time(start)} and next at {fmt_time(end)}")],
                ))
        return out

    @staticmethod
    def _restart_between(ctx: Context, host, start, end) -> bool:
        """A restart between two samples, or rows a paste left out there
        (``...``): no stall of the sampling."""
        ev = ctx.events_of("sar-restart", "sar-elision")
        if ev is None or not len(ev):
            return False
        ts = ev["timestamp"]
        try:
            return bool(((ts >= start) & (ts <= end)).any())
        except TypeError:
            return False

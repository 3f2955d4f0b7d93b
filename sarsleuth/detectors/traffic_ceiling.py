"""A ceiling on an interface's traffic (sar -n DEV), where its speed is unknown.

%ifutil says an interface is full only when sar knows its speed; a
virtual NIC, a bond, loopback, or a link whose bandwidth is cut further on
(a traffic shaper, a provider's allowance, a switch port) reports none, or
reports a speed the path never gives.  What still shows is the shape of a
limit: the traffic rises far above its usual level and then holds flat
there, sample after sample, as if it had hit a wall, while the CPUs and
the disks that could have capped it instead had room.  A load that only
asks for a steady rate (a stream, a paced replication) has the same
shape, so the finding says both and names the level, for the operator to
set beside the link, the shaper and the sender's own settings.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import metric_evidence
from sarsleuth.detectors.figures import Figures, baseline_at, measure
from sarsleuth.detectors.series import episodes, fmt_time, peak_ref

#: sar's kB are KiB: a rate in kB/s as bits a second
BITS_PER_KB = 8 * 1024


class TrafficCeiling(Detector):
    """An interface's traffic held flat far above its usual level, the
    CPUs and the disks with room: a limit on the path, read from the shape.

    Why it matters: everything else sharing the path waits behind the flow
    that fills it (pages, replication, health checks), and nothing on the
    host itself looks busy.
    """

    id = "traffic-ceiling"
    summary = "an interface's traffic held flat far above its usual level while the CPUs and disks had room (a limit on the path)"
    inputs = ("metrics:net-dev",)
    category = "network-saturation"
    defaults = {
        "min_kB_per_s": 1000.0,        # at least this much traffic (8 Mbit/s) ...
        "baseline_factor": 10.0,       # ... and this many times the interface's usual level
        "flat_pct": 5.0,               # samples within this much of the level ...
        "flat_share": 0.9,             # ... this share of them at least
        "min_samples": 5,              # a shape needs samples: a plateau of fewer is a guess
        "min_duration_seconds": 30.0,
        "busy_cpu_pct": 80.0,          # CPUs this busy on average: the CPU was the ceiling
        "busy_disk_pct": 80.0,         # a disk this busy on average: the disk was the ceiling
        "ifutil_pct": 85.0,            # %ifutil this high: nic-saturation tells it with the speed
    }

    def run(self, ctx: Context):
        out = []
        for host in ctx.hosts("net-dev"):
            for iface in ctx.devices("net-dev", "rxkB/s", host=host):
                best = None
                for metric in ("rxkB/s", "txkB/s"):
                    for found in self._plateaus(ctx, host, iface, metric):
                        if best is None or found[0] > best[0]:
                            best = found
                if best is not None:
                    out.append(best[1])
        return out

    def _plateaus(self, ctx: Context, host, iface: str, metric: str):
        p = self.params
        s = ctx.series("net-dev", metric, device=iface, host=host)
        if s is None or len(s) < p["min_samples"]:
            return
        values = s.to_numpy(dtype=float)
        segments = ctx.stretches(s, host)
        key = ("net-dev", metric, iface)
        candidates = np.isfinite(values) & (values >= p["min_kB_per_s"])
        for ep in episodes(s, candidates, 1, min_duration_seconds=p["min_duration_seconds"], segments=segments):
            inside = np.asarray((s.index >= ep.start) & (s.index <= ep.end))
            w = values[inside]
            level = float(np.median(w))
            near = np.abs(w - level) <= level * p["flat_pct"] / 100.0
            # the first and last rows of a plateau hold the rise and the fall
            # for part of their interval: they are its edges, not its level
            lo, hi = 0, len(w)
            if not near[0]:
                lo = 1
            if hi - lo > 1 and not near[-1]:
                hi -= 1
            core = near[lo:hi]
            if len(core) < p["min_samples"] or core.mean() < p["flat_share"]:
                continue
            times = s.index[inside][lo:hi]
            start, end = times[0], times[-1]
            figs = Figures()
            held = figs.add(measure(ctx, "level_kB_per_s", "median", host, key, start, end, fmt=",.0f"))
            usual = figs.add(baseline_at(ctx, "baseline_kB_per_s", host, key, s, start, segments, fmt=",.0f"))
            if held is None or usual is None or held.value < p["baseline_factor"] * max(usual.value, 1.0):
                continue
            if self._full_by_speed(ctx, host, iface, start, end) or _within_a_load_test(ctx, start, end):
                continue
            room = self._room(ctx, host, start, end)
            if room is None:
                continue
            figs.add(room[0])
            figs.add(room[1])
            figs.add(measure(ctx, "peak_kB_per_s", "max", host, key, start, end, fmt=",.0f"))
            figs.add(measure(ctx, "lowest_kB_per_s", "min", host, key, start, end, fmt=",.0f"))
            samples = figs.add(measure(ctx, "samples", "samples", host, key, start, end, fmt="d"))
            mbit = figs.add(measure(ctx, "level_mbit_per_s", "median", host, key, start, end, fmt=",.1f",
                                    scale=BITS_PER_KB / 1e6))
            # the plateau's first row covers the interval before its stamp
            first_row = pd.Timedelta(seconds=float(ctx.row_seconds(s, host)[inside][lo]))
            held_for = figs.add(measure(ctx, "seconds_held", "elapsed", host, key, start - first_row, end,
                                        fmt="elapsed"))
            times_usual = ""
            if usual.value >= 1.0:
                ratio = figs.add(measure(ctx, "level_over_baseline", "ratio", host, of=(held.name, usual.name),
                                         known=figs.by_name(), fmt=",.0f"))
                times_usual = f"{ratio.text()} times its usual {usual.text()} kB/s"
            else:
                times_usual = f"from under 1 kB/s ({usual.text()}) before"
            direction = "received" if metric == "rxkB/s" else "sent"
            title = (f"{iface} {direction} traffic held at {held.text()} kB/s ({mbit.text()} Mbit/s) for "
                     f"{held_for.text()}, {times_usual}, while the CPUs and disks had room{room[2]}: a limit on "
                     f"the path (the link, a shaper, or the sender's own rate)")
            peak = figs["peak_kB_per_s"]
            text = (f"{iface} {metric} {held.text()} median over {int(samples.value)} samples from {fmt_time(start)} "
                    f"to {fmt_time(end)}, between {figs['lowest_kB_per_s'].text()} and {peak.text()}; "
                    f"{usual.text()} before")
            ep_refs = peak_ref(ep)
            ep_refs.update(device=iface, metric=metric)
            yield held.value, self.finding(
                title=title, severity="medium", start=start, end=end, host=host, figures=figs, refs=ep_refs,
                evidence=[metric_evidence(ctx, "net-dev", host, peak.at, text, device=iface, metric=metric)])

    def _room(self, ctx: Context, host, start, end):
        """(CPU figure, disk figure, how the title says them) when neither
        the CPUs nor any disk was busy enough over the plateau to be what
        held the traffic there, else None.  A host sar gave no CPU or disk
        figures for has nothing to say against the path."""
        p = self.params
        cpu = measure(ctx, "cpu_busy_pct", "mean", host, ("cpu", "%busy", "all"), start, end, fmt=".1f")
        if cpu is not None and cpu.value >= p["busy_cpu_pct"]:
            return None
        disk = None
        for dev in ctx.devices("disk", "%util", host):
            fig = measure(ctx, "busiest_disk_util_pct", "mean", host, ("disk", "%util", dev), start, end, fmt=".1f")
            if fig is not None and (disk is None or fig.value > disk.value):
                disk = fig
        if disk is not None and disk.value >= p["busy_disk_pct"]:
            return None
        said = ([f"CPUs {cpu.text()} % busy"] if cpu is not None else []) + \
               ([f"busiest disk {disk.text()} %util"] if disk is not None else [])
        return cpu, disk, f" ({', '.join(said)} on average)" if said else ""

    def _full_by_speed(self, ctx: Context, host, iface: str, start, end) -> bool:
        """nic-saturation's stretch: the interface full by its known speed."""
        peak = measure(ctx, "peak_ifutil_pct", "max", host, ("net-dev", "%ifutil", iface), start, end)
        return peak is not None and peak.value >= self.params["ifutil_pct"]


def _within_a_load_test(ctx: Context, start, end) -> bool:
    """Does a load test's run cover most of the plateau?  Its traffic is the
    test's own doing, paced by the generator or bound by its CPU
    (``loadtest-link-saturation`` judges it against the link)."""
    for r in ctx.reports:
        a, b = r.get("start"), r.get("end")
        if a is None or b is None:
            continue
        try:
            lo, hi = max(pd.Timestamp(a), pd.Timestamp(start)), min(pd.Timestamp(b), pd.Timestamp(end))
            span = (pd.Timestamp(end) - pd.Timestamp(start)).total_seconds()
        except (TypeError, ValueError):
            continue
        if hi > lo and (hi - lo).total_seconds() >= 0.5 * max(span, 1.0):
            return True
    return False

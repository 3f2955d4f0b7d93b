"""Per-device storage saturation (sar -d).

A disk is saturated when it is busy nearly all the time (%util) far above
its own usual level, and requests queue on it: the queue (aqu-sz) or the
time a request takes (await) grows well past what the same device showed
before.  %util alone is not enough on devices that serve requests in
parallel (NVMe, virtio, RAID): they can be 100 % "busy" with room to spare,
so the latency and the queue decide the severity.
"""
from __future__ import annotations

import numpy as np

from sarsleuth.detectors.series import episodes, fmt_time, onset_ref, peak_ref
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import metric_evidence
from sarsleuth.detectors.cpu_io import DISK_LATENCIES, _hold_samples, above_prior_baseline
from sarsleuth.metric_store.disk_names import disk_names, labelled


class DiskSaturation(Detector):
    """One disk busy almost all the time, far above its own baseline, with
    requests queueing (aqu-sz) or waiting (await) much longer than before.

    Why it matters: every process that reads or writes that device waits
    (I/O wait, blocked tasks, D state); fsync-heavy writers and swap make
    it worse.  Named per device, so the story says which disk it was.
    """

    id = "disk-saturation"
    summary = "a disk busy (%util) far above its own baseline, with its queue (aqu-sz) or latency (await) up"
    inputs = ("metrics:disk",)
    category = "io-saturation"
    defaults = {
        "util_floor_pct": 80.0,        # %util at least this ...
        "util_margin_pct": 30.0,       # ... and this much above the device's usual %util
        "latency_factor": 3.0,         # await this many times its usual value: requests wait
        "queue_floor": 1.0,            # or this many requests queued on average
        "max_gap_samples": 1,
        "min_duration_seconds": 20.0,  # a burst of a few seconds is a busy disk, not a saturated one
    }

    def run(self, ctx: Context):
        out = []
        names = None
        p = self.params
        for host in ctx.hosts("disk"):
            for dev in ctx.devices("disk", "%util", host):
                util = ctx.series("disk", "%util", device=dev, host=host)
                if util is None or len(util) < 3:
                    continue

                def threshold_for(base):
                    return np.maximum(p["util_floor_pct"], base + p["util_margin_pct"])

                mask, bases = above_prior_baseline(util, threshold_for, _hold_samples(util, p["max_gap_samples"]))
                for ep in episodes(util, mask, p["max_gap_samples"], min_duration_seconds=p["min_duration_seconds"]):
                    base = float(bases[util.index.get_loc(ep.start)])
                    figures = self._figures(ctx, host, dev, ep, util)
                    waits = figures.get("latency_factor", 0) >= p["latency_factor"]
                    queued = figures.get("peak_aqu_sz", 0) >= p["queue_floor"]
                    if not (waits or queued):
                        continue      # busy but serving in parallel: not a bottleneck
                    if names is None:
                        names = disk_names(ctx.sources, ctx.host_facts)
                    label = labelled(dev, names.get(host, {}))
                    sev = "high" if ep.peak >= 95 and (waits and queued) else "medium"
                    parts = [f"%util {ep.peak:.2f} %"]
                    if "peak_await_ms" in figures:
                        usual = figures.get("baseline_await_ms")
                        parts.append(f"{figures['latency_metric']} {figures['peak_await_ms']:.2f} ms"
                                     + (f" (usual {usual:.2f} ms)" if usual is not None else ""))
                    if "peak_aqu_sz" in figures:
                        parts.append(f"aqu-sz {figures['peak_aqu_sz']:.2f}")
                    text = f"{label} " + ", ".join(parts) + f" at {fmt_time(ep.peak_time)}"
                    metrics = {"peak_util_pct": ep.peak, "baseline_util_pct": base, "samples": ep.samples,
                               **{k: v for k, v in figures.items() if isinstance(v, float)}}
                    refs = {**peak_ref(ep), **onset_ref(util, ep, base), "device": dev, "device_label": label}
                    named = names.get(host, {}).get(dev)
                    if named is not None:
                        refs["device_name"] = named.name
                    out.append(self.finding(
                        title=f"Disk {label} saturated: " + ", ".join(parts),
                        severity=sev, start=ep.start, end=ep.end, host=host, metrics=metrics, refs=refs,
                        evidence=[metric_evidence(ctx, "disk", host, ep.peak_time, text, device=dev, metric="%util")],
                    ))
        return out

    @staticmethod
    def _figures(ctx: Context, host, dev, ep, util) -> dict:
        """The queue and the latency during the episode against the
        device's own level before it."""
        out: dict = {}
        before = util.index < ep.start
        inside = (util.index >= ep.start) & (util.index <= ep.end)
        aqu = None
        for name in ("aqu-sz", "avgqu-sz"):
            aqu = ctx.series("disk", name, device=dev, host=host)
            if aqu is not None:
                break
        if aqu is not None:
            w = aqu.reindex(util.index)[inside].dropna()
            if len(w):
                out["peak_aqu_sz"] = float(w.max())
        for name in DISK_LATENCIES:
            lat = ctx.series("disk", name, device=dev, host=host)
            if lat is None:
                continue
            lat = lat.reindex(util.index)
            w, prior = lat[inside].dropna(), lat[before].dropna()
            if not len(w):
                continue
            peak = float(w.median())     # sustained latency, not one slow sample
            if peak <= out.get("peak_await_ms", -1):
                continue
            out["peak_await_ms"], out["latency_metric"] = peak, name
            out.pop("baseline_await_ms", None)
            out.pop("latency_factor", None)
            if len(prior):     # a recording that starts inside the episode has no usual level
                usual = max(float(prior.median()), 0.1)
                out["baseline_await_ms"] = usual
                out["latency_factor"] = peak / usual
        return out

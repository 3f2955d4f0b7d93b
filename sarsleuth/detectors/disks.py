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

from sarsleuth.detectors.figures import Figure, Figures, already_above, baseline_at, first_of, measure
from sarsleuth.detectors.series import episodes, fmt_time, interval_words, onset_ref, peak_ref
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import metric_evidence
from sarsleuth.detectors.cpu_io import (DISK_LATENCIES, _hold_samples, above_prior_baseline, busy_part_rows, coarse_rows,
                                        taken_at)
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
        "stall_await_ms": 1000.0,      # ... and a median await this long is high whatever %util says
        "queue_floor": 1.0,            # or this many requests queued on average
        "max_gap_samples": 1,
        "min_duration_seconds": 20.0,  # a burst of a few seconds is a busy disk, not a saturated one
        # a row averaging a minute or more: busy half of it or more, with requests queued
        "coarse_util_pct": 50.0,
        # ... or busy a part of it (this share, and min_duration_seconds or longer) with this
        # many requests in flight, on average, while it was busy: a saturated stretch shorter
        # than the row, averaged in with the idle rest
        "coarse_part_util_pct": 25.0,
        "coarse_in_flight": 4.0,
    }

    def run(self, ctx: Context):
        out = []
        names = None
        p = self.params
        for host in ctx.hosts("disk"):
            for dev in ctx.devices("disk", "%util", host):
                util = ctx.series("disk", "%util", device=dev, host=host)
                if util is None:
                    continue

                def threshold_for(base):
                    return np.maximum(p["util_floor_pct"], base + p["util_margin_pct"])

                segments = ctx.segments(util, host)
                seconds = ctx.row_seconds(util, host)
                coarse = coarse_rows(ctx, util, host, p["coarse_util_pct"], p["util_margin_pct"], segments)
                part = self._queued_part(ctx, host, dev, util, seconds, segments) & ~coarse
                coarse |= part
                if len(util) < 3 and not coarse.any():
                    continue
                mask, _bases, taken = above_prior_baseline(util, threshold_for,
                                                           _hold_samples(util, p["max_gap_samples"]), segments)
                for ep in episodes(util, mask | coarse, p["max_gap_samples"], segments=ctx.stretches(util, host)):
                    inside = np.asarray((util.index >= ep.start) & (util.index <= ep.end))
                    lone = bool(coarse[inside].any())
                    if not lone and float(seconds[inside].sum()) < p["min_duration_seconds"]:
                        continue
                    figs = self._figures(ctx, host, dev, ep, util, segments, taken_at(taken, util, ep.start))
                    median, usual = figs.get("median_await_ms"), figs.get("baseline_await_ms")
                    # sustained latency (the median, not one slow sample) against the usual
                    waits = median is not None and usual is not None and \
                        median.value >= p["latency_factor"] * max(usual.value, 0.1)
                    queued = "peak_aqu_sz" in figs and figs["peak_aqu_sz"].value >= p["queue_floor"]
                    if not (waits or queued):
                        continue      # busy but serving in parallel: not a bottleneck
                    if names is None:
                        names = disk_names(ctx.sources, ctx.host_facts)
                    label = labelled(dev, names.get(host, {}))
                    peak = figs["peak_util_pct"]
                    # a typical request waiting a second or more stalls whatever touches the disk, busy or not
                    stalled = median is not None and median.value >= p["stall_await_ms"]
                    sev = "high" if (peak.value >= 95 and (waits and queued)) or (waits and stalled) else "medium"
                    parts = [f"%util {peak.text()} %"]
                    in_flight = (self._in_flight_while_busy(figs, host)
                                 if part[np.asarray(util.index == peak.at)].any() else None)
                    if in_flight is not None:
                        # what the row says: a saturated stretch averaged in with the idle rest
                        step = float(seconds[inside].max())
                        parts = [f"busy {peak.text()} % of a {interval_words(step)} sample with "
                                 f"{in_flight.text()} requests in flight while busy"]
                    if "peak_await_ms" in figs:
                        parts.append(f"{figs['peak_await_ms'].series[1]} up to {figs['peak_await_ms'].text()} ms"
                                     + (f" (usual {usual.text()} ms)" if usual is not None else ""))
                    if "peak_aqu_sz" in figs:
                        parts.append(f"aqu-sz up to {figs['peak_aqu_sz'].text()}")
                    at_peak = [f"{f.series[1]} {f.text()}{' ms' if f.series[1] in DISK_LATENCIES else ''}"
                               for f in figs.items if f.stat == "at"]
                    text = f"{label} at {fmt_time(peak.at)}, its %util peak: " + ", ".join([f"%util {peak.text()}"] + at_peak)
                    refs = {**peak_ref(ep), **onset_ref(util, ep, figs["baseline_util_pct"].value),
                            "device": dev, "device_label": label}
                    if lone:
                        refs["sample_seconds"] = float(seconds[inside].max())
                    if "onset" in refs:
                        refs["start_said"] = already_above(ctx, figs, host, ("disk", "%util", dev), ep.start,
                                                           f"{label} %util", figs["baseline_util_pct"], " %")
                    named = names.get(host, {}).get(dev)
                    if named is not None:
                        refs["device_name"] = named.name
                    out.append(self.finding(
                        title=f"Disk {label} saturated: " + ", ".join(parts),
                        severity=sev, start=ep.start, end=ep.end, host=host, refs=refs, figures=figs,
                        evidence=[metric_evidence(ctx, "disk", host, peak.at, text, device=dev, metric="%util")],
                    ))
        return out

    @staticmethod
    def _figures(ctx: Context, host, dev, ep, util, segments, based) -> Figures:
        """%util over the episode against its usual level, and the queue
        and the latency during it against the device's own level before
        it; the queue and the latency sar gave at %util's peak."""
        figs = Figures()
        key = ("disk", "%util", dev)
        peak = figs.add(measure(ctx, "peak_util_pct", "max", host, key, ep.start, ep.end))
        figs.add(baseline_at(ctx, "baseline_util_pct", host, key, util, based, segments))
        figs.add(measure(ctx, "samples", "samples", host, key, ep.start, ep.end, fmt="d"))
        aqu_key, aqu = first_of(ctx, host, "disk", ("aqu-sz", "avgqu-sz"), dev)
        if aqu is not None:
            figs.add(measure(ctx, "peak_aqu_sz", "max", host, aqu_key, ep.start, ep.end))
        # the latency sar printed that rose most: await, else r_await or w_await
        best = None
        for name in DISK_LATENCIES:
            lat = ctx.series("disk", name, device=dev, host=host)
            if lat is None:
                continue
            lat_key = ("disk", name, dev)
            median = measure(ctx, "median_await_ms", "median", host, lat_key, ep.start, ep.end)
            if median is None or (best is not None and median.value <= best[0].value):
                continue
            # a recording that starts inside the episode has no usual level
            usual = baseline_at(ctx, "baseline_await_ms", host, lat_key, lat, ep.start, ctx.segments(lat, host),
                                fallback=False)
            best = (median, usual, measure(ctx, "peak_await_ms", "max", host, lat_key, ep.start, ep.end))
        if best is not None:
            for fig in best:
                figs.add(fig)
        for fig in (figs.get("peak_aqu_sz"), best[2] if best else None):
            if fig is not None and peak is not None:
                name = "aqu_sz_at_util_peak" if fig.name == "peak_aqu_sz" else "await_at_util_peak_ms"
                figs.add(measure(ctx, name, "at", host, fig.series, at=peak.at))
        return figs

    @staticmethod
    def _in_flight_while_busy(figs: Figures, host):
        """The requests in flight while the disk was busy, in its %util peak's
        row: aqu-sz averages them over the whole row, %util is the share of
        the row it was busy."""
        queue, peak = figs.get("aqu_sz_at_util_peak"), figs.get("peak_util_pct")
        if queue is None or peak is None or not peak.value:
            return None
        return figs.add(Figure(name="in_flight_while_busy", stat="ratio", value=100.0 * queue.value / peak.value,
                               host=host, of=(queue.name, peak.name), factor=100.0))

    def _queued_part(self, ctx: Context, host, dev, util, seconds, segments) -> np.ndarray:
        """Coarse rows in which the disk was saturated for a part of the
        interval: busy ``coarse_part_util_pct`` of it or more (and at least
        ``min_duration_seconds``), far above its usual level, with
        ``coarse_in_flight`` requests or more in flight while it was busy.
        aqu-sz is the requests in flight averaged over the row, %util the
        share of the row the disk had one or more: aqu-sz / (%util / 100)
        is how many it had while busy.  A disk serving one request at a
        time all the row long and one saturated half of it both read about
        50 %; the queue tells them apart."""
        p = self.params
        _key, aqu = first_of(ctx, host, "disk", ("aqu-sz", "avgqu-sz"), dev)
        if aqu is None:
            return np.zeros(len(util), dtype=bool)
        return busy_part_rows(ctx, util, aqu, host, seconds, segments, floor=p["coarse_part_util_pct"],
                              margin=p["util_margin_pct"], least_seconds=p["min_duration_seconds"],
                              while_busy_at_least=p["coarse_in_flight"])

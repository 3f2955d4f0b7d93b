"""UDP datagrams the kernel received and could not deliver (sar -n UDP, UDP6).

UDP has no retransmission: a datagram the receiving host drops is gone
(a metric, a log line, a DNS answer, a media frame), and no log line says
so.  sar counts two ways of losing them on receipt:

- ``idgmerr/s`` (InErrors): the receiving socket's buffer was full (its
  program read too slowly, or stopped reading) or the checksum was bad;
- ``noport/s`` (NoPorts): the datagram was for a port nothing listened on
  (the receiver was gone, its senders still sending).

Each is judged against the host's own usual rate before it, as the share
of the datagrams arriving (delivered and not): a host that drops a few
DNS replies now and then is not losing its metrics.
"""
from __future__ import annotations

import numpy as np

from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.cpu_io import without_usual_level
from sarsleuth.detectors.evidence import metric_evidence
from sarsleuth.detectors.figures import Figures, baseline_at, measure, prior_levels
from sarsleuth.detectors.series import episodes, fmt_time, onset_ref, peak_ref, severity_for

#: (section, what was lost, the delivered datagrams' metric): IPv4 and IPv6 as sar names them
FAMILIES = (("net-udp", "idgmerr/s", "noport/s", "idgm/s"), ("net-udp6", "idgmerr6/s", "noport6/s", "idgm6/s"))
#: What each way of losing them says
LOST = {"errors": "UDP datagrams dropped on receipt (receive buffer full or bad checksum)",
        "noport": "UDP datagrams to a port nothing listened on"}


class UdpDrops(Detector):
    """UDP datagrams dropped on receipt, far above the host's usual rate
    and a share of those arriving.

    Why it matters: UDP is never sent again; metrics, logs, DNS answers or
    media frames the receiver could not take are lost without a trace in
    any log, while the sender sees nothing wrong.
    """

    id = "udp-drops"
    summary = "UDP datagrams dropped on receipt (full receive buffers, or no listener on the port) far above the usual rate"
    inputs = ("metrics:net-udp",)
    category = "network-failure"
    defaults = {
        "min_per_s": 5.0,            # datagrams lost a second, at least ...
        "min_share_pct": 1.0,        # ... this share of those arriving ...
        "baseline_factor": 10.0,     # ... and this many times the usual rate
        "max_gap_samples": 3,
        "min_duration_seconds": 15.0,
    }

    def run(self, ctx: Context):
        out = []
        for section, errors, noport, delivered in FAMILIES:
            for host in ctx.hosts(section):
                got = ctx.series(section, delivered, host=host)
                for way, metric in (("errors", errors), ("noport", noport)):
                    lost = ctx.series(section, metric, host=host)
                    if lost is None or got is None or len(lost) < 2:
                        continue
                    out.extend(self._episodes(ctx, host, section, metric, delivered, way, lost,
                                              got.reindex(lost.index)))
        return out

    def _episodes(self, ctx: Context, host, section: str, metric: str, delivered: str, way: str, lost, got):
        p = self.params
        segments = ctx.segments(lost, host)
        usual = prior_levels(lost, segments)
        lone = without_usual_level(ctx, lost, host, segments)
        usual[lone] = 0.0          # a row with no row before it: the absolute bounds alone
        arriving = (lost + got.fillna(0.0)).to_numpy(dtype=float)
        values = lost.to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(arriving > 0, 100.0 * values / arriving, 0.0)
        threshold = np.maximum(p["min_per_s"], p["baseline_factor"] * np.nan_to_num(usual))
        mask = _held(values >= threshold, values, threshold, share >= p["min_share_pct"])
        seconds = ctx.row_seconds(lost, host)
        key, key_got = (section, metric, ""), (section, delivered, "")
        out = []
        for ep in episodes(lost, mask, p["max_gap_samples"], segments=ctx.stretches(lost, host)):
            inside = np.asarray((lost.index >= ep.start) & (lost.index <= ep.end))
            # the seconds the rows cover: one row of a minute is a minute of drops
            if float(np.nansum(seconds[inside])) < p["min_duration_seconds"]:
                continue
            figs = Figures()
            rate = figs.add(measure(ctx, "dropped_per_s", "mean", host, key, ep.start, ep.end, fmt=",.1f"))
            figs.add(measure(ctx, "peak_dropped_per_s", "max", host, key, ep.start, ep.end, fmt=",.1f"))
            dropped = figs.add(measure(ctx, "dropped", "sum", host, key, ep.start, ep.end, fmt=",.0f"))
            taken = figs.add(measure(ctx, "delivered", "sum", host, key_got, ep.start, ep.end, fmt=",.0f"))
            figs.add(measure(ctx, "dropped_per_delivered", "ratio", host, of=("dropped", "delivered"),
                             known=figs.by_name()))
            base = None if lone[inside].any() else figs.add(
                baseline_at(ctx, "baseline_dropped_per_s", host, key, lost, ep.start, segments))
            lost_share = 100.0 * dropped.value / (dropped.value + taken.value) if taken and dropped.value else 100.0
            # half of what arrived lost is a receiver that no longer keeps up at all
            sev = severity_for(lost_share, [(50.0, "high"), (5.0, "medium")], default="low")
            before = f"usual {base.text()}/s" if base is not None else "no sample before it to compare"
            title = (f"{LOST[way]}: {rate.text()}/s ({before}), {dropped.text()} lost while "
                     f"{taken.text() if taken else 0} were delivered")
            text = (f"{metric} {rate.text()} on average from {fmt_time(ep.start)} to {fmt_time(ep.end)}, "
                    f"peak {figs['peak_dropped_per_s'].text()} at {fmt_time(ep.peak_time)}")
            refs = {**peak_ref(ep), **onset_ref(lost, ep, base.value if base is not None else 0.0), "lost": way}
            if lone[inside].any():
                refs["sample_seconds"] = float(np.nanmax(seconds[inside]))
            out.append(self.finding(title=title, severity=sev, start=ep.start, end=ep.end, host=host, figures=figs,
                                    refs=refs, evidence=[metric_evidence(ctx, section, host, ep.peak_time, text)]))
        return out


def _held(mask, values, threshold, shared) -> np.ndarray:
    """``mask`` with each run carried on while the drops stay above the
    threshold of its first row: an episode in progress is no usual level
    of its own (rows of a minute put its first rows in the median of the
    quarter hour before its last ones)."""
    out = mask & shared
    starts = np.flatnonzero(out & ~np.concatenate(([False], out[:-1])))
    i = -1
    for first in starts:
        if first <= i:
            continue            # inside the run carried on before it
        i = first
        while i + 1 < len(out) and (out[i + 1] or (shared[i + 1] and values[i + 1] >= threshold[first])):
            out[i + 1] = True
            i += 1
    return out

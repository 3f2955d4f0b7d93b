"""TCP retransmissions (sar -n ETCP, -n TCP): packets lost on the way.

A retransmitted segment is one TCP sent again because it was not
acknowledged in time: the path lost it (a congested or faulty link, a
firewall or qdisc dropping, a peer's full queue).  Each one costs at least
the retransmission timeout (200 ms on Linux), so a little loss makes a long
tail of slow requests.  Measured as a share of the segments sent, against
the host's own usual share; a row of a minute or more with no row before it
(a recording of a few minutes sampled every minute) has no usual share, and
is judged on the absolute share alone.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sarsleuth.detectors.figures import Figures, baseline_at, measure, prior_levels, series_of
from sarsleuth.detectors.series import episodes, fmt_time, onset_ref, peak_ref, severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.cpu_io import without_usual_level
from sarsleuth.detectors.evidence import metric_evidence
from sarsleuth.model import iso

#: How sysstat names retransmitted segments: retrans/s, retrseg/s in 12.7.6.
RETRANS_METRICS = ("retrans/s", "retrseg/s")
#: The share of segments sent again, sample by sample (figures.DERIVED): its usual level.
SHARE = ("net-etcp", "%retrans", "")


class TcpRetransmits(Detector):
    """Retransmitted TCP segments well above the host's usual share of the
    segments it sends.

    Why it matters: lost packets cost a retransmission timeout each; a
    loss of a few per cent turns into a long latency tail, timeouts and
    failed requests while the servers themselves look idle.
    """

    id = "tcp-retransmits"
    summary = "TCP segments retransmitted far above the host's usual share of segments sent (packet loss)"
    inputs = ("metrics:net-etcp",)
    category = "network-failure"
    defaults = {
        "min_share_pct": 0.2,        # retransmitted / sent, at least this ...
        "baseline_factor": 5.0,      # ... and this many times the usual share
        "min_per_s": 0.5,            # and this many retransmissions a second
        "smooth_seconds": 5.0,       # loss is bursty: shares over this window in 1-second data
        "max_gap_samples": 3,
        "min_duration_seconds": 15.0,
    }

    def run(self, ctx: Context):
        out = []
        p = self.params
        for host in ctx.hosts("net-etcp"):
            retrans_name, retrans = next(((m, s) for m, s in ((m, ctx.series("net-etcp", m, host=host))
                                                             for m in RETRANS_METRICS) if s is not None), (None, None))
            sent = ctx.series("net-tcp", "oseg/s", host=host)
            if retrans is None or sent is None or not len(retrans):
                continue
            # rows with nothing before them to compare with: the absolute share alone
            lone = without_usual_level(ctx, retrans, host, ctx.segments(retrans, host))
            if len(retrans) < 3 and not lone.any():
                continue
            sent = sent.reindex(retrans.index)
            seconds = ctx.row_seconds(retrans, host)
            step = float(np.nanmedian(seconds)) if np.isfinite(seconds).any() else 1.0
            window = max(1, int(round(p["smooth_seconds"] / (step or 1.0))))
            # centred: a trailing window would date the loss late
            r_sum = retrans.rolling(window, min_periods=1, center=True).sum()
            s_sum = sent.rolling(window, min_periods=1, center=True).sum()
            share = (100.0 * r_sum / s_sum.where(s_sum > 0)).fillna(0.0)
            rate = r_sum / window
            prior = pd.Series(prior_levels(share, ctx.segments(share, host)), index=share.index)
            threshold = np.maximum(p["min_share_pct"], prior * p["baseline_factor"])
            threshold[lone] = p["min_share_pct"]
            # a host that retransmitted nothing before: a steady rate is loss
            # at any share (a busy host's few lost segments are a small share
            # of what it sends, the more so in a row of minutes)
            threshold[_first_loss(retrans, rate, ctx.stretches(retrans, host), p["min_per_s"])] = 0.0
            mask = (share >= threshold) & (rate >= p["min_per_s"])
            key_r = ("net-etcp", retrans_name, "")
            key_s = ("net-tcp", "oseg/s", "")
            for ep in episodes(share, mask.to_numpy(), p["max_gap_samples"], segments=ctx.stretches(share, host)):
                inside = np.asarray((share.index >= ep.start) & (share.index <= ep.end))
                # the seconds the rows cover: one row of a minute is a minute of loss
                if float(np.nansum(seconds[inside])) < p["min_duration_seconds"]:
                    continue
                figs = Figures()
                mean_share = figs.add(measure(ctx, "retrans_share_pct", "share", host, key_r, ep.start, ep.end,
                                              per=key_s))
                figs.add(measure(ctx, "retransmitted", "sum", host, key_r, ep.start, ep.end, fmt=",.0f"))
                figs.add(measure(ctx, "segments_sent", "sum", host, key_s, ep.start, ep.end, fmt=",.0f"))
                rate = figs.add(measure(ctx, "retransmitted_per_s", "mean", host, key_r, ep.start, ep.end, fmt=".1f"))
                per_sample = series_of(ctx, host, SHARE)
                base = figs.add(baseline_at(ctx, "baseline_retrans_share_pct", host, SHARE, per_sample, ep.start,
                                            ctx.segments(per_sample, host), fallback=False)
                                if per_sample is not None and len(per_sample) else None)
                # each loss costs a retransmission timeout: half a per cent
                # of segments is a tail every user feels
                sev = severity_for(mean_share.value, [(5.0, "high"), (0.5, "medium")], default="low")
                if lone[inside].any():
                    # a row averaging its whole interval: no usual share before it to compare with
                    base = None
                usual = f"usual {base.text()} %" if base is not None else "no sample before it to compare"
                title = f"TCP retransmissions at {mean_share.text()} % of segments sent ({rate.text()}/s; {usual})"
                text = (f"retransmitted {figs['retransmitted'].text()} of {figs['segments_sent'].text()} segments "
                        f"sent from {fmt_time(ep.start)} to {fmt_time(ep.end)} ({mean_share.text()} %)")
                refs = {**peak_ref(ep), **onset_ref(share, ep, base.value if base else 0.0)}
                first = _first_raw(retrans, sent, threshold, ep)
                if first is not None and first > pd.Timestamp(refs.get("onset", ep.start)):
                    # the centred shares rise up to half a window before the
                    # first retransmission: the loss is dated by the samples
                    refs["onset"] = iso(first)
                if lone[inside].any():
                    refs["sample_seconds"] = float(np.nanmax(seconds[inside]))
                out.append(self.finding(
                    title=title, severity=sev, start=ep.start, end=ep.end, host=host, figures=figs,
                    refs=refs,
                    evidence=[metric_evidence(ctx, "net-etcp", host, ep.peak_time, text)],
                ))
        return out


def _first_loss(retrans, rate, stretches, min_per_s: float) -> np.ndarray:
    """Which rows are a stretch's first retransmissions after rows that
    retransmitted nothing: from its first retransmitted segment, the run
    at ``min_per_s`` or more.  Nothing where the stretch begins
    retransmitting, or never does."""
    out = np.zeros(len(retrans), dtype=bool)
    raw = retrans.fillna(0.0).to_numpy(dtype=float)
    steady = (rate >= min_per_s).to_numpy()
    seg = np.asarray(stretches)
    for sid in np.unique(seg):
        at = np.flatnonzero(seg == sid)
        lost = np.flatnonzero(raw[at] > 0)
        if not len(lost) or lost[0] == 0:
            continue
        run = steady[at[lost[0]:]]
        last = lost[0] + (int(np.argmin(run)) if not run.all() else len(run))
        # to its last retransmitted segment (the centred rate stays up a little after it)
        lost = lost[lost < last]
        if len(lost):
            out[at[lost[0]:lost[-1] + 1]] = True
    return out


def _first_raw(retrans, sent, threshold, ep):
    """The first sample of an episode whose own share of the segments sent
    reaches the threshold (the shares the episode was found on are summed
    over a few samples), or None."""
    inside = (retrans.index >= ep.start) & (retrans.index <= ep.end)
    own = (100.0 * retrans / sent.where(sent > 0)).fillna(0.0)
    hits = own[inside & (own >= threshold).to_numpy() & (retrans > 0).to_numpy()]
    return hits.index[0] if len(hits) else None

"""TCP retransmissions (sar -n ETCP, -n TCP): packets lost on the way.

A retransmitted segment is one TCP sent again because it was not
acknowledged in time: the path lost it (a congested or faulty link, a
firewall or qdisc dropping, a peer's full queue).  Each one costs at least
the retransmission timeout (200 ms on Linux), so a little loss makes a long
tail of slow requests.  Measured as a share of the segments sent, against
the host's own usual share.
"""
from __future__ import annotations

import numpy as np

from sarsleuth.detectors.series import episodes, fmt_time, onset_ref, peak_ref, severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import metric_evidence

#: How sysstat names retransmitted segments: retrans/s, retrseg/s in 12.7.6.
RETRANS_METRICS = ("retrans/s", "retrseg/s")


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
            retrans = next((s for s in (ctx.series("net-etcp", m, host=host) for m in RETRANS_METRICS)
                            if s is not None), None)
            sent = ctx.series("net-tcp", "oseg/s", host=host)
            if retrans is None or sent is None or len(retrans) < 3:
                continue
            sent = sent.reindex(retrans.index)
            step = float(np.median(np.diff(retrans.index.asi8))) / 1e9 or 1.0
            window = max(1, int(round(p["smooth_seconds"] / step)))
            # centred: a trailing window would date the loss late
            r_sum = retrans.rolling(window, min_periods=1, center=True).sum()
            s_sum = sent.rolling(window, min_periods=1, center=True).sum()
            share = (100.0 * r_sum / s_sum.where(s_sum > 0)).fillna(0.0)
            rate = r_sum / window
            prior = share.rolling("15min", closed="left", min_periods=1).median().fillna(share.quantile(0.25))
            threshold = np.maximum(p["min_share_pct"], prior * p["baseline_factor"])
            mask = (share >= threshold) & (rate >= p["min_per_s"])
            for ep in episodes(share, mask.to_numpy(), p["max_gap_samples"],
                               min_duration_seconds=p["min_duration_seconds"]):
                inside = (retrans.index >= ep.start) & (retrans.index <= ep.end)
                base = float(prior[ep.start])
                total_r, total_s = float(retrans[inside].sum()), float(sent[inside].sum())
                mean_share = 100.0 * total_r / total_s if total_s else 0.0
                # each loss costs a retransmission timeout: half a per cent
                # of segments is a tail every user feels
                sev = severity_for(mean_share, [(5.0, "high"), (0.5, "medium")], default="low")
                title = (f"TCP retransmissions at {mean_share:.2f} % of segments sent "
                         f"({total_r / max(1, inside.sum()):.1f}/s, peak {ep.peak:.2f} %; usual {base:.2f} %)")
                text = (f"retransmitted {total_r:.0f} of {total_s:.0f} segments sent from {fmt_time(ep.start)} "
                        f"to {fmt_time(ep.end)} ({mean_share:.2f} %)")
                out.append(self.finding(
                    title=title, severity=sev, start=ep.start, end=ep.end, host=host,
                    metrics={"retrans_share_pct": mean_share, "peak_retrans_share_pct": ep.peak,
                             "baseline_retrans_share_pct": base, "retransmitted": total_r,
                             "segments_sent": total_s},
                    refs={**peak_ref(ep), **onset_ref(share, ep, base)},
                    evidence=[metric_evidence(ctx, "net-etcp", host, ep.peak_time, text)],
                ))
        return out

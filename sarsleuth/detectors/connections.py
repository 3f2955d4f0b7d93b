"""A surge of new TCP connections (sar -n TCP: passive/s, active/s).

Connections accepted per second far above the host's usual rate are the
load that fills its connection tables: TIME_WAIT, nginx's
worker_connections, ephemeral ports, the SYN backlog.  A surge is never
the cause of an incident (load is what a server is for); it is what ties
the limits it hits into one story, and says where the clients were: as many
connections opened as accepted, over loopback, is a client on the host
itself (a load test, a local proxy), not the outside world.
"""
from __future__ import annotations

import numpy as np

from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import metric_evidence
from sarsleuth.detectors.series import episodes, fmt_time, peak_ref


class ConnectionSurge(Detector):
    """TCP connections accepted per second far above the host's usual rate.

    Why it matters: every connection takes a socket, a worker connection,
    a TIME_WAIT slot when it closes; a surge is what runs those limits out,
    and knowing the clients were on the host itself (a load test) changes
    what to do about it.
    """

    id = "connection-surge"
    summary = "new TCP connections accepted per second far above the host's usual rate (what fills connection limits)"
    inputs = ("metrics:net-tcp",)
    category = "socket-exhaustion"
    defaults = {
        "min_per_s": 200.0,          # accepted connections a second, at least this ...
        "baseline_factor": 10.0,     # ... and this many times the usual rate (its median)
        "max_gap_samples": 2,
        "local_share": 0.8,          # opened / accepted within this ratio: clients on this host
    }

    def run(self, ctx: Context):
        out = []
        p = self.params
        for host in ctx.hosts("net-tcp"):
            accepted = ctx.series("net-tcp", "passive/s", host=host)
            opened = ctx.series("net-tcp", "active/s", host=host)
            if accepted is None or len(accepted) < 3:
                continue
            valid = accepted[np.isfinite(accepted.to_numpy(dtype=float)) & (accepted >= 0)]
            if len(valid) < 3:
                continue
            usual = float(valid.median())
            threshold = max(p["min_per_s"], usual * p["baseline_factor"])
            for ep in episodes(valid, (valid >= threshold).to_numpy(), p["max_gap_samples"]):
                inside = (valid.index >= ep.start) & (valid.index <= ep.end)
                took = float(valid[inside].sum())
                gave = float(opened.reindex(valid.index)[inside].sum()) if opened is not None else 0.0
                local = took > 0 and p["local_share"] <= gave / took <= 1.0 / p["local_share"]
                where = "opened by clients on this host (as many connections opened as accepted)" if local else ""
                title = (f"New TCP connections surged to {ep.peak:,.0f}/s (usual {usual:,.0f}/s)"
                         + (f", {where}" if where else ""))
                text = (f"passive/s up to {ep.peak:.2f} at {fmt_time(ep.peak_time)}, {usual:.2f} usually; "
                        f"{took:.0f} accepted per second summed over the surge")
                out.append(self.finding(
                    title=title, severity="low", start=ep.start, end=ep.end, host=host,
                    metrics={"peak_accepted_per_s": ep.peak, "usual_accepted_per_s": usual,
                             "local_clients": 1 if local else 0},
                    evidence=[metric_evidence(ctx, "net-tcp", host, ep.peak_time, text, metric="passive/s")],
                    refs=peak_ref(ep)))
        return out

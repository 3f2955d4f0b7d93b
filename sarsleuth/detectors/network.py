"""Network detectors over sar data: NIC saturation/drops and TIME_WAIT."""
from __future__ import annotations

import pandas as pd

from sarsleuth.detectors.event_bursts import bursts
from sarsleuth.detectors.series import peak_ref, episodes, fmt_time, severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events, limit_evidence, metric_evidence
from sarsleuth.knowledge.signatures import fields_of
from sarsleuth.model import iso


def link_capacity_Bps(ctx: Context, host, iface) -> float | None:
    """Link capacity in bytes/s: --link-speed if given, else derived from sar
    (%ifutil is max(rx, tx) rate over the interface speed)."""
    if ctx.link_speed_bps:
        return ctx.link_speed_bps / 8.0
    util = ctx.series("net-dev", "%ifutil", device=iface, host=host)
    rx = ctx.series("net-dev", "rxkB/s", device=iface, host=host)
    tx = ctx.series("net-dev", "txkB/s", device=iface, host=host)
    if util is None or rx is None or tx is None:
        return None
    rate = rx.combine(tx, max) * 1024.0
    util = util.reindex(rate.index)   # sources may sample at different times
    ok = (util > 10).fillna(False)
    if not ok.any():
        return None
    # sysstat computes %ifutil with kB = 1000 bytes for the speed in Mb/s:
    # use the median ratio so rounding of a single sample does not matter
    cap = (rate[ok] / (util[ok] / 100.0)).median()
    return float(cap)


class NicSaturation(Detector):
    """An interface near its link speed (%ifutil), or dropping/erroring
    packets (sar -n EDEV).

    Why it matters: report 001's 2 MB image test filled the 20 Gbit/s NIC;
    drops without full use point at ring buffers or the receive path.
    """

    id = "nic-saturation"
    summary = "interface near link speed (%ifutil) or dropping/erroring packets (EDEV)"
    inputs = ("metrics",)
    category = "network-saturation"
    defaults = {"ifutil_pct": 85.0, "drops_per_s": 10.0, "errors_per_s": 1.0, "max_gap_samples": 1,
                "min_duration_seconds": 10.0}

    def run(self, ctx: Context):
        out = []
        p = self.params
        for host in ctx.hosts("net-dev"):
            for iface in ctx.devices("net-dev", "%ifutil", host=host):
                util = ctx.series("net-dev", "%ifutil", device=iface, host=host)
                if util is None:
                    continue
                for ep in episodes(util, (util >= p["ifutil_pct"]).to_numpy(), p["max_gap_samples"],
                                  min_duration_seconds=p["min_duration_seconds"]):
                    rx = ctx.series("net-dev", "rxkB/s", device=iface, host=host)
                    tx = ctx.series("net-dev", "txkB/s", device=iface, host=host)
                    metrics = {"peak_ifutil_pct": ep.peak, "samples": ep.samples}
                    for name, s in (("peak_rxkB_per_s", rx), ("peak_txkB_per_s", tx)):
                        if s is not None:
                            w = s[(s.index >= ep.start) & (s.index <= ep.end)]
                            if len(w):
                                metrics[name] = float(w.max())
                    cap = link_capacity_Bps(ctx, host, iface)
                    if cap:
                        metrics["link_capacity_bps"] = cap * 8
                    speed = f" of a {cap * 8 / 1e9:.0f} Gbit/s link" if cap else ""
                    out.append(self.finding(
                        title=f"{iface} at {ep.peak:.1f} %{speed}",
                        severity=severity_for(ep.peak, [(98, "high")], "medium"),
                        start=ep.start, end=ep.end, host=host, metrics=metrics,
                        refs=peak_ref(ep), evidence=[metric_evidence(ctx, "net-dev", host, ep.peak_time,
                                                   f"{iface} %ifutil {ep.peak:.2f} at {fmt_time(ep.peak_time)}",
                                                   device=iface)],
                    ))
            out.extend(self._drops(ctx, host))
        return out

    def _drops(self, ctx: Context, host):
        out = []
        p = self.params
        for metric, limit, what in (("rxdrop/s", p["drops_per_s"], "dropping received packets"),
                                    ("txdrop/s", p["drops_per_s"], "dropping sent packets"),
                                    ("rxerr/s", p["errors_per_s"], "receive errors"),
                                    ("rxfifo/s", p["errors_per_s"], "receive FIFO overruns")):
            for iface in ctx.devices("net-edev", metric, host=host):
                s = ctx.series("net-edev", metric, device=iface, host=host)
                if s is None:
                    continue
                for ep in episodes(s, (s >= limit).to_numpy(), p["max_gap_samples"],
                                  min_duration_seconds=p["min_duration_seconds"]):
                    out.append(self.finding(
                        title=f"{iface} {what}: up to {ep.peak:.1f} {metric}",
                        severity="medium", start=ep.start, end=ep.end, host=host,
                        metrics={f"peak_{metric.replace('/s', '_per_s')}": ep.peak, "samples": ep.samples},
                        refs=peak_ref(ep), evidence=[metric_evidence(ctx, "net-edev", host, ep.peak_time,
                                                   f"{iface} {metric} {ep.peak:.2f} at {fmt_time(ep.peak_time)}",
                                                   device=iface, metric=metric)],
                    ))
        return out


class TcpTimewait(Detector):
    """Sockets in TIME_WAIT (sar -n SOCK tcp-tw) near
    ``net.ipv4.tcp_max_tw_buckets`` (the host's own value when a bundle records it, else 180000,
    a common default).

    Why it matters: once the table is full the kernel destroys TIME_WAIT
    sockets early (kernels before 4.x log 'time wait bucket table overflow',
    later ones only count TCPTimeWaitOverflow), so the count holds flat at
    the limit: where no bundle gives the limit, that flat top is the sign.
    """

    id = "tcp-timewait"
    summary = "TIME_WAIT sockets (tcp-tw) near net.ipv4.tcp_max_tw_buckets"
    inputs = ("metrics",)
    category = "socket-exhaustion"
    defaults = {"tcp_max_tw_buckets": 180000, "warn_fraction": 0.8, "min_rise_factor": 5.0,
                "min_tw": 5000, "max_gap_samples": 1, "min_duration_seconds": 0.0,
                "cap_min_tw": 1000, "cap_samples": 5}

    def run(self, ctx: Context):
        out = []
        p = self.params
        for host in ctx.hosts("net-sock"):
            limit, limit_ev = float(p["tcp_max_tw_buckets"]), []
            configured = ctx.limit(host, "net.ipv4.tcp_max_tw_buckets")
            # the host's own value, unless the user's config says otherwise
            if configured is not None and configured.number() and p["tcp_max_tw_buckets"] == self.defaults["tcp_max_tw_buckets"]:
                limit, limit_ev = configured.number(), [limit_evidence(configured)]
            tw = ctx.series("net-sock", "tcp-tw", host=host)
            if tw is None or len(tw) < 2:
                continue
            first = float(tw.iloc[0])
            if not limit_ev and p["tcp_max_tw_buckets"] == self.defaults["tcp_max_tw_buckets"]:
                capped = self._cap(ctx, host, tw, first)
                if capped is not None:
                    out.append(self._capped_finding(ctx, host, tw, first, *capped))
                    continue
            near = tw >= p["warn_fraction"] * limit
            # a climb far above where the day started is worth saying even
            # well below the limit (low severity then): it is where a
            # connection flood shows first
            climb = tw >= max(p["min_tw"], p["min_rise_factor"] * max(first, 1.0))
            for ep in episodes(tw, (near | climb).to_numpy(), p["max_gap_samples"],
                                  min_duration_seconds=p["min_duration_seconds"]):
                frac = ep.peak / limit
                sev = severity_for(frac, [(0.98, "high"), (0.6, "medium")], "low")
                out.append(self.finding(
                    title=f"TIME_WAIT sockets climbed to {ep.peak:.0f} ({frac * 100:.0f} % of tcp_max_tw_buckets {limit:.0f})",
                    severity=sev, start=ep.start, end=ep.end, host=host,
                    metrics={"peak_tcp_tw": ep.peak, "tcp_max_tw_buckets": limit, "fraction_of_limit": frac,
                             "first_tcp_tw": first},
                    refs=peak_ref(ep), evidence=[metric_evidence(ctx, "net-sock", host, ep.peak_time,
                                               f"tcp-tw {first:.0f} -> {ep.peak:.0f} at {fmt_time(ep.peak_time)}")]
                    + limit_ev,
                ))
        return out

    def _cap(self, ctx, host, tw, first):
        """(cap, first sample at it, last) when TIME_WAIT climbed far from
        where it started and then held at one value for ``cap_samples``
        samples or more while connections went on opening (sar -n TCP
        active/s + passive/s adding up to half the table or more): a table
        at its limit holds exactly its size (closing connections skip
        TIME_WAIT), where a steady flow wanders around its level and the
        sockets of a burst that ended hold still until they expire together.
        None otherwise."""
        peak = float(tw.max())
        if peak < self._climbed(first):
            return None
        at = tw[tw >= peak - max(2.0, 0.001 * peak)]
        if len(at) < self.params["cap_samples"]:
            return None
        opened = 0.0
        for metric in ("active/s", "passive/s"):
            rate = ctx.series("net-tcp", metric, host=host)
            if rate is None:
                return None
            during = rate[(rate.index > at.index[0]) & (rate.index <= at.index[-1])]
            step = during.index.to_series().diff().dt.total_seconds().fillna(0)
            opened += float((during * step).sum())
        if opened < 0.5 * peak:
            return None
        return peak, at.index[0], at.index[-1]

    def _climbed(self, first: float) -> float:
        """The count past which TIME_WAIT has climbed from where it started."""
        return max(self.params["cap_min_tw"], self.params["min_rise_factor"] * max(first, 1.0))

    @staticmethod
    def _refs(tw, peak_time) -> dict:
        step = tw.index.to_series().diff().dt.total_seconds().median()
        return {"peak_time": iso(peak_time), **({"sample_seconds": float(step)} if step == step and step else {})}

    def _capped_finding(self, ctx, host, tw, first, cap, start, end):
        seconds = (end - start).total_seconds()
        return self.finding(
            title=(f"TIME_WAIT sockets held at {cap:.0f} for {seconds:.0f} s: a table full at its cap "
                   f"(tcp_max_tw_buckets is likely {cap:.0f}; not recorded: inferred from the flat top)"),
            severity="high", start=tw.index[tw >= self._climbed(first)][0], end=end, host=host,
            metrics={"peak_tcp_tw": cap, "tcp_max_tw_buckets": cap, "fraction_of_limit": 1.0,
                     "first_tcp_tw": first, "limit_inferred": 1, "seconds_at_cap": seconds},
            refs=self._refs(tw, start),
            evidence=[metric_evidence(ctx, "net-sock", host, start,
                                      f"tcp-tw {first:.0f} -> {cap:.0f} at {fmt_time(start)}, "
                                      f"still {cap:.0f} at {fmt_time(end)}")],
        )


#: "interface eno4" (bonding), else a driver's "eth0:"/"eno1 " prefix.
#: a link that went down within this many seconds of boot and came back
#: within BACK_SECONDS is the driver bringing it up, not a failure
BOOT_SECONDS = 300.0
BACK_SECONDS = 10.0


def _iface(kind: str, message: str):
    return (fields_of(kind, message) or {}).get("iface")


def _seconds(a, b) -> float | None:
    """Seconds from ``a`` to ``b`` (event rows), by uptime when both have
    one, else by their time stamps."""
    ua, ub = getattr(a, "uptime", None), getattr(b, "uptime", None)
    if ua is not None and ub is not None and ua == ua and ub == ub:
        return float(ub) - float(ua)
    if a.timestamp is None or b.timestamp is None or pd.isna(a.timestamp) or pd.isna(b.timestamp):
        return None
    return (b.timestamp - a.timestamp).total_seconds()


def boot_flaps(ctx: Context, downs):
    """The positions of the link-down rows that are boot-time noise: within BOOT_SECONDS of
    the kernel's start (its uptime, or a ``Linux version`` line of the same
    host before it) and followed by the same interface coming up again
    within BACK_SECONDS.  They stay on the timeline, never a finding."""
    ups = ctx.events_of("nic-link-up")
    boots = ctx.events_of("kernel-boot")
    noise = set()
    if ups is None or not len(ups):
        return noise
    up_rows = list(ups.itertuples(index=False))
    boot_rows = list(boots.itertuples(index=False)) if boots is not None else []
    for pos, d in enumerate(downs.itertuples(index=False)):
        uptime = getattr(d, "uptime", None)
        at_boot = uptime is not None and uptime == uptime and float(uptime) <= BOOT_SECONDS
        if not at_boot:
            at_boot = any(b.host == d.host and (lag := _seconds(b, d)) is not None and 0 <= lag <= BOOT_SECONDS
                          for b in boot_rows)
        if not at_boot:
            continue
        name = _iface("nic-link-down", str(d.message))
        if any(u.host == d.host and _iface("nic-link-up", str(u.message)) == name
               and (back := _seconds(d, u)) is not None and 0 <= back <= BACK_SECONDS for u in up_rows):
            noise.add(pos)
    return noise


class NicLinkDown(Detector):
    """Network links going down (``NIC Link is Down``, bonding ``link status
    definitely down``), with the flap count per interface; a link that went
    down at boot and came up again within seconds (the driver bringing it
    up) is not one.

    Why it matters: a flapping link drops every connection through it and
    looks like an application outage from the outside.
    """

    id = "nic-link-down"
    summary = "network link down / flapping (driver and bonding messages)"
    inputs = ("events",)
    category = "network-failure"
    defaults = {"burst_gap_seconds": 600.0, "flap_count": 3}

    def run(self, ctx: Context):
        out = []
        downs = ctx.events_of("nic-link-down")
        if downs is not None and len(downs):
            noise = boot_flaps(ctx, downs)
            downs = downs.iloc[[i for i in range(len(downs)) if i not in noise]]
        for b in bursts(downs, self.params["burst_gap_seconds"]):
            ifaces = sorted({i for i in (_iface("nic-link-down", m) for m in b.rows["message"].astype(str)) if i})
            n = b.lines
            out.append(self.finding(
                title=f"{n} link-down event(s)" + (f" on {', '.join(ifaces[:4])}" if ifaces else ""),
                severity="high" if n >= self.params["flap_count"] else "medium",
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"link_down": n, "interfaces": len(ifaces)},
                evidence=evidence_from_events(ctx.clock, b.rows, 4),
            ))
        return out

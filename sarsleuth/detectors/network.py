"""Network detectors over sar data and the kernel's link messages: NIC
saturation, drops and errors, links going down."""
from __future__ import annotations

import pandas as pd

from sarsleuth.detectors.event_bursts import bursts, numbered, recurrences
from sarsleuth.detectors.figures import Figures, link_capacity_bps, measure
from sarsleuth.detectors.series import peak_ref, episodes, fmt_time, severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events, metric_evidence
from sarsleuth.knowledge import kb_entry
from sarsleuth.knowledge.signatures import fields_of


def link_capacity_Bps(ctx: Context, host, iface) -> float | None:
    """Link capacity in bytes/s (:func:`~sarsleuth.detectors.figures.link_capacity_bps`)."""
    bps = link_capacity_bps(ctx, host, iface)
    return None if bps is None else bps / 8.0


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
                key = ("net-dev", "%ifutil", iface)
                for ep in episodes(util, (util >= p["ifutil_pct"]).to_numpy(), p["max_gap_samples"],
                                   min_duration_seconds=p["min_duration_seconds"], segments=ctx.stretches(util, host)):
                    figs = Figures()
                    peak = figs.add(measure(ctx, "peak_ifutil_pct", "max", host, key, ep.start, ep.end, fmt=".1f"))
                    figs.add(measure(ctx, "samples", "samples", host, key, ep.start, ep.end, fmt="d"))
                    for name, metric in (("peak_rxkB_per_s", "rxkB/s"), ("peak_txkB_per_s", "txkB/s")):
                        figs.add(measure(ctx, name, "max", host, ("net-dev", metric, iface), ep.start, ep.end))
                    cap = figs.add(measure(ctx, "link_capacity_bps", "link", host, key, fmt=".0f", scale=1e-9))
                    speed = f" of a {cap.text()} Gbit/s link" if cap else ""
                    out.append(self.finding(
                        title=f"{iface} at {peak.text()} %{speed}",
                        severity=severity_for(peak.value, [(98, "high")], "medium"),
                        start=ep.start, end=ep.end, host=host, figures=figs,
                        refs=peak_ref(ep), evidence=[metric_evidence(ctx, "net-dev", host, peak.at,
                                                     f"{iface} %ifutil {peak.text('.2f')} at {fmt_time(peak.at)}",
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
                key = ("net-edev", metric, iface)
                for ep in episodes(s, (s >= limit).to_numpy(), p["max_gap_samples"],
                                   min_duration_seconds=p["min_duration_seconds"], segments=ctx.stretches(s, host)):
                    figs = Figures()
                    peak = figs.add(measure(ctx, f"peak_{metric.replace('/s', '_per_s')}", "max", host, key,
                                            ep.start, ep.end, fmt=".1f"))
                    figs.add(measure(ctx, "samples", "samples", host, key, ep.start, ep.end, fmt="d"))
                    out.append(self.finding(
                        title=f"{iface} {what}: up to {peak.text()} {metric}",
                        severity="medium", start=ep.start, end=ep.end, host=host, figures=figs,
                        refs=peak_ref(ep), evidence=[metric_evidence(ctx, "net-edev", host, peak.at,
                                                     f"{iface} {metric} {peak.text('.2f')} at {fmt_time(peak.at)}",
                                                     device=iface, metric=metric)],
                    ))
        return out


def _field(kind: str, message: str, name: str):
    return (fields_of(kind, message) or {}).get(name)


def _iface(kind: str, message: str):
    """"interface eno4" (bonding), else a driver's "eth0:"/"eno1 " prefix."""
    return _field(kind, message, "iface")


def _seconds(a, b) -> float | None:
    """Seconds from ``a`` to ``b`` (event rows), by uptime when both have
    one, else by their time stamps."""
    ua, ub = getattr(a, "uptime", None), getattr(b, "uptime", None)
    if ua is not None and ub is not None and ua == ua and ub == ub:
        return float(ub) - float(ua)
    if a.timestamp is None or b.timestamp is None or pd.isna(a.timestamp) or pd.isna(b.timestamp):
        return None
    return (b.timestamp - a.timestamp).total_seconds()


def noise_rows(ctx: Context, kind: str, rows, rule: dict) -> set:
    """The positions of the rows of ``kind`` that are no failure by their
    knowledge's ``noise`` rule (kb.toml): within ``after_boot_seconds`` of
    the kernel's start (its uptime, or a ``Linux version`` line of the same
    host before it) and followed by a line of ``back`` naming the same
    ``same_field`` within ``back_within_seconds``.  They stay on the
    timeline, never a finding."""
    backs = ctx.events_of(rule["back"])
    boots = ctx.events_of("kernel-boot")
    noise = set()
    if backs is None or not len(backs):
        return noise
    back_rows = list(backs.itertuples(index=False))
    boot_rows = list(boots.itertuples(index=False)) if boots is not None else []
    after_boot, within, name = float(rule["after_boot_seconds"]), float(rule["back_within_seconds"]), rule["same_field"]
    for pos, d in enumerate(rows.itertuples(index=False)):
        uptime = getattr(d, "uptime", None)
        at_boot = uptime is not None and uptime == uptime and float(uptime) <= after_boot
        if not at_boot:
            at_boot = any(b.host == d.host and (lag := _seconds(b, d)) is not None and 0 <= lag <= after_boot
                          for b in boot_rows)
        if not at_boot:
            continue
        value = _field(kind, str(d.message), name)
        if any(u.host == d.host and _field(rule["back"], str(u.message), name) == value
               and (back := _seconds(d, u)) is not None and 0 <= back <= within for u in back_rows):
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
            rule = kb_entry(self.id).get("noise") or {}
            noise = noise_rows(ctx, self.id, downs, rule) if rule else set()
            downs = downs.iloc[[i for i in range(len(downs)) if i not in noise]]
            names = downs["message"].astype(str).map(lambda m: _iface("nic-link-down", m) or "")
            downs = downs[~names.str.startswith(tuple(rule.get("virtual_interfaces", ()))).to_numpy()]
        for b in bursts(downs, self.params["burst_gap_seconds"]):
            ifaces = sorted({i for i in (_iface("nic-link-down", m) for m in b.rows["message"].astype(str)) if i})
            n = b.lines
            finding = self.finding(
                title=f"{n} link-down event(s)" + (f" on {', '.join(ifaces[:4])}" if ifaces else ""),
                severity="high" if n >= self.params["flap_count"] else "medium",
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"link_down": n, "interfaces": len(ifaces)},
                evidence=evidence_from_events(ctx.clock, b.rows, 4),
            )
            if ifaces:
                finding.refs["resource"] = ifaces
            out.append(finding)
        self._recurring(out)
        return out

    def _recurring(self, findings: list) -> None:
        """The same interfaces going down again, hours apart (a link that
        flaps all night): each time says which of how many it is, and the
        flapping is as severe as a burst of flaps."""
        def downs(f):
            return f.metrics["link_down"]
        for ifaces, times, total, span in recurrences(findings, lambda f: tuple(f.refs.get("resource") or ()), downs,
                                                      until="start"):
            if total < self.params["flap_count"]:
                continue
            for f, which, _n in numbered(times, downs):
                f.title = f"link down on {', '.join(ifaces[:4])}, {which} of {total} times {span}: the link flaps"
                f.refs["recurring"] = f"link down on {', '.join(ifaces[:4])} {total} times {span}: the link flaps"
                f.severity = "high"
                f.metrics["link_down_recurring"] = total

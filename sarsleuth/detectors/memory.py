"""Memory detectors over sar data: swap climb and memory pressure."""
from __future__ import annotations

import re

import pandas as pd

from sarsleuth.detectors.series import peak_ref, baseline, episodes, fmt_elapsed, fmt_time, severity_for, value_at
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import limit_evidence, metric_evidence


class SwapClimb(Detector):
    """Swap use (%swpused) rising fast from its baseline to a high level.

    Why it matters: a swap climb means RAM is exhausted; on a server it turns
    into disk I/O (iowait), stalls and, at the end, allocation failures and OOM
    kills.  Report 000's proxy went from 0 % to 97.76 % swap in four minutes.
    """

    id = "swap-climb"
    summary = "swap use (%swpused) rising fast to a high level: RAM exhausted"
    inputs = ("metrics",)
    category = "memory-exhaustion"
    defaults = {
        "min_rise_pct": 10.0,     # points of %swpused above the baseline
        "min_level_pct": 30.0,    # the climb must reach at least this level
        "start_epsilon_pct": 1.0, # the climb starts at the first sample this far above baseline
        "max_gap_samples": 2,
    }

    def run(self, ctx: Context):
        out = []
        for host in ctx.hosts("swap"):
            s = ctx.series("swap", "%swpused", host=host)
            if s is None or len(s) < 2:
                continue
            base = float(s.iloc[: max(1, len(s) // 4)].min()) if len(s) >= 4 else float(s.min())
            base = min(base, baseline(s, 0.1))
            p = self.params
            elevated = (s - base) >= p["start_epsilon_pct"]
            for ep in episodes(s, elevated, p["max_gap_samples"]):
                if ep.peak - base < p["min_rise_pct"] or ep.peak < p["min_level_pct"]:
                    continue
                rise_minutes = max((ep.peak_time - ep.start).total_seconds() / 60.0, 1 / 60)
                free = ctx.series("swap", "kbswpfree", host=host)
                metrics = {
                    "peak_swpused_pct": ep.peak, "baseline_swpused_pct": base,
                    "rise_pct_per_min": (ep.peak - base) / rise_minutes,
                }
                if free is not None:
                    before = value_at(free, s.index[max(0, s.index.get_loc(ep.start) - 1)])
                    at_peak = value_at(free, ep.peak_time)
                    if before is not None:
                        metrics["kbswpfree_before"] = before
                    if at_peak is not None:
                        metrics["kbswpfree_at_peak"] = at_peak
                pswpout = ctx.series("swapping", "pswpout/s", host=host)
                if pswpout is not None:
                    w = pswpout[(pswpout.index >= ep.start) & (pswpout.index <= ep.end)]
                    if len(w):
                        metrics["peak_pswpout_per_s"] = float(w.max())
                sev = severity_for(ep.peak, [(95, "critical"), (80, "high"), (50, "medium")])
                text = (f"%swpused {base:.2f} -> {ep.peak:.2f} (peak at {fmt_time(ep.peak_time)}), "
                        f"climb started {fmt_time(ep.start)}")
                if "kbswpfree_before" in metrics and "kbswpfree_at_peak" in metrics:
                    text += f"; kbswpfree {metrics['kbswpfree_before']:.0f} -> {metrics['kbswpfree_at_peak']:.0f}"
                # the climb ends at its peak; swap that stays used afterwards
                # is reported as a level, not as a longer climb
                metrics["swpused_at_episode_end_pct"] = float(s.loc[ep.end])
                out.append(self.finding(
                    title=f"Swap climbed from {base:.0f} % to {ep.peak:.2f} % in {fmt_elapsed((ep.peak_time - ep.start).total_seconds())}",
                    severity=sev, start=ep.start, end=ep.peak_time, host=host, metrics=metrics,
                    refs=peak_ref(ep), evidence=[metric_evidence(ctx, "swap", host, ep.peak_time, text)],
                ))
        return out


class MemoryPressure(Detector):
    """Free memory near zero with the kernel reclaiming hard.

    Looks at %memused / kbavail (or kbmemfree+cached on old sysstat) against
    total memory, and at paging: majflt/s, pgscand/s (direct reclaim) and a low
    %vmeff.  Why it matters: this is the state in which atomic allocations fail
    and the OOM killer runs.
    """

    id = "memory-pressure"
    summary = "available memory near zero with direct reclaim / major faults"
    inputs = ("metrics",)
    category = "memory-exhaustion"
    defaults = {
        "avail_floor_pct": 5.0,       # kbavail (or free+cached) under this % of RAM
        "majflt_per_s": 200.0,        # major faults/s that mean thrashing
        "pgscand_per_s": 1000.0,      # direct-reclaim scans/s
        "vmeff_floor_pct": 30.0,
        "max_gap_samples": 2,
    }

    def run(self, ctx: Context):
        out = []
        hosts = sorted(set(ctx.hosts("memory")) | set(ctx.hosts("paging")))
        for host in hosts:
            p = self.params
            avail_pct = self._avail_pct(ctx, host)
            conds = []
            if avail_pct is not None:
                conds.append((avail_pct <= p["avail_floor_pct"]).rename("low_avail"))
            majflt = ctx.series("paging", "majflt/s", host=host)
            if majflt is not None:
                conds.append((majflt >= p["majflt_per_s"]).rename("majflt"))
            pgscand = ctx.series("paging", "pgscand/s", host=host)
            if pgscand is not None:
                vmeff = ctx.series("paging", "%vmeff", host=host)
                direct = pgscand >= p["pgscand_per_s"]
                if vmeff is not None:
                    direct &= vmeff.reindex(pgscand.index).fillna(100) < p["vmeff_floor_pct"]
                conds.append(direct.rename("direct_reclaim"))
            if not conds:
                continue
            frame = pd.concat(conds, axis=1, sort=True).fillna(False).astype(bool)
            # low availability alone is common on cache-heavy hosts with an
            # old sysstat; require it together with reclaim/faults when those exist
            if "low_avail" in frame and len(frame.columns) > 1:
                hit = frame["low_avail"] & frame.drop(columns="low_avail").any(axis=1)
            else:
                hit = frame.any(axis=1)
            score = (avail_pct.reindex(frame.index) if avail_pct is not None else pd.Series(0.0, index=frame.index))
            series = (100 - score.fillna(100)) if avail_pct is not None else frame.sum(axis=1).astype(float)
            for ep in episodes(series, hit.to_numpy(), p["max_gap_samples"]):
                metrics = {}
                if avail_pct is not None:
                    w = avail_pct[(avail_pct.index >= ep.start) & (avail_pct.index <= ep.end)]
                    metrics["min_avail_pct"] = float(w.min())
                for name, s in (("peak_majflt_per_s", majflt), ("peak_pgscand_per_s", pgscand)):
                    if s is not None:
                        w = s[(s.index >= ep.start) & (s.index <= ep.end)]
                        if len(w):
                            metrics[name] = float(w.max())
                sev = "high" if metrics.get("min_avail_pct", 100) < 2 else "medium"
                parts = []
                if "min_avail_pct" in metrics:
                    parts.append(f"available memory down to {metrics['min_avail_pct']:.2f} % of RAM")
                if "peak_majflt_per_s" in metrics:
                    parts.append(f"majflt/s up to {metrics['peak_majflt_per_s']:.0f}")
                if "peak_pgscand_per_s" in metrics:
                    parts.append(f"pgscand/s up to {metrics['peak_pgscand_per_s']:.0f}")
                text = ", ".join(parts) + f" between {fmt_time(ep.start)} and {fmt_time(ep.end)}"
                evidence = [metric_evidence(ctx, "memory", host, ep.peak_time, text)]
                buffers = proxy_buffer_bound(ctx, host, ep)
                if buffers is not None:
                    metrics.update(buffers["metrics"])
                    evidence.extend(buffers["evidence"])
                out.append(self.finding(
                    title="Memory exhausted: available memory "
                          + (f"down to {metrics['min_avail_pct']:.1f} % of RAM" if "min_avail_pct" in metrics else "under pressure")
                          + " with reclaim" + (f"; {buffers['says']}" if buffers else ""),
                    severity=sev, start=ep.start, end=ep.end, host=host, metrics=metrics,
                    refs=peak_ref(ep), evidence=evidence,
                ))
        return out

    @staticmethod
    def _avail_pct(ctx: Context, host):
        total = ram_kb_series(ctx, host)
        if total is None:
            return None
        free = ctx.series("memory", "kbmemfree", host=host)
        avail = ctx.series("memory", "kbavail", host=host)
        if avail is None and free is not None:
            cached = ctx.series("memory", "kbcached", host=host)
            buffers = ctx.series("memory", "kbbuffers", host=host)
            avail = free.copy()
            for extra in (cached, buffers):
                if extra is not None:
                    avail = avail.add(extra, fill_value=0)
        if avail is None:
            return None
        return (avail / total.reindex(avail.index) * 100).dropna()


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def nginx_size(text: str) -> int | None:
    """An nginx size (``256k``, ``8m``, ``4096``) in bytes."""
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", text.strip())
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()] if m else None


def proxy_buffer_bound(ctx: Context, host, ep) -> dict | None:
    """What the host's nginx may hold per proxied connection
    (``proxy_buffers`` number x size, plus ``proxy_buffer_size``), how many
    such connections fill its RAM, and the TCP sockets in use at the peak:
    the arithmetic behind a proxy that ate all memory.  None without an
    ``nginx -T`` in the bundle."""
    buffers = ctx.limit(host, "proxy_buffers")
    facts = ctx.facts(host)
    if buffers is None or facts is None or len(buffers.value.split()) != 2:
        return None
    number, size = buffers.value.split()
    size_bytes = nginx_size(size)
    if not number.isdigit() or size_bytes is None:
        return None
    per_conn = int(number) * size_bytes
    evidence = [limit_evidence(buffers)]
    first = ctx.limit(host, "proxy_buffer_size")
    if first is not None and nginx_size(first.value):
        per_conn += nginx_size(first.value)
        evidence.append(limit_evidence(first))
    metrics = {"proxy_buffer_bytes_per_connection": per_conn}
    says = f"nginx may hold {per_conn / 1048576:.0f} MiB of proxy buffers per connection (`{buffers.text}`"
    # the RAM of the recording (sar) rather than of the collection, which
    # may be later and on other hardware
    ram_kb = _sar_ram_kb(ctx, host, ep) or facts.mem_total_kb
    if ram_kb:
        fill = ram_kb * 1024 / per_conn
        metrics.update(mem_total_kb=ram_kb, connections_to_fill_ram=round(fill, 1))
        says += f"): {fill:.0f} busy connections fill {ram_kb / 1048576:.1f} GiB of RAM"
    else:
        says += ")"
    sockets = ctx.series("net-sock", "tcpsck", host=host)
    if sockets is not None:
        w = sockets[(sockets.index >= ep.start) & (sockets.index <= ep.end)]
        if len(w):
            metrics["peak_tcpsck"] = float(w.max())
            says += f"; {w.max():.0f} TCP sockets were in use"
    return {"metrics": metrics, "evidence": evidence, "says": says}


def _sar_ram_kb(ctx: Context, host, ep) -> float | None:
    total = ram_kb_series(ctx, host)
    if total is None:
        return None
    w = total[(total.index >= ep.start) & (total.index <= ep.end)]
    return int(w.iloc[0]) if len(w) else None


def ram_kb_series(ctx: Context, host):
    """The host's RAM in kB at each sample of its sar memory figures, or
    None.  sar's %memused is kbmemused over the kernel's MemTotal in every
    sysstat version, while what kbmemused counts changed (kbmemfree +
    kbmemused is the total only in files of sysstat before 11.7.4), so the
    total is kbmemused * 100 / %memused, taken at the sample where
    %memused is highest (sar text prints it to two decimals: the least
    relative rounding there)."""
    total = ctx.series("memory", "kbmemtotal", host=host)
    if total is not None:
        return total
    used, pct = ctx.series("memory", "kbmemused", host=host), ctx.series("memory", "%memused", host=host)
    if used is not None and pct is not None:
        pct = pct.reindex(used.index)
        if (pct > 0).any():
            at = pct.idxmax()
            return used * 0 + round(float(used[at]) * 100 / float(pct[at]))
    free = ctx.series("memory", "kbmemfree", host=host)
    if free is None or used is None:
        return None
    return (free + used).dropna()

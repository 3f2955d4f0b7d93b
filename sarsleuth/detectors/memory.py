"""Memory detectors over sar data: swap climb and memory pressure."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from sarsleuth.detectors.figures import Figures, given, measure, series_of
from sarsleuth.detectors.cpu_io import without_usual_level
from sarsleuth.detectors.series import (episodes, fmt_time, growth_onset, how_long, interval_words, peak_ref,
                                        sampled, severity_for)
from sarsleuth.knowledge import kb_entry
from sarsleuth.model import SEVERITY_RANK, iso
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import limit_evidence, metric_evidence
from sarsleuth.detectors.shared_memory import shared_memory_grew


#: Memory used below this share of RAM all through a swap climb is no
#: shortage of the host's memory.
ROOMY_MEMUSED_PCT = 80.0
#: Of the swap in use, a share at least this large also in RAM (kbswpcad)
#: is swap the kernel has not had to read back.
MOSTLY_CACHED = 0.9


def _no_pressure_shown(ctx: Context, host, began, peak_at, figs: Figures) -> tuple[str, str | None]:
    """What says a swap climb was no shortage of memory, and the severity
    it is told at most, or ('', None): no page written to swap over it
    (pswpout/s, when recorded, at 0: the swap was not filled by paging out;
    ``low``), or RAM never short (%memused under ``ROOMY_MEMUSED_PCT``
    throughout, without sar -W: a cgroup's own limit, or swap accounting;
    ``medium``); with the share of the swap also in RAM (kbswpcad)."""
    said, most = [], None
    out_rate = figs["peak_pswpout_per_s"] if "peak_pswpout_per_s" in figs else None
    used = figs.add(measure(ctx, "peak_memused_pct", "max", host, ("memory", "%memused", ""), began, peak_at))
    if out_rate is not None and out_rate.value < 1.0:
        said, most = [f"no page written to swap (pswpout/s at most {out_rate.text()})"], "low"
    elif out_rate is None and used is not None and used.value < ROOMY_MEMUSED_PCT:
        said, most = [f"RAM {used.text()} % used at most: the host was not short of memory (a cgroup's own "
                      "limit, or swap accounting)"], "medium"
    if not said:
        return "", None
    cached = figs.add(measure(ctx, "kbswpcad_at_peak", "at", host, ("swap", "kbswpcad", ""), at=peak_at, fmt=",.0f"))
    held = figs.add(measure(ctx, "kbswpused_at_peak", "at", host, ("swap", "kbswpused", ""), at=peak_at, fmt=",.0f"))
    if cached is not None and held is not None and held.value > 0 and cached.value >= MOSTLY_CACHED * held.value:
        said.append(f"{cached.text()} of its {held.text()} kB also in RAM (kbswpcad)")
    return ", ".join(said), most


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
        "plateau_seconds": 30.0,  # a level swap held this long before the climb is where it starts from
    }

    def run(self, ctx: Context):
        out = []
        key = ("swap", "%swpused", "")
        for host in ctx.hosts("swap"):
            s = ctx.series(*key, host=host)
            if s is None or not len(s):
                continue
            if len(s) < 2 or not self._climbs(ctx, host, s, key, out):
                out.extend(self._filled_within(ctx, host, s))
        return out

    def _climbs(self, ctx: Context, host, s, key, out: list) -> bool:
        """Swap's climbs on ``host`` into ``out``; whether there was one."""
        found = len(out)
        p = self.params
        segments = ctx.segments(s, host)
        elevated = s.to_numpy() - _floor_of_stretch(s, segments) >= p["start_epsilon_pct"]
        for ep in episodes(s, elevated, p["max_gap_samples"], segments=ctx.stretches(s, host)):
            figs = Figures()
            peak = figs.add(measure(ctx, "peak_swpused_pct", "max", host, key, ep.start, ep.end))
            # the climb: from the last sample at the stretch's floor before it (where swap began
            # to grow), or from its first sample when the stretch of records starts inside it
            at = s.index.get_loc(ep.start)
            began = s.index[at - 1] if at > 0 and segments[at - 1] == segments[at] else ep.start
            # where swap began to grow without coming back: after a level it held
            # (the swap of earlier work, paused), not where it first left its floor
            window = s.loc[ep.start:ep.end]
            floor = float(s.loc[began])
            reached = window[window >= floor + 0.9 * (float(window.max()) - floor)].index[0]
            grown = _climb_start(s, segments, reached, p["plateau_seconds"], p["start_epsilon_pct"])
            if grown > began and float(window.max()) - float(s.loc[grown]) >= p["min_rise_pct"]:
                began = grown
            base = figs.add(measure(ctx, "baseline_swpused_pct", "at", host, key, at=began))
            if peak.value - base.value < p["min_rise_pct"] or peak.value < p["min_level_pct"]:
                continue
            rise = figs.add(measure(ctx, "rise_seconds", "elapsed", host, key, began, peak.at, fmt="elapsed"))
            free_key = ("swap", "kbswpfree", "")
            figs.add(measure(ctx, "kbswpfree_before", "at", host, free_key, at=began, fmt=".0f"))
            figs.add(measure(ctx, "kbswpfree_at_peak", "at", host, free_key, at=peak.at, fmt=".0f"))
            figs.add(measure(ctx, "peak_pswpout_per_s", "max", host, ("swapping", "pswpout/s", ""), ep.start, ep.end))
            # the climb ends at its peak; swap that stays used afterwards
            # is reported as a level, not as a longer climb
            figs.add(measure(ctx, "swpused_at_episode_end_pct", "at", host, key, at=ep.end))
            sev = severity_for(peak.value, [(95, "critical"), (80, "high"), (50, "medium")])
            unpressed, most = _no_pressure_shown(ctx, host, began, peak.at, figs)
            if most:
                sev = min(sev, most, key=SEVERITY_RANK.get)
            text = (f"%swpused {base.text()} at {fmt_time(began)} -> {peak.text()} at {fmt_time(peak.at)}"
                    f" ({sampled(rise.samples - 1, rise.value)})")
            if "kbswpfree_before" in figs and "kbswpfree_at_peak" in figs:
                text += f"; kbswpfree {figs['kbswpfree_before'].text()} -> {figs['kbswpfree_at_peak'].text()}"
            refs = peak_ref(ep)
            after = s.index[s.index.get_loc(began) + 1] if began < peak.at else began
            if after != ep.start:
                refs["onset"] = iso(after)     # the first sample of the climb
            shared = shared_memory_grew(ctx, host, began, peak.at, figs)
            if shared:
                refs["shared_memory"] = True
            if unpressed:
                refs["no_pressure"] = True
            out.append(self.finding(
                title=f"Swap climbed from {base.text()} % to {peak.text()} % {how_long(began, peak.at, rise)}"
                      + (f"; {shared}" if shared else "") + (f"; {unpressed}" if unpressed else ""),
                severity=sev, start=min(after, ep.start), end=peak.at, host=host, figures=figs,
                refs=refs, evidence=[metric_evidence(ctx, "swap", host, peak.at, text)],
                explanation=kb_entry(self.id)["explanation_no_pressure"] if unpressed else None,
            ))
        return len(out) > found

    def _filled_within(self, ctx: Context, host, s) -> list:
        """A row of a minute or more with no row before it (a recording of a
        few minutes sampled every minute) shows no climb, but what it swapped
        out: pswpout/s over the row's seconds, in pages of 4 KiB at least.
        When that is as much as the swap held at its end, the swap in use
        was written in the row: RAM ran out within it."""
        lone = without_usual_level(ctx, s, host, ctx.segments(s, host))
        out_rate = ctx.series("swapping", "pswpout/s", host=host)
        used_kb = ctx.series("swap", "kbswpused", host=host)
        if not lone.any() or out_rate is None or used_kb is None:
            return []
        seconds = ctx.row_seconds(s, host)
        key = ("swap", "%swpused", "")
        for i in np.flatnonzero(lone):
            t = s.index[i]
            if t not in out_rate.index or t not in used_kb.index or float(s.iloc[i]) < self.params["min_level_pct"]:
                continue
            written = float(out_rate[t]) * float(seconds[i]) * PAGE_KB
            if written < WRITTEN_SHARE * float(used_kb[t]):
                continue
            figs = Figures()
            level = figs.add(measure(ctx, "peak_swpused_pct", "at", host, key, at=t))
            rate = figs.add(measure(ctx, "peak_pswpout_per_s", "at", host, ("swapping", "pswpout/s", ""), at=t))
            held = figs.add(measure(ctx, "kbswpused_at_peak", "at", host, ("swap", "kbswpused", ""), at=t,
                                    fmt=",.0f"))
            wrote = figs.add(given("swapped_out_kb", written, origin="inferred", host=host))
            step = float(seconds[i])
            refs = {"peak_time": iso(t), "sample_seconds": step}
            # the row before it, in its stretch of records, is where memory stood
            seg = np.asarray(ctx.segments(s, host))
            shared = (shared_memory_grew(ctx, host, s.index[i - 1], t, figs)
                      if i > 0 and seg[i - 1] == seg[i] else "")
            if shared:
                refs["shared_memory"] = True
            return [self.finding(
                title=(f"Swap {level.text()} % used at {fmt_time(t)}, written within its {interval_words(step)} "
                       f"sample: at least {wrote.text()} kB swapped out in it (pswpout/s {rate.text()}), "
                       f"{held.text()} kB in use at its end" + (f"; {shared}" if shared else "")),
                severity=severity_for(level.value, [(95, "critical"), (80, "high"), (50, "medium")]),
                start=t, end=t, host=host, figures=figs, refs=refs,
                evidence=[metric_evidence(ctx, "swap", host, t, f"%swpused {level.text()} at {fmt_time(t)}")],
            )]
        return []


#: The smallest page the kernel swaps (x86's 4 KiB): pswpout/s counts pages.
PAGE_KB = 4.0
#: Swapped out within a row, as a share of the swap in use at its end, for
#: the swap in use to have been written in it.
WRITTEN_SHARE = 0.5


def _climb_start(s, segments, reached, plateau_seconds: float, tol: float):
    """The last sample before swap grew to ``reached`` without coming
    back: walking back in its stretch of records while the samples step
    down or hold (within ``tol`` points), stopping at a level held for
    ``plateau_seconds`` (the swap of earlier work, then a pause: the climb
    of this incident starts after it, not where swap first left its
    floor)."""
    v = s.to_numpy(dtype=float)
    seg = np.asarray(segments)
    pos = s.index.get_loc(reached)
    low_at = pos
    for i in range(pos - 1, -1, -1):
        if seg[i] != seg[pos] or v[i] > v[low_at] + tol:
            break
        if v[i] < v[low_at] - tol:
            low_at = i
        elif (s.index[low_at] - s.index[i]).total_seconds() >= plateau_seconds:
            break
    return s.index[low_at]


def _floor_of_stretch(s, segments) -> np.ndarray:
    """Each sample's stretch of records' low level: the least of its first
    quarter, or its 10th percentile when lower (a level the climb rises
    from, never one read across a gap or a restart)."""
    out = np.empty(len(s))
    seg = np.asarray(segments)
    for sid in np.unique(seg):
        at = np.flatnonzero(seg == sid)
        v = s.to_numpy(dtype=float)[at]
        out[at] = min(float(np.nanmin(v[: max(1, len(v) // 4)])), float(np.nanquantile(v, 0.1)))
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
            avail_key = ("memory", "%avail", "")
            avail_pct = series_of(ctx, host, avail_key)
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
            for ep in episodes(series, hit.to_numpy(), p["max_gap_samples"], segments=ctx.stretches(series, host)):
                figs = Figures()
                low = figs.add(measure(ctx, "min_avail_pct", "min", host, avail_key, ep.start, ep.end))
                for name, metric in (("peak_majflt_per_s", "majflt/s"), ("peak_pgscand_per_s", "pgscand/s")):
                    figs.add(measure(ctx, name, "max", host, ("paging", metric, ""), ep.start, ep.end, fmt=".0f"))
                sev = "high" if low is not None and low.value < 2 else "medium"
                parts = []
                if low is not None:
                    parts.append(f"available memory down to {low.text()} % of RAM")
                if "peak_majflt_per_s" in figs:
                    parts.append(f"majflt/s up to {figs['peak_majflt_per_s'].text()}")
                if "peak_pgscand_per_s" in figs:
                    parts.append(f"pgscand/s up to {figs['peak_pgscand_per_s'].text()}")
                text = ", ".join(parts) + f" between {fmt_time(ep.start)} and {fmt_time(ep.end)}"
                evidence = [metric_evidence(ctx, "memory", host, ep.peak_time, text)]
                refs = peak_ref(ep)
                if avail_pct is not None and ep.start in avail_pct.index:
                    # where memory began to run out without coming back (the first
                    # sample after its last one at the level before), not where it
                    # crossed the floor
                    used = 100 - avail_pct
                    began = growth_onset(used, ctx.segments(used, host), ep.start)
                    if began < ep.start:
                        first = avail_pct.index[avail_pct.index.get_loc(began) + 1]
                        refs["onset"] = iso(first)
                        was = figs.add(measure(ctx, "avail_before_fall_pct", "at", host, avail_key, at=began))
                        then = figs.add(measure(ctx, "avail_at_onset_pct", "at", host, avail_key, at=first))
                        refs["onset_said"] = (f"Available memory began to fall: {was.text()} % of RAM at "
                                              f"{fmt_time(began)}, {then.text()} % at {fmt_time(first)}")
                buffers = proxy_buffer_bound(ctx, host, ep, figs)
                if buffers is not None:
                    evidence.extend(buffers["evidence"])
                shared = shared_memory_grew(ctx, host, began if avail_pct is not None and ep.start in avail_pct.index
                                            else ep.start, ep.end, figs)
                if shared:
                    refs["shared_memory"] = True
                out.append(self.finding(
                    title="Memory exhausted: available memory "
                          + (f"down to {figs['min_avail_pct'].text('.1f')} % of RAM" if low is not None else "under pressure")
                          + " with reclaim" + (f"; {buffers['says']}" if buffers else "") + (f"; {shared}" if shared else ""),
                    severity=sev, start=ep.start, end=ep.end, host=host, figures=figs,
                    refs=refs, evidence=evidence,
                ))
        return out


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def nginx_size(text: str) -> int | None:
    """An nginx size (``256k``, ``8m``, ``4096``) in bytes."""
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", text.strip())
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()] if m else None


def proxy_buffer_bound(ctx: Context, host, ep, figs: Figures) -> dict | None:
    """What the host's nginx may hold per proxied connection
    (``proxy_buffers`` number x size, plus ``proxy_buffer_size``), how many
    such connections fill its RAM, and the TCP sockets in use at the peak:
    the arithmetic behind a proxy that ate all memory (its figures added
    to ``figs``).  None without an ``nginx -T`` in the bundle."""
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
    origin = f"{buffers.path}:{buffers.line}"
    first = ctx.limit(host, "proxy_buffer_size")
    if first is not None and nginx_size(first.value):
        per_conn += nginx_size(first.value)
        evidence.append(limit_evidence(first))
        origin += f" + {first.path}:{first.line}"
    conn = figs.add(given("proxy_buffer_bytes_per_connection", per_conn, origin=origin, fmt=".0f",
                          host=host, scale=1 / 1048576))
    says = f"nginx may hold {conn.text()} MiB of proxy buffers per connection (`{buffers.text}`"
    # the RAM of the recording (sar) rather than of the collection, which
    # may be later and on other hardware
    ram = figs.add(measure(ctx, "mem_total_kb", "first", host, ("memory", "kbram", ""), ep.start, ep.end,
                           fmt=".1f", scale=1 / 1048576))
    if ram is None and facts.mem_total_kb:
        ram = figs.add(given("mem_total_kb", facts.mem_total_kb, origin=f"{facts.bundle}: proc/meminfo",
                             fmt=".1f", host=host, scale=1 / 1048576))
    if ram is not None:
        fill = figs.add(measure(ctx, "connections_to_fill_ram", "ratio", host, of=("mem_total_kb",
                                "proxy_buffer_bytes_per_connection"), known=figs.by_name(), fmt=".0f", factor=1024))
        says += f"): {fill.text()} busy connections fill {ram.text()} GiB of RAM"
    else:
        says += ")"
    sockets = figs.add(measure(ctx, "peak_tcpsck", "max", host, ("net-sock", "tcpsck", ""), ep.start, ep.end,
                               fmt=".0f"))
    if sockets is not None:
        says += f"; {sockets.text()} TCP sockets were in use"
    return {"evidence": evidence, "says": says}

"""Full filesystems: sar -F's blocks and inodes reaching 100 %, and the
writes that failed with ENOSPC (28: No space left on device) in any
program's log."""
from __future__ import annotations

from sarsleuth.detectors.event_bursts import bursts, lines_of, writer
from sarsleuth.detectors.series import episodes, fmt_time, peak_ref, severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events, metric_evidence
from sarsleuth.detectors.figures import Figures, measure
from sarsleuth.knowledge.signatures import fields_of

#: What fills up, per sar -F column: (metric, what it counts)
_FULLNESS = (("%ufsused", "blocks"), ("%fsused", "blocks"), ("%Iused", "inodes"))



class FilesystemFull(Detector):
    """A filesystem whose blocks (``%ufsused``: what an unprivileged
    writer can use; ``%fsused`` when sar has no ``%ufsused``) or inodes
    (``%Iused``) reach ``full_pct`` in sar -F, named as sar names it (its
    device, or its mount point with ``sar -F MOUNT``), against the level it
    had before; its mount point beside it where a bundle's mounts say.

    Why it matters: every write there fails with ENOSPC from then on (logs,
    queues, databases, uploads); with inodes gone it happens with free
    blocks left, which ``df -h`` does not show.
    """

    id = "filesystem-full"
    summary = "filesystems at or near 100 % of their blocks or inodes (sar -F), against their own level before"
    inputs = ("metrics:filesystem",)
    category = "disk-full"
    defaults = {"full_pct": 99.0}

    def run(self, ctx: Context):
        out = []
        for host in ctx.hosts("filesystem"):
            for fs in ctx.devices("filesystem", "%Iused", host) or ctx.devices("filesystem", "%fsused", host):
                for metric, what in _FULLNESS:
                    if what == "blocks" and metric == "%fsused" and ctx.series("filesystem", "%ufsused", fs, host) is not None:
                        continue          # %ufsused is the fuller of the two: blocks once
                    f = self._full(ctx, host, fs, metric, what)
                    if f is not None:
                        out.append(f)
        return out

    def _full(self, ctx: Context, host, fs: str, metric: str, what: str):
        s = ctx.series("filesystem", metric, fs, host)
        if s is None or not len(s):
            return None
        eps = episodes(s, s >= self.params["full_pct"], bridge_seconds=120.0, segments=ctx.stretches(s, host))
        if not eps:
            return None
        ep = eps[0]
        key = ("filesystem", metric, fs)
        figs = Figures()
        peak = figs.add(measure(ctx, "peak_pct", "max", host, key, ep.start, ep.end))
        figs.add(measure(ctx, "samples", "samples", host, key, ep.start, ep.end, fmt="d"))
        # the level it filled from: the first sample of its stretch of records
        seg = ctx.segments(s, host)
        at = s.index.get_loc(ep.start)
        was = None
        if at > 0 and seg[at - 1] == seg[at]:
            stretch = s.index[(seg == seg[at]) & (s.index < ep.start)]
            was = figs.add(measure(ctx, "before_pct", "first", host, key, stretch[0], stretch[-1]))
        free_key = ("filesystem", "MBfsfree" if what == "blocks" else "Ifree", fs)
        left = figs.add(measure(ctx, "free", "at", host, free_key, at=peak.at, fmt=",.0f"))
        noun = "out of inodes" if what == "inodes" else "full"
        facts = ctx.facts(host)
        mount = facts.mounts.get(fs) if facts is not None else None
        named = f"{fs} ({mount.value})" if mount is not None and mount.value != fs else fs
        title = f"{named} {noun}: {metric} {peak.text()} at {fmt_time(peak.at)}"
        if was is not None:
            title += f" (was {was.text()} at {fmt_time(was.at)})"
        else:
            title += " (already at the first sample of its records)"
        if left is not None:
            title += f", {left.text()} {'MB' if what == 'blocks' else 'inodes'} free"
        if what == "inodes":
            blocks = figs.add(measure(ctx, "fsused_pct", "at", host, ("filesystem", "%fsused", fs), at=peak.at))
            if blocks is not None:
                title += f" with %fsused {blocks.text()}"
        rose = was is not None and was.value < self.params["full_pct"]
        refs = {"filesystem": named, **peak_ref(ep)}
        # %fsused is a level read at the row's stamp: the filesystem filled
        # after the record before it, any time within the row's interval
        # (the writes that failed then are its effects, not what came before)
        seconds = float(ctx.row_seconds(s, host)[at])
        if seconds == seconds and seconds > 0:
            refs["sample_seconds"] = seconds
        if was is None:
            # full at the first sample of its records: it filled before them,
            # when is unknown, so nothing is known to have come before it
            refs["began_before_records"] = True
        return self.finding(
            title=title, severity="critical" if rose else "high", start=ep.start, end=ep.end, host=host,
            metrics={"inodes": what == "inodes"}, figures=figs,
            evidence=[metric_evidence(ctx, "filesystem", host, peak.at,
                                      f"{metric} {peak.text()} on {fs} at {fmt_time(peak.at)}",
                                      device=fs, metric=metric)],
            refs=refs,
        )


class Enospc(Detector):
    """Writes that failed for want of space, in any program's words:
    nginx ``write() to "..." failed (28: No space left on device)``,
    Python ``[Errno 28] No space left on device: '...'``, coreutils ``dd:
    error writing '...': No space left on device``, Java ``IOException: No
    space left on device``: per program, with the paths they name.

    Why it matters: the program could not write its data (a queue, a
    backup, a log, a cache file): requests fail or data is lost until
    space is freed."""

    id = "enospc"
    summary = "'No space left on device' (ENOSPC, errno 28) from any program: per program, the paths"
    inputs = ("events:enospc",)
    category = "disk-full"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of(self.id), self.params["burst_gap_seconds"]):
            programs: dict = {}
            paths: dict = {}
            for r in b.rows.itertuples(index=False):
                who = writer(r) or "a process"
                n = lines_of(r)
                programs[who] = programs.get(who, 0) + n
                path = (fields_of(self.id, str(r.message)) or {}).get("path")
                if path:
                    paths.setdefault(who, {})
                    paths[who][path] = paths[who].get(path, 0) + n
            parts = []
            for who, n in sorted(programs.items(), key=lambda kv: -kv[1])[:4]:
                named = sorted(paths.get(who, {}).items(), key=lambda kv: -kv[1])
                parts.append(f"{who} ({n}" + (f", {named[0][0]}" + (f" and {len(named) - 1} more path(s)"
                                                                    if len(named) > 1 else "") if named else "") + ")")
            span = (b.end - b.start).total_seconds() if b.aligned else None
            out.append(self.finding(
                title=f"{b.lines} x No space left on device: {', '.join(parts)}" + (f" over {span:.0f} s" if span else ""),
                severity=severity_for(b.lines, [(10, "high")], "medium"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"lines": b.lines, "programs": len(programs),
                         "paths": sum(len(p) for p in paths.values())},
                evidence=evidence_from_events(ctx.clock, b.rows, 6),
                refs={"programs": sorted(programs), "paths": sorted({p for v in paths.values() for p in v})[:20]},
            ))
        return out

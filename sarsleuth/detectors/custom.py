"""The user's own log signatures (``[[signature]]`` in a config file)."""
from __future__ import annotations

from sarsleuth.detectors.event_bursts import bursts
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events


class CustomSignature(Detector):
    """Bursts of log lines matching a ``[[signature]]`` the user declared in
    the config file given with ``--config``, reported with the user's own
    severity, explanation, category and recommendations.

    Why it matters: every site has its own "this line means trouble"
    (an application's panic message, a RAID controller's warning); declaring
    it once puts it on the same timeline as the kernel and sar evidence.
    A user signature may not reuse a built-in id (the config is refused):
    it would silently change the built-in detector's counts.
    """

    id = "custom-signature"
    summary = "bursts of log lines matching the user's own [[signature]] entries (config file)"
    inputs = ("events",)
    category = "other"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for sig in ctx.user_signatures:
            ev = ctx.events_of(sig.id)
            for b in bursts(ev, self.params["burst_gap_seconds"]):
                n = b.lines
                span = (b.end - b.start).total_seconds() if b.aligned else None
                over = f" over {span:.0f} s" if span else ""
                procs = sorted({str(p) for p in b.rows["process"].dropna() if str(p) not in ("", "None")})
                pids = sorted({int(p) for p in b.rows["pid"].dropna()})
                title = f"{n:,} x '{sig.id}' (your signature){over}" + (f" from {', '.join(procs[:3])}" if procs else "")
                explanation = sig.explanation or (
                    f"Lines matching your signature {sig.id!r} ({' | '.join(sig.patterns)}).")
                f = self.finding(
                    title=title, severity=sig.severity or "medium", start=b.start, end=b.end, host=b.host,
                    aligned=b.aligned, metrics={"lines": n, "processes": len(procs)},
                    evidence=evidence_from_events(ctx.clock, b.rows, 5), explanation=explanation,
                    refs={"signature": sig.id, **({"pids": pids} if pids else {})},
                )
                if sig.category:
                    f.category = sig.category
                if sig.recommendations:
                    f.recommendations = list(sig.recommendations)
                out.append(f)
        return out

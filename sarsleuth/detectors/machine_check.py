"""Machine checks and memory errors (MCE, EDAC, APEI): the DIMM named,
corrected or not.  What each kernel line says is read through its
definition's fields (``knowledge/signatures.toml``)."""
from __future__ import annotations

from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.event_bursts import bursts, lines_of
from sarsleuth.detectors.evidence import evidence_from_events
from sarsleuth.detectors.report_lines import count_into, lines_of_report, most_counted, over_span
from sarsleuth.detectors.thermal import thermal_moments, thermal_record
from sarsleuth.knowledge.signatures import fields_of


class MachineCheck(Detector):
    """Machine checks and memory errors: EDAC's corrected (CE) and
    uncorrected (UE) errors with the DIMM it names (``EDAC MC0: 1 CE memory
    read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 ...)``),
    the firmware's APEI reports (their ``DIMM location``), the MCE records
    and ``Machine check events logged``, a CMCI storm.

    Why it matters: corrected errors that repeat on one DIMM announce an
    uncorrected one, which kills the process touching it or panics the
    host; the DIMM EDAC names is the part to replace.
    """

    id = "machine-check"
    summary = "machine checks and memory errors (MCE, EDAC CE/UE, APEI): the DIMM named, corrected or not"
    inputs = ("events:machine-check", "events:edac-error", "events:cpu-thermal-throttle", "events:cpu-thermal-normal")
    category = "hardware-error"
    defaults = {"burst_gap_seconds": 3600.0, "many_corrected": 10}

    def run(self, ctx: Context):
        out = []
        thermal = thermal_moments(ctx.events_of("cpu-thermal-throttle", "cpu-thermal-normal"))
        for b in bursts(ctx.events_of("machine-check", "edac-error"), self.params["burst_gap_seconds"]):
            rows = [row for row in b.rows.itertuples(index=False) if not thermal_record(row, thermal)]
            if not rows:
                continue        # the MCE records a thermal interrupt logs: cpu-thermal-throttle tells them
            dimms: dict = {}          # DIMM label -> errors
            where: dict = {}          # DIMM label -> "MC0 channel:1 slot:0"
            corrected = uncorrected = mce = 0
            fatal, storm, cpus = False, False, set()
            for row in rows:
                if row.kind == "edac-error":
                    f = fields_of("edac-error", str(row.message)) or {}
                    n = int(f.get("count") or 1) * lines_of(row)
                    if f.get("type") == "UE":
                        uncorrected += n
                    else:
                        corrected += n
                    label = f.get("label") or f.get("mc") or "an unnamed DIMM"
                    count_into(dimms, label, n)
                    place = " ".join(p for p in (f.get("mc"), (f.get("location") or "").strip()) if p)
                    if f.get("row") is not None and not f.get("location"):
                        place += f" row {f['row']}" + (f" channel {f['channel']}" if f.get("channel") else "")
                    where.setdefault(label, place)
                    continue
                mce += lines_of(row)
                for line in lines_of_report(row):
                    f = fields_of("machine-check", line) or {}
                    fatal = fatal or bool(f.get("exception"))
                    storm = storm or bool(f.get("storm"))
                    if f.get("cpu"):
                        cpus.add(int(f["cpu"]))
                    if f.get("severity", "").lower() in ("fatal", "uncorrected", "recoverable"):
                        uncorrected += 1
                    if f.get("dimm"):
                        count_into(dimms, f["dimm"])
            out.append(self._finding(ctx, b, dimms, where, corrected, uncorrected, mce, fatal, storm, cpus))
        return out

    def _finding(self, ctx, b, dimms, where, corrected, uncorrected, mce, fatal, storm, cpus):
        named = most_counted(dimms)
        parts = []
        if uncorrected:
            parts.append(f"{uncorrected:,} uncorrected")
        if corrected:
            parts.append(f"{corrected:,} corrected")
        if parts:
            title = " and ".join(parts) + " memory error(s)"
            if named:
                title += " on " + ", ".join(f"{d} ({where[d]})" if where.get(d) else d for d in named)
                title += f" and {len(dimms) - len(named)} more DIMM(s)" if len(dimms) > len(named) else ""
            if mce:
                title += f"; {mce:,} machine check record(s)"
        else:
            title = f"{mce:,} machine check record(s)" + (
                f" on CPU {', '.join(map(str, sorted(cpus)))}" if cpus else "") + (
                " (no EDAC line names the part: `ras-mc-ctl --errors` or `mcelog --client` decodes them)"
                if not named else f" naming {', '.join(named)}")
        if fatal:
            title += ", a fatal machine check exception"
        if storm:
            title += ", a CMCI storm (the CPU stopped reporting each corrected error)"
        title += over_span(b)
        if uncorrected or fatal:
            severity = "critical"
        elif corrected >= self.params["many_corrected"] or storm:
            severity = "high"
        else:
            severity = "medium"
        dimm = named[0] if named else None
        return self.finding(
            title=title, severity=severity, start=b.start, end=b.end, host=b.host, aligned=b.aligned,
            metrics={"corrected": corrected, "uncorrected": uncorrected, "mce_records": mce,
                     "dimms": len(dimms), "fatal": fatal, "cmci_storm": storm},
            evidence=evidence_from_events(ctx.clock, b.rows, 5),
            refs={"dimms": sorted(dimms), **({"dimm": dimm} if dimm else {})},
        )

"""Detectors declared as data: each counts the lines of one message per
burst, quotes the host limits the message means were reached, and says
what the lines name, as its ``[detector.ID.burst]`` table in
``knowledge/kb.toml`` declares (the vocabulary is at the head of that
file).  What a line names is read through its message definition's fields
(``knowledge/signatures.toml``), never a pattern of its own."""
from __future__ import annotations

import re
from typing import ClassVar

from sarsleuth.detectors.event_bursts import bursts, lines_by_writer, lines_of, tell_recurring
from sarsleuth.detectors.series import severity_for
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events, limit_evidence
from sarsleuth.detectors.figures import Figures, measure
from sarsleuth.knowledge import burst_counters, kb_entry
from sarsleuth.knowledge.signatures import fields_of


_TRAILING_NUMBER = re.compile(r"\d+$")


class LineCounter(Detector):
    """Counts the lines of one message per burst, as ``declared``."""

    #: the detector's ``[detector.ID.burst]`` table
    declared: ClassVar[dict] = {}
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        spec = self.declared
        kind = spec.get("events", self.id)
        severities = [(float(at), severity) for at, severity in spec.get("severities", [])]
        out, lines = [], {}
        recurs = bool(kb_entry(self.id).get("recurs")) and "values" in spec
        for b in bursts(ctx.events_of(kind), self.params["burst_gap_seconds"]):
            n = b.lines
            fields = [fields_of(kind, m) or {} for m in b.rows["message"].astype(str)]
            # each row with the lines it stands for (a flood of one line is one row)
            extra_title, extra = said(spec, fields, [lines_of(r) for r in b.rows.itertuples(index=False)])
            limits = [lim for lim in (ctx.limit(b.host, name) for name in spec.get("limits", ())) if lim is not None]
            if limits:
                # config values in backticks: quoted as written, never reformatted
                extra_title += " (" + ", ".join(f"`{lim.name} = {lim.value}`" for lim in limits) + ")"
                extra = {**extra, **{lim.name: lim.number() if lim.number() is not None else lim.value
                                     for lim in limits}}
            figs = Figures()
            count = figs.add(measure(ctx, "lines", "lines", b.host, start=b.start if b.aligned else None,
                                     end=b.end if b.aligned else None, kinds=(kind,), fmt=",.0f"))
            long = figs.add(measure(ctx, "burst_seconds", "elapsed", b.host, start=b.start, end=b.end, fmt=".0f")
                            if b.aligned else None)
            over = f" over {long.text()} s" if long is not None and round(long.value) else ""
            out.append(self.finding(
                title=f"{count.text() if count else n} x {spec['noun']}{over}{extra_title}", figures=figs,
                severity=severity_for(n, severities, "medium"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={**extra},
                evidence=evidence_from_events(ctx.clock, b.rows, 5) + [limit_evidence(lim) for lim in limits],
                refs=logged_by(spec, b.rows),
            ))
            lines[id(out[-1])] = n
            if recurs:
                # what the lines name (the upstreams...): the same failure of it bursts apart recurs
                out[-1].refs["named"] = sorted({str(f[spec["values"]["field"]]) for f in fields
                                                if f.get(spec["values"]["field"])})
        if recurs:
            tell_recurring(out, lambda f: tuple(f.refs.get("named") or ()) or None, lambda f: lines[id(f)],
                           lambda named, times, count, span: f"{count:,} x {spec['noun']} ({', '.join(named)}) "
                                                             f"in {len(times)} bursts {span}")
        return out


def logged_by(spec: dict, rows) -> dict:
    """For a declaration naming its ``servers``: who logged the burst's
    lines, {"logged_by": {program: lines}} (most first), the servers'
    programs among them in "servers".  A server logs a refusal as its own
    line; its clients log the same text as the error they got."""
    if not spec.get("servers"):
        return {}
    ordered = lines_by_writer(rows)
    servers = [p for p in ordered if p in spec["servers"]]
    return {"logged_by": ordered, "servers": servers} if ordered else {}


def said(spec: dict, fields: list[dict], weights: list[int] | None = None) -> tuple[str, dict]:
    """(what follows the title's noun, metrics) for the fields of a burst's
    rows (``weights``: the lines each stands for, 1 each by default), as
    ``values``, ``first`` or ``counts`` of the declaration say."""
    weights = weights if weights is not None else [1] * len(fields)
    if "values" in spec:
        return _values(spec["values"], fields, weights)
    if "first" in spec:
        return _first(spec["first"], fields)
    if "counts" in spec:
        return _counts(spec["counts"], spec.get("counts_text", "{}"), fields, weights)
    return "", {}


def _values(how: dict, fields: list[dict], weights: list[int]) -> tuple[str, dict]:
    """The distinct values of a field, by text, number or most lines first
    (each with its lines when ``counted``), at most ``most`` of them."""
    lines: dict = {}
    for f, n in zip(fields, weights):
        value = f.get(how["field"])
        if value:
            lines[value] = lines.get(value, 0) + n
    if not lines:
        return "", {}
    order = how.get("order", "text")
    if order == "number":
        # by the number a value ends with: a port, or a listener's address:port
        values = sorted(lines, key=lambda v: (int(_TRAILING_NUMBER.search(v).group()) if _TRAILING_NUMBER.search(v)
                                              else -1, v))
    elif order == "lines":
        values = sorted(lines, key=lambda v: -lines[v])
    else:
        values = sorted(lines)
    values = values[:how["most"]] if how.get("most") else values
    shown = [f"{v}: {lines[v]}" if how.get("counted") else str(v) for v in values]
    metrics = {how["metric"]: len(lines)} if how.get("metric") else {}
    return how["text"].format(", ".join(shown)), metrics


def _first(how: dict, fields: list[dict]) -> tuple[str, dict]:
    """The first line that names every one of ``fields``: the text filled
    with them, and metrics (whole numbers) named after them."""
    for f in fields:
        if all(f.get(name) for name in how["fields"]):
            return how["text"].format(**f), {metric: int(f[name]) for metric, name in how.get("metrics", {}).items()}
    return "", {}


def _counts(counts: list, text: str, fields: list[dict], weights: list[int]) -> tuple[str, dict]:
    """Lines naming each field: every count a metric, the ones seen said."""
    found = [(c, sum(n for f, n in zip(fields, weights) if f.get(c["field"]))) for c in counts]
    parts = [c["text"].format(n) for c, n in found if n]
    return (text.format(", ".join(parts)) if parts else ""), {c["metric"]: n for c, n in found}


def declared() -> dict[str, type[Detector]]:
    """A detector class for each ``[detector.ID.burst]`` of the knowledge base."""
    out = {}
    for det_id, spec in burst_counters().items():
        name = "".join(part.capitalize() for part in det_id.split("-"))
        out[det_id] = type(name, (LineCounter,), {
            "__module__": __name__, "__doc__": spec["summary"], "id": det_id, "summary": spec["summary"],
            "inputs": tuple(spec["inputs"]), "category": spec["category"], "declared": spec,
            # a message repeated on a schedule (smartd every 30 minutes) is one burst over a longer gap
            "defaults": {"burst_gap_seconds": float(spec.get("burst_gap_seconds", 600.0))}})
    return out

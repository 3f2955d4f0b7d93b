"""Score sarsleuth on the recorded cases.

For each case folder (``truth.toml`` beside the operator's files) the
scorer runs ``sarsleuth analyze FILES... --format json`` with the truth's
``args`` and compares rank 1 with the truth:

- **category**: rank 1's category is one of ``category``;
- **start**: seconds from rank 1's start to the ``start_between`` window
  (0 inside it); within 10 s counts;
- **cause**: rank 1's ``cause`` detector is one of ``cause``;
- **named**: one of ``responsible`` (process names, devices) is named in
  rank 1's title, headline, cause, explanation or recommendations (quoted
  evidence lines do not count: they name whatever the log named);
- **contradicted**: recommendations, of any incident, that a rule of
  ``contradictions.toml`` finds wrong for this case's files;
- **quiet**: on a quiet day, the number of incidents (0 is right).
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import tarfile
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE.parent / "cases"
START_TOLERANCE_S = 10.0
TARGETS = {"category": 0.95, "start": 0.95, "named": 0.90, "contradicted": 0, "quiet_incidents": 0}
_QUOTED = re.compile(r'"[^"\n]*"')


@dataclass
class CaseScore:
    case: str
    kind: str
    quiet: bool
    rank1: str = "-"
    category_ok: bool | None = None
    cause: str = "-"
    cause_ok: bool | None = None
    start_error_s: float | None = None
    named: bool | None = None
    contradicted: list = field(default_factory=list)
    incidents: int = 0
    exit_code: int = 0
    error: str = ""
    #: what the audit of the story against its data found (``analyze --audit``)
    audit_checked: int = 0
    audit_differences: list = field(default_factory=list)


def case_inputs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name not in ("truth.toml", "recorded.md") and p.is_file())


def analyze_json(inputs: list[Path], args: list[str]) -> tuple[int, dict | None, str]:
    """``sarsleuth analyze`` in this process, as a user runs it."""
    from sarsleuth.cli import run

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(["analyze", *map(str, inputs), "--format", "json", "--audit", *args])
    try:
        return code, json.loads(out.getvalue()), err.getvalue()
    except json.JSONDecodeError:
        return code, None, err.getvalue()


def operator_text(inputs: list[Path]) -> str:
    """The text of every file the operator has, archives read in place."""
    parts = []
    for p in inputs:
        if tarfile.is_tarfile(p):
            with tarfile.open(p) as tar:
                for m in tar:
                    if m.isfile() and m.size < 64 << 20:
                        parts.append(_inner_text(m.name, tar.extractfile(m).read()))
        else:
            parts.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(parts)


def _inner_text(name: str, data: bytes) -> str:
    if name.endswith((".tar.xz", ".tar.gz")):
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            return "\n".join(_inner_text(m.name, tar.extractfile(m).read()) for m in tar
                             if m.isfile() and m.size < 64 << 20)
    return data.decode("utf-8", "replace") if b"\0" not in data[:4096] else ""


def _rules() -> list[dict]:
    with open(HERE / "contradictions.toml", "rb") as fh:
        return tomllib.load(fh)["rule"]


def contradicted(recommendations: list[str], text: str) -> list[str]:
    found = []
    for rule in _rules():
        if "absent" in rule:
            wrong = not re.search(rule["absent"], text)
        else:
            wrong = bool(re.search(rule["evidence"], text)) and not (
                rule.get("unless") and re.search(rule["unless"], text))
        if not wrong:
            continue
        for rec in recommendations:
            if re.search(rule["advice"], rec):
                found.append(f"{rule['id']}: {rec[:120]}")
    return found


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def start_error(start: str | None, window: list[str]) -> float | None:
    if not start or not window:
        return None
    t = _instant(start)
    lo, hi = _instant(window[0]), _instant(window[1])
    if t.tzinfo is None:      # a wall-clock time: compare on the window's zone
        t = t.replace(tzinfo=lo.tzinfo)
    if t < lo:
        return (lo - t).total_seconds()
    if t > hi:
        return (t - hi).total_seconds()
    return 0.0


def _names(text: str, names: list[str]) -> bool:
    text = _QUOTED.sub('""', text)
    return any(re.search(r"(?<![\w-])" + re.escape(n) + r"(?!\w)", text, re.I) for n in names)


def story_text(inc: dict) -> str:
    story = inc.get("story") or {}
    cause = next((f for f in inc.get("findings", []) if f.get("role") == "cause"), {})
    return "\n".join(str(x) for x in (inc.get("title"), story.get("headline"), story.get("cause"),
                                      story.get("explanation"), cause.get("title"), cause.get("explanation"),
                                      *inc.get("recommendations", [])) if x)


def score_case(folder: Path) -> CaseScore:
    with open(folder / "truth.toml", "rb") as fh:
        truth = tomllib.load(fh)
    s = CaseScore(case=folder.name, kind=truth["kind"], quiet=bool(truth.get("quiet")))
    inputs = case_inputs(folder)
    code, doc, err = analyze_json(inputs, list(truth.get("args", [])))
    audited = (doc or {}).get("audit") or {}
    s.audit_checked, s.audit_differences = audited.get("checked", 0), list(audited.get("differences", []))
    s.exit_code = 0 if code == 3 and s.audit_differences else code     # 3: the audit's differences, kept apart
    if doc is None:
        s.error = err.strip().splitlines()[-1] if err.strip() else f"exit {code}, no JSON"
        return s
    incidents = doc.get("incidents", [])
    s.incidents = len(incidents)
    text = operator_text(inputs)
    s.contradicted = contradicted([r for inc in incidents for r in inc.get("recommendations", [])], text)
    if s.quiet:
        s.rank1 = incidents[0]["category"] if incidents else "none"
        return s
    if not incidents:
        s.rank1, s.category_ok, s.cause_ok = "none", False, False
        s.named = False if truth.get("responsible") else None
        return s
    top = incidents[0]
    s.rank1, s.cause = top["category"], top.get("cause") or "-"
    s.category_ok = top["category"] in truth.get("category", [])
    s.cause_ok = s.cause in truth.get("cause", [])
    s.start_error_s = start_error(top.get("start"), truth.get("start_between", []))
    if truth.get("responsible"):
        s.named = _names(story_text(top), truth["responsible"])
    return s


def score_all(folders: list[Path]) -> list[CaseScore]:
    return [score_case(f) for f in folders]


def totals(scores: list[CaseScore]) -> dict:
    incident_cases = [s for s in scores if not s.quiet]
    named = [s for s in incident_cases if s.named is not None]
    quiet = [s for s in scores if s.quiet]

    def share(xs, ok):
        return round(sum(1 for x in xs if ok(x)) / len(xs), 3) if xs else None

    return {
        "cases": len(scores), "incident_cases": len(incident_cases), "quiet_cases": len(quiet),
        "kinds": len({s.kind for s in scores}),
        "category": share(incident_cases, lambda s: s.category_ok),
        "cause": share(incident_cases, lambda s: s.cause_ok),
        "start": share(incident_cases, lambda s: s.start_error_s is not None
                       and s.start_error_s <= START_TOLERANCE_S),
        "named": share(named, lambda s: s.named),
        "named_cases": len(named),
        "contradicted": sum(len(s.contradicted) for s in scores),
        "quiet_incidents": sum(s.incidents for s in quiet),
    }


def _mark(ok) -> str:
    return "-" if ok is None else ("yes" if ok else "NO")


def table(scores: list[CaseScore], fmt: str = "text") -> str:
    head = ["case", "kind", "rank 1", "category", "start error s", "cause", "named", "contradicted", "incidents"]
    rows = []
    for s in scores:
        err = "-" if s.start_error_s is None else f"{s.start_error_s:.0f}"
        rows.append([s.case, s.kind, s.rank1 + (f" ({s.error})" if s.error else ""), _mark(s.category_ok), err,
                     f"{s.cause} {_mark(s.cause_ok)}" if not s.quiet else "-", _mark(s.named),
                     str(len(s.contradicted)), str(s.incidents)])
    t = totals(scores)

    def pct(x):
        return "n/a" if x is None else f"{100 * x:.0f} %"

    foot = (f"{t['cases']} cases of {t['kinds']} kinds ({t['quiet_cases']} quiet): top-1 category {pct(t['category'])}, "
            f"start within {START_TOLERANCE_S:g} s {pct(t['start'])}, cause detector {pct(t['cause'])}, "
            f"responsible named {pct(t['named'])} (of {t['named_cases']}), contradicted advice {t['contradicted']}, "
            f"incidents on quiet days {t['quiet_incidents']}")
    if fmt == "markdown":
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines + ["", foot])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    details = [f"  {s.case}: {c}" for s in scores for c in s.contradicted]
    return "\n".join(lines + ([""] + ["contradicted advice:"] + details if details else []) + ["", foot])


def write_floor(scores: list[CaseScore]) -> None:
    """Hold the test suite to these scores: ``lab/scores.toml``."""
    t = totals(scores)
    truths = [tomllib.loads((CASES / s.case / "truth.toml").read_text()) for s in scores]
    values = {
        "cases": t["cases"], "kinds": t["kinds"],
        "confounded": sum(1 for x in truths if x.get("confounders")),
        "quiet_days": sum(1 for x in truths if x.get("quiet")),
        "category": t["category"] or 0.0, "start": t["start"] or 0.0, "cause": t["cause"] or 0.0,
        "named": t["named"] or 0.0, "contradicted": t["contradicted"], "quiet_incidents": t["quiet_incidents"],
    }
    head = (HERE.parent / "scores.toml").read_text().split("[floor]")[0]
    body = "\n".join(f"{k} = {v}" for k, v in values.items())
    (HERE.parent / "scores.toml").write_text(f"{head}[floor]\n{body}\n")


def main(args) -> int:
    root = Path(args.cases_dir)
    folders = [root / c for c in args.cases] if args.cases else sorted(
        p.parent for p in root.glob("*/truth.toml"))
    if not folders:
        print(f"no recorded cases in {root}", file=sys.stderr)
        return 2
    scores = score_all(folders)
    if getattr(args, "set_floor", False):
        write_floor(scores)
    if args.format == "json":
        print(json.dumps({"cases": [asdict(s) for s in scores], "totals": totals(scores),
                          "targets": TARGETS}, indent=2))
    else:
        print(table(scores, args.format))
    return 0

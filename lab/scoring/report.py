"""The lab's score as tables (text or markdown), as JSON, and as the floor
the test suite holds it to (``lab/scores.toml``).

``python -m lab score`` prints one row a case with a column per interval
(``ok``, or what went wrong at that interval), then the totals per
interval; ``--interval N`` prints the detailed table of one interval.
"""
from __future__ import annotations

import json
import sys
import tomllib
from dataclasses import asdict
from pathlib import Path

from lab.scoring.score import (CASES, START_TOLERANCE_S, TARGETS, CaseScore, intervals_of, score_intervals,
                               totals)

HERE = Path(__file__).resolve().parent
FLOOR = HERE.parent / "scores.toml"


def interval_name(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds >= 600 and seconds % 60 == 0 else f"{seconds} s"


def _mark(ok) -> str:
    return "-" if ok is None else ("yes" if ok else "NO")


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f} %"


def verdict(s: CaseScore) -> str:
    """``ok``, or what rank 1 got wrong, in a few words."""
    if s.error:
        return f"error: {s.error}"
    if s.quiet:
        return "ok" if not s.incidents else f"{s.incidents} incident{'s' * (s.incidents > 1)} (rank 1 {s.rank1})"
    wrong = []
    if not s.category_ok:
        wrong.append(f"rank 1 {s.rank1}")
    if s.start_error_s is None or s.start_error_s > START_TOLERANCE_S:
        wrong.append("no start" if s.start_error_s is None else f"start {s.start_error_s:.0f} s off")
    if not s.cause_ok and s.rank1 != "none":
        wrong.append(f"cause {s.cause}")
    if s.named is False and s.rank1 != "none":
        wrong.append("not named")
    if s.host_ok is False and s.rank1 != "none":
        wrong.append("wrong host")
    if s.contradicted:
        wrong.append(f"{len(s.contradicted)} contradicted")
    return "; ".join(wrong) or "ok"


def _render(head: list[str], rows: list[list[str]], fmt: str) -> list[str]:
    if fmt == "markdown":
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |"
                                                                           for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head] + rows]


def footnote(scores: list[CaseScore]) -> str:
    t = totals(scores)
    return (f"{t['cases']} cases of {t['kinds']} kinds ({t['quiet_cases']} quiet): top-1 category "
            f"{_pct(t['category'])}, start within {START_TOLERANCE_S:g} s {_pct(t['start'])}, cause detector "
            f"{_pct(t['cause'])}, responsible named {_pct(t['named'])} (of {t['named_cases']}), contradicted "
            f"advice {t['contradicted']}, incidents on quiet days {t['quiet_incidents']}, the cause's series in "
            f"the top 5 changed {_pct(t['changed'])} (of {t['changed_cases']})")


def table(scores: list[CaseScore], fmt: str = "text") -> str:
    """The detailed table of one interval."""
    head = ["case", "kind", "rank 1", "category", "start error s", "cause", "named", "changed", "contradicted",
            "incidents"]
    rows = []
    for s in scores:
        err = "-" if s.start_error_s is None else f"{s.start_error_s:.0f}"
        rows.append([s.case, s.kind, s.rank1 + (f" ({s.error})" if s.error else ""), _mark(s.category_ok), err,
                     f"{s.cause} {_mark(s.cause_ok)}" if not s.quiet else "-", _mark(s.named), _mark(s.changed),
                     str(len(s.contradicted)), str(s.incidents)])
    lines = _render(head, rows, fmt)
    details = [f"  {s.case}: {c}" for s in scores for c in s.contradicted]
    if details and fmt != "markdown":
        lines += ["", "contradicted advice:"] + details
    return "\n".join(lines + ["", footnote(scores)])


def overview(by_interval: dict[int, list[CaseScore]], fmt: str = "text") -> str:
    """One row a case, a column per interval; then the totals per interval."""
    intervals = sorted(by_interval)
    cells: dict[str, dict[int, str]] = {}
    kinds: dict[str, str] = {}
    for i in intervals:
        for s in by_interval[i]:
            cells.setdefault(s.case, {})[i] = verdict(s)
            kinds[s.case] = s.kind
    head = ["case", "kind"] + [interval_name(i) for i in intervals]
    rows = [[case, kinds[case]] + [cells[case].get(i, "-") for i in intervals] for case in sorted(cells)]
    lines = _render(head, rows, fmt) + [""] + totals_table(by_interval, fmt)
    return "\n".join(lines)


def totals_table(by_interval: dict[int, list[CaseScore]], fmt: str = "text") -> list[str]:
    head = ["interval", "cases", "top-1 category", "start within one interval + 10 s", "cause detector",
            "responsible named", "right host", "contradicted advice", "incidents on quiet days",
            "cause's series in top 5 changed"]
    rows = []
    for i in sorted(by_interval):
        t = totals(by_interval[i])
        rows.append([interval_name(i), f"{t['cases']} ({t['quiet_cases']} quiet)", _pct(t["category"]),
                     _pct(t["start"]), _pct(t["cause"]), f"{_pct(t['named'])} of {t['named_cases']}",
                     _pct(t["host"]), str(t["contradicted"]), str(t["quiet_incidents"]),
                     f"{_pct(t['changed'])} of {t['changed_cases']}"])
    return _render(head, rows, fmt)


def lab_counts(folders: list[Path]) -> dict:
    """What the lab holds: cases, kinds, and the cases of each sort the
    lab promises (with a confounder, quiet days, long, with a collector,
    of several hosts)."""
    truths = [tomllib.loads((f / "truth.toml").read_text()) for f in folders]
    return {
        "cases": len(truths), "kinds": len({t["kind"] for t in truths}),
        "confounded": sum(1 for t in truths if t.get("confounders")),
        "quiet_days": sum(1 for t in truths if t.get("quiet")),
        "long": sum(1 for f in folders if 600 in intervals_of(f)),
        "collector": sum(1 for t in truths if t.get("collector")),
        "two_host": sum(1 for t in truths if t.get("hosts")),
    }


def floor_values(by_interval: dict[int, list[CaseScore]]) -> dict[str, dict]:
    out = {}
    for i, scores in sorted(by_interval.items()):
        t = totals(scores)
        out[f"at_{i}s"] = {"cases": t["cases"], "category": t["category"] or 0.0, "start": t["start"] or 0.0,
                           "cause": t["cause"] or 0.0, "named": t["named"] or 0.0, "host": t["host"] or 0.0,
                           "contradicted": t["contradicted"], "quiet_incidents": t["quiet_incidents"]}
    return out


def write_floor(folders: list[Path], by_interval: dict[int, list[CaseScore]]) -> None:
    """Hold the test suite to these scores: ``lab/scores.toml``."""
    head = FLOOR.read_text().split("[floor]")[0]
    body = [f"{k} = {v}" for k, v in lab_counts(folders).items()]
    for name, values in floor_values(by_interval).items():
        body += ["", f"[floor.{name}]"] + [f"{k} = {v}" for k, v in values.items()]
    FLOOR.write_text(f"{head}[floor]\n" + "\n".join(body) + "\n")


def read_floor() -> dict:
    with open(FLOOR, "rb") as fh:
        return tomllib.load(fh)["floor"]


def main(args) -> int:
    root = Path(args.cases_dir)
    folders = [root / c for c in args.cases] if args.cases else sorted(
        p.parent for p in root.glob("*/truth.toml"))
    if not folders:
        print(f"no recorded cases in {root}", file=sys.stderr)
        return 2
    intervals = [args.interval] if args.interval else None
    by_interval = score_intervals(folders, intervals, Path(args.cache) if args.cache else None)
    if args.set_floor:
        if intervals or root.resolve() != CASES.resolve() or args.cases:
            print("--set-floor scores every case of lab/cases at every interval: give no case and no --interval",
                  file=sys.stderr)
            return 2
        write_floor(folders, by_interval)
    if args.format == "json":
        print(json.dumps({"intervals": {str(i): {"cases": [asdict(s) for s in scores], "totals": totals(scores)}
                                        for i, scores in by_interval.items()},
                          "lab": lab_counts(folders), "targets": TARGETS}, indent=2))
    elif args.interval:
        print(table(by_interval[args.interval], args.format))
    else:
        print(overview(by_interval, args.format))
    return 0

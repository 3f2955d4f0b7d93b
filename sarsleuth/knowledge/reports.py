"""How log reports continue past their first line: ``knowledge/reports.toml``,
read once.

Which kinds of message are followed by lines of their own (a call trace, an
OOM report's tables, an nginx message's continuation), how many and for how
long, how the lines of one OOM kill are grouped, and which rate-limit
summaries (``N callbacks suppressed``) count for which kinds.  The log
assembler (:mod:`sarsleuth.inputs.parsers.logs.assembly`) applies it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sarsleuth.knowledge import read_toml


@dataclass(frozen=True)
class ReportRule:
    kind: str
    follow_lines: int
    pid_from_detail: bool = False
    repeats_join: bool = False
    tail: str | None = None       # the definition of the lines it takes (glued to its message)
    joins: frozenset = frozenset()  # other kinds whose lines inside the report are part of it


@dataclass(frozen=True)
class Knowledge:
    """``knowledge/reports.toml``, compiled."""

    reports: dict                 # kind -> ReportRule
    task_header: str              # definition of a dump's task line
    task_header_lines: int
    kill_kind: str
    kill_line_gap: int
    kill_seconds: float
    reaper_seconds: float
    continued_sources: dict       # source -> follow lines
    ratelimit: dict               # limiter function -> set of kinds
    never_suppressed: frozenset


@lru_cache(maxsize=1)
def knowledge() -> Knowledge:
    data = read_toml("reports.toml")
    reports = {}
    for entry in data["report"]:
        reports[entry["kind"]] = ReportRule(
            entry["kind"], int(entry["follow_lines"]), bool(entry.get("pid_from_detail")),
            bool(entry.get("repeats_join")), entry.get("tail"), frozenset(entry.get("joins", ())))
    kg = data["kill_group"]
    return Knowledge(
        reports, data["detail_task"]["definition"], int(data["detail_task"]["detail_lines"]),
        kg["kind"], int(kg["max_line_gap"]), float(kg["max_seconds"]), float(kg["reaper_max_seconds"]),
        {e["source"]: int(e["follow_lines"]) for e in data.get("continued_source", [])},
        {e["function"]: frozenset(e["kinds"]) for e in data.get("ratelimit", [])},
        frozenset(data["suppression"]["never"]))


def known_ratelimiters() -> frozenset:
    """Limiter functions whose count goes to an event of their kinds."""
    return frozenset(knowledge().ratelimit)

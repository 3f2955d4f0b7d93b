"""Lark grammars of the load-test reports, and the machinery that runs them.

Each tool has two grammar files beside this module:

* ``<tool>.lark`` describes one *statement*: a line the tool prints, such as
  ``Requests per second:    95.00 [#/sec] (mean)``.  It is an LALR grammar
  whose start rule lists every statement the tool can print.
* ``<tool>-document.lark`` describes the *order* of statements in one report
  (banner, progress, results...).  Its terminals are the statement names of
  the first grammar, upper-cased and declared with ``%declare``.

Reading a file is then two passes:

1. every line is cleaned of paste debris (markdown fences, bullets,
   backticks, a glued ``^C``) without moving any column, then parsed as a
   statement.  A line whose first token is not one of the tool's keywords is
   an *unknown* line (prose around a paste, stderr chatter) and is skipped; a
   line that starts with a keyword but then breaks the statement's syntax is a
   :class:`Problem` with its line and column.
2. the statements are fed one by one to the document parser.  When a
   statement cannot continue the current report but the report may end there,
   a new report starts with it: this is how several pasted reports in one file
   are split.  A statement that fits nowhere is a :class:`Problem` too.

Compiled parsers are cached: a grammar is compiled once per process, and
only when a file of its tool is read (lark itself loads then too: sniffing
and ``--help`` stay light).  The lark side lives in :mod:`._engine`; units,
command lines and the Source built from reports in their own modules.
"""
from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass, field


@dataclass
class Statement:
    """One recognised line: its grammar rule, the named values, and where."""

    kind: str
    fields: dict
    line: int
    column: int
    text: str
    flags: frozenset = frozenset()


@dataclass
class Problem:
    """A syntax error inside a statement or in the order of statements."""

    line: int
    column: int
    message: str

    def describe(self) -> str:
        return f"column {self.column}: {self.message}"


@dataclass
class Reading:
    """What pass 1 and pass 2 made of a file."""

    reports: list = field(default_factory=list)     # list[list[Statement]]
    problems: list = field(default_factory=list)    # list[Problem]
    unknown_lines: int = 0


def grammar_text(name: str) -> str:
    """The text of ``<name>.lark`` shipped in this package."""
    return importlib.resources.files(__name__).joinpath(f"{name}.lark").read_text(encoding="utf-8")


# --------------------------------------------------------------------------
# pass 1: cleaning and statements

_FENCE = re.compile(r"```(?:[A-Za-z0-9_+-]+\s*$)?")
_BULLET = re.compile(r"^(\s*)([-*+>])(\s+)(?=\S)")
_CTRL_C = re.compile(r"^(\s*)\^C")
_ANNOTATION = re.compile(r"\s+(<-+|←).*$")


def clean_line(text: str) -> tuple[str, frozenset]:
    """Blank out paste debris without moving columns; return the cleaned
    text and flags (``interrupted`` for a glued ``^C``)."""
    flags = set()
    text = _FENCE.sub(lambda m: " " * len(m.group(0)), text).replace("`", " ")
    m = _CTRL_C.match(text)
    if m:
        flags.add("interrupted")
        text = m.group(1) + "  " + text[m.end():]
    m = _BULLET.match(text)
    if m:
        text = m.group(1) + " " * len(m.group(2)) + m.group(3) + text[m.end():]
    text = _ANNOTATION.sub("", text)
    return text.rstrip(), frozenset(flags)


#: Names served by the lark side, loaded on first use.
_ENGINE_NAMES = {"statement_parser", "document_parser", "parse_statement", "read_statements", "split_reports"}


def __getattr__(name: str):
    if name in _ENGINE_NAMES:
        from sarsleuth.inputs.parsers.loadtest.grammars import engine
        return getattr(engine, name)
    raise AttributeError(name)


def read_document(name: str, lines, recognise_extra=None, starts=None) -> Reading:
    """Both passes over one file's lines (``starts``: see split_reports)."""
    # the engine (and lark) load with the first report read; it imports this package's names
    from sarsleuth.inputs.parsers.loadtest.grammars.engine import read_statements, split_reports
    statements, problems, unknown = read_statements(name, lines, recognise_extra)
    reports, order_problems = split_reports(name, statements, frozenset(starts) if starts else None)
    return Reading(reports=reports, problems=sorted(problems + order_problems, key=lambda p: (p.line, p.column)),
                   unknown_lines=unknown)


# the helpers every tool's reader uses, importable from here
from sarsleuth.inputs.parsers.loadtest.grammars.units import (  # noqa: E402,F401
    exact, integer, metric_count, percentile_key, seconds, size_bytes, split_unit)
from sarsleuth.inputs.parsers.loadtest.grammars.commands import command_options, find_command  # noqa: E402,F401
from sarsleuth.inputs.parsers.loadtest.grammars.reports import (  # noqa: E402,F401
    build_source, fail_without_reports, human_seconds, numbered_lines, parse_report_file, place_report,
    problems_as_warnings, report_clock)

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

Compiled parsers are cached: a grammar is compiled once per process.
"""
from __future__ import annotations

import functools
import importlib.resources
import re
from dataclasses import dataclass, field

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer, PatternStr


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


class _StatementsOnly(Lexer):
    """Document parsers are fed statement tokens by hand; they never lex text."""

    def __init__(self, conf):  # noqa: D401 - lark's lexer protocol
        pass

    def lex(self, lexer_state, parser_state):
        return iter(())


@functools.lru_cache(maxsize=None)
def statement_parser(name: str) -> Lark:
    """Compiled LALR parser of one statement line of tool ``name``."""
    return Lark(grammar_text(name), parser="lalr", lexer="contextual", start="start")


@functools.lru_cache(maxsize=None)
def document_parser(name: str) -> Lark:
    """Compiled LALR parser of the statement order of tool ``name``."""
    return Lark(grammar_text(f"{name}-document"), parser="lalr", lexer=_StatementsOnly, start="start")


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


def _is_keyword(parser: Lark, token: Token) -> bool:
    try:
        return isinstance(parser.get_terminal(token.type).pattern, PatternStr)
    except KeyError:
        return False


def _expected(parser: Lark, names) -> str:
    shown = []
    for name in sorted(names):
        if name in ("$END", "<END-OF-FILE>"):
            shown.append("end of line")
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            shown.append(name.lower())
            continue
        shown.append(repr(pattern.value) if isinstance(pattern, PatternStr) else name.lower())
    if len(shown) > 6:
        shown = shown[:6] + ["..."]
    return ", ".join(shown)


def _tree_fields(tree: Tree) -> dict:
    """Named values of a statement tree: sub-rule name -> its text, named
    terminal -> its text; repeated names become lists."""
    fields: dict = {}

    def put(key, value):
        if key in fields:
            if not isinstance(fields[key], list):
                fields[key] = [fields[key]]
            fields[key].append(value)
        else:
            fields[key] = value

    for child in tree.children:
        if isinstance(child, Tree):
            put(str(child.data), " ".join(str(v) for v in child.scan_values(lambda t: isinstance(t, Token))))
        elif isinstance(child, Token):
            put(child.type.lower(), str(child))
    return fields


def parse_statement(name: str, text: str, line: int):
    """Statement, Problem, or None (not a statement of this tool)."""
    parser = statement_parser(name)
    cleaned, flags = clean_line(text)
    if not cleaned.strip():
        return None
    interactive = parser.parse_interactive(cleaned)
    first = None
    try:
        for token in interactive.iter_parse():
            if first is None:
                first = token
        tree = interactive.feed_eof()
    except UnexpectedInput as err:
        if first is None or not _is_keyword(parser, first):
            return None
        return _problem_from(parser, err, cleaned, line)
    statement = tree.children[0] if tree.data == "start" else tree
    return Statement(kind=str(statement.data), fields=_tree_fields(statement), line=line,
                     column=first.column or 1, text=text, flags=flags)


def _problem_from(parser: Lark, err: UnexpectedInput, cleaned: str, line: int) -> Problem:
    if isinstance(err, UnexpectedCharacters):
        column = err.column
        found = cleaned[column - 1:column + 11].split(" ")[0] or cleaned[column - 1:column]
        message = f"unexpected {found!r}; expected {_expected(parser, err.allowed)}"
    elif isinstance(err, (UnexpectedToken, UnexpectedEOF)) and getattr(err, "token", None) is not None \
            and err.token.type != "$END":
        column = err.column
        message = f"unexpected {str(err.token)!r}; expected {_expected(parser, err.expected)}"
    else:
        column = len(cleaned.rstrip()) + 1
        message = f"line ends too early; expected {_expected(parser, getattr(err, 'expected', ()))}"
    return Problem(line=line, column=column if isinstance(column, int) and column > 0 else 1, message=message)


def read_statements(name: str, lines, recognise_extra=None):
    """Pass 1 over ``(line_number, text)`` pairs.

    ``recognise_extra(text, line)`` may claim lines the grammar cannot
    describe well (shell command lines, whose prompts are free-form); it
    returns a Statement or None.
    """
    statements, problems, unknown = [], [], 0
    for number, text in lines:
        found = recognise_extra(text, number) if recognise_extra else None
        if found is None:
            found = parse_statement(name, text, number)
        if isinstance(found, Statement):
            statements.append(found)
        elif isinstance(found, Problem):
            problems.append(found)
        elif text.strip():
            unknown += 1
    return statements, problems, unknown


# --------------------------------------------------------------------------
# pass 2: the order of statements, and splitting into reports

def _token(statement: Statement) -> Token:
    return Token(statement.kind.upper(), statement.text, line=statement.line, column=statement.column)


def _can_end(interactive) -> bool:
    try:
        interactive.copy().feed_eof()
        return True
    except UnexpectedInput:
        return False


def split_reports(name: str, statements: list, starts: frozenset | None = None) -> tuple[list, list]:
    """Group statements into reports following ``<name>-document.lark``.

    ``starts`` are the statements a report naturally begins with (a command,
    a banner...); a split at any other statement means a statement was out of
    order, and is reported as a Problem."""
    parser = document_parser(name)
    reports, problems = [], []
    current: list = []
    interactive = None
    for statement in statements:
        if interactive is None:
            interactive, current = parser.parse_interactive(""), []
        trial = interactive.copy()
        try:
            trial.feed_token(_token(statement))
            interactive = trial
            current.append(statement)
            continue
        except UnexpectedToken as err:
            expected = _expected(parser, err.expected).replace("end of line", "end of report").replace("_", " ")
        if current:
            if not _can_end(interactive) or (starts is not None and statement.kind not in starts):
                problems.append(Problem(statement.line, statement.column,
                                        f"report cut short: {statement.kind.replace('_', ' ')} where "
                                        f"{expected.lower()} was expected"))
            reports.append(current)
        interactive, current = parser.parse_interactive(""), []
        try:
            interactive.feed_token(_token(statement))
            current.append(statement)
        except UnexpectedToken as err:
            problems.append(Problem(statement.line, statement.column,
                                    f"{statement.kind.replace('_', ' ')} out of place; expected "
                                    f"{_expected(parser, err.expected).lower().replace('_', ' ')}"))
            interactive = None
    if current:
        reports.append(current)
    return reports, problems


def read_document(name: str, lines, recognise_extra=None, starts=None) -> Reading:
    """Both passes over one file's lines (``starts``: see split_reports)."""
    statements, problems, unknown = read_statements(name, lines, recognise_extra)
    reports, order_problems = split_reports(name, statements, frozenset(starts) if starts else None)
    return Reading(reports=reports, problems=sorted(problems + order_problems, key=lambda p: (p.line, p.column)),
                   unknown_lines=unknown)


# --------------------------------------------------------------------------
# units: printed numbers converted exactly (Decimal keeps the printed digits)

_TIME_FACTORS = {"us": "0.000001", "usec": "0.000001", "ms": "0.001", "msec": "0.001",
                 "s": "1", "sec": "1", "m": "60", "min": "60", "h": "3600"}
_SIZE_FACTORS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "M": 1024**2, "MB": 1024**2,
                 "G": 1024**3, "GB": 1024**3, "T": 1024**4, "TB": 1024**4}
_METRIC_FACTORS = {"": 1, "k": 1000, "K": 1000, "M": 1000**2, "G": 1000**3}
_NUMBER_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def exact(number, factor="1") -> float:
    """``number * factor`` computed in decimal, so 111.91 ms gives 0.11191."""
    from decimal import Decimal
    return float(Decimal(str(number)) * Decimal(str(factor)))


def split_unit(text: str) -> tuple[str, str]:
    m = _NUMBER_UNIT.match(text)
    if not m:
        raise ValueError(f"not a number with a unit: {text!r}")
    return m.group(1), m.group(2)


def seconds(text: str, default_unit: str = "s") -> float:
    """``'2.53m'`` -> 151.8 (wrk's ``m`` is minutes), ``'17.00us'`` -> 1.7e-05."""
    number, unit = split_unit(text)
    return exact(number, _TIME_FACTORS[unit or default_unit])


def size_bytes(text: str) -> float:
    """``'3.55MB'`` -> 3722444.8 (1024-based, as wrk and tsar print sizes)."""
    number, unit = split_unit(text)
    return exact(number, _SIZE_FACTORS[unit])


def metric_count(text: str) -> float:
    """``'5.73k'`` -> 5730.0 (wrk's Req/Sec uses metric prefixes)."""
    number, unit = split_unit(text)
    return exact(number, _METRIC_FACTORS[unit])


def integer(text) -> int:
    return int(str(text).strip())


def percentile_key(text: str) -> str:
    """``'99.900%'`` -> ``'99.9'``; ``'50%'`` -> ``'50'``."""
    from decimal import Decimal
    value = Decimal(text.strip().rstrip("%")).normalize()
    return format(value, "f")


# --------------------------------------------------------------------------
# shell command lines pasted with a report

_PROMPT_GLYPHS = "$#>%❯➜»"
#: Longer lines are not command lines (and would make the prompt search slow).
_MAX_COMMAND_CHARS = 4096


def find_command(text: str, programs: tuple[str, ...]) -> str | None:
    """The command line (from the program name on) when ``text`` runs one of
    ``programs`` with options, behind any shell prompt; else None."""
    if len(text) > _MAX_COMMAND_CHARS:
        return None
    names = "|".join(re.escape(p) for p in programs)
    pattern = re.compile(rf"(?:^|(?<=[\s{re.escape(_PROMPT_GLYPHS)}\]]))(?:\S*/)?({names})(?:\.exe)?\s+(-{{1,2}}[A-Za-z_].*)$")
    m = pattern.search(text.strip())
    if not m:
        return None
    return f"{m.group(1)} {m.group(2).strip()}"


def command_options(command: str) -> dict:
    """Options of a command line: ``{'-c': '100', '-k': True, 'url': ...}``.

    Short options glued to their value (``-c100``) and long ``--opt=value``
    forms are both understood; a bare word that looks like a URL or a
    host:port is the target."""
    import shlex
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    options: dict = {}
    i = 1 if words and not words[0].startswith("-") else 0
    while i < len(words):
        word = words[i]
        nxt = words[i + 1] if i + 1 < len(words) else None
        if word.startswith("--"):
            key, eq, value = word.partition("=")
            if eq:
                options[key] = value
            elif nxt is not None and not nxt.startswith("-") and not _looks_like_target(nxt):
                options[key] = nxt
                i += 1
            else:
                options[key] = True
        elif word.startswith("-") and len(word) > 1:
            key, value = word[:2], word[2:]
            if value:
                options[key] = value
            elif nxt is not None and not nxt.startswith("-") and not _looks_like_target(nxt):
                options[key] = nxt
                i += 1
            else:
                options[key] = True
        elif _looks_like_target(word):
            options["url"] = word
        i += 1
    return options


def _looks_like_target(word: str) -> bool:
    return bool(re.match(r"^(https?://|[\w.-]+:\d+(/|$))", word))


# --------------------------------------------------------------------------
# turning report dicts into a Source

def report_clock(path, options):
    """Where reports without their own timestamps sit on the timeline:
    ``(start, end, time_from)``: the file's mtime, an instant (UTC) that the
    case puts on its host's clock.  It is a guess (the file was written when
    the run ended), so ``time_from`` says so."""
    from sarsleuth.textio import file_mtime
    mtime = file_mtime(path)
    return mtime, mtime, "mtime"


def place_report(report: dict, path, line: int, clock) -> None:
    """Fill ``path``, ``line``, ``start``, ``end`` and ``time_from`` of a report
    without timestamps: the file was written when the run ended."""
    import pandas as pd
    start, end, time_from = clock
    report["path"] = str(path)
    report["line"] = line
    duration = report.get("duration_s")
    if time_from == "mtime" and isinstance(duration, (int, float)) and duration == duration:
        report["end"] = end
        report["start"] = end - pd.Timedelta(seconds=float(duration))
    else:
        report["start"], report["end"] = start, end
    report["time_from"] = time_from


def build_source(path, kind: str, reports: list, warnings: list, summarise, *,
                 host=None, metrics=None, meta=None, records=0):
    """A Source with one ``loadtest-run`` event per report."""
    from sarsleuth.model import Source
    from sarsleuth.parsers.base import events_frame, metrics_frame
    events = [{
        "timestamp": r.get("start"), "host": host, "source": r.get("tool", kind), "kind": "loadtest-run",
        "pid": None, "process": r.get("tool", kind), "message": summarise(r), "file": str(path),
        "line": r.get("line"), "level": "info" if not r.get("aborted") else "error",
    } for r in reports]
    source = Source(path=str(path), kind=kind, host=host, reports=reports, warnings=warnings,
                    events=events_frame(events), metrics=metrics if metrics is not None else metrics_frame(),
                    records=records or len(reports), meta=meta or {})
    return source


def problems_as_warnings(path, problems) -> list:
    from sarsleuth.errors import located
    return [located(path, p.describe(), line=p.line) for p in problems]


def fail_without_reports(path, tool: str, reading: Reading):
    """Raise the InputError of a file where no report of ``tool`` remains,
    naming the first syntax problem (line and column) when there is one."""
    from sarsleuth.errors import InputError
    if reading.problems:
        first = reading.problems[0]
        raise InputError(path, f"malformed {tool} report: {first.describe()}", line=first.line)
    raise InputError(path, f"no {tool} report found", line=1)


def numbered_lines(path, warnings: list):
    """``(line_number, text)`` of a small report file (decompressed)."""
    from sarsleuth.textio import iter_text_lines
    return list(iter_text_lines(path, warnings))


def human_seconds(value) -> str:
    """``0.264`` -> ``'264 ms'``, ``1157.4`` -> ``'1157.4 s'`` (for messages)."""
    if value is None:
        return "?"
    if value < 0.001:
        return f"{value * 1e6:.4g} us"
    if value < 1:
        return f"{value * 1000:.4g} ms"
    return f"{value:.5g} s"


def parse_report_file(path, options, kind: str, grammar: str, recognise_command, starts, build_report, summarise):
    """Read a file of one tool's reports (ab, httperf, wrk, wrk2): statements,
    reports split and built, placed on the clock, gathered into a Source.
    ``build_report`` turns one statement group into a report dict or None."""
    from sarsleuth.errors import located
    warnings: list = []
    reading = read_document(grammar, numbered_lines(path, warnings), recognise_command, starts)
    reports = [r for r in (build_report(group) for group in reading.reports) if r is not None]
    if not reports:
        fail_without_reports(path, kind, reading)
    warnings += problems_as_warnings(path, reading.problems)
    clock = report_clock(path, options)
    for report in reports:
        warnings += [located(path, message, line=line) for line, message in report.pop("_bad")]
        place_report(report, path, report.pop("_line"), clock)
    return build_source(path, kind, reports, warnings, summarise, records=len(reports))

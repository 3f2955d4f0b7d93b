"""The lark side of the load-test grammars: compiled parsers (cached),
statements parsed from lines, statements grouped into reports."""
from __future__ import annotations

import functools

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer, PatternStr

from sarsleuth.inputs.parsers.loadtest.grammars import Problem, Statement, clean_line, grammar_text


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
    cut_short: dict = {}    # index of a report begun mid-report -> the Problem that said so
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
                cut_short[len(reports) + 1] = problems[-1]
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
    return _join_repasted(reports, problems, cut_short)


def _said(statement: Statement) -> str:
    return " ".join(statement.text.split())


def _repeats(report: list, fragment: list) -> bool:
    """Whether ``fragment`` is the same report pasted again from its middle:
    it repeats at least one of ``report``'s measured lines word for word (a
    header line holds no value and proves nothing), and every line of a kind
    both hold is one ``report`` has (a second run would differ in its rate,
    its times or its counts)."""
    said: dict = {}
    for statement in report:
        said.setdefault(statement.kind, set()).add(_said(statement))
    shared = [s for s in fragment if s.kind in said]
    return any(s.fields for s in shared) and all(_said(s) in said[s.kind] for s in shared)


def _join_repasted(reports: list, problems: list, cut_short: dict) -> tuple[list, list]:
    """A report that begins mid-report with lines of the one before it is
    that report pasted twice (posters repeat lines when they trim a paste):
    one report, its repeated lines read once, and a warning that says so
    instead of the split."""
    joined: list = []
    for index, report in enumerate(reports):
        problem = cut_short.get(index)
        if problem is None or not joined or not _repeats(joined[-1], report):
            joined.append(report)
            continue
        previous = joined[-1]
        seen = {(s.kind, _said(s)) for s in previous}
        repeated = [s for s in report if (s.kind, _said(s)) in seen]
        previous.extend(s for s in report if (s.kind, _said(s)) not in seen)
        problem.message = (f"{len(repeated)} line(s) from here repeat the report above "
                           f"(line {previous[0].line}) word for word: read as one report")
    return joined, problems

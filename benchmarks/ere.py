"""Signature patterns as one POSIX ERE for GNU grep, so the benchmarks can
time ``grep -cE`` with the same patterns as the scan.

The scan itself runs the patterns in process (Hyperscan or Python); this
translation exists only to give grep the same work.  It covers the subset
the signature table uses: literals, classes, groups (capturing, ``(?:``,
``(?i:``), alternation, repeats, ``\\d``, ``\\s``, ``\\w``, ``\\b``.
"""
from __future__ import annotations

import re
import shutil
import subprocess

try:  # Python 3.11+
    import re._constants as _sre_c
    import re._parser as _sre_p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore
    import sre_parse as _sre_p  # type: ignore


def ere_from_python(pattern: str) -> str | None:
    """Translate a Python regex into a POSIX ERE (GNU grep) that matches at
    least what it matches, or None when a construct has no translation.

    Handles the subset the signature table uses: literals, classes, groups
    (capturing, ``(?:``, ``(?i:``), alternation, repeats, ``\\d``, ``\\s``,
    ``\\w``, ``\\b``."""
    try:
        parsed = _sre_p.parse(pattern)
    except re.error:
        return None
    try:
        return _ere_seq(list(parsed), False)
    except _NoERE:
        return None


class _NoERE(Exception):
    pass


_ERE_SPECIAL = set(".[]()*+?{}|^$\\")
_CATEGORY_ERE = {
    _sre_c.CATEGORY_DIGIT: "[0-9]", _sre_c.CATEGORY_NOT_DIGIT: "[^0-9]",
    _sre_c.CATEGORY_SPACE: "[[:space:]]", _sre_c.CATEGORY_NOT_SPACE: "[^[:space:]]",
    _sre_c.CATEGORY_WORD: "[[:alnum:]_]", _sre_c.CATEGORY_NOT_WORD: "[^[:alnum:]_]",
}


def _ere_char(ch: str, ci: bool) -> str:
    if ci and ch.isascii() and ch.isalpha():
        return f"[{ch.lower()}{ch.upper()}]"
    if ch == "]":
        return "[]]"
    return "\\" + ch if ch in _ERE_SPECIAL else ch


def _ere_class(items, ci: bool) -> str:
    """A bracket expression; ``]`` goes first and ``-`` last, as POSIX wants."""
    negate, chars, ranges = False, set(), []
    for op, av in items:
        if op is _sre_c.NEGATE:
            negate = True
        elif op is _sre_c.LITERAL:
            ch = chr(av)
            chars.update({ch.lower(), ch.upper()} if ci and ch.isascii() and ch.isalpha() else {ch})
        elif op is _sre_c.RANGE:
            lo, hi = chr(av[0]), chr(av[1])
            ranges.append(f"{lo}-{hi}")
            if ci and lo.isascii() and hi.isascii() and lo.isalpha() and hi.isalpha():
                ranges.append(f"{lo.swapcase()}-{hi.swapcase()}")
        elif op is _sre_c.CATEGORY and av in _CATEGORY_ERE and not _CATEGORY_ERE[av].startswith("[^"):
            ranges.append(_CATEGORY_ERE[av][1:-1])
        else:
            raise _NoERE
    body = ("]" if "]" in chars else "") + "".join(sorted(chars - {"]", "-", "^"})) + "".join(ranges)
    body += ("^" if "^" in chars else "") + ("-" if "-" in chars else "")
    if body == "^":
        body = "\\^"
    return f"[{'^' if negate else ''}{body}]"


def _ere_class_multibyte(items, ci: bool) -> str:
    """grep runs with LC_ALL=C, where a bracket expression matches one byte:
    non-ASCII members become alternatives of their own."""
    wide = [av for op, av in items if op is _sre_c.LITERAL and av > 127]
    if not wide:
        return _ere_class(items, ci)
    if any(op is _sre_c.NEGATE for op, _ in items):
        raise _NoERE
    narrow = [(op, av) for op, av in items if not (op is _sre_c.LITERAL and av > 127)]
    alternatives = [chr(av) for av in wide]
    if narrow:
        alternatives.insert(0, _ere_class(narrow, ci))
    return "(" + "|".join(alternatives) + ")"


def _ere_seq(items, ci: bool) -> str:
    out = []
    for op, av in items:
        if op is _sre_c.LITERAL:
            out.append(_ere_char(chr(av), ci))
        elif op is _sre_c.NOT_LITERAL:
            out.append(_ere_class([(_sre_c.NEGATE, None), (_sre_c.LITERAL, av)], ci))
        elif op is _sre_c.ANY:
            out.append(".")
        elif op is _sre_c.IN:
            if len(av) == 1 and av[0][0] is _sre_c.CATEGORY and av[0][1] in _CATEGORY_ERE:
                out.append(_CATEGORY_ERE[av[0][1]])
            else:
                out.append(_ere_class_multibyte(av, ci))
        elif op is _sre_c.SUBPATTERN:
            _g, add_flags, del_flags, sub = av
            sub_ci = (ci or bool(add_flags & re.IGNORECASE)) and not (del_flags & re.IGNORECASE)
            out.append("(" + _ere_seq(list(sub), sub_ci) + ")")
        elif op is _sre_c.BRANCH:
            out.append("(" + "|".join(_ere_seq(list(b), ci) for b in av[1]) + ")")
        elif op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT):
            low, high, sub = av
            inner = _ere_seq(list(sub), ci)
            inner = inner if len(list(sub)) == 1 and not inner.endswith(("*", "+", "?", "}")) else f"({inner})"
            if (low, high) == (0, _sre_c.MAXREPEAT):
                out.append(inner + "*")
            elif (low, high) == (1, _sre_c.MAXREPEAT):
                out.append(inner + "+")
            elif (low, high) == (0, 1):
                out.append(inner + "?")
            elif high == _sre_c.MAXREPEAT:
                out.append(f"{inner}{{{low},}}")
            else:
                out.append(f"{inner}{{{low},{high}}}")
        elif op is _sre_c.AT:
            if av in (_sre_c.AT_BOUNDARY,):
                out.append("\\b")
            elif av in (_sre_c.AT_BEGINNING, _sre_c.AT_BEGINNING_STRING):
                out.append("^")
            elif av in (_sre_c.AT_END, _sre_c.AT_END_STRING):
                out.append("$")
            else:
                raise _NoERE
        elif op is _sre_c.CATEGORY and av in _CATEGORY_ERE:
            out.append(_CATEGORY_ERE[av])
        else:
            raise _NoERE
    return "".join(out)


def gnu_grep() -> str | None:
    """Path of a GNU grep, or None (BSD/busybox greps lack what we rely on)."""
    path = shutil.which("grep")
    if not path:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return path if b"GNU grep" in out else None


#: A negative lookahead or lookbehind (one level of groups inside), which ERE lacks.
_LOOKAHEAD = re.compile(r"\(\?<?!(?:[^()]|\([^()]*\))*\)")


def grep_expression(patterns: list[str]) -> str | None:
    """One ERE for all candidate patterns, or None if one cannot be
    translated.  A pattern's negative lookaround is dropped (grep then
    matches a few more lines than the pattern: as much work or more)."""
    parts = []
    for pat in patterns:
        ere = ere_from_python(pat)
        if ere is None:
            ere = ere_from_python(_LOOKAHEAD.sub("", pat))
        if ere is None:
            return None
        parts.append(ere)
    return "|".join(parts)

"""Log stamps whose month names are not one word of letters.

strftime("%b") writes glibc's names as they are: with combining marks (hi
``अप्रैल``: Python's ``\\w`` takes no Mn/Mc mark), of several words (vi
``Thg 6``, ca ``de gen.``, ar_IQ ``كانون الثاني``), with hyphens, slashes or
apostrophes (gv ``J-guer``, byn ``ም/ት``), padded wider than the others (et
``apr  ``) or starting with a digit (mn ``6-р сар``).  The parsers' fast
patterns take a month as one word; the lines they miss are read here, the
words before the day split by the locale tables
(:func:`sarsleuth.knowledge.locales.split_stamp_names`).
"""
from __future__ import annotations

import re

from sarsleuth.errors import located
from sarsleuth.knowledge import locales

#: A stamp as strftime("%b %d %H:%M:%S") writes it, the words before the day
#: (a month, after an optional weekday) taken whole, up to five of them:
#: tried only where the syslog parser's one-word pattern does not read the
#: line, and its words read by the locale tables.
RE_LOOSE = re.compile(
    r"^(?:<(?P<pri>\d{1,3})>)?(?P<names> ?[^\s<:\[\]=/][^\s:\[\]=]{0,47}(?: {1,4}[^\s:\[\]=]{1,48}){0,4}?)"
    r" {1,4}(?P<day>\d{1,2}) (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
    r"(?:[.,](?P<frac>\d{1,9}))?(?: (?P<year>(?:19|20)\d\d)(?= ))?(?P<rest>(?:\s.*)?)$", re.S)


def loose_names(line: str):
    """(match, (weekday, month)) of a stamp :data:`RE_LOOSE` reads, or None."""
    m = RE_LOOSE.match(line)
    if not m:
        return None
    split = locales.split_stamp_names(m.group("names"))
    return (m, split) if split else None


def ambiguous_months(path, text: str, token_of, limit: int = 2000) -> list[str]:
    """Warnings for the month names of a file's head that the file cannot
    settle (fr_CA ``jui`` is July, but starts ``juin`` too: a file of July
    alone cannot tell), naming the first line of each; ``token_of`` reads a line's month token."""
    lines = text.split("\n")[:limit]
    tokens = [t for t in map(token_of, lines) if t is not None]
    if all(locales.english_month(t) is not None for t in tokens):
        return []
    open_ = locales.undecided(tokens)
    if not open_:
        return []
    chosen = locales.resolve(tokens)
    out = []
    for token, months in open_.items():
        line = next((i for i, ln in enumerate(lines, 1) if token_of(ln) == token), None)
        out.append(located(path, f"month name {token!r} stands for "
                                 + " or ".join(_MONTH_NAMES[m - 1] for m in months)
                                 + f" and the file does not tell which: read as {_MONTH_NAMES[chosen[token] - 1]}"
                                 + " (a guess)", line=line))
    return out


def note_unsettled(token: str, months: dict | None, unsettled: dict) -> None:
    """Add ``token`` to ``unsettled`` (token -> its possible months) when
    the file's head did not settle it and it stands for several months."""
    if locales.english_month(token) is not None or (months and locales.normalize(token) in months):
        unsettled[token] = None
        return
    unsettled[token] = locales.undecided([token]).get(token)


def unsettled_warnings(path, unsettled: dict, head_text: str) -> list[str]:
    """Warnings for the names :func:`note_unsettled` kept: met only after
    the head the file's names were settled from, so no line is named."""
    after = head_text.count("\n")
    out = []
    for token, months in unsettled.items():
        if months:
            chosen = locales.resolve([token])[token]
            out.append(located(path, f"month name {token!r}, first met after line {after}, stands for "
                                     + " or ".join(_MONTH_NAMES[m - 1] for m in months)
                                     + f" and the file does not tell which: read as {_MONTH_NAMES[chosen - 1]}"
                                     + " (a guess)"))
    return out


_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
                "October", "November", "December")

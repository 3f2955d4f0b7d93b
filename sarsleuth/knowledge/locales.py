"""Month and weekday names of every locale, from Babel's CLDR data and glibc's.

A journal written under ``LANG=fr_FR.UTF-8`` stamps ``avril 15 10:22:13``, a
German syslog ``Mär  6``, a Chinese one ``4月 15``; ``dmesg -T`` adds the
weekday (``[jeu. juin 30 04:27:42 2022]``).  The names come from CLDR (the
abbreviated and wide forms, format and stand-alone), read lazily: English
names never load Babel, and the first other name builds the table once
(about 0.7 s for CLDR's ~1,000 locales).

Logs are not written from CLDR, though: ``journalctl``, ``dmesg -T`` and
every ``strftime`` caller take glibc's ``LC_TIME`` names, which differ in
places (Czech ``čen``/``čec`` for June/July where CLDR has ``čvn``/``čvc``).
The names glibc writes that CLDR does not give the same language live in
``glibc_time_names.toml`` (written by ``tools/glibc_time_names.py`` from
glibc's locale sources) and join the CLDR table when it is built (some
0.05 s more); names glibc cuts shorter still are read by their start.

Some tokens name different months in different languages (``lis`` is
November in Czech and Polish but October in Croatian).  :func:`resolve`
settles them with the other names of the same file: the languages that
explain most of the file's tokens win, and among months they give alike,
one no other name of the file already stands for (fr_CA's ``jun`` makes its
``jui`` July).  What the file cannot settle, :func:`undecided` names, for a
warning.  :func:`split_stamp_names` finds a month of several words (vi
``Thg 6``) after a weekday of any number of words, the longest month first.
"""
from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import Iterable

from sarsleuth.knowledge import read_toml
from sarsleuth.user_cache import keep_json, read_json

#: English (C locale) names: the fast path, no Babel needed.
_ENGLISH_MONTHS = {name: i for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_ENGLISH_MONTHS.update({"sept": 9, "june": 6, "july": 7})
_ENGLISH_WEEKDAYS = {name: i for i, name in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))}


def normalize(token: str) -> str:
    """The form names are compared in: NFC, case-folded, without the
    abbreviation dot or surrounding punctuation."""
    return unicodedata.normalize("NFC", token).casefold().strip(" .,;:[]()")


def month_candidates(token: str) -> dict[int, frozenset]:
    """{month 1-12: languages that name it so} for one token (empty when no
    language does)."""
    return _month_lookup(normalize(token), _tables()[0], _prefixes)


def weekday_candidates(token: str) -> dict[int, frozenset]:
    """{weekday 0=Monday-6: languages} for one token."""
    key = normalize(token)
    if key in _ENGLISH_WEEKDAYS:
        return {_ENGLISH_WEEKDAYS[key]: frozenset({"en"})}
    return _tables()[1].get(key, {})


def cldr_month_candidates(token: str) -> dict[int, frozenset]:
    """:func:`month_candidates` from CLDR alone (what the glibc names are
    measured against when their data file is written)."""
    return _month_lookup(normalize(token), cldr_tables()[0], _cldr_prefixes)


def cldr_weekday_candidates(token: str) -> dict[int, frozenset]:
    """:func:`weekday_candidates` from CLDR alone."""
    key = normalize(token)
    if key in _ENGLISH_WEEKDAYS:
        return {_ENGLISH_WEEKDAYS[key]: frozenset({"en"})}
    return cldr_tables()[1].get(key, {})


def _month_lookup(key: str, months: dict, prefixes) -> dict[int, frozenset]:
    if key in _ENGLISH_MONTHS:
        return {_ENGLISH_MONTHS[key]: frozenset({"en"})}
    found = months.get(key)
    if found is None and len(key) >= 3:
        # glibc cuts some names shorter than CLDR does (uk_UA "кві" for
        # "квіт.", "тра" for "трав."): a name's own start stands for it
        found = prefixes().get(key)
    return found or {}


def is_month(token: str) -> bool:
    return bool(month_candidates(token))


def resolve(tokens: Iterable[str]) -> dict[str, int]:
    """Month number of each distinct month token of one file.

    Unambiguous tokens map directly; an ambiguous one takes the month its
    best-supported language gives it, the languages being scored by how many
    of the file's other-than-English tokens they explain; among months
    equally supported, one no unambiguous token of the file already names.
    A C-locale name (``Jan``) stays English unless a better-supported
    language names it otherwise (st_ZA writes ``Jan`` for June)."""
    return {token: month for token, (month, _open) in _decide(tokens).items()}


def undecided(tokens: Iterable[str]) -> dict[str, list[int]]:
    """{token: the months it may be} for the tokens of one file that
    :func:`resolve` cannot settle: its best-supported languages give it
    several months, and they are not two to one for one of them (``jui``
    alone: fr ``juin`` or ``juillet``; ``Sad`` alone: om November or so
    March; but ``lis`` alone is November, in cs, pl, be and szl, not hr's
    October)."""
    return {token: open_ for token, (_month, open_) in _decide(tokens).items() if open_}


def _decide(tokens: Iterable[str]) -> dict[str, tuple[int, list[int]]]:
    """{token: (month, months it may equally be, [] when settled)}."""
    distinct = {t: _all_month_candidates(t) for t in dict.fromkeys(tokens)}
    distinct = {t: c for t, c in distinct.items() if c}
    support: dict = {}
    taken = set()
    for token, cands in distinct.items():
        if len(cands) == 1:
            taken.update(cands)
        if english_month(token) is None:
            for langs in cands.values():
                for lang in langs:
                    support[lang] = support.get(lang, 0) + 1
    out = {token: _choose(token, cands, support, taken) for token, cands in distinct.items()}
    # again, a month settled by another token of the file being taken
    settled = {token: month for token, (month, open_) in out.items() if not open_}
    return {token: _choose(token, cands, support, {m for t, m in settled.items() if t != token})
            for token, cands in distinct.items()}


def _choose(token: str, cands: dict, support: dict, taken: set) -> tuple[int, list[int]]:
    if len(cands) == 1:
        return next(iter(cands)), []
    score = {m: max(support.get(lang, 0) for lang in langs) for m, langs in cands.items()}
    best = max(score.values())
    english = english_month(token)
    if english is not None and score.get(english) == best:
        return english, []
    top = sorted(m for m, v in score.items() if v == best)
    top = [m for m in top if m not in taken] or top
    chosen = min(top, key=lambda m: (-len(cands[m]), m))
    others = [m for m in top if m != chosen]
    # the languages' own majority settles it (``mai``: May in 27 languages,
    # August in one), unless a language writes it for two months (fr
    # ``jui``: juin, juillet) or the majority is less than two to one
    # (``Sad``: November in om, March in so)
    clear = all(not (cands[m] & cands[chosen]) and 2 * len(cands[m]) < len(cands[chosen]) for m in others)
    return chosen, [] if clear else top


def _all_month_candidates(token: str) -> dict[int, frozenset]:
    """:func:`month_candidates`, a C-locale name joined by the languages of
    the table that write it too."""
    key = normalize(token)
    found = dict(month_candidates(token))
    if key in _ENGLISH_MONTHS:
        for number, langs in _tables()[0].get(key, {}).items():
            found[number] = found.get(number, frozenset()) | langs
    return found


@lru_cache(maxsize=1)
def _tables() -> tuple[dict, dict]:
    """(months, weekdays): normalized name -> {number: frozenset(languages)},
    CLDR's names and glibc's."""
    months, weekdays = _read_cldr()     # a copy of its own: cldr_tables() stays unread at run time
    glibc = _glibc_names()
    for table, kind in ((months, "months"), (weekdays, "weekdays")):
        for lang, names in glibc.get(kind, {}).items():
            for name, numbers in names.items():
                slot = table.setdefault(name, {})
                for number in numbers if isinstance(numbers, list) else [numbers]:
                    slot[number] = slot.get(number, frozenset()) | {lang}
    return months, weekdays


def _glibc_names() -> dict:
    """glibc_time_names.toml: {"months"|"weekdays": {language: {name: number(s)}}}."""
    return read_toml("glibc_time_names.toml")


@lru_cache(maxsize=1)
def cldr_tables() -> tuple[dict, dict]:
    """(months, weekdays) of CLDR alone, through Babel."""
    return _build_cldr()


#: Bump when the tables' shape or :func:`normalize` changes: older kept copies are then rebuilt.
_CLDR_TABLES_FORMAT = 1


def _read_cldr() -> tuple[dict, dict]:
    """CLDR's month and weekday names, kept in the user's cache for the
    runs after the first (reading every locale of Babel takes two seconds;
    the copy, a few hundredths), under Babel's version."""
    import babel
    name = f"cldr-time-names-{babel.__version__}-{_CLDR_TABLES_FORMAT}.json"
    tables = _tables_of(read_json(name))
    if tables is None:                  # none kept, or a copy that is not ours: built again
        tables = _build_cldr()
        keep_json(name, [{key: {str(n): sorted(langs) for n, langs in slots.items()} for key, slots in t.items()}
                         for t in tables])
    return tables


def _tables_of(kept) -> tuple[dict, dict] | None:
    """The tables of a kept JSON copy, or None when it is not two tables of
    names to {month or day number: languages}."""
    if not (isinstance(kept, list) and len(kept) == 2 and all(isinstance(t, dict) for t in kept)):
        return None
    try:
        return tuple({key: {int(n): frozenset(langs) for n, langs in slots.items()} for key, slots in t.items()}
                     for t in kept)
    except (TypeError, ValueError, AttributeError):
        return None


def _build_cldr() -> tuple[dict, dict]:
    # here, not at the top: sniff loads this module
    from babel import Locale, localedata
    months: dict = {}
    weekdays: dict = {}
    for ident in localedata.locale_identifiers():
        try:
            loc = Locale.parse(ident)
        except (ValueError, TypeError, LookupError):
            continue
        lang = ident.split("_")[0]
        for table, names in ((months, loc.months), (weekdays, loc.days)):
            for context in ("format", "stand-alone"):
                for width in ("abbreviated", "wide", "short"):
                    try:
                        forms = names[context][width]
                    except (KeyError, LookupError):
                        continue
                    for number, name in forms.items():
                        table.setdefault(normalize(name), {}).setdefault(number, set()).add(lang)
    freeze = lambda t: {k: {n: frozenset(v) for n, v in d.items()} for k, d in t.items()}  # noqa: E731
    return freeze(months), freeze(weekdays)


def english_month(token: str) -> int | None:
    """Month of a C-locale name (``Apr``, ``Sept``), without loading CLDR."""
    return _ENGLISH_MONTHS.get(token.lower().rstrip("."))


def month_of(token: str, settled: dict | None = None) -> int | None:
    """Month 1-12 a file's stamp token stands for, or None.

    ``settled`` is the file's own answer for ambiguous tokens (from
    :func:`settle`); without it an ambiguous token takes the month most
    languages give it."""
    if settled:
        number = settled.get(normalize(token))
        if number is not None:
            return number
    number = english_month(token)
    if number is not None:
        return number
    cands = month_candidates(token)
    if not cands:
        return None
    if len(cands) == 1:
        return next(iter(cands))
    return resolve([token])[token]


def settle(tokens: Iterable[str]) -> dict[str, int]:
    """{normalized token: month} for the month tokens of one file, the
    ambiguous ones settled by the others (see :func:`resolve`).  English-only
    files never load CLDR."""
    distinct = list(dict.fromkeys(tokens))
    if all(english_month(t) is not None for t in distinct):
        return {}
    return {normalize(t): m for t, m in resolve(distinct).items()}


@lru_cache(maxsize=4096)
def is_weekday(token: str) -> bool:
    """Is a token a weekday name in some language (``Thu``, ``jeu.``, ``Do``, ``木``)?"""
    return bool(weekday_candidates(token))


@lru_cache(maxsize=1)
def _prefixes() -> dict:
    """Month names' starts (three characters or more, shorter than the
    name): start -> {number: frozenset(languages)}."""
    return _starts(_tables()[0])


@lru_cache(maxsize=1)
def _cldr_prefixes() -> dict:
    return _starts(cldr_tables()[0])


def _starts(months: dict) -> dict:
    out: dict = {}
    for name, numbers in months.items():
        for end in range(3, len(name)):
            if not name[:end].isalpha():
                continue
            slot = out.setdefault(name[:end], {})
            for number, langs in numbers.items():
                slot[number] = slot.get(number, frozenset()) | langs
    return out


def split_stamp_names(names: str, weekday: bool = True) -> tuple[str | None, str] | None:
    """(weekday or None, month) read from the words before a stamp's day
    number, as glibc writes them: a month of several words read whole, the
    longest first (vi ``Thg 6``, ca ``de gen.``), after an optional weekday
    of any number of words (``dmesg -T``).  None when no split gives a known
    month (and weekday)."""
    names = names.strip(" ")
    if not names:
        return None
    if month_candidates(names):
        return None, names
    if not weekday:
        return None
    for i, ch in enumerate(names):
        if ch == " ":
            day, month = names[:i].strip(" "), names[i + 1:].strip(" ")
            if day and month and month_candidates(month) and weekday_candidates(day):
                return day, month
    return None

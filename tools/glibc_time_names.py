#!/usr/bin/env python3
"""Write ``sarsleuth/knowledge/glibc_time_names.toml`` from glibc's locale sources.

``journalctl``, ``dmesg -T`` and every program calling ``strftime`` write
month and weekday names from glibc's ``LC_TIME`` (``abmon``, ``mon``,
``ab_alt_mon``, ``alt_mon``, ``abday``, ``day``), which differ from CLDR's
in places (Czech ``čen``/``čec`` where CLDR has ``čvn``/``čvc``).  This
reads every locale source (Debian package ``locales``:
``/usr/share/i18n/locales``, the format of ``locale(5)``), follows
``copy`` directives, and keeps, per language, the names that sarsleuth's
CLDR reading does not already give that language with that number.

Run it again when glibc or Babel (CLDR) changes::

    python tools/glibc_time_names.py [--locales DIR] [--output FILE]

The entries of the file it replaces that glibc still writes are kept: the
file then serves every Babel it was written under (its ``cldr`` line lists
them), since CLDR releases change names too.

``--check`` prints the coverage figures (locales whose every month name is
known, before and after, and locales whose ``journalctl`` and ``dmesg -T``
lines the log parsers date right) without writing.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sarsleuth.knowledge import locales  # noqa: E402

LOCALE_DIR = Path("/usr/share/i18n/locales")
OUTPUT = ROOT / "sarsleuth" / "knowledge" / "glibc_time_names.toml"
#: LC_TIME keywords holding names: months (12 each) and weekdays (7, Sunday first).
MONTH_KEYWORDS = ("abmon", "mon", "ab_alt_mon", "alt_mon")
WEEKDAY_KEYWORDS = ("abday", "day")
#: A locale source's name: language, territory, modifier (``sr_RS@latin``, ``eo``).
LOCALE_NAME = re.compile(r"^(?P<lang>[a-z]{2,3})(?:_[A-Z0-9]{2,3})?(?:@[A-Za-z0-9]+)?$")


class SourceError(ValueError):
    pass


def statements(text: str, category: str) -> list[tuple[str, list]]:
    """(keyword, values) of one category of a locale source, in order.

    Values are strings (``"..."`` or bare ``<Uxxxx>`` runs, code points
    decoded) or other bare words.  ``comment_char``/``escape_char`` at the
    top of the file are honoured; the escape character at a line's end
    continues the statement on the next line."""
    comment, escape = "%", "/"
    for line in text.splitlines()[:20]:
        parts = line.split()
        if len(parts) == 2 and parts[0] == "comment_char":
            comment = parts[1]
        elif len(parts) == 2 and parts[0] == "escape_char":
            escape = parts[1]
    body = _category_body(text, category, comment)
    if body is None:
        return []
    out: list[tuple[str, list]] = []
    tokens: list = []
    i, n = 0, len(body)
    while i <= n:
        ch = body[i] if i < n else "\n"
        if ch == "\n":
            if tokens:
                out.append((tokens[0], tokens[1:]))
            tokens = []
            i += 1
        elif ch == comment:
            # a comment runs to the line's end; an escape character ending
            # it still continues the statement (uk_UA: ``"січ"; %sich /``)
            end = body.find("\n", i)
            end = n if end < 0 else end
            i = end + 1 if body[i:end].rstrip().endswith(escape) else end
        elif ch == escape and body[i + 1:i + 2] == "\n":
            i += 2
        elif ch in " \t\r;,":
            i += 1
        elif ch == '"':
            value, i = _string(body, i + 1, escape)
            tokens.append(value)
        else:
            j = i
            while j < n and body[j] not in " \t\r\n;\"" and body[j] != comment:
                j += 1
            word = body[i:j]
            tokens.append(_decode(word, escape) if word.startswith("<") and tokens else word)
            i = j
    return out


def _category_body(text: str, category: str, comment: str) -> str | None:
    lines = text.splitlines()
    start = None
    for k, line in enumerate(lines):
        word = line.split(comment, 1)[0].strip()
        if start is None and word == category:
            start = k + 1
        elif start is not None and word == f"END {category}":
            return "\n".join(lines[start:k]) + "\n"
    return None


def _string(body: str, i: int, escape: str) -> tuple[str, int]:
    j = i
    while j < len(body) and body[j] != '"':
        j += 2 if body[j] == escape else 1
    if j >= len(body):
        raise SourceError("unterminated string")
    return _decode(body[i:j], escape), j + 1


def _decode(raw: str, escape: str) -> str:
    out, i = [], 0
    while i < len(raw):
        if raw[i] == "<":
            end = raw.find(">", i)
            name = raw[i + 1:end]
            if end < 0 or not re.fullmatch(r"U[0-9A-Fa-f]{4,8}", name):
                raise SourceError(f"symbolic name {raw[i:end + 1]!r} in a name")
            out.append(chr(int(name[1:], 16)))
            i = end + 1
        elif raw[i] == escape and raw[i + 1:i + 2] == "\n":
            i += 2                  # a string continued on the next line
        elif raw[i] == escape and i + 1 < len(raw):
            out.append(raw[i + 1])
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return "".join(out)


def read_lc_time(directory: Path) -> dict[str, dict[str, list[str]]]:
    """{locale: {keyword: names}} for every locale with an LC_TIME, ``copy``
    followed (the copied category first, the locale's own keywords over it)."""
    raw: dict[str, list] = {}
    for path in sorted(directory.iterdir()):
        if not LOCALE_NAME.match(path.name):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            stmts = statements(text, "LC_TIME")
        except SourceError as exc:
            raise SourceError(f"{path}: {exc}") from None
        if stmts:
            raw[path.name] = stmts

    resolved: dict[str, dict] = {}

    def resolve(name: str, seen: tuple = ()) -> dict:
        if name in resolved:
            return resolved[name]
        if name in seen:
            raise SourceError(f"copy cycle through {name}")
        fields: dict = {}
        for keyword, values in raw.get(name) or _extra_source(directory, name, raw):
            if keyword == "copy":
                fields.update(resolve(values[0], seen + (name,)))
            elif keyword in MONTH_KEYWORDS + WEEKDAY_KEYWORDS:
                fields[keyword] = list(values)
        resolved[name] = fields
        return fields

    out = {}
    for name in raw:
        fields = dict(resolve(name))
        # localedef's defaults: the alternative forms are the plain ones
        for alt, plain in (("alt_mon", "mon"), ("ab_alt_mon", "abmon")):
            if alt not in fields and plain in fields:
                fields[alt] = fields[plain]
        out[name] = fields
    return out


def _extra_source(directory: Path, name: str, raw: dict) -> list:
    """A copied locale that is not itself a locale name (``copy "i18n"``)."""
    path = directory / name
    if not path.is_file():
        raise SourceError(f"copy of missing locale {name}")
    raw[name] = statements(path.read_text(encoding="utf-8", errors="replace"), "LC_TIME")
    return raw[name]


def names_by_language(lc_time: dict) -> tuple[dict, dict]:
    """(months, weekdays): language -> normalized name -> set of numbers
    (months 1-12, weekdays 0=Monday), over every locale of the language."""
    months: dict = {}
    weekdays: dict = {}
    for locale_name, fields in lc_time.items():
        lang = LOCALE_NAME.match(locale_name).group("lang")
        for keyword in MONTH_KEYWORDS:
            for number, name in enumerate(fields.get(keyword, ()), 1):
                _add(months, lang, name, number)
        for keyword in WEEKDAY_KEYWORDS:
            for index, name in enumerate(fields.get(keyword, ())):
                _add(weekdays, lang, name, (index - 1) % 7)     # glibc lists Sunday first
    return months, weekdays


def _add(table: dict, lang: str, name: str, number: int) -> None:
    key = locales.normalize(name)
    if any(ch.isalpha() for ch in key):      # a name of digits alone is no name token
        table.setdefault(lang, {}).setdefault(key, set()).add(number)


def gives(lookup, name: str, number: int, lang: str) -> bool:
    """The name is read as this number in this language, or is a C-locale
    name of that number (``Jan``, ``Mon``: read before any table, as
    English, and never ambiguous)."""
    found = lookup(name)
    return lang in found.get(number, ()) or (found.get(number) == {"en"} and len(found) == 1)


def differences(months: dict, weekdays: dict) -> dict:
    """{"months"|"weekdays": {language: {name: [numbers]}}}: glibc's names
    sarsleuth's CLDR reading does not give their language.

    A month CLDR only gives through a longer name's start (om ``sad`` for
    ``Sadaasa``) is kept too when the name is another language's whole name
    (so ``sad``): whole names are looked up before starts, so the start
    would no longer be reached.  Repeated until nothing more is kept."""
    cldr = dict(zip(("months", "weekdays"), locales.cldr_tables()))
    lookups = {"months": locales.cldr_month_candidates, "weekdays": locales.cldr_weekday_candidates}
    items = {(kind, lang, key, number)
             for kind, table in (("months", months), ("weekdays", weekdays))
             for lang, names in table.items() for key, numbers in names.items() for number in numbers}
    kept = {item for item in items if not gives(lookups[item[0]], item[2], item[3], item[1])}
    while True:
        whole = {kind: set(cldr[kind]) | {key for k, _, key, _ in kept if k == kind} for kind in cldr}
        more = {(kind, lang, key, number) for kind, lang, key, number in items - kept
                if key in whole[kind] and not _whole_name_gives(cldr[kind], lookups[kind], key, number, lang)}
        if not more:
            break
        kept |= more
    out: dict = {"months": {}, "weekdays": {}}
    for kind, lang, key, number in sorted(kept):
        out[kind].setdefault(lang, {}).setdefault(key, []).append(number)
    return out


def _whole_name_gives(table: dict, lookup, key: str, number: int, lang: str) -> bool:
    return lang in table.get(key, {}).get(number, ()) or gives(lookup, key, number, "en")


def kept_across_cldr(diff: dict, months: dict, weekdays: dict, earlier: dict) -> dict:
    """``diff`` and the entries of an earlier data file (``earlier``, as
    read) that glibc still writes for that language with that number: the
    file then serves every Babel it was written under (a name CLDR 47 gave
    and CLDR 49 changed is kept, and so is one CLDR 49 lacks)."""
    glibc = {"months": months, "weekdays": weekdays}
    items = {(kind, lang, key, n) for kind in diff for lang, names in diff[kind].items()
             for key, numbers in names.items() for n in numbers}
    for kind in ("months", "weekdays"):
        for lang, names in earlier.get(kind, {}).items():
            for key, numbers in names.items():
                for n in (numbers if isinstance(numbers, list) else [numbers]):
                    if n in glibc[kind].get(lang, {}).get(key, ()):
                        items.add((kind, lang, key, n))
    out: dict = {"months": {}, "weekdays": {}}
    for kind, lang, key, number in sorted(items):
        out[kind].setdefault(lang, {}).setdefault(key, []).append(number)
    return out


def glibc_version() -> str:
    try:
        first = subprocess.run(["ldd", "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return first.splitlines()[0].strip()


def cldr_version() -> str:
    """The Babel and CLDR the differences were taken against."""
    import babel
    from babel.core import get_cldr_version
    return f"Babel {babel.__version__}, CLDR {get_cldr_version()}"


def to_toml(diff: dict, version: str, locale_count: int, cldr: str | None = None) -> str:
    lines = [
        "# Month and weekday names glibc's LC_TIME writes that CLDR (as",
        "# sarsleuth/knowledge/locales.py reads it through Babel, in one of the",
        "# releases `cldr` names) does not give the same language: normalized",
        "# names -> month 1-12 / weekday 0=Monday.",
        f"# Generated by tools/glibc_time_names.py from {locale_count} locale sources of",
        f"# {version}",
        "# Do not edit: run the generator again when glibc or Babel changes.",
        "",
        f"glibc = {_quote(version)}",
        f"cldr = {_quote(cldr or cldr_version())}",
    ]
    for kind in ("months", "weekdays"):
        for lang, names in diff[kind].items():
            lines += ["", f"[{kind}.{lang}]"]
            for key, numbers in names.items():
                value = str(numbers[0]) if len(numbers) == 1 else "[" + ", ".join(map(str, numbers)) + "]"
                lines.append(f"{_quote(key)} = {value}")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04X}" for c in escaped) + '"'


def coverage(lc_time: dict, lookup, keywords, first: int = 1) -> tuple[int, int]:
    """(locales all of whose names under ``keywords`` ``lookup`` reads as
    their number in the locale's language, locales with such names)."""
    full = total = 0
    for locale_name, fields in lc_time.items():
        lang = LOCALE_NAME.match(locale_name).group("lang")
        names = [(n, name) for kw in keywords for n, name in enumerate(fields.get(kw, ()), first)
                 if any(ch.isalpha() for ch in name)]
        if not names:
            continue
        total += 1
        full += all(gives(lookup, name, n if first else (n - 1) % 7, lang) for n, name in names)
    return full, total


#: journalctl ``short`` and ``dmesg -T`` lines, as strftime writes them
#: (``%b %d %H:%M:%S`` and ``[%a %b %e %H:%M:%S %Y]``) on the 15th of every
#: month of 2024 and Monday 10 to Sunday 16 June 2024.
JOURNAL_MESSAGE = "web1 kernel: INFO: task jbd2/sda1-8:311 blocked for more than 120 seconds."
DMESG_MESSAGE = "watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [java:102195]"


def log_lines(fields: dict) -> tuple[list, list, list]:
    """(journal lines, dmesg -T lines, their dates) of one locale's names."""
    import datetime as dt
    months = [dt.date(2024, m, 15) for m in range(1, 13)]
    days = [dt.date(2024, 6, d) for d in range(10, 17)] + months
    abmon, abday = fields["abmon"], fields["abday"]
    journal = [f"{abmon[d.month - 1]} {d.day:02d} 10:22:13 {JOURNAL_MESSAGE}" for d in months]
    dmesg = [f"[{abday[(d.weekday() + 1) % 7]} {abmon[d.month - 1]} {d.day:>2} 10:22:13 {d.year}] {DMESG_MESSAGE}"
             for d in days]
    return journal, dmesg, days


def dated_lines(lc_time: dict, scratch: Path) -> tuple[int, int, int, list]:
    """(locales whose journal lines are dated right, whose dmesg -T lines
    are, locales measured, names of the locales missed) by sniffing and
    parsing a file of each as a user's would be."""
    from sarsleuth.inputs.parsers import parse, sniff
    journal_ok = dmesg_ok = total = 0
    missed = []
    for name, fields in sorted(lc_time.items()):
        if not any(ch.isalpha() for n in fields.get("abmon", ()) for ch in n) or len(fields.get("abday", ())) != 7:
            continue
        total += 1
        journal, dmesg, days = log_lines(fields)
        path = scratch / f"{name}.journal"
        path.write_text("\n".join(journal) + "\n", encoding="utf-8")
        ok_j = ok_d = False
        if sniff(path)[0] == "syslog":
            stamps = parse(path).events["timestamp"]          # the file's lines are one message each
            ok_j = [(t.month, t.day, t.hour) for t in stamps] == [(d.month, 15, 10) for d in days[7:]]
        path = scratch / f"{name}.dmesg"
        path.write_text("\n".join(dmesg) + "\n", encoding="utf-8")
        if sniff(path)[0] == "dmesg":
            ok_d = [t.date() for t in parse(path).events["timestamp"]] == days
        journal_ok += ok_j
        dmesg_ok += ok_d
        if not (ok_j and ok_d):
            missed.append(name + ("" if ok_j else " journal") + ("" if ok_d else " dmesg-T"))
    return journal_ok, dmesg_ok, total, missed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locales", type=Path, default=LOCALE_DIR, help="glibc locale sources")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="print how many locales' names are all known, from CLDR alone and with the data file as it stands; "
                             "write nothing")
    args = parser.parse_args(argv)
    if not args.locales.is_dir():
        print(f"error: {args.locales}: no glibc locale sources (Debian package 'locales')", file=sys.stderr)
        return 2
    try:
        lc_time = read_lc_time(args.locales)
    except (SourceError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    months, weekdays = names_by_language(lc_time)
    if args.check:
        for label, keywords, first, cldr, both in (
                ("%b month names", ("abmon",), 1, locales.cldr_month_candidates, locales.month_candidates),
                ("month names (abmon, mon, ab_alt_mon, alt_mon)", MONTH_KEYWORDS, 1,
                 locales.cldr_month_candidates, locales.month_candidates),
                ("weekday names (abday, day)", WEEKDAY_KEYWORDS, 0,
                 locales.cldr_weekday_candidates, locales.weekday_candidates)):
            before, after = coverage(lc_time, cldr, keywords, first), coverage(lc_time, both, keywords, first)
            print(f"locales whose {label} are all known: CLDR {before[0]}/{before[1]}, "
                  f"CLDR and glibc {after[0]}/{after[1]}")
        import tempfile
        with tempfile.TemporaryDirectory() as scratch:
            journal, dmesg, total, missed = dated_lines(lc_time, Path(scratch))
        print(f"locales whose journalctl lines are dated right: {journal}/{total}, dmesg -T lines: {dmesg}/{total}")
        if missed:
            print("missed: " + ", ".join(missed))
        return 0
    diff = differences(months, weekdays)
    cldr = cldr_version()
    if args.output.exists():        # what earlier Babels needed stays (see kept_across_cldr)
        import tomllib
        earlier = tomllib.loads(args.output.read_text(encoding="utf-8"))
        diff = kept_across_cldr(diff, months, weekdays, earlier)
        covered = [c for c in earlier.get("cldr", "").split("; ") if c and c != cldr]
        cldr = "; ".join([*covered, cldr])
    args.output.write_text(to_toml(diff, glibc_version(), len(lc_time), cldr), encoding="utf-8")
    counts = {k: (sum(len(v) for v in diff[k].values()), len(diff[k])) for k in diff}
    print(f"{args.output}: {counts['months'][0]} month names in {counts['months'][1]} languages, "
          f"{counts['weekdays'][0]} weekday names in {counts['weekdays'][1]} languages")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The pure-Python candidate finder: literal needles, then the regex.

Each candidate pattern is reduced to literal *needles*, one of which occurs
in any match; ``bytes.find`` locates needles at memchr speed, and only the
lines holding one are checked with the full pattern.  It needs no optional
package, and is the fallback of :mod:`sarsleuth.parsers.logs.engine`.
"""
from __future__ import annotations

import re

from sarsleuth.textio import MAX_LINE_BYTES

try:  # Python 3.11+
    import re._constants as _sre_c
    import re._parser as _sre_p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore
    import sre_parse as _sre_p  # type: ignore

#: Shortest shared piece worth searching for instead of several needles:
#: shorter pieces occur too often in ordinary lines.
MIN_SHARED_NEEDLE = 7


def required_literals(pattern: str) -> list[tuple[str, bool]] | None:
    """Literal strings one of which occurs in every match of ``pattern``, as
    ``(text, case_insensitive)``; None when no such set can be proven (the
    pattern then has to be searched with the regex itself)."""
    try:
        parsed = _sre_p.parse(pattern)
    except re.error:
        return None
    return _best_option(_sequence_options(list(parsed), False))


def _sequence_options(items, ignore_case: bool) -> list[list[tuple[str, bool]]]:
    """Alternative literal sets for a sequence; each set is sufficient."""
    options: list[list[tuple[str, bool]]] = []
    run: list[str] = []

    def flush():
        if run:
            options.append([("".join(run), ignore_case)])
            run.clear()

    for op, av in items:
        if op is _sre_c.LITERAL:
            run.append(chr(av))
            continue
        flush()
        if op is _sre_c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            ci = (ignore_case or bool(add_flags & re.IGNORECASE)) and not (del_flags & re.IGNORECASE)
            best = _best_option(_sequence_options(list(sub), ci))
            if best:
                options.append(best)
        elif op is _sre_c.BRANCH:
            union: list[tuple[str, bool]] = []
            for branch in av[1]:
                best = _best_option(_sequence_options(list(branch), ignore_case))
                if not best:
                    union = []
                    break
                union.extend(best)
            if union:
                options.append(union)
        elif op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT):
            low, _high, sub = av
            if low >= 1:
                best = _best_option(_sequence_options(list(sub), ignore_case))
                if best:
                    options.append(best)
    flush()
    return options


def _best_option(options):
    """The most selective option: longest shortest literal, then fewest."""
    usable = []
    for opt in options:
        cleaned = []
        for text, ci in opt:
            if ci:  # bytes.lower() folds ASCII only: keep the longest ASCII piece
                text = max(re.split(r"[^\x00-\x7f]", text), key=len)
            if not text:
                cleaned = []
                break
            cleaned.append((text, ci))
        if cleaned:
            usable.append(cleaned)
    if not usable:
        return None
    return max(usable, key=lambda opt: (min(len(t) for t, _ in opt), -len(opt)))


def _minimal_needles(needles: set[str]) -> list[bytes]:
    """A small set of needles that finds every line the given ones find.

    Each ``bytes.find`` pass costs about the same whatever the needle, so
    needles sharing a piece of at least :data:`MIN_SHARED_NEEDLE` characters
    (``upstream``, `` process ``...) are replaced by that piece, greedily,
    and needles containing another needle are dropped."""
    remaining = set(needles)
    chosen: list[str] = []
    while remaining:
        pieces: dict[str, set[str]] = {}
        for n in remaining:
            for size in range(MIN_SHARED_NEEDLE, len(n) + 1):
                for i in range(len(n) - size + 1):
                    pieces.setdefault(n[i:i + size], set()).add(n)
        best = max(pieces.items(), key=lambda kv: (len(kv[1]), len(kv[0])), default=None)
        if best is None or len(best[1]) < 2:
            break
        chosen.append(best[0])
        remaining -= best[1]
    ordered = sorted(chosen + sorted(remaining), key=len)
    kept: list[str] = []
    for n in ordered:
        if not any(k in n for k in kept):
            kept.append(n)
    return [k.encode("utf-8") for k in kept]


def _collect_lines(haystack: bytes, lo: int, hi: int, needles: list[bytes], starts: set[int]) -> None:
    find, rfind = haystack.find, haystack.rfind
    for needle in needles:
        i = find(needle, lo, hi)
        while i != -1:
            starts.add(max(rfind(b"\n", lo, i) + 1, lo))
            end = find(b"\n", i, hi)
            if end == -1:
                break
            i = find(needle, end, hi)


class LineVerifier:
    """Whether a raw line really holds a match: the built-in patterns on
    Python's engine (ours, reviewed), the user's on RE2 (linear time
    whatever the pattern, so no user pattern can stall a scan)."""

    def __init__(self, patterns: tuple, user_patterns: tuple = ()):
        self.regex = re.compile("|".join(f"(?:{p})" for p in patterns).encode("utf-8"))
        self.user = None
        if user_patterns:
            import re2
            self.user = re2.compile("|".join(f"(?:{p})" for p in user_patterns).encode("utf-8"))

    def __call__(self, data: bytes, start: int, end: int) -> bool:
        end = min(end, start + MAX_LINE_BYTES)
        if self.regex.search(data, start, end):
            return True
        return self.user is not None and self.user.search(data[start:end]) is not None


class NeedleFinder:
    """Pure-Python candidate finder (see the module's docstring); patterns
    without a provable needle are searched with their own regex."""

    name = "python"

    def __init__(self, patterns: tuple, user_patterns: tuple = ()):
        self.verify = LineVerifier(patterns, user_patterns)
        exact, folded, fallback, user_fallback = set(), set(), [], []
        for pat in patterns + user_patterns:
            lits = required_literals(pat)
            if lits is None:
                (user_fallback if pat in user_patterns and pat not in patterns else fallback).append(pat)
                continue
            for text, ci in lits:
                (folded if ci else exact).add(text.lower() if ci else text)
        self.exact = _minimal_needles(exact)
        self.folded = _minimal_needles(folded)
        self.fallback = re.compile("|".join(f"(?:{p})" for p in fallback).encode()) if fallback else None
        self.user_fallback = None
        if user_fallback:
            import re2
            self.user_fallback = re2.compile("|".join(f"(?:{p})" for p in user_fallback).encode())

    def find(self, data: bytes, lo: int = 0, hi: int | None = None, newlines=None) -> list[tuple[int, int]]:
        """Candidate line spans within ``data[lo:hi]`` (whole lines)."""
        hi = len(data) if hi is None else hi
        starts: set[int] = set()
        _collect_lines(data, lo, hi, self.exact, starts)
        if self.folded:
            _collect_lines(data.lower(), lo, hi, self.folded, starts)
        if self.fallback is not None:
            for m in self.fallback.finditer(data, lo, hi):
                starts.add(data.rfind(b"\n", lo, m.start()) + 1 or lo)
        if self.user_fallback is not None:
            # RE2 is searched line by line: its matches never cross a line
            start = lo
            while start < hi:
                end = data.find(b"\n", start, hi)
                end = hi if end == -1 else end
                if self.user_fallback.search(data[start:min(end, start + MAX_LINE_BYTES)]):
                    starts.add(start)
                start = end + 1
        out = []
        verify = self.verify
        for start in sorted(starts):
            end = data.find(b"\n", start, hi)
            end = hi if end == -1 else end
            if verify(data, start, end):
                out.append((start, end))
        return out

"""Finding candidate lines: the few lines of a block that may hold an event.

Every signature pattern (``knowledge/signatures.toml``, plus the user's
``[[signature]]`` entries and what a format adds) is searched over a whole
block of raw bytes at once, without decoding anything, by a compiled
multi-pattern engine:

* :class:`HyperscanFinder` uses Intel's Hyperscan (the ``hyperscan``
  package, installed with sarsleuth wherever a wheel exists): all patterns
  in one automaton, one pass over the block, several GB/s;
* :class:`Re2Finder` uses RE2 (``google-re2``, always installed) where
  Hyperscan is not: one RE2 search over the block finds the next line
  holding a match, and an ``re2.Set`` of the same patterns tells which of
  them that line holds.

A compiled Hyperscan database is kept for later runs
(:mod:`~sarsleuth.inputs.parsers.logs.compiled_patterns`).  Both run in C
without the interpreter lock, and both hand back the spans
of the lines a pattern really matches: each candidate line is checked with
the patterns the engine saw on it, on Python's engine for the built-in
patterns (the ones the signatures were written for) and on RE2 for the
user's, so the engines agree line for line.  Both run in this process:
there is no child process whose failure could lose events.  Compiled
finders are cached per pattern set, so the setup is paid once per process.
"""
from __future__ import annotations

import os
import re
import threading
from functools import lru_cache

import numpy as np
import re2

from sarsleuth.knowledge import signatures
from sarsleuth.inputs.parsers.logs import compiled_patterns
from sarsleuth.inputs.parsers.logs.pattern_syntax import hyperscan_lacks, re2_superset
from sarsleuth.inputs.reading import MAX_LINE_BYTES

#: Lines the signatures do not classify but the assembler needs to see:
#: rate-limit summaries (their count belongs to a neighbouring event).
STRUCTURAL_PATTERNS = (r"callbacks suppressed",)

#: Engines by name: ``SARSLEUTH_LOG_ENGINE`` or ``engine=`` choose one.
ENGINES = ("hyperscan", "re2")

#: Memory RE2 may give its automata (the default, 8 MB, makes the DFA of
#: the whole pattern set start over several times per block).
RE2_MAX_MEM = 64 << 20


def _scoped(pattern: str) -> str:
    """A leading global ``(?i)`` as a scoped group (patterns are joined)."""
    return "(?i:" + pattern[4:] + ")" if pattern.startswith("(?i)") else pattern


def _relaxed(pattern: str) -> str:
    """A pattern as a candidate test: scoped, a ``^`` anchor dropped (raw
    lines carry their prefix)."""
    pattern = _scoped(pattern)
    return pattern[1:] if pattern.startswith("^") else pattern


def candidate_patterns(user_signatures: tuple = ()) -> list[str]:
    """Every pattern a candidate line may match: built-in signature patterns
    plus the structural ones (and the user's, when given)."""
    out = [_relaxed(p) for sig in signatures.all_signatures(user_signatures) for p in sig.patterns]
    return out + list(STRUCTURAL_PATTERNS)


@lru_cache(maxsize=4)
def candidate_regex():
    """One bytes regex matching (somewhere in it) every candidate line."""
    return re.compile("|".join(f"(?:{p})" for p in candidate_patterns()).encode("utf-8"))


def hyperscan_available() -> bool:
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    return True


def default_engine() -> str:
    """The engine a scan uses unless told otherwise."""
    return "hyperscan" if hyperscan_available() else "re2"


class HyperscanFinder:
    """All candidate patterns in one Hyperscan database, scanned per block.

    Hyperscan reports the end of every match; each line holding a match end
    is then checked with the patterns (a match that runs over a newline,
    which ``[^)]`` or ``\\s`` allow in Hyperscan, is not a line's match)."""

    name = "hyperscan"

    def __init__(self, patterns: tuple, user_patterns: tuple = ()):
        # an extra: the core works without it
        import hyperscan
        everything = [p.encode("utf-8") for p in patterns + user_patterns]
        # a construct Hyperscan lacks: search a superset for that pattern
        # instead (prefilter), the line check below keeps only real matches;
        # the ones Python's parse shows are known before compiling
        flags = [hyperscan.HS_FLAG_MULTILINE | (hyperscan.HS_FLAG_PREFILTER if hyperscan_lacks(p) else 0)
                 for p in patterns] + [hyperscan.HS_FLAG_MULTILINE] * len(user_patterns)
        self._scratch = threading.local()   # a scratch space serves one scan at a time
        self.checks = _line_checks(patterns, user_patterns)
        asked = list(flags)
        self.db = compiled_patterns.load(hyperscan, everything, asked)
        if self.db is not None:
            return
        self.db = hyperscan.Database()
        try:
            self.db.compile(expressions=everything, ids=list(range(len(everything))),
                            elements=len(everything), flags=flags)
        except hyperscan.error:
            # one the parse did not show (a user's): each pattern tried alone
            for i, expr in enumerate(everything):
                try:
                    hyperscan.Database().compile(expressions=[expr], ids=[0], elements=1, flags=[flags[i]])
                except hyperscan.error:
                    flags[i] |= hyperscan.HS_FLAG_PREFILTER
            self.db.compile(expressions=everything, ids=list(range(len(everything))),
                            elements=len(everything), flags=flags)
        compiled_patterns.store(hyperscan, everything, asked, self.db)

    def find(self, data, lo: int = 0, hi: int | None = None, newlines=None) -> list[tuple]:
        """Candidate lines within ``data[lo:hi]``: (start, end, numbers of
        the patterns the line holds); ``newlines`` are the positions of its
        newlines when the caller has them (numpy array)."""
        hi = len(data) if hi is None else hi
        ends: list[int] = []
        ids: list[int] = []
        scratch = getattr(self._scratch, "space", None)
        if scratch is None:
            import hyperscan
            scratch = self._scratch.space = hyperscan.Scratch(self.db)
        self.db.scan(memoryview(data)[lo:hi], match_event_handler=_collector(ends, ids), scratch=scratch)
        if not ends:
            return []
        if newlines is None:
            window = np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)
            newlines = np.flatnonzero(window == 10) + lo
        hits = np.asarray(ends, dtype=np.int64) + (lo - 1)       # last byte of each match
        lines: dict[int, set] = {}
        for line, pattern in zip(np.searchsorted(newlines, hits, side="left").tolist(), ids):
            lines.setdefault(line, set()).add(pattern)
        count, out = len(newlines), []
        for line in sorted(lines):
            start = int(newlines[line - 1]) + 1 if line > 0 else lo
            end = int(newlines[line]) if line < count else hi
            # only the patterns that matched around this line are tried on it
            held = self._held(data, start, end, lines[line])
            if held:
                out.append((start, end, held))
        return out

    def _held(self, data, start: int, end: int, ids) -> tuple:
        stop, checks = min(end, start + MAX_LINE_BYTES), self.checks
        return tuple(p for p in sorted(ids) if checks[p](data, start, stop))


class Re2Finder:
    """The candidate patterns on RE2, for hosts without Hyperscan.

    One RE2 search over the block finds the leftmost match; its line is a
    candidate, and the next search starts at the following line, so a match
    that runs over a newline can hide nothing (the line after it is searched
    from its start).  An ``re2.Set`` of the same patterns names the ones the
    candidate line holds, and those are checked as Hyperscan's are.

    RE2 runs the built-in patterns (written for Python's engine) as RE2
    patterns matching a superset of their lines (:func:`re2_superset`), the
    user's (RE2 syntax already) as they are."""

    name = "re2"

    def __init__(self, patterns: tuple, user_patterns: tuple = ()):
        options = re2.Options()
        options.encoding = re2.Options.Encoding.LATIN1      # bytes, as Python's bytes patterns see them
        options.max_mem = RE2_MAX_MEM
        everything = [re2_superset(p) for p in patterns] + [_user_pattern(p, options) for p in user_patterns]
        self.search = re2.compile(b"|".join(b"(?:" + p + b")" for p in everything), options).search
        self.set = re2.Set.SearchSet(options)
        for p in everything:
            self.set.Add(p)
        self.set.Compile()
        self.checks = _line_checks(patterns, user_patterns)

    def find(self, data, lo: int = 0, hi: int | None = None, newlines=None) -> list[tuple]:
        """Candidate lines within ``data[lo:hi]``: (start, end, numbers of
        the patterns the line holds)."""
        hi = len(data) if hi is None else hi
        search, named, checks = self.search, self.set.Match, self.checks
        out, pos = [], lo
        while pos < hi:
            m = search(data, pos, hi)
            if m is None:
                break
            at = m.start()
            start = max(data.rfind(b"\n", lo, at) + 1, pos)
            end = data.find(b"\n", at, hi)
            end = hi if end == -1 else end
            stop = min(end, start + MAX_LINE_BYTES)
            held = tuple(p for p in sorted(named(bytes(data[start:stop])) or ()) if checks[p](data, start, stop))
            if held:
                out.append((start, end, held))
            pos = end + 1
        return out


def _user_pattern(pattern: str, options) -> bytes:
    """A user's pattern for RE2: as written (RE2 syntax), or, should RE2
    refuse it, its superset read as Python reads it."""
    try:
        re2.compile(pattern.encode("utf-8"), options)
    except re2.error:
        return re2_superset(pattern)
    return pattern.encode("utf-8")


def _line_checks(patterns: tuple, user_patterns: tuple) -> list:
    return [_line_check(p.encode("utf-8"), False) for p in patterns] + \
           [_line_check(p.encode("utf-8"), True) for p in user_patterns]


def _line_check(pattern: bytes, user: bool):
    """``check(data, start, end)``: whether ``data[start:end]`` holds a match
    (built-in patterns on Python's engine, the user's on RE2)."""
    if user:
        import re2
        search = re2.compile(pattern).search
        return lambda data, start, end: search(data[start:end]) is not None
    search = re.compile(pattern).search
    return lambda data, start, end: search(data, start, end) is not None


def _collector(ends: list, ids: list):
    add_end, add_id = ends.append, ids.append

    def on_match(pattern, _start, end, _flags, _context):
        add_end(end)
        add_id(pattern)
    return on_match


@lru_cache(maxsize=16)
def _finder(engine: str, patterns: tuple, user_patterns: tuple):
    if engine == "re2":
        return Re2Finder(patterns, user_patterns)
    # an extra: the core works without it
    import hyperscan
    try:
        return HyperscanFinder(patterns, user_patterns)
    except hyperscan.error:         # a pattern Hyperscan cannot take even as a prefilter
        return Re2Finder(patterns, user_patterns)


def make_finder(all_lines: bool = False, engine: str | None = None, extra_patterns: tuple = (),
                user_signatures: tuple = ()):
    """The candidate finder for a scan and the :class:`PatternKinds` of its
    patterns (cached: built once per pattern set).

    ``engine`` forces ``"hyperscan"`` or ``"re2"`` (also env
    ``SARSLEUTH_LOG_ENGINE``); by default Hyperscan when it is installed."""
    if all_lines:
        return AllLinesFinder(), None
    if engine is None:
        chosen = os.environ.get("SARSLEUTH_LOG_ENGINE")
        # an engine this version lacks (``grep`` and ``python`` were ones) means the default
        engine = chosen if chosen in ENGINES else None
    engine = engine or default_engine()
    if engine not in ENGINES:
        raise ValueError(f"unknown log engine {engine!r} (one of {', '.join(ENGINES)})")
    if engine == "hyperscan" and not hyperscan_available():
        engine = "re2"
    patterns = tuple(candidate_patterns()) + tuple(extra_patterns)
    user = tuple(_relaxed(p) for sig in user_signatures for p in sig.patterns)
    return _finder(engine, patterns, user), _kinds(len(extra_patterns), tuple(user_signatures))


class PatternKinds:
    """The event kind of a candidate line's message, read from the numbers
    of the patterns its line holds (as a finder numbers them: built-in
    patterns, the structural ones, a format's extras, the user's).

    The answer is :func:`~sarsleuth.knowledge.signatures.classify`'s: of the
    built-in patterns the line holds, the one matching the message leftmost
    (the first in the table at the same place), else the first of the
    user's that matches it; each pattern the line does not hold cannot match
    its message, which is part of the line.  Only the patterns of the line
    are tried, not the whole table."""

    def __init__(self, extras: int, user_signatures: tuple):
        self.builtin = [(re.compile(_scoped(p)), sig.id)
                        for sig in signatures.builtin_signatures() for p in sig.patterns]
        self.others = len(self.builtin) + len(STRUCTURAL_PATTERNS) + extras   # where the user's patterns start
        self.extras = range(len(self.builtin) + len(STRUCTURAL_PATTERNS), self.others)
        self.user = []
        if user_signatures:
            import re2
            self.user = [(re2.compile(_scoped(p)), sig.id) for sig in user_signatures for p in sig.patterns]

    def kind(self, message: str, ids: tuple) -> str | None:
        """``ids``: the numbers of the patterns the line holds, ascending."""
        best = None
        for i in ids:
            if i >= len(self.builtin):
                break
            m = self.builtin[i][0].search(message)
            if m is not None and (best is None or m.start() < best[0]):
                best = (m.start(), i)
        if best is not None:
            return self.builtin[best[1]][1]
        for i in ids:       # the user's, in their order
            if i >= self.others and self.user[i - self.others][0].search(message):
                return self.user[i - self.others][1]
        return None

    def exact_for(self, ids: tuple) -> bool:
        """Can the kind be read from these patterns?  Not when a format's
        extra pattern chose the line (its message is not its raw text)."""
        return not any(i in self.extras for i in ids)


@lru_cache(maxsize=16)
def _kinds(extras: int, user_signatures: tuple) -> PatternKinds:
    return PatternKinds(extras, user_signatures)


class AllLinesFinder:
    """Selects every line (``all_lines=True``: keep every line as a row)."""

    name = "all"

    kinds = None

    def find(self, data, lo: int = 0, hi: int | None = None, newlines=None) -> list[tuple]:
        hi = len(data) if hi is None else hi
        out, start = [], lo
        while start < hi:
            end = data.find(b"\n", start, hi)
            end = hi if end == -1 else end
            out.append((start, end, None))
            start = end + 1
        return out

"""Finding candidate lines: the few lines of a block that may hold an event.

Every signature pattern (``knowledge/signatures.toml``, plus the user's
``[[signature]]`` entries and what a format adds) is searched over a whole
block of raw bytes at once, without decoding anything:

* :class:`HyperscanFinder` uses Intel's Hyperscan (the optional ``hyperscan``
  package): all patterns in one automaton, one pass over the block, several
  GB/s;
* :class:`~sarsleuth.parsers.logs.needles.NeedleFinder` is pure Python
  (literal needles with ``bytes.find``, then the regex) and needs nothing
  optional.

Both return the spans of candidate lines, checked with the patterns
themselves (so the engines agree line for line), and both run in this
process: there is no child process whose failure could lose events.
Compiled finders are cached per pattern set, so the setup is paid once per
process, not once per file.
"""
from __future__ import annotations

import os
import threading
from functools import lru_cache

from sarsleuth.knowledge import signatures
from sarsleuth.parsers.logs.needles import LineVerifier, NeedleFinder
from sarsleuth.textio import MAX_LINE_BYTES

#: Lines the signatures do not classify but the assembler needs to see:
#: rate-limit summaries (their count belongs to a neighbouring event).
STRUCTURAL_PATTERNS = (r"callbacks suppressed",)

#: Engines by name: ``SARSLEUTH_LOG_ENGINE`` or ``engine=`` choose one.
ENGINES = ("hyperscan", "python")


def _relaxed(pattern: str) -> str:
    """A pattern as a candidate test: a global ``(?i)`` scoped (patterns are
    joined), a ``^`` anchor dropped (raw lines carry their prefix)."""
    if pattern.startswith("(?i)"):
        pattern = "(?i:" + pattern[4:] + ")"
    return pattern[1:] if pattern.startswith("^") else pattern


def candidate_patterns(user_signatures: tuple = ()) -> list[str]:
    """Every pattern a candidate line may match: built-in signature patterns
    plus the structural ones (and the user's, when given)."""
    out = [_relaxed(p) for sig in signatures.all_signatures(user_signatures) for p in sig.patterns]
    return out + list(STRUCTURAL_PATTERNS)


@lru_cache(maxsize=4)
def candidate_regex():
    """One bytes regex matching (somewhere in it) every candidate line."""
    return LineVerifier(tuple(candidate_patterns())).regex


def hyperscan_available() -> bool:
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    return True


class HyperscanFinder:
    """All candidate patterns in one Hyperscan database, scanned per block.

    Hyperscan reports the end of every match; each line holding a match end
    is then checked with the patterns (a match that runs over a newline,
    which ``[^)]`` or ``\\s`` allow in Hyperscan, is not a line's match)."""

    name = "hyperscan"

    def __init__(self, patterns: tuple, user_patterns: tuple = ()):
        import hyperscan
        everything = [p.encode("utf-8") for p in patterns + user_patterns]
        flags = [hyperscan.HS_FLAG_MULTILINE] * len(everything)
        self.db = hyperscan.Database()
        try:
            self.db.compile(expressions=everything, ids=list(range(len(everything))),
                            elements=len(everything), flags=flags)
        except hyperscan.error:
            # a construct Hyperscan lacks: search a superset for that pattern
            # instead, the line check below keeps only real matches
            for i, expr in enumerate(everything):
                try:
                    hyperscan.Database().compile(expressions=[expr], ids=[0], elements=1, flags=[flags[i]])
                except hyperscan.error:
                    flags[i] |= hyperscan.HS_FLAG_PREFILTER
            self.db.compile(expressions=everything, ids=list(range(len(everything))),
                            elements=len(everything), flags=flags)
        self._scratch = threading.local()   # a scratch space serves one scan at a time
        self.checks = [_line_check(p.encode("utf-8"), False) for p in patterns] + \
                      [_line_check(p.encode("utf-8"), True) for p in user_patterns]

    def find(self, data: bytes, lo: int = 0, hi: int | None = None, newlines=None) -> list[tuple[int, int]]:
        """Candidate line spans within ``data[lo:hi]``; ``newlines`` are the
        positions of its newlines when the caller has them (numpy array)."""
        import numpy as np
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
        count, checks, out = len(newlines), self.checks, []
        for line in sorted(lines):
            start = int(newlines[line - 1]) + 1 if line > 0 else lo
            end = int(newlines[line]) if line < count else hi
            # only the patterns that matched around this line are tried on it
            if any(checks[p](data, start, min(end, start + MAX_LINE_BYTES)) for p in lines[line]):
                out.append((start, end))
        return out


def _line_check(pattern: bytes, user: bool):
    """``check(data, start, end)``: whether ``data[start:end]`` holds a match
    (built-in patterns on Python's engine, the user's on RE2)."""
    if user:
        import re2
        search = re2.compile(pattern).search
        return lambda data, start, end: search(data[start:end]) is not None
    import re
    search = re.compile(pattern).search
    return lambda data, start, end: search(data, start, end) is not None


def _collector(ends: list, ids: list):
    add_end, add_id = ends.append, ids.append

    def on_match(pattern, _start, end, _flags, _context):
        add_end(end)
        add_id(pattern)
    return on_match


class AllLinesFinder:
    """Selects every line (``all_lines=True``: keep every line as a row)."""

    name = "all"

    def find(self, data: bytes, lo: int = 0, hi: int | None = None, newlines=None) -> list[tuple[int, int]]:
        hi = len(data) if hi is None else hi
        out, start = [], lo
        while start < hi:
            end = data.find(b"\n", start, hi)
            end = hi if end == -1 else end
            out.append((start, end))
            start = end + 1
        return out


@lru_cache(maxsize=16)
def _finder(engine: str, patterns: tuple, user_patterns: tuple):
    if engine != "hyperscan":
        return NeedleFinder(patterns, user_patterns)
    import hyperscan
    try:
        return HyperscanFinder(patterns, user_patterns)
    except hyperscan.error:         # a pattern Hyperscan cannot take even as a prefilter
        return NeedleFinder(patterns, user_patterns)


def make_finder(all_lines: bool = False, engine: str | None = None, extra_patterns: tuple = (),
                user_signatures: tuple = ()):
    """The candidate finder for a scan (cached: built once per pattern set).

    ``engine`` forces ``"hyperscan"`` or ``"python"`` (also env
    ``SARSLEUTH_LOG_ENGINE``); by default Hyperscan when it is installed."""
    if all_lines:
        return AllLinesFinder()
    if engine is None:
        chosen = os.environ.get("SARSLEUTH_LOG_ENGINE")
        # an engine this version lacks (``grep`` was one) means the default
        engine = chosen if chosen in ENGINES else None
    engine = engine or ("hyperscan" if hyperscan_available() else "python")
    if engine not in ENGINES:
        raise ValueError(f"unknown log engine {engine!r} (one of {', '.join(ENGINES)})")
    if engine == "hyperscan" and not hyperscan_available():
        engine = "python"
    patterns = tuple(candidate_patterns()) + tuple(extra_patterns)
    user = tuple(_relaxed(p) for sig in user_signatures for p in sig.patterns)
    return _finder(engine, patterns, user)

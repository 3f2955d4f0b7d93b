"""Streaming machinery shared by the log parsers.

A log file is read once, in large blocks of raw (decompressed) bytes.  Per
block, three cheap things happen over the whole buffer:

* lines are counted per minute of their timestamp (``volume``), either by
  slicing a fixed-position time stamp out of every line with numpy or, for
  layouts without a fixed position, with one ``re.findall`` over the block;
* a *candidate finder* picks the few lines that could match a signature
  (:mod:`sarsleuth.knowledge.signatures`) without decoding anything else;
* only candidate lines, and the lines that follow a candidate which opens a
  multi-line kernel report, are decoded and parsed in Python.

The :class:`Assembler` turns those decoded lines into event records: it
groups multi-line reports (page allocation failures with their call trace,
OOM reports, hung tasks, oopses, nginx continuation lines), folds the
``N callbacks suppressed`` lines into the ``count`` of the event they stand
for, and reattaches a segfault's `` in lib[...]`` suffix printed on its own
line.

Candidate finders return byte spans of candidate lines (``end`` excluding
the newline) within a block: :class:`NeedleFinder` is pure Python (literal
needles found with ``bytes.find`` then verified with the signature regex);
:class:`GrepFinder` hands a plain file to GNU grep running beside Python (a
superset: the lines it reports are classified like any other);
:func:`make_finder` picks the fastest one available.
"""
from __future__ import annotations

import datetime as _dt
import functools
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator

from sarsleuth.knowledge import signatures
from sarsleuth.errors import located
from sarsleuth.textio import DECOMPRESSION_ERRORS, MAX_LINE_BYTES, open_binary

try:  # Python 3.11+
    import re._constants as _sre_c
    import re._parser as _sre_p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore
    import sre_parse as _sre_p  # type: ignore

#: Bytes read per block (decompressed).
BLOCK_BYTES = 8 * 1024 * 1024
#: Continuation lines kept in an event's ``detail``.
MAX_DETAIL_LINES = 200
#: Lines looked at after the start of a multi-line report before giving up.
FOLLOW_LINES = 400
#: Characters of one line that are decoded; the rest of a huge line is cut.
MAX_DECODED_CHARS = 16 * 1024
#: Files larger than this get a progress bar when stderr is a terminal.
PROGRESS_MIN_BYTES = 50 * 1024 * 1024

#: Lines the signatures do not classify but the assembler needs to see:
#: rate-limit summaries (their count belongs to a neighbouring event).
_STRUCTURAL_PATTERNS = [r"callbacks suppressed"]

SUPPRESSED_RE = re.compile(r"^(?:(?P<fn>[\w.]+): )?(?P<n>\d+) callbacks suppressed")
SUPPRESSED_BYTES_RE = re.compile(rb"(?:([\w.]+): )?(\d+) callbacks suppressed")
AUDIT_RE = re.compile(r"audit\((?P<epoch>\d{9,})\.(?P<frac>\d+):(?P<serial>\d+)\)")


# --------------------------------------------------------------------------
# Reading blocks
# --------------------------------------------------------------------------

@dataclass
class Block:
    """A run of whole lines: ``data[start:end]``, ending with a newline.

    The bytes read from the file are passed on without copying, so a block
    is a window on them; everything reading a block stays inside it.
    """

    data: bytes
    start: int
    end: int
    offset: int          # byte offset of ``data[0]`` in the decompressed stream
    first_line: int = 0  # 1-based number of the line at ``start`` (set by the scan)


def iter_blocks(path, warnings: list, block_bytes: int = BLOCK_BYTES) -> Iterator[Block]:
    """Yield blocks of whole lines, streaming, without copying the bytes read.

    The line cut by a read boundary is completed with the next read and
    yielded as a one-line block of its own.  Lines longer than
    :data:`~sarsleuth.textio.MAX_LINE_BYTES` are cut (the rest skipped up to
    the next newline) and a damaged compressed tail ends the stream; both
    leave a warning instead of raising.
    """
    fh = open_binary(path)
    carry = b""               # start of a line whose end is not read yet
    skipping = False          # inside the unread tail of an over-long line
    offset = 0                # stream offset of the next read
    cut_lines = 0
    try:
        while True:
            try:
                chunk = fh.read(block_bytes)
            except DECOMPRESSION_ERRORS as exc:
                warnings.append(located(path, f"compressed stream damaged ({exc}); rest skipped",
                                        offset=offset))
                break
            if not chunk:
                break
            chunk_offset, offset = offset, offset + len(chunk)
            first = 0
            if carry or skipping:
                nl = chunk.find(b"\n")
                if nl == -1:
                    if not skipping:
                        carry += chunk
                        if len(carry) > MAX_LINE_BYTES:
                            carry, skipping = carry[:MAX_LINE_BYTES], True
                            cut_lines += 1
                    continue
                line = carry + (b"\n" if skipping else chunk[:nl + 1])
                yield Block(line, 0, len(line), chunk_offset + nl + 1 - len(line))
                carry, skipping, first = b"", False, nl + 1
            cut = chunk.rfind(b"\n", first)
            if cut == -1:
                carry = chunk[first:]
                if len(carry) > MAX_LINE_BYTES:
                    carry, skipping = carry[:MAX_LINE_BYTES], True
                    cut_lines += 1
                continue
            yield Block(chunk, first, cut + 1, chunk_offset)
            carry = chunk[cut + 1:]
            if len(carry) > MAX_LINE_BYTES:
                carry, skipping = carry[:MAX_LINE_BYTES], True
                cut_lines += 1
        if carry:
            warnings.append(located(path, "file ends in the middle of a line (kept)", offset=offset))
            yield Block(carry + b"\n", 0, len(carry) + 1, offset - len(carry))
    finally:
        fh.close()
    if cut_lines:
        warnings.append(located(path, f"{cut_lines} line(s) longer than {MAX_LINE_BYTES} bytes were cut"))


def head_lines(text: str, limit: int = 300) -> list[str]:
    """The first non-empty lines of a sniffed head (the last, maybe cut,
    line of the head is dropped when there are others)."""
    lines = text.splitlines()
    if len(lines) > 1 and not text.endswith(("\n", "\r")):
        lines = lines[:-1]
    return [ln for ln in lines if ln.strip()][:limit]


def total_size(path) -> int | None:
    """Size on disk (compressed size for compressed files), for progress."""
    try:
        return os.path.getsize(path)
    except OSError:
        return None


# --------------------------------------------------------------------------
# Candidate finders
# --------------------------------------------------------------------------

def candidate_patterns() -> list[str]:
    """Every pattern a candidate line may match: signature patterns (global
    ``(?i)`` scoped, ``^`` anchors relaxed) plus the structural ones."""
    out = []
    for sig in signatures.all_signatures():
        for pat in sig.patterns:
            if pat.startswith("(?i)"):
                pat = "(?i:" + pat[4:] + ")"
            out.append(pat[1:] if pat.startswith("^") else pat)
    return out + list(_STRUCTURAL_PATTERNS)


def candidate_regex() -> re.Pattern:
    """One bytes regex matching (somewhere in it) every candidate line."""
    return _compiled_candidate_regex(tuple(candidate_patterns()))


_regex_cache: dict = {}


def _compiled_candidate_regex(patterns: tuple) -> re.Pattern:
    rx = _regex_cache.get(patterns)
    if rx is None:
        rx = re.compile("|".join(f"(?:{p})" for p in patterns).encode("utf-8"))
        _regex_cache.clear()
        _regex_cache[patterns] = rx
    return rx


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


class NeedleFinder:
    """Pure-Python candidate finder.

    Each candidate pattern is reduced to literal *needles* (one of which must
    occur in any match); ``bytes.find`` locates needles at memchr speed, and
    only the lines holding one are checked with the full regex.  Patterns
    without a provable needle are searched with their own regex.
    """

    name = "python"

    def __init__(self, patterns: list[str] | None = None):
        patterns = patterns if patterns is not None else candidate_patterns()
        self.regex = re.compile("|".join(f"(?:{p})" for p in patterns).encode("utf-8"))
        exact, folded, fallback = set(), set(), []
        for pat in patterns:
            lits = required_literals(pat)
            if lits is None:
                fallback.append(pat)
                continue
            for text, ci in lits:
                (folded if ci else exact).add(text.lower() if ci else text)
        self.exact = _minimal_needles(frozenset(exact))
        self.folded = _minimal_needles(frozenset(folded))
        self.fallback = re.compile("|".join(f"(?:{p})" for p in fallback).encode()) if fallback else None

    def find(self, data: bytes, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
        """Candidate line spans within ``data[lo:hi]`` (whole lines)."""
        hi = len(data) if hi is None else hi
        starts: set[int] = set()
        _collect_lines(data, lo, hi, self.exact, starts)
        if self.folded:
            _collect_lines(data.lower(), lo, hi, self.folded, starts)
        if self.fallback is not None:
            for m in self.fallback.finditer(data, lo, hi):
                starts.add(data.rfind(b"\n", lo, m.start()) + 1 or lo)
        out = []
        search = self.regex.search
        for start in sorted(starts):
            end = data.find(b"\n", start, hi)
            end = hi if end == -1 else end
            if search(data, start, min(end, start + MAX_LINE_BYTES)):
                out.append((start, end))
        return out


#: Shortest shared piece worth searching for instead of several needles:
#: shorter pieces occur too often in ordinary lines.
MIN_SHARED_NEEDLE = 7


@functools.lru_cache(maxsize=16)
def _minimal_needles(needles: frozenset) -> tuple:
    """A small set of needles that finds every line the given ones find.

    Each ``bytes.find`` pass costs about the same whatever the needle, so
    needles sharing a piece of at least :data:`MIN_SHARED_NEEDLE` characters
    (``upstream``, `` process ``...) are replaced by that piece, greedily,
    and needles containing another needle are dropped.  Cached: every log
    file of a case (or of a fleet's host on a worker) asks for the same set."""
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
    return tuple(k.encode("utf-8") for k in kept)


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


class AllLinesFinder:
    """Selects every line (``all_lines=True``: keep every line as a row)."""

    name = "all"

    def find(self, data: bytes, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
        hi = len(data) if hi is None else hi
        out, start = [], lo
        while start < hi:
            end = data.find(b"\n", start, hi)
            end = hi if end == -1 else end
            out.append((start, end))
            start = end + 1
        return out


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


class GrepFinder:
    """Candidate finder backed by GNU grep for plain (uncompressed) files.

    grep reads the file by itself in another process while Python counts
    volumes; it reports byte offsets of candidate lines, which are mapped
    back onto blocks.  The ERE is a faithful translation of the Python
    patterns; a line it reports that no signature classifies is decoded and
    then ignored, so the events equal :class:`NeedleFinder`'s.
    """

    name = "grep"

    def __init__(self, path, grep: str, ere: str):
        env = dict(os.environ, LC_ALL="C")
        self.proc = subprocess.Popen(
            [grep, "-a", "-b", "-o", "-E", "-e", ere, "--", os.fspath(path)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=1 << 20)
        self.pending: int | None = None
        self.done = False

    def _next_offset(self) -> int | None:
        while not self.done:
            raw = self.proc.stdout.readline()
            if not raw:
                self.done = True
                break
            head, _, _ = raw.partition(b":")
            if head.isdigit():
                return int(head)
        return None

    def find_in(self, block: Block) -> list[tuple[int, int]]:
        """Candidate spans inside ``block`` (positions in ``block.data``)."""
        data, base = block.data, block.offset
        lo, hi = block.start, block.end
        limit = base + hi
        starts = []
        while True:
            off = self.pending if self.pending is not None else self._next_offset()
            self.pending = None
            if off is None:
                break
            if off >= limit:
                self.pending = off
                break
            if off >= base + lo:
                starts.append(max(data.rfind(b"\n", lo, off - base) + 1, lo))
        out, last = [], -1
        for start in starts:
            if start != last:   # grep -o reports every match of a line
                out.append((start, data.find(b"\n", start, hi)))
                last = start
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.stdout.close()
        self.proc.wait()


def grep_expression(patterns: list[str]) -> str | None:
    """One ERE for all candidate patterns, or None if one cannot be translated."""
    parts = []
    for pat in patterns:
        ere = ere_from_python(pat)
        if ere is None:
            return None
        parts.append(ere)
    return "|".join(parts)


def make_finder(path, all_lines: bool = False, engine: str | None = None, extra_patterns: tuple = ()):
    """The candidate finder for ``path``.

    ``engine`` forces ``"python"`` or ``"grep"``; by default GNU grep is used
    for plain files larger than one block when it is installed (env
    ``SARSLEUTH_LOG_ENGINE=python`` turns it off), pure Python otherwise.
    """
    if all_lines:
        return AllLinesFinder()
    engine = engine or os.environ.get("SARSLEUTH_LOG_ENGINE")
    patterns = candidate_patterns() + list(extra_patterns)
    if engine != "python":
        from sarsleuth.textio import compression_of
        plain = compression_of(path) is None
        big = (total_size(path) or 0) > BLOCK_BYTES
        if plain and (big or engine == "grep"):
            grep = gnu_grep()
            ere = grep_expression(patterns)
            if grep and ere:
                return GrepFinder(path, grep, ere)
    return NeedleFinder(patterns)


# --------------------------------------------------------------------------
# Per-minute volumes
# --------------------------------------------------------------------------

@dataclass
class VolumeSpec:
    """How to read a minute key from the raw bytes of a line.

    ``fixed`` = (start, length) of the key at a fixed position of every line
    (vectorized with numpy); ``regex`` = a bytes pattern for ``re.findall``
    with ``re.M`` whose first group is the key (second group, if any, the
    level).  ``level_fixed`` = (start, length) of a level word.
    """

    regex: bytes
    fixed: tuple[int, int] | None = None
    level_fixed: tuple[int, int] | None = None
    level_group: bool = False     # the regex's second group is a level, not part of the key


class VolumeCounter:
    """Accumulates raw minute keys -> line counts in first-seen order."""

    def __init__(self, spec: VolumeSpec):
        self.spec = spec
        self.keys: dict[bytes, int] = {}
        self.levels: Counter = Counter()
        self.regex = re.compile(spec.regex, re.M)

    def add(self, data: bytes, lo: int, hi: int, ends) -> None:
        """Count the lines of ``data[lo:hi]``; ``ends`` = its newline positions."""
        if self.spec.fixed is not None:
            self._add_fixed(data, lo, ends)
        else:
            self._add_regex(data, lo, hi)

    def _add_regex(self, data: bytes, lo: int, hi: int) -> None:
        keys = self.keys
        found = self.regex.findall(data, lo, hi)
        if found and isinstance(found[0], tuple) and self.spec.level_group:
            for key, level in found:
                keys[key] = keys.get(key, 0) + 1
                if level:
                    self.levels[level] += 1
        elif found and isinstance(found[0], tuple):
            for groups in found:
                key = b" ".join(g for g in groups if g)
                keys[key] = keys.get(key, 0) + 1
        else:
            for key in found:
                keys[key] = keys.get(key, 0) + 1

    def _add_fixed(self, data: bytes, lo: int, ends) -> None:
        import numpy as np
        if not len(ends):
            return
        starts = np.empty_like(ends)
        starts[0] = lo
        starts[1:] = ends[:-1] + 1
        start, length = self.spec.fixed
        lvl = self.spec.level_fixed
        need = start + length if lvl is None else max(start + length, lvl[0] + lvl[1])
        starts = starts[(ends - starts) >= need]
        if not len(starts):
            return
        self._count_runs(_fixed_width_items(data, starts + start, length))
        if lvl is not None:
            lkeys = _fixed_width_items(data, starts + lvl[0], lvl[1])
            values, counts = np.unique(lkeys, return_counts=True)
            for v, c in zip(values.tolist(), counts.tolist()):
                self.levels[v] += c

    def _count_runs(self, keys) -> None:
        """Count keys by runs (logs are nearly sorted, so runs are few);
        fall back to a sort when they are not."""
        import numpy as np
        change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        table = self.keys
        if len(change) > 20000:
            values, first, counts = np.unique(keys, return_index=True, return_counts=True)
            for i in np.argsort(first, kind="stable"):
                k = values[i].tobytes() if hasattr(values[i], "tobytes") else bytes(values[i])
                table[k] = table.get(k, 0) + int(counts[i])
            return
        bounds = np.concatenate(([0], change, [len(keys)]))
        run_keys = keys[bounds[:-1]].tolist()
        run_len = np.diff(bounds).tolist()
        for k, n in zip(run_keys, run_len):
            table[k] = table.get(k, 0) + n


def _fixed_width_items(data: bytes, positions, width: int):
    """``data[p:p+width]`` for every p, as a numpy ``S<width>`` array: one
    gather on an overlapping view of the buffer, no per-byte index."""
    import numpy as np
    view = np.ndarray(shape=(len(data) - width + 1,), dtype=f"S{width}", buffer=data, strides=(1,))
    return view[positions]


# --------------------------------------------------------------------------
# Decoded lines and the assembler
# --------------------------------------------------------------------------

class LineInfo:
    """One decoded line, split by a format's prefix parser.

    ``stamp`` is None or a tuple whose first item says its kind:
    ``("md", month, day, h, m, s, us)`` (syslog, no year), ``("abs", datetime)``
    (naive wall clock) or ``("aware", datetime)``.  ``prefixed`` is False for
    lines without the format's prefix (continuations, pasted fragments).
    """

    __slots__ = ("stamp", "host", "tag", "pid", "level", "message", "uptime", "prefixed", "conn")

    def __init__(self, message: str, stamp=None, host=None, tag=None, pid=None, level=None,
                 uptime=None, prefixed=True, conn=None):
        self.stamp, self.host, self.tag, self.pid = stamp, host, tag, pid
        self.level, self.message, self.uptime, self.prefixed = level, message, uptime, prefixed
        self.conn = conn


_EPOCH = _dt.datetime(1970, 1, 1)


def stamp_seconds(stamp) -> float | None:
    """Seconds on a scale good for comparing two stamps of one file."""
    if stamp is None:
        return None
    if stamp[0] == "md":
        _, mon, day, h, m, s, us = stamp
        return (((mon * 32 + day) * 24 + h) * 60 + m) * 60 + s + us / 1e6
    if stamp[0] == "aware":
        return stamp[1].timestamp()
    return (stamp[1] - _EPOCH).total_seconds()   # naive wall clock: no local-zone guess


#: Kinds whose report continues on the next lines.
REPORT_KINDS = {"page-allocation-failure", "oom-invoked", "hung-task", "kernel-oops"}
#: Lines that finish an OOM kill: victim named with its memory figures.
_KILLED_RE = re.compile(r"Killed process (?P<pid>\d+),?(?: UID \d+,?)? \((?P<comm>[^)]*)\)")
_KILL_RE = re.compile(r"Kill process (?P<pid>\d+) \((?P<comm>[^)]*)\)")
_REAPED_RE = re.compile(r"reaped process (?P<pid>\d+) \((?P<comm>[^)]*)\)")
_CONSTRAINT_RE = re.compile(r"oom-kill:constraint=.*?task=(?P<comm>[^,]*),pid=(?P<pid>\d+)")
_SEGV_RE = re.compile(r"^(?:traps: )?(?P<comm>.+?)\[(?P<pid>\d+)\]:? (?:segfault at|general protection|trap )")
_INVOKED_RE = re.compile(r"^(?P<comm>.+?) invoked oom-killer")
_ALLOC_RE = re.compile(r"^(?P<comm>[^:]+): page allocation (?:failure|stalls)")
_HUNG_RE = re.compile(r"task (?P<comm>.+?):(?P<pid>\d+) blocked for more than")
_TASK_PID_RE = re.compile(r"(?:\bPID: (?P<pid1>\d+) +Comm: (?P<comm1>\S+))|(?:^Pid: (?P<pid2>\d+), comm: (?P<comm2>\S+))")
_SEGV_SUFFIX_RE = re.compile(r"^\s*in \S+\[[0-9a-fA-F]+\+[0-9a-fA-F]+\]")
_SEGV_WRAP_RE = re.compile(r"^\s*[0-9a-fA-F]{6,16} error \d+")
#: Rate-limit owners and the event kinds whose lines they suppress.
_SUPPRESSOR_KINDS = {
    "warn_alloc_failed": {"page-allocation-failure"}, "warn_alloc": {"page-allocation-failure"},
    "net_ratelimit": {"socket-memory", "tcp-tw-bucket-overflow", "syn-flood", "conntrack-full",
                      "nic-rx-alloc-failure", "nic-link-down", "page-allocation-failure"},
}
#: Kinds that are never rate-limited.
_NEVER_SUPPRESSED = {"kernel-boot", "oom-invoked", "oom-kill", "hung-task", "kernel-oops"}
#: How far (seconds, or lines when there are no times) a suppression count may travel.
SUPPRESS_WINDOW_S = 60.0
SUPPRESS_WINDOW_LINES = 50


def unescape_rsyslog(text: str) -> str:
    """rsyslog writes control characters as ``#ooo`` octal escapes."""
    if "#0" not in text:
        return text
    return re.sub(r"#0(1[0-7]|[0-7]{2})", lambda m: chr(int(m.group(1), 8)), text)


@dataclass
class _Report:
    record: dict
    kind: str
    stamp_s: float | None
    uptime: float | None
    tag: str | None
    follow_left: int


class Assembler:
    """Turns the selected decoded lines of one file into event records."""

    def __init__(self, path: str, source: str, all_lines: bool = False, user_signatures: tuple = ()):
        self.path, self.source, self.all_lines = path, source, all_lines
        self.user_signatures = user_signatures
        self.records: list[dict] = []
        self.suppressions: list[dict] = []
        self.report: _Report | None = None
        self.kill_group: dict | None = None
        self.hosts: Counter = Counter()

    # -- entry point -------------------------------------------------------
    def feed(self, line_no: int, info: LineInfo, candidate: bool) -> int:
        """Take one line; return how many following lines it wants to see."""
        message = info.message
        if "#0" in message:
            first, _, rest = unescape_rsyslog(message).partition("\n")
            info.message = message = first
            embedded = rest.split("\n") if rest else []
        else:
            embedded = []
        if info.host:
            self.hosts[info.host] += 1
        if candidate and "callbacks suppressed" in message and self._structural(line_no, info):
            return self.following()
        kind = signatures.classify(message, self.user_signatures) if candidate else None
        if self.report is not None:
            if self._joins(info, kind, candidate):
                if self.report.kind != "segfault":  # its tail went into the message
                    self._add_detail(self.report.record, [message] + embedded)
                self.report.follow_left -= 1
                return max(self.report.follow_left, 0)
            self.report = None
        if kind is None:
            if self.all_lines and candidate:
                self._new_record(line_no, info, "log")
            return 0
        if kind == "oom-kill":
            return self._oom_kill(line_no, info, embedded)
        record = self._new_record(line_no, info, kind)
        self._subject(record, kind, message)
        if embedded:
            self._add_detail(record, embedded)
        if kind in REPORT_KINDS or kind == "segfault" or self.source == "nginx-error":
            follow = FOLLOW_LINES if kind in REPORT_KINDS else 3 if kind == "segfault" else 50
            self.report = _Report(record, kind, stamp_seconds(info.stamp), info.uptime, info.tag, follow)
            return follow
        return 0

    def following(self) -> int:
        """Lines the open report still wants to see."""
        return max(self.report.follow_left, 0) if self.report is not None else 0

    def note_suppressed(self, line_no: int, count: int, fn: str | None) -> int:
        """A rate-limit summary read straight from the raw bytes (its owner is
        not a known one, so only its line number matters)."""
        self.suppressions.append({"n": count, "fn": fn, "line": line_no, "t": None, "uptime": None})
        return self.following()

    # -- pieces ------------------------------------------------------------
    def _new_record(self, line_no: int, info: LineInfo, kind: str) -> dict:
        record = {
            "stamp": info.stamp, "host": info.host, "source": self.source, "kind": kind,
            "pid": info.pid, "process": info.tag, "message": info.message, "file": self.path,
            "line": line_no, "level": info.level, "detail": None, "count": 1,
            "uptime": info.uptime, "tag": info.tag,
        }
        if info.conn is not None:
            record["conn"] = info.conn
        self.records.append(record)
        return record

    def _structural(self, line_no: int, info: LineInfo) -> bool:
        m = SUPPRESSED_RE.search(info.message)
        if m:
            self.suppressions.append({"n": int(m.group("n")), "fn": m.group("fn"), "line": line_no,
                                      "t": stamp_seconds(info.stamp), "uptime": info.uptime})
            return True
        return False

    def _joins(self, info: LineInfo, kind: str | None, candidate: bool) -> bool:
        rep = self.report
        if rep.follow_left <= 0:
            return False
        if rep.kind == "segfault":
            return self._segfault_tail(info)
        if self.source == "nginx-error":
            return not info.prefixed and kind is None
        if kind is not None and not (kind == rep.kind == "kernel-oops"):
            return False
        if not info.prefixed:
            return True
        if info.tag != rep.tag:
            return False
        t = stamp_seconds(info.stamp)
        if t is not None and rep.stamp_s is not None and abs(t - rep.stamp_s) > 2.0:
            return False
        if info.uptime is not None and rep.uptime is not None and abs(info.uptime - rep.uptime) > 2.0:
            return False
        return True

    def _segfault_tail(self, info: LineInfo) -> bool:
        """Reattach `` in lib[...]`` or a wrapped ``<hex> error N`` to the
        latest segfault missing it; any other line ends the segfault."""
        text = info.message
        if not (_SEGV_SUFFIX_RE.match(text) or _SEGV_WRAP_RE.match(text)):
            return False
        for record in reversed(self.records[-8:]):
            if record["kind"] == "segfault" and " in " not in record["message"][-80:]:
                record["message"] = record["message"].rstrip() + " " + text.strip()
                self.report.follow_left = 0
                return True
        return False

    def _add_detail(self, record: dict, lines: list[str]) -> None:
        detail = record.setdefault("_detail", [])
        room = MAX_DETAIL_LINES - len(detail)
        if room > 0:
            detail.extend(lines[:room])
        record["_more"] = record.get("_more", 0) + max(0, len(lines) - max(room, 0))

    def _subject(self, record: dict, kind: str, message: str) -> None:
        """Kernel reports are about a task: make it the event's pid/process."""
        m = None
        if kind == "segfault":
            m = _SEGV_RE.search(message)
        elif kind == "hung-task":
            m = _HUNG_RE.search(message)
        elif kind in ("oom-invoked", "page-allocation-failure"):
            m = (_INVOKED_RE if kind == "oom-invoked" else _ALLOC_RE).search(message)
            if m:
                record["process"] = m.group("comm").strip()
                record["pid"] = None
            return
        if m:
            record["process"] = m.group("comm").strip()
            record["pid"] = int(m.group("pid"))

    def _oom_kill(self, line_no: int, info: LineInfo, embedded: list[str]) -> int:
        """Merge the lines of one OOM kill (constraint summary, ``Kill process
        ... or sacrifice child``, ``Killed process``, ``oom_reaper``) into one
        event whose message is the ``Killed process`` line."""
        msg = info.message
        t = stamp_seconds(info.stamp)
        group = self.kill_group
        m_killed, m_kill = _KILLED_RE.search(msg), _KILL_RE.search(msg)
        m_reaped, m_constraint = _REAPED_RE.search(msg), _CONSTRAINT_RE.search(msg)
        victim = m_killed or m_kill or m_reaped or m_constraint
        close_in_time = group is not None and (
            line_no - group["last_line"] <= 40 and
            (t is None or group["t"] is None or abs(t - group["t"]) <= (15.0 if m_reaped else 2.0)))
        joins = close_in_time and (
            (m_reaped and group["record"]["pid"] == int(m_reaped.group("pid"))) or
            (not m_reaped and not group["killed"]))
        if joins:
            record = group["record"]
            self._add_detail(record, [msg] + embedded)
            group["last_line"] = line_no
            if m_killed or (m_kill and not group["has_kill"]):
                record["message"] = msg
                record["pid"], record["process"] = int(victim.group("pid")), victim.group("comm")
            group["killed"] |= bool(m_killed)
            group["has_kill"] |= bool(m_kill)
            return 0
        record = self._new_record(line_no, info, "oom-kill")
        if victim:
            record["pid"], record["process"] = int(victim.group("pid")), victim.group("comm")
        self._add_detail(record, [msg] + embedded)
        self.kill_group = {"record": record, "t": t, "last_line": line_no,
                           "killed": bool(m_killed), "has_kill": bool(m_kill)}
        return 0

    # -- end ---------------------------------------------------------------
    def finish(self) -> list[dict]:
        """Attach details, pids from report headers and suppressed counts."""
        for record in self.records:
            detail = record.pop("_detail", None)
            more = record.pop("_more", 0)
            if detail:
                if record["kind"] in ("oom-invoked", "page-allocation-failure", "kernel-oops") and record["pid"] is None:
                    for text in detail[:12]:
                        m = _TASK_PID_RE.search(text)
                        if m:
                            record["pid"] = int(m.group("pid1") or m.group("pid2"))
                            record["process"] = m.group("comm1") or m.group("comm2")
                            break
                if more:
                    detail = detail + [f"... {more} more line(s)"]
                record["detail"] = "\n".join(detail)
        self._fold_suppressed()
        return self.records

    def _fold_suppressed(self) -> None:
        """Add each ``N callbacks suppressed`` to the event it stands for: the
        next compatible event (the ratelimiter prints the summary just before
        the first message it lets through), else the previous one."""
        if not self.suppressions or not self.records:
            return
        import bisect
        lines = [r["line"] for r in self.records]
        for sup in self.suppressions:
            allowed = _SUPPRESSOR_KINDS.get(sup["fn"] or "")
            i = bisect.bisect_right(lines, sup["line"])
            if allowed is None:
                # an unknown ratelimiter: only the message printed right after
                # it is known to be the one it let through
                nxt = self.records[i] if i < len(self.records) else None
                target = nxt if nxt is not None and nxt["line"] == sup["line"] + 1 \
                    and nxt["kind"] not in _NEVER_SUPPRESSED else None
            else:
                target = self._near(sup, range(i, min(i + 20, len(self.records))), allowed)
                if target is None:
                    target = self._near(sup, range(i - 1, max(i - 21, -1), -1), allowed)
            if target is not None:
                target["count"] += sup["n"]
                sup["attributed"] = True

    def _near(self, sup: dict, indexes, allowed) -> dict | None:
        for idx in indexes:
            record = self.records[idx]
            if allowed and record["kind"] not in allowed:
                continue
            if record["source"] == "nginx-error":
                continue
            t = stamp_seconds(record["stamp"])
            if sup["t"] is not None and t is not None:
                if abs(t - sup["t"]) > SUPPRESS_WINDOW_S:
                    return None
            elif sup["uptime"] is not None and record["uptime"] is not None:
                if abs(record["uptime"] - sup["uptime"]) > SUPPRESS_WINDOW_S:
                    return None
            elif abs(record["line"] - sup["line"]) > SUPPRESS_WINDOW_LINES:
                return None
            return record
        return None


# --------------------------------------------------------------------------
# The scan
# --------------------------------------------------------------------------

@dataclass
class LogFormat:
    """What the scan needs to know about one log layout."""

    source: str                                  # event ``source`` (= parser kind)
    parse_line: Callable[[str], LineInfo]
    volume: VolumeSpec
    variant: str = ""
    #: Patterns of lines that must be decoded although their raw bytes do
    #: not show a signature (e.g. journal messages stored as byte arrays).
    extra_candidates: tuple = ()


@dataclass
class ScanResult:
    records: list
    lines: int
    volume_keys: dict
    levels: Counter
    suppressions: list                           # rate-limit summaries no event took
    hosts: Counter
    samples: list                                # (line, LineInfo) spread over the file
    engine: str
    warnings: list = field(default_factory=list)


def _decode(data: bytes, start: int, end: int) -> tuple[str, bool]:
    """Decode one line leniently; True when it had to be cut."""
    cut = end - start > MAX_DECODED_CHARS
    raw = data[start:start + MAX_DECODED_CHARS] if cut else data[start:end]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if b"\x00" in raw:
        raw = raw.replace(b"\x00", b"")
    return raw.decode("utf-8", errors="replace"), cut


def scan(path, fmt: LogFormat, all_lines: bool = False, engine: str | None = None,
         progress: Callable[[int, int | None], None] | None = None,
         sample_every: int = 0, block_bytes: int = BLOCK_BYTES, user_signatures: tuple = ()) -> ScanResult:
    """Stream ``path`` once and return the assembled event records.

    ``sample_every`` > 0 additionally decodes a few lines per block (for
    clock anchors); ``progress(bytes_done, total)`` is called per block;
    ``user_signatures`` are the case's own ``[[signature]]`` entries.
    """
    state = _ScanState(path, fmt, all_lines, engine, sample_every, tuple(user_signatures))
    total = total_size(path)
    bar = _progress_bar(total) if progress is None else None
    report = progress or (bar.update if bar else None)
    try:
        for block in iter_blocks(path, state.warnings, block_bytes):
            state.block(block)
            if report:
                done = block.offset + block.end
                report(min(done, total) if total else done, total)
    finally:
        state.close()
        if bar:
            bar.close()
    return state.result()


class _ScanState:
    """Everything one scan carries from block to block."""

    def __init__(self, path, fmt: LogFormat, all_lines: bool, engine: str | None, sample_every: int,
                 user_signatures: tuple = ()):
        self.path = os.fspath(path)
        self.fmt = fmt
        self.sample_every = sample_every
        self.assembler = Assembler(self.path, fmt.source, all_lines, user_signatures)
        self.volume = VolumeCounter(fmt.volume)
        user_patterns = tuple(p for sig in user_signatures for p in sig.patterns)
        self.finder = make_finder(path, all_lines, engine, tuple(fmt.extra_candidates) + user_patterns)
        self.warnings: list[str] = []
        self.samples: list = []
        self.follow_left = 0
        self.lines = self.bad_utf8 = self.nul_blocks = self.cut_lines = 0

    def block(self, block: Block) -> None:
        import numpy as np
        data, lo, hi = block.data, block.start, block.end
        window = np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)
        ends = np.flatnonzero(window == 10)
        ends += lo
        block.first_line = self.lines + 1
        self.volume.add(data, lo, hi, ends)
        self.lines += len(ends)
        if data.find(b"\x00", lo, hi) != -1:
            self.nul_blocks += 1
        if isinstance(self.finder, GrepFinder):
            spans = self.finder.find_in(block)
        else:
            spans = self.finder.find(data, lo, hi)
        starts = [s for s, _ in spans]
        numbers = (np.searchsorted(ends, starts) + block.first_line).tolist() if starts else []
        self._walk(data, lo, hi, block.first_line, starts, numbers)
        if self.sample_every:
            # small files are cheap to sample densely; big blocks get a few lines each
            every = self.sample_every if hi - lo >= BLOCK_BYTES // 2 else max(self.sample_every, 128)
            self.samples.extend(_samples(data, lo, hi, ends, block.first_line, self.fmt, every))

    def _walk(self, data: bytes, lo: int, n: int, first_line: int, starts: list, numbers: list) -> None:
        """Feed candidate lines, and the lines a report asks to follow, to
        the assembler in file order."""
        k, pos, line_no = 0, lo, first_line
        while pos < n:
            if self.follow_left <= 0:
                while k < len(starts) and starts[k] < pos:
                    k += 1
                if k == len(starts):
                    break
                pos, line_no = starts[k], numbers[k]
            is_cand = k < len(starts) and starts[k] == pos
            if is_cand:
                k += 1
            end = data.find(b"\n", pos, n)
            self.follow_left = self._feed(data, pos, end, line_no, is_cand)
            pos, line_no = end + 1, line_no + 1

    def _feed(self, data: bytes, pos: int, end: int, line_no: int, is_cand: bool) -> int:
        hit = data.find(b" callbacks suppressed", pos, end) if is_cand else -1
        if hit != -1:
            # a bounded window: the regex must not crawl along a huge line
            m = SUPPRESSED_BYTES_RE.search(data, max(pos, hit - 64), hit + 21)
            if m is not None:
                fn = m.group(1).decode("ascii") if m.group(1) else None
                if fn not in _SUPPRESSOR_KINDS:   # no need to decode it
                    return self.assembler.note_suppressed(line_no, int(m.group(2)), fn)
        text, cut = _decode(data, pos, end)
        self.cut_lines += cut
        if "\ufffd" in text:
            self.bad_utf8 += 1
        return self.assembler.feed(line_no, self.fmt.parse_line(text), is_cand)

    def close(self) -> None:
        if isinstance(self.finder, GrepFinder):
            self.finder.close()

    def result(self) -> ScanResult:
        spath, warnings = self.path, self.warnings
        if self.bad_utf8:
            warnings.append(located(spath, f"{self.bad_utf8} decoded line(s) had invalid UTF-8 (replaced)"))
        if self.nul_blocks:
            warnings.append(located(spath, "NUL bytes found (ignored)"))
        if self.cut_lines:
            warnings.append(located(spath, f"{self.cut_lines} line(s) longer than {MAX_DECODED_CHARS} "
                                           "characters were cut when decoded"))
        asm = self.assembler
        records = asm.finish()
        unattributed = [s for s in asm.suppressions if not s.get("attributed")]
        return ScanResult(records, self.lines, self.volume.keys, self.volume.levels,
                          unattributed, asm.hosts, self.samples, self.finder.name, warnings)


def _samples(data: bytes, lo: int, hi: int, ends, first_line: int, fmt: LogFormat, every: int) -> list:
    """Decode a few lines spread over ``data[lo:hi]``, plus a few
    ``audit(...)`` records: clock anchors that cost nothing to find."""
    import numpy as np
    step = max((hi - lo) // every, 1)
    starts = set()
    for k in range(every):
        at = min(lo + k * step, hi - 1)
        starts.add(max(data.rfind(b"\n", lo, at) + 1, lo))
        hit = data.find(b"audit(", at, min(at + step, hi))
        if hit != -1:
            starts.add(max(data.rfind(b"\n", lo, hit) + 1, lo))
    starts.add(max(data.rfind(b"\n", lo, hi - 1) + 1, lo))
    ordered = sorted(starts)
    numbers = (np.searchsorted(ends, ordered) + first_line).tolist()
    out = []
    for pos, line_no in zip(ordered, numbers):
        text, _ = _decode(data, pos, data.find(b"\n", pos, hi))
        out.append((line_no, fmt.parse_line(text)))
    return out


class _RichBar:
    def __init__(self, total: int):
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn
        from rich.console import Console
        self.progress = Progress("[progress.description]{task.description}", BarColumn(),
                                 DownloadColumn(), TimeRemainingColumn(),
                                 console=Console(stderr=True), transient=True)
        self.task = self.progress.add_task("reading log", total=total)
        self.progress.start()

    def update(self, done: int, total: int | None) -> None:
        self.progress.update(self.task, completed=min(done, total or done))

    def close(self) -> None:
        self.progress.stop()


def _progress_bar(total: int | None):
    if not total or total < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        return None
    try:
        return _RichBar(total)
    except Exception:  # a progress bar must never break a parse
        return None


__all__ = [
    "AllLinesFinder", "Assembler", "Block", "GrepFinder", "LineInfo", "LogFormat", "NeedleFinder",
    "ScanResult", "VolumeCounter", "VolumeSpec", "candidate_patterns", "candidate_regex",
    "ere_from_python", "iter_blocks", "make_finder", "required_literals", "scan", "stamp_seconds",
    "unescape_rsyslog",
]


# --------------------------------------------------------------------------
# From a scan to a Source
# --------------------------------------------------------------------------

def build_source(path, kind: str, fmt: LogFormat, result: ScanResult, options,
                 key_parser: Callable[[bytes], tuple | None], level_names: dict | None = None,
                 recognised: Callable[[LineInfo], bool] | None = None, first_line_time=None):
    """Resolve years and zones, and turn a scan into a :class:`Source`.

    ``key_parser`` reads a raw volume key into ``("md", mon, day, h, m)``,
    ``("abs", datetime)``, ``("aware", datetime)``, ``("up", minute)`` or None.
    ``recognised`` tells whether a sampled line is in the format at all (by
    default: it carried the format's prefix); a file with no recognised
    line, no time stamp and no event raises :class:`InputError`.
    ``first_line_time`` is a full datetime the file states for its start
    (journalctl's ``-- Logs begin at`` header): a year clue.
    """
    from sarsleuth.errors import InputError
    from sarsleuth.model import Source

    spath = os.fspath(path)
    volume_keys, _unreadable = _normalize_keys(result.volume_keys, key_parser)
    recognised = recognised or (lambda info: info.prefixed)
    prefixed = sum(1 for _, info in result.samples if recognised(info))
    if not result.lines:
        raise InputError(spath, "empty log file")
    if not volume_keys and not result.records and not prefixed:
        raise InputError(spath, f"no line in a {kind} layout", line=1)

    md_keys = [k[1:] for k in volume_keys if k[0] == "md"]
    if not md_keys:  # no volume key read: fall back on the events' own stamps
        md_keys = list(dict.fromkeys(r["stamp"][1:5] for r in result.records
                                     if r["stamp"] and r["stamp"][0] == "md"))
    segments = _clock().rollover_segments(md_keys)
    seg_of = dict(zip(md_keys, segments))
    meta: dict = {"format": fmt.variant, "engine": result.engine}
    year = None
    if md_keys:
        year, meta["year_from"] = _resolve_year(spath, md_keys, segments, result, options, first_line_time)
    elif any(k[0] in ("abs", "aware") for k in volume_keys) or any(
            r["stamp"] and r["stamp"][0] in ("abs", "aware") for r in result.records):
        meta["year_from"] = "line"
    zone = _target_zone(result)

    def to_dt(stamp):
        return _stamp_datetime(stamp, year, seg_of)

    records = result.records
    walls = [to_dt(r.pop("stamp")) for r in records]
    from sarsleuth.parsers.base import events_frame
    events = events_frame(records)
    if len(events):
        events["timestamp"] = _series(walls, zone).set_axis(events.index)
        events["aligned"] = events["timestamp"].notna()
        for col in ("detail", "level", "host", "process", "tag"):
            if col in events:
                events[col] = events[col].astype(object).where(events[col].notna(), None)
    meta["volume"], meta["volume_unit"] = _volume_series(volume_keys, year, seg_of, zone)
    meta["unstamped_lines"] = result.lines - sum(volume_keys.values())
    meta["levels"] = _levels(result.levels, records, level_names)
    meta.update(_clock_meta(result, year, seg_of))
    if result.suppressions:
        meta["suppressed_unattributed"] = sum(s["n"] for s in result.suppressions)
    hosts = Counter(result.hosts)
    for _, info in result.samples:
        if info.host:
            hosts[info.host] += 1
    host = hosts.most_common(1)[0][0] if hosts else None
    tz = str(zone) if zone is not None else None
    return Source(path=spath, kind=kind, host=host, events=events, warnings=list(result.warnings),
                  tz=tz, records=result.lines, meta=meta)


def _clock():
    from sarsleuth.timebase import years as clock
    return clock


def _normalize_keys(raw: dict, key_parser) -> tuple[dict, int]:
    out: dict = {}
    bad = 0
    for key, n in raw.items():
        norm = key_parser(key)
        if norm is None:
            bad += n
        else:
            out[norm] = out.get(norm, 0) + n
    return out, bad


def _resolve_year(spath, md_keys, segments, result, options, first_line_time=None):
    import datetime as dt
    from sarsleuth.textio import compression_of, file_mtime
    clues = [(md_keys[0], first_line_time)] if first_line_time is not None else []
    for _, info in result.samples:
        m = AUDIT_RE.search(info.message)
        if m and info.stamp and info.stamp[0] == "md":
            when = dt.datetime.fromtimestamp(int(m.group("epoch")), tz=dt.timezone.utc).replace(tzinfo=None)
            clues.append((info.stamp[1:5], when))
    for r in result.records:
        m = AUDIT_RE.search(r["message"])
        if m and r["stamp"] and r["stamp"][0] == "md":
            when = dt.datetime.fromtimestamp(int(m.group("epoch")), tz=dt.timezone.utc).replace(tzinfo=None)
            clues.append((r["stamp"][1:5], when))
    gzip_mtime = mtime = None
    try:
        if compression_of(spath) == "gzip":
            gzip_mtime = file_mtime(spath)
        else:
            mtime = file_mtime(spath)
    except OSError:
        pass
    return _clock().choose_base_year(
        md_keys, segments, year=getattr(options, "year", None), clues=clues,
        gzip_mtime=gzip_mtime, mtime=mtime)


#: Years a pandas (nanosecond) timestamp can hold; a line dated outside
#: them (a damaged or hostile stamp) keeps no time rather than breaking the frame.
_YEARS = (1678, 2261)


def _stamp_datetime(stamp, year, seg_of):
    import datetime as dt
    if stamp is None:
        return None
    if stamp[0] == "md":
        _, mon, day, h, m, s, us = stamp
        y = (year if year is not None else dt.date.today().year) + seg_of.get((mon, day, h, m), 0)
        try:
            wall = dt.datetime(y, mon, day, h, m, s, us)
        except (ValueError, OverflowError):
            return None
    else:
        wall = stamp[1]
    if wall is None or not (_YEARS[0] <= wall.year <= _YEARS[1]):
        return None
    return wall


def _target_zone(result: ScanResult):
    """The zone events are expressed in: the one offset the lines carry,
    else UTC for mixed offsets; None = naive wall clock (settled later by
    the case, see sarsleuth.timebase)."""
    import datetime as dt
    offsets = set()
    for r in result.records:
        s = r["stamp"]
        if s and s[0] == "aware":
            offsets.add(s[1].utcoffset())
    if not offsets:
        return None
    if len(offsets) == 1:
        return dt.timezone(offsets.pop())
    return dt.timezone.utc


def _series(walls: list, zone):
    """datetime64 Series: aware values converted to ``zone`` (naive ones
    among them taken to be in it); all naive: wall clock."""
    import datetime as dt
    import pandas as pd
    if zone is not None:
        conv = []
        for w in walls:
            if w is None:
                conv.append(None)
            elif w.tzinfo is None:  # a line without offset among lines with one
                conv.append(w.replace(tzinfo=zone))
            else:
                conv.append(w.astimezone(zone))
        utc = [c.astimezone(dt.timezone.utc).replace(tzinfo=None) if c is not None else None for c in conv]
        s = pd.to_datetime(pd.Series(utc, dtype="object"), errors="coerce")
        s = s.astype("datetime64[ns]").dt.tz_localize("UTC").dt.tz_convert(_pandas_zone(zone))
        return s
    return pd.to_datetime(pd.Series([w for w in walls], dtype="object"), errors="coerce").astype("datetime64[ns]")


def _pandas_zone(zone):
    if hasattr(zone, "key"):
        return zone.key
    return zone


def _volume_series(keys: dict, year, seg_of, zone):
    import pandas as pd
    if not keys:
        return pd.Series([], dtype="int64", name="lines"), "minute"
    if all(k[0] == "up" for k in keys):
        s = pd.Series(list(keys.values()), index=pd.Index([k[1] for k in keys], name="uptime_minute"),
                      name="lines", dtype="int64")
        return s.groupby(level=0).sum().sort_index(), "uptime-minute"
    walls, counts = [], []
    for k, n in keys.items():
        if k[0] == "up":
            continue
        walls.append(_stamp_datetime(("md",) + k[1:] + (0, 0) if k[0] == "md" else k, year, seg_of))
        counts.append(n)
    idx = _series(walls, zone)
    s = pd.Series(counts, index=pd.DatetimeIndex(idx), name="lines", dtype="int64")
    s = s[s.index.notna()]
    s = s.groupby(level=0).sum().sort_index()
    s.index.name = "minute"
    return s, "minute"


def _levels(raw: Counter, records: list, names: dict | None) -> dict:
    out: Counter = Counter()
    for key, n in raw.items():
        word = key.decode("ascii", "replace") if isinstance(key, bytes) else str(key)
        word = (names or {}).get(word, word).lower()
        out[word] += n
    if not out:
        for r in records:
            if r.get("level"):
                out[r["level"]] += 1
    return dict(out)


def _clock_meta(result: ScanResult, year, seg_of) -> dict:
    """Uptime/wall pairs and audit epochs for :func:`sarsleuth.timebase.align.align_sources`."""
    import pandas as pd
    samples, audits, utc_offsets = [], [], []
    for _, info in result.samples:
        if info.uptime is None:
            continue
        wall = _stamp_datetime(info.stamp, year, seg_of)
        ts = None
        if wall is not None:
            ts = pd.Timestamp(wall)
        samples.append({"uptime": info.uptime, "timestamp": ts, "message": info.message})
        m = AUDIT_RE.search(info.message)
        if m:
            epoch = float(f"{m.group('epoch')}.{m.group('frac')}")
            audits.append({"uptime": info.uptime, "epoch": epoch})
            if wall is not None and wall.tzinfo is None:
                import datetime as dt
                utc = dt.datetime.fromtimestamp(epoch, tz=dt.timezone.utc).replace(tzinfo=None)
                utc_offsets.append(round((wall - utc).total_seconds() / 900) * 900)
    out = {"clock_samples": samples, "audit_anchors": audits}
    if utc_offsets:
        out["clock"] = {"utc_offset_s": float(sorted(utc_offsets)[len(utc_offsets) // 2])}
    return out

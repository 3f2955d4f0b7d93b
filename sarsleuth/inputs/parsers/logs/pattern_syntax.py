"""Python's regular expressions as the scan engines take them, written
from Python's own parse of each pattern (``re._parser``), so that a
difference of syntax between the engines cannot make one miss a line:

* :func:`hyperscan_lacks`: whether a pattern holds a construct Hyperscan
  refuses (it is then compiled as a prefilter, its lines checked on
  Python's engine);
* :func:`re2_superset`: an RE2 pattern matching wherever the Python one
  does (and perhaps elsewhere: the finder checks each line it hands on).
"""
from __future__ import annotations

import re

try:  # Python 3.11+
    import re._constants as _sre_c
    import re._parser as _sre_p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore
    import sre_parse as _sre_p  # type: ignore


#: Python regex constructs Hyperscan refuses (zero-width assertions,
#: back-references, atomic and possessive groups).
_HYPERSCAN_LACKS = {_sre_c.ASSERT, _sre_c.ASSERT_NOT, _sre_c.GROUPREF, _sre_c.GROUPREF_EXISTS}
_HYPERSCAN_LACKS_NAMED = {"ATOMIC_GROUP", "POSSESSIVE_REPEAT"}


def hyperscan_lacks(pattern: str) -> bool:
    """Does Python's parse of ``pattern`` hold a construct Hyperscan lacks?
    (Compiling the whole set to learn it, then each pattern alone, cost a
    tenth of a second every run.)"""
    try:
        return _holds_lacking(list(_sre_p.parse(pattern)))
    except (re.error, RecursionError):
        return False


def _holds_lacking(items) -> bool:
    for op, av in items:
        if op in _HYPERSCAN_LACKS or str(op) in _HYPERSCAN_LACKS_NAMED:
            return True
        if op is _sre_c.BRANCH:
            subs = av[1]
        elif op is _sre_c.SUBPATTERN:
            subs = [av[-1]]
        elif op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT):
            subs = [av[2]]
        else:
            continue
        if any(_holds_lacking(list(sub)) for sub in subs):
            return True
    return False



#: Python's bytes classes as byte ranges (RE2's ``\s`` lacks ``\v``).
_CLASS_BYTES = {
    _sre_c.CATEGORY_DIGIT: rb"0-9",
    _sre_c.CATEGORY_NOT_DIGIT: rb"\x00-/:-\xff",
    _sre_c.CATEGORY_SPACE: rb"\t-\r ",
    _sre_c.CATEGORY_NOT_SPACE: rb"\x00-\x08\x0e-\x1f!-\xff",
    _sre_c.CATEGORY_WORD: rb"0-9A-Za-z_",
    _sre_c.CATEGORY_NOT_WORD: rb"\x00-/:-@\[-\^`{-\xff",
}


def re2_superset(pattern: str) -> bytes:
    """An RE2 pattern matching wherever Python's bytes pattern ``pattern``
    matches (and perhaps elsewhere): written from Python's own parse of it,
    byte by byte, so a difference of syntax (``{,3}``, ``\\s`` and ``\\v``)
    cannot make it miss a line.  What RE2 lacks widens it: lookarounds and
    anchors are dropped, a back-reference matches anything."""
    tree = _sre_p.parse(pattern.encode("utf-8"))
    flags = getattr(getattr(tree, "state", None), "flags", 0)
    body = _emit(list(tree))
    return (b"(?i)" if flags & re.IGNORECASE else b"") + body


def _emit(items) -> bytes:
    out = []
    for op, av in items:
        if op is _sre_c.LITERAL:
            out.append(_byte(av))
        elif op is _sre_c.NOT_LITERAL:
            out.append(b"[^" + _byte(av) + b"]")
        elif op is _sre_c.ANY:
            out.append(b".")
        elif op is _sre_c.IN:
            out.append(_class(av))
        elif op is _sre_c.CATEGORY:
            out.append(b"[" + _CLASS_BYTES.get(av, rb"\x00-\xff") + b"]")
        elif op is _sre_c.BRANCH:
            out.append(b"(?:" + b"|".join(_emit(list(b)) for b in av[1]) + b")")
        elif op is _sre_c.SUBPATTERN:
            _group, add, remove, sub = av
            mode = (b"i" if add & re.IGNORECASE else b"") + (b"-i" if remove & re.IGNORECASE else b"")
            out.append(b"(?" + mode + b":" + _emit(list(sub)) + b")")
        elif op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT) or str(op) == "POSSESSIVE_REPEAT":
            low, high, sub = av
            out.append(b"(?:" + _emit(list(sub)) + b")" + _repeat(low, high))
        elif str(op) == "ATOMIC_GROUP":
            out.append(b"(?:" + _emit(list(av)) + b")")
        elif op is _sre_c.GROUPREF:
            out.append(b".*")
        elif op is _sre_c.GROUPREF_EXISTS:
            _group, yes, no = av
            out.append(b"(?:" + _emit(list(yes)) + b"|" + (_emit(list(no)) if no else b"") + b")")
        # AT (anchors, \b), ASSERT, ASSERT_NOT: dropped, which only widens
    return b"".join(out)


def _byte(value: int) -> bytes:
    ch = bytes([value])
    return ch if ch.isalnum() else b"\\x%02x" % value


def _class(items) -> bytes:
    negate = False
    parts = []
    for op, av in items:
        if op is _sre_c.NEGATE:
            negate = True
        elif op is _sre_c.LITERAL:
            parts.append(_byte(av))
        elif op is _sre_c.RANGE:
            parts.append(_byte(av[0]) + b"-" + _byte(av[1]))
        elif op is _sre_c.CATEGORY:
            parts.append(_CLASS_BYTES.get(av, rb"\x00-\xff"))
        else:                                    # a class item this writer does not know: any byte
            return rb"(?s:.)"
    if not parts:
        return rb"(?s:.)" if negate else rb"[^\x00-\xff]"
    return b"[" + (b"^" if negate else b"") + b"".join(parts) + b"]"


def _repeat(low: int, high) -> bytes:
    # RE2 refuses counts above 1000: an unbounded repeat is the superset
    if high is _sre_c.MAXREPEAT or high > 1000:
        return b"*" if low == 0 or low > 1000 else b"{%d,}" % low
    return b"{%d,%d}" % (low, high)

"""Classify log messages into event kinds.

The table is data (``knowledge/signatures.toml``).  A case may add the
user's own ``[[signature]]`` entries from its config file: they travel with
the case (``ParseOptions.signatures``, ``Context.user_signatures``), never
through module state, so two cases in one process cannot see each other's.
All patterns of a set are folded into one alternation so a line is matched
once, and a bytes twin of that alternation lets the log parsers pick
candidate lines out of raw bytes before decoding anything.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import re2

from sarsleuth.knowledge import categories
from sarsleuth.model import SEVERITIES

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore


@dataclass(frozen=True)
class Signature:
    id: str
    family: str
    patterns: tuple[str, ...]
    severity: str | None = None       # user signatures carry their own
    explanation: str | None = None
    category: str | None = None       # incident category (user signatures; default "other")
    recommendations: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()      # regexes with named groups reading the message's parts
    in_report: bool = False           # a line only ever read inside a report: no patterns, never an event


def read_table(text: str) -> list[Signature]:
    """Signatures of a TOML table (``[[signature]]`` entries), checked."""
    data = tomllib.loads(text)
    out = []
    for n, entry in enumerate(data.get("signature", []), 1):
        sig_id = entry.get("id")
        if not isinstance(sig_id, str) or not re.fullmatch(r"[A-Za-z0-9][\w.-]*", sig_id):
            raise ValueError(f"signature #{n}: `id` must be a name like \"myapp-panic\", got {sig_id!r}")
        pats = entry.get("patterns") or ([entry["pattern"]] if entry.get("pattern") else [])
        if isinstance(pats, str):
            pats = [pats]
        in_report = entry.get("in_report") is True
        if in_report and pats:
            raise ValueError(f"signature {sig_id!r}: a definition `in_report` is read by its fields only, "
                             "it takes no `patterns`")
        if not in_report and (not pats or not all(isinstance(p, str) and p for p in pats)):
            raise ValueError(f"signature {sig_id!r}: `patterns` must be a list of regular expressions")
        severity = entry.get("severity")
        if severity is not None and severity not in SEVERITIES:
            raise ValueError(f"signature {sig_id!r}: severity {severity!r} is not one of {', '.join(SEVERITIES)}")
        category = entry.get("category")
        if category is not None and category not in categories():
            raise ValueError(f"signature {sig_id!r}: category {category!r} is not one of {', '.join(categories())}")
        recs = entry.get("recommendations") or ([entry["recommendation"]] if entry.get("recommendation") else [])
        fields = entry.get("fields") or []
        if not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields):
            raise ValueError(f"signature {sig_id!r}: `fields` must be a list of regular expressions")
        if in_report and not fields:
            raise ValueError(f"signature {sig_id!r}: a definition `in_report` needs `fields`")
        out.append(Signature(sig_id, entry.get("family", "any"), tuple(pats), severity, entry.get("explanation"),
                             category, tuple(str(r) for r in recs), tuple(fields), in_report))
    return out


@lru_cache(maxsize=None)
def _field_readers(kind: str) -> tuple:
    for sig in builtin_signatures():
        if sig.id == kind:
            return tuple(re.compile(f) for f in sig.fields)
    return ()


def fields_of(kind: str, message: str) -> dict | None:
    """The named parts of one message of a built-in kind (its first
    ``fields`` regex that matches), or None.  The one definition of what a
    message says: the log scan, the detectors and cross-source matching
    all read messages through it."""
    for reader in _field_readers(kind):
        m = reader.search(message)
        if m:
            return {k: v for k, v in m.groupdict().items() if v is not None}
    return None


def all_fields_of(kind: str, text: str) -> list[dict]:
    """Every occurrence of a kind's fields in a text (a report's detail
    lines may hold several kills)."""
    out = []
    for reader in _field_readers(kind):
        out.extend({k: v for k, v in m.groupdict().items() if v is not None} for m in reader.finditer(text))
    return out


def definitions_text() -> str:
    """The built-in table as written (for its tests: samples, near misses)."""
    return resources.files("sarsleuth.knowledge").joinpath("signatures.toml").read_text("utf-8")


@lru_cache(maxsize=1)
def builtin_signatures() -> tuple[Signature, ...]:
    text = resources.files("sarsleuth.knowledge").joinpath("signatures.toml").read_text("utf-8")
    return tuple(read_table(text))


def all_signatures(user: tuple = ()) -> list[Signature]:
    """The user's signatures (tried first) and the built-in ones."""
    return list(user) + list(builtin_signatures())


def _scoped(pattern: str) -> str:
    """Turn a leading global ``(?i)`` into a scoped group so patterns can be
    joined into one alternation."""
    if pattern.startswith("(?i)"):
        return "(?i:" + pattern[4:] + ")"
    return pattern


@lru_cache(maxsize=1)
def _compiled():
    """The built-in signatures folded into one Python alternation (they are
    ours and reviewed; users' patterns run on RE2, see _user_matchers)."""
    sigs = builtin_signatures()
    strict, loose, names = [], [], {}
    for i, sig in enumerate(sigs):
        for j, pat in enumerate(sig.patterns):
            group = f"s{i}_{j}"
            names[group] = sig.id
            pat = _scoped(pat)
            strict.append(f"(?P<{group}>{pat})")
            # The bytes prefilter runs on whole raw lines (prefix included),
            # so anchors are relaxed; it is a superset of what classifies.
            loose.append(pat[1:] if pat.startswith("^") else pat)
    text_re = re.compile("|".join(strict))
    bytes_re = re.compile("|".join(loose).encode("utf-8"))
    return text_re, bytes_re, names


#: Python regex constructs RE2 cannot run in linear time.
_UNBOUNDED = {"GROUPREF": "refers back to a group", "GROUPREF_EXISTS": "refers back to a group",
              "ASSERT": "uses lookaround", "ASSERT_NOT": "uses lookaround",
              "ATOMIC_GROUP": "uses an atomic group", "POSSESSIVE_REPEAT": "uses a possessive repeat"}


def unbounded_pattern(pattern: str) -> str | None:
    """Why a user's pattern cannot be run with a time bound, or None.

    User patterns run on RE2 (time linear in the line, whatever the
    pattern: ``(a+)+$`` on a long line cannot stall a scan); constructs only
    a backtracking engine has are refused here, with the reason."""
    try:
        from re import _parser as sre_parse      # Python 3.11+
    except ImportError:                           # pragma: no cover - Python 3.10
        import sre_parse  # type: ignore
    try:
        tree = sre_parse.parse(pattern)
    except re.error as exc:
        return f"is not a valid regular expression: {exc}"
    stack = [tree]
    while stack:
        node = stack.pop()
        for op, arg in (node.data if hasattr(node, "data") else node):
            reason = _UNBOUNDED.get(str(op))
            if reason:
                return f"{reason}, which has no time bound (RE2 syntax is required)"
            for item in (arg if isinstance(arg, (list, tuple)) else [arg]):
                if hasattr(item, "data"):
                    stack.append(item)
                elif isinstance(item, (list, tuple)):
                    stack.extend(x for x in item if hasattr(x, "data"))
    return None


@lru_cache(maxsize=8)
def _user_matchers(user: tuple):
    """(compiled RE2 pattern, signature id) for each user pattern."""
    return [(re2.compile(_scoped(pat)), sig.id) for sig in user for pat in sig.patterns]


def classify(message: str, user: tuple = ()) -> str | None:
    """The event kind of a message (without its syslog/nginx prefix), or None.

    Built-in signatures decide first, so a user's signature never changes
    what the built-in detectors count; the user's (on RE2) classify the
    lines no built-in signature knows."""
    text_re, _, names = _compiled()
    m = text_re.search(message)
    if m is not None:
        return names[m.lastgroup]
    for compiled, sig_id in _user_matchers(tuple(user)):
        if compiled.search(message):
            return sig_id
    return None


def candidate_bytes_regex():
    """A compiled bytes regex that matches every raw line a built-in
    signature could classify (a superset: anchors are relaxed)."""
    return _compiled()[1]


@lru_cache(maxsize=8)
def user_candidate_matcher(user: tuple):
    """An RE2 bytes pattern matching every raw line one of the user's
    signatures could classify, or None without user signatures."""
    if not user:
        return None
    loose = [_scoped(p)[1:] if p.startswith("^") else _scoped(p) for sig in user for p in sig.patterns]
    return re2.compile("|".join(f"(?:{p})" for p in loose).encode("utf-8"))


def signature_severity(kind: str, user: tuple = ()) -> str | None:
    for s in all_signatures(user):
        if s.id == kind:
            return s.severity
    return None

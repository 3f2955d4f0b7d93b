"""Classify log messages into event kinds.

The table is data (``knowledge/signatures.toml``, plus any user file given
with ``load_user_signatures``).  All patterns are folded into one alternation
so a line is matched once, and a bytes twin of that alternation lets the log
parsers pick candidate lines out of raw bytes before decoding anything.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

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


_user: list[Signature] = []


def _load_table(text: str) -> list[Signature]:
    from sarsleuth.model import CATEGORIES, SEVERITIES
    data = tomllib.loads(text)
    out = []
    for n, entry in enumerate(data.get("signature", []), 1):
        sig_id = entry.get("id")
        if not isinstance(sig_id, str) or not re.fullmatch(r"[A-Za-z0-9][\w.-]*", sig_id):
            raise ValueError(f"signature #{n}: `id` must be a name like \"myapp-panic\", got {sig_id!r}")
        pats = entry.get("patterns") or ([entry["pattern"]] if entry.get("pattern") else [])
        if isinstance(pats, str):
            pats = [pats]
        if not pats or not all(isinstance(p, str) and p for p in pats):
            raise ValueError(f"signature {sig_id!r}: `patterns` must be a list of regular expressions")
        severity = entry.get("severity")
        if severity is not None and severity not in SEVERITIES:
            raise ValueError(f"signature {sig_id!r}: severity {severity!r} is not one of {', '.join(SEVERITIES)}")
        category = entry.get("category")
        if category is not None and category not in CATEGORIES:
            raise ValueError(f"signature {sig_id!r}: category {category!r} is not one of {', '.join(CATEGORIES)}")
        recs = entry.get("recommendations") or ([entry["recommendation"]] if entry.get("recommendation") else [])
        out.append(Signature(sig_id, entry.get("family", "any"), tuple(pats), severity, entry.get("explanation"),
                             category, tuple(str(r) for r in recs)))
    return out


@lru_cache(maxsize=1)
def builtin_signatures() -> tuple[Signature, ...]:
    text = resources.files("sarsleuth.knowledge").joinpath("signatures.toml").read_text("utf-8")
    return tuple(_load_table(text))


def load_user_signatures(path) -> list[Signature]:
    """Add signatures from a user TOML file (same shape as the built-in one,
    plus optional ``severity``, ``explanation``, ``category`` and
    ``recommendations``).  User signatures are tried before the built-in
    ones; loading a signature whose id is already loaded replaces it, so
    reading the same config twice does not duplicate anything."""
    from pathlib import Path
    sigs = _load_table(Path(path).read_text("utf-8"))
    for s in sigs:
        for p in s.patterns:
            try:
                re.compile(p)  # fail early on a bad regex, with the user's pattern
            except re.error as exc:
                raise ValueError(f"signature {s.id!r}: bad pattern {p!r}: {exc}") from None
    ids = {s.id for s in sigs}
    _user[:] = sigs + [s for s in _user if s.id not in ids]
    _compiled.cache_clear()
    return sigs


def user_signatures() -> list[Signature]:
    """The signatures loaded from user files, in the order they are tried."""
    return list(_user)


def clear_user_signatures() -> None:
    """Forget every user signature (back to the built-in table)."""
    _user.clear()
    _compiled.cache_clear()


def all_signatures() -> list[Signature]:
    return list(_user) + list(builtin_signatures())


def _scoped(pattern: str) -> str:
    """Turn a leading global ``(?i)`` into a scoped group so patterns can be
    joined into one alternation."""
    if pattern.startswith("(?i)"):
        return "(?i:" + pattern[4:] + ")"
    return pattern


@lru_cache(maxsize=1)
def _compiled():
    sigs = all_signatures()
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


def classify(message: str) -> str | None:
    """The event kind of a message (without its syslog/nginx prefix), or None."""
    text_re, _, names = _compiled()
    m = text_re.search(message)
    if m is None:
        return None
    return names[m.lastgroup]


def candidate_bytes_regex():
    """A compiled bytes regex that matches every raw line that could classify
    (a superset: anchors are relaxed)."""
    return _compiled()[1]


def signature_severity(kind: str) -> str | None:
    for s in all_signatures():
        if s.id == kind:
            return s.severity
    return None

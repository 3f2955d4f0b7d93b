"""User configuration: detector thresholds, link speed, extra signatures.

A TOML file, e.g.::

    link_speed = "20G"

    [detectors.tcp-timewait]
    tcp_max_tw_buckets = 262144

    [[signature]]
    id = "my-app-panic"
    patterns = ['myapp: panic:']
    severity = "high"
    explanation = "myapp crashed"

    [redact.patterns]         # more names --redact replaces: NAME-1, NAME-2...
    customer = 'ACME-[0-9]+'
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import re2

from sarsleuth.detectors import registry
from sarsleuth.errors import UsageError
from sarsleuth.knowledge import signatures
from sarsleuth.options import parse_link_speed as _parse_link_speed
from sarsleuth.inputs.named_paths import Unreadable, read_named

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore


#: Nesting a config never needs; deeper is refused before the TOML reader
#: recurses into it.
MAX_NESTING = 32
#: A config holds thresholds and a few signatures: kilobytes.  Anything
#: past this is not a config (``/dev/zero``, a log named by mistake).
MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True)
class Config:
    """One case's configuration: it travels with the case, never through
    module state."""

    params: dict = field(default_factory=dict)
    link_speed_bps: float | None = None
    path: str | None = None
    signatures: tuple = ()       # the user's [[signature]] entries, tried before the built-in ones
    redact_patterns: tuple = ()  # [redact.patterns]: (name, compiled RE2 pattern) for --redact


def load_config(path) -> Config:
    """Read and check a config file; every problem is one UsageError line
    naming the file (nothing a user wrote may surface as a traceback)."""
    if path is None:
        return Config()
    p = Path(path)
    try:
        text = read_named(p, MAX_CONFIG_BYTES, "config file").decode("utf-8")
        _check_nesting(p, text)
        data = tomllib.loads(text)
    except Unreadable as exc:
        raise UsageError(str(exc)) from None
    except RecursionError:
        raise UsageError(f"{p}: nested more than {MAX_NESTING} levels deep") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{p}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: unreadable config file (not UTF-8: {exc})") from None
    params = _detector_params(p, data.get("detectors"))
    link = _link_speed(p, data)
    return Config(params=params, link_speed_bps=link, path=str(p), signatures=_user_signatures(p, text, data),
                  redact_patterns=_redact_patterns(p, data.get("redact")))


def _check_nesting(p: Path, text: str) -> None:
    """Refuse arrays/inline tables nested deeper than any config needs (the
    TOML reader would recurse once per level)."""
    depth = deepest = 0
    in_string = None
    for ch in text:
        if in_string:
            if ch == in_string:
                in_string = None
        elif ch in "\"'":
            in_string = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_NESTING:
                raise UsageError(f"{p}: nested more than {MAX_NESTING} levels deep")
        elif ch in "]}":
            depth = max(depth - 1, 0)


def _detector_params(p: Path, section) -> dict:
    """``[detectors.<id>]`` tables: known detectors, known parameters."""
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise UsageError(f"{p}: [detectors] must be a table of [detectors.<id>] tables")
    known = registry()
    params = {}
    for det_id, values in section.items():
        if det_id not in known:
            raise UsageError(f"{p}: unknown detector {det_id!r} in [detectors]")
        if not isinstance(values, dict):
            raise UsageError(f"{p}: [detectors.{det_id}] must be a table of parameter = value")
        unknown = set(values) - set(known[det_id].defaults)
        if unknown:
            raise UsageError(f"{p}: detector {det_id!r} has no parameter {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(known[det_id].defaults))})")
        for name, value in values.items():
            _check_param(p, det_id, name, value, known[det_id].defaults[name])
        params[det_id] = values
    return params


def _check_param(p: Path, det_id: str, name: str, value, default) -> None:
    """A threshold must be of its default's type, finite and not negative
    (a NaN or infinite threshold would silently switch a detector off);
    percentages stay within 0-100."""
    where = f"{p}: [detectors.{det_id}] {name} = {value!r}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise UsageError(f"{where}: expected true or false")
        return
    if isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"{where}: expected a number")
        if value != value or value in (float("inf"), float("-inf")):
            raise UsageError(f"{where}: expected a finite number")
        if value < 0:
            raise UsageError(f"{where}: expected a number >= 0")
        if name.endswith("_pct") and value > 100:
            raise UsageError(f"{where}: a percentage is at most 100")
        return
    if isinstance(default, str) and not isinstance(value, str):
        raise UsageError(f"{where}: expected text")


def _user_signatures(p: Path, text: str, data: dict) -> tuple:
    """The file's ``[[signature]]`` entries, checked: ids must not shadow a
    built-in detector or signature (it would silently change the built-in
    counts), and every pattern must run in time linear in the line (RE2
    syntax: no backreferences or lookaround), so no line can stall a scan."""
    if not data.get("signature"):
        return ()
    try:
        sigs = signatures.read_table(text)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{p}: bad [[signature]]: {exc}") from None
    taken = set(registry()) | {s.id for s in signatures.builtin_signatures()}
    seen = set()
    for s in sigs:
        if s.id in taken:
            raise UsageError(f"{p}: [[signature]] id {s.id!r} is a built-in name; choose another id")
        if s.id in seen:
            raise UsageError(f"{p}: [[signature]] id {s.id!r} appears twice")
        seen.add(s.id)
        for pattern in s.patterns:
            problem = signatures.unbounded_pattern(pattern)
            if problem:
                raise UsageError(f"{p}: signature {s.id!r}: pattern {pattern!r} {problem}")
    return tuple(sigs)


def _redact_patterns(p: Path, section) -> tuple:
    """``[redact.patterns]``: name = pattern (RE2 syntax, so no text can
    stall the redaction); each match becomes ``name-1``, ``name-2``..."""
    if section is None:
        return ()
    if not isinstance(section, dict) or set(section) - {"patterns"}:
        raise UsageError(f"{p}: [redact] holds one table, [redact.patterns] of name = 'pattern'")
    patterns = section.get("patterns") or {}
    if not isinstance(patterns, dict):
        raise UsageError(f"{p}: [redact.patterns] must be a table of name = 'pattern'")
    out = []
    for name, pattern in patterns.items():
        if not re.fullmatch(r"[a-z][a-z0-9-]{0,30}", name):
            raise UsageError(f"{p}: [redact.patterns] name {name!r}: expected a short lower-case word (it begins "
                             "each stand-in)")
        if not isinstance(pattern, str) or not pattern:
            raise UsageError(f"{p}: [redact.patterns] {name}: expected a pattern in quotes")
        problem = signatures.unbounded_pattern(pattern)
        if problem:
            raise UsageError(f"{p}: [redact.patterns] {name}: pattern {pattern!r} {problem}")
        try:
            compiled = re2.compile(pattern)
        except Exception as exc:  # noqa: BLE001 - re2 raises its own error type
            raise UsageError(f"{p}: [redact.patterns] {name}: pattern {pattern!r}: {exc}") from None
        if _matches_empty(compiled):
            raise UsageError(f"{p}: [redact.patterns] {name}: pattern {pattern!r} can match an empty string "
                             "(its stand-in would go between every two characters): make it match at least one")
        out.append((name, compiled))
    return tuple(out)


#: Texts on which a pattern that can match nothing shows it (at a start,
#: an end, a word edge, a line edge).
_EMPTY_PROBES = ("", "a", "a b", "-", "\n", "x1 y2", "ACME-1 x")


def _matches_empty(compiled) -> bool:
    return any(m.group(0) == "" for probe in _EMPTY_PROBES for m in compiled.finditer(probe))


def _link_speed(p: Path, data: dict):
    if data.get("link_speed") is None:
        return None
    try:
        return _parse_link_speed(data["link_speed"])
    except UsageError:
        raise UsageError(f"{p}: link_speed {data['link_speed']!r}: expected e.g. 10G, 20Gbit, 1000M") from None

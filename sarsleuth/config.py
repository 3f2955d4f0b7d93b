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
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sarsleuth.errors import UsageError

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore


@dataclass
class Config:
    params: dict = field(default_factory=dict)
    link_speed_bps: float | None = None
    path: str | None = None


def load_config(path) -> Config:
    """Read and check a config file; every problem is one UsageError line
    naming the file (nothing a user wrote may surface as a traceback)."""
    if path is None:
        return Config()
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{p}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{p}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{p}: unreadable config file ({type(exc).__name__}: {exc})") from None
    params = _detector_params(p, data.get("detectors"))
    link = _link_speed(p, data)
    _register_signatures(p, data)
    return Config(params=params, link_speed_bps=link, path=str(p))


def _detector_params(p: Path, section) -> dict:
    """``[detectors.<id>]`` tables: known detectors, known parameters."""
    from sarsleuth.detectors import registry
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
        params[det_id] = values
    return params


def _register_signatures(p: Path, data: dict) -> None:
    """Register the file's ``[[signature]]`` entries, if any."""
    if not data.get("signature"):
        return
    from sarsleuth.knowledge import signatures
    try:
        signatures.load_user_signatures(p)
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(f"{p}: bad [[signature]]: {exc}") from None


def _link_speed(p: Path, data: dict):
    if data.get("link_speed") is None:
        return None
    from sarsleuth.options import parse_link_speed as _parse_link_speed
    try:
        return _parse_link_speed(data["link_speed"])
    except UsageError:
        raise UsageError(f"{p}: link_speed {data['link_speed']!r}: expected e.g. 10G, 20Gbit, 1000M") from None

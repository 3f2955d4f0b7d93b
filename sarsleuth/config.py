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

from .errors import UsageError

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
    if path is None:
        return Config()
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{p}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{p}: not valid TOML: {exc}") from None
    from .detectors import registry
    known = registry()
    params = {}
    for det_id, values in (data.get("detectors") or {}).items():
        if det_id not in known:
            raise UsageError(f"{p}: unknown detector {det_id!r} in [detectors]")
        unknown = set(values) - set(known[det_id].defaults)
        if unknown:
            raise UsageError(f"{p}: detector {det_id!r} has no parameter {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(known[det_id].defaults))})")
        params[det_id] = values
    if data.get("signature"):
        from . import signatures
        try:
            signatures.load_user_signatures(p)
        except Exception as exc:
            raise UsageError(f"{p}: bad [[signature]]: {exc}") from None
    link = None
    if data.get("link_speed") is not None:
        from .case import _parse_link_speed
        link = _parse_link_speed(data["link_speed"])
    return Config(params=params, link_speed_bps=link, path=str(p))

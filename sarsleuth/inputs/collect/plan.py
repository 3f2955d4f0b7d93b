"""What a collection gathers (``knowledge/collect.toml``), over which
window of time, within which caps.

The window is two instants: ``--since 2h`` counts back from now, ``--window
A..B`` takes ISO 8601 times on the host's clock (a time without a date is
today's; an end earlier than its start, both without a date, is the next
day's).  The days it covers (on the host's clock) choose the sa files.
"""
from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass
from functools import lru_cache

from sarsleuth.errors import UsageError
from sarsleuth.knowledge import read_toml

_SPAN = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|min|m|s)", re.I)
_SPAN_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "min": 60, "m": 60, "s": 1}


@lru_cache(maxsize=1)
def knowledge() -> dict:
    return read_toml("collect.toml")


def span_seconds(text: str, option: str = "--since") -> float:
    """``2h``, ``90m``, ``1d12h``, ``45s``, ``1w`` in seconds."""
    spec = str(text).strip().replace(" ", "")
    parts = _SPAN.findall(spec)
    if not spec or "".join(n + u for n, u in parts).lower() != spec.lower():
        raise UsageError(f"{option} {text!r}: expected a span such as 2h, 90m, 1d12h or 45s")
    seconds = sum(float(n) * _SPAN_SECONDS[u.lower()] for n, u in parts)
    if seconds <= 0:
        raise UsageError(f"{option} {text!r}: the span must be longer than nothing")
    return seconds


@dataclass(frozen=True)
class Window:
    """The time a collection covers: aware instants, and how it was asked."""

    start: dt.datetime
    end: dt.datetime
    asked: str

    def days(self) -> list:
        """The days it touches on the host's clock, first to last."""
        first, last = self.start.astimezone().date(), self.end.astimezone().date()
        return [first + dt.timedelta(days=k) for k in range((last - first).days + 1)]

    def epoch(self) -> tuple:
        return int(self.start.timestamp()), int(self.end.timestamp()) + 1

    def text(self) -> str:
        fmt = "%Y-%m-%d %H:%M:%S"
        a, b = self.start.astimezone(), self.end.astimezone()
        offset = a.strftime("%z")
        return f"{a.strftime(fmt)} to {b.strftime(fmt)} (UTC{offset[:3]}:{offset[3:]})"


def _host_time(text: str, today: dt.date, option: str) -> tuple:
    """(aware instant, whether a date was given) of one end of ``--window``."""
    text = text.strip()
    try:
        when = dt.datetime.fromisoformat(text)
        dated = True
    except ValueError:
        try:
            when = dt.datetime.combine(today, dt.time.fromisoformat(text))
            dated = False
        except ValueError:
            raise UsageError(f"{option} {text!r}: expected an ISO 8601 time such as 2026-11-20T15:00, "
                             "or 15:00 for today") from None
    if when.tzinfo is None:
        when = when.astimezone()          # the host's zone, as its logs keep it
    return when, dated


def window(since: str | None = None, between: str | None = None, now: float | None = None) -> Window:
    """The window of ``--since`` or ``--window`` (one of them, or neither:
    the default span back from now)."""
    if since is not None and between is not None:
        raise UsageError("--since and --window name the same thing: give one")
    now_at = dt.datetime.fromtimestamp(time.time() if now is None else now).astimezone()
    if between is None:
        asked = since if since is not None else knowledge()["caps"]["since"]
        back = dt.timedelta(seconds=span_seconds(asked))
        return Window(now_at - back, now_at, f"--since {asked}")
    if ".." not in between:
        raise UsageError(f"--window {between!r}: expected START..END, e.g. 2026-11-20T15:00..2026-11-20T16:00")
    a, b = between.split("..", 1)
    start, start_dated = _host_time(a, now_at.date(), "--window")
    end, end_dated = _host_time(b, start.astimezone().date() if start_dated else now_at.date(), "--window")
    if end < start and not end_dated:
        end += dt.timedelta(days=1)       # 23:50..00:10: past midnight
    if end < start:
        raise UsageError(f"--window {between!r}: end is before start")
    return Window(start, end, f"--window {between}")


@dataclass(frozen=True)
class Caps:
    """How much a collection may take (bytes, seconds)."""

    file_bytes: int
    sa_file_bytes: int
    output_bytes: int
    total_bytes: int
    command_seconds: float
    total_seconds: float
    processes: int

    @classmethod
    def of(cls, max_size: str | None = None) -> "Caps":
        """The plan's caps; ``max_size`` (``--max-size``, ``2G``) the total."""
        caps = knowledge()["caps"]
        return cls(file_bytes=int(caps["file_bytes"]), sa_file_bytes=int(caps["sa_file_bytes"]),
                   output_bytes=int(caps["output_bytes"]),
                   total_bytes=size_bytes(max_size) if max_size is not None else int(caps["total_bytes"]),
                   command_seconds=float(caps["command_seconds"]), total_seconds=float(caps["total_seconds"]),
                   processes=int(caps["processes"]))


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*", re.I)


def size_bytes(text: str, option: str = "--max-size") -> int:
    """``2G``, ``500M``, ``1.5GiB``, ``100000`` (bytes; K, M, G, T are 1024-based)."""
    m = _SIZE.fullmatch(str(text))
    if not m:
        raise UsageError(f"{option} {text!r}: expected a size such as 500M or 2G")
    value = float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " ")
    if value < 1:
        raise UsageError(f"{option} {text!r}: expected a size of at least a byte")
    return int(value)

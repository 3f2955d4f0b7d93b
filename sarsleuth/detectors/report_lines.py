"""What the detectors of kernel reports share: a report's lines (its
message, then its detail), counts by key, the most counted, and how long
a burst lasted said in its title."""
from __future__ import annotations


def lines_of_report(row) -> list[str]:
    """The message of an event row, then its detail lines."""
    detail = getattr(row, "detail", None)
    return [str(row.message)] + (detail.split("\n") if isinstance(detail, str) and detail else [])


def count_into(into: dict, key, n: int = 1) -> None:
    into[key] = into.get(key, 0) + n


def most_counted(counts: dict, shown: int = 3) -> list:
    return [k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))][:shown]


def over_span(b) -> str:
    seconds = (b.end - b.start).total_seconds() if b.aligned else 0
    if not seconds:
        return ""
    return f" over {seconds / 3600:.1f} h" if seconds >= 5400 else f" over {seconds:.0f} s"

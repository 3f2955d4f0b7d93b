"""Which metrics of a sar section share a chart in the metrics explorer,
and in what unit sar prints each: read from
``knowledge/chart_groups.toml`` (the charts sar's tables suggest) and
``knowledge/metric_names.toml`` (the unit sar printed).  Every metric of
a section is drawn: those no chart of the data file names share charts by
unit, at most :data:`MOST_SERIES` to a chart."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sarsleuth.inputs.parsers.sar_text.sections import SADF_INTEGERS
from sarsleuth.knowledge import read_toml
from sarsleuth.knowledge.metric_names import mapping_of

#: Series of one chart made of the metrics the data file does not group.
MOST_SERIES = 8
#: How the explorer writes the units of metric_names.toml's names.
BASE_UNIT_TEXT = {"percent": "%", "celsius": "degC", "volts": "V", "rpm": "rpm"}


@dataclass(frozen=True)
class ChartSpec:
    """One chart of a section: its title, its metrics (sar's names), the
    unit sar prints them in and whether they stack (parts of a whole)."""

    title: str
    metrics: tuple
    unit: str
    stacked: bool = False


@lru_cache(maxsize=1)
def _data() -> dict:
    return read_toml("chart_groups.toml")


def section_title(section: str) -> str:
    """``Memory (sar -r)``; a section the data file does not know: its name."""
    return _data()["section"].get(section, {}).get("title", section)


@lru_cache(maxsize=4096)
def unit_of(section: str, metric: str) -> str:
    """The unit sar prints ``metric`` in: ``%``, ``kB``, ``kB/s``, ``ms``,
    ``/s`` for a rate of things, ``""`` for a count."""
    mapping = mapping_of(section, metric)
    rate = metric.endswith("/s") or (mapping is not None and mapping.family.name.endswith("_per_second"))
    if mapping is not None and mapping.unit_from:
        return mapping.unit_from + ("/s" if rate else "")
    if metric.startswith("%"):
        return "%"
    if mapping is not None and mapping.family.name.endswith("_percent_per_minute"):
        return "%/min"
    if mapping is not None and mapping.family.unit in BASE_UNIT_TEXT:
        return BASE_UNIT_TEXT[mapping.family.unit]
    return "/s" if rate else ""


def decimals_of(metric: str) -> int:
    """Decimals sar prints ``metric`` with: none for the columns sadf
    prints as whole numbers, two for every other figure."""
    return 0 if metric in SADF_INTEGERS else 2


def charts_of(section: str, metrics) -> list[ChartSpec]:
    """The charts of a section holding ``metrics``: the data file's, then
    the other metrics by unit (in their given order)."""
    present = list(dict.fromkeys(metrics))
    spec = _data()["section"].get(section, {})
    out, drawn = [], set()
    for chart in spec.get("chart", ()):
        if chart.get("requires") and chart["requires"] not in present:
            continue
        held = [m for m in chart["metrics"] if m in present]
        if not held:
            continue
        drawn.update(held)
        for unit, same in _by_unit(section, held):
            title = chart.get("title") or ", ".join(same)
            out.append(ChartSpec(title, tuple(same), unit, bool(chart.get("stacked")) and len(same) > 1))
    rest = [m for m in present if m not in drawn]
    for unit, same in _by_unit(section, rest):
        for i in range(0, len(same), MOST_SERIES):
            part = tuple(same[i:i + MOST_SERIES])
            out.append(ChartSpec(", ".join(part) if len(part) <= 3 else f"{part[0]} ... {part[-1]}", part, unit))
    return out


def _by_unit(section: str, metrics) -> list[tuple[str, list]]:
    groups: dict = {}
    for m in metrics:
        groups.setdefault(unit_of(section, m), []).append(m)
    return list(groups.items())

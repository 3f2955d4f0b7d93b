"""What each sar metric is called in Prometheus: the mapping of
``knowledge/metric_names.toml``, read once.

A series of the metric store, ``(host, section, device, metric)``, becomes
a sample of one metric family (its Prometheus name, help and unit), with
the labels ``host``, the section's item label (``cpu``, ``device``,
``iface``...) and, for the per-CPU interrupt columns, ``cpu``; its values
are multiplied by the factor of the unit sar printed them in.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from sarsleuth.knowledge import read_toml

#: Units a name may end with, written as the family's ``# UNIT`` (rates and
#: plain counts carry none).
BASE_UNITS = ("bytes", "seconds", "percent", "hertz", "celsius", "volts", "amperes", "rpm")
#: Prometheus metric and label names.
NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
#: A key holding ``{label}`` matches a run of digits there.
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class Family:
    """One exported metric family."""

    name: str
    help: str
    type: str = "gauge"

    @property
    def unit(self) -> str | None:
        """The unit the name ends with, when it is one OpenMetrics declares."""
        for unit in BASE_UNITS:
            if self.name.endswith("_" + unit):
                return unit
        return None


@dataclass(frozen=True)
class Mapping:
    """How one sar metric of one section is exported.  ``rank`` orders the
    metrics that export as one series: the current sysstat name (0) wins
    over an older one (1) at a time both hold."""

    section: str
    metric: str              # the sadf -d head, or a pattern such as CPU{cpu}
    family: Family
    label: str | None        # the label the section's item goes in
    factor: float            # to the base unit
    unit_from: str | None    # the unit sar printed ("kB", "ms"...), None when kept
    rank: int = 0
    same_as: str | None = None

    def labels(self, device: str, metric: str) -> tuple:
        """The (name, value) pairs a series of this mapping gets besides
        ``host``."""
        out = []
        if self.label and device:
            out.append((self.label, device))
        pattern = _pattern(self.metric)
        if pattern is not None:
            m = pattern.match(metric)
            out += [(k, v) for k, v in m.groupdict().items()]
        return tuple(out)


@lru_cache(maxsize=None)
def _pattern(key: str):
    if "{" not in key:
        return None
    regex = "".join(f"(?P<{p}>\\d+)" if i % 2 else re.escape(p)
                    for i, p in enumerate(_PLACEHOLDER.split(key)))
    return re.compile(f"^{regex}$")


@lru_cache(maxsize=1)
def data() -> dict:
    return read_toml("metric_names.toml")


@lru_cache(maxsize=1)
def mappings() -> tuple:
    """Every mapping, in the order of the data file (sections, then metrics)."""
    raw = data()
    units = raw["units"]
    out = []
    for section, spec in raw["section"].items():
        metrics = spec["metric"]
        for metric, entry in metrics.items():
            target = metrics[entry["same_as"]] if "same_as" in entry else entry
            unit_from = entry.get("from", target.get("from"))     # an older name keeps the unit unless it says
            family = Family(name=target["name"], help=target["help"], type=target.get("type", "gauge"))
            out.append(Mapping(section=section, metric=metric, family=family, label=spec.get("label"),
                               factor=float(units[unit_from]) if unit_from else 1.0, unit_from=unit_from,
                               rank=1 if "same_as" in entry else 0, same_as=entry.get("same_as")))
    return tuple(out)


@lru_cache(maxsize=1)
def _index() -> tuple:
    exact, patterns = {}, {}
    for m in mappings():
        if _pattern(m.metric) is None:
            exact[(m.section, m.metric)] = m
        else:
            patterns.setdefault(m.section, []).append(m)
    return exact, patterns


@lru_cache(maxsize=65536)
def current_of(section: str, metric: str) -> tuple[str, float] | None:
    """For an older sysstat's name of a figure (``rd_sec/s`` in sectors),
    the name sysstat prints it under now and the factor to its unit
    (``("rkB/s", 0.5)``: sysstat's own sectors / 2); None for a current name."""
    found = mapping_of(section, metric)
    if found is None or found.same_as is None:
        return None
    target = mapping_of(section, found.same_as)
    return found.same_as, found.factor / target.factor


@lru_cache(maxsize=65536)
def mapping_of(section: str, metric: str) -> Mapping | None:
    """The mapping of a series' section and metric, or None when sar's
    vocabulary does not hold it (a tsar column, a field a newer sysstat
    added)."""
    exact, patterns = _index()
    found = exact.get((section, metric))
    if found is not None:
        return found
    for m in patterns.get(section, ()):
        if _pattern(m.metric).match(metric):
            return m
    return None


def families() -> list:
    """Every exported family once, in the order of the data file."""
    return list({m.family.name: m.family for m in mappings()}.values())


def device_labels() -> set:
    """Every label name the mapping gives besides ``host``."""
    out = {m.label for m in mappings() if m.label}
    for m in mappings():
        p = _pattern(m.metric)
        if p is not None:
            out |= set(p.groupindex)
    return out


def markdown_table() -> str:
    """docs/metric-names.md: every sar metric and its exported name."""
    raw = data()
    lines = ["# sar metrics in Prometheus", "",
             "`sarsleuth parse ... --format openmetrics` exports every sar metric under the",
             "name below (generated from `sarsleuth/knowledge/metric_names.toml` by",
             "`tools/metric_names.py`; do not edit by hand). Every series has the label",
             "`host`, and the item label of its section where the section has items.",
             "Values are converted to the unit the name ends with: sar's kB x 1024, MB x",
             "1048576, sectors and blocks x 512, ms / 1000, MHz x 1000000, mA / 1000;",
             "percentages stay 0-100, as sar printed them. Names marked *older name*",
             "are what earlier sysstat releases printed for the same figure: they are",
             "read under the current name, converted (sectors / 2 = kB), and export",
             "as the same series.", ""]
    for section, spec in raw["section"].items():
        label = spec.get("label")
        lines += [f"## {section}" + (f" (label `{label}`)" if label else ""), "",
                  "| sar metric | exported name | unit conversion | meaning |", "|---|---|---|---|"]
        for m in (m for m in mappings() if m.section == section):
            conversion = f"{m.unit_from} x {_factor_text(m.factor)}" if m.unit_from and m.factor != 1 else ""
            extra = "".join(f", label `{k}`" for k in (_pattern(m.metric).groupindex if _pattern(m.metric) else ()))
            meaning = f"*older name* of `{m.same_as}`" if m.same_as else m.family.help
            lines.append(f"| `{m.metric}` | `{m.family.name}`{extra} | {conversion} | {meaning} |")
        lines.append("")
    return "\n".join(lines)


def _factor_text(factor: float) -> str:
    return f"{int(factor)}" if factor == int(factor) else f"{factor:g}"

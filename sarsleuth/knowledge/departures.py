"""The knowledge of what changed (``knowledge/departures.toml``), read once:
the baseline's rules, the statistics' constants, the floor of each unit,
which series are strain, how entries group; and, from ``kb.toml`` and
``signatures.toml``, which series each detector reads (what its findings
already name), and the unit sar prints each metric in (from
``metric_names.toml``)."""
from __future__ import annotations

from functools import lru_cache

from sarsleuth.knowledge import kb_entry, read_toml
from sarsleuth.knowledge.metric_names import mapping_of

#: The section a log message kind's rate is filed under.
LOG_SECTION = "log"
#: The unit of a message kind's rate: lines a minute.
LOG_UNIT = "/min"


@lru_cache(maxsize=1)
def data() -> dict:
    return read_toml("departures.toml")


def baseline_rules() -> dict:
    return dict(data()["baseline"])


def statistics() -> dict:
    return dict(data()["statistics"])


def unexplained_rules() -> dict:
    return dict(data()["unexplained"])


def weight_of(section: str) -> float:
    """How much a change of ``section`` weighs in the ranking."""
    weights = data()["weight"]
    return float(weights.get(section, weights["other"]))


def whole_sections() -> frozenset:
    """Sections told as one entry whatever their devices."""
    return frozenset(data()["group"]["whole_section"])


def aggregate_devices() -> dict:
    """{section: the device that sums or averages its items} (cpu: all)."""
    return dict(data()["group"]["aggregate_device"])


@lru_cache(maxsize=1)
def _device_families() -> dict:
    return {section: i for i, group in enumerate(data()["told"]["same_device"]) for section in group}


def same_device(section: str, other: str) -> bool:
    """Do two sections describe one device (``[told] same_device``: an
    interface's traffic and its errors)?"""
    families = _device_families()
    return section != other and section in families and families.get(other) == families[section]


@lru_cache(maxsize=4096)
def printed_unit(section: str, metric: str) -> str:
    """The unit sar prints a metric in ("%", "kB/s", "/s", "kB", "ms", ""
    for a count); a log message kind's rate is in lines a minute."""
    if section == LOG_SECTION:
        return LOG_UNIT
    found = mapping_of(section, metric)
    if found is None:
        return "%" if metric.startswith("%") else "/s" if metric.endswith("/s") else ""
    name = found.family.name
    if name.endswith("_percent"):
        return "%"
    rate = name.endswith("_per_second")
    base = found.unit_from or ("degC" if name.endswith("_celsius") else "rpm" if name.endswith("_rpm")
                               else "B" if name.endswith("_bytes") else "")
    return f"{base}/s" if rate else base


def floor_of(unit: str) -> float:
    """The smallest change worth telling in ``unit`` (the noise of a flat series)."""
    floors = data()["floor"]
    return float(floors.get(unit, floors["other"]))


@lru_cache(maxsize=1)
def _strain_rules() -> tuple:
    rules = data()["strain"]
    return tuple((pattern.split(":", 1), direction) for direction in ("up", "down") for pattern in rules[direction])


def _strain_table(name: str, section: str, metric: str):
    """The value of the first ``"section:metric"`` pattern of
    ``[strain.<name>]`` that names the series (``*``: any metric), or None."""
    for pattern, value in (data()["strain"].get(name) or {}).items():
        sec, met = pattern.split(":", 1)
        if sec == section and met in ("*", metric):
            return value
    return None


@lru_cache(maxsize=4096)
def strain_felt(section: str, metric: str, ncpu: int | None = None) -> float | None:
    """The window's average from which a departure of this series is strain
    (``[strain.felt]``; ``[strain.felt_per_cpu]`` times the host's CPUs,
    one when unknown), or None when it is at any level."""
    per_cpu = _strain_table("felt_per_cpu", section, metric)
    if per_cpu is not None:
        return float(per_cpu) * max(1, int(ncpu or 1))
    level = _strain_table("felt", section, metric)
    return None if level is None else float(level)


@lru_cache(maxsize=8192)
def strain_resource(section: str, metric: str) -> str:
    """What a strain series says was waited for or ran out
    (``[strain.resource]``): the CPUs' wait and the queue of runnable
    tasks are one resource; a section not listed is its own."""
    return str(_strain_table("resource", section, metric) or section)


@lru_cache(maxsize=8192)
def strain_direction(section: str, metric: str) -> str | None:
    """"up" or "down": the direction in which a departure of this series
    is strain (work waiting, memory running out, errors); None when it is
    only more or less work."""
    if f"{section}:{metric}" in data()["strain"].get("never", ()):
        return None
    for (sec, met), direction in _strain_rules():
        if sec == section and met in ("*", metric):
            return direction
    return None


def bound_rules() -> dict:
    return dict(data()["bound"])


@lru_cache(maxsize=4096)
def bound_side(section: str, metric: str) -> str | None:
    """"used" (a share that runs out at 100 %) or "left" (one that runs out
    at 0 %) for a share read against its physical bound when the window
    has no baseline; None for any other series."""
    rules = data()["bound"]
    for side in ("used", "left"):
        if f"{section}:{metric}" in rules[side]:
            return side
    return None


@lru_cache(maxsize=1)
def _signature_ids() -> frozenset:
    return frozenset(s["id"] for s in read_toml("signatures.toml").get("signature", []))


@lru_cache(maxsize=256)
def own_series(detector: str) -> tuple:
    """What a detector reads, as ``(section, metric, None)`` (any device):
    the sar series of its ``series`` in kb.toml and of its ``reads`` here, and the message kinds it
    counts, as log series of any program (its own id when a message
    definition has it, the kinds its burst names).  The kinds a detector
    class declares in its ``inputs`` are added by the analysis, which
    knows the detectors."""
    entry = kb_entry(detector)
    out = [(sec, met, None) for sec, met, _dev, _unit in entry.get("series", [])]
    out += [(*name.split(":", 1), None) for name in data()["reads"].get(detector, [])]
    kinds = set()
    if detector in _signature_ids():
        kinds.add(detector)
    burst = entry.get("burst") or {}
    for name in burst.get("inputs", []):
        what, _, kind = name.partition(":")
        if what == "events" and kind:
            kinds.add(kind)
    events = burst.get("events")
    kinds.update([events] if isinstance(events, str) else events or [])
    out += [(LOG_SECTION, kind, None) for kind in sorted(kinds)]
    return tuple(out)


def reads(detector: str, section: str, metric: str, device: str) -> bool:
    """Does ``detector`` read the series (so that its finding names its change)?"""
    return any(sec == section and met == metric and (dev is None or dev == device)
               for sec, met, dev in own_series(detector))

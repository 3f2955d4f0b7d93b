"""The knowledge base: what each signal means and what to do about it.

Data, not code: ``kb.toml`` holds one entry per detector (a plain explanation,
the kernel or nginx limit involved, what to check next, what fixed it in the
field) and the known causal chains used to tell causes from effects.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore


def read_toml(name: str) -> dict:
    """One of the knowledge files shipped in this package, parsed."""
    return tomllib.loads(resources.files(__name__).joinpath(name).read_text("utf-8"))


@lru_cache(maxsize=1)
def knowledge_base() -> dict:
    return read_toml("kb.toml")


def kb_entry(detector_id: str) -> dict:
    return knowledge_base().get("detector", {}).get(detector_id, {})


def began_unseen(finding) -> bool:
    """Is when a finding's anomaly began unknown, before what it was seen
    in?  Already there at the first sample of its records
    (``refs.began_before_records``), or a condition its own log line can
    only report once it already held (``held_before_line`` in kb.toml: a
    port another process had taken before the bind that failed)."""
    return bool((finding.refs or {}).get("began_before_records")
                or kb_entry(finding.detector).get("held_before_line"))


def burst_counters() -> dict:
    """{detector id: its ``[detector.ID.burst]`` table}: the detectors
    declared as data (see ``sarsleuth.detectors.counters``)."""
    return {det_id: entry["burst"] for det_id, entry in knowledge_base().get("detector", {}).items()
            if "burst" in entry}


def causal_chains() -> list[dict]:
    return knowledge_base().get("chain", [])


def recommendations_of(detector_id: str) -> list[dict]:
    """The detector's recommendations, each with the evidence it needs
    (see the head of ``kb.toml``)."""
    return list(kb_entry(detector_id).get("recommendation", []))


def categories() -> list[str]:
    """Incident categories, in the order the contract lists them."""
    return list(knowledge_base().get("category", {}))


def category_title(category: str) -> str:
    table = knowledge_base().get("category", {})
    return table.get(category, table.get("other", {})).get("title", category)


def impact_weights() -> dict:
    return dict(knowledge_base().get("impact", {}))


def unmarked_event_kinds() -> frozenset:
    return frozenset(knowledge_base().get("plot", {}).get("unmarked_event_kinds", []))


def programs(kind: str) -> frozenset:
    """Program names of a kind (``load_generators``, ``disk_movers``), as
    the attribution names a ps COMMAND's program."""
    return frozenset(knowledge_base().get("programs", {}).get(kind, []))

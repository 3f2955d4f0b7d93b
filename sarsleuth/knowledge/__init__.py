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


@lru_cache(maxsize=1)
def knowledge_base() -> dict:
    text = resources.files(__name__).joinpath("kb.toml").read_text("utf-8")
    return tomllib.loads(text)


def kb_entry(detector_id: str) -> dict:
    return knowledge_base().get("detector", {}).get(detector_id, {})


def causal_chains() -> list[dict]:
    return knowledge_base().get("chain", [])

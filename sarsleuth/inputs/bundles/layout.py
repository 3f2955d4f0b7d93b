"""Where things live in a bundle (``knowledge/bundle_layout.toml``): which
paths are inputs, which hold host facts, which copy of the same sar day is
the most faithful."""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore


@lru_cache(maxsize=1)
def layout() -> dict:
    text = resources.files("sarsleuth.knowledge").joinpath("bundle_layout.toml").read_text("utf-8")
    data = tomllib.loads(text)
    for entry in data["input"] + data["fact"]:
        entry["regex"] = re.compile(entry["pattern"])
    data["skip"]["regex"] = [re.compile(p) for p in data["skip"]["patterns"]]
    data["packed"]["regex"] = [re.compile(p) for p in data["packed"]["patterns"]]
    data["sosreport"]["collect_regex"] = re.compile(data["sosreport"]["collect_roots"])
    return data


def _tails(rel: str):
    parts = rel.split("/")
    for k in range(len(parts)):
        yield "/".join(parts[k:])


def match(rel: str, entries):
    """(entry, match) of the first entry whose pattern matches ``rel`` or
    one of its tails, else (None, None)."""
    for tail in _tails(rel):
        for entry in entries:
            m = entry["regex"].match(tail)
            if m:
                return entry, m
    return None, None


def input_of(rel: str):
    return match(rel, layout()["input"])


def fact_of(rel: str):
    return match(rel, layout()["fact"])


def packed(rel: str) -> bool:
    """Is ``rel`` where a sosreport's folder may be kept packed as an archive?"""
    return any(r.match(rel) for r in layout()["packed"]["regex"])


def skipped(rel: str) -> bool:
    return any(r.search(rel) for r in layout()["skip"]["regex"])


def is_sos_root(names) -> bool:
    """Do the entry names of a folder say it is a sosreport?"""
    return bool(set(layout()["sosreport"]["markers"]) & set(names))


def most_faithful(candidates: list) -> list:
    """``candidates``: (key, rel path, payload) of one bundle's inputs.
    Keeps, for each (copy_of, day), only the lowest-ranked copies; returns
    (kept payloads, [(dropped rel, kept rel)])."""
    best: dict = {}
    for key, rel, payload in candidates:
        entry, m = input_of(rel)
        if entry is None or "copy_of" not in entry:
            continue
        group = (key, entry["copy_of"], m.group("day")[-2:])
        if group not in best or entry["rank"] < best[group][0]:
            best[group] = (entry["rank"], rel)
    kept, dropped = [], []
    for key, rel, payload in candidates:
        entry, m = input_of(rel)
        if entry is not None and "copy_of" in entry:
            rank, winner = best[(key, entry["copy_of"], m.group("day")[-2:])]
            if entry["rank"] > rank:
                dropped.append((rel, winner))
                continue
        kept.append(payload)
    return kept, dropped

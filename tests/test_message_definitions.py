"""Every message definition proves itself: its sample lines (as the kernel,
nginx, systemd-oomd and earlyoom write them) classify as its kind and yield
the fields they state; its near misses classify as nothing of its kind."""
from __future__ import annotations

import pytest

from sarsleuth.knowledge.signatures import classify, definitions_text, fields_of

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

TABLE = tomllib.loads(definitions_text())["signature"]
SAMPLES = [(s["id"], sample["line"], sample.get("fields", {})) for s in TABLE for sample in s.get("sample", [])]
NEAR_MISSES = [(s["id"], line) for s in TABLE for line in s.get("near_misses", [])]


def test_every_definition_has_samples():
    assert [s["id"] for s in TABLE if not s.get("sample")] == []


@pytest.mark.parametrize("kind, line, fields", SAMPLES, ids=[f"{k}:{i}" for i, (k, _, _) in enumerate(SAMPLES)])
def test_sample_lines_classify_and_yield_their_fields(kind, line, fields):
    assert classify(line) == kind
    if fields:
        got = fields_of(kind, line)
        assert got is not None and {k: got.get(k) for k in fields} == fields


@pytest.mark.parametrize("kind, line", NEAR_MISSES, ids=[f"{k}:{i}" for i, (k, _) in enumerate(NEAR_MISSES)])
def test_near_misses_are_not_taken_for_the_kind(kind, line):
    assert classify(line) != kind

"""Shared fixtures: where the real-world corpus and the samples are."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def corpus_dir() -> Path | None:
    env = os.environ.get("SARSLEUTH_CORPUS")
    candidates = [Path(env)] if env else []
    candidates.append(ROOT.parent / "shared" / "corpus")
    for c in candidates:
        if c.is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def corpus() -> Path:
    path = corpus_dir()
    if path is None:
        pytest.skip("real-world corpus not found: set SARSLEUTH_CORPUS or place it at ../shared/corpus")
    return path


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES

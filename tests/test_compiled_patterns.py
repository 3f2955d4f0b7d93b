"""The Hyperscan database of the signature patterns, compiled once and
kept between runs: read back it finds the same lines, a damaged file is
compiled again, and an empty cache setting keeps nothing."""
from __future__ import annotations

import pytest

from sarsleuth.inputs.parsers.logs import compiled_patterns, engine

hyperscan = pytest.importorskip("hyperscan", reason="Hyperscan has no wheel for this platform (the RE2 engine runs)")

LOG = (b"Mar  3 10:00:01 db1 kernel: [ 8100.000001] ata1.00: error: { UNC }\n"
       b"Mar  3 10:00:02 db1 CRON[2101]: (root) CMD (true)\n"
       b"Mar  3 10:00:03 db1 systemd[1]: nginx.service: Start request repeated too quickly.\n")


def _finder():
    return engine.HyperscanFinder(tuple(engine.candidate_patterns()))


def test_a_compiled_database_is_kept_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("SARSLEUTH_CACHE_DIR", str(tmp_path))
    first = _finder().find(LOG)
    (kept,) = tmp_path.glob("hyperscan-*.db")
    calls = []
    monkeypatch.setattr(hyperscan, "Database", lambda *a, **k: calls.append(1))
    again = _finder()
    assert calls == [] and again.find(LOG) == first
    assert [LOG[s:e] for s, e, _ in first] == [LOG.split(b"\n")[0], LOG.split(b"\n")[2]]
    assert kept.stat().st_mode & 0o077 == 0


def test_a_damaged_database_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("SARSLEUTH_CACHE_DIR", str(tmp_path))
    want = _finder().find(LOG)
    (kept,) = tmp_path.glob("hyperscan-*.db")
    kept.write_bytes(kept.read_bytes()[:100])
    assert compiled_patterns.load(hyperscan, [p.encode() for p in engine.candidate_patterns()], []) is None
    assert _finder().find(LOG) == want
    assert len(kept.read_bytes()) > 100          # written again whole


def test_an_empty_cache_setting_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("SARSLEUTH_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compiled_patterns.cache_dir() is None
    _finder().find(LOG)
    assert list(tmp_path.rglob("*")) == []

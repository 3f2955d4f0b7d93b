"""A case carries its own configuration: thresholds checked, user signatures
that cannot shadow built-in ones or stall a scan, nothing shared between
two cases of one process."""
from __future__ import annotations

from pathlib import Path

import pytest

import sarsleuth
from sarsleuth.config import MAX_NESTING, load_config
from sarsleuth.errors import UsageError

SAMPLES = Path(__file__).resolve().parent.parent / "samples"

#: a site's own signature: interactive logins during an incident (sample 000
#: has two in its messages)
SITE_SIGNATURE = """
[[signature]]
id = "ops-login"
patterns = ['Accepted publickey for \\w+']
severity = "high"
explanation = "someone logged in by hand while it happened"
"""


def test_two_cases_in_one_process_do_not_share_signatures(tmp_path):
    cfg = tmp_path / "site.toml"
    cfg.write_text(SITE_SIGNATURE)
    with_cfg = sarsleuth.load(SAMPLES / "nginx-proxy-oom", config=cfg)
    mine = [f for f in with_cfg.findings if f.detector == "custom-signature"]
    assert mine and mine[0].refs["signature"] == "ops-login" and mine[0].severity == "high"
    assert (with_cfg.events["kind"] == "ops-login").sum() >= 1
    # the next case of the same process, without the config, knows nothing of it
    plain = sarsleuth.load(SAMPLES / "nginx-proxy-oom")
    assert not [f for f in plain.findings if f.detector == "custom-signature"]
    assert not (plain.events["kind"] == "ops-login").any()
    # built-in signatures decide first: the user's never changes their counts
    for kind in ("upstream-timeout", "page-allocation-failure", "nic-rx-alloc-failure"):
        assert (plain.events["kind"] == kind).sum() == (with_cfg.events["kind"] == kind).sum()


@pytest.mark.parametrize("value, word", [
    ("nan", "finite"), ("inf", "finite"), ("-inf", "finite"), ("-5.0", ">= 0"), ('"high"', "a number"),
    ("true", "a number"), ("150.0", "at most 100"),
])
def test_thresholds_must_be_finite_numbers_in_range(tmp_path, value, word):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[detectors.iowait-spike]\nabs_floor_pct = {value}\n")
    with pytest.raises(UsageError, match=word) as info:
        load_config(cfg)
    assert str(cfg) in str(info.value) and "abs_floor_pct" in str(info.value)


def test_deeply_nested_config_is_refused_without_recursion(tmp_path):
    cfg = tmp_path / "deep.toml"
    cfg.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(UsageError, match=f"nested more than {MAX_NESTING} levels"):
        load_config(cfg)


def test_a_normal_config_still_loads(tmp_path):
    cfg = tmp_path / "ok.toml"
    cfg.write_text('link_speed = "20G"\n[detectors.tcp-timewait]\ntcp_max_tw_buckets = 262144\n' + SITE_SIGNATURE)
    c = load_config(cfg)
    assert c.link_speed_bps == 20e9
    assert c.params == {"tcp-timewait": {"tcp_max_tw_buckets": 262144}}
    assert [s.id for s in c.signatures] == ["ops-login"]

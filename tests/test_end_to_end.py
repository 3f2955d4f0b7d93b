"""End to end on the four reconstructed field reports: the report's own
conclusion must rank first, with its decisive evidence inside."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import sarsleuth

from .conftest import SAMPLES, run_cli


def analyze_json(*paths) -> dict:
    proc = run_cli("analyze", *paths, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def proxy_oom():
    return analyze_json(SAMPLES / "nginx-proxy-oom")


def finding(incident, detector):
    hits = [f for f in incident["findings"] if f["detector"] == detector]
    assert hits, f"{detector} not in incident: {[f['detector'] for f in incident['findings']]}"
    return hits[0]


def test_proxy_oom_ranks_memory_exhaustion_first(proxy_oom):
    top = proxy_oom["incidents"][0]
    assert top["category"] == "memory-exhaustion"
    # available memory began to fall in the sample of 14:50:01 (51.24 % of RAM, 88.38 % at 14:40:01)
    assert top["start"] == "2014-05-06T14:50:01+08:00"
    detectors = {f["detector"] for f in top["findings"]}
    assert {"swap-climb", "iowait-spike", "page-allocation-failure", "nic-rx-alloc-failure"} <= detectors
    assert top["cause"] in ("swap-climb", "memory-pressure")


def test_proxy_oom_key_numbers(proxy_oom):
    top = proxy_oom["incidents"][0]
    swap = finding(top, "swap-climb")
    assert swap["metrics"]["peak_swpused_pct"] == pytest.approx(97.76, abs=0.005)
    assert swap["metrics"]["kbswpfree_at_peak"] == 187788
    assert "15:06:05" in swap["evidence"][0]["text"]
    io = finding(top, "iowait-spike")
    assert io["metrics"]["peak_iowait_pct"] == pytest.approx(64.94, abs=0.005)
    assert "15:05:03" in io["evidence"][0]["text"]
    assert io["start"][11:16] == "15:02" and io["end"][11:16] == "15:07"
    sge = finding(top, "nic-rx-alloc-failure")
    assert sge["metrics"]["failures"] == 7
    assert sge["start"][11:19] == "15:04:13"
    assert "em2" in sge["title"]
    paf = finding(top, "page-allocation-failure")
    assert paf["metrics"]["order"] == 0 and paf["metrics"]["atomic"] == 1   # JSON metrics are numbers
    assert paf["metrics"]["nic_receive_path"] == 1
    assert any(e["path"].endswith("messages") and e["line"] for e in paf["evidence"])
    # the narrative carries the numbers a reader needs
    assert "97.76" in top["summary"] and "64.94" in top["summary"]


def test_proxy_oom_sources_and_schema(proxy_oom):
    kinds = {s["kind"] for s in proxy_oom["sources"]}
    assert {"sar-text", "syslog", "nginx-error"} <= kinds
    for inc in proxy_oom["incidents"]:
        assert inc["severity"] in ("low", "medium", "high", "critical")
        assert 0 <= inc["score"] <= 1


def test_image_service_ranks_network_saturation_first():
    doc = analyze_json(SAMPLES / "image-service-ab")
    top = doc["incidents"][0]
    assert top["category"] == "network-saturation"
    link = finding(top, "loadtest-link-saturation")
    assert link["metrics"]["clients"] == 2
    assert link["metrics"]["transfer_rate_Bps"] == pytest.approx(1043909.08 * 1024)
    assert link["metrics"]["link_capacity_bps"] == pytest.approx(20e9, rel=0.02)
    tail = [f for f in doc["findings"] if f["detector"] == "loadtest-tail-latency"]
    assert any(f["metrics"]["p99_over_p50"] == pytest.approx(264 / 18, rel=1e-3) for f in tail)


def test_tengine_ranks_socket_exhaustion_first():
    doc = analyze_json(SAMPLES / "tengine-720k")
    top = doc["incidents"][0]
    assert top["category"] == "socket-exhaustion"
    detectors = {f["detector"] for f in top["findings"]}
    assert {"tcp-tw-bucket-overflow", "socket-memory", "tcp-timewait"} <= detectors
    tw = finding(top, "tcp-timewait")
    assert tw["metrics"]["peak_tcp_tw"] == 180000
    # the sample holds no sysctl: the limit is the kernel default, assumed, never said as the host's
    assert tw["metrics"]["assumed_tcp_max_tw_buckets"] == 180000 and "tcp_max_tw_buckets" not in tw["metrics"]
    assert "the kernel default, 180,000, assumed" in tw["title"]
    gap = [f for f in doc["findings"] if f["detector"] == "sar-gap"]
    assert gap and gap[0]["metrics"]["gap_seconds"] == 13


def test_worker_crash_ranks_first_with_count_and_pids():
    doc = analyze_json(SAMPLES / "nginx-worker-crash")
    top = doc["incidents"][0]
    assert top["category"] == "worker-crash"
    exits = finding(top, "worker-signal-exit")
    assert exits["metrics"]["exits"] == 6
    assert exits["metrics"]["core_dumped"] == 4
    assert exits["refs"]["pids"] == [16660, 24721, 1729, 22002, 16661, 16662]
    assert exits["refs"]["respawn_pids"] == [24721, 1729, 22002, 25447, 9492, 19344]
    assert exits["metrics"]["matched_kernel_segfaults"] == 6
    assert exits["start"].startswith("2012-12-24T16:39:56")
    gaps = [f for f in top["findings"] if f["detector"] == "worker-pid-gaps"]
    assert any(sorted(f["refs"]["pids"]) == [9492, 16663, 19344, 25447] for f in gaps)


def test_python_api_case():
    case = sarsleuth.load(SAMPLES / "nginx-proxy-oom", tz="Asia/Shanghai")
    swap = case.sar("swap")
    assert str(swap.index.tz) == "Asia/Shanghai"
    assert swap["%swpused"].max() == pytest.approx(97.76, abs=0.005)
    assert swap["%swpused"].idxmax().strftime("%H:%M:%S") == "15:06:05"
    assert list(case.metrics.columns[:6]) == ["timestamp", "host", "section", "device", "metric", "value"]
    ev = case.events
    assert ev.loc[ev["kind"] == "nic-rx-alloc-failure", "repeats"].tolist() == [7]   # seven lines of one second
    assert case.incidents[0].category == "memory-exhaustion"
    doc = case.to_json()
    assert doc["incidents"][0]["start"] == "2014-05-06T14:50:01+08:00"


@pytest.mark.parametrize("sample", ["nginx-proxy-oom", "image-service-ab", "tengine-720k", "nginx-worker-crash"])
def test_json_validates_against_shipped_schema(sample):
    import jsonschema
    from importlib import resources
    schema = json.loads(resources.files("sarsleuth.schema").joinpath("analysis.schema.json").read_text())
    doc = sarsleuth.load(SAMPLES / sample).to_json()
    jsonschema.validate(doc, schema)
    assert [i["rank"] for i in doc["incidents"]] == list(range(1, len(doc["incidents"]) + 1))


@pytest.mark.parametrize("sample", ["nginx-proxy-oom", "image-service-ab", "tengine-720k", "nginx-worker-crash"])
def test_field_reports_page_quotes_the_current_story(sample):
    """docs/field-reports.md sets each report's conclusion beside what
    sarsleuth says for its sample: it must quote today's output."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "field-reports.md").read_text("utf-8")
    section = doc.split(f"(`samples/{sample}`)", 1)[1].split("\n## ", 1)[0]
    top = sarsleuth.load(SAMPLES / sample).incidents[0]
    assert f"> {top.story['headline']}\n" in section
    assert f"> {top.recommendations[0]}\n" in section
    assert "report 00" not in top.summary.lower() and not any("report 00" in r.lower() for r in top.recommendations)

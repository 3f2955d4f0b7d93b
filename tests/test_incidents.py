"""From findings to a ranked incident story, on small bundles in formats the
samples do not use: journalctl short-iso with sysstat 12 text in another
zone, rsyslog RFC 3339 with sadf -d CSV, dmesg -T, a quiet day, ephemeral
port exhaustion.  Each must put the right incident first, with the decisive
evidence, the cause, the start time with its zone and the key numbers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import sarsleuth
from sarsleuth.model import SEVERITY_RANK

from .conftest import run_cli

BUNDLES = Path(__file__).resolve().parent / "bundles"


def cli(*args):
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    return proc


def analyze_json(*args) -> dict:
    return json.loads(cli("analyze", *args, "--format", "json").stdout)


def finding(incident, detector):
    hits = [f for f in incident["findings"] if f["detector"] == detector]
    assert hits, f"{detector} not in incident: {[f['detector'] for f in incident['findings']]}"
    return hits[0]


# --------------------------------------------------------------------- 1. OOM
@pytest.fixture(scope="module")
def oom():
    return analyze_json(BUNDLES / "oom-journal-paris", "--tz", "Europe/Paris")


def test_oom_bundle_sources_are_read_as_their_kinds(oom):
    kinds = {Path(s["path"]).name: s["kind"] for s in oom["sources"]}
    assert kinds == {"journal-short-iso.txt": "journal", "sar-u-r-S.txt": "sar-text", "nginx-error.log": "nginx-error"}
    assert oom["timezone"] == "Europe/Paris"


def test_oom_bundle_ranks_memory_exhaustion_first(oom):
    top = oom["incidents"][0]
    assert top["category"] == "memory-exhaustion" and top["severity"] == "critical"
    assert top["cause"] == "memory-pressure"
    assert top["start"] == "2024-02-13T14:14:01+01:00"      # the first sar sample with memory gone, Paris time
    assert top["end"] == "2024-02-13T14:21:07+01:00"        # the OOM kill
    assert "Europe/Paris, UTC+01:00" in top["summary"]
    assert [i["rank"] for i in oom["incidents"]] == list(range(1, len(oom["incidents"]) + 1))


def test_oom_bundle_key_numbers_and_evidence(oom):
    top = oom["incidents"][0]
    mem = finding(top, "memory-pressure")
    assert mem["metrics"]["min_avail_pct"] == pytest.approx(250_560 / 16_377_184 * 100, abs=0.01)
    swap = finding(top, "swap-climb")
    assert swap["metrics"]["peak_swpused_pct"] == pytest.approx(68.75, abs=0.005)
    paf = finding(top, "page-allocation-failure")
    assert paf["metrics"]["order"] == 0 and paf["metrics"]["atomic"] == 1 and paf["metrics"]["nic_receive_path"] == 1
    assert "GFP_ATOMIC" in paf["title"] and paf["start"] == "2024-02-13T14:19:52+01:00"
    assert paf["evidence"][0]["path"].endswith("journal-short-iso.txt") and paf["evidence"][0]["line"] == 7
    kill = finding(top, "oom-kill")
    assert kill["refs"]["pids"] == [2817] and kill["metrics"]["max_victim_rss_kb"] == 7841220 + 1024 + 2048
    assert kill["start"] == "2024-02-13T14:21:07+01:00"


def test_oom_kill_and_nginx_signal_9_are_one_event_in_one_incident(oom):
    top = oom["incidents"][0]
    kill, exit9 = finding(top, "oom-kill"), finding(top, "worker-signal-exit")
    assert kill["refs"]["nginx_exit_pids"] == [2817]
    assert "nginx-error.log:3" in kill["explanation"]
    assert exit9["refs"]["oom_killed_pids"] == [2817] and exit9["metrics"]["matched_oom_kills"] == 1
    assert "by the OOM killer" in exit9["title"] and "journal-short-iso.txt:47" in exit9["explanation"]
    assert "nginx workers killed 1 time(s) by the OOM killer" in top["summary"]
    # one incident holds both; nothing else claims a worker crash
    assert not [i for i in oom["incidents"] if i["category"] == "worker-crash"]
    # the killed worker counts once in the impact: one OOM kill, not a kill plus a crash
    assert top["score_components"]["impact"] == pytest.approx(0.5 + 0.2)


def test_oom_zone_from_the_log_when_no_tz_given():
    doc = analyze_json(BUNDLES / "oom-journal-paris")
    top = doc["incidents"][0]
    assert top["start"] == "2024-02-13T14:14:01+01:00"
    assert "(UTC+01:00)" in top["summary"]


# -------------------------------------------------------------- 2. connection flood
@pytest.fixture(scope="module")
def flood():
    return analyze_json(BUNDLES / "syn-flood-rsyslog")


def test_flood_ranks_socket_exhaustion_first(flood):
    kinds = sorted(s["kind"] for s in flood["sources"])
    assert kinds == ["sadf-csv", "syslog"]
    top = flood["incidents"][0]
    assert top["category"] == "socket-exhaustion" and top["cause"] == "syn-flood"
    # sadf -d prints UTC, rsyslog +01:00: one instant, shown in the host's own
    # zone (the offset the log recorded), not in UTC
    # the incident starts with its cause, the first SYN flood line; TIME_WAIT
    # already climbing at the 21:06:01 sample is context, not its effect
    assert top["start"] == "2024-03-14T21:06:12.004518+01:00"
    assert {"syn-flood", "tcp-timewait", "tcp-tw-bucket-overflow", "conntrack-full"} <= {f["detector"] for f in top["findings"]}
    roles = {f["detector"]: f["role"] for f in top["findings"]}
    assert roles["syn-flood"] == "cause" and roles["tcp-timewait"] == "context"
    assert roles["tcp-tw-bucket-overflow"] == "effect" and roles["conntrack-full"] == "effect"


def test_flood_key_numbers(flood):
    top = flood["incidents"][0]
    syn = finding(top, "syn-flood")
    assert "port 80, 443" in syn["title"] and syn["start"] == "2024-03-14T21:06:12.004518+01:00"
    tw = finding(top, "tcp-timewait")
    assert tw["metrics"]["peak_tcp_tw"] == 180000 and tw["severity"] == "high"
    assert tw["refs"]["peak_time"] == "2024-03-14T21:08:01+01:00"
    over = finding(top, "tcp-tw-bucket-overflow")
    assert over["metrics"]["lines"] == 3 + 1 + 1841 + 2210        # callbacks suppressed are counted
    ct = finding(top, "conntrack-full")
    assert ct["metrics"]["lines"] == 3 + 377
    assert ct["evidence"][0]["path"].endswith("kern.log") and ct["evidence"][0]["line"] == 9
    assert "kern.log:2" in top["summary"] and "peak at 21:08:01" in top["summary"]


def test_flood_in_the_operators_zone():
    top = analyze_json(BUNDLES / "syn-flood-rsyslog", "--tz", "Europe/Paris")["incidents"][0]
    assert top["start"] == "2024-03-14T21:06:12.004518+01:00"


def test_config_threshold_override_changes_the_verdict(tmp_path):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[detectors.tcp-timewait]\ntcp_max_tw_buckets = 262144\n")
    doc = analyze_json(BUNDLES / "syn-flood-rsyslog", "--config", cfg)
    tw = [f for f in doc["findings"] if f["detector"] == "tcp-timewait"][0]
    assert tw["metrics"]["tcp_max_tw_buckets"] == 262144
    assert tw["metrics"]["fraction_of_limit"] == pytest.approx(180000 / 262144, abs=1e-6)
    assert tw["severity"] == "medium" and "69 % of tcp_max_tw_buckets 262144" in tw["title"]


def test_config_unknown_threshold_is_a_usage_error(tmp_path):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text("[detectors.tcp-timewait]\nmax_buckets = 1\n")
    proc = run_cli("analyze", BUNDLES / "syn-flood-rsyslog", "--config", cfg)
    assert proc.returncode == 2 and "tcp_max_tw_buckets" in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- 3. worker crashes
@pytest.fixture(scope="module")
def crash():
    return analyze_json(BUNDLES / "worker-crash-dmesg-T")


def test_crash_ranks_worker_crash_first(crash):
    top = crash["incidents"][0]
    assert top["category"] == "worker-crash" and top["cause"] == "segfault"
    assert top["start"] == "2024-03-12T03:14:07"           # wall clock: no source carries a zone
    assert "host wall clock, zone unknown" in top["summary"]
    seg = finding(top, "segfault")
    assert seg["metrics"]["segfaults"] == 3 and "ngx_http_lua_module.so" in seg["title"]
    assert seg["refs"]["ips"] == ["00007f3c9a61b3f0"]
    assert seg["evidence"][0]["path"].endswith("dmesg-T.txt") and seg["evidence"][0]["line"] == 3


def test_crash_is_counted_once_across_kernel_and_nginx(crash):
    top = crash["incidents"][0]
    seg, exits = finding(top, "segfault"), finding(top, "worker-signal-exit")
    assert exits["metrics"]["exits"] == 3 and exits["metrics"]["core_dumped"] == 3
    assert exits["refs"]["pids"] == [31337, 31338, 40112]
    assert exits["refs"]["respawn_pids"] == [38804, 40112, 40977]
    assert seg["refs"]["nginx_exit_pids"] == [31337, 31338, 40112]
    assert "error.log:8, error.log:10, error.log:12" in seg["explanation"]
    assert "the same 3 process(es) as the cause, matched by PID" in top["summary"]
    assert top["score_components"]["impact"] == pytest.approx(0.3)       # 3 crashes, not 6
    gaps = [f for f in top["findings"] if f["detector"] == "worker-pid-gaps"]
    assert any(sorted(f["refs"]["pids"]) == [31336, 31339, 38804, 40977] for f in gaps)


# ---------------------------------------------------------------- 4. a quiet day
def test_quiet_day_has_no_incident_above_medium():
    case = sarsleuth.load(BUNDLES / "quiet-day")
    assert {s.kind for s in case.sources} == {"sar-text", "syslog"}
    assert len(case.metrics) > 143 * 10                      # the whole day was read
    assert all(SEVERITY_RANK[i.severity] <= SEVERITY_RANK["medium"] for i in case.incidents)
    assert case.incidents == [] and case.findings == []


def test_quiet_day_says_no_incident_found_in_every_format():
    doc = analyze_json(BUNDLES / "quiet-day")
    assert doc["incidents"] == [] and doc["summary"].startswith("No incident found in 2 source(s)")
    assert "swap-climb" in doc["checked"] and "oom-kill" in doc["checked"] and "swap-climb" in doc["summary"]
    md = cli("analyze", BUNDLES / "quiet-day", "--format", "markdown").stdout
    assert "No incident found in 2 source(s)" in md and "memory-pressure" in md
    text = cli("analyze", BUNDLES / "quiet-day").stdout
    assert "No incident found in 2 source(s)" in text and "Checked:" in text


def test_user_signature_from_config_turns_a_routine_line_into_a_finding(tmp_path):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('[[signature]]\nid = "slow-report"\npatterns = [\'WARN slow request GET /api/report took \\d+ ms\']\n'
                   'severity = "high"\nexplanation = "The report endpoint blocks the worker pool when it is slow."\n')
    doc = analyze_json(BUNDLES / "quiet-day", "--config", cfg)
    f = [x for x in doc["findings"] if x["detector"] == "custom-signature"]
    assert len(f) == 1 and f[0]["severity"] == "high" and f[0]["refs"]["signature"] == "slow-report"
    assert f[0]["explanation"] == "The report endpoint blocks the worker pool when it is slow."
    assert f[0]["start"] == "2024-04-23T14:52:19" and f[0]["evidence"][0]["line"] == 41
    top = doc["incidents"][0]
    assert "slow-report" in top["title"] and top["severity"] == "high"


# ------------------------------------------------------------ 5. ephemeral ports exhausted
def test_port_exhaustion_ranks_connection_limit_first():
    doc = analyze_json(BUNDLES / "port-exhaustion")
    top = doc["incidents"][0]
    assert top["category"] == "connection-limit" and top["cause"] == "port-exhaustion"
    assert top["start"] == "2024-05-21T09:33:02"
    pe = finding(top, "port-exhaustion")
    assert pe["metrics"]["lines"] == 24 and pe["metrics"]["destinations"] == 2
    assert pe["metrics"]["peak_tcp_tw"] == 28190
    assert "(99: Cannot assign requested address)" in pe["evidence"][0]["text"] and pe["evidence"][0]["line"] == 2
    assert "keepalive" in top["recommendations"][0] and "tcp_tw_reuse" in " ".join(top["recommendations"])
    assert "What to do first: Reuse upstream connections" in top["summary"]


# ---------------------------------------------------------------- ranking & honesty
def test_why_first_in_json_markdown_and_text():
    both = [BUNDLES / "oom-journal-paris", BUNDLES / "worker-crash-dmesg-T"]
    doc = analyze_json(*both, "--tz", "Europe/Paris")
    first, second = doc["incidents"][0], doc["incidents"][1]
    assert first["category"] == "memory-exhaustion" and second["category"] == "worker-crash"
    why = first["why_first"]
    assert why.startswith(f"Ranked first (score {first['score']:.2f} against {second['score']:.2f} for #2")
    assert "critical where #2 is high" in why
    assert second["why_first"] is None
    md = cli("analyze", *both, "--tz", "Europe/Paris", "--format", "markdown").stdout
    assert "*Ranked first \\(score" in md          # escaped, in italics
    text = cli("analyze", *both, "--tz", "Europe/Paris").stdout
    assert "Ranked first" in " ".join(text.split())


def test_unaligned_dmesg_is_said_to_be_unaligned(samples):
    top = sarsleuth.load(samples / "nginx-worker-crash").incidents[0]
    seg = [f for f in top.findings if f.detector == "segfault"][0]
    assert seg.aligned is False
    assert "without a time on the shared clock" in top.summary
    assert "dated by the same PIDs' exits in error.log" in top.summary

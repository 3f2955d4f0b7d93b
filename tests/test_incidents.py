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
from sarsleuth.analysis.narrative import prose

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
    # where available memory began to fall without coming back (kbavail 9875840 at 14:08:01, 6662775 at
    # 14:10:01), not the first sample with memory gone (14:14:01), Paris time
    assert top["start"] == "2024-02-13T14:10:01+01:00"
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
    assert top["start"] == "2024-02-13T14:10:01+01:00"
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
    assert tw["severity"] == "medium" and "69 % of tcp_max_tw_buckets 262,144, as the config file gives" in tw["title"]


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
    assert "in no incident" not in md and "in no incident" not in text


def test_a_quiet_case_still_says_what_it_found(corpus):
    """A real ab paste on its own: 200 of 5,000 requests failed (4 %) with a
    long tail, and nothing in the files says why, so there is no incident
    (a run most of which failed would be one); every output says what was
    found all the same, with the line it stands on."""
    paste = corpus / "loadtest" / "ab-keepalive-failed-length-huge-transfer.txt"
    ran = cli("analyze", paste)
    assert ran.returncode == 0
    flat = " ".join(ran.stdout.replace("│", " ").split())
    assert "No incident found in 1 source(s), but 2 finding(s) below." in flat
    # a finding on its own is no all-clear: the panel's title says it is there
    assert "no incident, 2 finding(s) on their own (worst: medium)" in flat and "all quiet" not in flat
    assert ("Found, in no incident (nothing in these files they follow from or lead to): - [medium] ab c=500 "
            in flat)
    # the terminal wraps a long path anywhere: read it without the breaks
    # 200 x 50 MiB missing from HTML transferred: those 200 came back empty
    assert (f"200failed:closedbeforeanyreply(abcountsthemas'Length'failures;theHTMLtransferredisthatoftheother"
            f"4,800)(4.0%of5000requests)(loadtest-errors;{paste}:30)") in "".join(flat.split())
    md = cli("analyze", paste, "--format", "markdown").stdout
    assert ("- \\[medium] ab c=500 `ab -n 5000 -c 500 -k http://192.168.1.186:80/large.html`: "
            "200 failed: closed before any reply (ab counts them as 'Length' failures; the HTML transferred is that "
            f"of the other 4,800) (4.0 % of 5000 requests) (loadtest-errors; {paste}:30)") in md
    page = cli("analyze", paste, "--format", "html").stdout
    assert "2 finding(s), under <a href=\"#timeline\">All findings</a>" in page


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
    assert "*Ranked first (score" in md          # in italics
    text = cli("analyze", *both, "--tz", "Europe/Paris").stdout
    assert "Ranked first" in " ".join(text.split())


def test_unaligned_dmesg_is_said_to_be_unaligned(samples):
    top = sarsleuth.load(samples / "nginx-worker-crash").incidents[0]
    seg = [f for f in top.findings if f.detector == "segfault"][0]
    assert seg.aligned is False
    assert "without a time on the shared clock" in top.summary
    assert "dated by the same PIDs' exits in error.log" in top.summary


# ------------------------------------------- kinds of incident the samples lack
# Written the way sysstat's sar and nginx write them: one-second samples as
# `sar -u -q -d 1` and `sar -n SOCK 1` print, error.log lines as nginx logs them.
def _sar_text(host, ncpu, sections, date="11/21/2026"):
    out = [f"Linux 6.1.0-13-amd64 ({host}) \t{date} \t_x86_64_\t({ncpu} CPU)", ""]
    for header, rows in sections:
        out.append(f"{rows[0][0]}  " + "".join(f"{h:>10}" for h in header))
        for clock, values in rows:
            out.append(f"{clock}  " + "".join(f"{v:>10}" for v in values))
        out.append("")
    return "\n".join(out) + "\n"


def _clock(second):
    return f"10:{second // 60:02d}:{second % 60:02d}"


def _recording(host, ncpu, seconds, busy, iowait, runq, blocked, util):
    """Per-second -u, -q and -d rows; ``busy(s)`` etc. give each second's value."""
    import math
    cpu, queue, disk, load = [], [], [], 0.05
    for s in range(seconds):
        load = load * math.exp(-1 / 60) + runq(s) * (1 - math.exp(-1 / 60))
        user, wait = busy(s), iowait(s)
        cpu.append((_clock(s), ["all", f"{user:.2f}", "0.00", "0.50", f"{wait:.2f}", "0.00",
                                f"{max(0.0, 100 - user - wait - 0.5):.2f}"]))
        queue.append((_clock(s), [runq(s), 210, f"{load:.2f}", f"{load / 2:.2f}", f"{load / 4:.2f}", blocked(s)]))
        disk.append((_clock(s), ["sda", "120.00", "0.00", "4800.00", "0.00", "40.00", "3.20", "26.67",
                                 f"{util(s):.2f}"]))
    return _sar_text(host, ncpu, [
        (["CPU", "%user", "%nice", "%system", "%iowait", "%steal", "%idle"], cpu),
        (["runq-sz", "plist-sz", "ldavg-1", "ldavg-5", "ldavg-15", "blocked"], queue),
        (["DEV", "tps", "rkB/s", "wkB/s", "dkB/s", "areq-sz", "aqu-sz", "await", "%util"], disk)])


def test_cpu_burst_is_cpu_saturation_from_the_burst_start(tmp_path):
    """%idle 0.3 for 60 s, run queue 7, no iowait: the CPUs, not the disk,
    from the first second of the burst; load's baseline from before it."""
    def burst(s):
        return 20 <= s < 80
    (tmp_path / "sar.txt").write_text(_recording(
        "calc-01", 2, 90, busy=lambda s: 99.2 if burst(s) else 4.0, iowait=lambda s: 0.0,
        runq=lambda s: 7 if burst(s) else 0, blocked=lambda s: 0, util=lambda s: 2.0))
    top = analyze_json(tmp_path)["incidents"][0]
    assert top["category"] == "cpu-saturation" and top["cause"] == "cpu-saturation"
    assert top["start"] == "2026-11-21T10:00:20"
    load = [f for f in top["findings"] if f["detector"] == "load-spike"]
    assert load and load[0]["role"] == "effect" and load[0]["metrics"]["baseline_ldavg_1"] < 0.1
    assert "Disk" not in top["title"] and "iowait" not in " ".join(f["detector"] for f in top["findings"])


def test_fsync_heavy_writes_raise_iowait_spike(tmp_path):
    """%iowait about 30 % for 60 s, 5 tasks in D state, disk 90 % busy, in a
    recording that is mostly the incident: measured against what came before."""
    def writing(s):
        return 20 <= s < 80
    (tmp_path / "sar.txt").write_text(_recording(
        "db-01", 4, 90, busy=lambda s: 8.0, iowait=lambda s: (28.0 + (s % 5)) if writing(s) else 0.8,
        runq=lambda s: 1, blocked=lambda s: 5 if writing(s) else 0,
        util=lambda s: 90.0 if writing(s) else 3.0))
    doc = analyze_json(tmp_path)
    spikes = [f for f in doc["findings"] if f["detector"] == "iowait-spike"]
    assert len(spikes) == 1 and spikes[0]["start"] == "2026-11-21T10:00:20"
    assert spikes[0]["metrics"]["baseline_iowait_pct"] == pytest.approx(0.8)
    assert spikes[0]["metrics"]["peak_iowait_pct"] == pytest.approx(32.0)
    top = doc["incidents"][0]
    # the disk itself is the cause; the CPUs' wait for it is its effect
    assert top["category"] == "io-saturation" and top["cause"] == "disk-saturation"
    roles = {f["detector"]: f["role"] for f in top["findings"]}
    assert roles["iowait-spike"] == "effect"


def test_iowait_from_the_first_sample_of_a_recording_is_still_a_spike(tmp_path):
    """A recording that starts inside the incident has nothing before it:
    the calm it settles into afterwards stands in for the baseline."""
    (tmp_path / "sar.txt").write_text(_recording(
        "db-02", 4, 100, busy=lambda s: 8.0, iowait=lambda s: 31.0 if s < 70 else 0.6,
        runq=lambda s: 1, blocked=lambda s: 0, util=lambda s: 90.0 if s < 70 else 3.0))
    spikes = [f for f in analyze_json(tmp_path)["findings"] if f["detector"] == "iowait-spike"]
    assert len(spikes) == 1 and spikes[0]["start"] == "2026-11-21T10:00:00"
    assert spikes[0]["end"] == "2026-11-21T10:01:09"


def _error_log(path, message, count, level="error"):
    lines = []
    for i in range(count):
        second = 20 + (i * 60) // count
        lines.append(f"2026/11/21 10:{second // 60:02d}:{second % 60:02d} [{level}] 2211#2211: *{9000 + i} {message}")
    path.write_text("\n".join(lines) + "\n")


def _timewait_far_from_limit(path):
    rows = [(_clock(s), [520, 400, 7, 0, 0, 90 if s < 20 else 2100]) for s in range(90)]
    path.write_text(_sar_text("proxy-01", 4, [(["totsck", "tcpsck", "udpsck", "rawsck", "ip-frag", "tcp-tw"], rows)]))


def test_upstream_timeouts_behind_a_slow_backend_are_upstream_failures(tmp_path):
    _error_log(tmp_path / "error.log", 'upstream timed out (110: Connection timed out) while reading response header '
               'from upstream, client: 10.12.0.20, server: api.example.com, request: "GET /v1/items HTTP/1.1", '
               'upstream: "http://10.20.0.11:8080/v1/items", host: "api.example.com"', 590)
    _timewait_far_from_limit(tmp_path / "sar-n-SOCK.txt")
    top = analyze_json(tmp_path)["incidents"][0]
    assert top["category"] == "upstream-failure" and top["cause"] == "upstream-timeout"
    assert "limit" not in top["title"].lower() and "limit reached" not in top["summary"].lower()
    assert all(f["role"] != "cause" for f in top["findings"] if f["detector"] == "tcp-timewait")
    assert "backend" in top["recommendations"][0]


def test_too_many_open_files_is_fd_exhaustion(tmp_path):
    _error_log(tmp_path / "error.log", "accept4() failed (24: Too many open files)", 122, level="crit")
    _timewait_far_from_limit(tmp_path / "sar-n-SOCK.txt")
    top = analyze_json(tmp_path)["incidents"][0]
    assert top["category"] == "fd-exhaustion" and top["cause"] == "too-many-open-files"
    assert top["start"] == "2026-11-21T10:00:20"
    assert "worker_rlimit_nofile" in top["recommendations"][0]


# ------------------------------------------------ invariants on every sample
SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CASES = sorted([p for p in SAMPLES.iterdir() if p.is_dir() and p.name not in ("record", "sysstat-versions")]
               + [p for p in BUNDLES.iterdir() if p.is_dir()])


@pytest.fixture(scope="module", params=CASES, ids=lambda p: p.name)
def every_case(request):
    return sarsleuth.load(request.param)


def _words(text):
    import re
    return set(re.findall(r"[a-z0-9_.]+", text.lower()))


def test_no_effect_starts_before_its_cause(every_case):
    """Roles follow each anomaly's onset: an effect's never comes before
    its cause's could have (a series may have crept over its threshold
    earlier; a sample covers the interval before its time)."""
    for inc in every_case.incidents:
        causes = [f for f in inc.findings if f.role == "cause" and f.detector == inc.cause]
        assert causes, inc.title
        cause = causes[0]
        if not (cause.aligned and cause.start is not None):
            continue
        for f in inc.findings:
            assert f.role in ("cause", "effect", "context")
            if f.role == "effect" and f.aligned and f.start is not None:
                # a cause seen in a sample may have begun in the interval before it
                assert f.onset >= cause.onset - cause.resolution, (inc.title, f.title)
        if inc.start is not None:
            assert cause.onset - cause.resolution <= inc.start <= cause.onset


def test_no_two_recommendations_say_the_same_thing(every_case):
    for inc in every_case.incidents:
        recs = inc.recommendations
        assert len(recs) <= 5
        assert not any("report 00" in r for r in recs)
        for i, a in enumerate(recs):
            for b in recs[i + 1:]:
                wa, wb = _words(a), _words(b)
                assert " ".join(sorted(wa)) != " ".join(sorted(wb))
                assert len(wa & wb) / len(wa | wb) < 0.6, (a, b)


def test_no_title_or_summary_claims_a_limit_far_from_reached(every_case):
    for inc in every_case.incidents:
        cause = next(f for f in inc.findings if f.role == "cause")
        fraction = cause.metrics.get("fraction_of_limit")
        assert fraction is None or fraction >= 0.5, inc.title
        for f in inc.findings:
            if (f.metrics.get("fraction_of_limit") or 1) < 0.5:
                said = prose(f.title)
                assert said not in inc.title and not inc.story["headline"].split(": ", 1)[-1].startswith(said)
                assert f"Cause: {said}" not in inc.summary


def test_no_incident_title_repeats_its_category(every_case):
    """The category phrase once, then what is specific: "Memory exhaustion
    on h: available memory down to 0.9 %", never "...: Memory exhausted: ..."
    (stems, any case), in the title and in the headline's cause."""
    import re

    from sarsleuth.knowledge import category_title
    from sarsleuth.analysis.narrative import category_stems
    from sarsleuth.render.formats.markdown import md_escape, render_markdown

    def times(phrase, text):
        words = re.findall(r"[A-Za-z0-9/]+", text.lower())
        stems = [w.removesuffix("s")[:5] if len(w) > 3 else w for w in words]
        return sum(stems[i:i + len(phrase)] == phrase for i in range(len(stems)))

    for inc in every_case.incidents:
        phrase = category_stems(inc.category)
        assert times(phrase, inc.title) == 1, inc.title
        assert inc.title.startswith(category_title(inc.category)), inc.title
        head = inc.story["headline"]
        assert times(phrase, head.split(", then ")[0]) == 1, head
    # every output tells the same title: JSON, markdown (escaped), the JSON "title"
    markdown = render_markdown(every_case, max_incidents=len(every_case.incidents))
    for inc, doc in zip(every_case.incidents, every_case.to_json()["incidents"]):
        assert doc["title"] == inc.title and f"## {inc.rank}. {md_escape(inc.title)}" in markdown


@pytest.mark.parametrize("category, title, told", [
    # titles as the detectors write them
    ("memory-exhaustion", "Memory exhausted: available memory down to 0.9 % of RAM with reclaim",
     "available memory down to 0.9 % of RAM with reclaim"),
    ("cpu-saturation", "CPUs saturated: 100.0 % busy", "100.0 % busy"),
    ("worker-crash", "nginx workers crashed 3 time(s): 3 x signal 11 (SIGSEGV), 3 core dumped",
     "3 x signal 11 (SIGSEGV) in nginx, 3 core dumped"),
    ("worker-crash", "nginx workers crashed 2 time(s): 1 x signal 6 (SIGABRT), 1 x signal 11 (SIGSEGV)",
     "1 x signal 6 (SIGABRT), 1 x signal 11 (SIGSEGV) in nginx"),
    ("memory-exhaustion", "nginx workers killed 2 time(s) by the OOM killer: 2 x signal 9 (SIGKILL)",
     "nginx workers killed 2 time(s) by the OOM killer: 2 x signal 9 (SIGKILL)"),
    ("cpu-saturation", "CPU lost up to 35.0 % to the hypervisor (%steal)",
     "CPU lost up to 35.0 % to the hypervisor (%steal)"),
    ("memory-exhaustion", "Memory exhausted", ""),
])
def test_a_title_says_what_its_category_does_not(category, title, told):
    from sarsleuth.analysis.narrative import after_category
    assert after_category(category, title) == told


def test_incident_titles_leave_the_command_line_to_the_finding():
    from sarsleuth.analysis.narrative import after_category
    title = "wrk c=400 `wrk -t4 -c400 -H 'Host: a: b' http://10.0.0.7/`: 1234 read errors"
    assert after_category("load-test-failure", title, commands=False) == "wrk c=400, 1234 read errors"
    assert after_category("load-test-failure", title) == title


def test_every_finding_of_an_incident_has_its_role_in_json(every_case):
    doc = every_case.to_json()
    for inc in doc["incidents"]:
        assert {f["role"] for f in inc["findings"]} <= {"cause", "effect", "context"}
        assert inc["story"]["headline"] and inc["story"]["timeline"]


def test_why_first_names_only_the_harm_the_evidence_shows(sample_case):
    case = sample_case("live-loopback")
    first = case.incidents[0]
    assert first.category == "connection-limit" and case.incidents[1].category == "worker-crash"
    assert "refused" in first.impact and "killed" not in first.impact
    assert "processes killed" not in first.why_first
    assert "requests refused" in first.why_first or "impact" not in first.score_components


def test_prose_has_thousands_separators_but_leaves_pids_and_commands_alone(sample_case):
    top = sample_case("tengine-720k").incidents[0]
    assert ("TIME_WAIT sockets climbed to 180,000 (100 % of tcp_max_tw_buckets: the kernel default, 180,000, "
            "assumed)") in top.story["headline"]
    assert "180,000" in top.title
    crash = sample_case("nginx-worker-crash").incidents[0]
    assert "new PIDs (24721, 1729, 22002, 25447, 9492, 19344)" in crash.story["headline"]
    assert prose("`ab -n 30000 -c 200 http://h:18631/`: 22562 failed") == "`ab -n 30000 -c 200 http://h:18631/`: 22,562 failed"

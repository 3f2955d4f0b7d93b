"""The whole real-world log corpus through the analysis: every signature
file yields its detector, routine logs and sysstat's own test files yield
nothing above low."""
from __future__ import annotations

import pytest

import sarsleuth
from sarsleuth.analysis.audit import audit
from sarsleuth.model import SEVERITY_RANK

#: file -> detectors that must fire on it (from what each file is known to hold,
#: see the corpus PROVENANCE).
EXPECTED = {
    "dmesg-T-oom-nginx-score-sacrifice-child.log": {"oom-kill"},
    "dmesg-T-pagealloc-nodemask-5.4-fedora.log": {"page-allocation-failure"},
    "dmesg-bonding-link-status-down-4.12.log": {"nic-link-down"},
    "dmesg-oom-nginx-4.9-debian.log": {"oom-kill"},
    "dmesg-oom-nginx-6.2-ubuntu.log": {"oom-kill"},
    "dmesg-oom-nginx-rhel6-2.6.32.log": {"oom-kill"},
    "dmesg-oom-sysrq-5.4-hotsos.log": {"oom-kill"},
    "dmesg-oops-rhel7-3.10-insights.log": {"kernel-oops"},
    "dmesg-pagealloc-colon-format-3.x-4.x-a.log": {"page-allocation-failure"},
    "dmesg-pagealloc-colon-format-3.x-4.x-b.log": {"page-allocation-failure"},
    "dmesg-pagealloc-colon-format-3.x-4.x-c.log": {"page-allocation-failure"},
    "dmesg-pagealloc-colon-format-3.x-4.x-d.log": {"page-allocation-failure"},
    "dmesg-pagealloc-colon-format-3.x-4.x-e.log": {"page-allocation-failure"},
    "dmesg-pagealloc-colon-format-3.x-4.x-f.log": {"page-allocation-failure"},
    "dmesg-pagealloc-gfp-atomic-6.8-xtensa.log": {"page-allocation-failure"},
    "dmesg-pagealloc-interleaved-cpus-4.9-debian.log": {"page-allocation-failure"},
    "dmesg-syn-flooding-request-sock-4.4.log": {"syn-flood"},
    "dmesg-tcp-orphans-mptcp-oom-5.4.log": {"socket-memory"},
    "dmesg-tcp-too-many-orphaned-ratelimit.log": {"socket-memory"},
    "kernel-tcp-timewait-overflow-openvz-ct0.log": {"tcp-tw-bucket-overflow"},
    "kernlog-hung-task-4.4-fanotify-hotsos.log": {"hung-task"},
    "kernlog-hung-task-5.15-hotsos.log": {"hung-task"},
    "kernlog-nf-conntrack-double-prefix-5.x-hotsos.log": {"conntrack-full"},
    "kernlog-nic-link-flap-ixgbe.log": {"nic-link-down"},
    "kernlog-oom-memcg-nginx-5.0-aws.log": {"oom-kill"},
    "messages-out-of-socket-memory-2.6.32.log": {"socket-memory"},
    "messages-pagealloc-dot-format-2.6-a.log": {"page-allocation-failure"},
    "messages-pagealloc-dot-format-2.6-b.log": {"page-allocation-failure"},
    "messages-pagealloc-dot-format-2.6-c.log": {"page-allocation-failure"},
    "messages-pagealloc-order0-rhel7-3.10.log": {"page-allocation-failure"},
    "messages-segfault-32bit-ratelimit-2.6.log": {"segfault"},
    "messages-segfault-comm-truncated-15chars.log": {"segfault"},
    "messages-segfault-ip-format-variants.log": {"segfault"},
    "messages-segfault-libapr-modsecurity.log": {"segfault"},
    "messages-segfault-missing-in-suffix.log": {"segfault"},
    "messages-segfault-rip-format-2.6-x86_64.log": {"segfault"},
    "messages-tcp-orphaned-raspbian-ratelimit.log": {"socket-memory"},
    "messages-tcp-timewait-overflow-ratelimit.log": {"tcp-tw-bucket-overflow"},
    "nginx-error-accept4-emfile-tcp-proxy.log": {"too-many-open-files"},
    "nginx-error-cache-manager-fatal-code2.log": {"worker-signal-exit"},
    "nginx-error-cache-manager-signal11-sigchld-from.log": {"worker-signal-exit"},
    "nginx-error-emfile-variants.log": {"too-many-open-files"},
    "nginx-error-signal11-core-dumped-respawn-openresty.log": {"worker-signal-exit", "worker-pid-gaps"},
    "nginx-error-signal11-no-core-rtmp.log": {"worker-signal-exit"},
    "nginx-error-signal9-docker-prefix.log": {"worker-signal-exit"},
    "nginx-error-ssl-session-cache-alert.log": {"nginx-shm-exhausted"},
    "nginx-error-too-many-open-files-docker-compose.log": {"too-many-open-files"},
    "nginx-error-upstream-timeouts.log": {"upstream-timeout"},
    "nginx-error-worker-connections-exceed-rlimit-warn.log": {"worker-connections-exhausted"},
    "nginx-error-worker-connections-not-enough.log": {"worker-connections-exhausted"},
    "pair-A-nginx-error-signal11-statsd-2.6.32.log": {"worker-signal-exit"},
    "pair-A-syslog-segfault-statsd-2.6.32.log": {"segfault"},
    "pair-B-dmesg-T-segfault-modsecurity-5.4.log": {"segfault"},
    "pair-B-nginx-error-signal11-modsecurity-5.4.log": {"worker-signal-exit"},
    "pair-C-nginx-error-signal11-burst-centos7.log": {"worker-signal-exit"},
    "pair-C-syslog-segfault-split-continuation-centos7.log": {"segfault"},
    "syslog-forwarded-nginx-worker-connections.log": {"worker-connections-exhausted"},
    "syslog-nic-link-down-igb-hires-timestamps.log": {"nic-link-down"},
    "syslog-openwrt-tcp-orphaned-kern-info.log": {"socket-memory"},
    "syslog-syn-flooding-variants.log": {"syn-flood"},
}

#: Routine logs: nothing above low may come out of them.
ROUTINE = [
    "dmesg-bnx2x-driver-prefix-format.log", "dmesg-e1000-link-up-boot.log", "dmesg-rhel6-no-timestamps-insights.log",
    "dmesg-ubuntu-5.4-hotsos-compute4.log", "kernlog-ubuntu-5.4-two-boots-hotsos-compute4.log",
    "messages-2.6.5-fedora-loghub-linux2k.log", "messages-meminfo-rsyslog-012-escapes.log",
    "messages-two-hosts-unordered-insights.log", "nginx-error-startup-notices-debug-rhel7.log",
    "syslog-dec-jan-rollover-lnav.log", "syslog-french-month-lnav.log", "syslog-multiline-continuation-lnav.log",
    "syslog-out-of-order-times-lnav.log", "clock-anchors-hotsos-compute4.txt", "httpd-error-2005-loghub-apache2k.log",
]


def test_every_corpus_log_is_listed(corpus):
    listed = set(EXPECTED) | set(ROUTINE)
    present = {p.name for p in (corpus / "logs").iterdir() if p.name != "PROVENANCE.md"}
    assert present == listed


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_signature_file_yields_its_detector(corpus, name):
    case = sarsleuth.load(corpus / "logs" / name)
    found = {f.detector for f in case.findings}
    assert EXPECTED[name] <= found, (name, found)
    if name in OPERATORS_ACTS:
        # a kill the operator forced (SysRq f): said, on the timeline, no incident
        assert [f.metrics.get("forced") for f in case.findings] == [1] and case.incidents == []
    else:
        assert case.incidents, "a signature file must give an incident"
    assert audit(case).lines() == []


#: signature files whose finding is an operator's act, not a failure
OPERATORS_ACTS = {"dmesg-oom-sysrq-5.4-hotsos.log"}


@pytest.mark.parametrize("name", ROUTINE)
def test_routine_logs_stay_quiet(corpus, name):
    case = sarsleuth.load(corpus / "logs" / name)
    loud = [(f.detector, f.severity) for f in case.findings if SEVERITY_RANK[f.severity] > SEVERITY_RANK["low"]]
    assert loud == []
    assert audit(case).lines() == []


def test_sysstat_test_files_stay_quiet(corpus):
    """sysstat's own test recordings are idle machines: no finding above low."""
    binaries = sorted(p for p in (corpus / "sysstat" / "binary").iterdir() if p.name.startswith("data-"))
    checked = 0
    for path in binaries:
        case = sarsleuth.load(path)
        if not case.sources:
            continue   # the deliberately corrupted files are refused (tested with the sa reader)
        checked += 1
        loud = [(f.detector, f.severity) for f in case.findings if SEVERITY_RANK[f.severity] > SEVERITY_RANK["low"]]
        assert loud == [], path.name
        assert audit(case).lines() == [], path.name
    assert checked >= 10


def _other_corpus_files():
    from .conftest import corpus_dir
    root = corpus_dir()
    if root is None:
        return []
    subs = ("sar-text", "sysstat/sadf-d", "sysstat/capture-xml", "sysstat/expected", "sysstat/binary", "loadtest")
    return sorted(str(p.relative_to(root)) for sub in subs for p in (root / sub).rglob("*")
                  if p.is_file() and p.suffix not in (".md", ".json")
                  and not (sub == "sysstat/binary" and p.name.startswith("data-")))    # audited above


@pytest.mark.parametrize("name", _other_corpus_files())
def test_every_corpus_file_s_story_agrees_with_its_data(corpus, name):
    """Real sar text of many hosts and versions, sysstat's own expected
    outputs, sa files of sysstat 6.1 to 11.2 from PCP's tests, sadf -d and
    -x, load-test reports: every figure their stories state is what their
    data give."""
    case = sarsleuth.load(corpus / name)
    assert audit(case).lines() == [], name

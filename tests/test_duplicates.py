"""The same event read through two files counts once; lines repeated within
one file are real repeats and all count."""
from __future__ import annotations

from pathlib import Path

import sarsleuth

SAMPLES = Path(__file__).resolve().parent.parent / "samples"

SEGFAULTS = [
    "Mar 12 03:14:07 web7 kernel: [86012.114512] nginx[16660]: segfault at 0 ip 00007f3a2c1e4b5a sp "
    "00007ffd3a9c1e80 error 4 in ngx_http_lua_module.so[7f3a2c1a0000+9b000]",
    "Mar 12 03:14:07 web7 kernel: [86012.114512] nginx[16660]: segfault at 0 ip 00007f3a2c1e4b5a sp "
    "00007ffd3a9c1e80 error 4 in ngx_http_lua_module.so[7f3a2c1a0000+9b000]",
    "Mar 12 03:15:41 web7 kernel: [86106.552301] nginx[24721]: segfault at 18 ip 00007f3a2c1e4c01 sp "
    "00007ffd3a9c1d10 error 4 in ngx_http_lua_module.so[7f3a2c1a0000+9b000]",
]


def _segfault_events(case):
    return case.events[case.events["kind"] == "segfault"]


def test_syslog_and_kern_log_of_one_host_count_each_line_once(tmp_path):
    # Debian writes kernel lines to both syslog and kern.log
    (tmp_path / "kern.log").write_text("\n".join(SEGFAULTS) + "\n")
    (tmp_path / "syslog").write_text(
        "Mar 12 03:10:01 web7 CRON[3011]: (root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)\n"
        + "\n".join(SEGFAULTS) + "\n"
        "Mar 12 03:17:01 web7 CRON[3140]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)\n")
    case = sarsleuth.load(tmp_path, year=2024)
    seg = _segfault_events(case)
    # the line the kernel printed twice is counted twice; the copies in the other file are not
    assert seg["repeats"].tolist() == [2, 1]
    assert case.merged["events"] == 3
    assert any("3 log event(s) appeared in more than one file" in n for n in case.notes)


def test_the_same_file_given_twice_counts_once(tmp_path):
    one = sarsleuth.load(SAMPLES / "nginx-worker-crash")
    twice = sarsleuth.load(SAMPLES / "nginx-worker-crash", SAMPLES / "nginx-worker-crash" / "error.log",
                           SAMPLES / "nginx-worker-crash" / "dmesg")
    assert len(twice.sources) == len(one.sources)
    assert sum("read once" in n for n in twice.notes) == 2
    assert len(twice.events) == len(one.events)
    assert [(f.detector, f.title) for f in twice.findings] == [(f.detector, f.title) for f in one.findings]


def test_an_overlapping_excerpt_adds_nothing(tmp_path):
    one = sarsleuth.load(SAMPLES / "nginx-worker-crash")
    lines = (SAMPLES / "nginx-worker-crash" / "error.log").read_text().splitlines(keepends=True)
    (tmp_path / "error-excerpt.log").write_text("".join(lines[len(lines) // 3: 2 * len(lines) // 3]))
    both = sarsleuth.load(SAMPLES / "nginx-worker-crash", tmp_path / "error-excerpt.log")
    assert len(both.events) == len(one.events) and both.merged["events"] > 0
    assert [(f.detector, f.title) for f in both.findings] == [(f.detector, f.title) for f in one.findings]


def test_an_oom_kill_in_dmesg_t_and_the_syslog_is_one_report(tmp_path):
    """``dmesg -T`` prints no uptime, only its wall time (boot time plus
    the uptime, a second off the syslog's at times): the kernel's one line
    read from both files is still one kill report, "killed 2 process(es)",
    not "reported 4 times"."""
    kills = [("18:40:00", "18:40:00", "35754.042262", 25432, "392064"),
             ("18:40:16", "18:40:17", "35770.460252", 25440, "392100")]
    line = ("Memory cgroup out of memory: Killed process {pid} (tail) total-vm:394980kB, anon-rss:{rss}kB, "
            "file-rss:1680kB, shmem-rss:0kB, UID:0 pgtables:824kB oom_score_adj:0")
    (tmp_path / "dmesg.txt").write_text("".join(f"[Tue Nov 24 {t} 2026] {line.format(pid=pid, rss=rss)}\n"
                                                for t, _, _, pid, rss in kills))
    (tmp_path / "messages").write_text("".join(f"Nov 24 {t} jobs-lab-02 kernel: [{up}] {line.format(pid=pid, rss=rss)}\n"
                                               for _, t, up, pid, rss in kills))
    case = sarsleuth.load(tmp_path, year=2026)
    [f] = [f for f in case.findings if f.detector == "oom-kill"]
    assert f.title == "OOM killer killed 2 process(es) in a memory cgroup: tail (largest rss 384.6 MiB)"
    assert f.metrics["kill_reports"] == 2 and f.metrics["victims"] == 2
    assert case.merged["events"] == 2


def test_a_dmesg_copy_of_syslog_lines_is_identified_by_its_uptime_stamp(tmp_path):
    (tmp_path / "kern.log").write_text("\n".join(SEGFAULTS[1:]) + "\n")
    # dmesg as saved by sos: uptime stamps only; its wall time is only aligned (about a second off)
    (tmp_path / "dmesg").write_text("\n".join("[" + line.split("[", 1)[1].split("] ", 1)[0] + "] "
                                              + line.split("] ", 1)[1] for line in SEGFAULTS[1:]) + "\n")
    case = sarsleuth.load(tmp_path, year=2024)
    assert len(_segfault_events(case)) == 2
    assert case.merged["events"] == 2

"""OOM kills of every kernel generation and of the user-space killers, read
from the log to the finding through one definition of each message."""
from __future__ import annotations

import sarsleuth

#: RHEL 5 (2.6.18): the invocation, its report, then the kill with the UID;
#: a second invocation later whose kill is not in the file (the log ends).
RHEL5 = """\
Apr 15 10:22:10 db1 kernel: java invoked oom-killer: gfp_mask=0x201d2, order=0, oomkilladj=0
Apr 15 10:22:10 db1 kernel:
Apr 15 10:22:10 db1 kernel: Call Trace:
Apr 15 10:22:10 db1 kernel:  [<ffffffff800c9ba5>] out_of_memory+0x8e/0x2f3
Apr 15 10:22:10 db1 kernel:  [<ffffffff8000f67e>] __alloc_pages+0x27f/0x308
Apr 15 10:22:10 db1 kernel: Mem-info:
Apr 15 10:22:11 db1 kernel: Free pages:       41828kB (0kB HighMem)
Apr 15 10:22:11 db1 kernel: Out of memory: Killed process 4321, UID 0, (java).
Apr 15 10:25:40 db1 kernel: httpd invoked oom-killer: gfp_mask=0x201d2, order=0, oomkilladj=0
Apr 15 10:25:40 db1 kernel:
Apr 15 10:25:40 db1 kernel: Call Trace:
Apr 15 10:25:40 db1 kernel:  [<ffffffff800c9ba5>] out_of_memory+0x8e/0x2f3
"""

#: 2.6.24-2.6.35: the choice in lower case, then the kill of a child.
KERNEL_2_6_2X = """\
Jun  2 03:11:07 web2 kernel: Out of memory: kill process 2210 (httpd) score 1960305 or a child
Jun  2 03:11:07 web2 kernel: Killed process 2214 (httpd)
"""

#: earlyoom in the journal (``sending SIGTERM``), then the process gone.
EARLYOOM = """\
Apr 15 10:22:13 web1 earlyoom[812]: mem avail:   112 of 15873 MiB ( 0.71%), swap free:    0 of 2047 MiB ( 0.00%)
Apr 15 10:22:13 web1 earlyoom[812]: low memory! at or below SIGTERM limits: mem 10.00%, swap 10.00%
Apr 15 10:22:13 web1 earlyoom[812]: sending SIGTERM to process 4412 uid 1000 "java": badness 912, VmRSS 14020 MiB, cmdline "/usr/bin/java -Xmx14g -jar app.jar"
Apr 15 10:22:14 web1 earlyoom[812]: process exited after 0.4 seconds
"""

#: systemd-oomd through rsyslog (imjournal escapes the dump's newlines and
#: tabs as #012 and #011): the candidates it chose from, the kill, then
#: systemd's line for the unit.
OOMD = """\
Nov 24 14:13:19 app-lab-04 systemd-oomd[612]: Considered 2 cgroups for killing, top candidates were:#012#011Path: /system.slice/report-cache.service#012#011#011Memory Pressure Limit: 50.00%#012#011#011Pressure: Avg10: 62.14, Avg60: 40.10, Avg300: 12.00, Total: 18s#012#011#011Current Memory Usage: 1.2G#012#011#011Memory Min: 0B#012#011#011Pgscan: 393211
Nov 24 14:13:19 app-lab-04 systemd-oomd[612]: Killed /system.slice/report-cache.service due to memory pressure for /system.slice being 62.14% > 50.00% for > 20s with reclaim activity
Nov 24 14:13:19 app-lab-04 systemd[1]: report-cache.service: systemd-oomd killed 3 process(es) in this unit.
Nov 24 14:13:19 app-lab-04 systemd[1]: report-cache.service: Failed with result 'oom-kill'.
"""

#: The kill line that says no more than the cgroup (the reason was in the
#: candidates before it), and a later kill of another unit.
OOMD_BARE = """\
Nov 24 15:00:02 app-lab-04 systemd-oomd[612]: Considered 1 cgroups for killing, top candidates were:#012#011Path: /system.slice/batch.service#012#011#011Swap Usage: 3.9G
Nov 24 15:00:02 app-lab-04 systemd-oomd[612]: Killed /system.slice/batch.service
"""


def _findings(tmp_path, name, text, detector):
    path = tmp_path / name
    path.write_text(text)
    case = sarsleuth.load(path)
    return [f for f in case.findings if f.detector == detector]


def test_rhel5_kill_with_uid_is_a_finding_and_the_second_invocation_is_reported(tmp_path):
    found = _findings(tmp_path, "messages", RHEL5, "oom-kill")
    kills = [f for f in found if f.refs.get("pids")]
    assert len(kills) == 1 and kills[0].refs["pids"] == [4321] and "java" in kills[0].title
    assert [(e.line, "Killed process 4321" in e.text) for e in kills[0].evidence][:1] == [(8, True)]
    lost = [f for f in found if "victim not in the log" in f.title]
    assert len(lost) == 1 and "httpd" in lost[0].title and lost[0].metrics["invocations"] == 1
    assert [e.line for e in lost[0].evidence] == [9]


def test_lower_case_choice_of_2_6_2x_kernels(tmp_path):
    kills = _findings(tmp_path, "messages", KERNEL_2_6_2X, "oom-kill")
    assert len(kills) == 1 and kills[0].refs["pids"] == [2214]


def test_earlyoom_kill_is_an_oom_finding(tmp_path):
    kills = _findings(tmp_path, "syslog", EARLYOOM, "oom-kill")
    assert len(kills) == 1 and kills[0].refs["pids"] == [4412] and "java" in kills[0].title
    assert [e.line for e in kills[0].evidence] == [3]


def test_systemd_oomd_kill_names_the_unit_its_reason_and_its_memory(tmp_path):
    kills = _findings(tmp_path, "messages", OOMD, "oom-kill")
    assert len(kills) == 1 and kills[0].metrics["victims"] == 1      # oomd's line and systemd's: one kill
    assert kills[0].title == ("systemd-oomd killed 1 unit(s): report-cache.service "
                              "(memory pressure 62.14% > 50.00%; report-cache.service used 1.2G)")
    assert kills[0].explanation.startswith("systemd-oomd killed the unit's whole cgroup before the kernel ran out")


def test_systemd_oomd_kill_without_a_reason_on_its_line(tmp_path):
    kills = _findings(tmp_path, "messages", OOMD_BARE, "oom-kill")
    assert len(kills) == 1 and kills[0].title == "systemd-oomd killed 1 unit(s): batch.service"
    assert kills[0].evidence[0].text.endswith("Killed /system.slice/batch.service")


def test_every_invocation_with_its_kill_gives_no_missing_victim(tmp_path):
    text = RHEL5 + ("Apr 15 10:25:41 db1 kernel: Free pages:       40112kB (0kB HighMem)\n"
                    "Apr 15 10:25:41 db1 kernel: Out of memory: Killed process 4400, UID 48, (httpd).\n")
    found = _findings(tmp_path, "messages", text, "oom-kill")
    assert [f for f in found if "victim not in the log" in f.title] == []
    assert sorted(found[0].refs["pids"]) == [4321, 4400]


def test_hung_task_of_a_6x_kernel_with_its_task_line(tmp_path):
    text = ("Mar  3 04:10:01 db1 kernel: INFO: task postgres:4400 blocked for more than 122 seconds.\n"
            "Mar  3 04:10:01 db1 kernel:       Not tainted 6.1.0-18-amd64 #1 Debian 6.1.76-1\n"
            'Mar  3 04:10:01 db1 kernel: "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.\n'
            "Mar  3 04:10:01 db1 kernel: task:postgres        state:D stack:0     pid:4400  ppid:4380   flags:0x00000002\n"
            "Mar  3 04:10:01 db1 kernel: Call Trace:\n"
            "Mar  3 04:10:01 db1 kernel:  <TASK>\n"
            "Mar  3 04:10:01 db1 kernel:  __schedule+0x34d/0x9e0\n")
    found = _findings(tmp_path, "kern.log", text, "hung-task")
    assert len(found) == 1 and found[0].metrics == {"reports": 1, "blocked_seconds": 122, "lock_holders": 0}
    assert "postgres" in found[0].title and found[0].evidence[0].line == 1


def test_evidence_is_the_kill_line_verbatim(corpus):
    """A 5.4 kill is one event from its constraint line (206) to its
    ``Killed process`` line (207): the evidence cites and quotes line 207 as
    the file has it, cut with an ellipsis past 240 characters."""
    path = corpus / "logs" / "dmesg-oom-sysrq-5.4-hotsos.log"
    kills = [f for f in sarsleuth.load(path).findings if f.detector == "oom-kill"]
    assert len(kills) == 1 and kills[0].refs["pids"] == [955]
    line = path.read_text().splitlines()[206]
    evidence = kills[0].evidence[0]
    assert (evidence.line, evidence.text) == (207, line if len(line) <= 240 else line[:239] + "…")
    assert evidence.text.startswith("[27742.909353] Out of memory: Killed process 955 (gnome-shell)")


def test_evidence_of_a_compressed_log_is_quoted_too(tmp_path):
    import gzip
    path = tmp_path / "messages.1.gz"
    path.write_bytes(gzip.compress(KERNEL_2_6_2X.encode()))
    kills = [f for f in sarsleuth.load(path).findings if f.detector == "oom-kill"]
    assert [(e.line, e.text) for e in kills[0].evidence][-1] == (2, KERNEL_2_6_2X.splitlines()[1])


def test_rss_is_given_in_the_unit_the_kernel_means(tmp_path):
    """The kernel's kB are KiB: 64 kB of file-rss is 64 KiB, not '0 MB'."""
    text = ("Nov 24 14:13:19 app1 kernel: [ 1752.821348] Memory cgroup out of memory: Killed process 811 (sleep) "
            "total-vm:2200kB, anon-rss:0kB, file-rss:64kB, shmem-rss:0kB, UID:0 pgtables:44kB oom_score_adj:0\n"
            "Nov 24 14:13:25 app1 kernel: [ 1758.100000] Memory cgroup out of memory: Killed process 6042 "
            "(report-cache) total-vm:427816kB, anon-rss:408320kB, file-rss:6688kB, shmem-rss:0kB, UID:0\n")
    kills = _findings(tmp_path, "messages", text, "oom-kill")
    assert kills[0].title.endswith("(largest rss 405.3 MiB)") and kills[0].metrics["max_victim_rss_kb"] == 415008
    one = _findings(tmp_path, "kern.log", text.splitlines()[0] + "\n", "oom-kill")
    assert one[0].title.endswith("sleep (largest rss 64 KiB)")


def test_an_oom_kill_whose_process_name_overflows_the_line_cap_is_analysed_as_parsed(tmp_path):
    """A process name of 20,000 characters: the line is cut when decoded
    (a warning says so), keeping its head and its end, so ``analyze`` counts
    the kill ``parse`` lists (it said all quiet), and the next kill is not
    taken for part of the cut one."""
    import json

    from sarsleuth.inputs.parsers.logs.lines import KEPT_TAIL, MAX_DECODED_CHARS

    from .conftest import run_cli
    name = "A" * 20_000
    kill = ("May  6 15:04:{s:02d} web1 kernel: Out of memory: Killed process {pid} ({name}) total-vm:1021908kB, "
            "anon-rss:{rss}kB, file-rss:4096kB, shmem-rss:0kB\n")
    first = kill.format(s=11, pid=4242, name=name, rss=524288)
    log = tmp_path / "messages"
    log.write_text(first + kill.format(s=12, pid=4243, name="nginx", rss=262144))
    warning = f"{log}: 1 line(s) longer than {MAX_DECODED_CHARS} characters were cut when decoded"
    parsed = run_cli("parse", log, "--year", "2014", "--format", "json")
    rows = [json.loads(line) for line in parsed.stdout.splitlines()]
    assert [(r["line"], r["pid"], r["timestamp"]) for r in rows] == [(1, 4242, "2014-05-06T15:04:11"),
                                                                      (2, 4243, "2014-05-06T15:04:12")]
    line = first.rstrip("\n")
    before, after = line.index("(") + 1, len(line) - line.index(")")
    assert rows[0]["process"] == ("A" * (MAX_DECODED_CHARS - KEPT_TAIL - before)
                                  + f"[\u2026{len(line) - MAX_DECODED_CHARS} bytes cut\u2026]" + "A" * (KEPT_TAIL - after))
    assert f"sarsleuth: warning: {warning}\n" in parsed.stderr
    ran = run_cli("analyze", log, "--year", "2014", "--format", "json")
    doc = json.loads(ran.stdout)
    [oom] = [f for f in doc["findings"] if f["detector"] == "oom-kill"]
    assert (oom["metrics"]["victims"], oom["metrics"]["max_victim_rss_kb"]) == (2, 524288 + 4096)   # anon + file
    assert warning in doc["warnings"]


def test_a_choice_whose_kill_line_is_missing_is_said_so(tmp_path):
    lines = []
    for pid in (7301, 7302):
        lines += [f"Mar  3 11:20:0{pid % 10} build3 kernel: Memory cgroup out of memory: Kill process {pid} (cc1plus) "
                  "score 912 or sacrifice child",
                  f"Mar  3 11:20:0{pid % 10} build3 kernel: Killed process {pid} (cc1plus), UID 1000, "
                  "total-vm:2891232kB, anon-rss:1802244kB, file-rss:12876kB, shmem-rss:0kB"]
    lines.append("Mar  3 11:20:05 build3 kernel: Memory cgroup out of memory: Kill process 7309 (cc1plus) score 911 "
                  "or sacrifice child")          # the file ends here: its kill line is not in it
    (kill,) = _findings(tmp_path, "messages", "\n".join(lines) + "\n", "oom-kill")
    assert kill.metrics["victims"] == 3 and kill.metrics["victims_chosen_only"] == 1
    assert "killed 3 process(es)" in kill.title and "(1 of them chosen, its kill line not in the file)" in kill.title
    # near miss: every choice followed by its kill
    (whole,) = _findings(tmp_path, "messages2", "\n".join(lines[:4]) + "\n", "oom-kill")
    assert whole.metrics["victims_chosen_only"] == 0 and "chosen" not in whole.title


def test_an_oom_kill_forced_by_sysrq_is_no_memory_exhaustion(tmp_path):
    lines = ["[91234.501122] sysrq: Manual OOM execution",
             "[91234.501340] kworker/1:2 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=-1, oom_score_adj=0",
             "[91234.501347] CPU: 1 PID: 30211 Comm: kworker/1:2 Not tainted 5.15.0-91-generic #101-Ubuntu",
             "[91234.501360] Workqueue: events moom_callback",
             "[91234.501690] Mem-Info:",
             "[91234.501702] active_anon:120311 inactive_anon:3301 isolated_anon:0 free:412883 free_pcp:812",
             "[91234.502311] Out of memory: Killed process 2210 (java) total-vm:4120312kB, anon-rss:1210044kB, "
             "file-rss:0kB, shmem-rss:0kB, UID:1001 pgtables:3120kB oom_score_adj:0"]
    (kill,) = _findings(tmp_path, "dmesg", "\n".join(lines) + "\n", "oom-kill")
    assert kill.metrics["forced"] == 1 and kill.severity == "medium"
    assert kill.title.startswith("OOM killer forced by hand (SysRq f: order=-1): killed 1 process(es): java")
    assert sarsleuth.load(tmp_path / "dmesg").incidents == []
    # near miss: the same report invoked by a page fault (order=0) is memory running out
    (real,) = _findings(tmp_path, "dmesg2", "\n".join(lines).replace("order=-1", "order=0") + "\n", "oom-kill")
    assert "forced" not in real.metrics and real.severity == "critical"


def test_a_sacrificed_child_names_the_process_the_kernel_chose(tmp_path):
    """2.6.32-4.x (mm/oom_kill.c oom_kill_process): the kernel chose the
    broker, then killed a child of it whose memory differs; the paste goes
    on into the next report, whose kill it does not hold."""
    text = "\n".join([
        "[28364]     0 28364    26516       46   0       0             0 sh",
        "Out of memory: Kill process 16929 (beam.smp) score 580 or sacrifice child",
        "Killed process 28364, UID 0, (sh) total-vm:106064kB, anon-rss:180kB, file-rss:4kB",
        "rsyslogd invoked oom-killer: gfp_mask=0x201da, order=0, oom_adj=0, oom_score_adj=0",
        "rsyslogd cpuset=/ mems_allowed=0",
        "Pid: 1205, comm: rsyslogd Not tainted 2.6.32-431.11.15.el6.x86_64 #1",
    ]) + "\n"
    (kill,) = _findings(tmp_path, "messages", text, "oom-kill")
    assert kill.title == ("OOM killer killed 1 process(es): sh, sacrificed for its parent beam.smp (PID 16929, score 580) "
                          "(largest rss 184 KiB); invoked again 1 time(s) by rsyslogd, the kill not in the file")
    assert kill.refs["victim"] == "beam.smp" and kill.refs["chosen_pids"] == [16929] and kill.refs["pids"] == [28364]
    assert kill.metrics["children_sacrificed"] == 1 and kill.metrics["invocations_unpaired"] == 1
    case = sarsleuth.load(tmp_path / "messages")
    assert len(case.incidents) == 1
    assert any(r.startswith("Size beam.smp's memory") for r in case.incidents[0].recommendations)
    # near miss: the chosen process killed itself is no sacrifice
    own = text.replace("Killed process 28364, UID 0, (sh)", "Killed process 16929, UID 0, (beam.smp)")
    (kill,) = _findings(tmp_path, "messages2", own, "oom-kill")
    assert "sacrificed" not in kill.title and kill.refs["victim"] == "beam.smp" and "chosen_pids" not in kill.refs


def _memcg_kill(clock: str, pid: int, comm: str) -> str:
    # 5.x mm/oom_kill.c __oom_kill_process, as rsyslog writes it
    return (f"Nov  5 {clock} gpu7 kernel: Memory cgroup out of memory: Killed process {pid} ({comm}) "
            "total-vm:9812344kB, anon-rss:4194304kB, file-rss:20480kB, shmem-rss:0kB, UID:1000 pgtables:9120kB "
            "oom_score_adj:0")


def test_one_program_killed_again_and_again_is_one_incident(tmp_path):
    """A service whose cgroup limit is too small: java killed in three
    bursts 40 and 20 minutes apart is one failure recurring, told so."""
    lines = [_memcg_kill("21:14:12", 4101, "java"), _memcg_kill("21:14:13", 4102, "java"),
             _memcg_kill("21:52:18", 4201, "java"), _memcg_kill("22:11:25", 4301, "java")]
    (tmp_path / "messages").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path / "messages", year=2026)
    assert len(case.incidents) == 1
    inc = case.incidents[0]
    assert inc.title == ("Memory exhaustion on gpu7: OOM killer killed java 4 times in a memory cgroup in 3 bursts "
                         "from 21:14:12 to 22:11:25")
    assert [f.title.rsplit("; ", 1)[1] for f in inc.findings] == ["burst 1 of 3", "burst 2 of 3", "burst 3 of 3"]
    # near miss: another program killed in the last burst is another failure
    other = lines[:3] + [_memcg_kill("22:11:25", 4301, "python3")]
    (tmp_path / "messages2").write_text("\n".join(other) + "\n")
    case = sarsleuth.load(tmp_path / "messages2", year=2026)
    assert len(case.incidents) == 2
    assert not any("python3" in f.title and "burst" in f.title for f in case.findings)

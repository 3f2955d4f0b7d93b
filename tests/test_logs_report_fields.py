"""The log scan reads what a report's lines say (the task it is about, an
OOM kill's victim and step, a dump's task line, a segfault's suffix printed
on a line of its own) through the message definitions, so the scan, the
detectors and cross-source matching cannot disagree about one message."""
from __future__ import annotations

from importlib import resources

import pandas as pd
import pytest

from sarsleuth.knowledge.signatures import builtin_signatures, fields_of
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers import parse, sniff

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

REPORTS = tomllib.loads(resources.files("sarsleuth.knowledge").joinpath("reports.toml").read_text("utf-8"))
DEFINITIONS = {s.id: s for s in builtin_signatures()}


def test_report_assembly_knowledge_holds_no_message_pattern():
    """reports.toml says how reports are put together; what their lines say
    is read by the definitions it names."""
    for rule in REPORTS["report"]:
        assert set(rule) <= {"kind", "follow_lines", "pid_from_detail", "repeats_join", "tail", "joins"}, rule
        assert DEFINITIONS[rule["kind"]].patterns, rule["kind"]
        assert all(DEFINITIONS[k].patterns for k in rule.get("joins", ())), rule["kind"]
        if rule.get("tail"):
            assert DEFINITIONS[rule["tail"]].in_report and DEFINITIONS[rule["tail"]].fields
    assert set(REPORTS["kill_group"]) == {"kind", "max_line_gap", "max_seconds", "reaper_max_seconds"}
    assert set(REPORTS["detail_task"]) == {"definition", "detail_lines"}
    task = DEFINITIONS[REPORTS["detail_task"]["definition"]]
    assert task.in_report and not task.patterns


def test_in_report_definitions_are_never_events():
    from sarsleuth.knowledge.signatures import classify
    assert classify("CPU: 2 PID: 13918 Comm: nginx Not tainted 4.9.0-0.bpo.1-amd64 #1") is None
    assert classify(" in nginx[400000+b97000]") is None


def test_a_definition_in_a_report_takes_fields_and_no_patterns():
    from sarsleuth.knowledge.signatures import read_table
    with pytest.raises(ValueError, match="no `patterns`"):
        read_table('[[signature]]\nid = "x"\nin_report = true\npatterns = ["a"]\nfields = ["(?P<a>a)"]\n')
    with pytest.raises(ValueError, match="needs `fields`"):
        read_table('[[signature]]\nid = "x"\nin_report = true\n')


def _events(tmp_path, text, name="messages"):
    path = tmp_path / name
    path.write_text(text)
    ev = parse(path, "syslog", ParseOptions(year=2024)).events
    return [(r.kind, None if pd.isna(r.pid) else int(r.pid), r.process, r.line) for r in ev.itertuples()]


def test_oom_choice_in_lower_case_names_the_victim(tmp_path):
    """2.6.24-2.6.35 print the choice as ``kill process`` (lower case); when
    the kill line itself is lost, the choice still names the process."""
    text = "Jun  2 03:11:07 web2 kernel: Out of memory: kill process 2210 (httpd) score 1960305 or a child\n"
    assert _events(tmp_path, text) == [("oom-kill", 2210, "httpd", 1)]


def test_earlyoom_kill_names_its_victim_not_earlyoom(tmp_path):
    text = ('Apr 15 10:22:13 web1 earlyoom[812]: low memory! at or below SIGTERM limits: mem 10.00%, swap 10.00%\n'
            'Apr 15 10:22:13 web1 earlyoom[812]: sending SIGTERM to process 4412 uid 1000 "java": badness 912, '
            'VmRSS 14020 MiB, cmdline "/usr/bin/java -Xmx14g -jar app.jar"\n')
    assert _events(tmp_path, text) == [("oom-kill", 4412, "java", 2)]


def test_oom_reaper_joins_the_kill_of_its_pid_only(tmp_path):
    text = """\
May  4 11:02:10 web1 kernel: [88211.120001] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/system.slice/nginx.service,task=nginx,pid=2817,uid=33
May  4 11:02:10 web1 kernel: [88211.120044] Out of memory: Killed process 2817 (nginx) total-vm:9127840kB, anon-rss:7841220kB, file-rss:1024kB, shmem-rss:2048kB, UID:33 pgtables:15460kB oom_score_adj:0
May  4 11:02:11 web1 kernel: [88211.733000] oom_reaper: reaped process 2817 (nginx), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB
May  4 11:02:11 web1 kernel: [88211.801000] oom_reaper: reaped process 2999 (php-fpm), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB
"""
    assert _events(tmp_path, text) == [("oom-kill", 2817, "nginx", 1), ("oom-kill", 2999, "php-fpm", 4)]


def test_dump_task_line_names_the_task_of_a_header_without_pid(tmp_path):
    """``Comm:`` ends at the taint (a comm may hold a space); ``Kdump:
    loaded`` (RHEL with a crash kernel armed) is not part of it."""
    text = """\
Mar  3 10:00:01 web1 kernel: [  100.000001] Web Content invoked oom-killer: gfp_mask=0x6200ca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0
Mar  3 10:00:01 web1 kernel: [  100.000002] CPU: 1 PID: 2871 Comm: Web Content Tainted: G           OE     5.15.0-91-generic #101-Ubuntu
Mar  3 10:00:02 web1 kernel: [  101.000001] nginx: page allocation failure: order:0, mode:0x20
Mar  3 10:00:02 web1 kernel: [  101.000002] CPU: 6 PID: 952 Comm: nginx Kdump: loaded Not tainted 3.10.0-862.9.1.el7.x86_64 #1
Mar  3 10:00:03 web1 kernel: [  102.000001] kworker/0:1: page allocation failure: order:2, mode:0x4020
Mar  3 10:00:03 web1 kernel: [  102.000002] Pid: 17681, comm: kworker/0:1 Not tainted 2.6.32-358.6.2.el6.x86_64 #1
"""
    assert _events(tmp_path, text) == [("oom-invoked", 2871, "Web Content", 1),
                                       ("page-allocation-failure", 952, "nginx", 3),
                                       ("page-allocation-failure", 17681, "kworker/0:1", 5)]


def test_segfault_suffix_on_its_own_line_completes_the_segfault(tmp_path):
    text = """\
Mar  3 10:00:01 web1 kernel: cc1[16775]: segfault at 0000000000000000 rip 00000036f2b0119e rsp 
Mar  3 10:00:01 web1 kernel: 00007fffffaaf0a0 error 4
Mar  3 10:00:02 web1 kernel: nginx[8052]: segfault at 0 ip 00000000004a5d9b sp 00007ffc36362738 error 4
Mar  3 10:00:02 web1 kernel:  in nginx[400000+b97000]
Mar  3 10:00:03 web1 kernel: sniproxy[28708]: segfault at 0 ip (null) sp bfebcbe0 error 14 in sniproxy[8048000+6000]
"""
    path = tmp_path / "messages"
    path.write_text(text)
    ev = parse(path, "syslog", ParseOptions(year=2024)).events
    assert [(r.pid, r.process, r.line) for r in ev.itertuples()] == [
        (16775, "cc1", 1), (8052, "nginx", 3), (28708, "sniproxy", 5)]
    read = [fields_of("segfault", m) for m in ev["message"]]
    assert [(f["error"], f.get("object")) for f in read] == [("4", None), ("4", "nginx"), ("14", "sniproxy")]
    assert read[2]["ip"] == "(null)"


def test_soft_lockup_names_the_task_on_the_stuck_cpu(tmp_path):
    text = """\
Mar  3 10:00:01 web1 kernel: [  100.000001] watchdog: BUG: soft lockup - CPU#5 stuck for 22s! [kworker/5:2:3310]
Mar  3 10:00:01 web1 kernel: [  100.000002] Modules linked in: xt_conntrack
Mar  3 10:00:05 web1 kernel: [  104.000001] rcu: INFO: rcu_sched self-detected stall on CPU
Mar  3 10:00:05 web1 kernel: [  104.000003] CPU: 5 PID: 3311 Comm: kworker/5:3 Not tainted 5.4.0-120-generic #136-Ubuntu
"""
    assert _events(tmp_path, text) == [("kernel-lockup", 3310, "kworker/5:2", 1), ("kernel-lockup", 3311, "kworker/5:3", 3)]


def test_a_panic_ends_the_lockup_or_hung_task_report_it_follows(tmp_path):
    """softlockup_panic / hung_task_panic: the panic is the last line of the
    stall's report (its detail), not a report of its own."""
    text = """\
Mar  3 10:00:01 web1 kernel: [  100.000001] watchdog: BUG: soft lockup - CPU#5 stuck for 22s! [kworker/5:2:3310]
Mar  3 10:00:01 web1 kernel: [  100.000002] Modules linked in: xt_conntrack
Mar  3 10:00:01 web1 kernel: [  100.000900] Kernel panic - not syncing: softlockup: hung tasks
Mar  3 10:20:00 web1 kernel: [ 1300.000001] INFO: task jbd2/sda1-8:412 blocked for more than 120 seconds.
Mar  3 10:20:00 web1 kernel: [ 1300.000300] Kernel panic - not syncing: hung_task: blocked tasks
"""
    assert [k for k, *_ in _events(tmp_path, text)] == ["kernel-lockup", "hung-task"]


@pytest.fixture(scope="module")
def corpus_events(corpus):
    out = []
    reports = ("oom", "segfault", "pagealloc", "hung", "oops")
    for path in sorted((corpus / "logs").iterdir()):
        if not any(word in path.name for word in reports):
            continue
        kind, _ = sniff(path)
        if kind in {"syslog", "journal", "dmesg"}:
            out.extend(parse(path, kind).events.itertuples())
    return out


def test_scan_and_definitions_agree_on_every_corpus_report(corpus_events):
    """Every task the scan names for a report or an OOM kill in the real
    logs is the one its message's definition reads."""
    checked = 0
    for r in corpus_events:
        if r.kind not in {"segfault", "hung-task", "oom-kill", "oom-invoked", "page-allocation-failure"}:
            continue
        f = fields_of(r.kind, r.message)
        if not f or "comm" not in f:
            continue
        checked += 1
        assert r.process == f["comm"].strip(), (r.file, r.line)
        if "pid" in f:
            assert r.pid == int(f["pid"]), (r.file, r.line)
    assert checked >= 50

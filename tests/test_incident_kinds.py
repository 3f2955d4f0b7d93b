"""Incidents of the kinds that have a category of their own, told from logs
written the way the programs write them: backends that are down, kernel
stalls, full disks, exhausted process and descriptor limits, configuration
changes.  Each must come first with its category, cause and the names of
what failed, and its advice must fit the evidence."""
from __future__ import annotations

import pandas as pd

import sarsleuth


def _nginx_line(clock: str, level: str, conn: int, message: str, pid: int = 2160) -> str:
    # ngx_log_error_core: "YYYY/MM/DD hh:mm:ss [level] pid#tid: *conn message"
    return f"2026/11/24 {clock} [{level}] {pid}#{pid}: *{conn} {message}"


def _request(upstream: str) -> str:
    return (f', client: 127.0.0.1, server: app.example.com, request: "GET /api/ HTTP/1.1", '
            f'upstream: "{upstream}", host: "app.example.com"')


def test_backends_that_stop_are_upstreams_down_not_timeouts(tmp_path):
    """Both backends of a group stop listening: refused connects, each
    server disabled, then 'no live upstreams' for every request."""
    lines = []
    for i, port in enumerate((9001, 9001, 9002, 9002)):
        clock = f"14:11:4{1 + i // 2}"
        lines.append(_nginx_line(clock, "error", 3 + i, "connect() failed (111: Connection refused) while connecting "
                                 "to upstream" + _request(f"http://127.0.0.1:{port}/api/")))
        lines.append(_nginx_line(clock, "warn", 3 + i, "upstream server temporarily disabled while connecting to "
                                 "upstream" + _request(f"http://127.0.0.1:{port}/api/")))
    for s in range(42, 60):
        lines += [_nginx_line(f"14:11:{s}", "error", 100 + s * 3 + k, "no live upstreams while connecting to upstream"
                              + _request("http://app_backend/api/")) for k in range(3)]
    (tmp_path / "error.log").write_text("\n".join(lines) + "\n")
    top = sarsleuth.load(tmp_path).incidents[0]
    assert (top.category, top.cause) == ("upstream-failure", "upstream-down")
    assert "127.0.0.1:9001 refused 2 x" in top.title and "127.0.0.1:9002 refused 2 x" in top.title
    assert not [f for f in top.findings if f.detector == "upstream-timeout"]
    down = [f for f in top.findings if f.detector == "upstream-down"][0]
    assert down.metrics["no_live"] == 54 and down.metrics["refused"] == 4 and down.metrics["disabled"] == 4
    assert str(down.start) == "2026-11-24 14:11:41"
    advice = " ".join(top.recommendations)
    assert "ss -ltnp" in advice and "proxy_read_timeout" not in advice


def test_soft_lockups_and_the_hung_tasks_behind_them_are_a_kernel_stall(tmp_path):
    """rsyslog's kern.log of a 5.15 kernel: a CPU stuck in a driver, the
    tasks waiting behind it hung, then the panic softlockup_panic asks for."""
    lines = [
        "Mar  3 10:00:01 db1 kernel: [ 8100.000001] watchdog: BUG: soft lockup - CPU#5 stuck for 22s! [kworker/5:2:3310]",
        "Mar  3 10:00:01 db1 kernel: [ 8100.000002] Modules linked in: xt_conntrack nf_nat mpt3sas",
        "Mar  3 10:00:01 db1 kernel: [ 8100.000003] CPU: 5 PID: 3310 Comm: kworker/5:2 Not tainted 5.15.0-91-generic #101-Ubuntu",
        "Mar  3 10:00:29 db1 kernel: [ 8128.000001] watchdog: BUG: soft lockup - CPU#5 stuck for 48s! [kworker/5:2:3310]",
        "Mar  3 10:01:03 db1 kernel: [ 8162.000001] INFO: task postgres:2210 blocked for more than 120 seconds.",
        "Mar  3 10:01:03 db1 kernel: [ 8162.000002]       Not tainted 5.15.0-91-generic #101-Ubuntu",
        'Mar  3 10:01:03 db1 kernel: [ 8162.000003] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
        "Mar  3 10:01:03 db1 kernel: [ 8162.000004] task:postgres        state:D stack:    0 pid: 2210 ppid:  2201 flags:0x00000000",
    ]
    (tmp_path / "kern.log").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path, year=2024)
    assert len(case.incidents) == 1
    top = case.incidents[0]
    assert (top.category, top.cause) == ("kernel-stall", "kernel-lockup")
    assert top.title.startswith("Kernel stall on db1: 2 soft lockup(s) on CPU 5: kworker/5:2 stuck up to 48 s")
    # the kernel measured both: postgres was blocked from 09:59:03 (120 s before 10:01:03), the
    # kworker stuck from 09:59:39 (22 s before 10:00:01): the wait began first, it is not the
    # lockup's effect but a stall beside it
    roles = {f.detector: (f.role, f.onset) for f in top.findings}
    assert roles["kernel-lockup"] == ("cause", pd.Timestamp("2024-03-03 09:59:39"))
    assert roles["hung-task"] == ("context", pd.Timestamp("2024-03-03 09:59:03"))


def test_hung_tasks_behind_an_nfs_server_that_stopped_answering(tmp_path):
    """A hard mount: the server stops answering, tasks reading from the
    mount hang, the server comes back; the server is the cause."""
    lines = [
        "Mar  3 10:00:00 app1 kernel: [ 9000.000001] nfs: server nas01 not responding, still trying",
        "Mar  3 10:00:31 app1 kernel: [ 9031.000001] nfs: server nas01 not responding, still trying",
        "Mar  3 10:02:03 app1 kernel: [ 9123.000001] INFO: task php-fpm:4410 blocked for more than 120 seconds.",
        "Mar  3 10:02:03 app1 kernel: [ 9123.000002]       Not tainted 5.15.0-91-generic #101-Ubuntu",
        "Mar  3 10:02:03 app1 kernel: [ 9123.000003] task:php-fpm         state:D stack:    0 pid: 4410 ppid:  4401 flags:0x00000000",
        "Mar  3 10:02:03 app1 kernel: [ 9123.000004] Call Trace:",
        "Mar  3 10:02:03 app1 kernel: [ 9123.000005]  rpc_wait_bit_killable+0x1e/0x90 [sunrpc]",
        "Mar  3 10:03:10 app1 kernel: [ 9190.000001] nfs: server nas01 OK",
        "Mar  3 11:00:00 app1 kernel: [12600.000001] nfs: server nas02 not responding, timed out",
    ]
    (tmp_path / "kern.log").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path, year=2024)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("network-storage", "nfs-server-down")
    assert top.title == ("Network storage unreachable on app1: NFS server nas01 not responding (2 x still trying) "
                         "for 190 s until it answered again")
    assert {f.detector: f.role for f in top.findings} == {"nfs-server-down": "cause", "hung-task": "effect"}
    assert top.recommendations[0].startswith("The NFS server nas01 stopped answering")
    soft = [f for f in case.findings if f.detector == "nfs-server-down" and f.refs["servers"] == ["nas02"]][0]
    assert soft.metrics["soft_mount"] is True and soft.metrics["recovered"] is False


def test_an_nfs_outage_in_a_dmesg_without_times_is_counted_per_mount_and_ended_by_its_ok(tmp_path):
    """A dmesg of uptime stamps only: two soft mounts timing out, a hard one
    still trying, then the server's OK (463 s after the first complaint, by
    the kernel's own clock); an OK printed before the outage (days earlier)
    never ends it (near miss)."""
    lines = ["[32100.000001] nfs: server thinkcentre OK",
             "[32495.562824] nfs: server thinkcentre not responding, timed out",
             "[32499.786257] nfs: server thinkcentre not responding, timed out",
             "[32956.142249] nfs: server thinkcentre not responding, still trying",
             "[32958.266147] nfs: server thinkcentre OK"]
    (tmp_path / "dmesg.txt").write_text("\n".join(lines) + "\n")
    (f,) = [f for f in sarsleuth.load(tmp_path / "dmesg.txt").findings if f.detector == "nfs-server-down"]
    assert f.title == ("NFS server thinkcentre not responding (2 x timed out, 1 x still trying) for 463 s until it "
                       "answered again")
    assert f.metrics["soft_mount"] is True and f.metrics["hard_mount"] is True and f.metrics["recovered"] is True
    assert "Some of its mounts are soft" in f.explanation
    assert [e.line for e in f.evidence] == [2, 3, 4, 5]
    (tmp_path / "early.txt").write_text("\n".join(lines[:4]) + "\n")
    (g,) = [f for f in sarsleuth.load(tmp_path / "early.txt").findings if f.detector == "nfs-server-down"]
    assert g.metrics["recovered"] is False and 1 not in [e.line for e in g.evidence]


def _sar_f(host: str, rows) -> str:
    """`sar -F 1` as sysstat 12.6 prints it: one row per filesystem a second."""
    out = [f"Linux 6.1.0-13-amd64 ({host}) \t11/24/2026 \t_x86_64_\t(2 CPU)", "",
           "14:18:32     MBfsfree  MBfsused   %fsused  %ufsused     Ifree     Iused    %Iused FILESYSTEM"]
    for clock, fs, free, used, fsused, ufsused, ifree, iused, pct_i in rows:
        out.append(f"{clock} {free:>12} {used:>9} {fsused:>9.2f} {ufsused:>9.2f} {ifree:>9} {iused:>9} {pct_i:>9.2f} {fs}")
    return "\n".join(out) + "\n"


def _filling(seconds: int, fill, inodes=lambda s: 11):
    rows = []
    for s in range(seconds):
        clock = f"14:{18 + (33 + s) // 60:02d}:{(33 + s) % 60:02d}"
        rows.append((clock, "/dev/vda", 233180, 24840, 9.63, 69.36, 16340135, 437081, 2.61))
        used = fill(s)
        rows.append((clock, "/dev/loop0", round(243 - used * 2.43), round(used * 2.43), used * 0.93,
                     min(100.0, used), 65536 - inodes(s), inodes(s), inodes(s) / 65536 * 100))
    return rows


def test_a_backup_that_fills_the_data_filesystem_is_a_full_disk(tmp_path):
    """sar -F shows /dev/loop0 going from 7 % to 100 %; dd and the queue
    writer on it log ENOSPC (as coreutils and Python write it)."""
    (tmp_path / "sar-F.txt").write_text(_sar_f("files-lab-01", _filling(
        90, lambda s: 7.36 if s < 35 else min(100.0, 7.36 + (s - 35) * 4.0))))
    (tmp_path / "messages").write_text("\n".join([
        "Nov 24 14:19:32 files-lab-01 backup: dd: error writing '/srv/data/backup-2026-11-24.img': No space left on device",
        "Nov 24 14:19:32 files-lab-01 backup: 239+0 records in",
    ] + [f"Nov 24 14:19:{33 + s} files-lab-01 order-queue: cannot queue message {5121 + s}: [Errno 28] No space "
         f"left on device: '/srv/data/queue/msg-000{5121 + s}'" for s in range(12)]) + "\n")
    case = sarsleuth.load(tmp_path)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("disk-full", "filesystem-full")
    assert top.title.startswith("Disk full on files-lab-01: /dev/loop0 full: %ufsused 100.00 at 14:19:32 "
                                "(was 7.36 at 14:18:33)")
    enospc = [f for f in top.findings if f.detector == "enospc"][0]
    assert enospc.role == "effect" and enospc.metrics["lines"] == 13
    assert enospc.title.startswith("13 x No space left on device: order-queue (12, /srv/data/queue/msg-0005121 and "
                                   "11 more path(s)), backup (1, /srv/data/backup-2026-11-24.img)")
    assert not [f for f in case.findings if f.detector == "filesystem-full" and "vda" in f.title]
    assert "/dev/loop0" in top.recommendations[0]


def test_a_spooler_that_uses_up_the_inodes_is_out_of_inodes_not_blocks(tmp_path):
    (tmp_path / "sar-F.txt").write_text(_sar_f("mail-lab-01", _filling(
        80, lambda s: 8.0 + s * 0.05, inodes=lambda s: 11 if s < 30 else min(65536, 11 + (s - 30) * 2000))))
    found = [f for f in sarsleuth.load(tmp_path).findings if f.detector == "filesystem-full"]
    assert len(found) == 1 and found[0].metrics["inodes"] is True
    assert found[0].title.startswith("/dev/loop0 out of inodes: %Iused 100.00")
    assert "ran out of inodes, not blocks" in sarsleuth.load(tmp_path).incidents[0].recommendations[0]


def test_an_api_that_runs_out_of_threads_is_a_process_limit(tmp_path):
    """A Python API starting threads per request in a cgroup with pids.max
    48: the kernel names the cgroup once, the API logs each refusal."""
    lines = ["Nov 24 14:12:31 api-lab-03 kernel: [ 1672.100231] cgroup: fork rejected by pids controller in /lab-api"]
    lines += [f"Nov 24 14:12:{31 + s // 3:02d} api-lab-03 render-api: 2026-11-24 14:12:{31 + s // 3:02d} ERROR /render: "
              "can't start new thread" for s in range(30)]
    (tmp_path / "messages").write_text("\n".join(lines) + "\n")
    rows = [(f"14:12:{s:02d}", [1 if s < 30 else 2, 180 if s < 30 else 228, "0.10", "0.05", "0.01", 0]) for s in range(60)]
    (tmp_path / "sar-q.txt").write_text(
        "Linux 6.1.0-13-amd64 (api-lab-03) \t11/24/2026 \t_x86_64_\t(2 CPU)\n\n"
        + f"{rows[0][0]}  " + "".join(f"{h:>10}" for h in ["runq-sz", "plist-sz", "ldavg-1", "ldavg-5", "ldavg-15",
                                                         "blocked"]) + "\n"
        + "".join(f"{c}  " + "".join(f"{v:>10}" for v in vals) + "\n" for c, vals in rows))
    top = sarsleuth.load(tmp_path).incidents[0]
    assert (top.category, top.cause) == ("pid-exhaustion", "fork-rejected")
    assert top.title.startswith("Process limit on api-lab-03: 31 x new process or thread refused: render-api 30 x; ")
    refused = [f for f in top.findings if f.detector == "fork-rejected"][0]
    assert refused.title == ("31 x new process or thread refused: render-api 30 x; cgroup /lab-api at its pids.max "
                             "(sar -q plist-sz 228 at 14:12:30, 180 before)")
    assert top.recommendations[0].startswith("The cgroup /lab-api is at its pids.max")
    assert any(r.startswith("render-api could not start threads") for r in top.recommendations)


def _sosreport(root, files: dict):
    """A sosreport folder as `sos report` extracts: its markers and files."""
    base = root / "sosreport-api-lab-01-2026-11-24-abcdef"
    for rel, text in {"sos_commands/host/hostname": "api-lab-01\n", **files}.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text)
    return base


def test_descriptors_run_out_under_the_limit_each_program_ran_with(tmp_path):
    """nginx at its worker_rlimit_nofile (nginx -T) and a Python API at its
    unit's LimitNOFILE: each limit named, never fs.file-max for errno 24."""
    bundle = _sosreport(tmp_path, {
        "sos_commands/nginx/nginx_-T": "# configuration file /etc/nginx/nginx.conf:\nuser www-data;\n"
                                       "worker_processes 2;\nworker_rlimit_nofile 256;\nevents {\n"
                                       "    worker_connections 4096;\n}\n",
        "etc/systemd/system/orders-api.service": "[Unit]\nDescription=Orders API\n\n[Service]\n"
                                                 "ExecStart=/usr/bin/python3 /srv/app/backend.py --port 9001\n"
                                                 "LimitNOFILE=256\n",
        "sos_commands/kernel/sysctl_-a": "fs.file-max = 9223372036854775807\nkernel.pid_max = 4194304\n",
        "var/log/nginx/error.log": "".join(f"2026/11/24 14:12:4{s % 10} [crit] 2160#2160: accept4() failed "
                                           "(24: Too many open files)\n" for s in range(12)),
        "var/log/messages": "".join(f"Nov 24 14:13:0{s} api-lab-01 orders-api: 2026-11-24 14:13:0{s} ERROR /orders: "
                                    "[Errno 24] Too many open files\n" for s in range(6)),
    })
    case = sarsleuth.load(bundle)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("fd-exhaustion", "too-many-open-files")
    found = [f for f in top.findings if f.detector == "too-many-open-files"][0]
    assert found.title.startswith("18 x Too many open files (EMFILE): nginx 12 x in accept4 (`worker_rlimit_nofile 256`); "
                                  "orders-api 6 x (`LimitNOFILE=256`)")
    assert case.hosts[0].units["orders-api.service"]["LimitNOFILE"].line == 6
    advice = " ".join(top.recommendations)
    assert "file-max" not in advice and "worker_rlimit_nofile 256" in top.recommendations[0]
    assert "Check orders-api for a descriptor leak" in advice


def test_the_hosts_file_handles_running_out_is_file_max(tmp_path):
    (tmp_path / "kern.log").write_text(
        "Nov 24 14:13:00 web1 kernel: [ 9000.000001] VFS: file-max limit 65536 reached\n")
    (tmp_path / "error.log").write_text("2026/11/24 14:13:00 [crit] 2160#2160: accept4() failed (23: Too many open files "
                                        "in system)\n")
    case = sarsleuth.load(tmp_path, year=2026)
    found = [f for f in case.findings if f.detector == "too-many-open-files"][0]
    assert found.metrics["system_wide"] == 2 and found.metrics["per_process"] == 0
    assert "(ENFILE)" in found.title and "file-max 65536" in found.title
    assert "fs.file-max" in case.incidents[0].recommendations[0]


def _advice_mentions_nginx(incident) -> bool:
    import re
    return any(re.search(r"(?i)\bnginx\b|worker_connections|worker_rlimit|proxy_buffer", r)
               for r in incident.recommendations)


def test_a_crash_in_the_program_itself_that_dumped_core(tmp_path):
    """An image resizer crashing in its own code (the segfault line names
    the program), systemd-coredump writing each core: find the core, read
    the address; no 'enable core dumps', no library, no nginx."""
    lines = []
    for i, pid in enumerate((4410, 4433, 4457)):
        lines += [f"Nov 24 14:13:{10 + i * 5} img-lab-01 kernel: [ 1800.{i:06d}] resizer[{pid}]: segfault at 0 ip "
                  f"000055d0c4a1b2c3 sp 00007ffc5e1d2a40 error 4 in resizer[55d0c4a00000+e8000] likely on CPU 1 "
                  f"(core 1, socket 0)",
                  f"Nov 24 14:13:{11 + i * 5} img-lab-01 systemd-coredump[{pid + 2}]: Process {pid} (resizer) of user "
                  f"33 dumped core.",
                  f"Nov 24 14:13:{12 + i * 5} img-lab-01 supervise[4400]: resizer exited on signal 11, restarting in 1 s"]
    (tmp_path / "messages").write_text("\n".join(lines) + "\n")
    top = sarsleuth.load(tmp_path).incidents[0]
    assert (top.category, top.cause) == ("worker-crash", "segfault")
    seg = [f for f in top.findings if f.detector == "segfault"][0]
    assert seg.metrics["cores_dumped"] == 3 and seg.metrics["faulting_libraries"] == 0
    advice = " ".join(top.recommendations)
    assert top.recommendations[0].startswith("A core was written ('core dumped'): find it")
    assert "gdb $(which resizer) CORE" in advice and "resizer's own code" in advice
    assert "Enable core dumps" not in advice and "faulting library" not in advice and not _advice_mentions_nginx(top)


def test_a_crash_in_a_library_without_a_core(tmp_path):
    (tmp_path / "kern.log").write_text(
        "Nov 24 14:13:10 app1 kernel: [ 1800.000001] java[2211]: segfault at 7f3a00000000 ip 00007f3a2c1e4b5a sp "
        "00007f39f7ffe9d0 error 6 in libjvm.so[7f3a2b600000+1100000] likely on CPU 11 (core 3, socket 1)\n")
    top = sarsleuth.load(tmp_path, year=2026).incidents[0]
    advice = " ".join(top.recommendations)
    assert "Enable core dumps for java" in advice and "faulting library (libjvm.so)" in advice
    assert not _advice_mentions_nginx(top)


def test_advice_for_a_service_killed_in_its_cgroup_names_no_nginx(tmp_path):
    (tmp_path / "messages").write_text(
        "Nov 24 14:13:19 app-lab-04 kernel: [ 1752.821313] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
        "mems_allowed=0,oom_memcg=/lab-reports,task_memcg=/lab-reports,task=report-cache,pid=6042,uid=0\n"
        "Nov 24 14:13:19 app-lab-04 kernel: [ 1752.821348] Memory cgroup out of memory: Killed process 6042 "
        "(report-cache) total-vm:427816kB, anon-rss:408320kB, file-rss:6688kB, shmem-rss:0kB, UID:0 pgtables:868kB "
        "oom_score_adj:0\n")
    top = sarsleuth.load(tmp_path).incidents[0]
    assert not _advice_mentions_nginx(top)
    assert any(r.startswith("Size report-cache's memory") for r in top.recommendations)


def _reload_lines(clock: str, master: int = 2159, signaller: int = 3011, new_worker: int = 3013) -> list:
    """`nginx -s reload` at error_log level notice, as nginx 1.22 logs it."""
    return [f"2026/11/24 {clock} [notice] {signaller}#{signaller}: signal process started",
            f"2026/11/24 {clock} [notice] {master}#{master}: signal 1 (SIGHUP) received from {signaller}, reconfiguring",
            f"2026/11/24 {clock} [notice] {master}#{master}: reconfiguring",
            f'2026/11/24 {clock} [notice] {master}#{master}: using the "epoll" event method',
            f"2026/11/24 {clock} [notice] {master}#{master}: start worker processes",
            f"2026/11/24 {clock} [notice] {master}#{master}: start worker process {new_worker}",
            f"2026/11/24 {clock} [notice] 2160#2160: gracefully shutting down",
            f"2026/11/24 {clock} [notice] 2160#2160: exiting",
            f"2026/11/24 {clock} [notice] 2160#2160: exit",
            f"2026/11/24 {clock} [notice] {master}#{master}: signal 17 (SIGCHLD) received from 2160",
            f"2026/11/24 {clock} [notice] {master}#{master}: worker process 2160 exited with code 0"]


def test_a_reload_to_a_wrong_upstream_is_the_cause_of_the_refusals_after_it(tmp_path):
    lines = _reload_lines("14:12:40")
    for s in range(41, 60):
        lines += [_nginx_line(f"14:12:{s}", "error", 100 + s * 2 + k, "connect() failed (111: Connection refused) while "
                              "connecting to upstream" + _request("http://127.0.0.1:9011/api/"), pid=3013)
                  for k in range(2)]
    (tmp_path / "error.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "messages").write_text(
        "Nov 24 14:12:38 api-lab-04 deploy: deploy 2026.11.24-3: orders upstream moved to 127.0.0.1:9011\n")
    top = sarsleuth.load(tmp_path).incidents[0]
    assert (top.category, top.cause) == ("config-change", "config-reload")
    reload = [f for f in top.findings if f.detector == "config-reload"][0]
    assert reload.title == ("nginx reloaded its configuration at 14:12:40; then, absent before: 38 x upstream-down "
                            "from 14:12:41")
    assert reload.metrics["seconds_to_first_error"] == 1.0 and reload.severity == "high"
    assert [f.role for f in top.findings if f.detector == "upstream-down"] == ["effect"]
    assert top.recommendations[0].startswith("The errors began right after nginx reloaded its configuration")


def test_a_good_reload_is_context_not_a_cause(tmp_path):
    """The same reload with a healthy upstream: a low finding that cannot
    be a cause, and a refusal that was already there before is not new."""
    lines = [_nginx_line("14:05:00", "error", 7, "connect() failed (111: Connection refused) while connecting to "
                         "upstream" + _request("http://127.0.0.1:9001/api/"))] + _reload_lines("14:12:40")
    lines += [_nginx_line("14:12:50", "error", 9, "connect() failed (111: Connection refused) while connecting to "
                          "upstream" + _request("http://127.0.0.1:9001/api/"), pid=3013)]
    (tmp_path / "error.log").write_text("\n".join(lines) + "\n")
    found = [f for f in sarsleuth.load(tmp_path).findings if f.detector == "config-reload"]
    assert len(found) == 1 and found[0].severity == "low" and found[0].metrics["new_errors"] == 0
    from sarsleuth.analysis.correlate import cause_of
    assert cause_of(found)[1] is None          # no chain: it cannot be a cause


def test_a_refused_reload_names_the_line_and_an_nginx_stop_is_no_reload(tmp_path):
    lines = [_nginx_line("14:12:40", "notice", 0, "signal process started", pid=3011).replace(" *0 ", " "),
             _nginx_line("14:12:40", "emerg", 0, 'host not found in upstream "orders-backend:9011" in '
                         "/etc/nginx/conf.d/api.conf:3").replace(" *0 ", " "),
             _nginx_line("14:20:00", "notice", 0, "signal process started", pid=3180).replace(" *0 ", " "),
             _nginx_line("14:20:00", "notice", 0, "signal 3 (SIGQUIT) received from 3180, shutting down",
                         pid=2159).replace(" *0 ", " ")]
    (tmp_path / "error.log").write_text("\n".join(lines) + "\n")
    found = [f for f in sarsleuth.load(tmp_path).findings if f.detector == "config-reload"]
    assert len(found) == 1 and found[0].metrics["failed"] == 1 and found[0].severity == "medium"
    assert found[0].title == ('nginx configuration reload failed at 14:12:40: host not found in upstream '
                              '"orders-backend:9011" in /etc/nginx/conf.d/api.conf:3')


def test_workers_that_crash_after_an_upgrade_are_told_as_the_change(tmp_path):
    """dpkg upgrades nginx and its Lua module; 70 s later the workers start
    dying on SIGSEGV: the upgrade is the cause, the crashes its effects."""
    (tmp_path / "dpkg.log").write_text(
        "2026-11-24 14:10:00 startup archives unpack\n"
        "2026-11-24 14:10:00 upgrade nginx:amd64 1.22.1-9 1.22.1-9+deb12u1\n"
        "2026-11-24 14:10:00 status half-configured nginx:amd64 1.22.1-9\n"
        "2026-11-24 14:10:01 upgrade libnginx-mod-http-lua:amd64 1:0.10.23-1 1:0.10.26-1\n"
        "2026-11-24 14:10:02 status installed libnginx-mod-http-lua:amd64 1:0.10.26-1\n")
    lines = []
    for i, pid in enumerate((2211, 2240, 2262)):
        clock = f"14:11:{10 + i * 7}"
        lines += [f"2026/11/24 {clock} [alert] 2159#2159: worker process {pid} exited on signal 11 (core dumped)",
                  f"2026/11/24 {clock} [notice] 2159#2159: start worker process {pid + 20}"]
    (tmp_path / "error.log").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path)
    assert {s.kind for s in case.sources} == {"package-log", "nginx-error"}
    top = case.incidents[0]
    assert (top.category, top.cause) == ("config-change", "package-change")
    assert "nginx 1.22.1-9 -> 1.22.1-9+deb12u1" in top.title
    assert {f.detector: f.role for f in top.findings}["worker-signal-exit"] == "effect"
    assert top.recommendations[0].startswith("The errors began right after these packages changed (nginx 1.22.1-9 "
                                             "-> 1.22.1-9+deb12u1, libnginx-mod-http-lua")


def test_a_service_out_of_descriptors_without_nginx_gets_no_nginx_advice(tmp_path):
    (tmp_path / "messages").write_text("".join(
        f"Nov 24 14:13:0{s} api-lab-01 orders-api: 2026-11-24 14:13:0{s} ERROR /orders: [Errno 24] Too many open "
        "files\n" for s in range(6)))
    top = sarsleuth.load(tmp_path).incidents[0]
    assert top.cause == "too-many-open-files" and not _advice_mentions_nginx(top)
    assert "Check orders-api for a descriptor leak" in " ".join(top.recommendations)


def _tcp_oom(tmp_path, name: str, message: str):
    # net/ipv4/tcp.c tcp_check_oom(), as a 5.x dmesg -T prints it under an h2load run
    (tmp_path / name).write_text("".join(f"[Thu Mar  5 10:0{i}:1{i} 2026] TCP: {message}\n" for i in range(3)))
    case = sarsleuth.load(tmp_path / name)
    (f,) = [f for f in case.findings if f.detector == "socket-memory"]
    return f, case.incidents[0].recommendations


def test_tcp_out_of_memory_is_tcp_mem_not_orphans(tmp_path):
    """"out of memory -- consider tuning tcp_mem": the buffers of the live
    sockets over tcp_mem's high mark; the orphans' advice does not apply."""
    f, advice = _tcp_oom(tmp_path, "dmesg", "out of memory -- consider tuning tcp_mem")
    assert (f.metrics["tcp_mem_lines"], f.metrics["orphan_lines"]) == (3, 0)
    assert f.title == "3 x socket memory / orphan limit over 122 s (3 'out of memory -- consider tuning tcp_mem')"
    assert advice[0].startswith("The buffers of all TCP sockets together reached `net.ipv4.tcp_mem`'s high mark")
    assert not any("orphan" in a for a in advice)
    # near miss: too many orphans is the orphans' limit
    f, advice = _tcp_oom(tmp_path, "dmesg2", "too many orphaned sockets")
    assert f.metrics["orphan_lines"] == 3 and any("tcp_max_orphans" in a for a in advice)
    assert not any("high mark" in a for a in advice)


def test_one_backend_failing_again_hours_apart_is_one_incident(tmp_path):
    """nginx 1.18: the same upstream closing the connection mid-response
    three times over four hours, as a real error.log has it: one failure
    recurring, one incident; a second backend failing once between them
    (near miss) stays its own."""
    def line(clock, upstream, pid=26):
        return (f"2022/02/03 {clock} [error] {pid}#{pid}: *1 upstream prematurely closed connection while reading "
                f"response header from upstream, client: 10.0.0.9, server: demo, request: \"GET /api HTTP/1.1\", "
                f"upstream: \"http://{upstream}/api\", host: \"demo\"")
    lines = [line("02:33:25", "127.0.0.1:8081"), line("02:56:10", "127.0.0.1:8081"),
             line("04:10:00", "127.0.0.1:9090"), line("06:58:44", "127.0.0.1:8081")]
    (tmp_path / "error.log").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path / "error.log")
    titles = sorted(i.title for i in case.incidents)
    assert titles == ["Upstream failures: 1 x upstream error (http://127.0.0.1:9090: 1)",
                      "Upstream failures: 3 x upstream error (http://127.0.0.1:8081) in 3 bursts from 02:33:25 to "
                      "06:58:44"]


def test_a_kernel_bug_report_names_the_function_module_and_task(tmp_path):
    """A 4.1 oops as syslog has it: the title says where it faulted
    (kdbus_name_release_all in the kdbus module) and for which task
    (systemd, PID 1689), read from the report's own lines; a 5.x RIP line
    (no addresses) reads the same (near miss of layout)."""
    lines = ["Jun 26 01:37:55 ank kernel: BUG: unable to handle kernel NULL pointer dereference at 0000000000000018",
             "Jun 26 01:37:55 ank kernel: IP: [<ffffffffa007c0f2>] kdbus_name_release_all+0x32/0xd0 [kdbus]",
             "Jun 26 01:37:55 ank kernel: PGD 0 ",
             "Jun 26 01:37:55 ank kernel: Oops: 0000 [#1] SMP ",
             "Jun 26 01:37:55 ank kernel: Modules linked in: ccm cmac rfcomm arc4 kdbus",
             "Jun 26 01:37:55 ank kernel: CPU: 1 PID: 1689 Comm: systemd Tainted: G        W  OE   4.1.0-1.fc23.x86_64 #1",
             "Jun 26 01:37:55 ank kernel: RIP: 0010:[<ffffffffa007c0f2>]  [<ffffffffa007c0f2>] "
             "kdbus_name_release_all+0x32/0xd0 [kdbus]"]
    (tmp_path / "messages").write_text("\n".join(lines) + "\n")
    (f,) = [f for f in sarsleuth.load(tmp_path, year=2015).findings if f.detector == "kernel-oops"]
    assert f.title == ("Kernel bug report: BUG: unable to handle kernel NULL pointer dereference at 0000000000000018 "
                       "(in kdbus_name_release_all [kdbus], task systemd (PID 1689))")
    assert (f.refs["module"], f.refs["program"], f.refs["pids"]) == ("kdbus", "systemd", [1689])
    new = [ln.replace("IP: [<ffffffffa007c0f2>] kdbus", "RIP: 0010:kdbus") for ln in lines[:2]] + lines[2:6]
    (tmp_path / "messages").write_text("\n".join(new) + "\n")
    (g,) = [f for f in sarsleuth.load(tmp_path, year=2015).findings if f.detector == "kernel-oops"]
    assert g.refs["function"] == "kdbus_name_release_all" and g.refs["module"] == "kdbus"


def test_the_idle_task_is_no_program_a_kernel_report_blames(tmp_path):
    """swapper/N is the idle task: a page allocation failing in a NIC's
    softirq on two idle CPUs, and a soft lockup the watchdog caught while
    CPU 2 ran interrupts, name the interrupt context (and the function the
    RIP line shows), not a program called swapper."""
    (tmp_path / "messages").write_text(
        "Apr 01 16:27:01 sm21 kernel: swapper/21: page allocation failure: order:0, mode:0x20\n"
        "Apr 01 16:27:01 sm21 kernel: swapper/44: page allocation failure: order:0, mode:0x20\n")
    (f,) = [f for f in sarsleuth.load(tmp_path, year=2019).findings if f.detector == "page-allocation-failure"]
    assert f.title.startswith("2 page allocation failure(s) in interrupt context on idle CPUs (swapper/21, "
                              "swapper/44) (order 0")
    lockup = tmp_path / "lockup"
    lockup.mkdir()
    (lockup / "dmesg.txt").write_text(
        "[   56.303956] watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [swapper/2:0]\n"
        "[   56.309443] RIP: 0010:mptcp_subflow_data_available+0x1cd/0x8d0\n")
    (g,) = [f for f in sarsleuth.load(lockup).findings if f.detector == "kernel-lockup"]
    assert g.title == ("1 soft lockup(s) on CPU 2: interrupt context on an idle CPU (swapper/2) stuck up to 22 s, "
                       "in mptcp_subflow_data_available")
    assert g.refs["pids"] == [] and g.refs["function"] == "mptcp_subflow_data_available"
    # near miss: a program's own lockup names it
    (lockup / "dmesg.txt").write_text("[   56.303956] watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [java:4410]\n")
    (h,) = [f for f in sarsleuth.load(lockup).findings if f.detector == "kernel-lockup"]
    assert h.title == "1 soft lockup(s) on CPU 2: java stuck up to 22 s" and h.refs["pids"] == [4410]


def test_upstream_errors_of_nginx_out_of_descriptors_get_the_descriptor_advice_only(tmp_path):
    """Tengine out of descriptors in accept4, then its upstreams "busy or
    encounter error": the advice is the descriptors'; the backend-closed
    advice belongs to upstream errors that are the incident's cause."""
    lines = [f"2012/12/11 11:35:2{s} [alert] 19566#0: accept4() failed (24: Too many open files)" for s in range(7)]
    lines += [f"2012/12/11 11:35:29 [error] 19566#0: *{n} upstream servers are busy or encounter error! while "
              "connecting to upstream, client: 195.159.164.228, server: 0.0.0.0:80" for n in (1, 3, 4)]
    (tmp_path / "error.log").write_text("\n".join(lines) + "\n")
    (top,) = sarsleuth.load(tmp_path / "error.log").incidents
    assert top.cause == "too-many-open-files"
    assert {f.detector: f.role for f in top.findings}["upstream-error"] == "effect"
    assert not any("Read the backend's own log" in r for r in top.recommendations)

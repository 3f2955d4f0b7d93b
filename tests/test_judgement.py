"""Judgement on evidence that is not one detector's: two sources of one
metric that disagree, the processes named behind a finding, causes and
roles by onset."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import sarsleuth
from sarsleuth.analysis.attribution import attribute
from sarsleuth.analysis.ps_snapshots import program_name
from sarsleuth.model import Finding

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


# ------------------------------------------------------- sources disagreeing
def test_the_proxy_sample_s_sar_text_is_its_sa_file_printed_by_sar():
    """sar06.txt is sysstat's sar reading sa06: every value the two hold
    agrees, so they merge without a word."""
    case = sarsleuth.load(SAMPLES / "nginx-proxy-oom" / "sar06.txt", SAMPLES / "nginx-proxy-oom" / "sa06")
    assert not [w for w in case.warnings if "disagree" in w]
    assert case.merged["metric_values"] > 5000


def test_a_sar_text_that_disagrees_with_its_sa_file_is_said(tmp_path):
    """The same text with one row changed as a hand edit would (ldavg-1 at
    15:06:05 printed 41.02 where sadc recorded 29.59): said with the widest
    gap, how many values differ, and which file the story uses: what sadc
    wrote."""
    text = (SAMPLES / "nginx-proxy-oom" / "sar06.txt").read_text()
    row = "03:06:05 PM        14       611     29.59     20.71     11.83        23"
    assert row in text
    (tmp_path / "sar06.txt").write_text(text.replace(row, row.replace("29.59", "41.02")))
    case = sarsleuth.load(tmp_path / "sar06.txt", SAMPLES / "nginx-proxy-oom" / "sa06")
    said = [w for w in case.warnings if "disagree" in w]
    assert said == ["sa06 and sar06.txt disagree on 1 value(s) of 1 series of Cangke_107_176: queue ldavg-1 at "
                    "2014-05-06 15:06:05 is 29.59 in sa06 and 41.02 in sar06.txt; the story uses sa06 (the binary "
                    "file sadc wrote)"]
    load = case.sar("queue")["ldavg-1"]
    assert load[load.index == pd.Timestamp("2014-05-06 15:06:05", tz=load.index.tz)].iloc[0] == 29.59
    assert said[0] in case.to_json()["warnings"]


def test_renderings_that_agree_are_merged_without_a_word(tmp_path):
    """A sysstat release's sa file and the sadf -d it printed agree to the
    last digit: merged, counted, not a warning."""
    src = SAMPLES / "sysstat-versions" / "12.6.1"
    case = sarsleuth.load(src / "sa.gz", src / "sadf-d.csv.gz")
    assert not [w for w in case.warnings if "disagree" in w]
    assert case.merged["metric_values"] > 10000


# ----------------------------------------------------------- processes named
def test_program_names_as_a_story_gives_them():
    assert program_name("stress-ng-matrix [run]") == "stress-ng-matrix"
    assert program_name("nginx: worker process") == "nginx"
    assert program_name("nginx: master process /usr/sbin/nginx -g daemon off;") == "nginx"
    assert program_name("python3 /srv/app/grower.py --name cache-warmer --rate-mb 150") == "grower.py"
    assert program_name("/usr/lib/jvm/java-17/bin/java -Xmx2g -jar app.jar") == "app.jar"
    assert program_name("[kworker/u8:3]") == "[kworker/u8:3]"
    assert program_name("fio --name=journal --directory=/srv/data") == "fio"
    # code given on the command line names no script: the interpreter runs it (not "import")
    assert program_name("python3 -c import time; t=time.time()+60 while time.time()<t: pass") == "python3"
    assert program_name("python3 -m http.server 8000") == "http.server"
    assert program_name("python3 -W ignore /srv/app/reindex.py") == "reindex.py"
    assert program_name("perl -e print 1") == "perl"


_PS = """USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root         2  0.0  0.0      0     0 ?        S    13:44   0:00 [kthreadd]
root      6013  0.0  0.0 221816  4400 ?        Ssl  14:12   0:00 rsyslogd -n -f /etc/rsyslog.conf
root      6041  0.0  0.0   2576   900 ?        S    14:13   0:00 sh /srv/app/supervise.sh report-cache
root      8700  0.0  0.0  77312 10200 ?        SLs  14:23   0:00 stress-ng --matrix 0 --timeout 55s
root      8701 {cpu1}  0.0  77504  2880 ?        R    14:23   0:29 stress-ng-matrix [run]
root      8702 {cpu2}  0.0  77504  2884 ?        R    14:23   0:29 stress-ng-matrix [run]
root      8760  {dd}  0.1  19360 18236 ?        {st}   14:23   0:00 dd if=/dev/zero of=/srv/data/restore.img bs=16M oflag=direct
root      8800  0.0  0.0   7060  2900 ?        R    14:23   0:00 ps aux
"""


def _ps_case(tmp_path, when, cpu1="98.7", cpu2="99.1", dd="0.2", st="Ds"):
    path = tmp_path / f"ps-{when.strftime('%H%M%S')}.txt"
    path.write_text(_PS.format(cpu1=cpu1, cpu2=cpu2, dd=dd, st=st))
    import os
    os.utime(path, (when.timestamp(), when.timestamp()))
    return sarsleuth.load(path, tz="UTC")


def _finding(detector, start, end):
    return Finding(detector=detector, title="t", severity="high", start=start, end=end, host=None)


def test_cpu_finding_names_the_processes_using_the_cpus(tmp_path):
    when = pd.Timestamp("2026-11-24 14:24:10", tz="UTC")
    case = _ps_case(tmp_path, when)
    f = _finding("cpu-saturation", when - pd.Timedelta(seconds=30), when + pd.Timedelta(seconds=20))
    attribute([f], case.sources)
    assert f.refs["responsible_names"] == ["stress-ng-matrix"]
    assert f.refs["responsible_pids"] == [8702, 8701]
    assert f.refs["responsible"] == ("stress-ng-matrix (2 processes: 99.1 % CPU, 98.7 % CPU) "
                                     "in ps at 14:24:10 (ps-142410.txt)")
    assert [e.line for e in f.evidence] == [7, 6]
    # a snapshot from before the finding says nothing about it
    late = _finding("cpu-saturation", when + pd.Timedelta(minutes=5), when + pd.Timedelta(minutes=6))
    attribute([late], case.sources)
    assert "responsible" not in late.refs


def test_disk_finding_names_the_processes_in_d_state(tmp_path):
    when = pd.Timestamp("2026-11-24 14:24:10", tz="UTC")
    f = _finding("disk-saturation", when - pd.Timedelta(seconds=10), when + pd.Timedelta(seconds=10))
    attribute([f], _ps_case(tmp_path, when).sources)
    assert f.refs["responsible_names"] == ["dd"] and f.refs["responsible_pids"] == [8760]
    g = _finding("disk-saturation", when - pd.Timedelta(seconds=10), when + pd.Timedelta(seconds=10))
    attribute([g], _ps_case(tmp_path / "..", when, st="S ").sources)
    # nobody waits on the disk: dd, a program known to move data, is named as such
    assert g.refs["responsible"].startswith("dd (PID 8760: 0.2 % CPU; none waiting in D state")


def test_idle_processes_are_not_named_for_the_cpu(tmp_path):
    when = pd.Timestamp("2026-11-24 14:24:10", tz="UTC")
    f = _finding("cpu-saturation", when - pd.Timedelta(seconds=30), when + pd.Timedelta(seconds=20))
    attribute([f], _ps_case(tmp_path, when, cpu1="3.0", cpu2="2.0").sources)
    assert "responsible" not in f.refs


def test_log_findings_are_joined_with_ps_rows_by_pid(tmp_path):
    """The kernel names a victim by its 15-character comm; ps shows the
    command it ran: joined by PID, whenever the snapshot was taken."""
    when = pd.Timestamp("2026-11-24 14:24:10", tz="UTC")
    case = _ps_case(tmp_path, when)
    kill = _finding("oom-kill", when + pd.Timedelta(minutes=2), when + pd.Timedelta(minutes=2))
    kill.refs["pids"] = [8760, 4242]
    attribute([kill], case.sources)
    assert kill.refs["pid_commands"] == {"8760": "dd if=/dev/zero of=/srv/data/restore.img bs=16M oflag=direct"}
    assert kill.evidence[-1].line == 8 and kill.evidence[-1].text.startswith("root      8760")
    alone = _finding("oom-kill", when, when)
    alone.refs["pids"] = [4242]
    attribute([alone], case.sources)
    assert "pid_commands" not in alone.refs


# ------------------------------------------------------- PSI from a bundle
def _bundle_with_pressure(tmp_path, io_lines: str) -> Path:
    root = tmp_path / "sosreport-stor-lab-04-2026-11-24-qwerty"
    for d in ("sos_commands/host", "sos_commands/date", "proc/pressure", "var/log"):
        (root / d).mkdir(parents=True)
    (root / "sos_commands" / "host" / "hostname").write_text("stor-lab-04\n")
    (root / "sos_commands" / "date" / "date").write_text("Tue Nov 24 14:25:01 UTC 2026\n")
    (root / "proc" / "pressure" / "io").write_text(io_lines)
    (root / "proc" / "pressure" / "cpu").write_text("some avg10=0.41 avg60=0.52 avg300=0.33 total=171227466\n"
                                                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    (root / "var" / "log" / "messages").write_text(
        "Nov 24 14:23:44 stor-lab-04 kernel: INFO: task touch:7196 blocked for more than 120 seconds.\n"
        "Nov 24 14:23:44 stor-lab-04 kernel:       Not tainted 6.1.0-27-amd64 #1 Debian 6.1.115-1\n")
    return root


def test_a_bundles_pressure_files_tell_what_stalled_before_it_was_made(tmp_path):
    """/proc/pressure/io of a sosreport made while writers were stuck:
    41 % of the last minute with some task waiting, 38 % with none able to
    run; the CPU's file shows a working host (half a per cent)."""
    root = _bundle_with_pressure(tmp_path, "some avg10=44.12 avg60=41.07 avg300=19.52 total=402934871\n"
                                           "full avg10=40.55 avg60=38.20 avg300=17.90 total=380155420\n")
    case = sarsleuth.load(root)
    (f,) = [f for f in case.findings if f.detector == "io-stall"]
    assert f.title == ("Tasks stalled on I/O 41.1 % of the last minute before the bundle was made (19.5 % of the "
                       "last 5 minutes; PSI some, no task could run 38.2 % of the last minute)")
    # when, in UTC, but not on this host's clock: nothing says its zone
    assert f.severity == "high" and f.end == pd.Timestamp("2026-11-24 14:25:01", tz="UTC") and not f.aligned
    assert [e.line for e in f.evidence] == [1, 2] and f.evidence[0].path.endswith("proc/pressure/io")
    assert not [f for f in case.findings if f.detector == "cpu-stall"]
    host = case.to_json()["hosts"][0]
    assert host["pressure"]["io"]["full"]["avg60"] == 38.2 and host["pressure"]["cpu"]["some"]["total_us"] == 171227466


def test_a_bundle_of_a_calm_host_has_no_stall(tmp_path):
    root = _bundle_with_pressure(tmp_path, "some avg10=0.90 avg60=1.22 avg300=0.75 total=102934871\n"
                                           "full avg10=0.40 avg60=0.61 avg300=0.35 total=80155420\n")
    assert not [f for f in sarsleuth.load(root).findings if f.detector.endswith("-stall")]


def test_a_bundles_stall_is_on_the_hosts_clock_when_its_zone_is_known(tmp_path):
    root = _bundle_with_pressure(tmp_path, "some avg10=44.12 avg60=41.07 avg300=19.52 total=402934871\n"
                                           "full avg10=40.55 avg60=38.20 avg300=17.90 total=380155420\n")
    (root / "etc").mkdir()
    (root / "etc" / "timezone").write_text("Europe/Berlin\n")
    case = sarsleuth.load(root)
    (f,) = [f for f in case.findings if f.detector == "io-stall"]
    assert f.aligned and f.end == pd.Timestamp("2026-11-24 15:25:01", tz="Europe/Berlin")
    (inc,) = [i for i in case.incidents if f in i.findings]
    assert inc.category == "io-saturation" and inc.start == pd.Timestamp("2026-11-24 15:24:01", tz="Europe/Berlin")


_PS_LOAD = """USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root      2150  0.0  0.0  10256  6896 ?        Ss   16:03   0:00 nginx: master process nginx -g daemon off;
www-data  2151 15.7  0.0  11988  4284 ?        R    16:03   0:05 nginx: worker process
www-data  2152 15.0  0.0  11988  4636 ?        R    16:03   0:05 nginx: worker process
root      2202 85.0  0.1 177272  4892 ?        Sl   16:04   0:12 wrk -t2 -c600 -d30s --timeout 3s --latency http://127.0.0.1:8080/
root      2230 28.6  0.0 438044  7004 ?        Ss   16:04   0:05 fio --name=reindex --rw=randrw --direct=1 --ioengine=libaio
"""


def test_cpus_a_load_generator_on_the_host_kept_busy_are_the_tests_doing(tmp_path):
    when = pd.Timestamp("2026-11-24 16:04:16", tz="UTC")
    path = tmp_path / "ps-160416.txt"
    path.write_text(_PS_LOAD)
    import os
    os.utime(path, (when.timestamp(), when.timestamp()))
    sources = sarsleuth.load(path, tz="UTC").sources
    wrk = {"tool": "wrk", "command": "wrk -t2 -c600 -d30s --timeout 3s --latency http://127.0.0.1:8080/",
           "start": when - pd.Timedelta(seconds=15), "end": when + pd.Timedelta(seconds=15)}
    f = _finding("cpu-saturation", when - pd.Timedelta(seconds=14), when + pd.Timedelta(seconds=15))
    attribute([f], sources, [wrk])
    assert f.refs["responsible_names"][:2] == ["wrk", "nginx"] and f.metrics["loadtest_driven"] == 1
    assert "the load test kept the CPUs busy" in f.explanation
    # the same processes with no load test running then: the CPUs are the host's own problem
    g = _finding("cpu-saturation", when - pd.Timedelta(seconds=14), when + pd.Timedelta(seconds=15))
    attribute([g], sources, [{**wrk, "start": when - pd.Timedelta(hours=2), "end": when - pd.Timedelta(hours=1)}])
    assert "loadtest_driven" not in g.metrics
    # a saturated disk with nothing in D state: the program known to move data is named, said so
    d = _finding("disk-saturation", when - pd.Timedelta(seconds=14), when + pd.Timedelta(seconds=15))
    attribute([d], sources)
    assert d.refs["responsible_names"] == ["fio"]
    assert "none waiting in D state: a program known to move data" in d.refs["responsible"]


# ------------------------------------------------------------- a fork storm
LAB_CASES = Path(__file__).resolve().parent.parent / "lab" / "cases"


def test_a_fork_storm_is_told_as_the_process_limit_with_the_busy_cpus_its_effect():
    """stress-ng --fork in a cgroup with pids.max 64, recorded: the kernel
    wrote one 'fork rejected by pids controller' line (it logs a cgroup's
    first refusal only) while the forks kept both CPUs busy. One incident,
    the process limit its cause, the CPUs and the load its effects; no
    count of refusals the kernel never gave."""
    case = sarsleuth.load(LAB_CASES / "pids-forker-cgroup" / "jobs-lab-01.tar.xz")
    assert len(case.incidents) == 1
    top = case.incidents[0]
    assert top.category == "pid-exhaustion"
    roles = {f.detector: f.role for f in top.findings}
    assert roles["fork-rejected"] == "cause"
    assert roles["cpu-saturation"] == "effect" and roles["load-spike"] == "effect"
    refused = next(f for f in top.findings if f.detector == "fork-rejected")
    assert refused.title.startswith("New processes or threads refused: cgroup /lab-jobs at its pids.max (sar -q "
                                    "plist-sz 179 at ")
    assert refused.title.endswith("; the kernel logs only a cgroup's first refusal")
    assert "1 x" not in refused.title


def test_upstreams_nginx_marked_failed_after_timeouts_are_the_timeouts_effect():
    """ab against two backends that answer in 2.5 s behind a 2 s
    proxy_read_timeout, recorded: one timeout per server (max_fails=1)
    and nginx answered the other 599 requests 'no live upstreams' without
    trying them. The timeouts are the cause, the empty group their effect,
    and the advice says how max_fails turned two slow answers into 599
    errors; no advice to bring back a backend that never stopped."""
    case = sarsleuth.load(LAB_CASES / "upstream-slow-ab" / "billing-lab-01.tar.xz")
    top = case.incidents[0]
    roles = {f.detector: f.role for f in top.findings}
    # ab's own connections, opened and accepted on the host, are the load that drove it: context
    assert roles == {"upstream-timeout": "cause", "upstream-down": "effect", "loadtest-errors": "effect",
                     "connection-surge": "context"}
    cause = next(f for f in top.findings if f.role == "cause")
    assert cause.title == "2 x upstream timeout over 2 s (http://127.0.0.1:9001: 1, http://127.0.0.1:9002: 1)"
    down = next(f for f in top.findings if f.detector == "upstream-down")
    assert down.metrics["no_live"] == 599 and down.metrics["connect_failures"] == 0
    advice = " ".join(top.recommendations)
    assert "`max_fails`" in advice
    assert "Bring back the backend" not in advice


def test_cpus_busy_within_a_local_load_test_without_ps_are_its_doing():
    """wrk against the host's own nginx for 40 s while two workers abort,
    recorded: no ps snapshot fell inside the run, but the CPUs were busy
    exactly while wrk ran against 127.0.0.1. One incident, the crashes,
    with the busy CPUs as its context, not a second incident."""
    case = sarsleuth.load(LAB_CASES / "nginx-abrt-under-load" / "edge-lab-04.tar.xz")
    assert [i.category for i in case.incidents] == ["worker-crash"]
    cpu = next(f for f in case.incidents[0].findings if f.detector == "cpu-saturation")
    assert cpu.role == "context" and cpu.metrics["loadtest_driven"] == 1
    assert cpu.refs["driven_by"] == "wrk -t2 -c100 -d40s --latency http://127.0.0.1:8080/"
    assert "No ps snapshot was taken while it lasted" in cpu.explanation


@pytest.mark.parametrize("url, host, local", [
    ("http://127.0.0.1:8080/", "web1", True), ("http://[::1]/x", "web1", True),
    ("https://localhost/", "web1", True), ("http://web1:80/", "web1", True),
    ("http://10.0.0.5/", "web1", False), ("example.org", "web1", False), ("", "web1", False)])
def test_a_load_test_targets_its_own_host_by_loopback_or_name(url, host, local):
    from sarsleuth.analysis.load_tests import targets_host
    assert targets_host(url, host) is local


def test_cpus_burnt_by_the_processes_the_oom_killer_took_are_one_incident_with_the_kills():
    """stress-ng bigheap workers in a 400 MB cgroup, recorded: they kept
    both CPUs busy while the OOM killer took them one after another. The
    busiest processes of the ps snapshot are PIDs the kill lines name:
    one incident, not a second "CPU saturation"."""
    case = sarsleuth.load(LAB_CASES / "cgroup-oom-bigheap" / "worker-lab-01.tar.xz")
    assert [i.category for i in case.incidents] == ["memory-exhaustion"]
    cpu = next(f for f in case.incidents[0].findings if f.detector == "cpu-saturation")
    kill = next(f for f in case.incidents[0].findings if f.detector == "oom-kill" and f.refs.get("pids"))
    assert set(cpu.refs["responsible_pids"]) & set(kill.refs["pids"])


def test_a_slow_backends_listen_queue_overflowing_is_the_slowness_effect():
    """wrk through nginx to a backend slower than proxy_read_timeout,
    recorded on Linux 6.x: the kernel printed the backend's listener as
    address:port ('Possible SYN flooding on port 127.0.0.1:9001'). Read
    whole, and told as an effect of the upstream timeouts, not as a
    'socket table exhaustion' of its own."""
    case = sarsleuth.load(LAB_CASES / "upstream-slow-backend" / "search-lab-01.tar.xz")
    assert len(case.incidents) == 1
    roles = {f.detector: f.role for f in case.incidents[0].findings}
    assert roles["upstream-timeout"] == "cause" and roles["syn-flood"] == "effect"
    syn = next(f for f in case.incidents[0].findings if f.detector == "syn-flood")
    assert syn.title == "1 x possible SYN flooding on port 127.0.0.1:9001"


def test_the_web07_sample_tells_the_local_traffic_as_one_incident():
    """The web07 sosreport: CPUs busy from the first sample (work outside
    the host's namespace: no process of its ps), then two ab runs against
    its nginx from the host itself fill the TIME_WAIT table to its cap
    (4,096, the host's sysctl) and run nginx out of its 256
    worker_connections. One incident, both limits in it, the surge of
    connections that filled them as what drove it; sos is named nowhere."""
    case = sarsleuth.load(SAMPLES / "bundles" / "sosreport-web07-2026-11-23-pvrqaru.tar.xz")
    (inc,) = case.incidents
    roles = {f.detector: f.role for f in inc.findings}
    assert inc.category == "socket-exhaustion" and inc.cause == "tcp-timewait"
    assert roles["worker-connections-exhausted"] == "effect"
    assert roles["connection-surge"] == "context" and roles["cpu-saturation"] == "context"
    surge = next(f for f in inc.findings if f.detector == "connection-surge")
    assert surge.metrics["peak_accepted_per_s"] == 11818.0 and surge.metrics["local_clients"] == 1
    told = " ".join([inc.title, inc.summary, *inc.recommendations,
                     *(f.title + str((f.refs or {}).get("responsible", "")) for f in inc.findings)])
    assert "sos" not in told


def test_a_run_without_a_time_is_not_told_as_another_run_s_effect():
    """Field report 001: two ab runs pasted whole. The 2 MB run fills the
    link (placed where sar shows the server sending at its rate); the
    50 KB run's long tail has no time: nothing ties it to the other run,
    so it is told beside that incident, as context, never as its effect.
    A tail in the same run's report would be its effect."""
    case = sarsleuth.load(SAMPLES / "image-service-ab")
    (inc,) = case.incidents
    roles = {f.detector: f.role for f in inc.findings}
    assert roles == {"loadtest-link-saturation": "cause", "nic-saturation": "effect",
                     "loadtest-tail-latency": "context"}
    assert "another run, which no time ties to this incident" in " ".join(inc.story["context"])


#: PHP-FPM's pool children killed (its own log line to syslog), systemd
#: restarting the unit, nginx finding the pool's socket gone meanwhile
FPM_KILLED = """\
Nov 24 14:02:10 app2 php-fpm8.2[811]: [WARNING] [pool www] child 2301 exited on signal 9 (SIGKILL) after 312.114532 seconds from start
Nov 24 14:02:10 app2 php-fpm8.2[811]: [WARNING] [pool www] child 2302 exited on signal 9 (SIGKILL) after 311.902110 seconds from start
Nov 24 14:02:11 app2 systemd[1]: php8.2-fpm.service: Main process exited, code=killed, status=9/KILL
Nov 24 14:02:11 app2 systemd[1]: php8.2-fpm.service: Failed with result 'signal'.
Nov 24 14:02:16 app2 systemd[1]: php8.2-fpm.service: Scheduled restart job, restart counter is at 1.
Nov 24 14:02:16 app2 systemd[1]: Stopped php8.2-fpm.service - The PHP 8.2 FastCGI Process Manager.
Nov 24 14:02:16 app2 systemd[1]: Starting php8.2-fpm.service - The PHP 8.2 FastCGI Process Manager...
Nov 24 14:02:17 app2 systemd[1]: Started php8.2-fpm.service - The PHP 8.2 FastCGI Process Manager.
"""


def _socket_gone(clock: str, n: int) -> str:
    return (f"2026/11/24 {clock} [crit] 1201#1201: *{88121 + n} connect() to unix:/run/php/php8.2-fpm.sock failed "
            "(2: No such file or directory) while connecting to upstream, client: 10.0.4.17, server: app2, request: "
            "\"GET /cart HTTP/1.1\", upstream: \"fastcgi://unix:/run/php/php8.2-fpm.sock:\", host: \"app2\"")


@pytest.mark.parametrize("clocks, incidents", [
    # nginx's 502s while the socket is missing: one cause across the services, one incident
    (["14:02:12", "14:02:13", "14:02:15"], 1),
    # the same lines 40 minutes later, long after the pool came back: nothing ties them to the kills
    (["14:42:12", "14:42:13", "14:42:15"], 2),
])
def test_one_cause_across_services_is_one_incident(tmp_path, clocks, incidents):
    (tmp_path / "messages").write_text(FPM_KILLED)
    (tmp_path / "error.log").write_text("\n".join(_socket_gone(c, i) for i, c in enumerate(clocks)) + "\n")
    case = sarsleuth.load(tmp_path, year=2026)
    assert len(case.incidents) == incidents
    top = case.incidents[0]
    assert (top.category, top.cause) == ("worker-crash", "worker-signal-exit")
    roles = {f.detector: f.role for f in top.findings}
    assert roles["service-failure"] == "effect"
    assert ("upstream-down" in roles) is (incidents == 1)


def test_a_load_jump_that_leaves_most_cpus_idle_is_not_saturation(corpus, tmp_path):
    """A real Fedora 39 paste (sar -q, 24 CPUs): the load average goes from
    0.20 to 2.71 in ten minutes with one task blocked. That is more work
    started, with 21 CPUs idle: on the timeline, not an incident. Near
    miss: the same rows on a 2-CPU host are a load past the CPU count."""
    paste = corpus / "sar-text" / "sarstats--f39_sar02"
    case = sarsleuth.load(paste)
    assert case.incidents == []
    (jump,) = [f for f in case.findings if f.detector == "load-spike"]
    assert jump.metrics["peak_ldavg_1"] == 2.71 and jump.metrics["ncpu"] == 24
    assert jump.metrics["load_per_cpu"] == pytest.approx(2.71 / 24)
    assert jump.metrics["peak_blocked"] == 1 and jump.metrics["blocked_over_least"] == pytest.approx(1 / 12)
    small = tmp_path / "sar02-2cpu"
    small.write_text(paste.read_text().replace("(24 CPU)", "(2 CPU)"))
    (inc,) = sarsleuth.load(small).incidents
    assert inc.category == "cpu-saturation" and inc.cause == "load-spike"
    assert inc.findings[0].metrics["load_per_cpu"] == pytest.approx(2.71 / 2)


def test_a_load_jump_below_the_cpu_count_is_still_an_effect(samples):
    """Report 002: the load going from 0.80 to 4.02 on 12 CPUs as the
    socket tables overflowed stays the overflow's effect."""
    case = sarsleuth.load(*sorted((samples / "tengine-720k").iterdir()))
    (inc,) = case.incidents
    roles = {f.detector: f.role for f in inc.findings}
    assert inc.cause == "tcp-timewait" and roles["load-spike"] == "effect"
    load = next(f for f in inc.findings if f.detector == "load-spike")
    assert load.metrics["load_per_cpu"] == pytest.approx(4.02 / 12)

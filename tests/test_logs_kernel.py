"""Kernel reports across kernel generations, from dmesg dumps and syslog copies."""
from __future__ import annotations

import pandas as pd

from sarsleuth.inputs.parsers import parse, sniff
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.logs.dmesg import read_events


def events(corpus, name, **opts):
    return parse(corpus / "logs" / name, options=ParseOptions(**opts)).events


def test_every_dmesg_file_sniffs_as_dmesg(corpus):
    names = [p.name for p in (corpus / "logs").glob("dmesg-*.log")]
    names += ["messages-pagealloc-dot-format-2.6-c.log", "messages-segfault-rip-format-2.6-x86_64.log",
              "kernel-tcp-timewait-overflow-openvz-ct0.log"]
    syslog_pastes = {"dmesg-pagealloc-colon-format-3.x-4.x-a.log", "dmesg-pagealloc-colon-format-3.x-4.x-f.log"}
    assert len(names) > 20
    for name in names:
        expected = "syslog" if name in syslog_pastes else "dmesg"
        assert sniff(corpus / "logs" / name)[0] == expected, name
        src = parse(corpus / "logs" / name)
        assert src.records > 0 and src.kind == expected


def test_apache_error_log_is_not_claimed(corpus):
    kind, reason = sniff(corpus / "logs" / "httpd-error-2005-loghub-apache2k.log")
    assert kind is None and reason == "content matches no known format"


def test_oom_rhel6_2_6_32_without_stamps(corpus):
    ev = events(corpus, "dmesg-oom-nginx-rhel6-2.6.32.log")
    assert len(ev) == 1
    row = ev.iloc[0]
    assert (row["kind"], row["process"], row["pid"]) == ("oom-invoked", "nginx", 1535)
    assert pd.isna(row["timestamp"]) and not row["aligned"]
    assert row["detail"].splitlines()[-1] == "CPU    0: hi:  186, btch:  31 usd:   0"
    assert "Mem-Info:" in row["detail"]


def test_oom_5_4_sysrq_full_report(corpus):
    ev = events(corpus, "dmesg-oom-sysrq-5.4-hotsos.log")
    assert list(ev["kind"]) == ["oom-invoked", "oom-kill"]
    inv, kill = ev.iloc[0], ev.iloc[1]
    assert (inv["process"], inv["pid"], inv["uptime"], inv["line"]) == ("kworker/0:0", 17681, 27742.909073, 1)
    assert "Tasks state" in inv["detail"] or "[  pid  ]" in inv["detail"]
    assert (kill["pid"], kill["process"]) == (955, "gnome-shell")
    assert kill["message"].startswith("Out of memory: Killed process 955 (gnome-shell)")
    assert "anon-rss:77868kB" in kill["message"]
    assert kill["detail"].startswith("oom-kill:constraint=CONSTRAINT_NONE")


def test_oom_memcg_5_0_kills_a_child_not_the_chosen_task(corpus):
    ev = events(corpus, "kernlog-oom-memcg-nginx-5.0-aws.log", year=2019)
    kill = ev[ev["kind"] == "oom-kill"]
    assert len(kill) == 1
    row = kill.iloc[0]
    assert (row["pid"], row["process"], row["line"]) == (22964, "nginx", 6)
    assert row["message"].startswith("Killed process 22964 (nginx)") and "anon-rss:844kB" in row["message"]
    lines = row["detail"].splitlines()
    assert lines[0].startswith("oom-kill:constraint=CONSTRAINT_MEMCG")
    assert lines[1] == "Memory cgroup out of memory: Kill process 22232 (nginx) score 1182 or sacrifice child"
    assert lines[-1].startswith("oom_reaper: reaped process 22964 (nginx)")
    inv = ev[ev["kind"] == "oom-invoked"].iloc[0]
    assert (inv["pid"], inv["process"], inv["timestamp"]) == (22232, "nginx", pd.Timestamp("2019-11-15 06:46:39"))


def test_oom_dmesg_T_score_or_sacrifice_child(corpus):
    ev = events(corpus, "dmesg-T-oom-nginx-score-sacrifice-child.log")
    assert len(ev) == 10 and (ev["kind"] == "oom-kill").all()
    assert list(ev["pid"][:3]) == [23386, 23381, 23465] and set(ev["process"]) == {"nginx"}
    assert ev["timestamp"].iloc[0] == pd.Timestamp("2017-01-21 20:25:45")
    assert ev["timestamp"].iloc[-1] == pd.Timestamp("2017-03-16 23:04:33")
    assert ev["aligned"].all()


def test_oom_4_9_and_6_2_invoker_from_header(corpus):
    ev49 = events(corpus, "dmesg-oom-nginx-4.9-debian.log")
    assert list(ev49["kind"]) == ["oom-invoked"] and ev49.iloc[0]["pid"] == 13918
    assert "16170643" in ev49.iloc[0]["detail"]              # the victim's rss row of the task table
    ev62 = events(corpus, "dmesg-oom-nginx-6.2-ubuntu.log")
    assert (ev62.iloc[0]["pid"], ev62.iloc[0]["uptime"]) == (604, 47082.653915)
    assert ev62.iloc[0]["detail"].splitlines()[-1].strip() == "asm_exc_page_fault+0x27/0x30"


def test_page_allocation_failure_dot_and_colon_forms(corpus):
    dot = events(corpus, "messages-pagealloc-dot-format-2.6-c.log").iloc[0]
    assert (dot["process"], dot["pid"], dot["uptime"], dot["line"]) == ("swapper", 0, 49212.459660, 7)
    assert dot["message"] == "swapper: page allocation failure. order:0, mode:0x4020"
    dot_router = events(corpus, "messages-pagealloc-dot-format-2.6-b.log", year=2012).iloc[0]
    assert dot_router["timestamp"] == pd.Timestamp("2012-05-18 14:56:06") and dot_router["process"] == "swapper"
    assert dot_router["detail"].splitlines()[-1] == "Free swap:        69960kB"
    colon = events(corpus, "dmesg-pagealloc-colon-format-3.x-4.x-b.log").iloc[0]
    assert (colon["process"], colon["pid"], colon["uptime"]) == ("tcpdump", 7812, 2313169.749777)
    modern = events(corpus, "dmesg-T-pagealloc-nodemask-5.4-fedora.log").iloc[0]
    assert (modern["process"], modern["pid"]) == ("kworker/u16:3", 1333536)
    assert modern["timestamp"] == pd.Timestamp("2020-04-20 15:08:07")
    xtensa = events(corpus, "dmesg-pagealloc-gfp-atomic-6.8-xtensa.log").iloc[0]
    assert (xtensa["process"], xtensa["pid"]) == ("irq/5-600c0004.", 29)


def test_warn_alloc_suppressed_count(corpus):
    ev = events(corpus, "dmesg-pagealloc-colon-format-3.x-4.x-e.log")
    assert len(ev) == 1 and ev.iloc[0]["count"] == 22440 and ev.iloc[0]["line"] == 2


def test_interleaved_cpus_do_not_merge_into_one(corpus):
    ev = events(corpus, "dmesg-pagealloc-interleaved-cpus-4.9-debian.log")
    assert list(ev["kind"]) == ["page-allocation-failure"] * 3 and list(ev["line"]) == [1, 2, 7]


def test_segfault_ip_and_rip_forms(corpus):
    ev = events(corpus, "messages-segfault-ip-format-variants.log", year=2017)
    assert len(ev) == 9 and (ev["kind"] == "segfault").all()
    assert list(ev["pid"][:4]) == [1963, 1610, 48094, 2468] and set(ev["process"]) == {"nginx"}
    rip = events(corpus, "messages-segfault-rip-format-2.6-x86_64.log")
    assert list(rip["pid"]) == [16775, 1192] and list(rip["process"]) == ["cc1", "logsave"]
    # the mail client wrapped the first line after "rsp ": the tail is put back
    assert rip.iloc[0]["message"].endswith("rsp 00007fffffaaf0a0 error 4")
    assert rip.iloc[1]["uptime"] == 150.624672


def test_seed_003_segfault_rip_line(tmp_path):
    path = tmp_path / "dmesg"
    path.write_text("nginx[24721]: segfault at 0000000000000001 rip 0000000000000001 rsp 00007ffff58d8180 error 14\n"
                    "nginx[1729]: segfault at 0000000000000190 rip 00000000004c2d27 rsp 00007ffff58d8340 error 4\n"
                    "nginx[22002]: segfault at ffffffffffffffff rip 000000001c959744 rsp 00007fff43caac18 error 6\n")
    assert sniff(path)[0] == "dmesg"
    ev = parse(path).events
    assert list(ev["pid"]) == [24721, 1729, 22002] and set(ev["process"]) == {"nginx"}
    assert (ev["kind"] == "segfault").all() and ev["timestamp"].isna().all()


def test_hung_task_old_and_new(corpus):
    found = events(corpus, "kernlog-hung-task-5.15-hotsos.log", year=2023)
    assert list(found["kind"])[:2] == ["mtu-drops", "hung-task"]     # an overlay's drop comes first
    new = found[found["kind"] == "hung-task"].iloc[0]
    assert (new["process"], new["pid"], new["line"]) == ("df", 1177107, 2)
    assert new["timestamp"] == pd.Timestamp("2023-02-04 00:07:13")
    assert new["detail"].splitlines()[-1].startswith("RIP: 0033:")
    old = events(corpus, "kernlog-hung-task-4.4-fanotify-hotsos.log", year=2019).iloc[0]
    assert (old["process"], old["pid"], old["uptime"]) == ("controller", 1428, 1920.259590)


def test_network_kernel_families(corpus):
    syn = events(corpus, "dmesg-syn-flooding-request-sock-4.4.log")
    assert len(syn) == 9 and (syn["kind"] == "syn-flood").all() and syn["uptime"].iloc[0] == 375852.589465
    orph = events(corpus, "dmesg-tcp-too-many-orphaned-ratelimit.log")
    # eight identical lines within a second of uptime each: one row; net_ratelimit printed after the burst
    assert len(orph) == 1 and (orph["repeats"].iloc[0], orph["count"].iloc[0]) == (8, 7 + 281)
    mptcp = events(corpus, "dmesg-tcp-orphans-mptcp-oom-5.4.log")
    assert list(mptcp["repeats"]) == [8, 1, 1] and list(mptcp["count"]) == [8, 274, 1]
    ct0 = events(corpus, "kernel-tcp-timewait-overflow-openvz-ct0.log")
    assert list(ct0["kind"]) == ["tcp-tw-bucket-overflow"]
    bond = events(corpus, "dmesg-bonding-link-status-down-4.12.log")
    assert bond["repeats"].sum() == 9 and (bond["kind"] == "nic-link-down").all()
    oops = events(corpus, "dmesg-oops-rhel7-3.10-insights.log")
    assert len(oops) == 1 and oops.iloc[0]["pid"] == 952 and oops.iloc[0]["process"] == "systemd-udevd"
    assert "Oops: 0000 [#1] SMP" in oops.iloc[0]["detail"]


def test_dmesg_volume_by_uptime_minute(corpus):
    src = read_events(corpus / "logs" / "dmesg-ubuntu-5.4-hotsos-compute4.log")
    vol = src.meta["volume"]
    assert src.meta["volume_unit"] == "uptime-minute"
    assert vol.index.min() == 4301 // 60 and vol.index.max() == 63667 // 60
    assert vol.sum() == src.records == 833
    assert src.host is None and src.meta["uptime_only"]


def test_rhel6_dmesg_without_stamps(corpus):
    src = parse(corpus / "logs" / "dmesg-rhel6-no-timestamps-insights.log")
    assert src.records == 17 and len(src.events) == 0
    assert src.meta["unstamped_lines"] == 16 and src.meta["volume"].sum() == 1


def test_lines_systemd_wrote_to_the_kernel_log_are_systemds(tmp_path):
    path = tmp_path / "dmesg"
    path.write_text(
        "[  912.100231] EXT4-fs error (device vda1): ext4_lookup:1855: inode #1572866: comm rsyslogd: deleted inode\n"
        "[  913.552120] systemd[1]: rsyslog.service: Main process exited, code=dumped, status=6/ABRT\n"
        "[  913.552871] systemd[1]: rsyslog.service: Failed with result 'core-dump'.\n"
        "[  913.901114] systemd-journald[412]: Received SIGTERM from PID 1 (systemd).\n"
        "[  914.000120] rsyslogd[1893]: segfault at 0 ip 000055d0c8a1b2c4 sp 00007ffd1c9e8f10 error 4\n")
    ev = parse(path).events.set_index("line")
    assert (ev.loc[2, "process"], ev.loc[2, "pid"], ev.loc[2, "kind"]) == ("systemd", 1, "service-exit")
    from sarsleuth.inputs.parsers.logs.dmesg import parse_line
    info = parse_line("[  913.901114] systemd-journald[412]: Received SIGTERM from PID 1 (systemd).")
    assert (info.tag, info.pid, info.message) == ("systemd-journald", 412, "Received SIGTERM from PID 1 (systemd).")
    # near miss: the kernel's own "comm[pid]: segfault" names the program that crashed
    assert (ev.loc[5, "process"], ev.loc[5, "pid"], ev.loc[5, "kind"]) == ("rsyslogd", 1893, "segfault")
    import sarsleuth
    titles = [f.title for f in sarsleuth.load(path).findings if f.detector == "service-failure"]
    assert titles == ["rsyslog.service failed 1 x (result 'core-dump', status=6/ABRT)"]


def test_a_link_that_flaps_all_night_is_one_incident(tmp_path):
    path = tmp_path / "dmesg"
    downs = ["Tue Mar  4 22:41:07 2025", "Tue Mar  4 23:58:40 2025", "Wed Mar  5 01:12:03 2025",
             "Wed Mar  5 03:30:55 2025"]
    lines = []
    for stamp in downs:
        lines += [f"[{stamp}] igb 0000:03:00.1 eno2: igb: eno2 NIC Link is Down",
                  f"[{stamp[:-7]}{int(stamp[-7:-5]):02d}:{stamp[-4:]}] igb 0000:03:00.1 eno2: igb: eno2 NIC Link is Up "
                  "1000 Mbps Full Duplex, Flow Control: RX"]
    lines.append("[Wed Mar  5 06:02:19 2025] igb 0000:03:00.0 eno1: igb: eno1 NIC Link is Down")
    path.write_text("\n".join(lines) + "\n")
    import sarsleuth
    case = sarsleuth.load(path)
    flaps = [f for f in case.findings if "eno2" in f.title]
    assert len(flaps) == 4 and {f.severity for f in flaps} == {"high"}
    assert flaps[2].title == ("link down on eno2, 3 of 4 times from 2025-03-04 22:41:07 to 2025-03-05 03:30:55: "
                              "the link flaps")
    first, other = case.incidents
    assert len(first.findings) == 4 and str(first.start) == "2025-03-04 22:41:07" and str(first.end) == "2025-03-05 03:30:55"
    # told as one flapping link, its times over two days with their dates
    assert first.title == ("Network failure: link down on eno2 4 times from 2025-03-04 22:41:07 to 2025-03-05 "
                           "03:30:55: the link flaps")
    assert [r["clock"] for r in first.story["timeline"]][:2] == ["2025-03-04 22:41:07", "2025-03-04 23:58:40"]
    # near miss: another interface down once is its own, medium, incident
    assert other.severity == "medium" and other.findings[0].title == "1 link-down event(s) on eno1"


def test_a_config_file_naming_an_interface_is_no_kernel_log(tmp_path):
    conf = tmp_path / "ifcfg-eth0"
    conf.write_text("DEVICE=eth0\nBOOTPROTO=none\nONBOOT=yes\nIPADDR=10.0.4.17\nNETMASK=255.255.255.0\n"
                    "GATEWAY=10.0.4.1\nDNS1=10.0.4.2\nUSERCTL=no\nNM_CONTROLLED=no\nTYPE=Ethernet\n")
    assert sniff(conf)[0] is None
    # near miss: a stamp-less kernel dump (printk.time=0) with a quarter of its lines in the kernel's words
    dump = tmp_path / "dmesg"
    dump.write_text("Initializing cgroup subsys cpuset\nInitializing cgroup subsys cpu\n"
                    "Linux version 2.6.32-431.el6.x86_64 (mockbuild@x86-023.build.eng.bos.redhat.com)\n"
                    "Command line: ro root=/dev/mapper/vg-root rd_NO_LUKS\nKERNEL supported cpus:\n"
                    "e1000: eth0 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: RX\n"
                    "EXT4-fs (dm-0): mounted filesystem with ordered data mode. Opts:\n"
                    "Adding 4128760k swap on /dev/mapper/vg-swap.  Priority:-1 extents:1 across:4128760k\n")
    assert sniff(dump)[0] == "dmesg"


def test_short_settings_and_a_bare_date_are_no_logs(tmp_path):
    """Found walking a host's tree: a traffic-shaping example of five
    settings naming eth0 (one line in five in the kernel's words), and
    prelink's record of a run, one `date` line whose zone is no host."""
    cbq = tmp_path / "cbq-0000.example"
    cbq.write_text("DEVICE=eth0,10Mbit,1Mbit\nRATE=128Kbit\nWEIGHT=10Kbit\nPRIO=5\nRULE=192.168.1.0/24\n")
    assert sniff(cbq)[0] is None
    ran = tmp_path / "full"
    ran.write_text("Wed Dec 28 05:42:09 CST 2016\n")
    assert sniff(ran)[0] is None
    # near miss: dracut's log, the same stamp with a message after it, is a log
    dracut = tmp_path / "dracut.log"
    dracut.write_text("Mon Nov 28 21:17:40 CST 2016 Info: Executing: /sbin/dracut -f\n"
                      "Mon Nov 28 21:17:41 CST 2016 Info: *** Including module: bash ***\n")
    assert sniff(dracut)[0] == "syslog"

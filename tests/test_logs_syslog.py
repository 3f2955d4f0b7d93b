"""syslog parsing: corpus files, the field report's /var/log/messages, stamps and years."""
from __future__ import annotations

import gzip
import os

import pandas as pd
import pytest

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers import parse, registry, sniff
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.logs.syslog import parse_line, read_events

# /var/log/messages of the 10GbE nginx proxy in field report 000 (kernel 2.6.32-358.el6)
SEED_000 = """\
May  6 15:04:12 Cangke_107_176 nginx: worker 8888 serving 26MB image
May  6 15:04:13 Cangke_107_176 kernel: nginx: page allocation failure. order:0, mode:0x20
May  6 15:04:13 Cangke_107_176 kernel: Pid: 8888, comm: nginx Not tainted 2.6.32-358.el6.x86_64 #1
May  6 15:04:13 Cangke_107_176 kernel: Call Trace:
May  6 15:04:13 Cangke_107_176 kernel: <IRQ>  [<ffffffff8112c127>] ? __alloc_pages_nodemask+0x757/0x8d0
May  6 15:04:13 Cangke_107_176 kernel: [<ffffffff811669d2>] ? kmem_getpages+0x62/0x170
May  6 15:04:13 Cangke_107_176 kernel: [<ffffffffa0139aa8>] ? bnx2x_rx_int+0x228/0x1530 [bnx2x]
May  6 15:04:13 Cangke_107_176 kernel: [<ffffffffa013ae5b>] ? bnx2x_poll+0xab/0x2e0 [bnx2x]
May  6 15:04:13 Cangke_107_176 kernel: [<ffffffff8144cd43>] ? net_rx_action+0x103/0x2f0
May  6 15:04:13 Cangke_107_176 kernel: [<ffffffff81076fb1>] ? __do_softirq+0xc1/0x1e0
May  6 15:04:13 Cangke_107_176 kernel: <EOI>  [<ffffffff8100de05>] ? do_softirq+0x65/0xa0
May  6 15:04:13 Cangke_107_176 kernel: [<ffffffff8100b072>] ? system_call_fastpath+0x16/0x1b
""" + "May  6 15:04:13 Cangke_107_176 kernel: bnx2x: [bnx2x_alloc_rx_sge:420(em2)]Can\u2019t alloc sge\n" * 7


def write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    if mode == "w":
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


def test_seed_000_page_allocation_failure_and_sge(tmp_path):
    path = write(tmp_path, "messages", SEED_000)
    assert sniff(path)[0] == "syslog"
    src = parse(path, options=ParseOptions(year=2014))
    ev = src.events
    assert src.host == "Cangke_107_176"
    assert src.records == 19
    assert list(ev["kind"]) == ["page-allocation-failure", "nic-rx-alloc-failure"]
    first = ev.iloc[0]
    assert first["timestamp"] == pd.Timestamp("2014-05-06 15:04:13")
    assert first["message"] == "nginx: page allocation failure. order:0, mode:0x20"
    assert (first["process"], first["pid"], first["line"]) == ("nginx", 8888, 2)
    assert "bnx2x_rx_int+0x228/0x1530" in first["detail"]
    assert first["detail"].splitlines()[0].startswith("Pid: 8888, comm: nginx")
    assert len(first["detail"].splitlines()) == 10
    sge = ev[ev["kind"] == "nic-rx-alloc-failure"].iloc[0]
    # seven identical lines of one second (lines 13 to 19): one row that stands for them
    assert (sge["line"], sge["repeats"], sge["count"], sge["repeat_span"], sge["per_minute"]) == (13, 7, 7, 0.0, (7,))
    assert sge["message"] == "bnx2x: [bnx2x_alloc_rx_sge:420(em2)]Can\u2019t alloc sge"
    assert sge["timestamp"] == pd.Timestamp("2014-05-06 15:04:13")
    assert src.meta["year_from"] == "option"
    vol = src.meta["volume"]
    assert vol.to_dict() == {pd.Timestamp("2014-05-06 15:04"): 19}


def test_seed_000_pasted_with_blank_lines(tmp_path):
    """The report pasted into a blog has a blank line after every line."""
    path = write(tmp_path, "messages", SEED_000.replace("\n", "\n\n"))
    ev = parse(path, options=ParseOptions(year=2014)).events
    assert ev.groupby("kind")["repeats"].sum().to_dict() == {"nic-rx-alloc-failure": 7, "page-allocation-failure": 1}
    assert ev.iloc[0]["pid"] == 8888 and "bnx2x_poll" in ev.iloc[0]["detail"]


def test_corpus_syslog_files_sniff_and_parse(corpus):
    logs = corpus / "logs"
    expected = {
        "kernlog-ubuntu-5.4-two-boots-hotsos-compute4.log": ("compute4", 2831, {"kernel-boot": 2, "nic-link-up": 14}),
        "messages-2.6.5-fedora-loghub-linux2k.log": ("combo", 2000, {"kernel-boot": 1}),
        "messages-two-hosts-unordered-insights.log": ("lxc-rhel68-sat56", 9, {}),
        "syslog-openwrt-tcp-orphaned-kern-info.log": (None, 10, {"socket-memory": 10}),
        "syslog-nic-link-down-igb-hires-timestamps.log": ("str-s6100-acs-4", 5, {"nic-link-down": 1}),
        "messages-pagealloc-order0-rhel7-3.10.log": ("sm21-r22.pun.seagate.com", 12, {"page-allocation-failure": 2}),
        "kernlog-nf-conntrack-double-prefix-5.x-hotsos.log": ("compute4", 1, {"conntrack-full": 1}),
    }
    for name, (host, records, kinds) in expected.items():
        assert sniff(logs / name)[0] == "syslog", name
        src = parse(logs / name)
        assert src.kind == "syslog" and src.host == host and src.records == records, name
        assert src.events.groupby("kind")["repeats"].sum().to_dict() == kinds, name


def test_loghub_messages_year_rollover_free_and_pam_tags(corpus):
    src = read_events(corpus / "logs" / "messages-2.6.5-fedora-loghub-linux2k.log", ParseOptions(year=2005))
    boot = src.events.iloc[0]
    assert boot["kind"] == "kernel-boot" and boot["line"] == 1911
    assert boot["timestamp"] == pd.Timestamp("2005-07-27 14:41:57")
    vol = src.meta["volume"]
    assert vol.index.min() == pd.Timestamp("2005-06-14 15:16") and vol.index.max().month == 7
    assert vol.sum() == 2000
    info = parse_line("Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0")
    assert (info.host, info.tag, info.pid) == ("combo", "sshd(pam_unix)", 19939)


def test_dec_jan_rollover_like_lnav(corpus, tmp_path):
    src_path = corpus / "logs" / "syslog-dec-jan-rollover-lnav.log"
    path = write(tmp_path, "syslog", src_path.read_bytes(), mode="b")
    stamp = pd.Timestamp("2007-11-03 12:00").timestamp()
    os.utime(path, (stamp, stamp))   # lnav's own test sets this mtime
    src = parse(path)
    assert src.meta["year_from"] == "mtime"
    assert list(src.meta["volume"].index) == [pd.Timestamp("2006-12-03 09:23"), pd.Timestamp("2007-01-03 09:47")]
    assert list(src.meta["volume"]) == [3, 1]


def test_year_option_is_the_first_line_year(corpus):
    src = parse(corpus / "logs" / "syslog-dec-jan-rollover-lnav.log", options=ParseOptions(year=2010))
    assert list(src.meta["volume"].index.year) == [2010, 2011]


def test_year_from_audit_epoch_in_the_file(corpus):
    src = parse(corpus / "logs" / "kernlog-ubuntu-5.4-two-boots-hotsos-compute4.log")
    assert src.meta["year_from"] == "file"
    boots = src.events[src.events["kind"] == "kernel-boot"]
    assert list(boots["timestamp"]) == [pd.Timestamp("2022-02-04 09:34:10"), pd.Timestamp("2022-02-09 22:38:17")]
    assert list(boots["line"]) == [1, 1077] and list(boots["uptime"]) == [0.0, 0.0]
    assert src.meta["clock"]["utc_offset_s"] == 0.0     # audit epochs say the host logs in UTC


def test_year_from_an_nginx_line_forwarded_through_syslog(tmp_path):
    """nginx's error.log line carried in syslog (`error_log syslog:` or a
    container's output piped to logger, as on Unraid) keeps its own
    stamp, year included: the file's time (a copy made a year later) does
    not decide it."""
    path = tmp_path / "syslog"
    path.write_text("".join(
        f'Jun 28 09:08:3{i} Tower nginx: 2025/06/28 09:08:3{i} [error] 3358958#3358958: *16185{i} limiting requests, '
        f'excess: 20.955 by zone "authlimit", client: 172.17.0.2, server: , request: "GET /login HTTP/1.1"\n'
        for i in range(3)))
    later = pd.Timestamp("2026-11-20").timestamp()
    os.utime(path, (later, later))
    src = parse(path)
    assert src.meta["year_from"] == "file"
    rows = src.events[src.events["kind"] == "nginx-rate-limited"]
    assert list(rows["timestamp"]) == [pd.Timestamp(f"2025-06-28 09:08:3{i}") for i in range(3)]
    assert set(rows["process"]) == {"nginx"} and set(rows["pid"]) == {3358958}
    # near miss: the same lines without nginx's own stamp take the year from the file's time
    bare = tmp_path / "syslog2"
    bare.write_text(path.read_text().replace("2025/06/28 ", "").replace("[error] 3358958#3358958: ", ""))
    os.utime(bare, (later, later))
    assert parse(bare).meta["year_from"] == "mtime"


def test_gzip_header_time_gives_the_year(corpus, tmp_path):
    raw = (corpus / "logs" / "messages-tcp-timewait-overflow-ratelimit.log").read_bytes()
    path = tmp_path / "messages-20170421"
    with open(path, "wb") as fh:
        with gzip.GzipFile(fileobj=fh, mode="wb", mtime=int(pd.Timestamp("2017-04-21").timestamp())) as gz:
            gz.write(raw)
    src = parse(path)
    assert src.meta["year_from"] == "gzip-mtime"
    assert src.events["timestamp"].iloc[0] == pd.Timestamp("2017-04-20 22:02:55")


def test_year_from_other_sources(corpus, tmp_path):
    from sarsleuth.timebase import settle
    src = parse(corpus / "logs" / "messages-tcp-timewait-overflow-ratelimit.log")
    assert src.meta["year_from"] in ("mtime", "gzip-mtime")
    dated = tmp_path / "error.log"
    dated.write_text("2014/05/06 15:00:01 [alert] 2211#0: 1024 worker_connections are not enough\n")
    settle([src, parse(dated)], registry())
    assert src.meta["year_from"] == "other-sources"
    assert src.events["timestamp"].iloc[0].year == 2014


def test_ratelimit_summary_counts_into_the_next_event(corpus):
    ev = parse(corpus / "logs" / "messages-tcp-timewait-overflow-ratelimit.log").events
    assert len(ev) == 2 and (ev["kind"] == "tcp-tw-bucket-overflow").all()
    # 482 suppressed + the line itself, then that line again 8 times within a second each
    assert list(ev["count"]) == [1, 483 + 8] and list(ev["repeats"]) == [1, 9]
    assert ev["host"].isna().all()                       # router syslog without hostname


def test_segfault_suffix_on_its_own_line(corpus):
    ev = parse(corpus / "logs" / "pair-C-syslog-segfault-split-continuation-centos7.log").events
    assert list(ev["pid"]) == [8194, 8052] and set(ev["process"]) == {"nginx"}
    assert ev.iloc[1]["message"].endswith("error 4 in nginx[400000+b97000]")
    assert " in " not in ev.iloc[0]["message"]


def test_localized_month_and_padding_forms():
    info = parse_line("ao\u00fbt 19 11:08:37 nlaptop symphorien[4961]: test")
    assert info.stamp[:3] == ("md", 8, 19) and (info.host, info.tag, info.pid) == ("nlaptop", "symphorien", 4961)
    info = parse_line("Feb 04 00:07:13 ic-hrvart4-s4anq599 kernel: INFO: task df:1177107 blocked")
    assert info.stamp[1:3] == (2, 4) and info.message.startswith("INFO: task")
    info = parse_line("Mar  1 12:00:00 web1/web1 kernel: [ 12.5] Out of socket memory")
    assert (info.host, info.uptime, info.message) == ("web1", 12.5, "Out of socket memory")
    info = parse_line("Feb 15 18:49:53  kernel: nginx[8194]: segfault at 0")
    assert info.host is None and info.tag == "kernel"


def test_rfc3339_lines_are_tz_aware(tmp_path):
    path = write(tmp_path, "messages", (
        "2023-03-14T17:02:01.552031+08:00 web3 kernel: [123456.789012] TCP: time wait bucket table overflow\n"
        "2023-03-14T17:02:02.100000+08:00 web3 nginx[2211]: 2023/03/14 17:02:02 [crit] 2211#2211: "
        "accept4() failed (24: Too many open files)\n"))
    src = parse(path)
    ev = src.events
    assert str(ev["timestamp"].dt.tz) == "UTC+08:00"
    assert ev["timestamp"].iloc[0] == pd.Timestamp("2023-03-14T09:02:01.552031Z")
    assert ev.iloc[0]["uptime"] == 123456.789012
    assert list(ev["kind"]) == ["tcp-tw-bucket-overflow", "too-many-open-files"]
    assert (ev.iloc[1]["process"], ev.iloc[1]["pid"], ev.iloc[1]["level"]) == ("nginx", 2211, "crit")
    assert src.meta["year_from"] == "line"
    from sarsleuth.timebase import settle
    settle([src], registry(), tz="Asia/Shanghai")
    assert str(src.events["timestamp"].dt.tz) == "Asia/Shanghai"


def test_rfc5424_and_priority(tmp_path):
    path = write(tmp_path, "messages",
                 "<3>1 2021-07-08T12:43:00.000Z edge-1 kernel - - - Out of memory: Killed process 2211 (nginx) "
                 "total-vm:8000kB, anon-rss:4000kB, file-rss:0kB, shmem-rss:0kB\n"
                 "<14>1 2021-07-08T12:43:01Z edge-1 sshd 77 ID47 [exampleSDID@32473 iut=\"3\"] session opened\n")
    src = parse(path)
    assert src.host == "edge-1"
    ev = src.events
    assert list(ev["kind"]) == ["oom-kill"] and ev.iloc[0]["pid"] == 2211 and ev.iloc[0]["level"] == "err"
    assert ev.iloc[0]["timestamp"] == pd.Timestamp("2021-07-08T12:43:00Z")


def test_tz_option_localizes_wall_clock(corpus):
    from sarsleuth.timebase import settle
    src = parse(corpus / "logs" / "pair-A-syslog-segfault-statsd-2.6.32.log", options=ParseOptions(year=2012))
    settle([src], registry(), tz="Asia/Shanghai")
    ev = src.events
    assert ev["timestamp"].iloc[0] == pd.Timestamp("2012-12-12 01:25:56", tz="Asia/Shanghai")
    assert (ev.iloc[0]["pid"], ev.iloc[0]["uptime"]) == (18247, 5066.291028)


def test_rsyslog_012_escapes_split_into_detail(tmp_path):
    path = write(tmp_path, "messages",
                 "Feb  9 08:09:39 prod-server kernel: Out of memory: Killed process 4123 (mount-s3) "
                 "total-vm:9000kB, anon-rss:8000kB, file-rss:0kB, shmem-rss:0kB#012 oom_score_adj:0\n"
                 "Feb  9 08:09:39 prod-server kernel: active_anon:656114 inactive_anon:679646#012 "
                 "active_file:1022595\n")
    ev = parse(path, options=ParseOptions(year=2024)).events
    assert len(ev) == 1 and ev.iloc[0]["pid"] == 4123 and ev.iloc[0]["process"] == "mount-s3"
    assert "#012" not in ev.iloc[0]["message"]
    assert ev.iloc[0]["detail"].splitlines()[-1] == " oom_score_adj:0"


def test_forwarded_nginx_line(corpus):
    ev = parse(corpus / "logs" / "syslog-forwarded-nginx-worker-connections.log").events
    row = ev.iloc[0]
    assert (row["kind"], row["process"], row["pid"], row["level"]) == ("worker-connections-exhausted", "nginx", 4715, "alert")
    assert row["message"] == "1024 worker_connections are not enough"


def test_lines_without_stamp_keep_nat(corpus):
    ev = parse(corpus / "logs" / "syslog-syn-flooding-variants.log").events
    assert len(ev) == 4 and (ev["kind"] == "syn-flood").all()
    assert ev["timestamp"].notna().sum() == 1 and ev["timestamp"].iloc[0].month == 2
    assert ev["timestamp"].iloc[0].day == 29 and ev["timestamp"].iloc[0].is_leap_year
    assert list(ev["aligned"]) == [True, False, False, False]
    assert ev.iloc[1]["uptime"] == 31617.809376 and ev.iloc[1]["level"] == "info"


def test_every_line_kept_on_request(corpus):
    src = read_events(corpus / "logs" / "messages-two-hosts-unordered-insights.log", ParseOptions(year=2016),
                      all_lines=True)
    ev = src.events
    assert len(ev) == 9 and set(ev["kind"]) == {"log"}
    assert list(ev["host"].value_counts().items()) == [("lxc-rhel68-sat56", 5), ("boy-bona", 4)]
    assert ev.iloc[5]["process"] == "CROND" and ev.iloc[5]["pid"] == 27921


def test_unreadable_file_raises(tmp_path):
    path = write(tmp_path, "garbage", bytes(range(256)) * 40, mode="b")
    with pytest.raises(InputError):
        read_events(path)
    empty = write(tmp_path, "empty", "")
    with pytest.raises(InputError):
        read_events(empty)


def test_a_year_written_first_with_a_severity_after_the_host(tmp_path):
    """SONiC's newer rsyslog template: the year first, microseconds, a
    severity word after the host; a paste of it with markdown headings
    between its lines is still a log."""
    path = tmp_path / "syslog"
    path.write_text("# the disk filled\n"
                    "2025 Jun 18 07:12:22.363360 leaf-07 ERR kernel: [ 1009.228833] loop: Write error at byte offset "
                    "3956736, length 4096.\n\n# then\n"
                    "2025 Jun 18 07:12:32.614365 leaf-07 CRIT kernel: [ 1019.487101] EXT4-fs error (device sda3): "
                    "ext4_check_bdev_write_error:217: comm rs:main Q:Reg: Error while async write back metadata\n"
                    "2025 Jun 18 07:17:40.046393 leaf-07 ERR kernel: [ 1326.758055] Aborting journal on device sda3-8.\n")
    info = parse_line("2025 Jun 18 07:12:32.614365 leaf-07 CRIT kernel: [ 1019.487101] EXT4-fs error (device sda3)")
    assert info.stamp == ("abs", __import__("datetime").datetime(2025, 6, 18, 7, 12, 32, 614365))
    assert (info.host, info.tag) == ("leaf-07", "kernel")
    assert sniff(path)[0] == "syslog"
    import sarsleuth
    case = sarsleuth.load(path)
    (fs,) = [f for f in case.findings if f.detector == "filesystem-error"]
    assert str(fs.start) == "2025-06-18 07:12:32.614365" and "journal aborted" in fs.title
    # near miss: a number that is no year before the month is no stamp
    assert parse_line("3025 Jun 18 07:12:32 leaf-07 CRIT kernel: x").stamp is None


def test_date_s_own_stamp_with_its_zone_before_the_year(tmp_path):
    """dracut.log and scripts that write ``$(date)``: ``%a %b %e %T %Z %Y``.
    The year is the line's (no guess from the file's time), the zone's
    abbreviation is no host (a real CentOS 6 tree's dracut.log was read as
    host "CST"), and the time stays the wall clock: CST is China's and
    America's Central both.  Near miss: a host written in capitals after a
    stamp with no year is still the host."""
    import datetime as dt
    path = tmp_path / "dracut.log"
    path.write_text("Mon Nov 28 21:17:40 CST 2016 Info: Executing: /sbin/dracut -f\n"
                    "Mon Nov 28 21:17:49 CST 2016 Info: *** Creating image file done ***\n"
                    "Tue Nov 29 09:02:11 UTC 2016 backup: tar: /srv/data: No space left on device\n")
    info = parse_line("Mon Nov 28 21:17:40 CST 2016 Info: Executing: /sbin/dracut -f")
    assert info.stamp == ("abs", dt.datetime(2016, 11, 28, 21, 17, 40)) and info.host is None
    assert (info.tag, info.message) == ("Info", "Executing: /sbin/dracut -f")
    src = parse(path)
    assert src.kind == "syslog" and src.meta["year_from"] == "line"
    ev = src.events
    assert list(ev["timestamp"].dt.year.unique()) == [2016] and set(ev["host"].dropna()) == set()
    near = parse_line("Nov 28 21:17:40 WEB01 sshd[812]: Accepted publickey for deploy")
    assert (near.host, near.tag, near.pid) == ("WEB01", "sshd", 812)


def test_a_kernel_line_whose_stamp_a_paste_cut_is_placed_by_its_uptime(tmp_path):
    """The first line lost "Feb 23 16:44:36 j" to the paste: its uptime,
    1 ms before the next line's, and the offset of the dated lines around
    it put it at 16:44:35.99 on host jobs; one of another boot (an uptime
    of 12 s) is not placed by them."""
    import sarsleuth

    dated = "".join(f"Feb 23 16:44:3{6 + i} jobs kernel: [{38775494.393661 + i:.6f}] nf_conntrack: table full, "
                    "dropping packet\n" for i in range(3))
    path = tmp_path / "syslog"
    path.write_text("obs kernel: [38775494.392631] nf_conntrack: table full, dropping packet\n" + dated)
    case = sarsleuth.load(path, year=2026)
    rows = case.events[case.events["kind"] == "conntrack-full"].sort_values("line")
    assert str(rows["timestamp"].iloc[0]) == "2026-02-23 16:44:35.998970"
    assert rows["host"].iloc[0] == "jobs" and bool(rows["aligned"].iloc[0])
    assert any("1 line(s) without their stamp placed by their kernel uptime" in n for n in case.notes)
    assert case.incidents[0].title.startswith("Connection flood on jobs: 4 x conntrack table full")
    other = tmp_path / "syslog2"
    other.write_text("ker kernel: [   12.004512] nf_conntrack: table full, dropping packet\n" + dated)
    rows = sarsleuth.load(other, year=2026).events.sort_values("line")
    assert pd.isna(rows["timestamp"].iloc[0]) and rows["uptime"].iloc[0] == 12.004512

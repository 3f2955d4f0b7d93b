#!/usr/bin/env python3
"""Write the reconstructed text samples of the four field reports.

Values quoted by a report are used verbatim; the rest is filled in with
plausible numbers from a fixed random seed, so the files are reproducible.
The proxy's sar text is sysstat's ``sar`` reading the proxy's ``sa06``.
samples/README.md lists, per file, which is which.  Run from the repository
root: ``python samples/make_text_samples.py``.
"""
from __future__ import annotations

import datetime as dt
import os
import random
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
rng = random.Random(20140506)


def t12(t: dt.datetime) -> str:
    return t.strftime("%I:%M:%S %p")


def t24(t: dt.datetime) -> str:
    return t.strftime("%H:%M:%S")


def table(fmt_time, times, header, rows) -> list[str]:
    """A sar section: the header line stamped with ``times[0]`` (as sar
    stamps it with the first record's time), then one row per later time."""
    out = [f"{fmt_time(times[0]):<11} {header}"]
    for t, row in zip(times[1:], rows):
        out.append(f"{fmt_time(t):<11} {row}")
    return out


# ---------------------------------------------------------------- report 000
def proxy_sar_text():
    """``sar06.txt`` is sysstat's own ``sar`` reading ``sa06`` (written by
    make_sa06.py), as an operator on the proxy would have printed it: the
    host's zone (Asia/Shanghai) and an en_US locale, so a 12-hour clock
    (the locale is compiled from glibc's sources with localedef when the
    machine has not got it).  Needs sysstat's sar and glibc's locale
    sources (Debian: sysstat, locales)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TZ": "Asia/Shanghai", "LC_ALL": "en_US.UTF-8"}
    with tempfile.TemporaryDirectory() as locales:
        if "en_US.utf8" not in subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout:
            subprocess.run(["localedef", "-i", "en_US", "-f", "UTF-8", f"{locales}/en_US.UTF-8"], check=True)
            env["LOCPATH"] = locales
        text = subprocess.run(["sar", "-u", "-W", "-B", "-r", "-S", "-q", "-n", "DEV", "-f",
                               str(HERE / "nginx-proxy-oom" / "sa06")],
                              capture_output=True, text=True, check=True, env=env).stdout
    (HERE / "nginx-proxy-oom" / "sar06.txt").write_text(text)


def spend_old_proxy_draws():
    """The proxy's sar text was once filled in here, from this generator,
    before the other samples drew their numbers; it is now sar's rendering
    of sa06 (proxy_sar_text).  The same draws are made, in the same order,
    so that every sample written after it stays as it was."""
    for k in range(-89, 15):      # 89 calm samples before 15:00:01, the report's ten, five after
        outside = not 0 <= k < 10
        if outside:               # %user, %system, %iowait
            rng.uniform(3.5, 6.5), rng.uniform(4.5, 8.0), rng.uniform(0.0, 0.05)
        if k < 0:                 # kbmemfree
            rng.uniform(17.5e6, 18.5e6)
        if outside:               # runq-sz, ldavg-1
            rng.randint(1, 5), rng.uniform(1.5, 3.0)
        rng.randint(-20, 20)      # plist-sz
        if outside:               # majflt/s
            rng.uniform(0, 0.3)
        rng.uniform(9000, 12000), rng.uniform(20000, 30000)     # fault/s, pgfree/s
        if k < 0 or k >= 8:       # em2 rxkB/s
            rng.uniform(1.05e6, 1.15e6)


def nginx_proxy_oom():
    day = dt.datetime(2014, 5, 6)
    proxy_sar_text()
    spend_old_proxy_draws()
    # /var/log/messages: the report's kernel lines (verbatim but for the
    # blog's curly apostrophe, which the kernel prints as ') among routine noise
    msgs = []
    host = "Cangke_107_176"

    def m(t, tag, text):
        msgs.append(f"{t:%b} {t.day:2d} {t:%H:%M:%S} {host} {tag}: {text}")

    base = day.replace(hour=14, minute=30)
    for i in range(0, 30, 5):
        t = base + dt.timedelta(minutes=i, seconds=1)
        m(t, f"CROND[{21000 + i}]", "(root) CMD (/usr/lib64/sa/sa1 1 1)")
    m(day.replace(hour=14, minute=41, second=12), "ntpd[2210]", "synchronized to 10.10.0.1, stratum 3")
    m(day.replace(hour=14, minute=55, second=40), "sshd[22811]", "Accepted publickey for ops from 10.10.8.21 port 51522 ssh2")
    m(day.replace(hour=15, minute=0, second=1), "CROND[23102]", "(root) CMD (/usr/lib64/sa/sa1 1 1)")
    m(day.replace(hour=15, minute=1, second=1), "CROND[23141]", "(root) CMD (/usr/lib64/sa/sa1 1 1)")
    trace_t = day.replace(hour=15, minute=4, second=13)
    trace = """nginx: page allocation failure. order:0, mode:0x20
Pid: 8888, comm: nginx Not tainted 2.6.32-358.el6.x86_64 #1
Call Trace:
<IRQ>  [<ffffffff8112c127>] ? __alloc_pages_nodemask+0x757/0x8d0
[<ffffffff811669d2>] ? kmem_getpages+0x62/0x170
[<ffffffff811675ea>] ? fallback_alloc+0x1ba/0x270
[<ffffffff8116703f>] ? cache_grow+0x2cf/0x320
[<ffffffff81167369>] ? ____cache_alloc_node+0x99/0x160
[<ffffffffa0139aa8>] ? bnx2x_rx_int+0x228/0x1530 [bnx2x]
[<ffffffff81168139>] ? __kmalloc+0x189/0x220
[<ffffffffa0139aa8>] ? bnx2x_rx_int+0x228/0x1530 [bnx2x]
[<ffffffff8143d06b>] ? consume_skb+0x3b/0x80
[<ffffffff81448fbd>] ? dev_kfree_skb_any+0x3d/0x50
[<ffffffff8128d150>] ? swiotlb_map_page+0x0/0x100
[<ffffffffa013ae5b>] ? bnx2x_poll+0xab/0x2e0 [bnx2x]
[<ffffffff8144cd43>] ? net_rx_action+0x103/0x2f0
[<ffffffff81076fb1>] ? __do_softirq+0xc1/0x1e0
[<ffffffff8100c1cc>] ? call_softirq+0x1c/0x30
[<ffffffff8100c1cc>] ? call_softirq+0x1c/0x30
<EOI>  [<ffffffff8100de05>] ? do_softirq+0x65/0xa0
[<ffffffff810778fa>] ? local_bh_enable_ip+0x9a/0xb0
[<ffffffff815101ab>] ? _spin_unlock_bh+0x1b/0x20
[<ffffffff81438c7e>] ? release_sock+0xce/0xe0
[<ffffffff8148ee61>] ? tcp_recvmsg+0x821/0xe80
[<ffffffff8148507c>] ? ip_finish_output+0x13c/0x310
[<ffffffff814af6ca>] ? inet_recvmsg+0x5a/0x90
[<ffffffff8127d95c>] ? rb_erase+0x1bc/0x310
[<ffffffff81437473>] ? sock_recvmsg+0x133/0x160
[<ffffffff81096c80>] ? autoremove_wake_function+0x0/0x40
[<ffffffff8100988e>] ? __switch_to+0x26e/0x320
[<ffffffff811c2d42>] ? fsnotify_clear_marks_by_inode+0x32/0xf0
[<ffffffff81433b69>] ? sock_destroy_inode+0x19/0x20
[<ffffffff814375ee>] ? sys_recvfrom+0xee/0x180
[<ffffffff811a1ae0>] ? mntput_no_expire+0x30/0x110
[<ffffffff811827f1>] ? __fput+0x1a1/0x210
[<ffffffff81182885>] ? fput+0x25/0x30
[<ffffffff8117dcdd>] ? filp_close+0x5d/0x90
[<ffffffff8100b072>] ? system_call_fastpath+0x16/0x1b"""
    for line in trace.splitlines():
        m(trace_t, "kernel", line)
    for _ in range(7):
        m(trace_t, "kernel", "bnx2x: [bnx2x_alloc_rx_sge:420(em2)]Can't alloc sge")
    m(day.replace(hour=15, minute=6, second=2), "CROND[23417]", "(root) CMD (/usr/lib64/sa/sa1 1 1)")
    m(day.replace(hour=15, minute=9, second=44), "sshd[23570]", "Accepted publickey for ops from 10.10.8.21 port 51873 ssh2")
    m(day.replace(hour=15, minute=10, second=1), "CROND[23602]", "(root) CMD (/usr/lib64/sa/sa1 1 1)")
    (HERE / "nginx-proxy-oom" / "messages").write_text("\n".join(msgs) + "\n")

    err = []

    def e(t, level, pid, text):
        err.append(f"{t:%Y/%m/%d %H:%M:%S} [{level}] {pid}#0: {text}")

    e(day.replace(hour=14, minute=58, second=3), "error", 8890,
      '*2093411 open() "/data/www/favicon.ico" failed (2: No such file or directory), client: 10.12.1.33, server: img.example.com, request: "GET /favicon.ico HTTP/1.1", host: "img.example.com"')
    for i, (mm, ss) in enumerate([(3, 12), (3, 48), (4, 2), (4, 30), (5, 11), (5, 40), (6, 3)]):
        e(day.replace(hour=15, minute=mm, second=ss), "error", 8888 + i % 4,
          f'*{2101000 + 97 * i} upstream timed out (110: Connection timed out) while reading response header from upstream, client: 10.12.{i}.{20 + i}, server: img.example.com, request: "GET /img/big-{i}.jpg HTTP/1.1", upstream: "http://10.20.0.{11 + i % 3}:8080/img/big-{i}.jpg", host: "img.example.com"')
    e(day.replace(hour=15, minute=5, second=41), "emerg", 8890,
      "*2103955 posix_memalign(16, 16384) failed (12: Cannot allocate memory) while reading upstream, client: 10.12.3.77, server: img.example.com")
    e(day.replace(hour=15, minute=5, second=42), "crit", 8888,
      "*2103961 malloc(262144) failed (12: Cannot allocate memory) while reading upstream, client: 10.12.4.12, server: img.example.com")
    (HERE / "nginx-proxy-oom" / "error.log").write_text("\n".join(err) + "\n")


# ---------------------------------------------------------------- report 001
AB_50K = """Concurrency Level:      100
Time taken for tests:   2.084 seconds
Complete requests:      7000
Failed requests:        0
Write errors:           0
Keep-Alive requests:    7000
Total transferred:      382123000 bytes
HTML transferred:       379099000 bytes
Requests per second:    3359.59 [#/sec] (mean)
Time per request:       29.766 [ms] (mean)
Time per request:       0.298 [ms] (mean, across all concurrent requests)
Transfer rate:          179098.09 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.3      0       2
Processing:    11   27  66.5     18    1026
Waiting:        9   24  66.5     16    1023
Total:         11   27  66.5     18    1026

Percentage of the requests served within a certain time (ms)
  50%     18
  66%     19
  75%     20
  80%     22
  90%     31
  95%     39
  98%     75
  99%    264
 100%   1026 (longest request)
"""

AB_2M = """Concurrency Level:      100
Time taken for tests:   13.712 seconds
Complete requests:      7000
Failed requests:        0
Write errors:           0
Keep-Alive requests:    7000
Total transferred:      14657258000 bytes
HTML transferred:       14656334000 bytes
Requests per second:    510.51 [#/sec] (mean)
Time per request:       195.881 [ms] (mean)
Time per request:       1.959 [ms] (mean, across all concurrent requests)
Transfer rate:          1043909.08 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.1      0       2
Processing:    41  193  63.6    179     785
Waiting:       35  186  64.5    174     777
Total:         41  193  63.6    179     785

Percentage of the requests served within a certain time (ms)
  50%    179
  66%    195
  75%    207
  80%    215
  90%    242
  95%    293
  98%    414
  99%    493
 100%    785 (longest request)
"""


def image_service_ab():
    d = HERE / "image-service-ab"
    (d / "ab-50k-image.txt").write_text("$ ab -k -n 7000 -c 100 http://img.example.com/img/thumb-50k.jpg\n" + AB_50K)
    (d / "ab-2m-image.txt").write_text("$ ab -k -n 7000 -c 100 http://img.example.com/img/orig-2m.jpg\n" + AB_2M)
    day = dt.datetime(2019, 9, 26, 14, 20, 0)
    # the server's own sar -n DEV at 1 s: bond0 is 2 x 10GbE = 20000 Mb/s
    speed_Bps = 20000e6 / 8
    lines = ["Linux 3.10.0-957.el7.x86_64 (img-svc-01) \t09/26/2019 \t_x86_64_\t(24 CPU)", ""]
    rows = []
    for s in range(0, 75):
        t = day + dt.timedelta(seconds=s)
        if 5 <= s <= 6:          # the 50 KB run, one client: 179098.09 KB/s
            tx_kB = 179098.09 * 1.046 * (0.9 if s == 6 else 1.02)
        elif 30 <= s <= 43:      # the 2 MB run, two clients at 1043909.08 KB/s each, plus TCP/IP overhead
            tx_kB = 2 * 1043909.08 * 1.046 * rng.uniform(0.985, 1.0)
        else:
            tx_kB = rng.uniform(3000, 9000)
        rx_kB = tx_kB * 0.021 + rng.uniform(50, 150)
        util = tx_kB * 1024 * 100 / speed_Bps
        rows.append((t, "bond0", rx_kB * 1024 / 1400 * 4, tx_kB * 1024 / 1448, rx_kB, tx_kB, util))
        rows.append((t, "lo", 12.0, 12.0, 1.1, 1.1, 0.0))
    lines.append(f"{t24(day):<9}        IFACE   rxpck/s   txpck/s    rxkB/s    txkB/s   rxcmp/s   txcmp/s  rxmcst/s   %ifutil")
    for t, iface, rp, tp, rk, tk, u in rows[2:]:
        lines.append(f"{t24(t):<9} {iface:>12} {rp:9.2f} {tp:9.2f} {rk:9.2f} {tk:9.2f} {0:9.2f} {0:9.2f} {0:9.2f} {u:9.2f}")
    lines.append("")
    (d / "sar-n-DEV.txt").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- report 002
def tengine_720k():
    d = HERE / "tengine-720k"
    day = dt.datetime(2016, 3, 17)
    host = "slbv2test04.cm3"
    msgs = []

    def m(t, tag, text):
        msgs.append(f"{t:%b} {t.day:2d} {t:%H:%M:%S} {host} {tag}: {text}")

    m(day.replace(hour=16, minute=58, second=1), "CROND[40121]", "(root) CMD (/usr/lib64/sa/sa1 1 1)")
    m(day.replace(hour=17, minute=0, second=1), "CROND[40301]", "(root) CMD (/usr/lib64/sa/sa1 1 1)")
    # report 002: "17:02:01 slbv2test04.cm3 kernel: : [89937.009770] TCP: time wait bucket table overflow"
    up = 89937.009770
    for i in range(6):
        t = day.replace(hour=17, minute=2, second=1 + i)
        m(t, "kernel", f": [{up + i + 0.000113 * i:.6f}] TCP: time wait bucket table overflow")
    m(day.replace(hour=17, minute=2, second=8), "kernel", "net_ratelimit: 1288 callbacks suppressed")
    m(day.replace(hour=17, minute=2, second=8), "kernel", f": [{up + 7.1:.6f}] TCP: time wait bucket table overflow")
    # the orphan limit: 131110 orphans > net.ipv4.tcp_max_orphans = 131072
    m(day.replace(hour=17, minute=2, second=10), "kernel", f": [{up + 9.2:.6f}] Out of socket memory")
    m(day.replace(hour=17, minute=2, second=10), "kernel", f": [{up + 9.2 + 0.00001:.6f}] TCP: too many of orphaned sockets")
    m(day.replace(hour=17, minute=2, second=11), "kernel", f": [{up + 10.4:.6f}] TCP: too many of orphaned sockets")
    m(day.replace(hour=17, minute=4, second=1), "CROND[40733]", "(root) CMD (/usr/lib64/sa/sa1 1 1)")
    (d / "messages").write_text("\n".join(msgs) + "\n")

    # sar -n SOCK -q at 1 s: tcp-tw climbs to the 180000 limit from 17:01:59;
    # load 0.8 -> 4 in the 13 s where monitoring itself stalled (no samples)
    start = day.replace(hour=17, minute=1, second=0)
    times = [start + dt.timedelta(seconds=s) for s in range(0, 150)]
    times = [t for t in times if not (day.replace(hour=17, minute=1, second=59) < t < day.replace(hour=17, minute=2, second=12))]
    sock, q = [], []
    for t in times:
        s = (t - start).total_seconds()
        if s < 59:
            tw, ld = 1200 + int(rng.uniform(-80, 80)), 0.80
        elif s <= 72:
            tw, ld = 180000, 4.02
        else:
            tw = max(2000, int(180000 - (s - 72) * 2300))
            ld = round(max(0.9, 4.02 * (0.985 ** (s - 72))), 2)
        totsck = 630000 + int(rng.uniform(-500, 500)) + (tw if s >= 59 else 0)
        tcpsck = 625000 + int(rng.uniform(-500, 500))
        sock.append(f"{totsck:9d} {tcpsck:9d} {7:9d} {0:9d} {0:9d} {tw:9d}")
        q.append(f"{rng.randint(0, 3) if s < 59 else rng.randint(10, 30):9d} {1540:9d} {ld:9.2f} {ld * 0.6:9.2f} {ld * 0.4:9.2f} {0:9d}")
    lines = [f"Linux 2.6.32-220.23.2.ali878.el6.x86_64 ({host}) \t03/17/2016 \t_x86_64_\t(12 CPU)", ""]
    lines += table(t24, [start] + times, "  totsck    tcpsck    udpsck    rawsck   ip-frag    tcp-tw", sock) + [""]
    lines += table(t24, [start] + times, "  runq-sz  plist-sz   ldavg-1   ldavg-5  ldavg-15   blocked", q) + [""]
    (d / "sar-n-SOCK-q.txt").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- report 003
def nginx_worker_crash():
    d = HERE / "nginx-worker-crash"
    err = []

    def e(ts, level, pid, text):
        err.append(f"{ts} [{level}] {pid}#0: {text}")

    master = 16659
    e("2012/12/24 14:02:11", "notice", master, "using the \"epoll\" event method")
    e("2012/12/24 14:02:11", "notice", master, "nginx/1.2.4")
    e("2012/12/24 14:02:11", "notice", master, "OS: Linux 2.6.32-279.el6.x86_64")
    e("2012/12/24 14:02:11", "notice", master, "start worker processes")
    for pid in (16660, 16661, 16662, 16663):
        e("2012/12/24 14:02:11", "notice", master, f"start worker process {pid}")
    e("2012/12/24 15:11:40", "error", 16662, '*11203 open() "/home/nobody/html/robots.txt" failed (2: No such file or directory), client: 10.1.3.4, server: localhost, request: "GET /robots.txt HTTP/1.1"')
    crashes = [("2012/12/24 16:39:56", 16660, 24721, True), ("2012/12/24 21:12:40", 24721, 1729, True),
               ("2012/12/25 03:27:15", 1729, 22002, True), ("2012/12/25 07:41:09", 22002, 25447, True),
               ("2012/12/25 09:18:33", 16661, 9492, False), ("2012/12/25 10:18:02", 16662, 19344, False)]
    for ts, dead, new, core in crashes:
        e(ts, "notice", master, "signal 17 (SIGCHLD) received")
        e(ts, "alert", master, f"worker process {dead} exited on signal 11" + (" (core dumped)" if core else ""))
        e(ts, "notice", master, f"start worker process {new}")
        e(ts, "notice", master, "signal 29 (SIGIO) received")
    (d / "error.log").write_text("\n".join(err) + "\n")

    # dmesg without timestamps (printk.time off), the report's three segfault
    # lines verbatim plus the three others that match error.log's exits
    dm = ["Initializing cgroup subsys cpuset", "Linux version 2.6.32-279.el6.x86_64 (mockbuild@c6b9.bsys.dev.centos.org) (gcc version 4.4.6 20120305 (Red Hat 4.4.6-4) (GCC) ) #1 SMP Fri Jun 22 12:19:21 UTC 2012",
          "Command line: ro root=/dev/mapper/vg0-root rd_NO_LUKS LANG=en_US.UTF-8",
          "e1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: None",
          "nginx[16660]: segfault at 0000000000000008 rip 00000000004c2d27 rsp 00007fff2b3e8b40 error 4",
          "nginx[24721]: segfault at 0000000000000001 rip 0000000000000001 rsp 00007ffff58d8180 error 14",
          "nginx[1729]: segfault at 0000000000000190 rip 00000000004c2d27 rsp 00007ffff58d8340 error 4",
          "nginx[22002]: segfault at ffffffffffffffff rip 000000001c959744 rsp 00007fff43caac18 error 6",
          "nginx[16661]: segfault at 0000000000000190 rip 00000000004c2d27 rsp 00007fff9a1c2f10 error 4",
          "nginx[16662]: segfault at 0000000000000190 rip 00000000004c2d27 rsp 00007fffd8e15a70 error 4"]
    (d / "dmesg").write_text("\n".join(dm) + "\n")

    before = """$ ps aux | grep nginx
root     16659  0.0  0.0  74844  2024 ?        Ss   Dec24   0:00 nginx: master process ./nginx
nobody   16660  2.1  0.0  78856  5468 ?        S    Dec24   0:31 nginx: worker process
nobody   16661  2.0  0.0  78856  5468 ?        S    Dec24   0:30 nginx: worker process
nobody   16662  2.2  0.0  78856  5468 ?        S    Dec24   0:33 nginx: worker process
nobody   16663  2.1  0.0  78856  5452 ?        S    Dec24   0:31 nginx: worker process
nobody   16701  0.0  0.0 103244   856 pts/0    S+   14:20   0:00 grep nginx
"""
    after = """$ ps -ef | grep nginx
nobody    9492 16659 26 09:18 ?        01:10:41 nginx: worker process
root      16659     1  0 Dec24 ?       00:00:00 nginx: master process ./nginx
nobody   16663 16659 11 Dec24 ?        02:41:38 nginx: worker process
nobody   19344 16659 24 10:18 ?        00:50:54 nginx: worker process
nobody    25447 16659 28 07:41 ?        01:43:56 nginx: worker process
"""
    (d / "ps-before.txt").write_text(before)
    (d / "ps-after.txt").write_text(after)


if __name__ == "__main__":
    nginx_proxy_oom()
    image_service_ab()
    tengine_720k()
    nginx_worker_crash()

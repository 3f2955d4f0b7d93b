"""Write samples/nginx-proxy-oom/sa06: the sysstat file behind field report 000.

The report (an nginx proxy on a 10GbE link eating all 32 GB of memory, on
host Cangke_107_176, kernel 2.6.32-358.el6.x86_64, 24 CPUs, 6 May 2014,
Asia/Shanghai) pasted ``sar -u`` and ``sar -S`` output for 15:00:01 to
15:09:01.  This script writes a binary sa file from which real ``sar``
prints exactly those figures at exactly those times, preceded by calm
samples every ten minutes from midnight; the other activities (memory,
paging, swapping, queue, disks, network, sockets) carry values consistent
with the story: the proxy test starts shortly before 15:00, memory runs
out, the kernel swaps hard and the disk saturates.

Run:  python samples/make_sa06.py [output path]
"""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sarsleuth.inputs.parsers.sa.writer import write_sa  # noqa: E402

HOST = "Cangke_107_176"
KERNEL = "2.6.32-358.el6.x86_64"
NCPU = 24
ZONE = dt.timezone(dt.timedelta(hours=8))        # Asia/Shanghai, no DST
DAY = dt.date(2014, 5, 6)
MEM_TOTAL_KB = 32868836
SWAP_TOTAL_KB = 8388600
HZ = 100

#: sar -u as pasted in the report: time -> %user %nice %system %iowait %steal %idle
REPORT_CPU = {
    "15:00:01": (5.00, 0.00, 5.87, 0.00, 0.00, 89.12),
    "15:01:01": (5.37, 0.00, 8.35, 0.01, 0.00, 86.27),
    "15:02:03": (5.24, 0.00, 7.93, 11.12, 0.00, 75.71),
    "15:03:01": (7.45, 0.00, 5.71, 32.00, 0.00, 54.84),
    "15:04:16": (5.93, 0.00, 7.12, 37.88, 0.00, 49.07),
    "15:05:03": (0.56, 0.00, 1.45, 64.94, 0.00, 33.05),
    "15:06:05": (2.07, 0.00, 2.64, 57.55, 0.00, 37.75),
    "15:07:01": (2.75, 0.00, 3.52, 46.32, 0.00, 47.41),
    "15:08:01": (3.88, 0.00, 4.36, 2.40, 0.00, 89.36),
    "15:09:01": (3.83, 0.00, 4.40, 0.69, 0.00, 91.09),
}
#: sar -S as pasted: time -> kbswpfree kbswpcad (kbswpused and the
#: percentages follow from them and the 8 GB of swap)
REPORT_SWAP = {
    "15:00:01": (8388600, 0), "15:01:01": (8388600, 0), "15:02:03": (5065192, 107908),
    "15:03:01": (4174996, 745556), "15:04:16": (1722900, 120032), "15:05:03": (423364, 292404),
    "15:06:05": (187788, 713720), "15:07:01": (726948, 1034536), "15:08:01": (814704, 1160704),
    "15:09:01": (848800, 1216656),
}
#: Free memory (kB) during the incident, with the load test running from
#: about 14:45 (nginx workers growing to ~4 GB each).
REPORT_MEMFREE = {
    "14:50:01": 12604220, "15:00:01": 4120396, "15:01:01": 912844, "15:02:03": 163208, "15:03:01": 131540,
    "15:04:16": 98716, "15:05:03": 90212, "15:06:05": 88412, "15:07:01": 301672, "15:08:01": 522960,
    "15:09:01": 611304,
}


def sample_times():
    """Calm samples every 10 minutes from 00:00:01 to 14:50:01, then the
    report's own (irregular) times."""
    start = dt.datetime.combine(DAY, dt.time(0, 0, 1), tzinfo=ZONE)
    times = [start + dt.timedelta(minutes=10 * k) for k in range(90)]
    times += [dt.datetime.combine(DAY, dt.time.fromisoformat(t), tzinfo=ZONE) for t in REPORT_CPU]
    return times


def fit_percentages(target, total):
    """Integer jiffies for (user, nice, system, iowait, steal, idle) summing
    to ``total`` whose percentages round to ``target`` (2 decimals), even
    when the printed figures do not add up to exactly 100."""
    values = np.array(target, dtype=float)
    residual = 100.0 - values.sum()
    movable = values > 0 if residual < 0 else np.ones(len(values), dtype=bool)
    values[movable] += residual / movable.sum()
    jiffies = np.round(values * total / 100.0).astype(np.int64)
    jiffies[np.argmax(jiffies)] += total - jiffies.sum()
    check = np.round(jiffies / total * 100.0, 2)
    assert np.allclose(check, target, atol=0.0051), (check, target)
    return jiffies


def spread(total, parts, shift):
    """``total`` split in ``parts`` integers, remainders rotated by ``shift``."""
    base = np.full(parts, total // parts, dtype=np.int64)
    base[(np.arange(total % parts) + shift) % parts] += 1
    return base


class Counters:
    """Cumulative kernel counters advanced interval by interval."""

    def __init__(self, rng):
        self.rng = rng
        boot_cs = 37 * 86400 * HZ
        self.uptime = boot_cs
        per_cpu = boot_cs
        self.cpu = np.zeros((NCPU, 10), dtype=np.int64)
        self.cpu[:, 0] = per_cpu * 0.03     # user
        self.cpu[:, 2] = per_cpu * 0.03     # sys
        self.cpu[:, 4] = per_cpu * 0.002    # iowait
        self.cpu[:, 7] = per_cpu * 0.01     # softirq
        self.cpu[:, 3] = per_cpu - self.cpu.sum(axis=1)   # idle
        self.c = {name: 0 for name in ("context_switch", "processes", "pswpin", "pswpout", "pgpgin", "pgpgout",
                                       "pgfault", "pgmajfault", "pgfree", "pgscan_kswapd", "pgscan_direct",
                                       "pgsteal", "nr_ios", "rd_sect", "wr_sect", "rd_ticks", "wr_ticks",
                                       "tot_ticks", "rq_ticks", "rio", "wio")}
        self.c.update(context_switch=8_310_442_118, processes=91_403_227, pgfault=40_112_882_391,
                      pgfree=52_771_003_112, pgpgin=915_337_120, pgpgout=3_304_118_784)
        self.net = {iface: {k: 0 for k in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "multicast")}
                    for iface in ("em1", "em2", "lo")}
        self.net["em1"].update(rx_packets=9_113_442_081, tx_packets=12_448_900_113,
                               rx_bytes=1_203_993_114_009, tx_bytes=14_992_004_776_120)
        self.net["em2"].update(rx_packets=11_904_377_209, tx_packets=6_002_119_870,
                               rx_bytes=15_110_443_901_288, tx_bytes=802_338_100_417)
        self.drops = {"em1": 0, "em2": 0}

    def advance_cpu(self, seconds, target, shift):
        """Add one interval of CPU time whose sar -u figures are ``target``."""
        per_cpu = seconds * HZ
        user, nice, system, iowait, steal, idle = fit_percentages(target, per_cpu * NCPU)
        soft = system * 15 // 100                  # the NIC receive path runs in softirq
        fields = {0: user, 1: nice, 2: system - soft, 7: soft, 4: iowait, 5: steal}
        busy = np.zeros(NCPU, dtype=np.int64)
        for k, (col, total) in enumerate(fields.items()):
            share = spread(int(total), NCPU, shift + 5 * k)
            self.cpu[:, col] += share
            busy += share
        self.cpu[:, 3] += per_cpu - busy
        assert (per_cpu - busy >= 0).all()
        self.uptime += per_cpu

    def add(self, name, per_second, seconds):
        self.c[name] += int(round(per_second * seconds))


#: sar -u for the ten minutes the load test ran before the report's first line
TEST_CPU = (4.41, 0.0, 5.12, 0.02, 0.0, 90.45)


def calm_cpu(rng):
    user = round(float(rng.uniform(1.2, 2.6)), 2)
    system = round(float(rng.uniform(1.5, 3.0)), 2)
    iowait = round(float(rng.uniform(0.0, 0.08)), 2)
    return (user, 0.0, system, iowait, 0.0, round(100 - user - system - iowait, 2))


def phase(label):
    """calm, test (load test running, memory fine), crunch (swapping)."""
    if label < "14:45:00":
        return "calm"
    if label < "15:02:00":
        return "test"
    return "crunch" if label < "15:07:30" else "after"


def memory_at(label, rng, swap_used):
    free = REPORT_MEMFREE.get(label, int(rng.normal(26_900_000, 150_000)))
    cached = 1_900_000 if free > 20_000_000 else max(160_000, free // 3)
    buffers = 412_000 if free > 20_000_000 else 36_000
    slab = 623_000
    anon = MEM_TOTAL_KB - free - cached - buffers - slab - 190_000
    return {
        "frmkb": free, "bufkb": buffers, "camkb": cached, "tlmkb": MEM_TOTAL_KB,
        "frskb": SWAP_TOTAL_KB - swap_used, "tlskb": SWAP_TOTAL_KB, "comkb": anon + 2_400_000 + swap_used,
        "activekb": int(anon * 0.9) + cached // 2, "inactkb": int(anon * 0.1) + cached // 2,
        "dirtykb": 180 if free > 20_000_000 else 5_200, "anonpgkb": anon, "slabkb": slab, "kstackkb": 9_800,
        "pgtblkb": 41_000 + anon // 600, "vmusedkb": 312_000,
        # 2.6.32 kernels have no MemAvailable: sadc records 0
        "availablekb": 0,
    }


def build_records():
    rng = np.random.default_rng(20140506)
    counters = Counters(rng)
    records = []
    previous = None
    swap_used_before = 0
    for k, when in enumerate(sample_times()):
        label = when.strftime("%H:%M:%S")
        seconds = (when - previous).total_seconds() if previous else 600
        stage = phase(label)
        target = REPORT_CPU.get(label) or (TEST_CPU if stage == "test" else calm_cpu(rng))
        counters.advance_cpu(int(seconds), target, shift=k)
        swap_free, swap_cad = REPORT_SWAP.get(label, (SWAP_TOTAL_KB, 0))
        swap_used = SWAP_TOTAL_KB - swap_free
        mem = memory_at(label, rng, swap_used)
        mem["caskb"] = swap_cad
        _advance_io(counters, stage, seconds, swap_used - swap_used_before, rng)
        swap_used_before = swap_used
        records.append(_record(when, counters, mem, stage, target, rng))
        previous = when
    return records


def _advance_io(counters, stage, seconds, swap_delta_kb, rng):
    """Paging, swapping, disk and network counters for one interval."""
    out_pages = max(swap_delta_kb, 0) // 4 + (int(rng.integers(800, 3000)) if stage == "crunch" else 0)
    in_pages = max(-swap_delta_kb, 0) // 4 + (int(rng.integers(300, 900)) * int(seconds) // 60
                                              if stage in ("crunch", "after") else 0)
    counters.c["pswpout"] += out_pages
    counters.c["pswpin"] += in_pages
    file_out = {"calm": 310.0, "test": 820.0, "crunch": 1900.0, "after": 1200.0}[stage]
    counters.add("pgpgout", file_out + out_pages * 4 / seconds, seconds)
    counters.add("pgpgin", 12.0 + in_pages * 4 / seconds, seconds)
    counters.add("pgfault", {"calm": 2100, "test": 38000, "crunch": 61000, "after": 29000}[stage], seconds)
    counters.add("pgmajfault", {"calm": 0.02, "test": 0.4, "crunch": 420.0, "after": 160.0}[stage], seconds)
    counters.add("pgfree", {"calm": 2600, "test": 310000, "crunch": 95000, "after": 240000}[stage], seconds)
    scan = {"calm": 0.0, "test": 0.0, "crunch": 52000.0, "after": 6000.0}[stage]
    counters.add("pgscan_kswapd", scan, seconds)
    counters.add("pgscan_direct", scan * 0.6, seconds)
    counters.add("pgsteal", scan * 1.1, seconds)
    counters.add("context_switch", {"calm": 9200, "test": 61000, "crunch": 44000, "after": 52000}[stage], seconds)
    counters.add("processes", 1.3, seconds)
    # sda: the swap device and the logs; a busy disk while swapping
    writes = file_out / 8 + out_pages * 4 / 64 / seconds
    reads = 0.4 + in_pages * 4 / 32 / seconds
    util = {"calm": 0.9, "test": 2.4, "crunch": 96.0, "after": 61.0}[stage]
    counters.add("wio", writes, seconds)
    counters.add("rio", reads, seconds)
    counters.add("nr_ios", writes + reads, seconds)
    counters.add("wr_sect", (file_out + out_pages * 4 / seconds) * 2, seconds)
    counters.add("rd_sect", (12.0 + in_pages * 4 / seconds) * 2, seconds)
    counters.add("tot_ticks", util * 10, seconds)
    counters.add("rq_ticks", {"calm": 12, "test": 40, "crunch": 61000, "after": 9000}[stage], seconds)
    counters.add("wr_ticks", {"calm": 10, "test": 30, "crunch": 52000, "after": 7000}[stage], seconds)
    counters.add("rd_ticks", {"calm": 1, "test": 4, "crunch": 9000, "after": 2200}[stage], seconds)
    # em2 faces the upstream image servers, em1 the clients (10 GbE each)
    em2_rx = {"calm": 3.1e6, "test": 1.12e9, "crunch": 4.6e8, "after": 8.1e8}[stage] * rng.uniform(0.97, 1.03)
    em1_rx = {"calm": 1.9e5, "test": 2.3e6, "crunch": 1.1e6, "after": 1.8e6}[stage]
    for iface, rx, tx in (("em2", em2_rx, em2_rx * 0.018), ("em1", em1_rx, em2_rx * 0.985), ("lo", 2e4, 2e4)):
        net = counters.net[iface]
        net["rx_bytes"] += int(rx * seconds)
        net["tx_bytes"] += int(tx * seconds)
        net["rx_packets"] += int(rx / 1420 * seconds)
        net["tx_packets"] += int(tx / 1420 * seconds)
    if stage == "crunch":
        counters.drops["em2"] += int(rng.integers(4000, 26000))


def _record(when, counters, mem, stage, target, rng):
    cpu_rows = [[0] * 10] + [list(map(int, row)) for row in counters.cpu]
    c = counters.c
    busy = 100 - target[5]
    load = {"calm": 1.1, "test": 6.5, "crunch": 31.0, "after": 18.0}[stage] * rng.uniform(0.9, 1.1)
    return {
        "time": when,
        "uptime_cs": counters.uptime,
        "cpu": cpu_rows,
        "tasks": {"context_switch": c["context_switch"], "processes": c["processes"]},
        "swapping": {"pswpin": c["pswpin"], "pswpout": c["pswpout"]},
        "paging": {k: c[k] for k in ("pgpgin", "pgpgout", "pgfault", "pgmajfault", "pgfree", "pgscan_kswapd",
                                     "pgscan_direct", "pgsteal")},
        "io": {"dk_drive": c["nr_ios"], "dk_drive_rio": c["rio"], "dk_drive_wio": c["wio"],
               "dk_drive_rblk": c["rd_sect"], "dk_drive_wblk": c["wr_sect"]},
        "memory": mem,
        "file": {"file_used": 9_216 if stage == "calm" else 31_872, "inode_used": 88_113,
                 "dentry_stat": 120_441, "pty_nr": 2},
        "queue": {"nr_running": max(1, int(busy / 100 * NCPU)), "procs_blocked": int(target[3] / 100 * 40),
                  "nr_threads": 611, "load_avg_1": int(load * 100), "load_avg_5": int(load * 70),
                  "load_avg_15": int(load * 40)},
        "disk": {(8, 0): {"nr_ios": c["nr_ios"], "rd_sect": c["rd_sect"], "wr_sect": c["wr_sect"],
                          "rd_ticks": c["rd_ticks"], "wr_ticks": c["wr_ticks"], "tot_ticks": c["tot_ticks"],
                          "rq_ticks": c["rq_ticks"]}},
        "net-dev": {iface: dict(counters.net[iface], speed=(10000 if iface != "lo" else 0), duplex=1)
                    for iface in ("em1", "em2", "lo")},
        "net-edev": {iface: {"rx_dropped": counters.drops.get(iface, 0)} for iface in ("em1", "em2", "lo")},
        "net-sock": {"sock_inuse": {"calm": 412, "test": 6_310, "crunch": 9_874, "after": 7_420}[stage],
                     "tcp_inuse": {"calm": 198, "test": 5_902, "crunch": 9_411, "after": 6_988}[stage],
                     "tcp_tw": {"calm": 611, "test": 14_002, "crunch": 8_120, "after": 12_550}[stage],
                     "udp_inuse": 9, "raw_inuse": 0, "frag_inuse": 0},
    }


def main(argv):
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent / "nginx-proxy-oom" / "sa06"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_sa(out, host=HOST, kernel=KERNEL, ncpu=NCPU, records=build_records(), utc_offset_minutes=8 * 60,
             tzname="CST")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv)

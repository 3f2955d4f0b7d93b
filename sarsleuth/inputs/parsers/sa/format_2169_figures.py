"""Figures of a 0x2169 file (sysstat 6.1-7.0), computed as sar 7.0 did.

Each statistics record is compared with the one before it in its segment
(a restart record starts a new one).  Rates are per second over the
interval of one CPU, ``uptime0`` on SMP hosts (jiffies at 100 Hz, the unit
of /proc/stat); CPU "all" is over the uptime summed over CPUs and each CPU
over its own ticks.  A 32-bit counter that went down wrapped (sar subtracts
unsigned ints); a wider one that went down counts as 0 (no negative figure).
Metric names are today's (``%usr``, ``rxkB/s``, ``file-nr``) so the figures
line up with every other source; sar 7.0 printed bytes per second for
interfaces, shown here divided by 1024.
"""
from __future__ import annotations

import numpy as np

from sarsleuth.inputs.parsers.sa.compute import Rows
from sarsleuth.inputs.parsers.sa import format_2169 as L
from sarsleuth.inputs.parsers.sa.records import gather, gather_bytes

HZ = 100.0


class _Pairs:
    """Current and previous values of fields at fixed offsets from each
    record's start (records with a previous record in their segment)."""

    def __init__(self, u8, index, endian, long_size):
        self.u8, self.e, self.long_size = u8, endian, long_size
        seg = index.segment
        has_prev = np.zeros(index.count, dtype=bool)
        has_prev[1:] = seg[1:] == seg[:-1]
        self.cur = np.flatnonzero(has_prev)
        self.prev = self.cur - 1
        self.offsets = index.offsets

    def field(self, rel, kind):
        """(current, previous) values as float64 and the counter's width."""
        if kind == "ul":
            kind = "u8" if self.long_size == 8 else "u4"
        values = gather(self.u8, self.offsets + rel, self.e + kind).astype(np.float64)
        return values[self.cur], values[self.prev], 32 if kind == "u4" else 64

    def delta(self, rel, kind):
        c, p, width = self.field(rel, kind)
        d = c - p
        if width == 32:
            return np.where(d < 0, d + 2.0 ** 32, d)
        return np.where(d < 0, 0.0, d)


def blocks(buf, index, hdr, shape, endian) -> list:
    """[(section, Rows)] of every figure sar 7.0 prints for the file."""
    u8 = np.frombuffer(buf, dtype=np.uint8)
    pairs = _Pairs(u8, index, endian, hdr.long_size)
    if not len(pairs.cur):
        return []
    rec = pairs.cur
    ull = {n: 16 * i for i, n in enumerate(L.ULL)}
    longs = {n: L.LONGS_AT + 8 * i for i, n in enumerate(L.LONGS)}
    ints = {n: L.INTS_AT + 4 * i for i, n in enumerate(L.INTS)}
    # one CPU's uptime where the writer kept it (SMP), the uptime otherwise
    itv0, itv_all = pairs.delta(ull["uptime0"], "u8"), pairs.delta(ull["uptime"], "u8")
    itv = np.where(itv0 > 0, itv0, itv_all)
    itv = np.where(itv == 0, 1.0, itv)
    g_itv = pairs.delta(ull["uptime"], "u8")
    g_itv = np.where(g_itv == 0, 1.0, g_itv)

    def rate(name):
        if name in ull:
            d = pairs.delta(ull[name], "u8")
        elif name in longs:
            d = pairs.delta(longs[name], "ul")
        else:
            d = pairs.delta(ints[name], "u4")
        return d / itv * HZ

    def level(name):
        if name in longs:
            return pairs.field(longs[name], "ul")[0]
        return pairs.field(ints[name], "u4")[0]

    def single(section, metrics):
        return (section, Rows(rec, np.zeros(len(rec), dtype=np.int64), np.array([""], dtype=object), metrics))

    out = [_cpu(pairs, ull, g_itv, hdr, shape, rec)]
    out.append(single("tasks", [("proc/s", rate("processes")), ("cswch/s", rate("context_swtch"))]))
    out.append(("interrupts", Rows(rec, np.zeros(len(rec), dtype=np.int64), np.array(["sum"], dtype=object),
                                   [("intr/s", rate("irq_sum"))])))
    out.append(single("swapping", [("pswpin/s", rate("pswpin")), ("pswpout/s", rate("pswpout"))]))
    out.append(single("paging", [("pgpgin/s", rate("pgpgin")), ("pgpgout/s", rate("pgpgout")),
                                 ("fault/s", rate("pgfault")), ("majflt/s", rate("pgmajfault"))]))
    out.append(single("io", [("tps", rate("dk_drive")), ("rtps", rate("dk_drive_rio")),
                             ("wtps", rate("dk_drive_wio")), ("bread/s", rate("dk_drive_rblk")),
                             ("bwrtn/s", rate("dk_drive_wblk"))]))
    frm, buf, cam, tlm = level("frmkb"), level("bufkb"), level("camkb"), level("tlmkb")
    frs, tls, cas = level("frskb"), level("tlskb"), level("caskb")
    page_kb = 4.0      # sar 7.0 counts pages of the writer's size: 4 kB on x86
    out.append(single("memory", [("kbmemfree", frm), ("kbmemused", tlm - frm), ("%memused", _pct(tlm - frm, tlm)),
                                 ("kbbuffers", buf), ("kbcached", cam),
                                 ("frmpg/s", _signed_rate(pairs, longs["frmkb"], itv) / page_kb),
                                 ("bufpg/s", _signed_rate(pairs, longs["bufkb"], itv) / page_kb),
                                 ("campg/s", _signed_rate(pairs, longs["camkb"], itv) / page_kb)]))
    out.append(single("swap", [("kbswpfree", frs), ("kbswpused", tls - frs), ("%swpused", _pct(tls - frs, tls)),
                               ("kbswpcad", cas)]))
    out.append(single("file", [("dentunusd", level("dentry_stat")), ("file-nr", level("file_used")),
                               ("inode-nr", level("inode_used"))]))
    out.append(single("queue", [("runq-sz", level("nr_running")), ("plist-sz", level("nr_threads")),
                                ("ldavg-1", level("load_avg_1") / 100), ("ldavg-5", level("load_avg_5") / 100),
                                ("ldavg-15", level("load_avg_15") / 100)]))
    out.append(single("net-sock", [("totsck", level("sock_inuse")), ("tcpsck", level("tcp_inuse")),
                                   ("udpsck", level("udp_inuse")), ("rawsck", level("raw_inuse")),
                                   ("ip-frag", level("frag_inuse"))]))
    out.append(single("net-nfs", [(m, rate(f)) for m, f in (
        ("call/s", "nfs_rpccnt"), ("retrans/s", "nfs_rpcretrans"), ("read/s", "nfs_readcnt"),
        ("write/s", "nfs_writecnt"), ("access/s", "nfs_accesscnt"), ("getatt/s", "nfs_getattcnt"))]))
    out.append(single("net-nfsd", [(m, rate(f)) for m, f in (
        ("scall/s", "nfsd_rpccnt"), ("badcall/s", "nfsd_rpcbad"), ("packet/s", "nfsd_netcnt"),
        ("udp/s", "nfsd_netudpcnt"), ("tcp/s", "nfsd_nettcpcnt"), ("hit/s", "nfsd_rchits"),
        ("miss/s", "nfsd_rcmisses"), ("sread/s", "nfsd_readcnt"), ("swrite/s", "nfsd_writecnt"),
        ("saccess/s", "nfsd_accesscnt"), ("sgetatt/s", "nfsd_getattcnt"))]))
    out += _serial(pairs, hdr, shape, itv, rec)
    out += _net(pairs, hdr, shape, itv, rec)
    out += _disks(pairs, hdr, shape, itv, rec)
    return out


def _pct(num, den):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1) * 100.0, 0.0)


def _signed_rate(pairs, rel, itv):
    """Change per second of a level (memory may go down: a signed figure)."""
    c, p, _w = pairs.field(rel, "ul")
    return (c - p) / itv * HZ


def _sp(c, p, itv):
    return np.where(c < p, 0.0, (c - p) / itv * 100.0)


def _cpu(pairs, ull, g_itv, hdr, shape, rec):
    names = [("%usr", "cpu_user"), ("%nice", "cpu_nice"), ("%sys", "cpu_system"), ("%iowait", "cpu_iowait"),
             ("%steal", "cpu_steal"), ("%idle", "cpu_idle")]
    recs, devs, values = [rec], [np.zeros(len(rec), dtype=np.int64)], {m: [] for m, _f in names}
    for metric, field in names:
        c, p, _w = pairs.field(ull[field], "u8")
        values[metric].append(_sp(c, p, g_itv))
    labels = ["all"]
    for k in range(shape.cpu_units):
        base = shape.cpu_at + k * shape.cpu_size
        cur = {f: pairs.field(base + 16 * i, "u8") for i, f in enumerate(("idle", "iowait", "user", "nice",
                                                                           "system", "steal"))}
        total_c = sum(v[0] for v in cur.values())
        total_p = sum(v[1] for v in cur.values())
        if not total_c.any():
            continue          # a CPU slot the writer never filled
        itv = total_c - total_p
        tickless = itv <= 0
        itv = np.where(tickless, 1.0, itv)
        for metric, field in names:
            c, p, _w = cur[field.replace("cpu_", "")]
            v = _sp(c, p, itv)
            values[metric].append(np.where(tickless, 100.0 if metric == "%idle" else 0.0, v))
        recs.append(rec)
        devs.append(np.full(len(rec), len(labels), dtype=np.int64))
        labels.append(str(k))
    return ("cpu", Rows(np.concatenate(recs), np.concatenate(devs), np.array(labels, dtype=object),
                        [(m, np.concatenate(v)) for m, v in values.items()]))


def _strings(pairs, offsets_rel, length):
    raw = gather_bytes(pairs.u8, pairs.offsets[pairs.cur] + offsets_rel, length)
    return [bytes(r).split(b"\0", 1)[0].decode("latin-1") for r in raw]


def _items(pairs, count, at, size, itv, rec, label_of, fields, metrics):
    """Rows of a per-item part: ``label_of(k)`` names item k (None: an
    unused slot); ``fields`` {name: (rel, kind)}; ``metrics`` [(metric,
    field, scale)]."""
    recs, devs, labels, values = [], [], [], {m: [] for m, _f, _s in metrics}
    for k in range(count):
        base = at + k * size
        label = label_of(base)
        if label is None:
            continue
        for metric, field, scale in metrics:
            rel, kind = fields[field]
            values[metric].append(pairs.delta(base + rel, kind) / itv * HZ * scale)
        recs.append(rec)
        devs.append(np.full(len(rec), len(labels), dtype=np.int64))
        labels.append(label)
    if not labels:
        return []
    return [Rows(np.concatenate(recs), np.concatenate(devs), np.array(labels, dtype=object),
                 [(m, np.concatenate(v)) for m, v in values.items()])]


def _serial(pairs, hdr, shape, itv, rec):
    fields = {n: (4 * i, "u4") for i, n in enumerate(("rx", "tx", "frame", "parity", "brk", "overrun"))}

    def label(base):
        line = pairs.field(base + 24, "u4")[0]
        return None if not len(line) or line[-1] >= 0xFFFFFFFF else str(int(line[-1]))
    metrics = [("rcvin/s", "rx", 1), ("xmtin/s", "tx", 1), ("framerr/s", "frame", 1), ("prtyerr/s", "parity", 1),
               ("brk/s", "brk", 1), ("ovrun/s", "overrun", 1)]
    return [("serial", r) for r in _items(pairs, hdr.serial, shape.serial_at, 32, itv, rec, label, fields, metrics)]


def _net(pairs, hdr, shape, itv, rec):
    fields = {n: (8 * i, "ul") for i, n in enumerate(L.NET_FIELDS)}

    def label(base):
        names = _strings(pairs, base + 128, 16)
        name = names[-1] if names else ""
        return None if name in ("", "?") else name
    dev = [("rxpck/s", "rx_packets", 1), ("txpck/s", "tx_packets", 1), ("rxkB/s", "rx_bytes", 1 / 1024),
           ("txkB/s", "tx_bytes", 1 / 1024), ("rxcmp/s", "rx_compressed", 1), ("txcmp/s", "tx_compressed", 1),
           ("rxmcst/s", "multicast", 1)]
    edev = [("rxerr/s", "rx_errors", 1), ("txerr/s", "tx_errors", 1), ("coll/s", "collisions", 1),
            ("rxdrop/s", "rx_dropped", 1), ("txdrop/s", "tx_dropped", 1), ("txcarr/s", "tx_carrier_errors", 1),
            ("rxfram/s", "rx_frame_errors", 1), ("rxfifo/s", "rx_fifo_errors", 1),
            ("txfifo/s", "tx_fifo_errors", 1)]
    out = [("net-dev", r) for r in _items(pairs, hdr.iface, shape.net_at, 144, itv, rec, label, fields, dev)]
    out += [("net-edev", r) for r in _items(pairs, hdr.iface, shape.net_at, 144, itv, rec, label, fields, edev)]
    return out


def _disks(pairs, hdr, shape, itv, rec):
    """sar -d of sysstat 7.0, with today's column names: a device is named
    devMAJOR-MINOR as recorded; empty slots (0-0) are not shown."""
    recs, devs, labels, values = [], [], [], {}
    for k in range(hdr.nr_disk):
        base = shape.disk_at + k * 80
        major = pairs.field(base + 72, "u4")[0]
        minor = pairs.field(base + 76, "u4")[0]
        if not len(major) or (major[-1] == 0 and minor[-1] == 0):
            continue
        nr_ios = pairs.delta(base + 64, "ul")
        rd, wr = pairs.delta(base, "u8"), pairs.delta(base + 16, "u8")
        ticks = pairs.delta(base + 32, "ul") + pairs.delta(base + 40, "ul")
        with np.errstate(divide="ignore", invalid="ignore"):
            per_io = np.where(nr_ios != 0, 1.0 / np.where(nr_ios != 0, nr_ios, 1), 0.0)
        figures = [("tps", nr_ios / itv * HZ), ("rkB/s", rd / itv * HZ / 2), ("wkB/s", wr / itv * HZ / 2),
                   ("areq-sz", (rd + wr) * per_io / 2), ("aqu-sz", pairs.delta(base + 56, "ul") / itv * HZ / 1000),
                   ("await", ticks * per_io), ("%util", pairs.delta(base + 48, "ul") / itv * HZ / 10)]
        for metric, v in figures:
            values.setdefault(metric, []).append(v)
        recs.append(rec)
        devs.append(np.full(len(rec), len(labels), dtype=np.int64))
        labels.append(f"dev{int(major[-1])}-{int(minor[-1])}")
    if not labels:
        return []
    return [("disk", Rows(np.concatenate(recs), np.concatenate(devs), np.array(labels, dtype=object),
                          [(m, np.concatenate(v)) for m, v in values.items()]))]

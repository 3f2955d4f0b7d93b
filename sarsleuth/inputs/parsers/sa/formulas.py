"""How sysstat turns an activity's counters into the figures ``sadf -d``
prints: one function per activity (or family), each taking a Context (see
``compute``) and returning [(metric, values)] with sysstat's column names.

Per-second rates are ``(now - before) / interval_cs * 100``; percentages
are 0 where their base is 0, as sysstat prints them.
"""
from __future__ import annotations

import numpy as np

#: Duplex codes of rd_stats.h (C_DUPLEX_HALF is 1).
C_DUPLEX_FULL = 2


# --- metric computations ------------------------------------------------------------
# Each takes a Context (see _sa_compute) and returns [(metric, values)], with
# the metric names exactly as sadf -d heads its columns.

def _rates(pairs):
    def compute(ctx):
        return [(metric, ctx.rate(name)) for metric, name in pairs]
    return compute


def _levels(pairs, scale=1.0):
    def compute(ctx):
        return [(metric, ctx.cur(name) * scale) for metric, name in pairs]
    return compute


def _pct(num, den):
    """num/den in percent, 0 where den is 0 (as sysstat prints it); a result
    that is not finite (damaged float fields) is left out as NaN."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        pct = np.where(den != 0, num / np.where(den != 0, den, 1) * 100.0, 0.0)
    return np.where(np.isfinite(pct), pct, np.nan)


def compute_paging(ctx):
    out = _rates([("pgpgin/s", "pgpgin"), ("pgpgout/s", "pgpgout"), ("fault/s", "pgfault"),
                  ("majflt/s", "pgmajfault"), ("pgfree/s", "pgfree"), ("pgscank/s", "pgscan_kswapd"),
                  ("pgscand/s", "pgscan_direct"), ("pgsteal/s", "pgsteal")])(ctx)
    if ctx.writer < NO_VMEFF_SINCE:
        scanned = ctx.delta("pgscan_kswapd") + ctx.delta("pgscan_direct")
        out.append(("%vmeff", _pct(ctx.delta("pgsteal"), scanned)))
    # pages promoted to / demoted from faster memory tiers (since 12.7.5)
    return out + [(m, ctx.rate(f)) for m, f in (("pgprom/s", "pgpromote"), ("pgdem/s", "pgdemote"))
                  if ctx.has(f)]


#: The first sysstat whose sar no longer printed %vmeff.
NO_VMEFF_SINCE = (12, 7, 5)


def compute_io(ctx):
    pairs = [("tps", "dk_drive"), ("rtps", "dk_drive_rio"), ("wtps", "dk_drive_wio"), ("dtps", "dk_drive_dio"),
             ("bread/s", "dk_drive_rblk"), ("bwrtn/s", "dk_drive_wblk"), ("bdscd/s", "dk_drive_dblk")]
    # sysstat shows 0 when a counter went backwards (a device was removed);
    # discard counts an older writer did not record are left out, not 0
    return [(metric, np.where(ctx.went_down(name), 0.0, ctx.rate(name))) for metric, name in pairs
            if ctx.has(name)]


def compute_memory(ctx):
    frm, buf, cam, tlm = ctx.cur("frmkb"), ctx.cur("bufkb"), ctx.cur("camkb"), ctx.cur("tlmkb")
    tls, com = ctx.cur("tlskb"), ctx.cur("comkb")
    notused = _not_used_memory(ctx, frm, buf, cam, tlm)
    out = [
        ("kbmemfree", frm), ("kbavail", _available(ctx, frm)), ("kbmemused", tlm - notused),
        ("%memused", _pct(tlm - notused, tlm)), ("kbbuffers", buf), ("kbcached", cam), ("kbcommit", com),
        ("%commit", _pct(com, tlm + tls)), ("kbactive", ctx.cur("activekb")), ("kbinact", ctx.cur("inactkb")),
        ("kbdirty", ctx.cur("dirtykb")), ("kbshmem", ctx.cur("shmemkb")), ("kbanonpg", ctx.cur("anonpgkb")),
        ("kbslab", ctx.cur("slabkb")),
        ("kbkstack", ctx.cur("kstackkb")), ("kbpgtbl", ctx.cur("pgtblkb")), ("kbvmused", ctx.cur("vmusedkb")),
    ]
    if ctx.writer < LAST_PAGE_RATES:
        out += _page_rates(ctx)
    # sysstat prints 0 for what an older kernel or writer did not record
    # (no MemAvailable before Linux 3.14...); a 0 would read as "no memory
    # available", so such metrics are left out instead.
    return [(m, v) for m, v in out if ctx.has(MEMORY_SOURCE.get(m, "frmkb"))]


#: The first sysstat whose sar no longer printed frmpg/s bufpg/s campg/s (-R).
LAST_PAGE_RATES = (11, 5, 4)


def _page_rates(ctx):
    """sar -R of releases before 11.5.4: pages freed, added to buffers and
    to the cache per second (negative when they shrink).  sysstat turned kB
    into pages with the page size of the machine rendering the file: 4 kB
    here, as on every x86 host."""
    def rate(name):
        now = np.floor(ctx.cur(name) / 4)
        before = np.floor(ctx.raw_prev(name).astype(np.float64) / 4)
        return (now - before) / ctx.itv * 100.0
    return [("frmpg/s", rate("frmkb")), ("bufpg/s", rate("bufkb")), ("campg/s", rate("camkb"))]


#: The first sysstat whose kbmemused left buffers, cache and slab out, and
#: the first that took it as total - available.
USED_WITHOUT_CACHE_SINCE = (11, 7, 4)
USED_BESIDE_AVAILABLE_SINCE = (12, 7, 8)


def _not_used_memory(ctx, frm, buf, cam, tlm):
    """What kbmemused leaves out of the total, by the rule of the sysstat
    that wrote the file: free memory until 11.7.3, free + buffers + cache +
    slab from 11.7.4, available memory from 12.7.8 (kbmemused is printed as
    that release printed it at capture time)."""
    if ctx.writer < USED_WITHOUT_CACHE_SINCE:
        return frm
    if ctx.writer >= USED_BESIDE_AVAILABLE_SINCE and ctx.has("availablekb"):
        return ctx.cur("availablekb")
    return np.minimum(frm + buf + cam + ctx.cur("slabkb"), tlm)


def _available(ctx, free):
    """MemAvailable, NaN (left out) where the kernel had none: before Linux
    3.14 sadc stores 0 there while free memory is not 0."""
    available = ctx.cur("availablekb")
    return np.where((available == 0) & (free > 0), np.nan, available)


#: The raw field each optional memory metric comes from.
MEMORY_SOURCE = {"kbavail": "availablekb", "kbactive": "activekb", "kbinact": "inactkb", "kbdirty": "dirtykb",
                 "kbanonpg": "anonpgkb", "kbslab": "slabkb", "kbkstack": "kstackkb", "kbpgtbl": "pgtblkb",
                 "kbvmused": "vmusedkb", "kbshmem": "shmemkb"}


def compute_swap(ctx):
    frs, tls, cas = ctx.cur("frskb"), ctx.cur("tlskb"), ctx.cur("caskb")
    return [("kbswpfree", frs), ("kbswpused", tls - frs), ("%swpused", _pct(tls - frs, tls)),
            ("kbswpcad", cas), ("%swpcad", _pct(cas, tls - frs))]


def compute_huge(ctx):
    fr, tl = ctx.cur("frhkb"), ctx.cur("tlhkb")
    out = [("kbhugfree", fr), ("kbhugused", tl - fr), ("%hugused", _pct(tl - fr, tl))]
    # reserved and surplus pages: recorded since sysstat 12.1.1 only
    return out + [(m, ctx.cur(f)) for m, f in (("kbhugrsvd", "rsvdhkb"), ("kbhugsurp", "surphkb")) if ctx.has(f)]


def compute_queue(ctx):
    return [("runq-sz", ctx.cur("nr_running")), ("plist-sz", ctx.cur("nr_threads")),
            ("ldavg-1", ctx.cur("load_avg_1") / 100), ("ldavg-5", ctx.cur("load_avg_5") / 100),
            ("ldavg-15", ctx.cur("load_avg_15") / 100)] + (
                # blocked tasks: recorded since sysstat 9.1.7
                [("blocked", ctx.cur("procs_blocked"))] if ctx.has("procs_blocked") else [])


def compute_disk(ctx):
    nr_ios = ctx.delta("nr_ios")
    ticks = ctx.delta("rd_ticks") + ctx.delta("wr_ticks") + ctx.delta("dc_ticks")
    sectors = ctx.delta("rd_sect") + ctx.delta("wr_sect") + ctx.delta("dc_sect")
    with np.errstate(divide="ignore", invalid="ignore"):
        await_ms = np.where(nr_ios != 0, ticks / np.where(nr_ios != 0, nr_ios, 1), 0.0)
        arqsz = np.where(nr_ios != 0, sectors / np.where(nr_ios != 0, nr_ios, 1), 0.0)
    out = [("tps", ctx.rate("nr_ios")), ("rkB/s", ctx.rate("rd_sect") / 2), ("wkB/s", ctx.rate("wr_sect") / 2),
           ("dkB/s", ctx.rate("dc_sect") / 2), ("areq-sz", arqsz / 2), ("aqu-sz", ctx.rate("rq_ticks") / 1000.0),
           ("await", await_ms), ("%util", ctx.rate("tot_ticks") / 10.0)]
    if ctx.writer < LAST_SVCTM:
        # sar printed the service time until 12.1.1: busy time per I/O (ms)
        busy = ctx.delta("tot_ticks")
        with np.errstate(divide="ignore", invalid="ignore"):
            out.insert(-1, ("svctm", np.where(nr_ios != 0, busy / np.where(nr_ios != 0, nr_ios, 1), 0.0)))
    return [(m, v) for m, v in out if m != "dkB/s" or ctx.has("dc_sect")]


#: The first sysstat whose sar no longer printed svctm.
LAST_SVCTM = (12, 1, 2)


def compute_net_dev(ctx):
    rxkb, txkb = ctx.rate("rx_bytes"), ctx.rate("tx_bytes")
    speed = ctx.cur("speed") * 1e6
    full = ctx.string_code("duplex") == C_DUPLEX_FULL
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(full, np.maximum(rxkb, txkb), rxkb + txkb) * 800 / np.where(speed > 0, speed, 1)
    util = np.where(speed > 0, util, 0.0)
    return [("rxpck/s", ctx.rate("rx_packets")), ("txpck/s", ctx.rate("tx_packets")), ("rxkB/s", rxkb / 1024),
            ("txkB/s", txkb / 1024), ("rxcmp/s", ctx.rate("rx_compressed")),
            ("txcmp/s", ctx.rate("tx_compressed")), ("rxmcst/s", ctx.rate("multicast"))] + (
                # writers before sysstat 10 recorded no link speed: no utilisation
                [("%ifutil", util)] if ctx.has("speed") else [])


def compute_fs(ctx):
    blocks, bfree, bavail = ctx.cur("f_blocks"), ctx.cur("f_bfree"), ctx.cur("f_bavail")
    files, ffree = ctx.cur("f_files"), ctx.cur("f_ffree")
    return [("MBfsfree", bfree / 1024 / 1024), ("MBfsused", (blocks - bfree) / 1024 / 1024),
            ("%fsused", _pct(blocks - bfree, blocks)), ("%ufsused", _pct(blocks - bavail, blocks)),
            ("Ifree", ffree), ("Iused", files - ffree), ("%Iused", _pct(files - ffree, files))]


def compute_pwr_cpu(ctx):
    return [("MHz", ctx.cur("cpufreq") / 100)]


def compute_fan(ctx):
    return [("rpm", ctx.cur("rpm")), ("drpm", ctx.cur("rpm") - ctx.cur("rpm_min"))]


def _sensor(value, low, high, metric, pct_metric):
    def compute(ctx):
        v, lo, hi = ctx.cur(value), ctx.cur(low), ctx.cur(high)
        return [(metric, v), (pct_metric, _pct(v - lo, hi - lo))]
    return compute


def compute_usb(ctx):
    return [("maxpower", ctx.cur("bmaxpower") * 2)]


def _psi(prefix, some_total, full_total, some_avgs, full_avgs):
    def compute(ctx):
        out = [(f"%s{prefix}-{w}", ctx.cur(name) / 100) for w, name in zip((10, 60, 300), some_avgs)]
        out.append((f"%s{prefix}", ctx.delta(some_total) / (100 * ctx.itv)))
        if full_total:
            out += [(f"%f{prefix}-{w}", ctx.cur(name) / 100) for w, name in zip((10, 60, 300), full_avgs)]
            out.append((f"%f{prefix}", ctx.delta(full_total) / (100 * ctx.itv)))
        return out
    return compute


def compute_softnet(ctx):
    out = [(m, ctx.rate(f)) for m, f in (("total/s", "processed"), ("dropd/s", "dropped"),
                                         ("squeezd/s", "time_squeeze"), ("rx_rps/s", "received_rps"),
                                         ("flw_lim/s", "flow_limit"))]
    if ctx.has("backlog_len"):      # recorded since sysstat 12.6.0 only
        out.append(("blg_len", ctx.cur("backlog_len")))
    return out


def compute_irq(ctx):
    # sysstat shows 0 for CPU "all" when the count went backwards
    return [("intr/s", np.where(ctx.went_down("irq_nr"), 0.0, ctx.rate("irq_nr")))]


# CPU statistics are handled apart (sum over CPUs, offline CPUs): see _sa_compute.

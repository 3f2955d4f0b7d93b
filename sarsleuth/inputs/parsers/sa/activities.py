"""What each sysstat activity holds, where its fields lie, and how sysstat
turns its counters into the figures ``sadf -d`` prints.

Field layouts come in two flavours:

* the current (0x2175) one, described only by field *names* per group
  (64-bit, long, 32-bit, then character strings): offsets follow from the
  counts the file declares for the activity, so files written by newer
  sysstat versions with extra fields still read, and fields an older writer
  did not have read as zero;
* the fixed layouts of older formats (and of older activity magics), given
  as explicit byte offsets derived from the structure definitions of the
  sysstat releases that wrote them.

Metric formulas follow sysstat's rendering code: per-second rates are
``(now - before) / interval_cs * 100``, percentages and special cases (offline
CPUs, tickless CPUs, counters going backwards) as sysstat handles them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from sarsleuth.inputs.parsers.sa.fields import (  # noqa: F401 (CPU_FIELDS, SOFTNET_FIELDS: used by readers)
    CPU_FIELDS, EIP6_FIELDS, EIP_FIELDS, Field, IO_FIELDS, IP6_FIELDS, IP_FIELDS, KTABLES_FIELDS, Layout,
    MEMORY_FIELDS, NET_DEV_FIELDS, NET_EDEV_FIELDS, SERIAL_FIELDS, SOFTNET_FIELDS, _fixed, _old_cpu, _old_disk_90,
    _old_disk_a, _old_disk_b, _old_fs, _old_group, _old_huge, _old_io_u32, _old_io_u64, _old_irq_u64_16,
    _old_ktables, _old_memory, _old_net_dev_a, _old_net_dev_b, _old_net_dev_c, _old_net_edev_a, _old_net_edev_b,
    _old_pcsw, _old_queue_a, _old_queue_b, _old_serial, _old_softnet)
from sarsleuth.inputs.parsers.sa.formulas import (  # noqa: F401 (_pct: used by tests)
    _levels, _pct, _psi, _rates, _sensor, compute_disk, compute_fan, compute_fs, compute_huge, compute_io,
    compute_irq, compute_memory, compute_net_dev, compute_paging, compute_pwr_cpu, compute_queue, compute_softnet,
    compute_usb)

A_CPU, A_PCSW, A_IRQ, A_SWAP, A_PAGE, A_IO, A_MEMORY, A_KTABLES, A_QUEUE, A_SERIAL = range(1, 11)
A_DISK, A_NET_DEV, A_NET_EDEV, A_NET_NFS, A_NET_NFSD, A_NET_SOCK, A_NET_IP, A_NET_EIP = range(11, 19)
A_NET_ICMP, A_NET_EICMP, A_NET_TCP, A_NET_ETCP, A_NET_UDP, A_NET_SOCK6, A_NET_IP6 = range(19, 26)
A_NET_EIP6, A_NET_ICMP6, A_NET_EICMP6, A_NET_UDP6, A_PWR_CPU, A_PWR_FAN, A_PWR_TEMP = range(26, 33)
A_PWR_IN, A_HUGE, A_PWR_FREQ, A_PWR_USB, A_FS, A_NET_FC, A_NET_SOFT = range(33, 40)
A_PSI_CPU, A_PSI_IO, A_PSI_MEM = range(40, 43)

BASE = 0x8A   # sysstat's ACTIVITY_MAGIC_BASE



@dataclass(frozen=True)
class Spec:
    """An activity as sarsleuth knows it."""

    id: int
    section: str
    magics: tuple                 # activity magics of the current layout
    ull: tuple = ()               # field names, 64-bit group (doubles too, see dbl)
    ul: tuple = ()                # field names, C long group
    u: tuple = ()                 # field names, 32-bit group
    strings: tuple = ()           # (name, offset after the numeric fields, length)
    dbl: bool = False             # the 64-bit group holds doubles (sensors)
    keyed_by: str = "single"      # how an item finds itself in the previous record
    new_item_from_zero: bool = False   # an item absent before is compared to zeros
    compute: Callable | None = None
    old: dict = field(default_factory=dict)   # (format family, magic) -> layout builder
    # fields later releases append to a group (64-bit, long), read where a
    # file declares them; the writer of test files leaves them out
    ull_newer: tuple = ()
    ul_newer: tuple = ()

    def current_layout(self, types: tuple) -> Layout:
        """Offsets for a 0x2175 file declaring ``types`` field counts."""
        fields = []
        groups = ((self.ull + self.ull_newer, "f64" if self.dbl else "u64", 0, 8),
                  (self.ul + self.ul_newer, "ul", types[0] * 8, 8),
                  (self.u, "u32", types[0] * 8 + types[1] * 8, 4))
        for k, (names, kind, start, width) in enumerate(groups):
            for i, name in enumerate(names[:types[k]]):
                fields.append(Field(name, start + i * width, kind))
        strings_base = types[0] * 8 + types[1] * 8 + types[2] * 4
        strings = tuple((name, strings_base + off, length) for name, off, length in self.strings)
        return Layout(tuple(fields), strings)


OLD = "old"   # family key for the formats 0x2170, 0x2171 and 0x2173
OLD_90 = "old-9.0"   # sysstat 9.0.x, where a layout differs from 9.1's under the same magic
NEW = "new"   # 0x2175 with a magic older than the current one


SPECS: dict[int, Spec] = {s.id: s for s in [
    Spec(A_CPU, "cpu", (BASE + 1,), ull=CPU_FIELDS, keyed_by="cpu", old={(OLD, BASE): _old_cpu}),
    Spec(A_PCSW, "tasks", (BASE + 1,), ull=("context_switch",), ul=("processes",),
         compute=_rates([("proc/s", "processes"), ("cswch/s", "context_switch")]), old={(OLD, BASE): _old_pcsw}),
    Spec(A_IRQ, "interrupts", (BASE + 2,), u=("irq_nr",), strings=(("irq_name", 0, 8),), keyed_by="irq",
         compute=compute_irq,
         old={(OLD, BASE): _old_irq_u64_16, (NEW, BASE + 1): lambda size: Layout((Field("irq_nr", 0, "u64"),))}),
    Spec(A_SWAP, "swapping", (BASE,), ul=("pswpin", "pswpout"),
         compute=_rates([("pswpin/s", "pswpin"), ("pswpout/s", "pswpout")]),
         old={(OLD, BASE): lambda size: Layout(tuple(_fixed(("pswpin", "pswpout"), "ul", 8)))}),
    Spec(A_PAGE, "paging", (BASE,), ul=("pgpgin", "pgpgout", "pgfault", "pgmajfault", "pgfree", "pgscan_kswapd",
                                         "pgscan_direct", "pgsteal"),
         compute=compute_paging,
         old={(OLD, BASE): _old_group(("pgpgin", "pgpgout", "pgfault", "pgmajfault", "pgfree", "pgscan_kswapd",
                                       "pgscan_direct", "pgsteal"), "ul", 8)},
         ul_newer=("pgpromote", "pgdemote")),             # sysstat 12.7.5
    Spec(A_IO, "io", (BASE + 1,), ull=IO_FIELDS, compute=compute_io,
         old={(OLD, BASE): _old_io_u32, (OLD, BASE + 1): _old_io_u64}),
    Spec(A_MEMORY, "memory", (BASE + 1,), ull=MEMORY_FIELDS, compute=compute_memory,
         old={(OLD, BASE): _old_memory}, ull_newer=("shmemkb",)),     # sysstat 12.7.8
    Spec(A_HUGE, "hugepages", (BASE + 1,), ull=("frhkb", "tlhkb", "rsvdhkb", "surphkb"), compute=compute_huge,
         old={(OLD, BASE): _old_huge}),
    Spec(A_KTABLES, "file", (BASE + 1,), ull=KTABLES_FIELDS,
         compute=_levels([("dentunusd", "dentry_stat"), ("file-nr", "file_used"), ("inode-nr", "inode_used"),
                          ("pty-nr", "pty_nr")]),
         old={(OLD, BASE): _old_ktables}),
    Spec(A_QUEUE, "queue", (BASE + 2,), ull=("nr_running", "procs_blocked", "nr_threads"),
         u=("load_avg_1", "load_avg_5", "load_avg_15"), compute=compute_queue,
         old={(OLD, BASE): _old_queue_a, (OLD, BASE + 1): _old_queue_b}),
    Spec(A_SERIAL, "serial", (BASE + 1,), u=SERIAL_FIELDS, keyed_by="line",
         compute=_rates([("rcvin/s", "rx"), ("xmtin/s", "tx"), ("framerr/s", "frame"), ("prtyerr/s", "parity"),
                         ("brk/s", "brk"), ("ovrun/s", "overrun")]),
         old={(OLD, BASE): _old_serial}),
    Spec(A_DISK, "disk", (BASE + 2,), ull=("nr_ios", "wwn0", "wwn1"), ul=("rd_sect", "wr_sect", "dc_sect"),
         u=("rd_ticks", "wr_ticks", "tot_ticks", "rq_ticks", "major", "minor", "dc_ticks", "part_nr"),
         keyed_by="disk", new_item_from_zero=True, compute=compute_disk,
         old={(OLD, BASE): _old_disk_a, (OLD, BASE + 1): _old_disk_b, (OLD_90, BASE): _old_disk_90}),
    Spec(A_NET_DEV, "net-dev", (BASE + 3,), ull=NET_DEV_FIELDS, u=("speed",),
         strings=(("interface", 0, 16), ("duplex", 16, 1)), keyed_by="interface", new_item_from_zero=True,
         compute=compute_net_dev,
         old={(OLD, BASE): _old_net_dev_a, (OLD, BASE + 1): _old_net_dev_b, (OLD, BASE + 2): _old_net_dev_c}),
    Spec(A_NET_EDEV, "net-edev", (BASE + 2,), ull=NET_EDEV_FIELDS, strings=(("interface", 0, 16),),
         keyed_by="interface", new_item_from_zero=True,
         compute=_rates([("rxerr/s", "rx_errors"), ("txerr/s", "tx_errors"), ("coll/s", "collisions"),
                         ("rxdrop/s", "rx_dropped"), ("txdrop/s", "tx_dropped"),
                         ("txcarr/s", "tx_carrier_errors"), ("rxfram/s", "rx_frame_errors"),
                         ("rxfifo/s", "rx_fifo_errors"), ("txfifo/s", "tx_fifo_errors")]),
         old={(OLD, BASE): _old_net_edev_a, (OLD, BASE + 1): _old_net_edev_b}),
    Spec(A_NET_NFS, "net-nfs", (BASE,), u=("rpccnt", "rpcretrans", "readcnt", "writecnt", "accesscnt", "getattcnt"),
         compute=_rates([("call/s", "rpccnt"), ("retrans/s", "rpcretrans"), ("read/s", "readcnt"),
                         ("write/s", "writecnt"), ("access/s", "accesscnt"), ("getatt/s", "getattcnt")]),
         old={(OLD, BASE): _old_group(("rpccnt", "rpcretrans", "readcnt", "writecnt", "accesscnt", "getattcnt"),
                                      "u32", 4)}),
    Spec(A_NET_NFSD, "net-nfsd", (BASE,), u=("rpccnt", "rpcbad", "netcnt", "netudpcnt", "nettcpcnt", "rchits",
                                             "rcmisses", "readcnt", "writecnt", "accesscnt", "getattcnt"),
         compute=_rates([("scall/s", "rpccnt"), ("badcall/s", "rpcbad"), ("packet/s", "netcnt"),
                         ("udp/s", "netudpcnt"), ("tcp/s", "nettcpcnt"), ("hit/s", "rchits"),
                         ("miss/s", "rcmisses"), ("sread/s", "readcnt"), ("swrite/s", "writecnt"),
                         ("saccess/s", "accesscnt"), ("sgetatt/s", "getattcnt")]),
         old={(OLD, BASE): _old_group(("rpccnt", "rpcbad", "netcnt", "netudpcnt", "nettcpcnt", "rchits",
                                       "rcmisses", "readcnt", "writecnt", "accesscnt", "getattcnt"), "u32", 4)}),
    Spec(A_NET_SOCK, "net-sock", (BASE,), u=("sock_inuse", "tcp_inuse", "tcp_tw", "udp_inuse", "raw_inuse",
                                             "frag_inuse"),
         compute=_levels([("totsck", "sock_inuse"), ("tcpsck", "tcp_inuse"), ("udpsck", "udp_inuse"),
                          ("rawsck", "raw_inuse"), ("ip-frag", "frag_inuse"), ("tcp-tw", "tcp_tw")]),
         old={(OLD, BASE): _old_group(("sock_inuse", "tcp_inuse", "tcp_tw", "udp_inuse", "raw_inuse",
                                       "frag_inuse"), "u32", 4)}),
    Spec(A_NET_IP, "net-ip", (BASE + 2,), ull=IP_FIELDS,
         compute=_rates(list(zip(("irec/s", "fwddgm/s", "idel/s", "orq/s", "asmrq/s", "asmok/s", "fragok/s",
                                  "fragcrt/s"), IP_FIELDS))),
         old={(OLD, BASE): _old_group(IP_FIELDS, "ul", 8), (OLD, BASE + 1): _old_group(IP_FIELDS, "u64", 16)}),
    Spec(A_NET_EIP, "net-eip", (BASE + 2,), ull=EIP_FIELDS,
         compute=_rates(list(zip(("ihdrerr/s", "iadrerr/s", "iukwnpr/s", "idisc/s", "odisc/s", "onort/s",
                                  "asmf/s", "fragf/s"), EIP_FIELDS))),
         old={(OLD, BASE): _old_group(EIP_FIELDS, "ul", 8), (OLD, BASE + 1): _old_group(EIP_FIELDS, "u64", 16)}),
]}


def _simple_rate_spec(act_id, section, magic, group, names, metrics, old_kind="ul", old_stride=8):
    kwargs = {group: names}
    return Spec(act_id, section, (magic,), compute=_rates(list(zip(metrics, names))),
                old={(OLD, magic): _old_group(names, old_kind, old_stride)}, **kwargs)


_ICMP = ("InMsgs", "OutMsgs", "InEchos", "InEchoReps", "OutEchos", "OutEchoReps", "InTimestamps",
         "InTimestampReps", "OutTimestamps", "OutTimestampReps", "InAddrMasks", "InAddrMaskReps", "OutAddrMasks",
         "OutAddrMaskReps")
_EICMP = ("InErrors", "OutErrors", "InDestUnreachs", "OutDestUnreachs", "InTimeExcds", "OutTimeExcds",
          "InParmProbs", "OutParmProbs", "InSrcQuenchs", "OutSrcQuenchs", "InRedirects", "OutRedirects")
_ICMP6 = ("InMsgs6", "OutMsgs6", "InEchos6", "InEchoReplies6", "OutEchoReplies6", "InGroupMembQueries6",
          "InGroupMembResponses6", "OutGroupMembResponses6", "InGroupMembReductions6", "OutGroupMembReductions6",
          "InRouterSolicits6", "OutRouterSolicits6", "InRouterAdvertisements6", "InNeighborSolicits6",
          "OutNeighborSolicits6", "InNeighborAdvertisements6", "OutNeighborAdvertisements6")
_EICMP6 = ("InErrors6", "InDestUnreachs6", "OutDestUnreachs6", "InTimeExcds6", "OutTimeExcds6",
           "InParmProblems6", "OutParmProblems6", "InRedirects6", "OutRedirects6", "InPktTooBigs6",
           "OutPktTooBigs6")

for _spec in [
    _simple_rate_spec(A_NET_ICMP, "net-icmp", BASE, "ul", _ICMP,
                      ("imsg/s", "omsg/s", "iech/s", "iechr/s", "oech/s", "oechr/s", "itm/s", "itmr/s", "otm/s",
                       "otmr/s", "iadrmk/s", "iadrmkr/s", "oadrmk/s", "oadrmkr/s")),
    _simple_rate_spec(A_NET_EICMP, "net-eicmp", BASE, "ul", _EICMP,
                      ("ierr/s", "oerr/s", "idstunr/s", "odstunr/s", "itmex/s", "otmex/s", "iparmpb/s",
                       "oparmpb/s", "isrcq/s", "osrcq/s", "iredir/s", "oredir/s")),
    _simple_rate_spec(A_NET_TCP, "net-tcp", BASE, "ul", ("ActiveOpens", "PassiveOpens", "InSegs", "OutSegs"),
                      ("active/s", "passive/s", "iseg/s", "oseg/s")),
    _simple_rate_spec(A_NET_ETCP, "net-etcp", BASE, "ul",
                      ("AttemptFails", "EstabResets", "RetransSegs", "InErrs", "OutRsts"),
                      ("atmptf/s", "estres/s", "retrans/s", "isegerr/s", "orsts/s")),
    _simple_rate_spec(A_NET_UDP, "net-udp", BASE, "ul", ("InDatagrams", "OutDatagrams", "NoPorts", "InErrors"),
                      ("idgm/s", "odgm/s", "noport/s", "idgmerr/s")),
    _simple_rate_spec(A_NET_ICMP6, "net-icmp6", BASE, "ul", _ICMP6,
                      ("imsg6/s", "omsg6/s", "iech6/s", "iechr6/s", "oechr6/s", "igmbq6/s", "igmbr6/s",
                       "ogmbr6/s", "igmbrd6/s", "ogmbrd6/s", "irtsol6/s", "ortsol6/s", "irtad6/s", "inbsol6/s",
                       "onbsol6/s", "inbad6/s", "onbad6/s")),
    _simple_rate_spec(A_NET_EICMP6, "net-eicmp6", BASE, "ul", _EICMP6,
                      ("ierr6/s", "idtunr6/s", "odtunr6/s", "itmex6/s", "otmex6/s", "iprmpb6/s", "oprmpb6/s",
                       "iredir6/s", "oredir6/s", "ipck2b6/s", "opck2b6/s")),
    _simple_rate_spec(A_NET_UDP6, "net-udp6", BASE, "ul",
                      ("InDatagrams6", "OutDatagrams6", "NoPorts6", "InErrors6"),
                      ("idgm6/s", "odgm6/s", "noport6/s", "idgmer6/s")),
    Spec(A_NET_SOCK6, "net-sock6", (BASE,), u=("tcp6_inuse", "udp6_inuse", "raw6_inuse", "frag6_inuse"),
         compute=_levels([("tcp6sck", "tcp6_inuse"), ("udp6sck", "udp6_inuse"), ("raw6sck", "raw6_inuse"),
                          ("ip6-frag", "frag6_inuse")]),
         old={(OLD, BASE): _old_group(("tcp6_inuse", "udp6_inuse", "raw6_inuse", "frag6_inuse"), "u32", 4)}),
    Spec(A_NET_IP6, "net-ip6", (BASE + 2,), ull=IP6_FIELDS,
         compute=_rates(list(zip(("irec6/s", "fwddgm6/s", "idel6/s", "orq6/s", "asmrq6/s", "asmok6/s",
                                  "imcpck6/s", "omcpck6/s", "fragok6/s", "fragcr6/s"), IP6_FIELDS))),
         old={(OLD, BASE): _old_group(IP6_FIELDS, "ul", 8), (OLD, BASE + 1): _old_group(IP6_FIELDS, "u64", 16)}),
    Spec(A_NET_EIP6, "net-eip6", (BASE + 2,), ull=EIP6_FIELDS,
         compute=_rates(list(zip(("ihdrer6/s", "iadrer6/s", "iukwnp6/s", "i2big6/s", "idisc6/s", "odisc6/s",
                                  "inort6/s", "onort6/s", "asmf6/s", "fragf6/s", "itrpck6/s"), EIP6_FIELDS))),
         old={(OLD, BASE): _old_group(EIP6_FIELDS, "ul", 8), (OLD, BASE + 1): _old_group(EIP6_FIELDS, "u64", 16)}),
    Spec(A_PWR_CPU, "power-cpu", (BASE,), ul=("cpufreq",), keyed_by="cpu", compute=compute_pwr_cpu,
         old={(OLD, BASE): lambda size: Layout((Field("cpufreq", 0, "ul"),))}),
    Spec(A_PWR_FAN, "power-fan", (BASE,), ull=("rpm", "rpm_min"), dbl=True, strings=(("device", 0, 20),),
         keyed_by="position", compute=compute_fan,
         old={(OLD, BASE): lambda size: Layout(tuple(_fixed(("rpm", "rpm_min"), "f64", 8)),
                                               (("device", 16, 20),))}),
    Spec(A_PWR_TEMP, "power-temp", (BASE,), ull=("temp", "temp_min", "temp_max"), dbl=True,
         strings=(("device", 0, 20),), keyed_by="position",
         compute=_sensor("temp", "temp_min", "temp_max", "degC", "%temp"),
         old={(OLD, BASE): lambda size: Layout(tuple(_fixed(("temp", "temp_min", "temp_max"), "f64", 8)),
                                               (("device", 24, 20),))}),
    Spec(A_PWR_IN, "power-in", (BASE,), ull=("in", "in_min", "in_max"), dbl=True,
         strings=(("device", 0, 20),), keyed_by="position",
         compute=_sensor("in", "in_min", "in_max", "inV", "%in"),
         old={(OLD, BASE): lambda size: Layout(tuple(_fixed(("in", "in_min", "in_max"), "f64", 8)),
                                               (("device", 24, 20),))}),
    Spec(A_PWR_USB, "power-usb", (BASE,), u=("bus_nr", "vendor_id", "product_id", "bmaxpower"),
         strings=(("manufacturer", 0, 24), ("product", 24, 48)), keyed_by="usb", compute=compute_usb,
         old={(OLD, BASE): lambda size: Layout(tuple(_fixed(("bus_nr", "vendor_id", "product_id", "bmaxpower"),
                                                            "u32", 4)),
                                               (("manufacturer", 16, 24), ("product", 40, 48)))}),
    Spec(A_FS, "filesystem", (BASE + 1,), ull=("f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree"),
         strings=(("fs_name", 0, 128), ("mountp", 128, 128)), keyed_by="filesystem", compute=compute_fs,
         old={(OLD, BASE): _old_fs}),
    Spec(A_NET_FC, "fchost", (BASE,), ul=("f_rxframes", "f_txframes", "f_rxwords", "f_txwords"),
         strings=(("fchost_name", 0, 16),), keyed_by="fchost", new_item_from_zero=True,
         compute=_rates([("fch_rxf/s", "f_rxframes"), ("fch_txf/s", "f_txframes"), ("fch_rxw/s", "f_rxwords"),
                         ("fch_txw/s", "f_txwords")])),
    Spec(A_NET_SOFT, "softnet", (BASE,), u=SOFTNET_FIELDS, keyed_by="cpu", compute=compute_softnet,
         old={(OLD, BASE): _old_softnet}),
    Spec(A_PSI_CPU, "psi-cpu", (BASE,), ull=("some_cpu_total",),
         ul=("some_acpu_10", "some_acpu_60", "some_acpu_300"),
         compute=_psi("cpu", "some_cpu_total", None, ("some_acpu_10", "some_acpu_60", "some_acpu_300"), ())),
    Spec(A_PSI_IO, "psi-io", (BASE,), ull=("some_io_total", "full_io_total"),
         ul=("some_aio_10", "some_aio_60", "some_aio_300", "full_aio_10", "full_aio_60", "full_aio_300"),
         compute=_psi("io", "some_io_total", "full_io_total", ("some_aio_10", "some_aio_60", "some_aio_300"),
                      ("full_aio_10", "full_aio_60", "full_aio_300"))),
    Spec(A_PSI_MEM, "psi-mem", (BASE,), ull=("some_mem_total", "full_mem_total"),
         ul=("some_amem_10", "some_amem_60", "some_amem_300", "full_amem_10", "full_amem_60", "full_amem_300"),
         compute=_psi("mem", "some_mem_total", "full_mem_total", ("some_amem_10", "some_amem_60", "some_amem_300"),
                      ("full_amem_10", "full_amem_60", "full_amem_300"))),
]:
    SPECS[_spec.id] = _spec

#: Section names of activity ids, for messages about skipped activities.
ACTIVITY_NAMES = {spec.id: spec.section for spec in SPECS.values()}
ACTIVITY_NAMES[A_PWR_FREQ] = "power-wghfreq"
MEMORY_SECTIONS = ("memory", "swap")


def resolve_layout(spec: Spec, family: str, magic: int, size: int, types: tuple,
                   version: str = "") -> Layout | None:
    """The layout of one activity in one file, or None when its magic is one
    sarsleuth does not know (then the activity is skipped)."""
    if family == "old" and version.startswith("9.0.") and (OLD_90, magic) in spec.old:
        return fit(spec.old[(OLD_90, magic)](size), size)
    if family == "2175" and magic in spec.magics:
        return fit(spec.current_layout(types), size)
    key = (OLD if family == "old" else NEW, magic)
    if family == "old" and magic in spec.magics and (OLD, magic) not in spec.old:
        # structure unchanged since: old files use the same offsets, with
        # every field of each group present as far as the size allows
        return fit(spec.current_layout(_types_for_size(spec, size)), size)
    builder = spec.old.get(key)
    if builder is None:
        return None
    return fit(builder(size), size)


def fit(layout: Layout | None, size: int) -> Layout | None:
    """``layout`` if its fields lie inside an item of ``size`` bytes (strings
    that overflow are dropped), else None."""
    if layout is None or any(f.offset + (4 if f.kind == "u32" else 8) > size for f in layout.fields):
        return None
    strings = tuple(s for s in layout.strings if s[1] + s[2] <= size)
    return Layout(layout.fields, strings)


def _types_for_size(spec: Spec, size: int) -> tuple:
    ull = min(len(spec.ull), size // 8)
    rest = size - ull * 8
    ul = min(len(spec.ul), rest // 8)
    rest -= ul * 8
    return ull, ul, min(len(spec.u), rest // 4)

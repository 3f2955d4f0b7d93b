"""Where the fields of an activity's item lie: the resolved layout types,
and the fixed layouts of older formats (and older activity magics), given as
explicit byte offsets derived from the structure definitions of the sysstat
releases that wrote them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """One numeric field: its byte offset in an item and its C type
    (``u64``, ``ul`` = C long, ``u32``, ``f64`` = double)."""

    name: str
    offset: int
    kind: str


@dataclass(frozen=True)
class Layout:
    """Resolved byte layout of one item of an activity in one file."""

    fields: tuple                         # Field...
    strings: tuple = ()                   # (name, offset, length)...

    def field(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


# --- old fixed layouts -------------------------------------------------------------

def _fixed(names, kind, stride, start=0):
    return [Field(n, start + i * stride, kind) for i, n in enumerate(names)]


def _by_size(names, kind, stride, size, start=0):
    """As many leading fields as fit in ``size`` bytes (structures that grew
    over releases without changing their magic)."""
    count = max(0, min(len(names), (size - start) // stride))
    return _fixed(names[:count], kind, stride, start)


CPU_FIELDS = ("user", "nice", "sys", "idle", "iowait", "steal", "hardirq", "softirq", "guest", "guest_nice")
MEMORY_FIELDS = ("frmkb", "bufkb", "camkb", "tlmkb", "frskb", "tlskb", "caskb", "comkb", "activekb", "inactkb",
                 "dirtykb", "anonpgkb", "slabkb", "kstackkb", "pgtblkb", "vmusedkb", "availablekb")
NET_DEV_FIELDS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_compressed", "tx_compressed",
                  "multicast")
NET_EDEV_FIELDS = ("collisions", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_fifo_errors",
                   "tx_fifo_errors", "rx_frame_errors", "tx_carrier_errors")
IP_FIELDS = ("InReceives", "ForwDatagrams", "InDelivers", "OutRequests", "ReasmReqds", "ReasmOKs", "FragOKs",
             "FragCreates")
EIP_FIELDS = ("InHdrErrors", "InAddrErrors", "InUnknownProtos", "InDiscards", "OutDiscards", "OutNoRoutes",
              "ReasmFails", "FragFails")
IP6_FIELDS = ("InReceives6", "OutForwDatagrams6", "InDelivers6", "OutRequests6", "ReasmReqds6", "ReasmOKs6",
              "InMcastPkts6", "OutMcastPkts6", "FragOKs6", "FragCreates6")
EIP6_FIELDS = ("InHdrErrors6", "InAddrErrors6", "InUnknownProtos6", "InTooBigErrors6", "InDiscards6",
               "OutDiscards6", "InNoRoutes6", "OutNoRoutes6", "ReasmFails6", "FragFails6", "InTruncatedPkts6")
IO_FIELDS = ("dk_drive", "dk_drive_rio", "dk_drive_wio", "dk_drive_rblk", "dk_drive_wblk", "dk_drive_dio",
             "dk_drive_dblk")
KTABLES_FIELDS = ("file_used", "inode_used", "dentry_stat", "pty_nr")
SOFTNET_FIELDS = ("processed", "dropped", "time_squeeze", "received_rps", "flow_limit", "backlog_len")
SERIAL_FIELDS = ("rx", "tx", "frame", "parity", "brk", "overrun", "line")


def _old_cpu(size):      # every 64-bit field aligned on 16 bytes
    return Layout(tuple(_by_size(CPU_FIELDS, "u64", 16, size)))


def _old_pcsw(size):
    return Layout((Field("context_switch", 0, "u64"), Field("processes", 16, "ul")))


def _old_irq_u64_16(size):
    return Layout((Field("irq_nr", 0, "u64"),))


def _old_io_u32(size):
    """sysstat 9.1.5+: five 32-bit counters; sysstat 9.0.x wrote the same
    magic with 64-bit counters on 16-byte slots (80 bytes)."""
    if size >= 80:
        return Layout(tuple(_fixed(IO_FIELDS[:5], "u64", 16)))
    if size >= 40:
        return _old_io_u64(size)
    return Layout(tuple(_fixed(IO_FIELDS[:5], "u32", 4)))


def _old_io_u64(size):
    return Layout(tuple(_fixed(IO_FIELDS[:5], "u64", 8)))


def _old_memory(size):
    return Layout(tuple(_by_size(MEMORY_FIELDS, "ul", 8, size)))


def _old_huge(size):
    return Layout((Field("frhkb", 0, "ul"), Field("tlhkb", 8, "ul")))


def _old_ktables(size):
    return Layout(tuple(_fixed(KTABLES_FIELDS, "u32", 4)))


def _old_queue_a(size):
    return Layout((Field("nr_running", 0, "ul"), Field("load_avg_1", 8, "u32"), Field("load_avg_5", 12, "u32"),
                   Field("load_avg_15", 16, "u32"), Field("nr_threads", 20, "u32")))


def _old_queue_b(size):
    return Layout((Field("nr_running", 0, "ul"), Field("procs_blocked", 8, "ul"), Field("load_avg_1", 16, "u32"),
                   Field("load_avg_5", 20, "u32"), Field("load_avg_15", 24, "u32"),
                   Field("nr_threads", 28, "u32")))


def _old_serial(size):
    return Layout(tuple(_fixed(SERIAL_FIELDS, "u32", 4)))


def _old_disk_a(size):
    return Layout((Field("rd_sect", 0, "u64"), Field("wr_sect", 16, "u64"), Field("rd_ticks", 32, "ul"),
                   Field("wr_ticks", 40, "ul"), Field("tot_ticks", 48, "ul"), Field("rq_ticks", 56, "ul"),
                   Field("nr_ios", 64, "ul"), Field("major", 72, "u32"), Field("minor", 76, "u32")))


def _old_disk_90(size):
    """sysstat 9.0.x wrote the I/O count before the tick counters (the
    same magic and size as 9.1's layout, which moved it last)."""
    return Layout((Field("rd_sect", 0, "u64"), Field("wr_sect", 16, "u64"), Field("nr_ios", 32, "ul"),
                   Field("rd_ticks", 40, "ul"), Field("wr_ticks", 48, "ul"), Field("tot_ticks", 56, "ul"),
                   Field("rq_ticks", 64, "ul"), Field("major", 72, "u32"), Field("minor", 76, "u32")))


def _old_disk_b(size):
    return Layout((Field("nr_ios", 0, "u64"), Field("rd_sect", 16, "ul"), Field("wr_sect", 24, "ul"),
                   Field("rd_ticks", 32, "u32"), Field("wr_ticks", 36, "u32"), Field("tot_ticks", 40, "u32"),
                   Field("rq_ticks", 44, "u32"), Field("major", 48, "u32"), Field("minor", 52, "u32")))


def _old_net_dev_a(size):
    return Layout(tuple(_fixed(NET_DEV_FIELDS, "ul", 8)), (("interface", 56, 16),))


def _old_net_dev_b(size):
    return Layout(tuple(_fixed(NET_DEV_FIELDS, "u64", 16)), (("interface", 112, 16),))


def _old_net_dev_c(size):
    return Layout(tuple(_fixed(NET_DEV_FIELDS, "u64", 16)) + (Field("speed", 112, "u32"),),
                  (("interface", 116, 16), ("duplex", 132, 1)))


def _old_net_edev_a(size):
    return Layout(tuple(_fixed(NET_EDEV_FIELDS, "ul", 8)), (("interface", 72, 16),))


def _old_net_edev_b(size):
    return Layout(tuple(_fixed(NET_EDEV_FIELDS, "u64", 16)), (("interface", 144, 16),))


def _old_group(names, kind, stride):
    return lambda size: Layout(tuple(_by_size(names, kind, stride, size)))


def _old_fs(size):
    # the name was 72 bytes long before sysstat 11 and 128 after
    name_len = 128 if size >= 208 else 72
    strings = (("fs_name", 80, name_len),) + ((("mountp", 208, 128),) if size >= 336 else ())
    return Layout(tuple(_fixed(("f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree"), "u64", 16)), strings)


def _old_softnet(size):
    return Layout(tuple(_by_size(SOFTNET_FIELDS, "u32", 4, size)))


def _old_wghfreq(size):
    return Layout((Field("time_in_state", 0, "u64"), Field("freq", 16, "ul")))

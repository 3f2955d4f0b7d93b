"""The fixed header facts of format 0x2169 (sysstat 6.1-7.0) that sniffing
needs: where the format magic sits and how long the fixed ``file_stats``
structure is.  Kept free of numpy so that ``sarsleuth sniff`` stays light;
:mod:`format_2169` reads the records."""
from __future__ import annotations

import struct

FORMAT_MAGIC = 0x2169
MAGIC_OFFSET = 0x24

#: Fields of the fixed ``file_stats`` structure: 64-bit counters on 16-byte
#: slots, then C longs and 32-bit fields on 8- and 4-byte slots.
ULL = ("uptime", "uptime0", "context_swtch", "cpu_user", "cpu_nice", "cpu_system", "cpu_idle", "cpu_iowait",
       "cpu_steal", "irq_sum")
LONGS = ("ust_time", "processes", "pgpgin", "pgpgout", "pswpin", "pswpout", "frmkb", "bufkb", "camkb", "tlmkb",
         "frskb", "tlskb", "caskb", "nr_running", "pgfault", "pgmajfault")
INTS = ("dk_drive", "dk_drive_rio", "dk_drive_wio", "dk_drive_rblk", "dk_drive_wblk", "file_used", "inode_used",
        "super_used", "super_max", "dquot_used", "dquot_max", "rtsig_queued", "rtsig_max", "sock_inuse",
        "tcp_inuse", "udp_inuse", "raw_inuse", "frag_inuse", "dentry_stat", "load_avg_1", "load_avg_5",
        "load_avg_15", "nr_threads", "nfs_rpccnt", "nfs_rpcretrans", "nfs_readcnt", "nfs_writecnt",
        "nfs_accesscnt", "nfs_getattcnt", "nfsd_rpccnt", "nfsd_rpcbad", "nfsd_netcnt", "nfsd_netudpcnt",
        "nfsd_nettcpcnt", "nfsd_rchits", "nfsd_rcmisses", "nfsd_readcnt", "nfsd_writecnt", "nfsd_accesscnt",
        "nfsd_getattcnt")
LONGS_AT, INTS_AT, TYPE_AT = 16 * len(ULL), 16 * len(ULL) + 8 * len(LONGS), 16 * len(ULL) + 8 * len(LONGS) + 4 * len(INTS)


def sniff(head: bytes):
    """The byte order of a 0x2169 file, or None."""
    if len(head) < MAGIC_OFFSET + 8:
        return None
    for endian in ("<", ">"):
        magic, st_size = struct.unpack_from(endian + "HH", head, MAGIC_OFFSET)
        day, month = head[MAGIC_OFFSET + 4], head[MAGIC_OFFSET + 5]
        if magic == FORMAT_MAGIC and TYPE_AT + 4 <= st_size <= 4096 and 1 <= day <= 31 and month <= 11:
            return endian
    return None



"""The magic block that starts every sa file since sysstat 9: the sysstat
magic, then the format magic, in the writer's byte order.  Kept free of the
layout code (and of numpy) so that sniffing reads two numbers and nothing
more; :mod:`layout` reads the rest of the header."""
from __future__ import annotations

import struct

SYSSTAT_MAGIC = 0xD596
FORMAT_MAGICS = (0x1170, 0x2170, 0x2171, 0x2173, 0x2175)


def sniff_magic(head: bytes):
    """(endian, format_magic) when ``head`` starts like an sa file, else None."""
    if len(head) < 4:
        return None
    for endian in ("<", ">"):
        magic, fmt = struct.unpack_from(endian + "HH", head, 0)
        if magic == SYSSTAT_MAGIC:
            return endian, fmt
    return None

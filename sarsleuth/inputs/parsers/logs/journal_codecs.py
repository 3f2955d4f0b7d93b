"""The compressed fields of a journal file, as systemd compresses them
(``src/basic/compress.c``): XZ, a stream without check (the standard
library reads it); ZSTD, one frame (Python 3.14's ``compression.zstd`` or
the ``zstd`` extra); LZ4, the size as a little-endian 64-bit number, then
one LZ4 block (the ``lz4`` extra).  At most :data:`MAX_VALUE_BYTES` (and a
little more) of a field are decompressed: a crafted field cannot inflate
without bound."""
from __future__ import annotations

import io
import lzma
import struct

COMPRESSED_XZ, COMPRESSED_LZ4, COMPRESSED_ZSTD = 1, 2, 4
COMPRESSED = COMPRESSED_XZ | COMPRESSED_LZ4 | COMPRESSED_ZSTD
#: Bytes of a field's value read at most (a longer MESSAGE is cut, as the
#: log scan cuts a longer line).
MAX_VALUE_BYTES = 1 << 20
#: Largest LZ4 field decompressed (its whole block must be).
LZ4_MAX_BYTES = 16 << 20
#: codec -> (its name, the extra that brings it)
CODECS = {"zstd": ("ZSTD", "zstd"), "lz4": ("LZ4", "lz4")}


class MissingCodec(Exception):
    """The decompressor of a field is not installed (``args[0]``: its codec)."""


def decompressed(flag: int, raw: bytes) -> bytes:
    """A DATA object's payload compressed as its flag says."""
    if flag == COMPRESSED_XZ:
        return lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(raw, MAX_VALUE_BYTES + 256)
    if flag == COMPRESSED_ZSTD:
        return _zstd(raw)
    if flag == COMPRESSED_LZ4:
        return _lz4(raw)
    raise ValueError(f"compression flags 0x{flag:x}")


def _zstd(raw: bytes) -> bytes:
    try:
        from compression import zstd as std_zstd      # Python 3.14's standard library
    except ImportError:
        std_zstd = None
    if std_zstd is not None:
        return std_zstd.ZstdDecompressor().decompress(raw, MAX_VALUE_BYTES + 256)
    try:
        import zstandard                              # an optional extra
    except ImportError:
        raise MissingCodec("zstd") from None
    # a stream read up to the bytes wanted
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)) as reader:
        return reader.read(MAX_VALUE_BYTES + 256)


def _lz4(raw: bytes) -> bytes:
    try:
        import lz4.block                              # an optional extra
    except ImportError:
        raise MissingCodec("lz4") from None
    size = struct.unpack_from("<Q", raw)[0]
    if size > LZ4_MAX_BYTES:
        return b""     # a block cannot be read in part: a field this large is no message (a core dump)
    return lz4.block.decompress(raw[8:], uncompressed_size=size)[:MAX_VALUE_BYTES + 256]

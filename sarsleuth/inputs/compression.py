"""Readers of compressed streams that hand out every byte decompressed
before a cut or damaged stream raises (``read1``), so a half-downloaded
log keeps what ``gzip -dc``, ``xz -dc`` or ``zstd -dc`` would recover.
Which format a file is in is decided by :mod:`sarsleuth.inputs.reading`."""
from __future__ import annotations

import bz2
import io
import lzma
import zlib

from sarsleuth.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"


def decompressor(path: str, raw, kind: str):
    """A reader of ``raw``'s decompressed bytes whose ``read1`` hands out
    everything decompressed before a cut or damage raises."""
    if kind == "gzip":
        return _GzipMembers(raw)
    if kind == "xz":
        return lzma.LZMAFile(raw, "rb")
    if kind == "bz2":
        return bz2.BZ2File(raw, "rb")
    return zstd_reader(path, raw)


#: Largest zstd window accepted (``zstd --long=31`` writes 2 GiB windows).
ZSTD_MAX_WINDOW = 1 << 31


def zstd_reader(path, raw):
    try:
        import zstandard
    except ImportError:
        raw.close()
        raise InputError(path, "zstd-compressed; install the 'zstd' extra (pip install sarsleuth[zstd])") from None
    return _ZstdFrames(raw, zstandard)


class _ZstdFrames(io.RawIOBase):
    """A zstd stream (one or more frames) read with ``read1``.

    ``zstandard``'s stream reader ends quietly where a cut file ends; this
    one raises :class:`EOFError` when the input runs out inside a frame, as
    gzip, xz and bz2 do, so a cut zstd log is said to be cut.  The frame
    object has no output limit, so input is fed in small pieces: a 4-byte
    RLE block gives 128 KiB, so a 2 KiB piece gives at most 64 MiB (a
    crafted bomb stays bounded in memory)."""

    IN_CHUNK = 2 * 1024

    def __init__(self, raw, zstandard):
        super().__init__()
        self.raw = raw
        self.dctx = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
        self.frame = self.dctx.decompressobj()
        self.out, self.pos = b"", 0
        self.started = False        # the current frame has had input
        self.finished = False

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        while self.pos >= len(self.out) and not self.finished:
            self._fill()
        end = len(self.out) if size is None or size < 0 else self.pos + size
        piece = self.out[self.pos:end]
        self.pos += len(piece)
        return piece

    def readinto(self, buf) -> int:
        piece = self.read1(len(buf))
        buf[:len(piece)] = piece
        return len(piece)

    def _fill(self) -> None:
        frame = self.frame
        if frame.eof:
            data = frame.unused_data or self.raw.read(self.IN_CHUNK)
            if not data:
                self.finished = True
                return
            self.frame, self.started = self.dctx.decompressobj(), False
        else:
            data = self.raw.read(self.IN_CHUNK)
            if not data:
                self.finished = True
                if self.started:
                    raise EOFError("compressed file ended before the end-of-stream marker was reached")
                return
        self.started = True
        self.out, self.pos = self.frame.decompress(data), 0

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()


class _GzipMembers:
    """A gzip stream (one or more members) read with ``read1``, inflated
    with ISA-L (several times faster) when the optional ``isal`` package is
    installed, zlib otherwise.

    Unlike :class:`gzip.GzipFile`, every byte that came out of the inflater
    is handed out before a cut or damaged stream raises."""

    IN_CHUNK = 64 * 1024

    def __init__(self, raw):
        try:
            from isal import isal_zlib as zmod
        except ImportError:
            zmod = zlib
        self.raw, self.zmod = raw, zmod
        self.inflater = zmod.decompressobj(wbits=31)
        self.pending = b""          # compressed input not yet given to the inflater
        self.started = False        # the current member has had input
        self.finished = False

    def read1(self, size: int) -> bytes:
        while not self.finished:
            d = self.inflater
            if d.unconsumed_tail:
                data = d.unconsumed_tail
            else:
                data, self.pending = self.pending or self.raw.read(self.IN_CHUNK), b""
                if not data:
                    if self.started and not d.eof:
                        raise EOFError("compressed file ended before the end-of-stream marker was reached")
                    self.finished = True
                    break
            self.started = True
            out = d.decompress(data, size)
            if d.eof:
                self._next_member(d.unused_data)
            if out:
                return out
        return b""

    def _next_member(self, rest: bytes) -> None:
        """After a member's end: another member, padding zeros, or the end."""
        if len(rest) < 2:
            rest += self.raw.read(self.IN_CHUNK)
        if rest.startswith(GZIP_MAGIC):
            self.inflater, self.pending, self.started = self.zmod.decompressobj(wbits=31), rest, False
        elif rest.strip(b"\x00"):
            self.finished = True
            raise OSError("trailing garbage after the compressed data")
        else:
            self.finished = True

    def close(self) -> None:
        pass

"""sa files copied to a private temporary file on disk before they are mapped.

A plain sa file is copied first (:func:`snapshot`): a mapped file that
shrinks under its reader (sadc truncating last month's ``saDD`` as a new
month begins, a hand-made ``truncate``) kills the process with SIGBUS, which
nothing can catch; a copy read with ``read`` just ends short, and the copy
never changes.

Compressed sa files are spooled to a temporary file on disk.

An sa file is mapped, so a compressed one is first decompressed to an
anonymous temporary file (disk, not memory, bounded against bombs).  The
streams are decoded incrementally here, not through the file objects of
gzip/lzma/bz2, because those drop the last decoded block when the input
is cut short: a half-copied ``sa20.gz`` still holds every record before
the cut, and the walk of the records counts what was lost.
"""
from __future__ import annotations

import bz2
import errno
import lzma
import os
import tempfile
import zlib

from sarsleuth.errors import InputError, located, size_text
from sarsleuth.inputs.reading import compression_of, decompressed_chunks

#: Bytes of compressed input read, and of output decoded, at a time.
INPUT_CHUNK = 1 << 20
OUTPUT_CHUNK = 1 << 20


def _decoder(kind):
    if kind == "gzip":
        return zlib.decompressobj(wbits=31)
    if kind == "xz":
        return lzma.LZMADecompressor()
    return bz2.BZ2Decompressor()


def _decoded(path, kind):
    """Decoded chunks of at most OUTPUT_CHUNK bytes (a bomb never expands in
    memory); raises the decoder's error on damage, ``_Cut`` when the input
    ends inside a stream."""
    decoder = _decoder(kind)
    with open(path, "rb") as raw:
        pending = raw.read(INPUT_CHUNK)
        while pending or not _wants_input(decoder, kind):
            if kind == "gzip":
                out = decoder.decompress(pending, OUTPUT_CHUNK)
                pending = decoder.unconsumed_tail
            else:
                # lzma/bz2 keep input they could not yet decode: feed nothing
                # more until they ask for it
                out = decoder.decompress(pending, max_length=OUTPUT_CHUNK)
                pending = b""
            if out:
                yield out
            if decoder.eof:
                rest = decoder.unused_data + pending
                if not rest:
                    rest = raw.read(INPUT_CHUNK)
                if not rest.strip(b"\0"):
                    return
                decoder, pending = _decoder(kind), rest      # concatenated members
            elif not pending and _wants_input(decoder, kind):
                pending = raw.read(INPUT_CHUNK)
    if not decoder.eof:
        raise _Cut("the compressed stream ends before its end marker")


def _wants_input(decoder, kind) -> bool:
    return True if kind == "gzip" else decoder.needs_input


class _Cut(Exception):
    pass


def snapshot(fh, path, damage: list):
    """An open private copy of the plain file ``fh`` (at ``path``), or None
    when the temporary folder cannot hold one (the file is then mapped
    where it is, said in ``damage``).  A file that changes while it is
    copied is read as copied, with a warning."""
    src = fh.fileno()
    at_open = os.fstat(src).st_size
    out = tempfile.TemporaryFile(prefix="sarsleuth-sa-")
    copied = 0
    try:
        copied = _copy(src, out.fileno())
    except OSError as exc:
        out.close()
        damage.append(located(path, f"no private copy could be made ({exc.strerror or exc}; set TMPDIR elsewhere): "
                                    "read where it is, so a file cut while it is read stops the run", offset=0))
        return None
    at_end = os.fstat(src).st_size
    if copied < at_open or at_end < copied:       # cut (sadc appending to today's file only adds records)
        damage.append(located(path, f"the file was cut while it was read ({at_open:,} bytes when opened, "
                                    f"{at_end:,} when copied): read as copied ({copied:,} bytes)", offset=copied))
    out.seek(0)
    return out


def _copy(src: int, dst: int) -> int:
    """Bytes of ``src`` copied to ``dst`` from the start, until its end as
    the copy finds it (a file cut meanwhile ends the copy there)."""
    copied = 0
    kernel = hasattr(os, "copy_file_range")
    while True:
        if kernel:
            try:
                n = os.copy_file_range(src, dst, OUTPUT_CHUNK, copied, copied)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                    raise
                kernel = False       # another filesystem on an older kernel: copied through memory
                continue
        else:
            data = os.pread(src, OUTPUT_CHUNK, copied)
            n = len(data)
            if n:
                os.pwrite(dst, data, copied)
        if not n:
            return copied
        copied += n


def spool(path, limit: int, damage: list):
    """An open temporary file holding the decompressed content of ``path``;
    on a damaged or cut stream, what came before, with a warning in
    ``damage``."""
    kind = compression_of(path)
    out = tempfile.TemporaryFile(prefix="sarsleuth-")
    try:
        chunks = (decompressed_chunks(path, limit, "the most a compressed sa file is decompressed to be read; "
                                      "refusing it") if kind == "zstd" else _decoded(path, kind))
        try:
            for chunk in chunks:
                out.write(chunk)
                if out.tell() > limit:
                    raise InputError(path, f"more than {size_text(limit)} once decompressed, the most a "
                                           "compressed sa file is decompressed to be read; refusing it", offset=limit)
        except (_Cut, zlib.error, lzma.LZMAError, OSError, EOFError, ValueError) as exc:
            if out.tell() == 0:
                raise InputError(path, f"damaged compressed stream: {exc}", offset=0) from None
            damage.append(located(path, f"compressed stream damaged after {out.tell()} decompressed bytes "
                                  f"({exc}); the records before the damage are read", offset=out.tell()))
        except InputError as err:
            if "damaged compressed stream" not in str(err) or out.tell() == 0:
                raise
            damage.append(located(path, f"compressed stream damaged after {out.tell()} decompressed bytes; "
                                  "the records before the damage are read", offset=out.tell()))
    except BaseException:
        out.close()
        raise
    out.flush()
    out.seek(0)
    return out

"""Reading a log in blocks of whole lines.

The file is read once, in large blocks of decompressed bytes
(:func:`sarsleuth.inputs.reading.read_chunks`: a damaged or cut compressed stream
yields everything before the damage, with a warning).  Line endings are
made uniform on the way (CRLF, a bare CR and LF all end one line) and byte
order marks are dropped, so every reader downstream sees ``\\n``-terminated
UTF-8 lines.  For a compressed file the decompression runs in a thread of
its own, overlapping with the matching (zlib, ISA-L, lzma and bz2 release
the interpreter lock while they work).
"""
from __future__ import annotations

import codecs
import os
import queue
import threading
from dataclasses import dataclass
from typing import Iterator

from sarsleuth.errors import located
from sarsleuth.inputs.reading import MAX_LINE_BYTES, UTF16_BOMS, compression_of, read_chunks

#: Bytes read per block (decompressed).
BLOCK_BYTES = 8 * 1024 * 1024

_UTF8_BOM = b"\xef\xbb\xbf"


@dataclass
class Block:
    """A run of whole lines: ``data[start:end]``, ending with a newline.

    The bytes read from the file are passed on without copying, so a block
    is a window on them; everything reading a block stays inside it, and
    nothing keeps ``data`` once the next block is asked for (a plain file
    is read into the same buffer each time).
    """

    data: bytes
    start: int
    end: int
    offset: int          # offset of ``data[0]`` in the decompressed, normalised stream
    first_line: int = 0  # 1-based number of the line at ``start`` (set by the scan)
    #: (file, line, byte offset) each line stands for, when the lines are
    #: made from records of other files (a binary journal's entries)
    origins: list | None = None


def total_size(path) -> int | None:
    """Size on disk (compressed size for compressed files), for progress."""
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def normalised_chunks(path, warnings: list, block_bytes: int = BLOCK_BYTES,
                      where: dict | None = None) -> Iterator[bytes]:
    """Decompressed chunks with ``\\n`` line endings and no byte order mark.

    A CR at the end of a chunk waits for the next one (it may be half of a
    CRLF).  A UTF-16 log (it starts with its byte order mark) is decoded to
    UTF-8 on the way.  ``where["altered"]`` is set when the chunks are not
    the file's content (changed on the way: line endings, UTF-16): offsets in
    them are then no offsets in it.  A compressed file's content is its
    decompressed bytes."""
    where = {} if where is None else where
    if _compressed(path):
        chunks = _prefetched(read_chunks(path, block_bytes, warnings, where))
    else:
        # one buffer read into again and again: no fresh pages per block
        # (each block is done with before the next is read)
        chunks = read_chunks(path, block_bytes, warnings, where, reuse_buffer=True)
    first, held_cr, utf16 = True, False, None
    for chunk in chunks:
        if first:
            first = False
            if chunk.startswith(UTF16_BOMS):
                utf16 = codecs.getincrementaldecoder("utf-16")(errors="replace")
                warnings.append(located(path, "UTF-16 text (read as such)"))
        if utf16 is not None:
            chunk = utf16.decode(chunk).encode("utf-8")
        if held_cr:
            chunk = b"\r" + chunk
        held_cr = chunk.endswith(b"\r")
        if held_cr:
            chunk = chunk[:-1]
        normal = _normalised(chunk)
        if utf16 is not None or normal is not chunk:
            where["altered"] = True
        yield normal
    if held_cr:
        yield b"\n"


def _normalised(chunk: bytes) -> bytes:
    if b"\r" in chunk:
        chunk = chunk.replace(b"\r\n", b"\n")
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r", b"\n")
    # the BOM's last byte first: memchr is 100 times faster than the 3-byte search
    if b"\xbf" in chunk and _UTF8_BOM in chunk:
        if chunk.startswith(_UTF8_BOM):
            chunk = chunk[3:]
        chunk = chunk.replace(b"\n" + _UTF8_BOM, b"\n")
    return chunk


def _compressed(path) -> bool:
    try:
        return compression_of(path) is not None
    except OSError:
        return False


def _prefetched(chunks: Iterator[bytes], depth: int = 2) -> Iterator[bytes]:
    """``chunks`` produced by a thread up to ``depth`` ahead of the reader."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def produce():
        try:
            for chunk in chunks:
                while not stop.is_set():
                    try:
                        q.put(chunk, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            item = done
        except BaseException as exc:  # handed to the reader, raised there
            item = exc
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    worker = threading.Thread(target=produce, name="sarsleuth-decompress", daemon=True)
    worker.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def iter_blocks(path, warnings: list, block_bytes: int = BLOCK_BYTES, where: dict | None = None) -> Iterator[Block]:
    """Yield blocks of whole lines, streaming, without copying the bytes read.

    The line cut by a read boundary is completed with the next read and
    yielded as a one-line block of its own.  Lines longer than
    :data:`~sarsleuth.inputs.reading.MAX_LINE_BYTES` are cut (the rest skipped up to
    the next newline) and a damaged compressed tail ends the stream; both
    leave a warning instead of raising.  ``where["read"]`` follows the
    bytes read from the file (see :func:`~sarsleuth.inputs.reading.read_chunks`).
    """
    carry = b""               # start of a line whose end is not read yet
    skipping = False          # inside the unread tail of an over-long line
    offset = 0                # stream offset of the next chunk
    cut_lines = 0
    for chunk in normalised_chunks(path, warnings, block_bytes, where):
        if not chunk:
            continue
        chunk_offset, offset = offset, offset + len(chunk)
        first = 0
        if carry or skipping:
            nl = chunk.find(b"\n")
            if nl == -1:
                if not skipping:
                    carry += chunk
                    if len(carry) > MAX_LINE_BYTES:
                        carry, skipping = carry[:MAX_LINE_BYTES], True
                        cut_lines += 1
                continue
            line = carry + (b"\n" if skipping else chunk[:nl + 1])
            yield Block(line, 0, len(line), chunk_offset + nl + 1 - len(line))
            carry, skipping, first = b"", False, nl + 1
        cut = chunk.rfind(b"\n", first)
        if cut == -1:
            carry = chunk[first:]
            if len(carry) > MAX_LINE_BYTES:
                carry, skipping = carry[:MAX_LINE_BYTES], True
                cut_lines += 1
            continue
        yield Block(chunk, first, cut + 1, chunk_offset)
        carry = chunk[cut + 1:]
        if len(carry) > MAX_LINE_BYTES:
            carry, skipping = carry[:MAX_LINE_BYTES], True
            cut_lines += 1
    if carry:
        warnings.append(located(path, "file ends in the middle of a line (kept)", offset=offset))
        yield Block(carry + b"\n", 0, len(carry) + 1, offset - len(carry))
    if cut_lines:
        warnings.append(located(path, f"{cut_lines} line(s) longer than {MAX_LINE_BYTES} bytes were cut"))

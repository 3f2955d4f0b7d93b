"""Opening inputs: transparent decompression by magic bytes, bounded heads,
streamed lines.

Compression is recognised from the first bytes, never from the file name, so a
rotated ``messages-20140507`` that happens to be gzipped still opens.  Nothing
here reads a whole file into memory.
"""
from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import os
import tempfile
import zlib
from pathlib import Path
from typing import Iterator

from sarsleuth.decompressors import GZIP_MAGIC, decompressor, zstd_reader
from sarsleuth.errors import InputError, located, size_text
from sarsleuth.folders import files_under

XZ_MAGIC = b"\xfd7zXZ\x00"
BZ2_MAGIC = b"BZh"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: Byte order marks of UTF-16 text (little- and big-endian).
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")

#: Upper bound on the bytes a content sniffer looks at.
HEAD_BYTES = 64 * 1024

#: Lines longer than this are cut (and counted) so a 5 MB line cannot blow up
#: memory or a regex.
MAX_LINE_BYTES = 1 << 20

#: Bytes read at a time by :func:`read_all_bytes` (so a ``limit`` is never
#: allocated up front).
READ_CHUNK = 1 << 20


def _decompression_errors() -> tuple:
    errors = [OSError, EOFError, ValueError, lzma.LZMAError, zlib.error]
    try:
        import zstandard
        errors.append(zstandard.ZstdError)
    except ImportError:  # pragma: no cover - zstd is an optional extra
        pass
    try:
        from isal import isal_zlib
        errors.append(isal_zlib.error)
    except ImportError:  # pragma: no cover - isal is an optional extra
        pass
    return tuple(errors)


#: What reading a damaged compressed stream (gzip, xz, bz2, zstd) may raise.
DECOMPRESSION_ERRORS = _decompression_errors()


def compression_of(path) -> str | None:
    with open(path, "rb") as fh:
        magic = fh.read(6)
    if magic.startswith(GZIP_MAGIC):
        return "gzip"
    if magic.startswith(XZ_MAGIC):
        return "xz"
    if magic.startswith(BZ2_MAGIC) and len(magic) >= 4 and magic[3:4].isdigit():
        return "bz2"
    if magic.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


def open_binary(path):
    """Open ``path`` for binary reading, decompressing transparently."""
    path = os.fspath(path)
    kind = _kind_or_input_error(path)
    if kind == "gzip":
        return gzip.open(path, "rb")
    if kind == "xz":
        return lzma.open(path, "rb")
    if kind == "bz2":
        return bz2.open(path, "rb")
    if kind == "zstd":
        return io.BufferedReader(zstd_reader(path, open(path, "rb")))
    return open(path, "rb")


def read_chunks(path, size: int, warnings: list, where: dict | None = None,
                reuse_buffer: bool = False) -> Iterator[bytes]:
    """Yield the decompressed content of ``path`` in chunks of about ``size``
    bytes, losing nothing before damage.

    A compressed stream that is cut short or damaged yields everything that
    decompressed before the damage, then stops with a warning that says
    where it stopped and how much of the compressed file was left unread
    (each piece is asked for with ``read1``, so the bytes already out of
    the decompressor are never thrown away with the exception).
    ``where["read"]`` follows the bytes read from the file itself (the
    compressed ones for a compressed file), for progress."""
    path = os.fspath(path)
    where = {} if where is None else where
    kind = _kind_or_input_error(path)
    raw = open(path, "rb")
    fh = decompressor(path, raw, kind) if kind else raw
    piece = min(size, 1 << 20) if kind else size
    out = 0
    if kind is None and reuse_buffer:
        try:
            yield from _reread(raw, size, where)
        finally:
            raw.close()
        return
    try:
        parts, held = [], 0
        while True:
            try:
                chunk = fh.read1(piece) if kind else fh.read(piece)
            except DECOMPRESSION_ERRORS as exc:
                if parts:
                    where["read"] = raw.tell()
                    yield b"".join(parts)
                warnings.append(_damage_warning(path, raw, out + held, exc))
                return
            if not chunk:
                break
            parts.append(chunk)
            held += len(chunk)
            if held >= size:
                where["read"] = raw.tell()
                yield parts[0] if len(parts) == 1 else b"".join(parts)
                out += held
                parts, held = [], 0
        if parts:
            where["read"] = raw.tell()
            yield parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        fh.close()
        raw.close()


def _reread(raw, size: int, where: dict) -> Iterator:
    try:    # a small file gets a small buffer (a bundle may hold thousands)
        size = min(size, max(os.fstat(raw.fileno()).st_size + 1, 1 << 16))
    except OSError:
        pass
    buf = bytearray(size)
    view = memoryview(buf)
    while True:
        n = raw.readinto(view)
        if not n:
            return
        while n < size:          # a short read before the end: fill the rest
            more = raw.readinto(view[n:])
            if not more:
                break
            n += more
        where["read"] = raw.tell()
        yield buf if n == size else bytes(view[:n])
        if n < size:
            return


def _kind_or_input_error(path: str) -> str | None:
    try:
        return compression_of(path)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory") from None
    except PermissionError:
        raise InputError(path, "permission denied") from None
    except OSError as exc:
        raise InputError(path, f"cannot open: {exc.strerror or exc}") from None


def _damage_warning(path: str, raw, decompressed: int, exc) -> str:
    """Where a compressed stream broke and what of it was lost."""
    try:
        total = os.fstat(raw.fileno()).st_size
        reached = min(raw.tell(), total)
    except (OSError, ValueError):
        total = reached = None
    reason = str(exc).lower()
    if isinstance(exc, EOFError):
        what = ("compressed stream ends before its end marker (cut short): "
                f"the {decompressed} bytes read before are kept, what followed them is missing")
    elif "checksum" in reason or "data check" in reason or "crc" in reason:
        what = (f"compressed stream fails its checksum ({exc}): the {decompressed} bytes read are kept, "
                "but some of them may be garbled")
    else:
        lost = f"; {total - reached} of its {total} compressed bytes unread" if total else ""
        what = (f"compressed stream damaged ({exc}): the {decompressed} bytes before the damage "
                f"are kept, the rest is lost{lost}")
    return located(path, what, offset=decompressed)


def read_head(path, size: int = HEAD_BYTES) -> bytes:
    """First ``size`` decompressed bytes (bounded: safe on a gzip bomb).

    A compressed stream cut or damaged within them gives what decompressed
    before the damage (the sniffers see the lines ``gzip -dc`` recovers;
    reading the whole file with :func:`read_chunks` then says what was
    kept); only a stream with nothing readable is refused."""
    path = os.fspath(path)
    kind = _kind_or_input_error(path)
    with open(path, "rb") as raw:
        if kind is None:
            return raw.read(size)
        fh = decompressor(path, raw, kind)
        parts, held = [], 0
        try:
            while held < size:
                chunk = fh.read1(size - held)
                if not chunk:
                    break
                parts.append(chunk)
                held += len(chunk)
        except DECOMPRESSION_ERRORS as exc:
            if not held:
                raise InputError(path, f"damaged compressed stream: {exc}") from None
        finally:
            fh.close()
    return b"".join(parts)


def decompressed_chunks(path, limit: int | None, what: str = "refusing to load it whole"):
    """Yield the decompressed content in chunks of :data:`READ_CHUNK`,
    refusing past ``limit`` bytes (a decompression bomb) and turning a damaged
    stream into an InputError at the offset reached."""
    total = 0
    with open_binary(path) as fh:
        try:
            while True:
                # never ask for ``limit`` bytes at once: read() would allocate them
                chunk = fh.read(READ_CHUNK)
                if not chunk:
                    return
                total += len(chunk)
                if limit and total > limit:
                    raise InputError(path, f"more than {size_text(limit)} once decompressed; {what}", offset=limit)
                yield chunk
        except DECOMPRESSION_ERRORS as exc:
            raise InputError(path, f"damaged compressed stream: {exc}", offset=total) from None


def read_all_bytes(path, limit: int | None = None) -> bytes:
    """Whole decompressed content, for formats that are small by nature
    (load-test reports, ps snapshots).  ``limit`` guards against
    decompression bombs.  Content longer than one read comes back as a
    ``bytearray`` (grown in place, so it is held only once)."""
    data = None
    for chunk in decompressed_chunks(path, limit):
        if data is None:
            data = chunk
        else:
            if isinstance(data, bytes):
                data = bytearray(data)
            data += chunk
    return data if data is not None else b""


def spool_decompressed(path, limit: int):
    """Decompress ``path`` into an anonymous temporary file (on disk, not in
    memory) and return it open for reading at offset 0, so binary readers can
    map it.  ``limit`` bounds the disk a decompression bomb may take."""
    spool = tempfile.TemporaryFile(prefix="sarsleuth-")
    try:
        for chunk in decompressed_chunks(path, limit, "refusing it"):
            spool.write(chunk)
    except BaseException:
        spool.close()
        raise
    spool.flush()
    spool.seek(0)
    return spool


def utf16_head_as_utf8(head: bytes) -> bytes | None:
    """A head of UTF-16 text (it starts with its byte order mark) in UTF-8,
    else None.  A code unit cut at the head's end is dropped."""
    if not head.startswith(UTF16_BOMS):
        return None
    text = codecs.getincrementaldecoder("utf-16")(errors="replace").decode(head, final=False)
    return text.encode("utf-8", "surrogatepass")


def decode(raw: bytes) -> str:
    """Bytes to text without ever failing: UTF-8, invalid bytes replaced."""
    return raw.decode("utf-8", errors="replace")


def iter_lines(path, warnings: list | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, raw_line_without_eol)`` streaming the file.

    CRLF and bare CR endings are stripped; over-long lines are truncated to
    :data:`MAX_LINE_BYTES` with a warning; a damaged compressed tail stops the
    iteration with a warning instead of an exception.
    """
    lineno = 0
    truncated = 0
    fh = open_binary(path)
    try:
        while True:
            damaged = None
            try:
                raw = fh.readline(MAX_LINE_BYTES)
                if not raw.endswith(b"\n") and len(raw) >= MAX_LINE_BYTES:
                    truncated += 1
                    # drain the rest of the over-long line
                    while True:
                        more = fh.readline(MAX_LINE_BYTES)
                        if not more or more.endswith(b"\n"):
                            break
            except DECOMPRESSION_ERRORS as exc:
                damaged = exc
                raw = b""
            if damaged is not None:
                if warnings is not None:
                    warnings.append(f"{path}:{lineno + 1}: compressed stream damaged after this line ({damaged}); "
                                    "rest skipped")
                break
            if not raw:
                break
            lineno += 1
            yield lineno, raw.rstrip(b"\r\n")
    finally:
        fh.close()
    if truncated and warnings is not None:
        warnings.append(f"{path}: {truncated} line(s) longer than {MAX_LINE_BYTES} bytes were cut")


def iter_text_lines(path, warnings: list | None = None) -> Iterator[tuple[int, str]]:
    for n, raw in iter_lines(path, warnings):
        yield n, decode(raw)


#: A document read whole (a load-test report, ps snapshots, a tsar
#: history) larger than this once decompressed is refused: a real one is
#: well under a MB (``ps auxwww`` of 5,000 processes: 600 KB), and each
#: line held costs about 30 times its size (7 MB of ps rows peak at 350 MB;
#: a 10 GB stream of them was held whole).
MAX_WHOLE_TEXT_BYTES = 8 << 20


def whole_text_lines(path, warnings: list, what: str) -> list[tuple[int, str]]:
    """Every ``(line_number, text)`` of a document read whole, refused
    (InputError naming the limit and the byte) past :data:`MAX_WHOLE_TEXT_BYTES`."""
    out, total = [], 0
    for n, raw in iter_lines(path, warnings):
        total += len(raw) + 1
        if total > MAX_WHOLE_TEXT_BYTES:
            raise InputError(path, f"more than {size_text(MAX_WHOLE_TEXT_BYTES)} once decompressed: {what} are read "
                                   "whole, and none is this big; not read", offset=MAX_WHOLE_TEXT_BYTES)
        out.append((n, decode(raw)))
    return out


def file_mtime(path):
    """The file's modification time as an aware UTC pandas Timestamp, or the
    gzip header's own mtime when the file is gzip (the original file's)."""
    # here, not at the top: sniff loads this module
    import pandas as pd
    path = os.fspath(path)
    if compression_of(path) == "gzip":
        with open(path, "rb") as fh:
            hdr = fh.read(10)
        if len(hdr) == 10:
            mtime = int.from_bytes(hdr[4:8], "little")
            if mtime:
                return pd.Timestamp(mtime, unit="s", tz="UTC")
    return pd.Timestamp(os.stat(path).st_mtime, unit="s", tz="UTC")


def walk_inputs(paths) -> list[Path]:
    """Expand directories (recursively, sorted, hidden files skipped)."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            for rel in files_under(p):
                sub = p / rel
                if sub.is_file():
                    out.append(sub)
        else:
            out.append(p)
    return out

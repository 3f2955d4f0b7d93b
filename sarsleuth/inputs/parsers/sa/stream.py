"""An sa file's long table a slice of records at a time, for writers
(``parse --format csv``) that need never hold the whole table: memory is
one slice and the file's record index, whatever the number of records.

The rows come in the order, and with the values, of the whole table that
:func:`sarsleuth.inputs.parsers.sa.reader.read_file` builds: the whole table is the
slices put end to end.
"""
from __future__ import annotations

import mmap

import numpy as np

from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sa import format_2169
from sarsleuth.inputs.parsers.sa.layout import sniff_magic
from sarsleuth.inputs.parsers.sa.reader import _open, _Pager, _Slices, _source, _walk, read_source


def stream_file(path, options: ParseOptions):
    """(Source, frames): the Source of ``path`` with its store holding the
    figures of the first slice of records only, and an iterator of the frames
    of the following slices (same columns); frames is None when the Source
    is already whole.  The file stays open until the
    iterator is exhausted or closed.  Warnings of the whole file are known
    when this returns."""
    damage: list = []
    buf, closer = _open(path, damage)
    path = str(path)
    try:
        pager = _Pager(buf) if isinstance(buf, mmap.mmap) else None
        if sniff_magic(bytes(buf[:4])) is None and format_2169.sniff(bytes(buf[:64])) is not None:
            # sysstat 6.1-7.0: small files (no one-second days), read whole
            source = read_source(path, buf, options or ParseOptions(), pager=pager)
            closer()
            source.warnings[:0] = damage
            return source, None
        layout, index, warnings, offset, tz = _walk(path, buf, pager)
        u8 = np.frombuffer(buf, dtype=np.uint8)
        slices = _Slices(path, u8, layout, index, warnings, pager, (options or ParseOptions()).progress)
        stores = slices.stores(tz) if slices.activities and index.count else iter(())
        first = next((store for store in stores if store), None)
        source = _source(path, layout, index, warnings, offset, tz, first)
        frames = (store.to_long() for store in stores)
    except BaseException:
        closer()
        raise
    source.warnings[:0] = damage
    if first is None:           # no figures: the source is whole as it is
        closer()
        return source, None
    return source, _closing(frames, closer)


def _closing(frames, closer):
    try:
        yield from frames
    finally:
        closer()

"""Long tables written a chunk at a time.

A one-second day of ``sa`` data is tens of millions of rows, so the rows
writers (``csv``, ``json``, ``parquet``) never work a row at a time in
Python, and never build the whole output at once: rows go out in chunks of
:data:`CHUNK_ROWS`, each formatted column by column and written straight
from the formatted buffer.  A table is a frame, or :class:`Frames`: the
consecutive frames a reader hands over, written as if they were one.
"""
from __future__ import annotations

import collections
from concurrent.futures import ThreadPoolExecutor

#: Rows formatted and written at a time: a few MB of text, whatever the size
#: of the table.
CHUNK_ROWS = 1 << 16


class Frames:
    """A long table given as consecutive frames of the same columns (a
    reader's slices), written as if it were one frame: the CSV and JSON
    lines writers format a row the same whichever chunk holds it, so the
    bytes are those of the whole table."""

    def __init__(self, columns, frames):
        self.columns = list(columns)
        self.frames = frames

    def __iter__(self):
        for frame in self.frames:
            yield frame if list(frame.columns) == self.columns else frame[self.columns]


def chunks(df):
    if isinstance(df, Frames):
        for frame in df:
            yield from chunks(frame)
        return
    for start in range(0, len(df), CHUNK_ROWS):
        yield df.iloc[start:start + CHUNK_ROWS]


def ahead(fn, items, depth: int = 2):
    """``fn(item)`` for each item, in order, computed up to ``depth`` items
    ahead in threads (memory stays at ``depth + 1`` results)."""
    with ThreadPoolExecutor(max_workers=depth, thread_name_prefix="sarsleuth-export") as pool:
        pending: collections.deque = collections.deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) > depth:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def have_arrow() -> bool:
    try:
        import pyarrow.compute  # noqa: F401
    except ImportError:
        return False
    return True

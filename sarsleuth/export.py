"""Writing a parsed source as a table: CSV, JSON lines or Parquet.

A one-second day of ``sa`` data is tens of millions of rows, so nothing here
works a row at a time in Python, and nothing builds the whole output at
once: rows go out in chunks of :data:`CHUNK_ROWS`, each formatted column by
column (timestamps once per distinct time, labels once per category) and
written straight from the formatted buffer.  With pyarrow installed its
string kernels do the formatting; without it numpy and pandas do, slower,
to the same bytes.

Values are written as the shortest text that reads back as the same number
once the arithmetic noise of the 16th significant digit is dropped
(``1.36``, not ``1.3599999999999999``); see :func:`tidy_values`.
"""
from __future__ import annotations

from sarsleuth.model import EVENT_COLUMNS, METRIC_COLUMNS
from sarsleuth.render._csv import ArrowColumns, NumpyColumns, csv_field, iso_strings, labels, tidy_values

#: Rows formatted and written at a time: a few MB of text, whatever the size
#: of the table.
CHUNK_ROWS = 1 << 16
#: Formats that are bytes, not text (refused on a terminal).
BINARY_FORMATS = ("parquet",)


def source_table(src):
    """The contract's long table for a source (metrics if it has any, else
    its events), typed as parsed: timestamps stay timestamps.  No copy."""
    if src.metrics is not None and len(src.metrics):
        return src.metrics[METRIC_COLUMNS]
    if src.events is not None and len(src.events):
        return src.events[EVENT_COLUMNS]
    from sarsleuth.model import empty_events
    return empty_events()[EVENT_COLUMNS]


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


#: ``parse --format`` outputs written row by row, so that an sa file's table
#: can stream through them.
STREAMED_FORMATS = ("csv", "json")


def read_for_export(path, kind, fmt: str, options, layout: str = "long"):
    """(Source, the frames after its first, or None) for ``parse --format
    fmt``: an sa file written as CSV or JSON lines in the long layout is
    read a slice of records at a time (a one-second day is tens of millions
    of rows, never held whole; ``src.metrics`` holds the first slice),
    anything else whole (the wide layout goes section by section over the
    whole file, from its compact store)."""
    from sarsleuth.parsers import parse, registry, sniff
    if layout == "long" and fmt in STREAMED_FORMATS and (kind or sniff(path)[0]) == "sa":
        return registry()["sa"].stream(path, options)
    return parse(path, kind, options), None


def file_size(path) -> int | None:
    import os
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def write_parsed(src, fmt: str, output, path, table=None, layout: str = "long", terminal: bool = False) -> None:
    """``parse``'s output of a Source onto ``output`` (a path, written
    whole or not at all) or standard output: load-test reports as JSON, an
    sa file in sadf -d's layout, else the long table (``table``: the
    streamed frames of an sa file)."""
    from sarsleuth.render._files import atomic_output, stdout, write_text_file
    if fmt == "json" and src.reports:
        from sarsleuth.render.json import dumps
        text = dumps(reports_json(src)) + "\n"
        if output is None:
            _written(lambda out: out.write(text), stdout())
        else:
            write_text_file(output, text, [path])
        return
    if layout == "wide":
        from sarsleuth.errors import UsageError
        from sarsleuth.export_wide import wide_layout_refusal, write_wide
        refusal = wide_layout_refusal(src)
        if refusal:
            raise UsageError(refusal)
        write = write_wide
    else:
        table, writer = source_table(src) if table is None else table, WRITERS[fmt]

        def write(_src, out, terminal=False):
            writer(table, out, terminal=terminal)
    if output is None:
        _written(lambda out: write(src, out.buffer, terminal=terminal), stdout())
        return
    with atomic_output(output, [path], binary=True) as fh:
        write(src, fh)


def _written(write, out) -> None:
    """``write(out)``, flushed here so that a full disk is reported now."""
    write(out)
    out.flush()


def streamed_table(src, rest, settled) -> Frames:
    """The contract's metrics table of a streamed source: its first frame
    then ``rest``, each put on the clock that ``settled`` (the
    :class:`~sarsleuth.timebase.Settlement` of the source) chose."""
    import itertools

    from sarsleuth.timebase import hosts, zones
    source_zone = settled.host_zones.get(hosts.host_of(src))

    def on_clock(frames):
        for frame in frames:
            converted = zones.to_clock(frame["timestamp"], source_zone, settled.zone)
            if converted is not frame["timestamp"]:
                frame["timestamp"] = converted
            yield frame
    return Frames(METRIC_COLUMNS, itertools.chain([src.metrics], on_clock(rest)))


def _chunks(df):
    if isinstance(df, Frames):
        for frame in df:
            yield from _chunks(frame)
        return
    for start in range(0, len(df), CHUNK_ROWS):
        yield df.iloc[start:start + CHUNK_ROWS]


def _ahead(fn, items, depth: int = 2):
    """``fn(item)`` for each item, in order, computed up to ``depth`` items
    ahead in threads (memory stays at ``depth + 1`` results)."""
    import collections
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=depth, thread_name_prefix="sarsleuth-export") as pool:
        pending: collections.deque = collections.deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) > depth:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _have_arrow() -> bool:
    try:
        import pyarrow.compute  # noqa: F401
    except ImportError:
        return False
    return True


def write_csv(df, out, *, terminal: bool = False, arrow: bool | None = None) -> None:
    """``df`` as CSV onto ``out`` (a binary stream), header first.
    ``terminal``: control characters in text are shown escaped."""
    columns = list(df.columns)
    out.write((",".join(csv_field(c) for c in columns) + "\n").encode("utf-8"))
    if arrow if arrow is not None else _have_arrow():
        # Arrow's kernels release the GIL: the next chunks are formatted on
        # the other core while this one is written
        for text in _ahead(ArrowColumns(terminal).lines, _chunks(df)):
            out.write(text)
    else:
        formatter = NumpyColumns(terminal)
        for chunk in _chunks(df):
            out.write(formatter.lines(chunk))


def write_jsonl(df, out, *, terminal: bool = False, **_ignored) -> None:
    """``df`` as JSON lines (one object per row) onto ``out`` (binary):
    times as ISO 8601 text, missing values null."""
    for chunk in _chunks(df):
        try:
            text = _jsonl_chunk(chunk, terminal, fix_text=terminal)
        except UnicodeError:
            # a file name or message that was not UTF-8: U+FFFD per bad byte
            text = _jsonl_chunk(chunk, terminal, fix_text=True)
        out.write(text.encode("utf-8"))


def _jsonl_chunk(chunk, terminal: bool, fix_text: bool) -> str:
    import numpy as np
    import pandas as pd
    from sarsleuth.render._safe import shown, utf8
    fix = shown if terminal else utf8
    frame = {}
    for name in chunk.columns:
        col = chunk[name]
        if pd.api.types.is_datetime64_any_dtype(col.dtype):
            codes, texts = labels(iso_strings, col)
            col = np.array([*texts, None], dtype=object)[codes]
        elif pd.api.types.is_float_dtype(col.dtype):
            col = tidy_values(col.to_numpy(dtype="float64", na_value=float("nan")))
        elif isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy()
            col = np.array([fix(str(c)) for c in col.cat.categories] + [None], dtype=object)[codes]
        elif fix_text and not pd.api.types.is_numeric_dtype(col.dtype):
            col = col.astype(object).map(lambda v: None if v is None or v != v else fix(str(v)))
        frame[name] = pd.Series(col, index=chunk.index, dtype=col.dtype) if isinstance(col, np.ndarray) else col
    text = pd.DataFrame(frame).to_json(orient="records", lines=True, force_ascii=False, double_precision=15)
    return text if not text or text.endswith("\n") else text + "\n"


def write_parquet(df, out, **_ignored) -> None:
    """``df`` as Parquet onto ``out`` (binary), typed: timestamps as
    timestamps (with their zone), labels as dictionaries, numbers as
    numbers; one row group per chunk."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        from sarsleuth.errors import UsageError
        raise UsageError("parquet output needs pyarrow: pip install 'sarsleuth[parquet]'") from None
    schema = _arrow_schema(df)
    with pq.ParquetWriter(out, schema) as writer:
        for chunk in _chunks(df) if len(df) else [df]:
            chunk = chunk.copy()
            if "value" in chunk.columns:
                chunk["value"] = tidy_values(chunk["value"].to_numpy(dtype="float64", na_value=float("nan")))
            for name in chunk.columns:
                if schema.field(name).type == pa.string():
                    chunk[name] = chunk[name].astype(object).where(chunk[name].notna(), None).map(
                        lambda v: v if v is None else str(v))
            table = pa.Table.from_pandas(chunk, schema=schema, preserve_index=False)
            # pandas' own metadata would name a fixed zone "UTC+08:00", which
            # no reader can parse back; Arrow's types say everything needed
            writer.write_table(table.replace_schema_metadata(None))


def _arrow_schema(df):
    """The Arrow type of each column from its pandas dtype (object columns
    are text; a column of all-missing values is still typed)."""
    import pandas as pd
    import pyarrow as pa
    fields = []
    for name in df.columns:
        dtype = df[name].dtype
        if isinstance(dtype, pd.DatetimeTZDtype):
            t = pa.timestamp("ns", tz=_zone_name(dtype.tz))
        elif pd.api.types.is_datetime64_dtype(dtype):
            t = pa.timestamp("ns")
        elif isinstance(dtype, pd.CategoricalDtype):
            t = pa.dictionary(pa.int32(), pa.string())
        elif pd.api.types.is_bool_dtype(dtype):
            t = pa.bool_()
        elif pd.api.types.is_integer_dtype(dtype):
            t = pa.int64()
        elif pd.api.types.is_float_dtype(dtype):
            t = pa.float64()
        else:
            t = pa.string()
        fields.append(pa.field(name, t))
    return pa.schema(fields)


def _zone_name(tz) -> str:
    """A zone as Arrow names it: the IANA key, or ``+08:00`` for a fixed
    offset (``str()`` of a fixed offset is ``UTC+08:00``, which Arrow and
    pandas cannot read back)."""
    import datetime as dt
    key = getattr(tz, "key", None) or getattr(tz, "zone", None)
    if key:
        return str(key)
    offset = tz.utcoffset(dt.datetime(2000, 1, 1))
    if not offset:
        return "UTC"
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    return f"{sign}{hours:02d}:{rest // 60:02d}"


#: ``parse --format NAME`` -> the writer.
WRITERS = {"csv": write_csv, "json": write_jsonl, "parquet": write_parquet}


def reports_json(src) -> list:
    """Load-test reports as JSON-safe dicts."""
    from sarsleuth.compare import report_json
    return [report_json(r) for r in src.reports]

"""Parquet: a parsed source's long table (``parse``), typed: timestamps as
timestamps (with their zone), labels as dictionaries, numbers as numbers;
one row group per chunk.  Needs pyarrow (the ``parquet`` extra)."""
from __future__ import annotations

import datetime as dt

import pandas as pd

from sarsleuth.render.csv_columns import tidy_values
from sarsleuth.render.rows import chunks

#: Bytes, not text: refused on a terminal.
BINARY = True


def write_rows(df, out, **_ignored) -> None:
    """``df`` as Parquet onto ``out`` (binary)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        from sarsleuth.errors import UsageError
        raise UsageError("parquet output needs pyarrow: pip install 'sarsleuth[parquet]'") from None
    schema = _arrow_schema(df)
    with pq.ParquetWriter(out, schema) as writer:
        for chunk in chunks(df) if len(df) else [df]:
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
    # an extra: the core works without it
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

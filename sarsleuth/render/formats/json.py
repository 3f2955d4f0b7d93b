"""JSON: the document of ``analyze --format json`` (CONTRACT.md) and of a
fleet, tables and query results as arrays of records, a load-test report's
fields, and a parsed source's long table as JSON lines (one object per row,
streamed a chunk at a time: times as ISO 8601 text, missing values null).

Everything is made JSON-safe here, once: times become ISO 8601 text, numpy
and pandas scalars plain numbers, NaN and missing values ``null``, file
names that were not UTF-8 get U+FFFD for each undecodable byte, and control
and bidirectional characters from inputs are written as visible escapes
(``\\x1b``, ``\\u202e``: :func:`sarsleuth.safe_text.visible`), so the
output is always valid UTF-8 JSON that a terminal shows as it is.
"""
from __future__ import annotations

import datetime as _dt
import json as _json
import math

import numpy as np
import pandas as pd

from sarsleuth.model import iso
from sarsleuth.render.csv_columns import iso_strings, labels, tidy_values
from sarsleuth.render.rows import chunks
from sarsleuth.safe_text import shown, utf8, visible_tree
from sarsleuth.render.table import cells
from sarsleuth.timebase.clock import on_clock
from sarsleuth.version import __version__


def document(case) -> dict:
    """The analysis as the contract's JSON document (a dict)."""
    sources = []
    for s in case.sources:
        start, end = s.span()
        sources.append({"path": s.path, "kind": s.kind, "host": s.host, "start": iso(start), "end": iso(end),
                        "records": int(s.records), "warnings": list(s.warnings)})
    # each finding carries its host's offset: ordered on the case's clock
    findings = sorted(case.findings, key=lambda f: (iso(on_clock(f.start, case.tz)) or "~", f.detector))
    return visible_tree(plain({
        "sarsleuth_version": __version__,
        "timezone": str(case.tz) if case.tz else None,
        "sources": sources,
        "skipped": [{"path": k.path, "reason": k.reason} for k in case.skipped],
        "summary": case.headline(),
        "incidents": [i.to_dict() for i in case.incidents],
        "findings": [f.to_dict() for f in findings],
        "warnings": list(case.warnings),
        "notes": list(case.notes),
        # the same event or metric value read through two files (or one file twice), counted once
        "merged": {"events": int(case.merged.get("events", 0)),
                   "metric_values": int(case.merged.get("metric_values", 0))},
        "checked": list(case.checked),
        "hosts": [h.to_dict() for h in getattr(case, "hosts", [])],
        # what a redacted case says about itself (--redact), else null
        "redacted": getattr(case, "redacted", None),
        # the story audited against its data (--audit), else absent
        **({"audit": case.audited.to_dict()} if getattr(case, "audited", None) is not None else {}),
    }))


def plain(value):
    """``value`` with only what ``json.dumps`` takes: Timestamps as ISO 8601
    text, numpy scalars as Python numbers, NaN/NaT/NA as None, tuples as
    lists, keys as text, frames and series as their dicts."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    kind = type(value).__name__
    if kind in ("NAType", "NaTType"):
        return None
    if isinstance(value, (_dt.datetime, _dt.date)) or kind == "Timestamp":
        from sarsleuth.model import iso
        return iso(value)
    if hasattr(value, "item") and not hasattr(value, "__len__"):      # a numpy scalar
        value = value.item()
        if isinstance(value, (bool, str)) or value is None:
            return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, int):
        return value
    if hasattr(value, "to_dict"):
        return plain(value.to_dict())
    return str(value)


def dumps(value) -> str:
    """Indented JSON text of a plain, UTF-8-safe structure."""
    return _json.dumps(visible_tree(plain(value)), indent=2, ensure_ascii=False, allow_nan=False)


def write_case(case, out) -> None:
    out.write(_json.dumps(document(case), indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def write_table(table, out) -> None:
    out.write(dumps(table.records) + "\n")


def write_fleet(fleet, out) -> None:
    out.write(_json.dumps(visible_tree(plain(fleet.to_json())), indent=1, ensure_ascii=False) + "\n")


def write_reports(reports, out) -> None:
    """Load-test reports' fields (:func:`report_json` of each)."""
    out.write(dumps(reports) + "\n")


def write_result(frame, out, terminal: bool = False) -> None:
    """A query's result as an array of records."""
    records = cells(frame).to_dict(orient="records")
    out.write(_json.dumps(visible_tree(plain(records)), indent=1, ensure_ascii=False) + "\n")


#: Written row by row: an sa file's table can stream through it.
STREAMS = True


def write_rows(df, out, *, terminal: bool = False, **_ignored) -> None:
    """``df`` as JSON lines (one object per row) onto ``out`` (binary):
    times as ISO 8601 text, missing values null."""
    for chunk in chunks(df):
        try:
            text = _jsonl_chunk(chunk, terminal, fix_text=terminal)
        except UnicodeError:
            # a file name or message that was not UTF-8: U+FFFD per bad byte
            text = _jsonl_chunk(chunk, terminal, fix_text=True)
        out.write(text.encode("utf-8"))


def _jsonl_chunk(chunk, terminal: bool, fix_text: bool) -> str:
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


def report_json(report: dict) -> dict:
    """A JSON-safe copy of a report dict: Timestamps become ISO 8601 strings,
    NaN and NaT become None, numpy scalars plain numbers, keys strings."""
    return plain(dict(report))

"""CSV text of table columns, formatted a column at a time.

Two formatters give the same bytes: :class:`ArrowColumns` with pyarrow's
string kernels (fast; the optional ``parquet`` extra), and
:class:`NumpyColumns` with numpy and pandas when pyarrow is not installed.
Both format each distinct timestamp and each category label once and spread
the text back by index, so a chunk costs a few vectorised passes, not a
Python call per row.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from sarsleuth.render.byte_columns import column, floats, place, squeezed, text_table
from sarsleuth.safe_text import shown, utf8

#: Python writes floats in positional notation from 1e-4 up to 1e16; pyarrow
#: writes the same digits, but switches to exponents earlier, and drops the
#: ".0" of whole numbers.  Its text is used where the two agree (checked
#: over the whole range by the tests), Python's elsewhere.
ARROW_AGREES = (1e-4, 1e9)
#: Whole numbers below this are written as integers plus ".0" (exact in int64).
WHOLE_LIMIT = 1e15


def tidy_values(values):
    """Float values rounded to 15 significant digits (whole numbers and
    values too large or small for that to be exact are left alone).

    A double holds 15.9 significant digits; the 16th and 17th of a value
    computed as ``136 / 10000 * 100`` are noise (``1.3599999999999999``),
    so sar's own 1.36 is written instead.  ``round(v * 10**k) / 10**k``
    is exact here: the scaled value is below 2**53 and 10**k (k <= 22) is
    a double, so the division rounds once, to the double nearest the
    15-digit decimal."""
    v = np.array(values, dtype="float64", copy=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.abs(v)
        fractional = np.isfinite(v) & (v != np.trunc(v)) & (a >= 1e-8) & (a < 1e15)
        if fractional.any():
            x = v[fractional]
            scale = 10.0 ** (14 - np.floor(np.log10(np.abs(x))))
            v[fractional] = np.round(x * scale) / scale
    return v


def iso_strings(times):
    """ISO 8601 text of many timestamps at once, exactly as
    :func:`sarsleuth.model.iso` writes one: seconds, or milliseconds or
    microseconds when the time has them, the UTC offset when the zone is
    known; '' for a missing time.  Returns an object array."""
    idx = pd.DatetimeIndex(times)
    wall = idx.tz_localize(None) if idx.tz is not None else idx
    missing = np.asarray(idx.isna())
    ns = wall.asi8
    out = np.datetime_as_string(wall.values.astype("datetime64[s]"), unit="s").astype(object)
    frac = np.where(missing, 0, ns % 1_000_000_000)
    sub = frac != 0
    if sub.any():
        in_ms = sub & (frac // 1000 % 1000 == 0)
        in_us = sub & ~in_ms
        for mask, unit in ((in_ms, "ms"), (in_us, "us")):
            if mask.any():
                out[mask] = np.datetime_as_string(wall.values[mask].astype(f"datetime64[{unit}]"), unit=unit)
    if idx.tz is not None:
        offsets = (ns - idx.asi8) // 1_000_000_000
        distinct, which = np.unique(offsets, return_inverse=True)
        labels = np.array([_offset(int(s)) for s in distinct], dtype=object)
        out = out + labels[which]
    out[missing] = ""
    return out


def _offset(seconds: int) -> str:
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}" + (f":{secs:02d}" if secs else "")


#: A text cell a spreadsheet would run as a formula (OWASP's CSV injection:
#: ``=``, ``+``, ``-``, ``@``, a tab or a carriage return first) ...
FORMULA_START = "=+-@\t\r"
#: ... unless it is a plain number (``-1``, sadf's CPU "all"), which a
#: spreadsheet reads as that number and nothing else.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_FORMULA_REGEX = "^[=+\\-@\t\r]"
_NUMBER_REGEX = "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"


def spreadsheet_safe(text: str) -> str:
    """A text cell as OWASP advises for CSV: one that starts like a formula
    gets a ``'`` before it, so a spreadsheet shows it as text."""
    if text[:1] and text[0] in FORMULA_START and not _PLAIN_NUMBER.match(text):
        return "'" + text
    return text


def csv_field(text: str) -> str:
    """One CSV field: quoted when it holds a comma, quote or line break."""
    if any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def labels(fmt, col):
    """``fmt`` applied once per distinct value of ``col``: (codes, labels),
    code -1 for a missing value."""
    codes, distinct = pd.factorize(col)
    texts = fmt(distinct) if len(distinct) else np.array([], dtype=object)
    return np.asarray(codes), [str(t) for t in texts]


def _category_labels(col, fix):
    return col.cat.codes.to_numpy(), [csv_field(spreadsheet_safe(fix(str(c)))) for c in col.cat.categories]


def _float_kinds(v):
    """Masks of a float column: missing, whole (int text + ".0"), where
    pyarrow's text is Python's, and the rest (Python's repr, rare)."""
    finite = np.isfinite(v)
    a = np.abs(v)
    negative_zero = (v == 0) & np.signbit(v)
    whole = finite & (v == np.trunc(v)) & (a < WHOLE_LIMIT) & ~negative_zero
    agrees = finite & ~whole & (a >= ARROW_AGREES[0]) & (a < ARROW_AGREES[1])
    missing = np.isnan(v)
    rest = ~missing & ~whole & ~agrees
    return missing, whole, agrees, rest


class ArrowColumns:
    """Chunks of a table as CSV lines, with pyarrow compute kernels."""

    def __init__(self, terminal: bool = False):
        # an extra: the core works without it
        import pyarrow as pa
        import pyarrow.compute as pc
        self.pa, self.pc = pa, pc
        self.fix = shown if terminal else utf8
        self.terminal = terminal

    def lines(self, chunk):
        """The CSV lines of ``chunk`` (each ending in a newline), as a buffer."""
        pa, pc = self.pa, self.pc
        if not len(chunk):
            return b""
        parts = [self._column(name, chunk[name]) for name in chunk.columns]
        joined = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, self._s(","))
        joined = pc.binary_join_element_wise(joined, self._s(""), self._s("\n"))
        if isinstance(joined, pa.ChunkedArray):
            joined = joined.combine_chunks()
        offsets = np.frombuffer(joined.buffers()[1], dtype=np.int64)[joined.offset:joined.offset + len(joined) + 1]
        return joined.buffers()[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0]))

    def _s(self, text: str):
        """A text scalar of the columns' type (kernels do not mix types)."""
        return self.pa.scalar(text, self.pa.large_string())

    def _take(self, codes, texts):
        pa, pc = self.pa, self.pc
        table = pa.array(texts + [""], type=pa.large_string())
        return pc.take(table, pa.array(np.where(codes < 0, len(texts), codes)))

    def _column(self, name, col):
        pa, pc = self.pa, self.pc
        dtype = col.dtype
        if pd.api.types.is_datetime64_any_dtype(dtype):
            return self._take(*labels(iso_strings, col))
        if isinstance(dtype, pd.CategoricalDtype):
            return self._take(*_category_labels(col, self.fix))
        if pd.api.types.is_bool_dtype(dtype):
            return self._take(*labels(lambda d: [str(bool(x)) for x in d], col))
        if pd.api.types.is_float_dtype(dtype):
            return self._floats(col.to_numpy(dtype="float64", na_value=float("nan")))
        if pd.api.types.is_integer_dtype(dtype):
            return pc.fill_null(pc.cast(pa.array(col, from_pandas=True), pa.large_string()), "")
        return self._text(col)

    def _floats(self, values):
        pa, pc = self.pa, self.pc
        v = tidy_values(values)
        missing, whole, agrees, rest = _float_kinds(v)
        text = pc.cast(pa.array(v), pa.large_string())
        ints = pc.binary_join_element_wise(
            pc.cast(pa.array(np.where(whole, v, 0).astype(np.int64)), pa.large_string()),
            self._s(".0"), self._s(""))
        text = pc.if_else(pa.array(whole), ints, text)
        if rest.any():
            exact = np.full(len(v), None, dtype=object)
            exact[rest] = [repr(float(x)) for x in v[rest]]
            text = pc.if_else(pa.array(rest), pa.array(exact, type=pa.large_string()), text)
        return pc.if_else(pa.array(missing), self._s(""), text)

    def _text(self, col):
        pa, pc = self.pa, self.pc
        values = col.astype(object).where(col.notna(), None).to_numpy()
        try:
            if self.terminal:
                raise TypeError("escape control characters first")
            arr = pa.array(values, type=pa.large_string(), from_pandas=True)
        except (TypeError, ValueError, UnicodeError, pa.ArrowException):
            arr = pa.array([None if v is None else self.fix(str(v)) for v in values], type=pa.large_string())
        formula = pc.and_(pc.match_substring_regex(arr, _FORMULA_REGEX),
                          pc.invert(pc.match_substring_regex(arr, _NUMBER_REGEX)))
        arr = pc.if_else(formula, pc.binary_join_element_wise(self._s("'"), arr, self._s("")), arr)
        quote = pc.match_substring_regex(arr, '[,"\r\n]')
        quoted = pc.binary_join_element_wise(self._s('"'), pc.replace_substring(arr, '"', '""'), self._s('"'),
                                             self._s(""))
        return pc.fill_null(pc.if_else(quote, quoted, arr), "")


class NumpyColumns:
    """The same lines as :class:`ArrowColumns`, with numpy and pandas only."""

    def __init__(self, terminal: bool = False):
        self.fix = shown if terminal else utf8

    def lines(self, chunk):
        if not len(chunk):
            return b""
        blocks = self._blocks(chunk)
        if blocks is not None:
            return blocks
        parts = [self._column(name, chunk[name]) for name in chunk.columns]
        joined = parts[0]
        for part in parts[1:]:
            joined = joined + "," + part
        return ("\n".join(joined.tolist()) + "\n").encode("utf-8")

    def _blocks(self, chunk):
        """The lines of a chunk of labels, times and numbers (a metrics
        table) as fixed-width byte blocks side by side
        (:mod:`~sarsleuth.render.byte_columns`): the same bytes as the
        columns of text joined, in half the time; None for a chunk with
        free text, or a label holding a NUL."""
        parts = []
        for name in chunk.columns:
            col = chunk[name]
            dtype = col.dtype
            if pd.api.types.is_datetime64_any_dtype(dtype):
                codes, texts = labels(iso_strings, col)
            elif isinstance(dtype, pd.CategoricalDtype):
                codes, texts = _category_labels(col, self.fix)
            elif pd.api.types.is_float_dtype(dtype) or pd.api.types.is_integer_dtype(dtype):
                if pd.api.types.is_float_dtype(dtype):
                    v = tidy_values(col.to_numpy(dtype="float64", na_value=float("nan")))
                    block, rest = floats(v)
                    parts.append(place(block, rest, ["" if x != x else repr(x) for x in v[rest].tolist()]))
                else:
                    text = np.array(self._column(name, col).tolist(), dtype="S")
                    parts.append(text.view(np.uint8).reshape(len(text), -1))
                parts.append(column(ord(","), len(chunk)))
                continue
            else:
                return None
            encoded = [t.encode("utf-8") for t in texts]
            if any(b"\0" in t for t in encoded):
                return None
            table = text_table(encoded + [b""])
            parts.append(table[np.where(codes < 0, len(texts), codes)])
            parts.append(column(ord(","), len(chunk)))
        parts[-1] = column(ord("\n"), len(chunk))
        return squeezed(parts)

    def _column(self, name, col):
        dtype = col.dtype
        if pd.api.types.is_datetime64_any_dtype(dtype):
            codes, texts = labels(iso_strings, col)
        elif isinstance(dtype, pd.CategoricalDtype):
            codes, texts = _category_labels(col, self.fix)
        elif pd.api.types.is_bool_dtype(dtype):
            codes, texts = labels(lambda d: [str(bool(x)) for x in d], col)
        elif pd.api.types.is_float_dtype(dtype):
            return self._floats(col.to_numpy(dtype="float64", na_value=float("nan")))
        elif pd.api.types.is_integer_dtype(dtype):
            ints = col.astype("Int64")
            text = ints.astype(str).to_numpy(dtype=object)
            text[ints.isna().to_numpy()] = ""
            return text
        else:
            return self._text(col)
        table = np.array(texts + [""], dtype=object)
        return table[np.where(codes < 0, len(texts), codes)]

    @staticmethod
    def _floats(values):
        v = tidy_values(values)
        text = np.array(list(map(float.__repr__, v.tolist())), dtype=object)
        missing, whole, _agrees, _rest = _float_kinds(v)
        text[missing] = ""
        return text

    def _text(self, col):
        values = col.astype(object).where(col.notna(), None).to_numpy()
        fix = self.fix
        return np.array(["" if v is None else csv_field(spreadsheet_safe(fix(str(v)))) for v in values], dtype=object)

"""CSV: a parsed source's long table (``parse``), streamed a chunk at a
time, and a query's result (``sql``).

Each chunk is formatted column by column (timestamps once per distinct
time, labels once per category).  A text cell that starts like a
spreadsheet formula (``=``, ``+``, ``-``, ``@``, a tab or a carriage return,
and is no plain number) gets a ``'`` first, as OWASP advises.  With pyarrow installed its string
kernels do the formatting; without it numpy and pandas do, slower, to the
same bytes.  Values are written as the shortest text that reads back as the
same number once the arithmetic noise of the 16th significant digit is
dropped (``1.36``, not ``1.3599999999999999``; see
:func:`~sarsleuth.render.csv_columns.tidy_values`).
"""
from __future__ import annotations

from sarsleuth.render.csv_columns import ArrowColumns, NumpyColumns, csv_field, spreadsheet_safe
from sarsleuth.render.rows import ahead, chunks, have_arrow
from sarsleuth.safe_text import shown, utf8
from sarsleuth.render.table import cells

#: Written row by row: an sa file's table can stream through it.
STREAMS = True


def write_rows(df, out, *, terminal: bool = False, arrow: bool | None = None) -> None:
    """``df`` as CSV onto ``out`` (a binary stream), header first.
    ``terminal``: control characters in text are shown escaped."""
    columns = list(df.columns)
    out.write((",".join(csv_field(c) for c in columns) + "\n").encode("utf-8"))
    if arrow if arrow is not None else have_arrow():
        # Arrow's kernels release the GIL: the next chunks are formatted on
        # the other core while this one is written
        for text in ahead(ArrowColumns(terminal).lines, chunks(df)):
            out.write(text)
    else:
        formatter = NumpyColumns(terminal)
        for chunk in chunks(df):
            out.write(formatter.lines(chunk))


def write_result(frame, out, terminal: bool = False) -> None:
    """A query's result; on a terminal control characters are shown escaped;
    a text cell that starts like a formula is shown as text
    (:func:`~sarsleuth.render.csv_columns.spreadsheet_safe`)."""
    table = cells(frame).map(lambda v: spreadsheet_safe(v) if isinstance(v, str) else v)
    out.write((shown if terminal else utf8)(table.to_csv(index=False)))

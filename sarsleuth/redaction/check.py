"""The last look before any byte of a redacted run is written.

Every output of ``--redact`` (the report on standard output in any format,
``--html``, the ``--plots`` SVGs and a comparison plot with the text drawn
in them, the Parquet tables of ``--save`` with their folder names and
their marker, the lines on standard error) is scanned for every name the
redaction learned, in each of its spellings, and for any address that is
not a stand-in (:meth:`~sarsleuth.redaction.names.Redactor.leak`).  A hit
refuses the output: one line naming the output and the kind of name found,
never the name, exit 2.  Only ``--redact-map``, whose job is to hold the
originals, is not looked at.
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from sarsleuth.errors import SarsleuthError, UsageError

#: Parquet rows read at a time when a saved case is looked over.
_BATCH_ROWS = 65536


class LeakRefused(UsageError):
    """An output of a redacted run would have named something of the inputs."""


def shown_path(redactor, path) -> str:
    """An output's name as a redacted run may say it."""
    return redactor.text(str(path)) if redactor is not None else str(path)


def refuse_leak(redactor, text: str, output) -> None:
    """Raise :class:`LeakRefused` when ``text`` would name something the
    redaction learned (``redactor`` None: not a redacted run)."""
    if redactor is None:
        return
    kind = redactor.leak(text)
    if kind is not None:
        raise LeakRefused(f"{shown_path(redactor, output)}: not written: it would hold {kind} of the inputs "
                          "that redaction missed")


def figure_text(fig) -> str:
    """Every text a matplotlib figure draws (titles, labels, ticks,
    legends, annotations) and its metadata: a PNG's pixels cannot be read."""
    from matplotlib.text import Text  # with the figure (matplotlib loads only to draw)
    parts = [t.get_text() for t in fig.findobj(Text)]
    parts.append(str(fig.get_label() or ""))
    return "\n".join(parts)


def refuse_figure_leak(redactor, fig, output) -> None:
    if redactor is not None:
        refuse_leak(redactor, figure_text(fig), output)


def refuse_folder_leak(redactor, folder, output) -> None:
    """A saved case before it is put in place: its file and folder names
    (``host=NAME``), every string of its Parquet tables and their
    metadata, its other files (the marker) as text."""
    if redactor is None:
        return
    folder = Path(folder)
    for here, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            refuse_leak(redactor, os.path.relpath(os.path.join(here, name), folder), output)
        for name in sorted(files):
            path = Path(here) / name
            if name.endswith(".parquet"):
                _refuse_parquet_leak(redactor, path, output)
            else:
                refuse_leak(redactor, path.read_bytes().decode("utf-8", "replace"), output)


def _refuse_parquet_leak(redactor, path, output) -> None:
    import pyarrow as pa  # the parquet extra, as --save needs it
    import pyarrow.parquet as pq
    data = pq.ParquetFile(path)
    schema = data.schema_arrow
    refuse_leak(redactor, json.dumps({k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                                      for k, v in (schema.metadata or {}).items()}), output)
    wanted = [f.name for f in schema if _holds_text(f.type, pa)]
    refuse_leak(redactor, "\n".join(schema.names), output)
    if not wanted:
        return
    for batch in data.iter_batches(batch_size=_BATCH_ROWS, columns=wanted):
        for column in batch.columns:
            values = column.dictionary if pa.types.is_dictionary(column.type) else column.unique()
            refuse_leak(redactor, "\n".join(str(v) for v in values.to_pylist() if v is not None), output)


def _holds_text(kind, pa) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)


def say_redacted(redactor, say):
    """``say`` for a redacted run: each line with its names replaced, and a
    line that would still name one withheld (said so)."""
    if redactor is None:
        return say

    def redacted_say(message: str) -> None:
        line = redactor.text(message)
        kind = redactor.leak(line)
        say(line if kind is None else f"(a line withheld: it would hold {kind} of the inputs)")
    return redacted_say


@contextlib.contextmanager
def refusals_redacted(redactor):
    """Errors raised while a redacted run writes its outputs (an output
    that cannot be written, named by its path) say no original either."""
    try:
        yield
    except LeakRefused:
        raise
    except SarsleuthError as exc:
        if redactor is None:
            raise
        line = redactor.text(str(exc))
        kind = redactor.leak(line)
        raise UsageError(line if kind is None else f"an output could not be written (its reason would hold "
                         f"{kind} of the inputs)") from None

"""The reader's blocks of rows to the metric store, vectorized per piece
of a block: each device's rows of a piece become pieces of its series."""
from __future__ import annotations

import numpy as np
import pandas as pd

from sarsleuth.metric_store import StoreBuilder
from sarsleuth.inputs.parsers.sar_text import sections
from sarsleuth.inputs.parsers.sar_text.rows import Block, RowReader
from sarsleuth.inputs.parsers.sar_text.values import to_float

#: The section whose rows are shares of a CPU's time (they sum to 100).
CPU_SECTION = "cpu"
#: Rows a block holds as text before they are converted to numbers: the
#: text of a row costs about ten times its numbers, so a big file is never
#: held whole as text (one-second files print millions of rows).
FLUSH_ROWS = 2048


class Assembler:
    """Turns the reader's blocks into a metric store, vectorized per piece
    of a block: one numpy string matrix per piece, converted once.
    Pieces are converted while the file is read (:meth:`flush`); times get
    their date once the banners are settled (:meth:`run`)."""

    def __init__(self, reader: RowReader):
        self.reader = reader
        self.builder = StoreBuilder()
        self.avg_parts: list = []
        #: {first row's time (ns, wall clock): the seconds its interval
        #: covers, from the header's time before it}
        self.first_rows: dict = {}
        self.flags: set = set()
        self.bad_values = 0
        self.empty_cpu_rows = 0
        self.empty_cpu_first = 0
        self.timeless_rows = 0
        self.timeless_first = 0

    def _warn(self, flag):
        if isinstance(flag, tuple):
            self.bad_values += flag[1]
        else:
            self.flags.add(flag)

    def flush(self, minimum: int = FLUSH_ROWS) -> None:
        """Convert the rows of every block holding at least ``minimum``."""
        for block in self.reader.blocks.values():
            if len(block.rows) >= max(minimum, 1):
                if not block.sample:
                    block.sample = block.rows[:3]
                piece = self._convert(block)
                if piece is not None:
                    block.pieces.append(piece)
                block.rows, block.seconds, block.lines = [], [], []

    def run(self, dates: list):
        self.flush(0)
        for block in self.reader.blocks.values():
            for piece in block.pieces:
                self._place(block, piece, dates)
            block.pieces = []
        return self

    def _convert(self, block: Block):
        """(values n x m, (device names, codes) or None, seconds, lines) of
        the block's rows held as text."""
        layout = block.layout
        positions = [p for p, _s, _m in layout.value_columns]
        if not positions:
            return None
        rows, devices = self._normalize(block)
        if not rows:
            return None
        # object, not numpy's fixed-width str: its float conversion is twice as fast
        matrix = np.array(rows, dtype=object)
        metrics = [m for _p, _s, m in layout.value_columns]
        values = to_float(matrix[:, positions], metrics, self._warn)
        seconds = np.asarray(block.seconds, dtype=np.int64) - block.shift
        lines = np.asarray(block.lines, dtype=np.int32)
        timeless = self._timeless(block, seconds, values)
        if timeless.any():
            self.timeless_rows += int(timeless.sum())
            self.timeless_first = self.timeless_first or int(lines[timeless][0])
            keep = ~timeless
            values, seconds, lines = values[keep], seconds[keep], lines[keep]
            devices = None if devices is None else [d for d, k in zip(devices, keep) if k]
            if not len(values):
                return None
        if len(seconds):
            block.last_second = int(seconds[-1])
        if layout.section == CPU_SECTION and values.shape[1] > 1:
            # a CPU's shares sum to 100: a row of zeros (an offline CPU, or
            # the first record after a restart sar had no record of, whose
            # interval it could not compute) holds no share at all
            empty = (values == 0).all(axis=1)
            if empty.any():
                values[empty] = np.nan
                self.empty_cpu_rows += int(empty.sum())
                self.empty_cpu_first = self.empty_cpu_first or int(lines[empty][0])
        coded = None
        if devices is not None:
            index: dict = {}
            codes = np.fromiter((index.setdefault(d, len(index)) for d in devices), dtype=np.int32,
                                count=len(devices))
            coded = (list(index), codes)
        return values, coded, seconds, lines

    @staticmethod
    def _timeless(block: Block, seconds, values):
        """Rows of zeros stamped 00:00:00 that the reader took for a new day
        although the rows after them go on where the rows before them
        stopped (02:15:02, 12:00:00 AM, 03:39:16): records sar printed
        without their time (a restart it has no record of).  They are left
        out, and the day they began is taken back from the rows after them
        (``seconds`` is changed in place; ``block.shift`` carries it on)."""
        out = np.zeros(len(seconds), dtype=bool)
        midnight = (seconds % 86400 == 0) & (values == 0).all(axis=1)
        if not midnight.any():
            return out
        edges = np.flatnonzero(np.diff(np.concatenate(([0], midnight.astype(np.int8), [0]))))
        for i, k in zip(edges[::2], edges[1::2]):        # each run of such rows, [i, k)
            before = int(seconds[i - 1]) if i else block.last_second
            if before is not None and k < len(seconds) and seconds[i] // 86400 == before // 86400 + 1 \
                    and seconds[i] > before and seconds[k] - 86400 >= before:
                out[i:k] = True
                seconds[k:] -= 86400
                block.shift += 86400
        return out

    def _place(self, block: Block, piece, dates: list):
        layout = block.layout
        values, devices, seconds, lines = piece
        metrics = [m for _p, _s, m in layout.value_columns]
        secs = [s for _p, s, _m in layout.value_columns]
        n, m = values.shape
        if devices is None:
            devices = ([""], np.zeros(n, dtype=np.int32))
        host = self.reader.segments[block.segment].host or ""
        if block.label is None:
            base = np.datetime64(dates[block.segment], "s")
            stamps = (base + seconds.astype("timedelta64[s]")).astype("datetime64[ns]").view(np.int64)
            if block.opened_at is not None and len(seconds):
                # the header's time: the record before the first row, where its interval began
                covered = int(seconds[0]) + block.shift - block.opened_at
                if 0 < covered < 86400:
                    self.first_rows.setdefault(int(stamps[0]), covered)
                block.opened_at = None
            if layout.transpose_irq:
                self._put_transposed(host, secs, devices, metrics, values, stamps, lines)
                return
            names, codes = devices
            put = self.builder.put
            for code in range(len(names)):
                rows = np.flatnonzero(codes == code) if len(names) > 1 else slice(None)
                times, at = stamps[rows], lines[rows]       # shared by the device's series
                for j, metric in enumerate(metrics):
                    put((host, secs[j], str(names[code]), metric), times, values[rows, j], lines=at)
            return
        device_col = np.repeat(np.asarray(devices[0], dtype=object)[devices[1]], m)
        metric_col = np.tile(np.asarray(metrics, dtype=object), n)
        section_col = np.tile(np.asarray(secs, dtype=object), n)
        if layout.transpose_irq:
            device_col, metric_col = _transpose_irq(device_col, metric_col)
        self.avg_parts.append((host, block.label, section_col, device_col, metric_col,
                               values.ravel(), np.repeat(np.asarray(lines, dtype=np.int64), m)))

    def _normalize(self, block: Block):
        """Rows cut to the positional columns, and the device of each row."""
        layout = block.layout
        width = len(layout.columns)
        fixed = layout.fixed
        parts = layout.device_parts
        rows = block.rows
        if all(len(r) == width for r in rows) and not layout.device_last:
            cut = rows if fixed == width else [r[:fixed] for r in rows]
        else:
            cut, keep_seconds, keep_lines = [], [], []
            need = fixed + (1 if layout.device_last else 0)
            for r, s, line in zip(rows, block.seconds, block.lines):
                if len(r) < need:
                    self._short(line)
                    continue
                if layout.device_last:
                    cut.append(r[:fixed] + [" ".join(r[fixed:])])
                else:
                    cut.append(r[:fixed])
                keep_seconds.append(s)
                keep_lines.append(line)
            block.seconds, block.lines = keep_seconds, keep_lines
        if not parts:
            return cut, None
        if layout.device_last:
            devices = [r[-1] for r in cut]
            cut = [r[:fixed] for r in cut]
        elif len(parts) == 1:
            p = parts[0]
            devices = [r[p] for r in cut]
        else:
            devices = [":".join(r[p] for p in parts) for r in cut]
        return cut, devices

    def _short(self, line: int):
        r = self.reader
        r.short_rows += 1
        if r.short_rows == 1:
            r.short_first = line

    def _put_transposed(self, host, secs, devices, metrics, values, stamps, lines):
        """sysstat 7's per-CPU interrupt rows: device and metric swap per
        value (see :func:`_transpose_irq`)."""
        n, m = values.shape
        device_col, metric_col = _transpose_irq(np.repeat(np.asarray(devices[0], dtype=object)[devices[1]], m),
                                                np.tile(np.asarray(metrics, dtype=object), n))
        section_col = np.tile(np.asarray(secs, dtype=object), n)
        flat, stamps, lines = values.ravel(), np.repeat(stamps, m), np.repeat(lines, m)
        keys = list(zip(section_col, device_col, metric_col))
        groups: dict = {}
        for i, key in enumerate(keys):
            groups.setdefault(key, []).append(i)
        for (section, device, metric), pos in groups.items():
            pos = np.asarray(pos)
            self.builder.put((host, section, str(device), metric), stamps[pos], flat[pos], lines=lines[pos])

    def store(self):
        """The metric store of every value read, each with the file line it
        was read from (for evidence; not part of the CSV export)."""
        return self.builder.finish()

    def averages(self):
        cols = {"host": object, "label": object, "section": object, "device": object, "metric": object,
                "value": "float64", "line": "int64"}
        if not self.avg_parts:
            return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in cols.items()})
        return pd.DataFrame({
            "host": np.concatenate([np.full(len(p[5]), p[0], dtype=object) for p in self.avg_parts]),
            "label": np.concatenate([np.full(len(p[5]), p[1], dtype=object) for p in self.avg_parts]),
            "section": np.concatenate([p[2] for p in self.avg_parts]),
            "device": np.concatenate([p[3] for p in self.avg_parts]),
            "metric": np.concatenate([p[4] for p in self.avg_parts]),
            "value": np.concatenate([p[5] for p in self.avg_parts]),
            "line": np.concatenate([p[6] for p in self.avg_parts]),
        })


def _transpose_irq(devices: np.ndarray, metrics: np.ndarray):
    """sysstat 7 ``CPU i000/s`` rows: the interrupt becomes the device and the
    CPU the metric (``CPU3``, or ``intr/s`` for ``all``), as 12.x prints."""
    new_devices = np.array([sections.old_irq_number(m) or m for m in metrics], dtype=object)
    new_metrics = np.array([sections.INTERRUPT_RATE if d == "all" else f"CPU{d}" for d in devices],
                           dtype=object)
    return new_devices, new_metrics


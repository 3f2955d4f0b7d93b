"""The reader's blocks of rows to the long metrics table, vectorized per
block, with text columns kept as codes until one column is built."""
from __future__ import annotations

import numpy as np

from sarsleuth.parsers.base import metrics_frame
from sarsleuth.parsers.sar_text import sections
from sarsleuth.parsers.sar_text._rows import Block, RowReader
from sarsleuth.parsers.sar_text._values import to_float

class Assembler:
    """Turns the reader's blocks into the long metrics table, vectorized per
    block: one numpy string matrix per block, converted once."""

    def __init__(self, reader: RowReader, dates: list):
        self.reader = reader
        self.dates = dates
        self.parts: list[tuple] = []
        self.avg_parts: list[tuple] = []
        self.flags: set = set()
        self.bad_values = 0

    def _warn(self, flag):
        if isinstance(flag, tuple):
            self.bad_values += flag[1]
        else:
            self.flags.add(flag)

    def run(self):
        for block in self.reader.blocks.values():
            self._block(block)
        return self

    def _block(self, block: Block):
        layout = block.layout
        rows, devices = self._normalize(block)
        if not rows:
            return
        # object, not numpy's fixed-width str: its float conversion is twice as fast
        matrix = np.array(rows, dtype=object)
        positions = [p for p, _s, _m in layout.value_columns]
        metrics = [m for _p, _s, m in layout.value_columns]
        secs = [s for _p, s, _m in layout.value_columns]
        if not positions:
            return
        values = to_float(matrix[:, positions], metrics, self._warn)
        n, m = values.shape
        if devices is None:
            devices = np.full(n, "", dtype=object)
        seg = self.reader.segments[block.segment]
        host = seg.host or ""
        if block.label is None:
            base = np.datetime64(self.dates[block.segment], "s")
            stamps = base + np.asarray(block.seconds, dtype="timedelta64[s]")
            part = _coded_part(np.repeat(stamps, m), host, secs, devices, metrics, values.ravel(),
                               layout.transpose_irq)
            part["lines"] = np.repeat(np.asarray(block.lines, dtype=np.int32), m)
            self.parts.append(part)
            return
        device_col = np.repeat(np.asarray(devices, dtype=object), m)
        metric_col = np.tile(np.asarray(metrics, dtype=object), n)
        section_col = np.tile(np.asarray(secs, dtype=object), n)
        if layout.transpose_irq:
            device_col, metric_col = _transpose_irq(device_col, metric_col)
        self.avg_parts.append((host, block.label, section_col, device_col, metric_col,
                               values.ravel()))

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

    def frame(self):
        """The long metrics table: text columns categorical (a few names
        for millions of rows), and ``line``, the file line each value was
        read from (for evidence; not part of the CSV export)."""
        import pandas as pd
        if not self.parts:
            return metrics_frame()
        return pd.DataFrame({
            "timestamp": pd.to_datetime(np.concatenate([p["stamps"] for p in self.parts])
                                        .astype("datetime64[ns]")),
            **{col: _categorical([p[col] for p in self.parts])
               for col in ("host", "section", "device", "metric")},
            "value": np.concatenate([p["values"] for p in self.parts]),
            "line": np.concatenate([p["lines"] for p in self.parts]),
        })

    def averages(self):
        import pandas as pd
        cols = ["host", "label", "section", "device", "metric", "value"]
        if not self.avg_parts:
            return pd.DataFrame({c: pd.Series([], dtype=object if c != "value" else "float64")
                                 for c in cols})
        return pd.DataFrame({
            "host": np.concatenate([np.full(len(p[5]), p[0], dtype=object) for p in self.avg_parts]),
            "label": np.concatenate([np.full(len(p[5]), p[1], dtype=object) for p in self.avg_parts]),
            "section": np.concatenate([p[2] for p in self.avg_parts]),
            "device": np.concatenate([p[3] for p in self.avg_parts]),
            "metric": np.concatenate([p[4] for p in self.avg_parts]),
            "value": np.concatenate([p[5] for p in self.avg_parts]),
        })


def _coded_part(stamps, host: str, secs: list, devices, metrics: list, values, transpose: bool):
    """One block's long columns, the text ones as (names, codes): a block has
    a handful of distinct names, so codes keep the millions of rows cheap
    until one string column is built for the whole table."""
    n = len(stamps) // max(len(metrics), 1)
    m = len(metrics)
    if devices is None:
        devices = [""] * n
    index: dict = {}
    device_codes = np.fromiter((index.setdefault(d, len(index)) for d in devices), dtype=np.int64, count=n)
    device = (list(index), np.repeat(device_codes, m))
    metric = (list(metrics), np.tile(np.arange(m), n))
    if transpose:
        dev_col, met_col = _transpose_irq(np.asarray(device[0], dtype=object)[device[1]],
                                          np.asarray(metric[0], dtype=object)[metric[1]])
        device, metric = _factorize(dev_col), _factorize(met_col)
    section_names = sorted(set(secs))
    section_codes = np.array([section_names.index(x) for x in secs], dtype=np.int64)
    return {"stamps": stamps, "values": values,
            "host": ([host], np.zeros(len(stamps), dtype=np.int64)),
            "section": (section_names, np.tile(section_codes, n)),
            "device": device, "metric": metric}


def _factorize(column: np.ndarray):
    import pandas as pd
    codes, uniques = pd.factorize(column)
    return list(uniques), codes.astype(np.int64)


def _categorical(coded: list):
    """(names, codes) pieces -> one categorical column over their names."""
    import pandas as pd
    names: dict = {}
    pieces = []
    for uniques, codes in coded:
        remap = np.array([names.setdefault(str(u), len(names)) for u in uniques], dtype=np.int32)
        pieces.append(remap[codes] if len(codes) else codes.astype(np.int32))
    codes = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
    return pd.Categorical.from_codes(codes, categories=pd.Index(list(names), dtype=object), validate=False)


def _transpose_irq(devices: np.ndarray, metrics: np.ndarray):
    """sysstat 7 ``CPU i000/s`` rows: the interrupt becomes the device and the
    CPU the metric (``CPU3``, or ``intr/s`` for ``all``), as 12.x prints."""
    new_devices = np.array([sections.old_irq_number(m) or m for m in metrics], dtype=object)
    new_metrics = np.array([sections.INTERRUPT_RATE if d == "all" else f"CPU{d}" for d in devices],
                           dtype=object)
    return new_devices, new_metrics


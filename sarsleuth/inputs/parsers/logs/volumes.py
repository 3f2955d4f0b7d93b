"""Per-minute line counts of a log, read from raw bytes.

Every line is counted under the minute of its time stamp without decoding
it: a fixed-position stamp is sliced out of every line at once with numpy;
layouts without a fixed position use one ``re.findall`` over the block.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np


@dataclass
class VolumeSpec:
    """How to read a minute key from the raw bytes of a line.

    ``fixed`` = (start, length) of the key at a fixed position of every line
    (vectorized with numpy); ``regex`` = a bytes pattern for ``re.findall``
    with ``re.M`` whose first group is the key (second group, if any, the
    level).  ``level_fixed`` = (start, length) of a level word.
    """

    regex: bytes
    fixed: tuple[int, int] | None = None
    level_fixed: tuple[int, int] | None = None
    level_group: bool = False     # the regex's second group is a level, not part of the key


class VolumeCounter:
    """Accumulates raw minute keys -> line counts in first-seen order."""

    def __init__(self, spec: VolumeSpec):
        self.spec = spec
        self.keys: dict[bytes, int] = {}
        self.levels: Counter = Counter()
        self.regex = re.compile(spec.regex, re.M)

    def add(self, data: bytes, lo: int, hi: int, ends) -> None:
        """Count the lines of ``data[lo:hi]``; ``ends`` = its newline positions."""
        if self.spec.fixed is not None:
            self._add_fixed(data, lo, ends)
        else:
            self._add_regex(data, lo, hi)

    def _add_regex(self, data: bytes, lo: int, hi: int) -> None:
        keys = self.keys
        found = self.regex.findall(data, lo, hi)
        if found and isinstance(found[0], tuple) and self.spec.level_group:
            for key, level in found:
                keys[key] = keys.get(key, 0) + 1
                if level:
                    self.levels[level] += 1
        elif found and isinstance(found[0], tuple):
            for groups in found:
                key = b" ".join(g for g in groups if g)
                keys[key] = keys.get(key, 0) + 1
        else:
            for key in found:
                keys[key] = keys.get(key, 0) + 1

    def _add_fixed(self, data: bytes, lo: int, ends) -> None:
        if not len(ends):
            return
        starts = np.empty_like(ends)
        starts[0] = lo
        starts[1:] = ends[:-1] + 1
        start, length = self.spec.fixed
        lvl = self.spec.level_fixed
        need = start + length if lvl is None else max(start + length, lvl[0] + lvl[1])
        starts = starts[(ends - starts) >= need]
        if not len(starts):
            return
        self._count_runs(_fixed_width_items(data, starts + start, length))
        if lvl is not None:
            lkeys = _fixed_width_items(data, starts + lvl[0], lvl[1])
            values, counts = np.unique(lkeys, return_counts=True)
            for v, c in zip(values.tolist(), counts.tolist()):
                self.levels[v] += c

    def _count_runs(self, keys) -> None:
        """Count keys by runs (logs are nearly sorted, so runs are few);
        fall back to a sort when they are not."""
        change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        table = self.keys
        if len(change) > 20000:
            values, first, counts = np.unique(keys, return_index=True, return_counts=True)
            for i in np.argsort(first, kind="stable"):
                k = values[i].tobytes() if hasattr(values[i], "tobytes") else bytes(values[i])
                table[k] = table.get(k, 0) + int(counts[i])
            return
        bounds = np.concatenate(([0], change, [len(keys)]))
        run_keys = keys[bounds[:-1]].tolist()
        run_len = np.diff(bounds).tolist()
        for k, n in zip(run_keys, run_len):
            table[k] = table.get(k, 0) + n


def _fixed_width_items(data: bytes, positions, width: int):
    """``data[p:p+width]`` for every p, as a numpy ``S<width>`` array: one
    gather on an overlapping view of the buffer, no per-byte index."""
    view = np.ndarray(shape=(len(data) - width + 1,), dtype=f"S{width}", buffer=data, strides=(1,))
    return view[positions]

"""sar's value tokens to numbers: plain, comma-decimal and ``sar -h``
(``1.4G``, ``46.1%``) forms, shared with the sadf readers."""
from __future__ import annotations

import re

import numpy as np

#: sar -h unit letters, powers of 1024 of a byte.
HUMAN_UNITS = {"B": 0, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
HUMAN_VALUE_RE = re.compile(r"^(-?\d+(?:[.,]\d+)?)([BkMGTPE%]?)$")


def _human_value(token: str, metric: str) -> float:
    """A ``sar -h`` value (``1.4G``, ``46.1%``, ``0.0k``) in the metric's own
    unit: sizes are powers of 1024 of a byte, converted to kB for ``kb*``/
    ``*kB*`` metrics and to MB for ``MB*`` ones."""
    m = HUMAN_VALUE_RE.match(token)
    if not m:
        return np.nan
    number = float(m.group(1).replace(",", "."))
    unit = m.group(2)
    if unit in ("", "%"):
        return number
    size = number * 1024.0 ** HUMAN_UNITS[unit]
    if metric.startswith("MB"):
        return size / 1024.0 ** 2
    if metric.startswith("kb") or "kB" in metric or metric == "areq-sz":
        return size / 1024.0
    return size


def to_float(values: np.ndarray, metrics: list[str], warn) -> np.ndarray:
    """String matrix (rows x metrics) to float64: the fast path is numpy's
    own conversion; comma decimals and ``sar -h`` suffixes take slower ones;
    tokens that are no number at all become NaN (and are counted), and so do
    infinities (``inf``, ``1e999``: sar never prints them)."""
    out = _convert(values, metrics, warn)
    infinite = np.isinf(out)
    if infinite.any():
        out[infinite] = np.nan
        warn(("bad", int(infinite.sum())))
    return out


def _convert(values: np.ndarray, metrics: list[str], warn) -> np.ndarray:
    try:
        return values.astype(np.float64)
    except (ValueError, TypeError):
        pass
    values = values.astype(str)
    swapped = np.char.replace(values, ",", ".")
    try:
        out = swapped.astype(np.float64)
        warn("comma")
        return out
    except ValueError:
        pass
    out = np.empty(values.shape, dtype=np.float64)
    bad = human = 0
    for j, metric in enumerate(metrics):
        for i, token in enumerate(swapped[:, j]):
            try:
                out[i, j] = float(token)
            except ValueError:
                value = _human_value(token, metric)
                out[i, j] = value
                if value != value:
                    bad += 1
                else:
                    human += 1
    if np.char.count(values, ",").any():
        warn("comma")
    if human:
        warn("human")
    if bad:
        warn(("bad", bad))
    return out


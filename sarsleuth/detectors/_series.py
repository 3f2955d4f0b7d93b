"""Small time-series helpers shared by the metric detectors."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Episode:
    start: object     # first timestamp where the condition held
    end: object       # last timestamp where it held
    peak_time: object
    peak: float
    samples: int


def episodes(series, mask, max_gap_samples: int = 1, peak="max") -> list[Episode]:
    """Contiguous runs where ``mask`` is True, bridging up to
    ``max_gap_samples`` False samples, with the peak of ``series`` inside.

    Working in sample positions (not seconds) keeps the rule independent of
    the collection interval (1 s or 10 min).
    """
    import numpy as np
    flags = np.asarray(mask, dtype=bool)
    if not flags.any():
        return []
    idx = np.flatnonzero(flags)
    # split where the distance between True positions exceeds the gap allowed
    breaks = np.flatnonzero(np.diff(idx) > max_gap_samples + 1)
    starts = np.concatenate(([idx[0]], idx[breaks + 1]))
    ends = np.concatenate((idx[breaks], [idx[-1]]))
    values = series.to_numpy(dtype=float)
    times = series.index
    out = []
    for s, e in zip(starts, ends):
        window = values[s:e + 1]
        k = int(np.nanargmax(window) if peak == "max" else np.nanargmin(window))
        out.append(Episode(times[s], times[e], times[s + k], float(window[k]), int(e - s + 1)))
    return out


def baseline(series, quantile: float = 0.5) -> float:
    """The host's own usual level: a quantile over the whole series (robust to
    a short incident inside a long day)."""
    import numpy as np
    v = series.to_numpy(dtype=float)
    v = v[~np.isnan(v)]
    return float(np.quantile(v, quantile)) if len(v) else float("nan")


def value_at(series, ts) -> float | None:
    try:
        return float(series.loc[ts])
    except (KeyError, TypeError):
        return None


def fmt_time(ts) -> str:
    import pandas as pd
    if ts is None or pd.isna(ts):
        return "unknown time"
    return pd.Timestamp(ts).strftime("%H:%M:%S")


def severity_for(value: float, levels: list[tuple[float, str]], default: str = "low") -> str:
    """Map a value to a severity with ``levels`` = [(threshold, severity)...]
    sorted from the highest threshold down."""
    for threshold, sev in levels:
        if value >= threshold:
            return sev
    return default


def peak_ref(ep: Episode) -> dict:
    """Refs naming when an episode peaked (ISO 8601), for the narrative."""
    from ..model import iso
    return {"peak_time": iso(ep.peak_time)}

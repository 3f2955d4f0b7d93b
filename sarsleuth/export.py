"""Writing parsed sources as tables: CSV, JSON lines or parquet."""
from __future__ import annotations

import sys

from sarsleuth.model import EVENT_COLUMNS, METRIC_COLUMNS, iso


def source_table(src):
    """The contract's long table for a source: metrics if it has any, else
    its events."""
    if src.metrics is not None and len(src.metrics):
        df = src.metrics[METRIC_COLUMNS].copy()
    else:
        df = src.events[EVENT_COLUMNS].copy() if src.events is not None else None
    if df is None:
        import pandas as pd
        df = pd.DataFrame(columns=EVENT_COLUMNS)
    df["timestamp"] = [iso(t) for t in df["timestamp"]]
    return df


def write_table(df, fmt: str, output=None) -> None:
    if fmt == "parquet":
        if output is None:
            from sarsleuth.errors import UsageError
            raise UsageError("--format parquet needs -o FILE (binary output)")
        try:
            df.to_parquet(output, index=False)
        except ImportError:
            from sarsleuth.errors import UsageError
            raise UsageError("parquet output needs pyarrow: pip install 'sarsleuth[parquet]'") from None
        return
    if fmt == "json":
        text = df.to_json(orient="records", lines=True, force_ascii=False)
    else:
        text = df.to_csv(index=False, lineterminator="\n")
    if output is None:
        sys.stdout.write(text)
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)


def reports_json(src) -> list:
    """Load-test reports as JSON-safe dicts."""
    import math
    import pandas as pd
    out = []
    for r in src.reports:
        clean = {}
        for k, v in r.items():
            if isinstance(v, pd.Timestamp):
                v = iso(v)
            elif isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
                v = None
            elif hasattr(v, "item"):
                v = v.item()
            clean[k] = v
        out.append(clean)
    return out

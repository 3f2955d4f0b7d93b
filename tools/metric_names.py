#!/usr/bin/env python3
"""Write ``docs/metric-names.md``: every sar metric and the Prometheus name
``parse --format openmetrics`` exports it as, from the one mapping,
``sarsleuth/knowledge/metric_names.toml``.

Run it after changing the mapping::

    python tools/metric_names.py            # writes the table
    python tools/metric_names.py --check    # exit 1 when the table is stale

``tests/test_openmetrics.py`` fails while the table differs from what
this writes.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sarsleuth.knowledge.metric_names import markdown_table  # noqa: E402

TABLE = ROOT / "docs" / "metric-names.md"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args()
    text = markdown_table()
    if args.check:
        stale = not TABLE.exists() or TABLE.read_text("utf-8") != text
        print(f"{TABLE.relative_to(ROOT)}: {'stale: run tools/metric_names.py' if stale else 'up to date'}")
        return 1 if stale else 0
    TABLE.write_text(text, "utf-8")
    print(f"wrote {TABLE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A table every output format can show: the detector listing, the
comparison of load-test runs and a query's result.  ``records`` hold the
raw values (what JSON prints); each column says how its cell reads for
people (text, markdown, HTML)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class Column:
    header: str
    cell: Callable[[dict], str]        # the text a person reads for one record
    numeric: bool = False               # right-aligned
    code: bool = False                  # an identifier: `code` in markdown, bold in the terminal


@dataclass
class Table:
    title: str
    columns: list
    records: list                       # raw values, one dict per row
    note: str = ""                      # said under the table (units, what is left out)

    def rows(self) -> list[list[str]]:
        return [[c.cell(r) for c in self.columns] for r in self.records]


def key(name: str) -> Callable[[dict], str]:
    """A cell showing ``record[name]`` as text ('' when absent)."""
    def cell(record: dict) -> str:
        value = record.get(name)
        return "" if value is None else str(value)
    return cell


def number(value: Any, scale: float = 1.0) -> str:
    """A number as people read it: thousands separators, no decimals for
    whole or large numbers, two otherwise (as sar prints), three significant
    digits below 1 (so 0.004 is not shown as 0.00, nor 0.012 s as 0.01);
    '' when absent."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    try:
        v = float(value) * scale
    except (TypeError, ValueError):
        return str(value)
    if v != v or v in (float("inf"), float("-inf")):
        return ""
    if abs(v) >= 1000 or v.is_integer():
        return f"{v:,.0f}"
    if abs(v) < 1:
        return f"{v:.3g}"      # 0.012 s stays 0.012, not 0.01
    return f"{v:,.2f}"


def cells(frame):
    """A query's result with array cells (DuckDB lists) as lists."""
    return frame.map(lambda v: list(v) if hasattr(v, "tolist") and not isinstance(v, str) and getattr(v, "ndim", 0)
                     else v)


def detectors_table(detectors) -> Table:
    """``sarsleuth detectors``: each detector with a line (JSON: its inputs
    and parameters too)."""
    records = [{"id": d.id, "category": d.category, "inputs": list(d.inputs), "summary": d.summary,
                "parameters": dict(d.defaults)} for d in detectors]
    return Table(title=f"{len(records)} detectors", records=records, columns=[
        Column("detector", key("id"), code=True), Column("category", key("category")),
        Column("what it looks for", key("summary"))])

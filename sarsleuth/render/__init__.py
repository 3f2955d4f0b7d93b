"""The outputs wing.  Every module of :mod:`sarsleuth.render.formats` is an
output format named after it (``text``, ``markdown``, ``json``, ``html``,
``csv``, ``parquet``...); the modules beside it here are what the formats
share (safe files, tables, the ticket document, the HTML report's timeline,
charts and explorer, matplotlib plots, what ``parse`` writes).  What a
format writes is what its module defines, one function per kind of thing,
each writing onto ``out``:

``write_case(case, out)``
    the analysis of a :class:`~sarsleuth.case.Case` (``analyze``);
``write_table(table, out)``
    a :class:`~sarsleuth.render.table.Table` (``detectors``, ``compare``);
``write_fleet(fleet, out)``
    the analysis of many hosts (``analyze`` of a fleet);
``write_rows(table, out, terminal=False)``
    a parsed source's long table, a frame or :class:`~sarsleuth.render.rows.Frames`,
    onto a binary stream (``parse``);
``write_reports(reports, out)``
    a load-test report's fields (``parse`` of ab, wrk...);
``write_result(frame, out, terminal=False)``
    a query's result (``sql``);
``write_metrics(store, out, labels=(), terminal=False)``
    every metric of the inputs, a :class:`~sarsleuth.metric_store.MetricStore`,
    onto a binary stream (``parse`` of any inputs or a saved case).

Every command offers, as ``--format``, each format that writes what it
shows, so a new format is one new module.  The registry reads which
functions a module defines from its source, without importing it, so that
the command line can list the formats and still start light.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from functools import lru_cache
from importlib import resources
from types import ModuleType

from sarsleuth.render import formats

#: What a command shows -> the function a format's module writes it with.
WRITERS = {"case": "write_case", "table": "write_table", "fleet": "write_fleet", "rows": "write_rows",
           "reports": "write_reports", "result": "write_result", "metrics": "write_metrics"}
#: How each is named when a format cannot show it.
_SHOWN = {"case": "an analysis", "table": "a table", "fleet": "a fleet", "rows": "a parsed file",
          "reports": "a load-test report", "result": "a query's result",
          "metrics": "every metric of the inputs"}
#: The format listed first (the default of every command that has it).
DEFAULT = "text"


@lru_cache(maxsize=1)
def _formats() -> dict[str, frozenset]:
    """{format: what its module writes}, from the modules' source."""
    out = {}
    for info in pkgutil.iter_modules(formats.__path__):
        if info.name.startswith("_") or info.ispkg:
            continue
        tree = ast.parse(resources.files(formats.__name__).joinpath(f"{info.name}.py").read_text("utf-8"))
        defined = set()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                defined.add(node.name)
            elif isinstance(node, ast.ImportFrom):
                defined.update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.Assign):
                defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        out[info.name] = frozenset(what for what, fn in WRITERS.items() if fn in defined)
    return out


def names(what: str = "case") -> list[str]:
    """Every format that writes ``what`` (a key of :data:`WRITERS`), the
    default first."""
    found = sorted(name for name, writes in _formats().items() if what in writes)
    return sorted(found, key=lambda n: n != DEFAULT)


def writes(name: str, what: str) -> bool:
    return what in _formats().get(name, ())


def get(name: str) -> ModuleType:
    """The module of format ``name``."""
    if name not in _formats():
        from sarsleuth.errors import UsageError
        raise UsageError(f"--format {name!r}: expected one of {', '.join(sorted(_formats()))}")
    return importlib.import_module(f"{formats.__name__}.{name}")


def writer(name: str, what: str):
    """The function format ``name`` writes ``what`` with; a usage error
    naming the formats that can, when it cannot."""
    if not writes(name, what):
        from sarsleuth.errors import UsageError
        raise UsageError(f"--format {name}: {_SHOWN[what]} is shown as {', '.join(names(what))}")
    return getattr(get(name), WRITERS[what])


def write_case(name: str, case, out, view=None) -> None:
    """``view`` (:class:`~sarsleuth.render.view.View`: ``--top``, ``--all``)
    goes to the formats that cut anything."""
    write = writer(name, "case")
    if view is not None and "view" in inspect.signature(write).parameters:
        write(case, out, view=view)
    else:
        write(case, out)


def write_table(name: str, table, out) -> None:
    writer(name, "table")(table, out)


def write_fleet(name: str, fleet, out) -> None:
    writer(name, "fleet")(fleet, out)

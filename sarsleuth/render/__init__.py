"""Outputs, one module each: every public module of this package is an
output format named after it (``text``, ``markdown``, ``json``, ``html``);
helpers are the ``_``-prefixed modules.  Adding a format is one new module
that defines

``write_case(case, out)``
    the analysis of a :class:`~sarsleuth.case.Case` onto ``out``, a text
    stream (``analyze --format NAME``);
``write_table(table, out)``
    a :class:`~sarsleuth.render._table.Table` (``detectors`` and ``compare``).

The names are found without importing the modules, so the command line can
offer them as ``--format`` choices and still start light.
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

#: The format listed first (the default of every command).
DEFAULT = "text"


def names() -> list[str]:
    """Every output format, the default first."""
    found = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_") and not m.ispkg)
    return sorted(found, key=lambda n: n != DEFAULT)


def get(name: str) -> ModuleType:
    """The module rendering format ``name``."""
    if name not in names():
        from sarsleuth.errors import UsageError
        raise UsageError(f"--format {name!r}: expected one of {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}")


def write_case(name: str, case, out, view=None) -> None:
    """``view`` (:class:`~sarsleuth.render._view.View`: ``--top``, ``--all``)
    goes to the formats that cut anything."""
    import inspect
    module = get(name)
    if view is not None and "view" in inspect.signature(module.write_case).parameters:
        module.write_case(case, out, view=view)
    else:
        module.write_case(case, out)


def write_table(name: str, table, out) -> None:
    get(name).write_table(table, out)

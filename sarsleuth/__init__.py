"""sarsleuth: post-mortem analysis of Linux servers.

    import sarsleuth
    case = sarsleuth.load("sa06", "messages", "error.log", tz="Asia/Shanghai")
    case.incidents[0].summary

Heavy modules (pandas, matplotlib) load only when something needs them, so the
command line starts fast.
"""
from __future__ import annotations

from sarsleuth.version import __version__

__all__ = ["__version__", "load", "load_case", "Case"]


def load(*paths, tz=None, year=None, window=None, link_speed=None, config=None, progress=False, date_order=None,
         redact=False):
    """Parse every path (files, directories, compressed files), run the
    detectors and correlate the findings.  Returns a :class:`Case`
    (``redact``: names replaced by stand-ins, see ``analyze --redact``)."""
    # here, not at the top: --help and sniff load this module
    from sarsleuth.case import Case
    return Case.load(*paths, tz=tz, year=year, window=window, link_speed=link_speed,
                     config=config, progress=progress, date_order=date_order, redact=redact)


def load_case(path):
    """Reopen a case saved with ``analyze --save DIR`` (Parquet; needs
    pyarrow): its tables as DataFrames (``.metrics``, ``.findings``,
    ``.fleet_incidents``...) and ``.sql(query)`` with DuckDB, nothing parsed
    again."""
    # here, not at the top: --help and sniff load this module
    from sarsleuth.saved_cases import load_case as _load_case
    return _load_case(path)


def __getattr__(name):
    if name == "Case":
        from sarsleuth.case import Case
        return Case
    raise AttributeError(name)

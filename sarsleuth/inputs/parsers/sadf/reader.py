"""sadf output: ``sadf -d`` (CSV), ``sadf -j`` (JSON) and ``sadf -x`` (XML).

All three give the same long metrics table as the sar text parser: section,
device and metric names are those of ``sadf -d`` heads (``%memused``,
``rxpck/s``...), CPU ``-1`` is ``all``, the interrupts all-CPU rate is
``intr/s``.  JSON and XML field names are translated by
:mod:`._sar_sections`.

Times: sadf prints UTC unless ``-t`` was given (then the file creator's local
time, labelled with the zone name stored in the file).  ``UTC``/``GMT``
stamps and ``-U`` epoch seconds become tz-aware UTC.  Any other label is
kept as naive wall clock, localized with ``options.tz`` when given, else
with a warning: the stored name ignores daylight saving (``CET`` in
summer), so no offset is derived from it.

``LINUX-RESTART`` records become ``sar-restart`` events and comments
``sar-comment`` events.  ``sadf -dh`` (all activities of a sample on one
line) is split back into items when the line allows only one reading (see
:func:`_split_wide_row`); otherwise, and for per-CPU interrupts, the file is
refused with the advice to export with ``sadf -d``.
"""
from __future__ import annotations

from sarsleuth.inputs.parsers.sadf.parser import SadfCsvParser, SadfJsonParser, SadfXmlParser

__all__ = ["SadfCsvParser", "SadfJsonParser", "SadfXmlParser"]

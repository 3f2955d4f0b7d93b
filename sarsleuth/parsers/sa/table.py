"""The figures of an sa file gathered into a metric store as the reader
turns slices of records into rows."""
from __future__ import annotations

import numpy as np

from sarsleuth.parsers.sa.compute import Rows


class SeriesTable:
    """The figures of an sa file as a :class:`~sarsleuth.metric_store.
    MetricStore`, filled a slice of records at a time: one series per
    section, device and metric, the devices present in every record of a
    slice sharing that slice's time array."""

    def __init__(self, host: str, tz, ranks: dict | None = None):
        from sarsleuth.metric_store import StoreBuilder
        self.host, self.tz = host, tz
        self.builder = StoreBuilder(ranks)

    def add(self, section: str, rows: Rows, stamps: np.ndarray) -> None:
        if not len(rows.rec):
            return
        order = np.argsort(rows.device, kind="stable")
        devices = rows.device[order]
        cuts = np.flatnonzero(devices[1:] != devices[:-1]) + 1
        every_record = np.arange(len(stamps))
        put = self.builder.put
        groups = []
        for pos in np.split(order, cuts):
            rec = rows.rec[pos]
            # a device in every record of the slice shares the slice's times
            times = stamps if len(rec) == len(stamps) and (rec == every_record).all() else stamps[rec]
            groups.append((pos, times, str(rows.names[rows.device[pos[0]]])))
        for metric, values in rows.metrics:       # series in the order sar prints them
            values = np.asarray(values)
            for pos, times, name in groups:
                put((self.host, section, name, metric), times, values[pos], tz=self.tz)

    def store(self):
        return self.builder.finish()

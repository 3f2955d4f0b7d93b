"""The figures of an sa file gathered into a metric store as the reader
turns slices of records into rows."""
from __future__ import annotations

import numpy as np

from sarsleuth.metric_store import StoreBuilder
from sarsleuth.inputs.parsers.sa.compute import Rows


class SeriesTable:
    """The figures of an sa file as a :class:`~sarsleuth.metric_store.
    MetricStore`, filled a slice of records at a time: one series per
    section, device and metric, the devices present in every record of a
    slice sharing that slice's time array."""

    def __init__(self, host: str, tz, ranks: dict | None = None):
        self.host, self.tz = host, tz
        self.builder = StoreBuilder(ranks)

    def add(self, section: str, rows: Rows, stamps: np.ndarray) -> None:
        if not len(rows.rec):
            return
        put = self.builder.put
        groups = self._every_record(rows, stamps)
        if groups is None:
            order = np.argsort(rows.device, kind="stable")
            devices = rows.device[order]
            cuts = np.flatnonzero(devices[1:] != devices[:-1]) + 1
            every_record = np.arange(len(stamps))
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

    @staticmethod
    def _every_record(rows: Rows, stamps: np.ndarray):
        """[(positions, times, device)] when every record the rows cover
        (the slice's, after the record it is compared with) holds the same
        devices in the same order, the usual case: each device's rows are
        then every n-th row, found without a sort, and all share one time
        array; else None."""
        first_rec = int(rows.rec[0])
        n_rec = len(stamps) - first_rec
        if n_rec <= 0 or len(rows.rec) % n_rec:
            return None
        width = len(rows.rec) // n_rec
        first = rows.device[:width]
        if not ((rows.device.reshape(n_rec, width) == first).all()
                and (rows.rec.reshape(n_rec, width) == np.arange(first_rec, len(stamps))[:, None]).all()
                and len(np.unique(first)) == width):
            return None
        times = stamps[first_rec:]
        return [(slice(j, None, width), times, str(rows.names[first[j]])) for j in range(width)]

    def store(self):
        return self.builder.finish()

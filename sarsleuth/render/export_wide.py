"""An sa file's figures in ``sadf -d``'s own layout (``parse --format csv
--layout wide``), so that scripts that read ``sadf -d FILE -- -A`` can read
sarsleuth's output instead.

As sadf prints it: the records between two restarts of the system are one
stretch; in each stretch every section (activity) in turn gets its header
line, ``# hostname;interval;timestamp;`` then sadf's column heads, and one
row per record and device (``-1`` for CPU "all"), fields separated by
``;``; a ``LINUX-RESTART`` line (interval ``-1``) follows its stretch.
Times are UTC with sadf's `` UTC`` suffix; the interval is the seconds
since the record before, rounded as sadf rounds them.  Values are printed
as sadf prints them: two decimals, or whole numbers for the counts sadf
prints as integers (:data:`~sarsleuth.inputs.parsers.sar_text.sections.SADF_INTEGERS`).

The figures come from the file's metric store (a few bytes a value); the
text is made a chunk of rows at a time, each row put together from
fixed-width byte columns that numpy fills at once (digits by place value),
then squeezed of its padding, so no Python call is made per row or value.
"""
from __future__ import annotations

import numpy as np

from sarsleuth.inputs.parsers.sar_text.sections import SADF_INTEGERS, SECTIONS
from sarsleuth.render.byte_columns import DOT, PAD, ZERO, column, constant, place, signed, squeezed, text_table
from sarsleuth.render.csv_columns import spreadsheet_safe

#: Rows formatted at a time.
CHUNK_ROWS = 1 << 16
#: sadf's head of the interrupt rates: the all-CPU column (sarsleuth's metric
#: ``intr/s``) and the per-CPU columns after it, ``CPU0``...
INTERRUPT_HEAD = "CPU*"

_SEMI, _NL = ord(";"), ord("\n")


def wide_layout_refusal(src) -> str | None:
    """Why ``src`` has no wide layout (None when it has one)."""
    if src.kind != "sa":
        return f"the wide layout is sadf -d's, of a binary sa file; {src.path} is {src.kind}"
    if "record_times" not in src.meta:
        return f"{src.path}: this sa format records no intervals sarsleuth can print as sadf does"
    return None


def write_wide(src, out, terminal: bool = False) -> None:
    """The figures of an sa Source (read whole) in sadf -d's layout onto
    ``out``, a binary stream (``terminal``: host and device names carry no
    control character an sa file could hold, being checked when read)."""
    store = src.store
    record_ns, seconds, segment = (np.asarray(a) for a in src.meta["record_times"])
    sections = _sections(store) if store else []
    host = spreadsheet_safe(src.host or "").encode("utf-8", "replace")
    # stretches and restarts in time order: a restart before the first record is the first line
    items = [(int(record_ns[segment == s].min()), 0, s) for s in np.unique(segment)]
    items += [(when, 1, text) for when, text in _restarts(src)]
    for when, restart, what in sorted(items, key=lambda item: item[:2]):
        if restart:
            stamp = _stamp_bytes(np.array([when], dtype=np.int64))[0].tobytes()
            out.write(host + b";-1;" + stamp + b";" + what + b"\n")
            continue
        in_stretch = record_ns[segment == what]
        for section in sections:
            section.write(out, host, int(in_stretch.min()), int(in_stretch.max()), record_ns, seconds)


def _restarts(src):
    """[(time ns, sadf's text)] of the file's restarts."""
    ev = src.events
    if ev is None or not len(ev):
        return []
    rows = ev[ev["kind"] == "sar-restart"]
    out = []
    for when, message in zip(rows["timestamp"], rows["message"]):
        cpus = str(message).rsplit("(", 1)[-1].rstrip(")")
        out.append((int(when.value), f"LINUX-RESTART\t({cpus})".encode()))
    return out


class _Section:
    """One section's runs: devices and metrics in the order the reader wrote them."""

    def __init__(self, name: str, runs: dict):
        self.name = name
        self.devices = list(dict.fromkeys(k[0] for k in runs))
        self.metrics = list(dict.fromkeys(k[1] for k in runs))
        self.runs = runs
        spec = SECTIONS.get(name)
        self.device_head = spec.device[0] if spec is not None and spec.device else None
        heads = list(self.metrics)
        if name == "interrupts":        # sadf heads the all-CPU column and the per-CPU ones after it so
            heads = [INTERRUPT_HEAD]
        if self.device_head is not None:
            heads.insert(0, self.device_head)
        self.header = ("# hostname;interval;timestamp;" + ";".join(heads) + "\n").encode()
        # names read from the file (an interface, a device) shown as text in a spreadsheet; sadf's -1 stays
        labels = ["-1" if d == "all" and self.device_head == "CPU" else spreadsheet_safe(d) for d in self.devices]
        self.labels = text_table([s.encode("utf-8", "replace") + b";" for s in labels]) \
            if self.device_head is not None else None

    def write(self, out, host: bytes, lo: int, hi: int, record_ns, seconds) -> None:
        """Rows of the records timed ``lo`` to ``hi`` (ns)."""
        times = self._times(lo, hi)
        if not len(times):
            return
        out.write(self.header)
        ndev = len(self.devices)
        step = max(CHUNK_ROWS // max(ndev, 1), 1)
        for start in range(0, len(times), step):
            chunk = times[start:start + step]
            values = [self._values(m, chunk) for m in self.metrics]     # each (times, devices)
            present = np.zeros((len(chunk), ndev), dtype=bool)
            for v in values:
                present |= ~np.isnan(v)
            keep = present.ravel()
            if not keep.any():
                continue
            where = np.searchsorted(record_ns, chunk)
            where = np.minimum(where, len(record_ns) - 1)
            interval = np.where(record_ns[where] == chunk, seconds[where], 0)
            prefix = np.hstack([constant(host + b";", len(chunk)), _integers(interval), column(_SEMI, len(chunk)),
                              _stamp_bytes(chunk), column(_SEMI, len(chunk))])
            parts = [np.repeat(prefix, ndev, axis=0)[keep]]
            if self.labels is not None:
                parts.append(np.tile(self.labels, (len(chunk), 1))[keep])
            for i, (metric, v) in enumerate(zip(self.metrics, values)):
                flat = v.ravel()[keep]
                parts.append(_integers(flat) if metric in SADF_INTEGERS else _hundredths(flat))
                parts.append(column(_SEMI if i < len(values) - 1 else _NL, len(flat)))
            out.write(squeezed(parts))

    def _times(self, lo: int, hi: int):
        parts = {id(r.stamps): r.stamps for r in self.runs.values()}
        times = np.unique(np.concatenate(list(parts.values()))) if len(parts) > 1 else np.unique(
            next(iter(parts.values())))
        return times[(times >= lo) & (times <= hi)]

    def _values(self, metric: str, times):
        """(len(times), devices) float64, NaN where a device has no value."""
        out = np.full((len(times), len(self.devices)), np.nan)
        for j, device in enumerate(self.devices):
            run = self.runs.get((device, metric))
            if run is None:
                continue
            stamps = run.stamps
            a, b = np.searchsorted(stamps, times[0]), np.searchsorted(stamps, times[-1], side="right")
            if b - a == len(times) and (b == a or (stamps[a] == times[0] and stamps[b - 1] == times[-1])):
                out[:, j] = run.values[a:b]
            elif b > a:
                at = np.searchsorted(times, stamps[a:b])
                out[at, j] = run.values[a:b]
        return out


def _sections(store) -> list:
    """The store's sections in its order (one host: an sa file names one)."""
    by_section: dict = {}
    for (host, section, device, metric), run in store.runs.items():
        stamps = run.stamps
        if len(stamps) > 1 and not (stamps[1:] > stamps[:-1]).all():
            order = np.argsort(stamps, kind="stable")
            first = np.concatenate(([True], stamps[order][1:] != stamps[order][:-1]))
            run = type(run)(stamps[order][first], run.values[order][first], run.tz, None)
        by_section.setdefault(section, {})[(device, metric)] = run
    return [_Section(name, runs) for name, runs in by_section.items()]


def _stamp_bytes(ns):
    """``YYYY-MM-DD HH:MM:SS UTC`` of UTC times in ns, one row each."""
    text = np.datetime_as_string(np.asarray(ns, dtype=np.int64).astype("M8[ns]").astype("M8[s]"), unit="s")
    chars = np.frombuffer(text.astype("S19").tobytes(), dtype=np.uint8).reshape(len(text), 19).copy()
    chars[:, 10] = ord(" ")
    return np.hstack([chars, constant(b" UTC", len(text))])


def _integers(values):
    """Values as sadf prints its integer columns (``%llu``)."""
    v = np.asarray(values, dtype=np.float64)
    missing = np.isnan(v)
    whole = np.where(missing, 0, np.rint(v)).astype(np.int64)
    return signed(np.abs(whole), whole < 0, missing)


def _hundredths(values):
    """Values as ``%.2f`` prints them: rounded half to even on the exact
    binary value, so a value whose hundredths land near a half, or too
    large for whole hundredths in 53 bits, is printed by Python's own
    ``%.2f`` (a handful in a file, if any)."""
    v = np.asarray(values, dtype=np.float64)
    missing = ~np.isfinite(v)
    scaled = np.where(missing, 0.0, v) * 100.0
    near = np.abs(np.abs(scaled - np.trunc(scaled)) - 0.5) < 1e-6
    huge = np.abs(scaled) >= 2.0 ** 53
    cents = np.rint(np.where(huge, 0.0, scaled)).astype(np.int64)
    for i in np.flatnonzero(near & ~huge & ~missing):
        cents[i] = round(float("%.2f" % v[i]) * 100.0)
    neg = np.signbit(v) & ~missing          # printf writes -0.00 for a small negative
    mag = np.abs(cents)
    whole = signed(mag // 100, neg, missing | huge)
    frac = mag % 100
    tail = np.empty((len(v), 3), dtype=np.uint8)
    tail[:, 0] = DOT
    tail[:, 1] = ZERO + frac // 10
    tail[:, 2] = ZERO + frac % 10
    tail[missing | huge] = PAD
    rare = np.flatnonzero(huge & ~missing)
    return place(np.hstack([whole, tail]), rare, ["%.2f" % v[i] for i in rare])

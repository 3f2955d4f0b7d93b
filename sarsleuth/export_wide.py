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
prints as integers (:data:`~sarsleuth.parsers.sar_text.sections.SADF_INTEGERS`).

The figures come from the file's metric store (a few bytes a value); the
text is made a chunk of rows at a time, each row put together from
fixed-width byte columns that numpy fills at once (digits by place value),
then squeezed of its padding, so no Python call is made per row or value.
"""
from __future__ import annotations

import numpy as np

from sarsleuth.parsers.sar_text.sections import SADF_INTEGERS, SECTIONS

#: Rows formatted at a time.
CHUNK_ROWS = 1 << 16
#: sadf's head of the interrupt rates: the all-CPU column (sarsleuth's metric
#: ``intr/s``) and the per-CPU columns after it, ``CPU0``...
INTERRUPT_HEAD = "CPU*"

_PAD = 0                # filler byte of the fixed-width columns, squeezed out
_SEMI, _NL, _DOT, _MINUS, _ZERO = (ord(c) for c in ";\n.-0")


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
    host = (src.host or "").encode("utf-8", "replace")
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
        labels = ["-1" if d == "all" and self.device_head == "CPU" else d for d in self.devices]
        self.labels = _text_columns([s.encode("utf-8", "replace") + b";" for s in labels]) \
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
            prefix = _hstack([_constant(host + b";", len(chunk)), _integers(interval), _column(_SEMI, len(chunk)),
                              _stamp_bytes(chunk), _column(_SEMI, len(chunk))])
            parts = [np.repeat(prefix, ndev, axis=0)[keep]]
            if self.labels is not None:
                parts.append(np.tile(self.labels, (len(chunk), 1))[keep])
            for i, (metric, v) in enumerate(zip(self.metrics, values)):
                flat = v.ravel()[keep]
                parts.append(_integers(flat) if metric in SADF_INTEGERS else _hundredths(flat))
                parts.append(_column(_SEMI if i < len(values) - 1 else _NL, len(flat)))
            rows = _hstack(parts)
            out.write(rows[rows != _PAD].tobytes())

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


# ------------------------------------------------------------------ fixed-width byte columns

def _hstack(parts):
    return np.hstack(parts) if len(parts) > 1 else parts[0]


def _column(byte: int, n: int):
    return np.full((n, 1), byte, dtype=np.uint8)


def _constant(text: bytes, n: int):
    return np.tile(np.frombuffer(text, dtype=np.uint8), (n, 1))


def _text_columns(texts: list):
    """Texts as rows of one width, padded."""
    width = max((len(t) for t in texts), default=0)
    out = np.zeros((len(texts), width), dtype=np.uint8)
    for i, t in enumerate(texts):
        out[i, :len(t)] = np.frombuffer(t.replace(b"\0", b""), dtype=np.uint8)
    return out


def _stamp_bytes(ns):
    """``YYYY-MM-DD HH:MM:SS UTC`` of UTC times in ns, one row each."""
    text = np.datetime_as_string(np.asarray(ns, dtype=np.int64).astype("M8[ns]").astype("M8[s]"), unit="s")
    chars = np.frombuffer(text.astype("S19").tobytes(), dtype=np.uint8).reshape(len(text), 19).copy()
    chars[:, 10] = ord(" ")
    return np.hstack([chars, _constant(b" UTC", len(text))])


def _digits(a, width: int):
    """Decimal digits of non-negative int64s, right-aligned in ``width``
    columns, the leading zeros padding (one digit at least)."""
    out = np.empty((len(a), width), dtype=np.uint8)
    x = a.copy()
    for j in range(width - 1, -1, -1):
        out[:, j] = _ZERO + x % 10
        x //= 10
    lead = np.argmax(out != _ZERO, axis=1)
    lead = np.where(a == 0, width - 1, lead)
    out[np.arange(width) < lead[:, None]] = _PAD
    return out, lead


def _width(a) -> int:
    top = int(a.max()) if len(a) else 0
    return max(len(str(top)), 1)


def _signed(mag, neg, missing):
    """Integers (magnitudes and signs) as text columns, a column for the
    sign; nothing where missing."""
    digits, lead = _digits(mag, _width(mag))
    out = np.hstack([np.full((len(mag), 1), _PAD, dtype=np.uint8), digits])
    rows = np.flatnonzero(neg)
    out[rows, lead[rows]] = _MINUS
    out[missing] = _PAD
    return out


def _integers(values):
    """Values as sadf prints its integer columns (``%llu``)."""
    v = np.asarray(values, dtype=np.float64)
    missing = np.isnan(v)
    whole = np.where(missing, 0, np.rint(v)).astype(np.int64)
    return _signed(np.abs(whole), whole < 0, missing)


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
    whole = _signed(mag // 100, neg, missing | huge)
    frac = mag % 100
    tail = np.empty((len(v), 3), dtype=np.uint8)
    tail[:, 0] = _DOT
    tail[:, 1] = _ZERO + frac // 10
    tail[:, 2] = _ZERO + frac % 10
    tail[missing | huge] = _PAD
    out = np.hstack([whole, tail])
    rare = np.flatnonzero(huge & ~missing)
    if len(rare):
        texts = [("%.2f" % v[i]).encode() for i in rare]
        width = max(out.shape[1], max(len(t) for t in texts))
        out = np.hstack([np.zeros((len(v), width - out.shape[1]), dtype=np.uint8), out])
        for i, text in zip(rare, texts):
            out[i] = _PAD
            out[i, width - len(text):] = np.frombuffer(text, dtype=np.uint8)
    return out

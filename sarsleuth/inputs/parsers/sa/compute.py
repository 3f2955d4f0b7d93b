"""From raw counters to sysstat's figures, one activity at a time, vectorized.

For one activity the items of a slice of statistics records become rows
(record, item position); each row is paired with the same item in the previous
record of the same segment (by CPU number, interface name, disk
major/minor...) and the activity's formulas run on whole columns at once.
CPU and softnet statistics get the treatment sysstat gives them: CPU "all" is
recomputed as the sum of the online CPUs, offline CPUs keep their last
values and are not shown, tickless CPUs show 100 % idle.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sarsleuth.inputs.parsers.sa import activities as A
from sarsleuth.inputs.parsers.sa.records import gather, gather_bytes

U32_MOD = float(1 << 32)
U64_MOD = float(1 << 64)


@dataclass
class Rows:
    """The output of one activity: one entry per (record, device, metric)."""

    rec: np.ndarray          # int64 record index per row
    device: np.ndarray       # integer code of the device label per row (into ``names``)
    names: np.ndarray        # object array of device labels
    metrics: list            # [(metric, values)] each values aligned with rec


def numbered(count: int, first: int = 0, head: str | None = None) -> np.ndarray:
    """Labels of positions 0..count-1: ``head`` for position 0 when given,
    then numbers from ``first``."""
    labels = [str(i + first) for i in range(count)]
    if head is not None and count:
        labels = [head] + [str(i - 1) for i in range(1, count)]
    return np.array(labels, dtype=object)


#: Writers before sysstat 11.7.1 stored a serial line's number plus one, so
#: that 0 marks an unused slot.
SERIAL_LINE_AS_IS_SINCE = (11, 7, 1)

#: A writer whose version is unknown is taken as today's sysstat.
NEWEST_WRITER = (99, 0, 0)


def writer_version(text: str) -> tuple:
    """(major, minor, patch) of a version string such as "11.7.3"."""
    parts = []
    for piece in text.split(".")[:3]:
        if not piece.isdigit():
            return NEWEST_WRITER
        parts.append(int(piece))
    return tuple(parts + [0] * (3 - len(parts))) if parts else NEWEST_WRITER


class ItemTable:
    """Items of one activity across records, with their raw fields."""

    def __init__(self, u8, layout, act, rec_off, rec_nr, long_size, endian, keep_first_nr2=False):
        nr2 = act.nr2
        counts = rec_nr * nr2
        if keep_first_nr2:
            # per-CPU tables (interrupts): keep only the sub-items of CPU "all"
            counts = np.minimum(rec_nr, 1) * nr2
        total = int(counts.sum())
        self.rec = np.repeat(np.arange(len(rec_off), dtype=np.int64), counts)
        starts = np.cumsum(counts) - counts
        self.pos = np.arange(total, dtype=np.int64) - np.repeat(starts, counts)
        self.offsets = np.repeat(rec_off, counts) + self.pos * act.size
        self.u8 = u8
        self.layout = layout
        self.long_size = long_size
        self.endian = endian
        self.values = {}
        self.widths = {}
        self.writer = NEWEST_WRITER       # sysstat version that wrote the file
        self.cpu_block = 0                # items per CPU of a per-CPU table (interrupts)
        for f in layout.fields:
            self._read(f)

    def _read(self, f):
        e = self.endian
        if f.kind == "f64":
            self.values[f.name] = gather(self.u8, self.offsets + f.offset, e + "f8")
            self.widths[f.name] = 0
        elif f.kind == "u32" or (f.kind == "ul" and self.long_size == 4):
            self.values[f.name] = gather(self.u8, self.offsets + f.offset, e + "u4").astype(np.uint64)
            self.widths[f.name] = 32
        else:
            self.values[f.name] = gather(self.u8, self.offsets + f.offset, e + "u8")
            self.widths[f.name] = 64

    def get(self, name):
        """Raw field (zeros when the writer's structure lacked it)."""
        if name not in self.values:
            self.values[name] = np.zeros(len(self.rec), dtype=np.uint64)
            self.widths[name] = 64
        return self.values[name]

    def string(self, name):
        """Decoded C strings of a character field, one per row."""
        codes, names = self.string_codes(name)
        return names[codes] if len(codes) else np.array([], dtype=object)

    def string_codes(self, name):
        """(code per row, object array of distinct decoded strings) of a
        character field; codes follow the strings' sorted order."""
        for sname, off, length in self.layout.strings:
            if sname == name:
                return _decode_rows(gather_bytes(self.u8, self.offsets + off, length))
        return np.zeros(len(self.rec), dtype=np.int64), np.array([""], dtype=object)

    def byte(self, name):
        for sname, off, _length in self.layout.strings:
            if sname == name:
                return self.u8[self.offsets + off].astype(np.int64)
        return np.zeros(len(self.rec), dtype=np.int64)

    def subset(self, mask):
        """Keep only the rows where ``mask`` is true."""
        self.rec, self.pos, self.offsets = self.rec[mask], self.pos[mask], self.offsets[mask]
        self.values = {k: v[mask] for k, v in self.values.items()}


def _decode_rows(raw: np.ndarray):
    """C strings from an (n, length) byte array: (code per row, distinct
    decoded strings, sorted), decoding each distinct value once."""
    if not len(raw):
        return np.zeros(0, dtype=np.int64), np.array([""], dtype=object)
    # one fixed-width bytes value per row: hashing-free unique on 1-D data
    fixed = np.ascontiguousarray(raw).view(f"S{raw.shape[1]}").reshape(-1)
    uniq, inverse = np.unique(fixed, return_inverse=True)
    texts = []
    for value in uniq:
        b = bytes(value).split(b"\0", 1)[0]
        texts.append("".join(ch if 32 <= ord(ch) < 127 else "." for ch in b.decode("latin-1")))
    # distinct raw values may decode alike (bytes after the NUL differ)
    names, remap = np.unique(np.array(texts, dtype=object), return_inverse=True)
    return remap.reshape(-1)[inverse.reshape(-1)].astype(np.int64), names.astype(object)


class Context:
    """Current and previous values of paired rows, for the formulas."""

    def __init__(self, table: ItemTable, cur_idx, prev_idx, itv):
        self.table = table
        self.cur_idx = cur_idx
        self.prev_idx = prev_idx         # -1: compare with zeros (new item)
        self.itv = itv

    def raw(self, name):
        return self.table.get(name)[self.cur_idx]

    def raw_prev(self, name):
        values = self.table.get(name)
        prev = values[np.maximum(self.prev_idx, 0)]
        return np.where(self.prev_idx >= 0, prev, np.zeros_like(prev))

    def cur(self, name):
        return self.raw(name).astype(np.float64)

    @property
    def writer(self) -> tuple:
        """(major, minor, patch) of the sysstat that wrote the file: some
        figures changed their formula between releases."""
        return self.table.writer

    def has(self, name) -> bool:
        """Whether the writer's structure had this field at all."""
        return self.table.layout.field(name) is not None

    def went_down(self, name):
        return self.raw(name) < self.raw_prev(name)

    def delta(self, name):
        """now - before, modulo the field's width like C unsigned
        arithmetic (a 32-bit counter that wrapped still gives the right
        difference)."""
        cur, prev = self.raw(name), self.raw_prev(name)
        width = self.table.widths.get(name, 64)
        if width == 0:
            return cur - prev
        diff = (cur - prev).astype(np.float64)       # uint64 arithmetic wraps mod 2**64
        if width == 32:
            diff = np.where(cur < prev, (cur.astype(np.float64) + U32_MOD) - prev.astype(np.float64), diff)
        return diff

    def rate(self, name):
        return self.delta(name) / self.itv * 100.0

    def string_code(self, name):
        return self.table.byte(name)[self.cur_idx]


# --- pairing rows with the previous record -------------------------------------

def pair_rows(rec, keys, prev_rec, allow_new: bool):
    """Indices of current rows kept and of their previous rows.

    ``prev_rec[r]`` is the record paired with record ``r`` (-1 for the first
    record of a segment).  Returns (cur_idx, prev_idx) where prev_idx is -1
    for items absent before (kept only when ``allow_new``)."""
    n_rec = len(prev_rec) + 1
    ids = keys.astype(np.int64) * n_rec + rec
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    has_prev_rec = prev_rec[rec] >= 0
    wanted = keys.astype(np.int64) * n_rec + np.where(has_prev_rec, prev_rec[rec], 0)
    where = np.searchsorted(sorted_ids, wanted)
    where_c = np.minimum(where, len(sorted_ids) - 1) if len(sorted_ids) else where
    found = has_prev_rec & (len(sorted_ids) > 0)
    if len(sorted_ids):
        found &= sorted_ids[where_c] == wanted
    prev = np.where(found, order[where_c] if len(sorted_ids) else 0, -1)
    keep = has_prev_rec & (found | allow_new)
    cur_idx = np.flatnonzero(keep)
    return cur_idx, prev[cur_idx]


def codes_of(values):
    """(code per row, distinct values sorted, as strings) of integer values."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64), np.array([""], dtype=object)
    uniq, codes = np.unique(values, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), uniq.astype(str).astype(object)


# --- generic activities -----------------------------------------------------------

def generic_rows(spec, table: ItemTable, prev_rec, itv_rec) -> Rows:
    keys, codes, names = item_keys(spec, table)
    cur_idx, prev_idx = pair_rows(table.rec, keys, prev_rec, spec.new_item_from_zero)
    rec = table.rec[cur_idx]
    ctx = Context(table, cur_idx, prev_idx, itv_rec[rec])
    metrics = spec.compute(ctx)
    device = codes[cur_idx]
    if spec.id == A.A_PWR_CPU:
        # offline CPUs have a null frequency and are not shown
        keep = ctx.raw("cpufreq") != 0
        rec, device = rec[keep], device[keep]
        metrics = [(m, v[keep]) for m, v in metrics]
    return Rows(rec, device, names, metrics)


def item_keys(spec, table: ItemTable):
    """(integer key per row, device code per row, device labels) for an
    activity: the key pairs an item with itself in the previous record, the
    code indexes the labels."""
    n = len(table.rec)
    how = spec.keyed_by
    top = int(table.pos.max()) + 1 if n else 0
    if how == "single":
        zeros = np.zeros(n, dtype=np.int64)
        return zeros, zeros, np.array([""], dtype=object)
    if how == "cpu":
        return table.pos, table.pos, numbered(top, head="all")
    if how == "position":
        first = 0 if spec.id == A.A_PWR_IN else 1
        return table.pos, table.pos, numbered(top, first)
    if how == "line":
        line = table.get("line").astype(np.int64)
        if table.writer < SERIAL_LINE_AS_IS_SINCE:
            line = line - 1           # stored as line + 1 (0: an unused slot)
        codes, names = codes_of(line)
        return line, codes, names
    if how == "disk":
        major, minor = table.get("major").astype(np.int64), table.get("minor").astype(np.int64)
        keys = major * (1 << 24) + minor
        if not n:
            return keys, keys, np.array([""], dtype=object)
        uniq, inverse = np.unique(keys, return_inverse=True)
        names = np.array([disk_name(int(k >> 24), int(k & 0xFFFFFF)) for k in uniq], dtype=object)
        return keys, inverse.reshape(-1).astype(np.int64), names
    if how == "irq":
        if table.layout.strings:
            codes, names = table.string_codes("irq_name")
            return codes, codes, names
        return table.pos, table.pos, numbered(top, head="sum")
    if how == "usb":
        codes, names = codes_of(table.get("bus_nr").astype(np.int64))
        return table.pos, codes, names
    name = {"interface": "interface", "fchost": "fchost_name", "filesystem": "fs_name"}[how]
    codes, names = table.string_codes(name)
    return codes, codes, names


# --- disk names ---------------------------------------------------------------------

def _letters(index: int) -> str:
    if index < 26:
        return chr(ord("a") + index)
    return chr(ord("a") + index // 26 - 1) + chr(ord("a") + index % 26)


#: major -> (name, controller number, disks per controller, minors per disk)
#: for the letter-named families of sysstat's ioconf (sd, hd, xvd...).
_LETTER_MAJORS = {8: ("sd", 0, 16, 16), 3: ("hd", 0, 2, 64), 22: ("hd", 1, 2, 64), 202: ("xvd", 0, 16, 16)}
_LETTER_MAJORS.update({m: ("sd", k + 1, 16, 16) for k, m in enumerate((65, 66, 67, 68, 69, 70, 71))})
_LETTER_MAJORS.update({m: ("sd", k + 8, 16, 16) for k, m in enumerate(range(128, 136))})
_LETTER_MAJORS.update({m: ("hd", k + 2, 2, 64) for k, m in enumerate((33, 34, 56, 57, 88, 89, 90, 91))})
#: majors named "<name><minor>"
_NUMBER_MAJORS = {1: "ram", 7: "loop", 9: "md", 11: "scd", 43: "nb"}


def disk_name(major: int, minor: int) -> str:
    """The name sadf gives a disk from sysstat's device table (``sda``,
    ``sdb3``, ``md0``...), ``devM-m`` for majors it cannot name (device
    mapper, NVMe and virtio majors are assigned at boot)."""
    if major in _LETTER_MAJORS:
        name, ctrl, per_ctrl, minors = _LETTER_MAJORS[major]
        if (minor & 0xFF) < per_ctrl * minors:
            index = ctrl * per_ctrl + (minor & 0xFF) // minors
            part = minor % minors
            return f"{name}{_letters(index)}" + (str(part) if part else "")
    if major in _NUMBER_MAJORS and minor < 256:
        return f"{_NUMBER_MAJORS[major]}{minor}"
    return f"dev{major}-{minor}"

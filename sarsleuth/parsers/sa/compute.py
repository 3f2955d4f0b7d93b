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

from sarsleuth.parsers.sa import activities as A
from sarsleuth.parsers.sa.records import gather, gather_bytes

U32_MOD = float(1 << 32)
U64_MOD = float(1 << 64)


@dataclass
class Rows:
    """The output of one activity: one entry per (record, device, metric)."""

    rec: np.ndarray          # int64 record index per row
    device: np.ndarray       # integer code of the device label per row (into ``names``)
    names: np.ndarray        # object array of device labels
    metrics: list            # [(metric, values)] each values aligned with rec


def _numbered(count: int, first: int = 0, head: str | None = None) -> np.ndarray:
    """Labels of positions 0..count-1: ``head`` for position 0 when given,
    then numbers from ``first``."""
    labels = [str(i + first) for i in range(count)]
    if head is not None and count:
        labels = [head] + [str(i - 1) for i in range(1, count)]
    return np.array(labels, dtype=object)


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
        return table.pos, table.pos, _numbered(top, head="all")
    if how == "position":
        first = 0 if spec.id == A.A_PWR_IN else 1
        return table.pos, table.pos, _numbered(top, first)
    if how == "line":
        line = table.get("line").astype(np.int64)
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
        return table.pos, table.pos, _numbered(top, head="sum")
    if how == "usb":
        codes, names = codes_of(table.get("bus_nr").astype(np.int64))
        return table.pos, codes, names
    name = {"interface": "interface", "fchost": "fchost_name", "filesystem": "fs_name"}[how]
    codes, names = table.string_codes(name)
    return codes, codes, names


# --- CPU ----------------------------------------------------------------------------

_CPU_TOTAL = ("user", "nice", "sys", "idle", "iowait", "hardirq", "steal", "softirq")
_CPU_METRICS = ("%usr", "%nice", "%sys", "%iowait", "%steal", "%irq", "%soft", "%guest", "%gnice", "%idle")
_NEAR_MAX = float((1 << 64) - 1 - 0x7FFFF)


def _carry_offline(table: ItemTable, fields, segment_of_rec, offline_raw, seed=None):
    """sysstat keeps the last values of a CPU while it is offline: forward-
    fill the rows whose counters are all zero (CPU "all" excluded).

    ``seed`` (records read a slice at a time): the values the items of the
    slice's first record had once filled, as returned in the state of the
    previous slice; they replace that record's raw values."""
    import pandas as pd
    vals = {f: table.get(f).astype(np.float64) for f in fields}
    first = None
    if seed is not None and len(seed["pos"]):
        first = np.flatnonzero(table.rec == 0)
        where = np.searchsorted(seed["pos"], table.pos[first])
        where_c = np.minimum(where, len(seed["pos"]) - 1)
        found = seed["pos"][where_c] == table.pos[first]
        first, where_c = first[found], where_c[found]
        for f in fields:
            vals[f][first] = seed[f][where_c]
        offline_raw = offline_raw.copy()
        offline_raw[first] = False
    if not offline_raw.any():
        return vals
    frame = pd.DataFrame(vals)
    frame[offline_raw] = np.nan
    group = segment_of_rec[table.rec].astype(np.int64) * (1 << 20) + table.pos
    filled = frame.groupby(group).ffill().fillna(0.0)
    return {f: filled[f].to_numpy() for f in fields}


def _last_record_state(table: ItemTable, vals, fields) -> dict:
    """Filled values of the items of the last record (sorted by position),
    to seed the next slice of records."""
    if not len(table.rec):
        return {"pos": np.zeros(0, dtype=np.int64), **{f: np.zeros(0) for f in fields}}
    idx = np.flatnonzero(table.rec == table.rec[-1])
    idx = idx[np.argsort(table.pos[idx], kind="stable")]
    return {"pos": table.pos[idx], **{f: vals[f][idx].copy() for f in fields}}


def cpu_rows(table: ItemTable, prev_rec, segment_of_rec, nr_of_rec, state=None) -> Rows:
    """%usr %nice %sys ... for CPU "all" and each online CPU, as sadf -d.

    ``state`` (a dict, updated) carries the values of offline CPUs from one
    slice of records to the next."""
    fields = CPU_FIELD_NAMES
    raw_total = sum(table.get(f).astype(np.float64) for f in _CPU_TOTAL)
    offline_raw = (raw_total == 0) & (table.pos > 0)
    vals = _carry_offline(table, fields, segment_of_rec, offline_raw, state.get("seed") if state else None)
    if state is not None:
        state["seed"] = _last_record_state(table, vals, fields)
    cur_idx, prev_idx = pair_rows(table.rec, table.pos, prev_rec, False)
    c = {f: vals[f][cur_idx] for f in fields}
    p = {f: vals[f][prev_idx] for f in fields}
    rec, pos = table.rec[cur_idx], table.pos[cur_idx]
    itv_cpu = _per_cpu_interval(c, p)              # also fixes p's idle/iowait
    smp = nr_of_rec[rec] > 1
    tot_p = sum(p[f] for f in _CPU_TOTAL)
    per_cpu = smp & (pos > 0)
    counted = per_cpu & (tot_p != 0)
    shown_cpu = counted & ~offline_raw[cur_idx]

    # CPU "all": summed over counted CPUs on SMP, the file's own line otherwise
    recs_smp = np.unique(rec[per_cpu])
    slot = np.searchsorted(recs_smp, rec)
    def sum_of(arr):
        return np.bincount(slot[counted], weights=arr[counted], minlength=len(recs_smp))
    all_c = {f: sum_of(c[f]) for f in fields}
    all_p = {f: sum_of(p[f]) for f in fields}
    deltot = sum_of(itv_cpu)
    up_rows = np.flatnonzero(~smp & (pos == 0))
    all_rec = np.concatenate([recs_smp, rec[up_rows]])
    for f in fields:
        all_c[f] = np.concatenate([all_c[f], c[f][up_rows]])
        all_p[f] = np.concatenate([all_p[f], p[f][up_rows]])
    deltot = _unsigned(np.concatenate([deltot, itv_cpu[up_rows]]))
    deltot = np.where(deltot == 0, 1.0, deltot)
    all_vals = _cpu_percent(all_c, all_p, deltot, tickless=np.zeros(len(deltot), dtype=bool))

    idx = np.flatnonzero(shown_cpu)
    cc = {f: c[f][idx] for f in fields}
    pp = {f: p[f][idx] for f in fields}
    tickless = itv_cpu[idx] == 0
    cpu_vals = _cpu_percent(cc, pp, np.where(tickless, 1.0, _unsigned(itv_cpu[idx])), tickless)

    out_rec = np.concatenate([all_rec, rec[idx]])
    device = np.concatenate([np.zeros(len(all_rec), dtype=np.int64), pos[idx]])
    top = int(table.pos.max()) + 1 if len(table.pos) else 1
    metrics = [(m, np.concatenate([all_vals[m], cpu_vals[m]])) for m in _CPU_METRICS]
    return Rows(out_rec, device, _numbered(top, head="all"), metrics)


CPU_FIELD_NAMES = A.CPU_FIELDS


def _per_cpu_interval(c, p):
    """sysstat's get_per_cpu_interval(), on columns; adjusts p in place."""
    ishift = np.zeros(len(c["user"]))
    du = (c["user"] - c["guest"]) - (p["user"] - p["guest"])
    ishift += np.where(du < 0, -du, 0.0)
    dn = (c["nice"] - c["guest_nice"]) - (p["nice"] - p["guest_nice"])
    ishift += np.where(dn < 0, -dn, 0.0)
    iowait_down = (c["iowait"] < p["iowait"]) & (p["iowait"] < _NEAR_MAX)
    idle_up = (c["idle"] > p["idle"]) | (p["idle"] >= _NEAR_MAX)
    p["iowait"] = np.where(iowait_down, np.where(idle_up, c["iowait"], 0.0), p["iowait"])
    idle_down = (c["idle"] < p["idle"]) & (p["idle"] < _NEAR_MAX)
    p["idle"] = np.where(idle_down, 0.0, p["idle"])
    return sum(c[f] for f in _CPU_TOTAL) - sum(p[f] for f in _CPU_TOTAL) + ishift


def _unsigned(itv):
    """An interval as sysstat's unsigned long long holds it: one that went
    below zero (counters going backwards) wraps to a huge divisor, so every
    percentage over it prints 0.00, never a negative figure."""
    return np.where(itv < 0, itv + 2.0 ** 64, itv)


def _ll_sp(prev, cur, itv):
    return np.where(cur < prev, 0.0, (cur - prev) / itv * 100.0)


def _cpu_percent(c, p, itv, tickless):
    usr_c, usr_p = c["user"] - c["guest"], p["user"] - p["guest"]
    nice_c, nice_p = c["nice"] - c["guest_nice"], p["nice"] - p["guest_nice"]
    out = {
        "%usr": _ll_sp(usr_p, usr_c, itv),
        "%nice": _ll_sp(nice_p, nice_c, itv),
        "%sys": _ll_sp(p["sys"], c["sys"], itv),
        "%iowait": _ll_sp(p["iowait"], c["iowait"], itv),
        "%steal": _ll_sp(p["steal"], c["steal"], itv),
        "%irq": _ll_sp(p["hardirq"], c["hardirq"], itv),
        "%soft": _ll_sp(p["softirq"], c["softirq"], itv),
        "%guest": _ll_sp(p["guest"], c["guest"], itv),
        "%gnice": _ll_sp(p["guest_nice"], c["guest_nice"], itv),
        "%idle": _ll_sp(p["idle"], c["idle"], itv),
    }
    if tickless.any():
        for m in out:
            out[m] = np.where(tickless, 100.0 if m == "%idle" else 0.0, out[m])
    return out


# --- softnet ------------------------------------------------------------------------

def softnet_rows(spec, table: ItemTable, prev_rec, segment_of_rec, itv_rec, state=None) -> Rows:
    """Per-CPU softnet rates, and CPU "all" as their sum (sysstat does not
    store "all" for this activity).  ``state`` as for :func:`cpu_rows`."""
    fields = A.SOFTNET_FIELDS
    raw_total = sum(table.get(f).astype(np.float64) for f in fields)
    offline_raw = (raw_total == 0) & (table.pos > 0)
    vals = _carry_offline(table, fields, segment_of_rec, offline_raw, state.get("seed") if state else None)
    if state is not None:
        state["seed"] = _last_record_state(table, vals, fields)
    cur_idx, prev_idx = pair_rows(table.rec, table.pos, prev_rec, False)
    rec, pos = table.rec[cur_idx], table.pos[cur_idx]
    c = {f: vals[f][cur_idx] for f in fields}
    p = {f: vals[f][prev_idx] for f in fields}
    tot_p = sum(p[f] for f in fields)
    counted = (pos > 0) & (tot_p != 0)
    shown = counted & ~offline_raw[cur_idx]
    recs = np.unique(rec)
    slot = np.searchsorted(recs, rec)
    itv_all = itv_rec[recs]

    def values(cur, prev, itv):
        out = []
        for metric, f in (("total/s", "processed"), ("dropd/s", "dropped"), ("squeezd/s", "time_squeeze"),
                          ("rx_rps/s", "received_rps"), ("flw_lim/s", "flow_limit")):
            diff = cur[f] - prev[f]
            diff = np.where(diff < 0, diff + U32_MOD, diff)
            out.append((metric, diff / itv * 100.0))
        out.append(("blg_len", cur["backlog_len"]))
        return out

    all_c = {f: np.bincount(slot[counted], weights=c[f][counted], minlength=len(recs)) for f in fields}
    all_p = {f: np.bincount(slot[counted], weights=p[f][counted], minlength=len(recs)) for f in fields}
    idx = np.flatnonzero(shown)
    per = values({f: c[f][idx] for f in fields}, {f: p[f][idx] for f in fields}, itv_rec[rec[idx]])
    tot = values(all_c, all_p, itv_all)
    out_rec = np.concatenate([recs, rec[idx]])
    device = np.concatenate([np.zeros(len(recs), dtype=np.int64), pos[idx]])
    top = int(table.pos.max()) + 1 if len(table.pos) else 1
    return Rows(out_rec, device, _numbered(top, head="all"),
                [(m, np.concatenate([a, b])) for (m, a), (_m, b) in zip(tot, per)])


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

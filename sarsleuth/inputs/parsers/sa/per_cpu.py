"""Activities with one item per CPU: CPU time and softnet, as sysstat
computes them (CPU "all" summed over the CPUs counted, offline CPUs carried
over, tickless CPUs, intervals held unsigned as sysstat's are).
"""
from __future__ import annotations

import copy

import numpy as np

from sarsleuth.inputs.parsers.sa import activities as A
from sarsleuth.inputs.parsers.sa.compute import U32_MOD, Context, ItemTable, Rows, item_keys, numbered, pair_rows


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
    group = segment_of_rec[table.rec].astype(np.int64) * (1 << 20) + table.pos
    return {f: _filled_forward(v, offline_raw | np.isnan(v), group) for f, v in vals.items()}


def _filled_forward(values, missing, group):
    """``values`` with each ``missing`` one replaced by the last present
    value of its ``group`` before it (0 when there is none): pandas'
    ``groupby(group).ffill().fillna(0)`` in numpy, so that reading an sa
    file for an export does not import pandas."""
    order = np.argsort(group, kind="stable")           # each group's rows together, in their order
    g = group[order]
    n = len(order)
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    start_of = np.repeat(starts, np.diff(np.r_[starts, n]))
    here = np.arange(n)
    # the last present row so far; a group with none yet gets its start - 1,
    # above every index of the groups before it and below its own rows
    last = np.maximum.accumulate(np.where(missing[order], start_of - 1, here))
    picked = values[order][np.maximum(last, 0)]
    out = np.empty_like(values)
    out[order] = np.where(last >= start_of, picked, 0.0)
    return out


def _last_record_state(table: ItemTable, vals, fields) -> dict:
    """Filled values of the items of the last record (sorted by position),
    to seed the next slice of records."""
    if not len(table.rec):
        return {"pos": np.zeros(0, dtype=np.int64), **{f: np.zeros(0) for f in fields}}
    idx = np.flatnonzero(table.rec == table.rec[-1])
    idx = idx[np.argsort(table.pos[idx], kind="stable")]
    return {"pos": table.pos[idx], **{f: vals[f][idx].copy() for f in fields}}


def _online_values(table: ItemTable, fields, total_fields, segment_of_rec, state):
    """The counters of ``fields``, with a CPU that is offline in a record
    (all ``total_fields`` zero, not CPU "all") holding its last values as
    sysstat does; ``state`` (a dict, updated) carries them from one slice of
    records to the next.  Also returns the offline mask, row by row."""
    raw_total = sum(table.get(f).astype(np.float64) for f in total_fields)
    offline_raw = (raw_total == 0) & (table.pos > 0)
    vals = _carry_offline(table, fields, segment_of_rec, offline_raw, state.get("seed") if state else None)
    if state is not None:
        state["seed"] = _last_record_state(table, vals, fields)
    return vals, offline_raw


def cpu_rows(table: ItemTable, prev_rec, segment_of_rec, nr_of_rec, state=None) -> Rows:
    """%usr %nice %sys ... for CPU "all" and each online CPU, as sadf -d.

    ``state`` (a dict, updated) carries the values of offline CPUs from one
    slice of records to the next."""
    fields = CPU_FIELD_NAMES
    vals, offline_raw = _online_values(table, fields, _CPU_TOTAL, segment_of_rec, state)
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

    # CPU "all": summed over counted CPUs on SMP (sysstat 11.7.3 and later),
    # the file's own line otherwise: earlier releases printed that line over
    # the interval of the record header's uptime, which they took as its sum
    if table.writer < SUMMED_ALL_SINCE:
        per_cpu = np.zeros(len(rec), dtype=bool)
        smp = np.zeros(len(rec), dtype=bool)
        counted = per_cpu
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
    # %gnice only where the writer recorded guest_nice (sysstat 10.1.2 on)
    shown = [m for m in _CPU_METRICS if m != "%gnice" or table.layout.field("guest_nice") is not None]
    metrics = [(m, np.concatenate([all_vals[m], cpu_vals[m]])) for m in shown]
    return Rows(out_rec, device, numbered(top, head="all"), metrics)


CPU_FIELD_NAMES = A.CPU_FIELDS

#: The first sysstat that computed CPU "all" as the sum of the online CPUs.
SUMMED_ALL_SINCE = (11, 7, 3)


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
    vals, offline_raw = _online_values(table, fields, fields, segment_of_rec, state)
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
    has_backlog = table.layout.field("backlog_len") is not None

    def values(cur, prev, itv):
        out = []
        for metric, f in (("total/s", "processed"), ("dropd/s", "dropped"), ("squeezd/s", "time_squeeze"),
                          ("rx_rps/s", "received_rps"), ("flw_lim/s", "flow_limit")):
            diff = cur[f] - prev[f]
            diff = np.where(diff < 0, diff + U32_MOD, diff)
            out.append((metric, diff / itv * 100.0))
        if has_backlog:
            # (writers before sysstat 12.6.0 recorded no backlog length)
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
    return Rows(out_rec, device, numbered(top, head="all"),
                [(m, np.concatenate([a, b])) for (m, a), (_m, b) in zip(tot, per)])


# --- interrupts per CPU (sysstat 12.5.6 on) --------------------------------------------

def irq_rows_per_cpu(spec, table: ItemTable, prev_rec, itv_rec) -> list:
    """intr/s of each interrupt for CPU "all", then CPU0, CPU1... as columns
    of the same interrupt, as sadf -d prints them.  Only CPU "all" items
    carry the interrupt's name: a CPU's items are matched by their slot.  A
    CPU whose total (its first item, "sum") is 0 now or in the record before
    is offline or new: sysstat does not show it."""
    block = table.cpu_block
    cpu_of_item = table.pos // block
    every, part = copy.copy(table), copy.copy(table)
    every.subset(cpu_of_item == 0)
    part.subset(cpu_of_item > 0)
    # CPU "all" as for any activity, keeping each item's name code
    keys, label_codes, names = item_keys(spec, every)
    cur_idx, prev_idx = pair_rows(every.rec, keys, prev_rec, spec.new_item_from_zero)
    rec = every.rec[cur_idx]
    out = [Rows(rec, label_codes[cur_idx], names, spec.compute(Context(every, cur_idx, prev_idx, itv_rec[rec])))]
    if not len(part.rec):
        return out
    cur_idx, prev_idx = pair_rows(part.rec, part.pos, prev_rec, False)
    if not len(cur_idx):     # a file of one record: no interval, no rate
        return out
    rec, pos = part.rec[cur_idx], part.pos[cur_idx]
    rate = Context(part, cur_idx, prev_idx, itv_rec[rec]).rate("irq_nr")
    cpu, slot = pos // block, pos % block
    total = np.zeros((len(prev_rec), int(cpu.max()) + 1))
    first = part.pos % block == 0
    total[part.rec[first], part.pos[first] // block] = part.get("irq_nr")[first]
    before = prev_rec[rec]
    shown = np.flatnonzero((total[rec, cpu] != 0) & (before >= 0) & (total[np.maximum(before, 0), cpu] != 0))
    label_key = every.rec * block + every.pos
    where = np.minimum(np.searchsorted(label_key, rec[shown] * block + slot[shown]), max(len(label_codes) - 1, 0))
    codes = label_codes[where] if len(label_codes) else np.zeros(0, dtype=np.int64)
    order = np.argsort(cpu[shown], kind="stable")
    bounds = np.searchsorted(cpu[shown][order], np.arange(1, total.shape[1] + 1))
    for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]), start=1):
        take = order[lo:hi]
        if len(take):
            out.append(Rows(rec[shown][take], codes[take], names,
                            [(f"CPU{k - 1}", rate[shown][take])]))
    return out

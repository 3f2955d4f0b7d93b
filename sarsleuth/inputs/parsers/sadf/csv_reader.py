"""``sadf -d`` (and ``-dh``): semicolon-separated rows under ``#`` headers,
read as a stream; each value keeps the line it came from."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sarsleuth.errors import InputError, located
from sarsleuth.inputs.parsers.sar_text.values import to_float
from sarsleuth.inputs.reading import iter_text_lines
from sarsleuth.inputs.parsers.sar_text import sections
from sarsleuth.inputs.parsers.base import ParseOptions, metrics_frame
from sarsleuth.inputs.parsers.sar_text.lines import LineIndex
from sarsleuth.inputs.parsers.sadf.assembly import _Clock, _event, _finish, _uniform_times

if TYPE_CHECKING:
    from sarsleuth.model import Source

#: sadf 12.x prints the USB header in another order than its values.
USB_HEAD = ("manufact", "product", "BUS", "idvendor", "idprod", "maxpower")
USB_VALUES = ("BUS", "idvendor", "idprod", "maxpower", "manufact", "product")


def read_csv(parser, path, options: ParseOptions) -> Source:
    """Every ``sadf -d`` table of a file, as a Source of ``parser``'s kind."""
    options = options or ParseOptions()
    warnings: list[str] = []
    clock = _Clock(path, options)
    blocks: dict = {}
    events: list[dict] = []
    layout = None
    header = None
    unknown_headers: dict = {}
    bad_lines = []
    first_host = None
    for lineno, line in iter_text_lines(path, warnings):
        if not line.strip():
            continue
        if line.startswith("#"):
            header = _csv_header(path, line, lineno)
            groups = _header_groups(header) if header else []
            layout = groups or None
            for group in groups:
                if group.layout is None:
                    unknown_headers.setdefault(group.columns, lineno)
            continue
        fields = line.split(";")
        if len(fields) < 4:
            bad_lines.append(lineno)
            continue
        host, stamp_text = fields[0], fields[2]
        first_host = first_host or host
        if fields[1] == "-1" or fields[3].startswith(("LINUX-RESTART", "COM ")):
            events.append(_csv_event(path, clock, host, stamp_text, fields[3], lineno))
            continue
        if layout is None:
            if header is None:
                bad_lines.append(lineno)
            continue
        if len(layout) == 1 and not layout[0].repeated:
            pieces = [(layout[0], [fields[3:]])]
        else:
            pieces = _split_wide_row(path, lineno, fields[3:], layout)
        for group, items in pieces:
            if group.layout is None:
                continue
            block = blocks.setdefault(group.layout, {"stamps": [], "hosts": [], "rows": [], "lines": []})
            for item in items:
                block["stamps"].append(stamp_text)
                block["hosts"].append(host)
                block["rows"].append(item)
                block["lines"].append(lineno)
    metrics, short, unnamed = _csv_frames(blocks, clock)
    for columns, lineno in unknown_headers.items():
        warnings.append(located(path, f"table with unknown columns {';'.join(columns)[:80]!r} was "
                                      "skipped", line=lineno))
    if bad_lines:
        warnings.append(located(path, f"{len(bad_lines)} line(s) that are not sadf -d rows were "
                                      "skipped", line=bad_lines[0]))
    if short:
        warnings.append(located(path, f"{short} row(s) shorter than their header were skipped"))
    if unnamed:
        warnings.append(located(path, f"{unnamed} interrupt row(s) list fewer CPUs than the file "
                                      "has and no CPU table says which: only their all-CPU rate "
                                      "was kept"))
    meta = {"format": "sadf -d", "line_index": LineIndex(path)}
    return _finish(parser, path, options, metrics, events, first_host, meta, warnings, clock)


def _csv_header(path, line: str, lineno: int) -> tuple | None:
    """Column names after ``hostname;interval;timestamp``; ``sadf -dh``
    headers with repeated groups are refused."""
    names = line.lstrip("#").strip().split(";")[3:]
    if tuple(names[:6]) == USB_HEAD:
        names = list(USB_VALUES) + names[6:]
    return tuple(names) if names else None


@dataclass(frozen=True)
class _Group:
    """One activity's columns in a header: ``start`` is their offset after
    the timestamp; ``repeated`` marks ``sadf -dh`` groups ending in
    ``[...]``, printed once per item (CPU, interface...)."""

    columns: tuple
    layout: object
    start: int
    repeated: bool


def _header_groups(columns: tuple) -> list:
    """The activity groups of a header: one for ``sadf -d``; for
    ``sadf -dh`` (every activity of a sample on one line) the header is cut
    where an item column starts or a column cannot belong to the activity
    read so far."""
    cut: list = []
    current: list = []
    owners: set = set()
    start = 0
    repeated = False
    for i, raw in enumerate(columns):
        col = raw[:-5] if raw.endswith("[...]") else raw
        col_owners = sections.owners(col)
        starts_item = sections.is_device_column(col) and col != "DEVICE"
        if current and (repeated or starts_item or (col_owners and not owners & col_owners)):
            cut.append((tuple(current), start, repeated))
            current, owners, start, repeated = [], set(), i, False
        current.append(col)
        repeated = raw.endswith("[...]")
        if col_owners:
            owners = (owners & col_owners) if owners & col_owners else col_owners
    if current:
        cut.append((tuple(current), start, repeated))
    groups = [_Group(c, sections.table_layout(c), at, rep) for c, at, rep in cut]
    if len(groups) > 1 and any(g.layout is None for g in groups):
        plain = tuple(c[:-5] if c.endswith("[...]") else c for c in columns)
        return [_Group(plain, sections.table_layout(plain), 0, False)]
    return groups


def _split_wide_row(path, lineno: int, values: list, groups: list):
    """A ``sadf -dh`` line -> ``[(group, item rows)]``.

    The number of items of each repeated group is not printed; it is solved
    from the line: the groups' widths must add up to the line's length,
    every CPU item starts with ``-1`` or a CPU number above the previous
    one, every named item (interface, disk...) with a name that is not a
    number, and every group without items with a number.  A line with no
    or several solutions is refused.
    """
    if any(g.layout is not None and "CPU*" in g.layout.columns for g in groups):
        raise InputError(path, "sadf -dh line with per-CPU interrupts (CPU*[...]) cannot be split: "
                               "its items have no fixed width; export with sadf -d instead",
                         line=lineno)
    solutions: list = []
    _solve(values, groups, 0, 0, [], solutions)
    if len(solutions) != 1:
        why = "does not fit its header" if not solutions else "can be split more than one way"
        raise InputError(path, f"sadf -dh line {why}; export with sadf -d instead", line=lineno)
    out, pos = [], 0
    for group, count in zip(groups, solutions[0]):
        width = len(group.columns)
        out.append((group, [values[pos + k * width: pos + (k + 1) * width] for k in range(count)]))
        pos += count * width
    return out


def _solve(values, groups, index, pos, counts, solutions):
    if len(solutions) > 1:
        return
    if index == len(groups):
        if pos == len(values):
            solutions.append(list(counts))
        return
    group = groups[index]
    width = len(group.columns)
    if not group.repeated:
        if pos + width <= len(values) and _fits(group, values, pos, None):
            _solve(values, groups, index + 1, pos + width, counts + [1], solutions)
        return
    previous = None
    count = 0
    while True:
        _solve(values, groups, index + 1, pos + count * width, counts + [count], solutions)
        start = pos + count * width
        if start + width > len(values) or not _fits(group, values, start, previous):
            return
        previous = values[start]
        count += 1


def _fits(group: _Group, values: list, start: int, previous) -> bool:
    """Whether an item of ``group`` can start at ``values[start]``."""
    layout = group.layout
    first = values[start]
    if layout is None:
        return True
    parts = layout.device_parts
    if not parts:
        return _is_number(first)
    device = values[start + parts[0]]
    if layout.section in ("cpu", "softnet", "power-cpu"):
        if not re.fullmatch(r"-1|\d+|all", device):
            return False
        rank = -1 if device in ("-1", "all") else int(device)
        return previous is None or rank > (-1 if previous in ("-1", "all") else int(previous))
    if layout.section == "interrupts":
        return device == "sum" or previous is not None
    return not _is_number(device)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _csv_event(path, clock, host, stamp_text, text, lineno):
    ts = _csv_stamp(clock, stamp_text)
    if text.startswith("LINUX-RESTART"):
        return _event(ts, host, "sar-restart", text.replace("LINUX-RESTART", "LINUX RESTART").replace("\t", " "),
                      path, lineno)
    return _event(ts, host, "sar-comment", text[4:] if text.startswith("COM ") else text, path, lineno)


def _csv_stamp(clock: _Clock, text: str):
    parts = text.split(" ")
    if len(parts) >= 3:
        return clock.stamp(" ".join(parts[:2]), parts[2])
    return clock.stamp(text, None)


def _csv_frames(blocks: dict, clock: _Clock):
    """Vectorized build of the long table from the rows of each header."""
    frames = []
    short = unnamed = 0
    online = _online_cpus(blocks)
    for layout, block in blocks.items():
        width = layout.fixed
        keep_all = _wide_interrupts(layout)
        rows, stamps, hosts, lines = [], [], [], []
        for r, s, h, line in zip(block["rows"], block["stamps"], block["hosts"], block["lines"]):
            if len(r) < width:
                short += 1
                continue
            if keep_all:
                rows.append(r)
            else:
                rows.append(r[:width] if not layout.device_last else r[:width + 1])
            stamps.append(s)
            hosts.append(h)
            lines.append(line)
        if not rows:
            continue
        if keep_all:
            frame, undecided = _csv_interrupts(layout, rows, stamps, hosts, lines, clock, online)
            unnamed += undecided
            frames.append(frame)
        else:
            frames.append(_csv_block(layout, rows, stamps, hosts, lines, clock))
    if not frames:
        return metrics_frame(), short, unnamed
    try:
        df = pd.concat(frames, ignore_index=True)
    except (TypeError, ValueError):
        for f in frames:
            f["timestamp"] = pd.to_datetime(f["timestamp"], utc=True)
        df = pd.concat(frames, ignore_index=True)
    out = metrics_frame(columns=df)
    out["line"] = df["line"].to_numpy(dtype=np.int32)   # where each value was read (evidence)
    return out, short, unnamed


def _csv_block(layout, rows, stamps, hosts, lines, clock):
    matrix = np.array(rows, dtype=object)
    positions = [p for p, _s, _m in layout.value_columns]
    metrics = [m for _p, _s, m in layout.value_columns]
    secs = [s for _p, s, _m in layout.value_columns]
    values = to_float(matrix[:, positions], metrics, lambda flag: None)
    n, m = values.shape
    devices = _csv_devices(layout, matrix)
    unique = {s: _csv_stamp(clock, s) for s in set(stamps)}
    ts = _uniform_times(pd.Series([unique[s] for s in stamps]))
    return pd.DataFrame({
        "timestamp": pd.DatetimeIndex(ts).repeat(m),
        "host": np.repeat(np.asarray(hosts, dtype=object), m),
        "section": np.tile(np.asarray(secs, dtype=object), n),
        "device": np.repeat(devices, m),
        "metric": np.tile(np.asarray(metrics, dtype=object), n),
        "value": values.ravel(),
        "line": np.repeat(np.asarray(lines, dtype=np.int32), m),
    })


def _wide_interrupts(layout) -> bool:
    """``INTR;CPU*``: one head for the all-CPU rate and every per-CPU rate."""
    return layout.section == "interrupts" and "CPU*" in layout.columns


def _csv_devices(layout, matrix):
    parts = layout.device_parts
    if not parts:
        return np.full(len(matrix), "", dtype=object)
    if layout.device_last:
        col = matrix[:, layout.fixed]
    elif len(parts) == 1:
        col = matrix[:, parts[0]]
    else:
        col = np.array([":".join(row[p] for p in parts) for row in matrix])
    return np.array([sections.normalize_device(layout.section, d) for d in col], dtype=object)


def _csv_interrupts(layout, rows, stamps, hosts, lines, clock, online: dict):
    """``INTR;CPU*``: the all-CPU rate, then one value per online CPU.

    sadf leaves offline CPUs out without saying which, so per-CPU values are
    named from the CPU table of the same sample when there is one, else by
    position when the row holds as many CPUs as the widest row (all online).
    Rows that neither decides keep only their all-CPU rate (counted in the
    returned number).
    """
    out = {"timestamp": [], "host": [], "section": [], "device": [], "metric": [], "value": [], "line": []}
    dev_at = layout.device_parts[0] if layout.device_parts else 0
    first_value = layout.value_columns[0][0]
    widest = max(len(r) for r in rows) - first_value - 1
    undecided = 0
    for row, s, h, line in zip(rows, stamps, hosts, lines):
        ts = _csv_stamp(clock, s)
        values = row[first_value:]
        per_cpu = len(values) - 1
        cpus = online.get((h, s))
        if cpus is not None and len(cpus) == per_cpu:
            names = [sections.INTERRUPT_RATE] + [f"CPU{c}" for c in cpus]
        elif cpus is None and per_cpu == widest:
            names = [sections.INTERRUPT_RATE] + [f"CPU{k}" for k in range(per_cpu)]
        else:
            names = [sections.INTERRUPT_RATE]
            undecided += per_cpu > 0
        for name, token in zip(names, values):
            if token == "":
                continue
            out["timestamp"].append(ts)
            out["host"].append(h)
            out["section"].append("interrupts")
            out["device"].append(row[dev_at])
            out["metric"].append(name)
            out["value"].append(_float(token))
            out["line"].append(line)
    frame = pd.DataFrame(out)
    frame["timestamp"] = _uniform_times(frame["timestamp"])
    return frame, undecided


def _online_cpus(blocks: dict) -> dict:
    """(host, timestamp text) -> CPU numbers listed in the CPU table then."""
    online: dict = {}
    for layout, block in blocks.items():
        if layout.section != "cpu" or not layout.device_parts:
            continue
        at = layout.device_parts[0]
        for row, s, h in zip(block["rows"], block["stamps"], block["hosts"]):
            if len(row) > at and row[at] != "-1":
                online.setdefault((h, s), []).append(row[at])
    return online


def _float(token: str) -> float:
    try:
        return float(token.replace(",", "."))
    except ValueError:
        return float("nan")


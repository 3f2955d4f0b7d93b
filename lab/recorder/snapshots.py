"""``ps`` snapshots of the staged host.

The staged host shares its kernel with the machine that records it, so
``ps`` lists the machine's unrelated processes too.  A snapshot keeps the
header, the kernel's threads and the processes the recording started (its
descendants), as ``ps aux | grep -v`` would, and drops the rest: the
recorder itself included.  Rows are otherwise as ``ps`` printed them.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

STYLES = {
    "aux": ["ps", "aux"],
    "ef": ["ps", "-ef"],
    "top": ["ps", "aux", "--sort=-%cpu"],   # kept to the first 25 lines, as `| head -25`
}


def _parents() -> dict[int, int]:
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            out[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def staged_pids(root: int | None = None) -> set[int]:
    """The recording's processes: descendants of ``root`` (this process),
    and the kernel's threads (children of kthreadd)."""
    root = root or os.getpid()
    parents = _parents()
    keep = {2}
    for pid in parents:
        p, seen = pid, 0
        while p > 1 and seen < 64:
            if p == root and pid != root:
                keep.add(pid)
                break
            p = parents.get(p, 0)
            seen += 1
        if parents.get(pid) == 2:
            keep.add(pid)
    return keep


def ps_snapshot(where: Path, style: str = "aux") -> Path:
    out = subprocess.run(STYLES[style], capture_output=True, text=True).stdout.splitlines()
    keep = staged_pids()
    rows = [out[0]]
    for line in out[1:]:
        fields = line.split(None, 2)
        if len(fields) > 1 and fields[1].isdigit() and int(fields[1]) in keep:
            rows.append(line)
    if style == "top":
        rows = rows[:25]
    path = where / f"ps-{style}-{time.strftime('%H%M%S')}.txt"
    path.write_text("\n".join(rows) + "\n")
    return path

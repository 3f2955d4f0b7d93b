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

from lab.programs.hostps import host_pids

STYLES = {
    "aux": ["ps", "aux"],
    "ef": ["ps", "-ef"],
    "top": ["ps", "aux", "--sort=-%cpu"],   # kept to the first 25 lines, as `| head -25`
}


def staged_pids(root: int | None = None) -> set[int]:
    """The recording's processes: descendants of ``root`` (this process),
    and the kernel's threads (children of kthreadd)."""
    return host_pids(root or os.getpid())


def ps_snapshot(where: Path, style: str = "aux") -> Path:
    """``ps`` as the host shows it (``/srv/app/hostps.py``: the real ps,
    the host's rows)."""
    rows = subprocess.run(["python3", "/srv/app/hostps.py", *STYLES[style][1:]], capture_output=True,
                          text=True).stdout.splitlines()
    if style == "top":
        rows = rows[:25]
    path = where / f"ps-{style}-{time.strftime('%H%M%S')}.txt"
    path.write_text("\n".join(rows) + "\n")
    return path

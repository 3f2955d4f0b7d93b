"""The running processes a collection looks at, from ``/proc``: which are
nginx's masters (and where their files are), and the limits of the
processes the bundle layout keeps limits of (``[limits] processes``)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from sarsleuth.inputs.bundles import layout as bundle_layout
from sarsleuth.inputs.collect.host_files import Host
from sarsleuth.inputs.collect.manifest import KEPT, NOT_KEPT


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    comm: str
    argv: tuple

    @property
    def root(self) -> str:
        """Where its files are seen from (a container's root is its own)."""
        return f"/proc/{self.pid}/root"


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(1 << 16)
    except OSError:
        return None


def running() -> list:
    """Every process this user may see, in pid order."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        stat = _read(f"/proc/{name}/stat")
        cmdline = _read(f"/proc/{name}/cmdline")
        if stat is None or cmdline is None:
            continue
        # comm is in parentheses and may hold spaces and parentheses itself
        head, _, tail = stat.decode("utf-8", "replace").rpartition(")")
        comm = head.partition("(")[2]
        fields = tail.split()
        out.append(Process(int(name), int(fields[1]) if len(fields) > 1 else 0, comm,
                           tuple(a.decode("utf-8", "replace") for a in cmdline.split(b"\0") if a)))
    return sorted(out, key=lambda p: p.pid)


def keep_limits(host: Host, processes: list) -> None:
    """``/proc/PID/limits`` and ``cmdline`` of the processes the layout
    keeps limits of (at most the cap's count), at the paths it reads."""
    wanted = tuple(bundle_layout.layout()["limits"]["processes"])
    chosen = [p for p in processes if p.comm.startswith(wanted)]
    for p in chosen[:host.caps.processes]:
        parts = {part: _read(f"/proc/{p.pid}/{part}") for part in ("cmdline", "limits")}
        if None in parts.values():
            host.manifest.add("process limits", f"/proc/{p.pid}/limits ({p.comm})", NOT_KEPT,
                              why="unreadable (the process ended, or belongs to another user)")
            continue
        for part, raw in parts.items():
            dest = host.stage / f"proc/{p.pid}/{part}"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(raw)
            host.budget.used += len(raw)
            host.manifest.names[f"proc/{p.pid}/{part}"] = f"/proc/{p.pid}/{part}"
        host.manifest.add("process limits", f"/proc/{p.pid}/limits ({p.comm})", KEPT, f"proc/{p.pid}/limits",
                          len(parts["limits"]))
    if len(chosen) > host.caps.processes:
        host.manifest.notes.append(f"process limits: the first {host.caps.processes} of {len(chosen)} "
                                   f"{'/'.join(wanted)} processes kept")

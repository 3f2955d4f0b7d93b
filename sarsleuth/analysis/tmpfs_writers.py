"""Who wrote the memory a tmpfs holds, as ps snapshots show it.

Files in a tmpfs are shared memory: no process's RSS counts them, so the
largest processes in ps are not who took the memory.  What ps does show is
a command line: a process that started while the memory went and names a
path on a tmpfs (``/dev/shm``, ``/run``: tmpfs on every systemd host) is
the likely writer.  ps shows no open files, so it is said as a guess.
"""
from __future__ import annotations

import re

#: directories that are tmpfs on systemd hosts (and /dev/shm on every Linux)
TMPFS_DIRS = ("/dev/shm", "/run", "/var/run")
_PATH = re.compile(r"(?:^|[\s=])(?P<path>/[^\s'\"]+)")


def tmpfs_path(command: str) -> str:
    """The first argument of a command line that lies under a tmpfs
    directory (not the program itself); '' when none does."""
    for n, m in enumerate(_PATH.finditer(command)):
        path = m["path"].rstrip("/,;")
        if n == 0 and m.start("path") == 0:
            continue                  # the program's own path
        if any(path == d or path.startswith(d + "/") for d in TMPFS_DIRS) and not path.endswith((".pid", ".sock")):
            return path
    return ""


def writers(snap, earlier, program_name) -> list[dict]:
    """Processes of ``snap`` absent from ``earlier`` (when there is one)
    whose command line names a tmpfs path: pid, program, path, line, text."""
    before = set(earlier.frame["pid"].dropna().astype(int)) if earlier is not None else set()
    out = []
    for r in snap.frame.itertuples(index=False):
        command = str(r.command)
        name = program_name(command)
        if int(r.pid) in before or name.startswith("[") or name == "ps":
            continue
        path = tmpfs_path(command)
        if path:
            out.append({"pid": int(r.pid), "name": name, "path": path, "line": int(r.line), "text": str(r.text)})
    return out

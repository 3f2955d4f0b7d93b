"""``ps`` as the staged host shows it.

The staged host shares its kernel with the machine that records it, so the
real ``ps`` lists the machine's unrelated processes too.  This runs the
real ``ps`` with the arguments given (its output as ps prints it) and keeps
the header, the kernel's threads and the host's processes (those in the
host's UTS namespace: the one this runs in), as ``ps aux | grep -v``
would; itself, the recorder (``/srv/app/host-root.pid``) and the processes
that stand for other machines (``/srv/app/elsewhere.pids``) left out.
``/srv/app/bin/ps`` runs it, so that every ``ps`` run on the host (a
collector's script, an agent, an admin) sees the host.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT_FILE = Path("/srv/app/host-root.pid")
#: processes that stand for other machines (the clients of the background
#: traffic): never in the host's process table
ELSEWHERE_FILE = Path("/srv/app/elsewhere.pids")


def parents() -> dict:
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    out[int(d)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return out


def elsewhere() -> set:
    try:
        return {int(x) for x in ELSEWHERE_FILE.read_text().split()}
    except (OSError, ValueError):
        return set()


def host_pids(root: int, away: set = frozenset()) -> set:
    """The host's processes: descendants of ``root`` (but not of a process
    of ``away``), and the kernel's threads (children of kthreadd)."""
    par = parents()
    keep = {2}
    for pid in par:
        p, seen = pid, 0
        while p > 1 and seen < 64 and p not in away:
            if p == root and pid != root:
                keep.add(pid)
                break
            p = par.get(p, 0)
            seen += 1
        if par.get(pid) == 2:
            keep.add(pid)
    return keep


def _uts(pid) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/uts")
    except OSError:
        return ""


def same_host(recorder: int, away: set) -> set:
    """The processes of this host: in this process's UTS namespace (but
    not the recorder, nor a process of ``away`` or its descendants), and
    the kernel's threads."""
    par = parents()
    mine = _uts("self")
    keep = {pid for pid in par if pid == 2 or par[pid] == 2}
    for pid in par:
        if pid == recorder or _uts(pid) != mine:
            continue
        p, seen = pid, 0
        while p > 1 and seen < 64 and p not in away:
            p, seen = par.get(p, 0), seen + 1
        if p not in away:
            keep.add(pid)
    return keep


def main() -> int:
    # as `ps aux > file` prints it: no terminal, so no width (COLUMNS would cut the lines)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(["ps", *sys.argv[1:]], executable="/usr/bin/ps", stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    stdout, stderr = proc.communicate()
    lines = stdout.splitlines()
    try:
        recorder = int(ROOT_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):     # still the host's processes only, the recorder unknown
        recorder = -1
    # ps itself is the host's (a real `ps` lists its own row), though gone by now
    keep = (same_host(recorder, elsewhere()) | {proc.pid}) - {os.getpid()}
    head = lines[0].split() if lines else []
    col = head.index("PID") if "PID" in head else None
    out = lines[:1]
    for line in lines[1:]:
        fields = line.split(None, col + 1) if col is not None else []
        if col is not None and len(fields) > col and fields[col].isdigit() and int(fields[col]) in keep:
            out.append(line)
    sys.stdout.write("\n".join(out) + ("\n" if out else ""))
    sys.stderr.write(stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())

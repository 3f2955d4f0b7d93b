"""A monitoring agent, as node_exporter, collectd or a vendor's agent run on
a production host: every ``--every`` seconds it reads the host's counters
from /proc (CPU, memory, load, disks, network, every process's stat) and
keeps them for its server; once a minute it says in syslog how much it
shipped.  With ``--dump DIR`` (sent when an alert fires) it gathers what
its vendor's support asks for: the process table as ``ps aux`` prints it
(``DIR/ps-agent-HHMMSS.txt``) and the last of the logs, compressed.  It names
itself (``--name``) the way daemons do."""
import argparse
import ctypes
import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

PR_SET_NAME = 15


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def poll() -> int:
    """One scrape: the number of values read."""
    n = 0
    for path in ("/proc/stat", "/proc/meminfo", "/proc/loadavg", "/proc/diskstats", "/proc/net/dev",
                 "/proc/net/snmp", "/proc/vmstat", "/proc/pressure/cpu", "/proc/pressure/memory",
                 "/proc/pressure/io"):
        n += len(_read(path).split())
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            n += len(_read(f"/proc/{pid}/stat").split()) + len(_read(f"/proc/{pid}/status").split())
    return n


def dump(into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%H%M%S")
    ps = subprocess.run(["ps", "aux"], capture_output=True, text=True).stdout
    (into / f"ps-agent-{stamp}.txt").write_text(ps)
    with gzip.open(into / f"logs-agent-{stamp}.gz", "wb", compresslevel=9) as out:
        for log in sorted(Path("/var/log").rglob("*")):
            if log.is_file() and log.suffix not in (".gz", ".xz") and not log.name.startswith("sa"):
                out.write(log.read_bytes()[-(8 << 20):])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="telemetry-agent")
    ap.add_argument("--every", type=float, default=10.0)
    ap.add_argument("--dump", help="gather diagnostics into this folder, then exit")
    args = ap.parse_args()
    ctypes.CDLL(None).prctl(PR_SET_NAME, args.name.encode()[:15], 0, 0, 0)
    if args.dump:
        dump(Path(args.dump))
        return
    shipped, last_report = 0, time.time()
    while True:
        start = time.time()
        shipped += poll()
        if start - last_report >= 60:
            print(f"shipped {shipped} values in the last minute", file=sys.stderr, flush=True)
            shipped, last_report = 0, start
        time.sleep(max(0.0, args.every - (time.time() - start)))


if __name__ == "__main__":
    main()

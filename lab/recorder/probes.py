"""What the recorder itself sees of the host, once a second, to date the
first sign of the fault for the truth file (independently of sarsleuth:
from /proc, as the kernel counts it, and from the logs as they grow).

A sign is written in the scenario as ``"swap_used_mb > 50"``: one probe
name, a comparison and a number.
"""
from __future__ import annotations

import operator
import os
import re
import threading
import time
from pathlib import Path

OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
SIGN = re.compile(r"^\s*(\w+)\s*(>=|<=|>|<)\s*([-\d.]+)\s*$")


def _cpu_times() -> tuple[int, int, int]:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    vals = [int(v) for v in fields]
    idle, iowait = vals[3], vals[4]
    total = sum(vals[:8])   # guest time is already in user
    return total, idle, iowait


def _meminfo() -> dict:
    out = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        k, v = line.split(":", 1)
        out[k] = int(v.split()[0])
    return out


def _timewait() -> int:
    for line in Path("/proc/net/sockstat").read_text().splitlines():
        if line.startswith("TCP:"):
            parts = line.split()
            return int(parts[parts.index("tw") + 1])
    return 0


def _udp_counts() -> tuple[int, int]:
    """UDP datagrams received and not delivered so far, in the recording's
    network namespace (/proc/net/snmp): InErrors (a full receive buffer or
    a bad checksum) and NoPorts (nothing listened on the port)."""
    rows = [line.split() for line in Path("/proc/net/snmp").read_text().splitlines() if line.startswith("Udp:")]
    if len(rows) < 2:
        return 0, 0
    return int(rows[1][rows[0].index("InErrors")]), int(rows[1][rows[0].index("NoPorts")])


def _disk_busy_ms() -> dict:
    busy = {}
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if len(f) > 12 and not f[2].startswith(("ram", "dm-")):
            busy[f[2]] = int(f[12])
    return busy


def _net_bytes() -> int:
    """Bytes received on every interface of the recording's network
    namespace so far (/proc/net/dev)."""
    total = 0
    for line in Path("/proc/net/dev").read_text().splitlines()[2:]:
        total += int(line.split(":", 1)[1].split()[0])
    return total


def _blocked() -> int:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("procs_blocked"):
            return int(line.split()[1])
    return 0


def _swapped_in() -> int:
    """Pages read back from swap since boot (/proc/vmstat pswpin)."""
    for line in Path("/proc/vmstat").read_text().splitlines():
        if line.startswith("pswpin "):
            return int(line.split()[1])
    return 0


def _foreign_usage(staged: set[int]) -> dict[int, tuple[str, int, int, int]]:
    """Per process of the machine that is not the recording's (other work
    sharing the machine): its command, CPU ticks, bytes read and bytes
    written so far."""
    usage = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in staged:
            continue
        try:
            head, tail = (d / "stat").read_text().rsplit(")", 1)
        except OSError:
            continue
        stat = tail.split()
        if stat[1] == "2":      # kernel threads work for whoever asked
            continue
        # utime + stime: a reaped child's time (cutime) would land as one
        # lump in the second its parent collects it
        ticks, read, written = int(stat[11]) + int(stat[12]), 0, 0
        try:
            for line in (d / "io").read_text().splitlines():
                if line.startswith("read_bytes"):
                    read = int(line.split()[1])
                elif line.startswith("write_bytes"):
                    written = int(line.split()[1])
        except OSError:
            pass
        usage[int(d.name)] = (head.split("(", 1)[-1], ticks, read, written)
    return usage


def _foreign_delta(before: dict, after: dict, reads: bool = True) -> tuple[int, int, str, str]:
    """CPU ticks and I/O bytes other work used between two readings, and
    the commands that used the most of each (named in a refusal).
    ``reads`` False: only what it wrote counts (while the staged fault
    swaps, every process that runs faults its pages back in, and the
    kernel counts those reads as the process's own)."""
    ticks = io = 0
    top_cpu = top_io = (0, "")
    for pid, (comm, t, r, w) in after.items():
        t0, r0, w0 = before.get(pid, (comm, t, r, w))[1:]
        dt, db = max(0, t - t0), max(0, w - w0) + (max(0, r - r0) if reads else 0)
        ticks, io = ticks + dt, io + db
        top_cpu, top_io = max(top_cpu, (dt, comm)), max(top_io, (db, comm))
    return ticks, io, top_cpu[1], top_io[1]


class Probes(threading.Thread):
    """Samples the host once a second; ``first(sign, since)`` is the first
    sample at or after ``since`` where the sign holds."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[tuple[float, dict]] = []
        # per sample, the other command that used the most CPU and I/O
        self.foreign_top: list[tuple[str, str]] = []
        self._halt = threading.Event()

    def run(self) -> None:
        from lab.recorder.snapshots import staged_pids

        root = os.getpid()
        prev_cpu, prev_disk, prev_t = _cpu_times(), _disk_busy_ms(), time.time()
        prev_net, prev_udp = _net_bytes(), _udp_counts()
        # the recorder stages the scenario itself: its own I/O is part of it
        prev_foreign = _foreign_usage(staged_pids(root) | {root})
        prev_swapped_in = _swapped_in()
        while not self._halt.wait(1.0):
            now = time.time()
            cpu, disk, net, udp = _cpu_times(), _disk_busy_ms(), _net_bytes(), _udp_counts()
            foreign = _foreign_usage(staged_pids(root) | {root})
            swapped_in = _swapped_in()
            f_ticks, f_io, f_cpu_comm, f_io_comm = _foreign_delta(prev_foreign, foreign,
                                                                 reads=swapped_in == prev_swapped_in)
            prev_swapped_in = swapped_in
            dt_ticks = max(1, cpu[0] - prev_cpu[0])
            mem = _meminfo()
            util = [100.0 * (disk[d] - prev_disk.get(d, disk[d])) / max(1.0, (now - prev_t) * 1000)
                    for d in disk]
            self.samples.append((now, {
                "cpu_busy_pct": 100.0 * (1 - (cpu[1] - prev_cpu[1] + cpu[2] - prev_cpu[2]) / dt_ticks),
                "iowait_pct": 100.0 * (cpu[2] - prev_cpu[2]) / dt_ticks,
                "mem_available_mb": mem.get("MemAvailable", 0) / 1024,
                "swap_used_mb": (mem.get("SwapTotal", 0) - mem.get("SwapFree", 0)) / 1024,
                "timewait": _timewait(),
                "disk_util_pct": max(util, default=0.0),
                "blocked": _blocked(),
                "net_mbps": (net - prev_net) / (1 << 20) / max(0.1, now - prev_t),
                "udp_drops_per_s": (udp[0] - prev_udp[0]) / max(0.1, now - prev_t),
                "udp_noport_per_s": (udp[1] - prev_udp[1]) / max(0.1, now - prev_t),
                # other work on the recording machine, which must stay out of a case
                "foreign_cpu_pct": 100.0 * f_ticks / dt_ticks,
                "foreign_io_mbps": f_io / (1 << 20) / max(0.1, now - prev_t),
            }))
            self.foreign_top.append((f_cpu_comm, f_io_comm))
            prev_cpu, prev_disk, prev_t, prev_foreign, prev_net, prev_udp = cpu, disk, now, foreign, net, udp

    def stop(self) -> None:
        self._halt.set()
        self.join(5)

    def first(self, sign: str, since: float) -> tuple[float, float] | None:
        """(time, value) of the first sample at or after ``since`` where
        ``sign`` holds."""
        m = SIGN.match(sign)
        if not m:
            raise ValueError(f"a sign is 'probe > number', not {sign!r}")
        name, op, limit = m.group(1), OPS[m.group(2)], float(m.group(3))
        for t, values in self.samples:
            if name not in values:
                raise ValueError(f"no probe named {name!r} (known: {', '.join(values)})")
            if t >= since and op(values[name], limit):
                return t, values[name]
        return None

    def disturbed(self, baseline_until: float | None = None) -> str | None:
        """Why the recording cannot stand for the staged host alone: other
        work on the machine used a noticeable share of its CPUs or disk.

        A host with a background of its own (traffic, cron, an agent) is
        measured against it: other work may use up to half the CPU the
        host's own work used before the fault (``baseline_until``), and
        reach its busiest 5 s, before the recording stands for something
        else than the host; on a quiet host, 8 % on average and 35 % over
        5 s."""
        cpu = [v["foreign_cpu_pct"] for _, v in self.samples]
        io = [v["foreign_io_mbps"] for _, v in self.samples]
        if not cpu:
            return None
        windows = lambda xs: [sum(xs[i:i + 5]) / len(xs[i:i + 5]) for i in range(max(1, len(xs) - 4))]
        own = [max(0.0, v["cpu_busy_pct"] - v["foreign_cpu_pct"]) for t, v in self.samples
               if baseline_until is not None and t < baseline_until]
        mean_limit, peak_limit = 8.0, 35.0
        if own:
            mean_limit = max(mean_limit, 0.5 * sum(own) / len(own))
            peak_limit = max(peak_limit, max(windows(own)))

        def busiest(values: list[float], which: int) -> str:
            at = max(range(len(values)), key=values.__getitem__)
            comm = self.foreign_top[at][which] if at < len(self.foreign_top) else ""
            return f"; busiest: {comm}" if comm else ""
        if sum(cpu) / len(cpu) > mean_limit or max(windows(cpu)) > peak_limit:
            return (f"other work used the machine's CPUs (mean {sum(cpu) / len(cpu):.0f} %, "
                    f"5 s peak {max(windows(cpu)):.0f} %{busiest(cpu, 0)}; allowed {mean_limit:.0f} % "
                    f"and {peak_limit:.0f} %)")
        if sum(io) / len(io) > 5 or max(windows(io)) > 40:
            return (f"other work used the disk (mean {sum(io) / len(io):.1f} MB/s, "
                    f"5 s peak {max(windows(io)):.0f} MB/s{busiest(io, 1)})")
        return None

    def peak(self, name: str, since: float, until: float) -> float | None:
        vals = [v[name] for t, v in self.samples if since <= t <= until]
        return max(vals) if vals else None


class LogWatch(threading.Thread):
    """Notes when lines matching a pattern first appear in the logs the
    recording writes (checked twice a second)."""

    def __init__(self, paths: list[Path], pattern: str):
        super().__init__(daemon=True)
        self.paths = paths
        self.pattern = re.compile(pattern)
        self.seen: tuple[float, str] | None = None
        self._halt = threading.Event()
        self._offsets = {p: 0 for p in paths}

    def run(self) -> None:
        while not self._halt.wait(0.5) and self.seen is None:
            for p in self.paths:
                try:
                    with open(p, "rb") as fh:
                        fh.seek(self._offsets[p])
                        data = fh.read()
                except OSError:
                    continue
                cut = data.rfind(b"\n") + 1
                self._offsets[p] += cut
                for line in data[:cut].decode("utf-8", "replace").splitlines():
                    if self.pattern.search(line):
                        self.seen = (time.time(), line)
                        return

    def stop(self) -> None:
        self._halt.set()
        self.join(5)

"""Write a generated fleet: N hosts, one day each, sampled every 10 minutes.

Each host leaves what a real one would: a binary ``sa`` file written by
sarsleuth's sysstat writer (CPU, memory and run queue, as sadc 12.6 records
them) and a syslog ``messages`` file in rsyslog's traditional format.  The
files are laid out the untidy way fleets are collected: every ``sa`` file in
one folder (``sa/``, named as collected, not by host) and the logs in
per-box folders whose names are not the host names.

A share of the hosts (5 % by default) share an incident: from 03:12 UTC
their %iowait jumps from under 1 % to about 45 % for twenty minutes (shared
storage stalling) and the kernel logs hung tasks.  One other host has its
own: the OOM killer at 14:05 local time.  A third of the hosts keep their
clocks in UTC+01:00, the others in UTC, so the shared minute is 04:12 or
03:12 on their wall clocks.

Run:  python samples/make_fleet.py OUTDIR [HOSTS] [SHARED_PERCENT]
"""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sarsleuth.inputs.parsers.sa.writer import write_sa  # noqa: E402

DAY = dt.date(2026, 11, 20)
STEP_MINUTES = 10
NCPU = 2
HZ = 100
MEM_TOTAL_KB = 8_047_276
KERNEL = "5.14.0-427.13.1.el9_4.x86_64"
#: The shared incident: when the storage stalls (UTC), and for how many samples.
SHARED_START = dt.datetime.combine(DAY, dt.time(3, 12, 1), tzinfo=dt.timezone.utc)
SHARED_SAMPLES = 2
OWN_OOM_LOCAL = dt.time(14, 5, 17)


def host_name(i: int) -> str:
    return f"web-{i:04d}"


def plan(hosts: int, shared_percent: float = 5.0) -> dict:
    """Which hosts share the incident and which one has its own."""
    n_shared = max(2, round(hosts * shared_percent / 100.0))
    step = hosts / n_shared
    shared = sorted({host_name(int(k * step)) for k in range(n_shared)})
    own = next(host_name(i) for i in range(hosts - 1, -1, -1) if host_name(i) not in shared)
    return {"hosts": [host_name(i) for i in range(hosts)], "shared": shared, "own": own}


def _offset_minutes(i: int) -> int:
    return 60 if i % 3 == 1 else 0


def _sample_times(offset_minutes: int):
    zone = dt.timezone(dt.timedelta(minutes=offset_minutes))
    start = dt.datetime.combine(DAY, dt.time(0, 0, 1), tzinfo=zone)
    return [start + dt.timedelta(minutes=STEP_MINUTES * k) for k in range(24 * 60 // STEP_MINUTES)]


def _records(rng, times, shared: bool):
    seconds = STEP_MINUTES * 60
    cpu = np.zeros((NCPU, 10), dtype=np.int64)
    cpu[:, 3] = 40 * 86400 * HZ                     # idle since a boot 40 days ago
    uptime = 40 * 86400 * HZ
    stall_ends = SHARED_START + dt.timedelta(minutes=STEP_MINUTES * SHARED_SAMPLES)
    records = []
    for when in times:
        # a sample holds the interval before it: those ending after the stall began
        stalled = shared and SHARED_START < when <= stall_ends
        for c in range(NCPU):
            per_cpu = seconds * HZ
            user = int(per_cpu * rng.uniform(0.04, 0.09))
            system = int(per_cpu * rng.uniform(0.01, 0.03))
            iowait = int(per_cpu * (rng.uniform(0.40, 0.50) if stalled else rng.uniform(0.001, 0.008)))
            soft = int(per_cpu * 0.002)
            cpu[c, 0] += user
            cpu[c, 2] += system
            cpu[c, 4] += iowait
            cpu[c, 7] += soft
            cpu[c, 3] += per_cpu - user - system - iowait - soft
        uptime += seconds * HZ
        free = int(rng.normal(3_100_000, 40_000))
        cached = 2_900_000
        memory = {"frmkb": free, "bufkb": 210_000, "camkb": cached, "tlmkb": MEM_TOTAL_KB, "frskb": 2_097_148,
                  "tlskb": 2_097_148, "caskb": 0, "comkb": 3_900_000, "activekb": 2_600_000,
                  "inactkb": 1_700_000, "dirtykb": 900 if not stalled else 412_000, "anonpgkb": 1_500_000,
                  "slabkb": 260_000, "kstackkb": 9_000, "pgtblkb": 22_000, "vmusedkb": 60_000,
                  "availablekb": free + cached + 150_000}
        blocked = int(rng.integers(14, 30)) if stalled else int(rng.integers(0, 2))
        load = (rng.uniform(0.2, 0.6) + (blocked if stalled else 0)) * 100
        queue = {"nr_running": int(rng.integers(1, 3)), "procs_blocked": blocked, "nr_threads": 412,
                 "load_avg_1": int(load), "load_avg_5": int(load * 0.8), "load_avg_15": int(load * 0.6)}
        all_cpu = cpu.sum(axis=0)
        records.append({"time": when, "uptime_cs": uptime, "cpu": [list(all_cpu)] + [list(r) for r in cpu],
                        "memory": memory, "queue": queue})
    return records


def _syslog(host: str, offset_minutes: int, rng, shared: bool, own: bool) -> str:
    """rsyslog's traditional format, wall clock of the host."""
    zone = dt.timezone(dt.timedelta(minutes=offset_minutes))
    lines = []

    def line(when, tag, message):
        lines.append((when, f"{when:%b} {when.day:2d} {when:%H:%M:%S} {host} {tag}: {message}"))

    start = dt.datetime.combine(DAY, dt.time(0, 0, 0), tzinfo=zone)
    for hour in range(24):
        at = start + dt.timedelta(hours=hour, minutes=int(rng.integers(0, 59)), seconds=int(rng.integers(0, 59)))
        line(at, f"systemd[{1}]", "Started Session {} of User root.".format(1000 + hour))
        line(at + dt.timedelta(seconds=1), f"CROND[{20000 + hour * 7}]", "(root) CMD (/usr/lib64/sa/sa1 1 1)")
        line(at + dt.timedelta(seconds=3), f"sshd[{30000 + hour}]",
             f"Accepted publickey for deploy from 10.0.{hour}.7 port {40000 + hour} ssh2")
    if shared:
        first = SHARED_START.astimezone(zone) + dt.timedelta(minutes=2, seconds=int(rng.integers(0, 50)))
        for k, task in enumerate(("jbd2/dm-0-8:612", "postgres:4411", "kworker/u8:2:97")):
            line(first + dt.timedelta(seconds=30 * k), "kernel",
                 f"INFO: task {task} blocked for more than 120 seconds.")
    if own:
        when = dt.datetime.combine(DAY, OWN_OOM_LOCAL, tzinfo=zone)
        line(when, "kernel", "java invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
                             "oom_score_adj=0")
        line(when + dt.timedelta(seconds=1), "kernel",
             "Out of memory: Killed process 28812 (java) total-vm:9123456kB, anon-rss:6212332kB, file-rss:0kB, "
             "shmem-rss:0kB, UID:1001 pgtables:13212kB oom_score_adj:0")
    return "".join(text + "\n" for _when, text in sorted(lines, key=lambda p: p[0]))


def write_fleet(out, hosts: int = 200, shared_percent: float = 5.0, seed: int = 19) -> dict:
    """Write the fleet under ``out``; returns the plan (hosts, shared, own)."""
    out = Path(out)
    (out / "sa").mkdir(parents=True, exist_ok=True)
    p = plan(hosts, shared_percent)
    shared = set(p["shared"])
    for i, host in enumerate(p["hosts"]):
        rng = np.random.default_rng(seed * 100_003 + i)
        offset = _offset_minutes(i)
        write_sa(out / "sa" / f"sa20-{i:x}", host=host, kernel=KERNEL, ncpu=NCPU,
                 records=_records(rng, _sample_times(offset), host in shared), utc_offset_minutes=offset,
                 tzname="UTC" if offset == 0 else "CET")
        box = out / "logs" / f"box-{(i * 7919) % 100_000:05d}"
        box.mkdir(parents=True, exist_ok=True)
        (box / "messages").write_text(_syslog(host, offset, rng, host in shared, host == p["own"]), "utf-8")
    return p


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    made = write_fleet(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200,
                       float(sys.argv[3]) if len(sys.argv) > 3 else 5.0)
    print(f"{len(made['hosts'])} hosts; shared incident on {', '.join(made['shared'])}; own: {made['own']}")

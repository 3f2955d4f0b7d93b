"""What the recording machine offers, and the kernel objects a scenario
borrows from it (cgroups, a swap file, a loop filesystem, global sysctls),
each given back when the recording ends.

Everything the kernel does not namespace is changed here and restored in
``Borrowed.close``; what lives in the recording's own network and mount
namespaces (sysctls of the network stack, nftables, qdiscs on lo, mounts)
goes away with them.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROGRAMS = {
    "sadc": "/usr/lib/sysstat/sadc", "rsyslogd": "rsyslogd", "nginx": "nginx", "wrk": "wrk", "ab": "ab",
    "stress-ng": "stress-ng", "fio": "fio", "unshare": "unshare", "tc": "tc", "nft": "nft",
    "losetup": "losetup", "mkfs.ext4": "mkfs.ext4", "logger": "logger", "dmesg": "dmesg", "ps": "ps",
    "sos": "sos", "gcc": "gcc",
    # ImageMagick's own (a machine may have another `convert` first in its PATH)
    "convert": "/usr/bin/convert",
}


def which(name: str) -> str | None:
    path = PROGRAMS.get(name, name)
    if os.path.isabs(path):
        return path if os.access(path, os.X_OK) else None
    return shutil.which(path)


def _run(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def cgroup_v2() -> bool:
    return (CGROUP_ROOT / "cgroup.controllers").exists()


def _probe_in_netns(script: str) -> bool:
    """Try a network-stack feature in a throwaway network namespace."""
    if not which("unshare"):
        return False
    return _run(["unshare", "--net", "sh", "-c", script], timeout=20).returncode == 0


def missing(need: str) -> str | None:
    """Why the machine cannot offer ``need``, or None when it can."""
    if os.geteuid() != 0:
        return "recording needs root (namespaces, cgroups, swap, loop devices)"
    if need == "swap":
        return None if Path("/proc/swaps").exists() and which("mkswap") else "no swap support (/proc/swaps, mkswap)"
    if need == "memory-cgroup":
        ok = ("memory" in (CGROUP_ROOT / "cgroup.controllers").read_text().split()) if cgroup_v2() \
            else (CGROUP_ROOT / "memory" / "memory.limit_in_bytes").exists()
        return None if ok else "no memory cgroup controller"
    if need == "pids-cgroup":
        ok = ("pids" in (CGROUP_ROOT / "cgroup.controllers").read_text().split()) if cgroup_v2() \
            else (CGROUP_ROOT / "pids" / "cgroup.procs").exists()
        return None if ok else "no pids cgroup controller"
    if need == "blkio-throttle":
        ok = ("io" in (CGROUP_ROOT / "cgroup.controllers").read_text().split()) if cgroup_v2() \
            else (CGROUP_ROOT / "blkio" / "blkio.throttle.write_bps_device").exists()
        return None if ok else "no block I/O throttling (blkio.throttle / io.max)"
    if need == "hung-task-detector":
        return None if Path("/proc/sys/kernel/hung_task_timeout_secs").exists() \
            else "kernel built without the hung task detector (CONFIG_DETECT_HUNG_TASK)"
    if need == "loop":
        return None if Path("/dev/loop-control").exists() and which("losetup") else "no loop devices"
    if need == "ext4":
        return None if "ext4" in Path("/proc/filesystems").read_text() and which("mkfs.ext4") else "no ext4"
    if need == "nftables":
        if not which("nft"):
            return "nft (Debian package nftables) is not installed"
        return None if _probe_in_netns("nft add table inet probe") else "the kernel has no nftables"
    if need == "conntrack":
        if not which("nft") or not which("nsenter"):
            return "nft (nftables) and nsenter (util-linux) are needed to track connections and size the table"
        if not Path("/proc/sys/net/netfilter/nf_conntrack_max").exists():
            return "the kernel has no connection tracking (nf_conntrack)"
        probe = ("nft add table inet probe && nft add chain inet probe c '{ type filter hook input priority 0; }' "
                 "&& nft add rule inet probe c ct state established accept")
        return None if _probe_in_netns(probe) else "nftables cannot match conntrack state (nft_ct)"
    if need == "netem":
        return None if _probe_in_netns("tc qdisc add dev lo root netem delay 1ms") \
            else "the kernel has no netem qdisc (sch_netem): latency cannot be added on loopback"
    if need == "tbf":
        return None if _probe_in_netns("tc qdisc add dev lo root tbf rate 1mbit burst 32kbit latency 50ms") \
            else "the kernel has no tbf qdisc"
    if need == "sos":
        return None if which("sos") else "sos (Debian package sosreport) is not installed"
    if need == "cpu-cgroup":
        ok = ("cpu" in (CGROUP_ROOT / "cgroup.controllers").read_text().split()) if cgroup_v2() \
            else (CGROUP_ROOT / "cpu" / "cpu.cfs_quota_us").exists()
        return None if ok else "no cpu cgroup controller (CPU quotas)"
    if need == "postgres":
        return None if list(Path("/usr/lib").glob("postgresql/*/bin/postgres")) else \
            "PostgreSQL (Debian package postgresql) is not installed"
    if need == "psycopg2":
        return None if Path("/usr/lib/python3/dist-packages/psycopg2").is_dir() else \
            "python3-psycopg2 is not installed (the host's services reach PostgreSQL with it)"
    if need == "device-mapper":
        return None if "device-mapper" in Path("/proc/misc").read_text() and which("dmsetup") else \
            "the kernel has no device-mapper driver (dm-mod): a disk cannot fail through an error target"
    if need in ("cron", "logrotate", "supervisord"):
        return None if which(need) else f"{need} (Debian package {'supervisor' if need == 'supervisord' else need}) " \
            "is not installed"
    if which(need):
        return None
    return f"{need} is not installed"


def version_of(name: str) -> str:
    """One line naming the program's version, as it prints it."""
    argv = {"sadc": [which("sadc") or "sadc", "-V"], "nginx": ["nginx", "-v"], "wrk": ["wrk", "-v"],
            "ab": ["ab", "-V"], "stress-ng": ["stress-ng", "--version"], "fio": ["fio", "--version"],
            "rsyslogd": ["rsyslogd", "-v"], "sos": ["dpkg-query", "-W", "-f", "${Version}", "sosreport"],
            "cron": ["dpkg-query", "-W", "-f", "${Version}", "cron"],
            "supervisord": ["supervisord", "--version"], "node": ["node", "--version"],
            "perl": ["perl", "-e", "print $^V"], "sqlite3": ["sqlite3", "--version"], "convert": ["/usr/bin/convert", "-version"],
            "supervisorctl": ["supervisord", "--version"]}.get(name, [name, "--version"])
    try:
        out = _run(argv, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return f"{name} (version unknown)"
    text = (out.stdout + out.stderr).strip()
    m = re.search(r"(\d+\.\d+(?:\.\d+)*)", text)
    label = {"sadc": "sysstat", "convert": "ImageMagick", "supervisorctl": "supervisord"}.get(name, name)
    return f"{label} {m.group(1)}" if m else f"{label} (version unknown)"


def parse_size(text) -> int:
    """``512M``, ``2G``, ``65536`` to bytes (1024-based, as the kernel's
    cgroup files and dd take them)."""
    if isinstance(text, int):
        return text
    text = str(text).strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text and text[-1] in mult:
        return int(float(text[:-1]) * mult[text[-1]])
    return int(text)


class Cgroup:
    """A cgroup of the recording (v1 hierarchies or the v2 tree)."""

    def __init__(self, name: str, limits: dict, devices: dict):
        self.name = f"lab-{name}"
        self.limits = limits
        self.dirs: list[Path] = []
        if cgroup_v2():
            d = CGROUP_ROOT / self.name
            d.mkdir(exist_ok=True)
            self.dirs = [d]
            ctl = CGROUP_ROOT / "cgroup.subtree_control"
            for c in ("memory", "pids", "io", "cpu"):
                try:
                    ctl.write_text(f"+{c}")
                except OSError:
                    pass
            if "memory" in limits:
                (d / "memory.max").write_text(str(parse_size(limits["memory"])))
                swap = parse_size(limits.get("memsw", limits["memory"])) - parse_size(limits["memory"])
                (d / "memory.swap.max").write_text(str(max(0, swap)))
            if "pids" in limits:
                (d / "pids.max").write_text(str(limits["pids"]))
            if "write_bps" in limits:
                (d / "io.max").write_text(f"{devices[limits['write_bps']['device']]} wbps={limits['write_bps']['bps']}")
            if "cpu_quota" in limits:
                (d / "cpu.max").write_text(f"{int(limits['cpu_quota'] * 100000)} 100000")
            return
        if "memory" in limits:
            d = self._v1("memory")
            (d / "memory.limit_in_bytes").write_text(str(parse_size(limits["memory"])))
            memsw = d / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(str(parse_size(limits.get("memsw", limits["memory"]))))
        if "pids" in limits:
            (self._v1("pids") / "pids.max").write_text(str(limits["pids"]))
        if "write_bps" in limits:
            dev = devices[limits["write_bps"]["device"]]
            (self._v1("blkio") / "blkio.throttle.write_bps_device").write_text(f"{dev} {limits['write_bps']['bps']}")
        if "cpu_quota" in limits:
            d = self._v1("cpu")
            (d / "cpu.cfs_period_us").write_text("100000")
            (d / "cpu.cfs_quota_us").write_text(str(int(limits["cpu_quota"] * 100000)))

    def _v1(self, controller: str) -> Path:
        d = CGROUP_ROOT / controller / self.name
        d.mkdir(exist_ok=True)
        self.dirs.append(d)
        return d

    def enter_command(self) -> str:
        """Shell words that move the current shell into this cgroup."""
        return " && ".join(f"echo $$ > {d}/cgroup.procs" for d in self.dirs) or "true"

    def close(self) -> None:
        # lift the throttle first: I/O held back by it keeps its writers in
        # D state, where no signal reaches them
        for d in self.dirs:
            for name in ("blkio.throttle.write_bps_device", "io.max"):
                f = d / name
                if f.exists() and "write_bps" in self.limits:
                    dev = f.read_text().split()
                    if dev:
                        try:
                            f.write_text(f"{dev[0]} 0" if name.startswith("blkio") else f"{dev[0]} wbps=max")
                        except OSError:
                            pass
        for d in self.dirs:
            for _ in range(100):
                try:
                    pids = [p for p in (d / "cgroup.procs").read_text().split() if p]
                except OSError:
                    break
                for pid in pids:
                    try:
                        os.kill(int(pid), 9)
                    except ProcessLookupError:
                        pass
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


class Borrowed:
    """Global kernel state the recording takes and gives back."""

    def __init__(self, work: Path):
        self.work = work
        self.sysctls: dict[str, str] = {}
        self.swapfile: Path | None = None
        self.loops: list[tuple[str, Path]] = []   # (loop device, backing file)
        self.cgroups: list[Cgroup] = []

    def sysctl(self, name: str, value) -> None:
        path = Path("/proc/sys") / name.replace(".", "/")
        self.sysctls.setdefault(name, read_sysctl(name))
        if os.access(path, os.W_OK):
            path.write_text(str(value))
        else:
            machine_sysctl(name, value)

    def swap(self, size: str) -> None:
        self.swapfile = self.work / "swapfile"
        subprocess.run(["fallocate", "-l", str(parse_size(size)), str(self.swapfile)], check=True)
        self.swapfile.chmod(0o600)
        subprocess.run(["mkswap", str(self.swapfile)], check=True, capture_output=True)
        subprocess.run(["swapon", str(self.swapfile)], check=True)

    def loop_filesystem(self, size: str, fstype: str = "ext4", inodes: int | None = None) -> str:
        """A filesystem of ``size`` on a loop device; returns the device."""
        backing = self.work / f"fs{len(self.loops)}.img"
        subprocess.run(["truncate", "-s", str(parse_size(size)), str(backing)], check=True)
        dev = _run(["losetup", "--find", "--show", str(backing)], check=True).stdout.strip()
        self.loops.append((dev, backing))
        mkfs = ["mkfs." + fstype, "-q"] + (["-N", str(inodes)] if inodes else []) + [dev]
        subprocess.run(mkfs, check=True, capture_output=True)
        return dev

    def cgroup(self, name: str, limits: dict, devices: dict) -> Cgroup:
        cg = Cgroup(name, limits, devices)
        self.cgroups.append(cg)
        return cg

    def close(self) -> None:
        for cg in self.cgroups:
            cg.close()
        for dev, backing in self.loops:
            _run(["losetup", "-d", dev])
            backing.unlink(missing_ok=True)
        if self.swapfile is not None:
            _run(["swapoff", str(self.swapfile)])
            self.swapfile.unlink(missing_ok=True)
        for name, value in self.sysctls.items():
            try:
                path = Path("/proc/sys") / name.replace(".", "/")
                if os.access(path, os.W_OK):
                    path.write_text(value)
                else:
                    machine_sysctl(name, value)
            except (OSError, subprocess.CalledProcessError):
                pass


def _io_ticks() -> dict:
    """{device: milliseconds spent doing I/O} of the machine's disks (/proc/diskstats)."""
    out = {}
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if len(f) >= 13 and not f[2].startswith(("loop", "ram", "zram")):
            out[f[2]] = int(f[12])
    return out


def settle_writeback(timeout: float = 90.0, busy_share: float = 0.05) -> float:
    """Write back what earlier work left dirty, and wait until every disk
    has been idle for a second (busy at most ``busy_share`` of it), so that
    a recording holds no writeback nobody staged; the seconds it took."""
    began = time.monotonic()
    os.sync()
    before = _io_ticks()
    while time.monotonic() - began < timeout:
        time.sleep(1.0)
        now = _io_ticks()
        if all(now[d] - before.get(d, now[d]) <= 1000 * busy_share for d in now):
            break
        before = now
    return time.monotonic() - began


def read_sysctl(name: str) -> str:
    """A sysctl's value: the recording's own network namespace's, else (a
    setting the kernel keeps for the whole machine) the machine's."""
    path = Path("/proc/sys") / name.replace(".", "/")
    if os.access(path, os.W_OK):
        return path.read_text().strip()
    return _run(["nsenter", f"--net={_machine_netns()}", "cat", str(path)], check=True).stdout.strip()


def machine_sysctl(name: str, value) -> None:
    """A network sysctl the kernel keeps for the whole machine and shows
    read-only in a network namespace (``net.netfilter.nf_conntrack_max``:
    the table's limit every namespace counts its own entries against),
    written in the machine's namespace; ``Borrowed.close`` gives it back."""
    path = Path("/proc/sys") / name.replace(".", "/")
    _run(["nsenter", f"--net={_machine_netns()}", "sh", "-c", 'echo "$1" > "$2"', "sysctl", str(value), str(path)],
         check=True)


#: The environment variable naming the machine's network namespace (the
#: recorder's own, which stages each recording in a namespace of its own).
MACHINE_NETNS = "LAB_MACHINE_NETNS"


def _machine_netns() -> str:
    where = os.environ.get(MACHINE_NETNS)
    if not where:
        raise RuntimeError(f"{MACHINE_NETNS} is not set: a machine-wide sysctl is written only by a recording")
    return where


def device_numbers(dev: str) -> str:
    """``MAJ:MIN`` of a block device node."""
    st = os.stat(dev)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"

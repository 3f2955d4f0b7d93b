"""What a bundle tells about its host: the machine and its limits.

A support bundle (sosreport, a ``/var/log`` tarball, an extracted sosreport
folder) carries, beside its logs, the host's configuration: its name,
kernel, CPUs, memory, time zone, the kernel's sysctl limits, nginx's
configuration (``nginx -T``) and the limits of nginx's processes.  Each
value keeps where it was read (the bundle member and line, and the line
itself, verbatim), so a finding can cite it as evidence.

Public shape (``HostFacts.to_dict()``, the JSON ``hosts`` entries)::

    {"host": "web07",                      # the name the host's sources use
     "bundle": "sosreport-web07-....tar.xz",
     "hostname": "web07.example.com", "kernel": "6.1.0-18-amd64",
     "ncpu": 8, "mem_total_kb": 16303300,
     "timezone": "Europe/Paris", "timezone_from": "etc/localtime -> ...",
     "limits": {"net.ipv4.tcp_max_tw_buckets": {"value": "180000",
                "path": "...!sos_commands/kernel/sysctl_-a", "line": 612,
                "text": "net.ipv4.tcp_max_tw_buckets = 180000"}, ...},
     "nginx": {"proxy_buffers": [{"value": "1024 256k", "path": ..., "line": 40,
               "text": "proxy_buffers 1024 256k;", "conf": "/etc/nginx/nginx.conf:31"}], ...},
     "processes": {"nginx": [{"pid": 812, "limits": {"Max open files": {...}}}]},
     "units": {"nginx.service": {"LimitNOFILE": {...}}},   # systemd settings
     "mounts": {"/dev/sdb1": "/srv/data"},         # where each device is mounted
     "meminfo": {"MemTotal": 16303300, ...},       # kB, as /proc/meminfo says
     "disk_names": {"dev8-0": "sda", "dev253-0": "rhel-root", ...},
     "disk_names_from": {"dev8-0": "...!proc/partitions:3", ...}}

Disk names are keyed by the label sar gives a disk it cannot name
(``devMAJOR-MINOR``) and are the names ``sar -d -p`` prints: the kernel's
(``/proc/partitions``, ``/proc/diskstats``, ``lsblk``) and, for a
device-mapper device, its mapper name (``dmsetup info -c``, ``lsblk``)
rather than ``dm-N``.

Limit names are the sysctl names (``net.ipv4.tcp_max_tw_buckets``); nginx
directives keep nginx's names; process limits keep the kernel's row names
of ``/proc/PID/limits``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sarsleuth.inputs.bundles.layout import layout


@dataclass(frozen=True)
class Limit:
    """One configured value and where it was read."""

    name: str
    value: str                 # as written (a sysctl value, a directive's arguments)
    path: str                  # the file (or archive member) it was read from
    line: int | None = None    # 1-based line in ``path``
    text: str = ""             # that line, verbatim (stripped)
    conf: str | None = None    # for nginx -T: the configuration file and line it came from

    def where(self) -> str:
        """``path:line`` (or the path alone)."""
        return f"{self.path}:{self.line}" if self.line else self.path

    def number(self) -> float | None:
        """The value as a number when it is one (the first field of a
        multi-value sysctl such as tcp_mem), else None."""
        first = self.value.split()[0] if self.value.split() else ""
        try:
            return float(first)
        except ValueError:
            return None

    def to_dict(self) -> dict:
        out = {"value": self.value, "path": self.path, "line": self.line, "text": self.text}
        if self.conf:
            out["conf"] = self.conf
        return out


#: Disks named in the one-line summary (JSON lists every one).
SUMMARY_DISKS = 6


def _device_order(dev: str):
    major, _, minor = dev[3:].partition("-")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else (1 << 30, 0)


def disk_summary(names: dict) -> str:
    """``disks dev253-0 (rhel-root), ...`` for a host's ``{"devM-N": name}``:
    the devices sar itself labels by their numbers (its device table cannot
    name them), the ones whose name is worth a place in a one-line summary;
    "" when there are none."""
    # here, not at the top: sniff loads this module
    from sarsleuth.inputs.parsers.sa.compute import disk_name
    worth = []
    for dev, name in sorted(names.items(), key=lambda kv: _device_order(kv[0])):
        major, minor = _device_order(dev)
        if major < (1 << 30) and disk_name(major, minor) == dev:
            worth.append(f"{dev} ({name})")
    if not worth:
        return ""
    more = f" and {len(worth) - SUMMARY_DISKS} more" if len(worth) > SUMMARY_DISKS else ""
    return f"disks {', '.join(worth[:SUMMARY_DISKS])}{more}"


@dataclass
class HostFacts:
    """The facts one bundle gives about its host (see the module doc)."""

    bundle: str                                   # the bundle as the user named it
    host: str | None = None                       # the host name the case uses
    hostname: str | None = None
    kernel: str | None = None
    ncpu: int | None = None
    mem_total_kb: int | None = None
    timezone: str | None = None
    timezone_from: str | None = None
    collected: str | None = None                  # when the bundle was made (ISO 8601), if it says
    limits: dict = field(default_factory=dict)    # sysctl name -> Limit
    nginx: dict = field(default_factory=dict)     # directive -> [Limit, ...] in file order
    processes: dict = field(default_factory=dict) # command -> [{"pid": int, "limits": {row: Limit}}]
    units: dict = field(default_factory=dict)     # systemd unit -> {setting: Limit} (LimitNOFILE, TasksMax...)
    mounts: dict = field(default_factory=dict)    # device -> Limit(device, its mount point, where read)
    #: listening TCP sockets at collection time: port -> [Limit(local address, "program (pid N)", where read)]
    listeners: dict = field(default_factory=dict)
    meminfo: dict = field(default_factory=dict)   # field -> kB (or count), as /proc/meminfo
    booted: float | None = None                   # when the host booted (/proc/stat btime, s since the epoch)
    booted_from: str | None = None                # where that was read (path:line)
    aliases: set = field(default_factory=set)     # other names the host's own files use
    #: /proc/pressure when the bundle was made: {resource: {"some"|"full": ({avg10, avg60, avg300,
    #: total_us}, Limit of the line)}}
    pressure: dict = field(default_factory=dict)
    #: the kernel's network counters when the bundle was made, as nstat names
    #: them: {"TcpExtTCPTimeWaitOverflow": Limit(value since boot, where read)}
    counters: dict = field(default_factory=dict)
    #: what a file said that is not used (a zone no database knows, a second
    #: zone or host name disagreeing with the first), as notes for every output
    dropped: list = field(default_factory=list)
    hostname_from: str | None = field(default=None, repr=False)
    #: what each file said about a block device: {"devM-N": {how: (name, "path:line")}},
    #: ``how`` one of "kernel" (partitions, diskstats), "lsblk", "mapper" (dmsetup)
    disk_sightings: dict = field(default_factory=dict, repr=False)
    # /proc/PID files seen before it is known which process they describe
    _pending_limits: dict = field(default_factory=dict, repr=False)
    _pending_comm: dict = field(default_factory=dict, repr=False)

    def names(self) -> set:
        """Every name this host goes by (for matching a finding's host)."""
        out = set(self.aliases)
        for n in (self.host, self.hostname):
            if n:
                out.add(n)
                out.add(n.split(".")[0])
        return out

    def limit(self, name: str) -> Limit | None:
        """A sysctl limit, an nginx directive (its last value, the one in
        force at the main level), a kernel counter as the bundle recorded
        it (``TcpExtTCPTimeWaitOverflow``) or None."""
        if name in self.limits:
            return self.limits[name]
        values = self.nginx.get(name)
        return values[-1] if values else self.counters.get(name)

    def process_limit(self, program: str, row: str) -> Limit | None:
        """The limit ``program`` ran with for a row of /proc/PID/limits
        (``Max open files``): its own /proc/PID/limits (the soft value),
        else for nginx ``worker_rlimit_nofile`` (what its workers set),
        else its systemd unit's setting (``LimitNOFILE``); None when the
        bundle does not say."""
        where = layout()["limits"].get("rows", {}).get(row, {})
        for proc in self.processes.get(program, []):
            found = proc["limits"].get(row)
            if found is not None:
                return found
        if where.get("nginx") and program in layout()["limits"]["processes"]:
            found = self.limit(where["nginx"])
            if found is not None:
                return found
        for unit in (f"{program}.service", program):
            settings = self.units.get(unit, {})
            for key in where.get("unit", []):
                if key in settings:
                    return settings[key]
        return None

    def disk_names(self) -> dict:
        """``{"devM-N": (name, where)}``: the name ``sar -d -p`` prints for
        each block device the bundle lists, and the file and line it was
        read from.  A device-mapper device is named by device-mapper
        (dmsetup, or lsblk where its name is not the kernel's ``dm-N``)."""
        out = {}
        for dev, seen in self.disk_sightings.items():
            kernel, lsblk, mapper = seen.get("kernel"), seen.get("lsblk"), seen.get("mapper")
            if mapper is not None:
                out[dev] = mapper
            elif lsblk is not None and (kernel is None or lsblk[0] != kernel[0]):
                out[dev] = lsblk          # lsblk names a mapped device by its mapper name
            elif kernel is not None:
                out[dev] = kernel
            else:
                out[dev] = lsblk
        return dict(sorted(out.items(), key=lambda kv: _device_order(kv[0])))

    def summary(self, also=()) -> str:
        """One short line: name, kernel, CPUs, memory, zone; ``also``: other
        bundles of the same host, named beside this one."""
        parts = [self.host or self.hostname or "unknown host"]
        if self.hostname and self.host and self.hostname != self.host:
            parts.append(f"hostname {self.hostname}")
        if self.kernel:
            parts.append(f"kernel {self.kernel}")
        if self.ncpu:
            parts.append(f"{self.ncpu} CPUs")
        if self.mem_total_kb:
            parts.append(f"{self.mem_total_kb / 1048576:.1f} GiB RAM")
        if self.timezone:
            parts.append(f"zone {self.timezone}")
        n_limits = len(self.limits) + sum(len(v) for v in self.nginx.values())
        if n_limits:
            parts.append(f"{n_limits} limits read")
        disks = disk_summary({dev: name for dev, (name, _where) in self.disk_names().items()})
        if disks:
            parts.append(disks)
        return ", ".join(parts) + f" (from {'; '.join([self.bundle, *also])})"

    def to_dict(self) -> dict:
        names = self.disk_names()
        return {
            "host": self.host, "bundle": self.bundle, "hostname": self.hostname, "kernel": self.kernel,
            "ncpu": self.ncpu, "mem_total_kb": self.mem_total_kb, "timezone": self.timezone,
            "timezone_from": self.timezone_from, "collected": self.collected,
            "limits": {k: v.to_dict() for k, v in sorted(self.limits.items())},
            "nginx": {k: [v.to_dict() for v in vs] for k, vs in self.nginx.items()},
            "processes": {cmd: [{"pid": p["pid"], "limits": {k: v.to_dict() for k, v in p["limits"].items()}}
                                for p in procs] for cmd, procs in self.processes.items()},
            "units": {unit: {k: v.to_dict() for k, v in sorted(rows.items())} for unit, rows in sorted(self.units.items())},
            "mounts": {dev: mount.value for dev, mount in sorted(self.mounts.items())},
            "listeners": {port: [h.to_dict() for h in held] for port, held in sorted(self.listeners.items(),
                                                                                     key=lambda kv: int(kv[0]))},
            "meminfo": dict(self.meminfo),
            "pressure": {res: {kind: {**values, "path": line.path, "line": line.line}
                               for kind, (values, line) in kinds.items()}
                         for res, kinds in sorted(self.pressure.items())},
            "counters": {k: v.to_dict() for k, v in sorted(self.counters.items())},
            "disk_names": {dev: name for dev, (name, _where) in names.items()},
            "disk_names_from": {dev: where for dev, (_name, where) in names.items()},
        }

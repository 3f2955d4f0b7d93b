"""Host facts from a bundle's configuration files and command outputs.

Each reader takes the file's text (already decoded), the name to cite it
by, the layout match and the :class:`HostFacts` to fill; a fact already
known (from a more direct file, listed earlier in the layout) is kept.
Formats are those the programs write: ``sysctl -a`` (``name = value``),
``/proc/meminfo`` (``Name:  value kB``), ``/proc/PID/limits`` (a table with
aligned columns), ``nginx -T`` (``# configuration file PATH:`` followed by
that file's text), ``timedatectl`` (``Time zone: Zone (ABBR, +hhmm)``),
``/proc/partitions`` (``major minor  #blocks  name``), ``/proc/diskstats``
(``major minor name`` then the counters), ``lsblk`` (``NAME MAJ:MIN ...``,
the name after the tree's ``├─``/``|-`` drawing), ``dmsetup info -c``
(``Name Maj Min Stat ...``).
"""
from __future__ import annotations

import re

from sarsleuth.inputs.bundles.facts import HostFacts, Limit
from sarsleuth.inputs.bundles.layout import layout


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def hostname(text, path, m, facts: HostFacts) -> None:
    name = _first_line(text)
    if name and " " not in name:
        _host_name(facts, name, f"{path}:1")


def _host_name(facts: HostFacts, name: str, where: str) -> None:
    """The first name a bundle gives its host; another is said, not used."""
    if not facts.hostname:
        facts.hostname, facts.hostname_from = name, where
    elif name.split(".")[0] != facts.hostname.split(".")[0]:     # web07 is web07.example.com
        facts.dropped.append(f"{where} names the host {name} but {facts.hostname_from} names it "
                             f"{facts.hostname}: {facts.hostname} is used")


def uname(text, path, m, facts: HostFacts) -> None:
    line = _first_line(text)
    if facts.kernel or not line:
        return
    if line.startswith("Linux version "):              # /proc/version
        facts.kernel = line.split()[2]
        return
    fields = line.split()
    if len(fields) >= 3 and fields[0] == "Linux":       # uname -a: Linux NODE RELEASE ...
        facts.kernel = fields[2]
        _host_name(facts, fields[1], f"{path}:1")


def cpuinfo(text, path, m, facts: HostFacts) -> None:
    n = sum(1 for line in text.splitlines() if re.match(r"processor\s*:", line))
    if n and not facts.ncpu:
        facts.ncpu = n


def lscpu(text, path, m, facts: HostFacts) -> None:
    found = re.search(r"^CPU\(s\):\s*(\d+)\s*$", text, re.M)
    if found and not facts.ncpu:
        facts.ncpu = int(found.group(1))


def meminfo(text, path, m, facts: HostFacts) -> None:
    for line in text.splitlines():
        found = re.match(r"(\w[\w()]*):\s+(\d+)", line)
        if found:
            facts.meminfo.setdefault(found.group(1), int(found.group(2)))
    if "MemTotal" in facts.meminfo and not facts.mem_total_kb:
        facts.mem_total_kb = facts.meminfo["MemTotal"]


def proc_stat(text, path, m, facts: HostFacts) -> None:
    """proc/stat's ``btime``: when the host booted, in seconds since the
    epoch, the anchor of a dmesg's uptime stamps when nothing else is."""
    for number, line in enumerate(text.splitlines(), 1):
        found = re.match(r"btime\s+(\d+)\s*$", line)
        if found:
            facts.booted, facts.booted_from = float(found.group(1)), f"{path}:{number}"
            return


def localtime(text, path, m, facts: HostFacts, link: str | None = None) -> None:
    """etc/localtime: a link into zoneinfo names the zone; a copied TZif
    file does not (its POSIX rule is not a zone name)."""
    if not link or "zoneinfo/" not in link:
        return
    zone = link.split("zoneinfo/", 1)[1].strip("/")
    if zone.startswith(("posix/", "right/")):
        zone = zone.split("/", 1)[1]
    _zone(facts, zone, f"{path} -> {link}")


def timedatectl(text, path, m, facts: HostFacts) -> None:
    for n, line in enumerate(text.splitlines(), 1):
        found = re.match(r"\s*Time zone:\s*(\S+)", line)
        if found:
            _zone(facts, found.group(1), f"{path}:{n}")


def timezone_file(text, path, m, facts: HostFacts) -> None:
    zone = _first_line(text)
    if zone:
        _zone(facts, zone, f"{path}:1")


def _zone(facts: HostFacts, zone: str, where: str) -> None:
    """The bundle's zone is the first one named that the zone database
    knows (the layout lists the most direct file first); an unknown zone,
    or one disagreeing with the zone taken, is said, not used."""
    if not _valid_zone(zone):
        facts.dropped.append(f"{where} names the time zone {zone!r}, which the zone database does not know: "
                             "not used")
    elif not facts.timezone:
        facts.timezone, facts.timezone_from = zone, where
    elif zone != facts.timezone:
        facts.dropped.append(f"{where} names the time zone {zone} but {facts.timezone_from} names "
                             f"{facts.timezone}: {facts.timezone} is used")


def _valid_zone(zone: str) -> bool:
    try:
        from zoneinfo import ZoneInfo  # here, not at the top: sniff loads this module
        ZoneInfo(zone)
        return True
    except (ValueError, KeyError, OSError, Exception):
        return False


def sysctl(text, path, m, facts: HostFacts) -> None:
    wanted = set(layout()["limits"]["sysctl"])
    for n, line in enumerate(text.splitlines(), 1):
        name, sep, value = line.partition("=")
        name = name.strip()
        if sep and name in wanted and name not in facts.limits:
            facts.limits[name] = Limit(name, " ".join(value.split()), path, n, line.strip())


def proc_sys(text, path, m, facts: HostFacts) -> None:
    name = m.group("sysctl").replace("/", ".")
    if name in set(layout()["limits"]["sysctl"]) and name not in facts.limits:
        value = " ".join(text.split())
        facts.limits[name] = Limit(name, value, path, 1, value)


_CONF_HEAD = re.compile(r"^# configuration file (?P<file>.+?):\s*$")
_DIRECTIVE = re.compile(r"^\s*(?P<name>[a-z_][a-z0-9_]*)\s+(?P<args>[^;{]*?)\s*[;{]")


def nginx_T(text, path, m, facts: HostFacts) -> None:
    """Directives of ``nginx -T``: each with its line in the dump (what the
    narrative cites) and in the original configuration file."""
    if facts.nginx:
        return
    wanted = set(layout()["limits"]["nginx"])
    conf, conf_line = None, 0
    for n, line in enumerate(text.splitlines(), 1):
        head = _CONF_HEAD.match(line)
        if head:
            conf, conf_line = head.group("file"), 0
            continue
        conf_line += 1
        code = line.split("#", 1)[0]
        found = _DIRECTIVE.match(code)
        if not found or found.group("name") not in wanted:
            continue
        name = found.group("name")
        facts.nginx.setdefault(name, []).append(Limit(
            name, " ".join(found.group("args").split()), path, n, line.strip(),
            conf=f"{conf}:{conf_line}" if conf else None))


def proc_limits(text, path, m, facts: HostFacts) -> None:
    pid = int(m.group("pid"))
    rows = {}
    for n, line in enumerate(text.splitlines(), 1):
        found = re.match(r"(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", line)
        if found:
            rows[found.group(1)] = Limit(found.group(1), f"{found.group(2)} {found.group(3)}", path, n, line.strip())
    facts._pending_limits[pid] = rows


def proc_comm(text, path, m, facts: HostFacts) -> None:
    pid = int(m.group("pid"))
    command = text.replace("\0", " ").split()
    if command:
        facts._pending_comm[pid] = command[0].rsplit("/", 1)[-1].rstrip(":")


_PRESSURE_LINE = re.compile(r"^(?P<kind>some|full)\s+avg10=(?P<avg10>[\d.]+)\s+avg60=(?P<avg60>[\d.]+)\s+"
                            r"avg300=(?P<avg300>[\d.]+)\s+total=(?P<total>\d+)\s*$")


def pressure(text, path, m, facts: HostFacts) -> None:
    """/proc/pressure/{cpu,io,memory}: the kernel's running averages of the
    share of time tasks stalled on it, when the bundle was made."""
    resource = m.group("resource")
    for n, line in enumerate(text.splitlines(), 1):
        found = _PRESSURE_LINE.match(line.strip())
        if found and found.group("kind") not in facts.pressure.get(resource, {}):
            values = {k: float(found.group(k)) for k in ("avg10", "avg60", "avg300")}
            values["total_us"] = int(found.group("total"))
            facts.pressure.setdefault(resource, {})[found.group("kind")] = (
                values, Limit(f"{resource} {found.group('kind')}", line.strip(), path, n, line.strip()))


def systemctl_show(text, path, m, facts: HostFacts) -> None:
    """``systemctl show`` of many units: blocks of ``Key=Value`` lines, one
    block a unit (``Id=nginx.service``), separated by blank lines."""
    wanted = set(layout()["limits"]["systemd"])
    unit, rows = None, {}
    for n, line in enumerate(text.splitlines() + [""], 1):
        if not line.strip():
            if unit and rows:
                facts.units.setdefault(unit, {}).update(rows)
            unit, rows = None, {}
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key == "Id":
            unit = value.strip()
        elif key in wanted:
            rows[key] = Limit(key, value.strip(), path, n, line.strip())


def unit_file(text, path, m, facts: HostFacts) -> None:
    """A unit file or a drop-in of it: its limits, the last setting of each
    winning (drop-ins are read after the unit, as systemd applies them);
    what `systemctl show` says is in force is never overridden."""
    wanted = set(layout()["limits"]["systemd"])
    rows = facts.units.setdefault(m.group("unit"), {})
    for n, line in enumerate(text.splitlines(), 1):
        key, sep, value = (part.strip() for part in line.partition("="))
        if not sep or key not in wanted or line.lstrip().startswith(("#", ";")):
            continue
        if key in rows and rows[key].path.endswith("systemctl_show_service_--all"):
            continue
        rows[key] = Limit(key, value, path, n, line.strip())


_MOUNT_L = re.compile(r"^(?P<device>/\S+) on (?P<mount>/\S*) type \S+")


def mounts(text, path, m, facts: HostFacts) -> None:
    """``/proc/mounts`` (``DEVICE MOUNTPOINT TYPE OPTIONS 0 0``) or ``mount
    -l`` (``DEVICE on MOUNTPOINT type TYPE (OPTIONS)``): the mount point of
    each device-backed filesystem, the first one of a device kept."""
    for n, line in enumerate(text.splitlines(), 1):
        found = _MOUNT_L.match(line)
        fields = line.split()
        device, mount = (found.group("device"), found.group("mount")) if found else (
            (fields[0], fields[1]) if len(fields) >= 3 and fields[0].startswith("/") and fields[1].startswith("/")
            else (None, None))
        if device and device not in facts.mounts:
            # /proc/mounts writes a space in a path as \040
            facts.mounts[device] = Limit(device, mount.replace("\\040", " "), path, n, line.strip())


#: a listening socket in ``ss`` output (``ss -ltnp``, sos's ``ss -peaonmi``:
#: ``[Netid] State Recv-Q Send-Q Local Peer [users:(("prog",pid=N,fd=M),...)]``)
_SS_LISTEN = re.compile(r"^(?:tcp\s+)?LISTEN\s+\d+\s+\d+\s+(?P<local>\S+)\s+\S+"
                        r"(?:\s+users:\(\(\"(?P<program>[^\"]+)\",pid=(?P<pid>\d+))?")
#: and in ``netstat -tlnp`` / ``-neopa`` output (``PID/Program name`` column)
_NETSTAT_LISTEN = re.compile(r"^tcp6?\s+\d+\s+\d+\s+(?P<local>\S+)\s+\S+\s+LISTEN\b.*?\s(?P<pid>\d+)/(?P<program>\S+)")
_PORT = re.compile(r":(\d+)$")


def listening_sockets(text, path, m, facts: HostFacts) -> None:
    """``ss`` or ``netstat`` output: the TCP sockets listening, with the
    process holding each when the output names it (``-p``)."""
    for n, line in enumerate(text.splitlines(), 1):
        found = _SS_LISTEN.match(line.strip()) or _NETSTAT_LISTEN.match(line.strip())
        port = _PORT.search(found.group("local")) if found else None
        if port is None:
            continue
        holder = f"{found.group('program')} (pid {found.group('pid')})" if found.group("program") else "a process"
        held = facts.listeners.setdefault(port.group(1), [])
        if not any(h.value == holder and h.name == found.group("local") for h in held):
            held.append(Limit(found.group("local"), holder, path, n, line.strip()))


def collected(text, path, m, facts: HostFacts) -> None:
    line = _first_line(text)
    if line and not facts.collected:
        facts.collected = line


def settle_processes(facts: HostFacts) -> None:
    """Keep the limits of the processes the layout names (nginx...)."""
    wanted = tuple(layout()["limits"]["processes"])
    for pid, rows in sorted(facts._pending_limits.items()):
        comm = facts._pending_comm.get(pid, "")
        if comm.startswith(wanted):
            facts.processes.setdefault(comm, []).append({"pid": pid, "limits": rows})
    facts._pending_limits.clear()
    facts._pending_comm.clear()


def _saw_disk(facts: HostFacts, how: str, major: str, minor: str, name: str, where: str) -> None:
    # the kernel writes a slash in a disk's name as "!" (cciss!c0d0); sar
    # prints it back as a slash
    name = name.replace("!", "/")
    seen = facts.disk_sightings.setdefault(f"dev{int(major)}-{int(minor)}", {})
    seen.setdefault(how, (name, where))


def block_devices(text, path, m, facts: HostFacts) -> None:
    """/proc/partitions and /proc/diskstats: the kernel's name of each
    block device, after its major and minor numbers."""
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if len(fields) >= 3 and fields[0].isdigit() and fields[1].isdigit():
            # partitions: major minor #blocks name [2.4's counters]; diskstats: major minor name counters
            name = fields[3] if len(fields) >= 4 and fields[2].isdigit() else fields[2]
            if not name.isdigit():
                _saw_disk(facts, "kernel", fields[0], fields[1], name, f"{path}:{n}")


_LSBLK_ROW = re.compile(r"^[\s│├└─┬|`-]*(?P<name>\S+?)\s+(?P<major>\d+):(?P<minor>\d+)\s")


def lsblk(text, path, m, facts: HostFacts) -> None:
    """lsblk's default table (NAME first, then MAJ:MIN); the variants sos
    also runs (``lsblk -f``, ``-t``, ``-D``) have no MAJ:MIN and give
    nothing."""
    lines = text.splitlines()
    head = next((k for k, line in enumerate(lines) if line.strip()), None)
    if head is None or lines[head].split()[:2] != ["NAME", "MAJ:MIN"]:
        return
    for n, line in enumerate(lines[head + 1:], head + 2):
        found = _LSBLK_ROW.match(line + " ")
        if found:
            _saw_disk(facts, "lsblk", found.group("major"), found.group("minor"), found.group("name"), f"{path}:{n}")


def dmsetup_info(text, path, m, facts: HostFacts) -> None:
    """``dmsetup info -c``: each mapped device's name by its numbers."""
    columns = None
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if columns is None:
            if {"Name", "Maj", "Min"} <= set(fields):
                columns = (fields.index("Name"), fields.index("Maj"), fields.index("Min"))
            continue
        if len(fields) > max(columns) and fields[columns[1]].isdigit() and fields[columns[2]].isdigit():
            _saw_disk(facts, "mapper", fields[columns[1]], fields[columns[2]], fields[columns[0]], f"{path}:{n}")


_NSTAT_ROW = re.compile(r"^(?P<name>(?:Ip|Icmp|IcmpMsg|Tcp|Udp|UdpLite|TcpExt|IpExt|MPTcpExt|Ip6|Icmp6|Udp6)"
                        r"[A-Za-z0-9_]+)\s+(?P<value>\d+)(?:\s+[\d.]+)?\s*$")
_SECTION = re.compile(r"^(?P<group>[A-Z][A-Za-z0-9]*):\s*$")
_RAW_COUNTER = re.compile(r"^\s+(?P<name>[A-Z][A-Za-z0-9_]+):\s+(?P<value>\d+)\s*$")


def kernel_counters(text, path, m, facts: HostFacts) -> None:
    """The kernel's network counters at collection time, as nstat names
    them (``TcpExtTCPTimeWaitOverflow``), from ``nstat -az`` (``name value
    rate``), ``/proc/net/netstat`` and ``/proc/net/snmp`` (a line of names,
    then a line of values, per group), or ``netstat -s``, which prints a
    counter it has no sentence for as ``Name: value`` under its group."""
    lines = text.splitlines()
    found: dict = {}
    group = None
    for n, line in enumerate(lines, 1):
        row = _NSTAT_ROW.match(line.strip())
        if row:
            found.setdefault(row.group("name"), (row.group("value"), n, line.strip()))
            continue
        head, sep, rest = line.partition(":")
        following = lines[n] if n < len(lines) else ""
        if sep and " " not in head and following.startswith(head + ":"):
            names, values = rest.split(), following.partition(":")[2].split()
            if len(names) == len(values) and all(v.lstrip("-").isdigit() for v in values):
                for name, value in zip(names, values):
                    found.setdefault(head + name, (value, n + 1, following.strip()))
                continue
        section = _SECTION.match(line)
        if section:
            group = section.group("group")
            continue
        raw = _RAW_COUNTER.match(line)
        if raw and group:
            found.setdefault(group + raw.group("name"), (raw.group("value"), n, line.strip()))
    for name, (value, n, row) in found.items():
        if name not in facts.counters:
            facts.counters[name] = Limit(name, value, path, n, row)


READERS = {f.__name__: f for f in (hostname, uname, cpuinfo, lscpu, meminfo, proc_stat, localtime, timedatectl,
                                   timezone_file, sysctl, proc_sys, nginx_T, proc_limits, proc_comm, systemctl_show, unit_file,
                                   mounts, listening_sockets, collected, pressure, kernel_counters,
                                   block_devices, lsblk, dmsetup_info)}

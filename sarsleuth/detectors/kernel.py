"""Kernel log detectors: allocation failures, segfaults, oopses (OOM
kills are in ``oom``, stalls in ``stalls``)."""
from __future__ import annotations

import re

import pandas as pd

from sarsleuth.detectors.event_bursts import bursts, listed
from sarsleuth.detectors.series import severity_for
from sarsleuth.knowledge import kb_entry
from sarsleuth.detectors.crossref import close_in_time, nginx_exits, where
from sarsleuth.knowledge.signatures import all_fields_of, fields_of
from sarsleuth.detectors.base import Detector
from sarsleuth.detectors.context import Context
from sarsleuth.detectors.evidence import evidence_from_events


def _line_no(v) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0


def kb_explanation(det_id: str) -> str:
    return kb_entry(det_id).get("explanation", "")

# GFP bits of 2.6.x-4.3 kernels, which printed the mode as raw hex only.
_OLD_GFP = [
    (0x01, "__GFP_DMA"), (0x02, "__GFP_HIGHMEM"), (0x04, "__GFP_DMA32"), (0x08, "__GFP_MOVABLE"),
    (0x10, "__GFP_WAIT"), (0x20, "__GFP_HIGH"), (0x40, "__GFP_IO"), (0x80, "__GFP_FS"),
    (0x100, "__GFP_COLD"), (0x200, "__GFP_NOWARN"), (0x400, "__GFP_REPEAT"), (0x800, "__GFP_NOFAIL"),
    (0x1000, "__GFP_NORETRY"), (0x4000, "__GFP_COMP"), (0x8000, "__GFP_ZERO"),
    (0x10000, "__GFP_NOMEMALLOC"), (0x20000, "__GFP_HARDWALL"), (0x40000, "__GFP_THISNODE"),
    (0x80000, "__GFP_RECLAIMABLE"),
]
# Well-known composite masks of those kernels.
_OLD_NAMED = {0x20: "GFP_ATOMIC", 0x10: "GFP_NOIO", 0x50: "GFP_NOFS", 0xd0: "GFP_KERNEL",
              0x200d2: "GFP_HIGHUSER", 0x280da: "GFP_HIGHUSER_MOVABLE", 0x4020: "GFP_ATOMIC|__GFP_COMP",
              0x4d0: "GFP_KERNEL|__GFP_REPEAT", 0x201da: "GFP_HIGHUSER_MOVABLE (cold)"}

_RX_PATH = re.compile(r"(?i)\b(?:\w+_rx_int|\w+_clean_rx\w*|\w+_poll\b|net_rx_action|napi_\w+|__napi_alloc_skb|"
                      r"__netdev_alloc_skb|netdev_alloc_\w+|\w+_alloc_rx_\w+|tcp_v4_rcv|ip_rcv|igb_\w+|ixgbe_\w+|"
                      r"bnx2x_\w+|mlx[45]\w*_rx\w*|e1000_\w+|virtnet_\w+|receive_buf)")


def decode_gfp(mode: int | None, names: str | None) -> dict:
    """Name the GFP flags of an allocation and say whether it could sleep.

    Newer kernels print the names themselves (``mode:0x480020(GFP_ATOMIC)``);
    older ones print raw hex, decoded with the 2.6/3.x bit table.
    """
    if names:
        flags = [n for n in re.split(r"[|,\s]+", names) if n]
        atomic = any(f in ("GFP_ATOMIC", "GFP_NOWAIT") for f in flags) or not any(
            "RECLAIM" in f or f in ("GFP_KERNEL", "GFP_NOFS", "GFP_NOIO", "GFP_USER", "GFP_HIGHUSER",
                                    "GFP_HIGHUSER_MOVABLE", "GFP_KERNEL_ACCOUNT", "__GFP_WAIT") for f in flags)
        return {"flags": flags, "atomic": atomic, "named": "|".join(flags)}
    if mode is None:
        return {"flags": [], "atomic": None, "named": None}
    flags = [name for bit, name in _OLD_GFP if mode & bit]
    return {"flags": flags, "atomic": not bool(mode & 0x10), "named": _OLD_NAMED.get(mode, "|".join(flags) or hex(mode))}


class PageAllocationFailure(Detector):
    """``page allocation failure`` reports: order, GFP mode decoded (atomic or
    sleeping), the process, and whether the trace is in a NIC receive path.

    Why it matters: an order-0 atomic failure means free memory is gone; in a
    NIC's receive softirq (report 000: bnx2x_rx_int) it drops packets.
    """

    id = "page-allocation-failure"
    summary = "kernel 'page allocation failure': order, GFP flags (atomic?), process, NIC receive path"
    inputs = ("events",)
    category = "memory-exhaustion"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        ev = ctx.events_of("page-allocation-failure")
        for b in bursts(ev, self.params["burst_gap_seconds"]):
            procs, orders, modes, rx_path, atomic = {}, [], [], False, None
            for r in b.rows.itertuples(index=False):
                m = fields_of(self.id, str(r.message))
                if m:
                    procs[m["comm"]] = procs.get(m["comm"], 0) + 1
                    if m.get("order") is not None:
                        orders.append(int(m["order"]))
                    mode = int(m["mode"], 16) if m.get("mode") else None
                    dec = decode_gfp(mode, m.get("gfp_names"))
                    modes.append((mode, dec))
                    if dec["atomic"]:
                        atomic = True
                    elif atomic is None and dec["atomic"] is False:
                        atomic = False
                detail = r.detail if isinstance(r.detail, str) else ""
                if _RX_PATH.search(detail) or _RX_PATH.search(str(r.message)):
                    rx_path = True
            n = b.lines
            order = min(orders) if orders else None
            mode, dec = modes[0] if modes else (None, {"named": None, "flags": []})
            who = _who(procs)
            what = []
            if order is not None:
                what.append(f"order {order}")
            if dec.get("named"):
                what.append(f"mode {hex(mode) if mode is not None else ''} ({dec['named']})".replace(" ()", ""))
            where = " in the NIC receive path" if rx_path else ""
            title = f"{n} page allocation failure(s) {who}" + (f" ({', '.join(what)})" if what else "") + where
            sev = "high" if (order == 0 or rx_path or n >= 3) else "medium"
            if n >= 20:
                sev = "critical"
            explanation = ("An order-0 atomic allocation failed: free memory was exhausted, and atomic callers "
                           "(softirq, interrupt) cannot wait for reclaim." if order == 0 and atomic else
                           f"An order-{order} allocation failed: likely memory fragmentation rather than no memory at all."
                           if order and order > 0 else "")
            if rx_path:
                explanation += " The call trace runs through the NIC receive path, so incoming packets were dropped."
            out.append(self.finding(
                title=title, severity=sev, start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"failures": n, "order": order, "mode": mode, "atomic": atomic,
                         "nic_receive_path": rx_path, "processes": len(procs)},
                evidence=evidence_from_events(ctx.clock, b.rows, 4), explanation=explanation.strip(),
            ))
        return out


#: The idle task's name (swapper, swapper/N): a line naming it ran in
#: interrupt context on a CPU that had nothing else to run, for no program.
IDLE_TASK = re.compile(r"^swapper(?:/\d+)?$")


def _who(procs: dict) -> str:
    """``by java``, or for the idle task ``in interrupt context on idle CPUs
    (swapper/21, swapper/44)``: the programs a kernel report names, most
    first; the idle task is no program."""
    named = sorted((p for p in procs if not IDLE_TASK.match(p)), key=lambda p: (-procs[p], p))
    idle = sorted(p for p in procs if IDLE_TASK.match(p))
    said = f"by {listed(named)}" if named else ""
    if idle:
        context = f"in interrupt context on idle CPU{'s' if len(idle) > 1 else ''} ({listed(idle)})"
        said = f"{said} and {context}" if said else context
    return said or "by ?"


class NicRxAllocFailure(Detector):
    """NIC drivers failing to allocate receive buffers (bnx2x ``Can't alloc
    sge``, ``failed to allocate rx`` in other drivers).

    Why it matters: packets are dropped at the card; it follows memory
    exhaustion (report 000: seven lines at 15:04:13).
    """

    id = "nic-rx-alloc-failure"
    summary = "NIC driver cannot allocate receive buffers (bnx2x 'Can't alloc sge', ...)"
    inputs = ("events",)
    category = "memory-exhaustion"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of("nic-rx-alloc-failure"), self.params["burst_gap_seconds"]):
            drivers, ifaces = set(), set()
            for msg in b.rows["message"].astype(str):
                parts = fields_of(self.id, msg) or {}
                if parts.get("driver"):
                    drivers.add(parts["driver"])
                if parts.get("iface"):
                    ifaces.add(parts["iface"])
            n = b.lines
            seconds = (b.end - b.start).total_seconds() if b.aligned else None
            when = f" within {seconds:.0f} s" if seconds is not None and seconds < 120 else ""
            out.append(self.finding(
                title=f"{n} receive-buffer allocation failure(s)"
                      + (f" on {', '.join(sorted(ifaces))}" if ifaces else "")
                      + (f" ({', '.join(sorted(drivers))})" if drivers else "") + when,
                severity=severity_for(n, [(5, "high")], "medium"),
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"failures": n, "interfaces": len(ifaces)},
                evidence=evidence_from_events(ctx.clock, b.rows, 8),
            ))
        return out


def parse_segfault(message: str) -> dict | None:
    """comm, pid, addr, ip, sp, error, lib (the mapped object) and cpu of a
    segfault, general-protection or trap line (fields of its definition)."""
    m = fields_of("segfault", message)
    if not m:
        return None
    error = m.get("error", m.get("gp_error"))
    return {"comm": m["comm"], "pid": int(m["pid"]), "addr": m.get("addr"), "ip": m.get("ip", m.get("gp_ip")),
            "sp": m.get("sp"), "error": int(error) if error is not None else None, "lib": m.get("object"),
            "cpu": int(m["cpu"]) if m.get("cpu") else None}


def _cores_dumped(ctx: Context, parsed: list, burst, window: float) -> int:
    """How many of a burst's crashed processes had a core written, as the
    writer of the core (systemd-coredump, ABRT, the shell) or nginx's
    ``exited on signal 11 (core dumped)`` says, matched by PID near the
    crash (or by command when the line names no PID)."""
    pids = {p["pid"] for p in parsed}
    comms = {p["comm"] for p in parsed}
    cored = set()
    for r in (ctx.events_of("core-dumped").itertuples(index=False) if ctx.available("events:core-dumped") else ()):
        f = fields_of("core-dumped", str(r.message)) or {}
        pid = int(f["pid"]) if f.get("pid") else None
        near = (not burst.aligned or pd.isna(r.timestamp)
                or burst.start - pd.Timedelta(seconds=window) <= r.timestamp <= burst.end + pd.Timedelta(seconds=window))
        if near and (pid in pids or f.get("comm") in comms
                     or str(f.get("command", "")).rsplit("/", 1)[-1] in comms):
            cored.add(pid if pid in pids else (f.get("comm") or f.get("command")))
    for pid, row in nginx_exits(ctx, 11).items():
        exit_ = fields_of("worker-signal-exit", str(row.message)) or {}
        if pid in pids and exit_.get("core"):
            cored.add(pid)
    return len(cored)


#: the names nginx's processes run under (a worker's comm is the binary's)
_NGINX_COMMS = {"nginx", "openresty", "tengine"}


class Segfault(Detector):
    """Kernel ``segfault at`` lines: process, pid, faulting ip, library.

    Why it matters: each line is a crashed process; for nginx workers the
    master respawns them and every connection they held is lost (report 003).
    """

    id = "segfault"
    summary = "processes killed by segmentation faults: comm, pid, ip, library"
    inputs = ("events",)
    category = "worker-crash"
    defaults = {"burst_gap_seconds": 172800.0, "match_window_seconds": 120.0}

    def run(self, ctx: Context):
        out = []
        ev = ctx.events_of("segfault")
        for b in bursts(ev, self.params["burst_gap_seconds"]):
            parsed = [parse_segfault(f"{m} {d if isinstance(d, str) else ''}")
                      for m, d in zip(b.rows["message"].astype(str), b.rows["detail"])]
            parsed = [p for p in parsed if p]
            comms = sorted({p["comm"] for p in parsed}) or sorted(set(b.rows["process"].dropna().astype(str)))
            # the object the fault was in, when it is not the program itself (libc, a module)
            libs = sorted({p["lib"] for p in parsed if p["lib"]} - set(comms))
            n = b.lines
            per_comm: dict = {}
            for p in parsed:
                per_comm[p["comm"]] = per_comm.get(p["comm"], 0) + 1
            # the programs that crashed most first, then by name
            named = sorted(comms, key=lambda c: (-per_comm.get(c, 0), c))
            # the kernel's rate limit ("show_signal_msg: 32 callbacks
            # suppressed") counts reports it did not print, of any program,
            # as a flood kept as a count does: their programs are not known
            unnamed = max(0, n - len(b.rows))
            where_ = f"in {listed(named) or 'a process'}" + (f" (faulting in {listed(libs)})" if libs else "")
            title = (f"{n:,} segfault(s): {n - unnamed:,} {where_}, and {unnamed:,} counted without their lines "
                     "(rate-limited or folded into a count): programs not named" if unnamed
                     else f"{n:,} segfault(s) {where_}")
            finding = self.finding(
                title=title, severity="high", start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"segfaults": n, "segfaults_unprinted": unnamed, "processes": len({p['pid'] for p in parsed}),
                         "faulting_libraries": len(libs),
                         "nginx_segfaults": sum(c for comm, c in per_comm.items() if comm in _NGINX_COMMS)},
                evidence=evidence_from_events(ctx.clock, b.rows, 6),
            )
            finding.metrics["cores_dumped"] = _cores_dumped(ctx, parsed, b, self.params["match_window_seconds"])
            if per_comm:
                finding.refs["program"] = max(per_comm, key=per_comm.get)
            if libs:
                finding.refs["library"] = ", ".join(libs)
            finding.refs["pids"] = sorted({p["pid"] for p in parsed})
            finding.refs["ips"] = sorted({p["ip"] for p in parsed})
            # the same crashes as nginx's "exited on signal 11" lines?
            exits = nginx_exits(ctx, 11)
            rows = {p["pid"]: r for p, r in zip((parse_segfault(f"{m} {d if isinstance(d, str) else ''}")
                                                 for m, d in zip(b.rows["message"].astype(str), b.rows["detail"])),
                                                b.rows.itertuples(index=False)) if p}
            same = [pid for pid in finding.refs["pids"] if pid in exits
                    and close_in_time(rows.get(pid), exits[pid], self.params["match_window_seconds"])]
            finding.metrics["matched_nginx_exits"] = len(same)
            if same:
                same.sort(key=lambda pid: (str(exits[pid].file), _line_no(exits[pid].line)))
                finding.refs["nginx_exit_pids"] = same
                finding.explanation = (
                    f"{'All' if len(same) == len(finding.refs['pids']) else len(same)} of these are the nginx worker "
                    f"crashes error.log reports as 'exited on signal 11' for the same PID "
                    f"({', '.join(where(exits[p]) for p in same[:3])}): one crash each, seen from both sides. "
                    + finding.explanation)
            out.append(finding)
        return out


class CoreDump(Detector):
    """Core dumps of crashed processes the kernel's own lines do not tell:
    systemd-coredump's ``Process 334 (systemd-journal) of user 0 dumped
    core.``, ABRT's ``... killed by SIGSEGV - dumping core``, a shell's
    ``(core dumped)``.  A process whose crash a ``segfault at`` line or
    nginx's ``exited on signal`` already tells is not told again (the
    segfault finding counts its core).

    Why it matters: a crash by an abort (SIGABRT: an assertion, a failed
    allocation) leaves no kernel line at all; the core dump is the only
    witness (systemd-journald crashing on a full disk, a program's
    assertion)."""

    id = "core-dump"
    summary = "processes that crashed and dumped core (systemd-coredump, ABRT, a shell's '(core dumped)')"
    inputs = ("events:core-dumped",)
    category = "worker-crash"
    defaults = {"burst_gap_seconds": 600.0, "match_window_seconds": 120.0}

    def run(self, ctx: Context):
        out = []
        told = self._told_pids(ctx)
        events = ctx.events_of("core-dumped")
        for b in bursts(events, self.params["burst_gap_seconds"]):
            crashed: dict = {}            # pid (or command) -> (program, signal)
            for m in b.rows["message"].astype(str):
                f = fields_of("core-dumped", m) or {}
                pid = int(f["pid"]) if f.get("pid") else None
                program = f.get("comm") or str(f.get("command") or "").rsplit("/", 1)[-1] or "a process"
                if pid in told:
                    continue
                signal = f.get("signal") or f.get("how")
                crashed.setdefault(pid if pid is not None else program, (program, signal))
            if not crashed:
                continue
            named = [f"{program} (PID {key}{', ' + signal if signal else ''})" if isinstance(key, int)
                     else program + (f" ({signal})" if signal else "")
                     for key, (program, signal) in sorted(crashed.items(), key=lambda kv: str(kv[0]))]
            programs = sorted({program for program, _signal in crashed.values()})
            out.append(self.finding(
                title=f"{len(crashed)} process(es) crashed and dumped core: {listed(named)}",
                severity="high", start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"processes": len(crashed), "programs": len(programs)},
                evidence=evidence_from_events(ctx.clock, b.rows, 4),
                refs={"program": programs[0], "pids": sorted(k for k in crashed if isinstance(k, int))},
            ))
        return out

    @staticmethod
    def _told_pids(ctx: Context) -> set:
        """The PIDs whose crash another finding tells: a ``segfault at``
        line's, an nginx worker's ``exited on signal``."""
        told = set(nginx_exits(ctx, 11)) | set(nginx_exits(ctx, 6))
        segfaults = ctx.events_of("segfault")
        if segfaults is None or not len(segfaults):
            return told
        for m, d in zip(segfaults["message"].astype(str), segfaults["detail"]):
            parsed = parse_segfault(f"{m} {d if isinstance(d, str) else ''}")
            if parsed:
                told.add(parsed["pid"])
        return told


class KernelOops(Detector):
    """Kernel oops, BUG (a bad pointer dereference) or panic lines."""

    id = "kernel-oops"
    summary = "kernel oops / BUG / panic"
    inputs = ("events:kernel-oops",)
    # a task the kernel oopsed in dies: the chain of crashed workers
    category = "worker-crash"
    defaults = {"burst_gap_seconds": 600.0}

    def run(self, ctx: Context):
        out = []
        for b in bursts(ctx.events_of("kernel-oops"), self.params["burst_gap_seconds"]):
            parts = [f for m, d in zip(b.rows["message"].astype(str), b.rows["detail"])
                     for f in [fields_of(self.id, m)] + all_fields_of(self.id, d if isinstance(d, str) else "") if f]
            panic = any("panic" in f for f in parts)
            # the task it ran for and the function (and module) it faulted in, first of each
            task = next((f for f in parts if f.get("comm")), {})
            place = next((f for f in parts if f.get("function")), {})
            said = ([f"in {place['function']}" + (f" [{place['module']}]" if place.get("module") else "")]
                    if place else []) + ([f"task {task['comm']} (PID {task['pid']})"] if task else [])
            where_ = ", ".join(said)
            refs = {**({"program": task["comm"], "pids": [int(task["pid"])]} if task else {}),
                    **({"function": place["function"]} if place else {}),
                    **({"module": place["module"]} if place.get("module") else {})}
            out.append(self.finding(
                title=f"Kernel bug report: {str(b.rows['message'].iloc[0])[:80]}" + (f" ({where_})" if where_ else ""),
                severity="critical" if panic else "high",
                start=b.start, end=b.end, host=b.host, aligned=b.aligned,
                metrics={"reports": b.lines, "panic": panic},
                evidence=evidence_from_events(ctx.clock, b.rows, 4), refs=refs,
            ))
        return out

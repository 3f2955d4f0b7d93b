"""A recorded case as the lab keeps it:

    lab/cases/<id>/<hostname>.tar.xz   the operator's files, as the programs
                                       wrote them, with their times
    lab/cases/<id>/sosreport-*.tar.xz  (cases that collect one) the real
                                       sos report of the staged host
    lab/cases/<id>/truth.toml          what a correct story holds
    lab/cases/<id>/recorded.md         how it was recorded, second by second

The archive keeps each file's modification time: load-test reports and ps
snapshots carry no time of their own, and an operator's copy keeps it.
``truth.toml`` and ``recorded.md`` are beside the archive and never inside
it, so that what ``analyze`` reads is what the operator would have.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import time
from datetime import datetime
from pathlib import Path

from lab.recorder.scenario import COLLECTORS
from lab.recorder.steps import OPS_DIR


class CaseRefused(RuntimeError):
    """The recording did not show what the scenario stages: no case is
    written (a case is never faked)."""


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds")


def _toml_list(items) -> str:
    return "[" + ", ".join(_toml_str(i) for i in items) + "]"


def _toml_str(s) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def operator_files(host) -> list[tuple[str, Path]]:
    """(name in the archive, file) of what the operator receives."""
    files = []
    sa = host._sa_path()
    if sa.exists():
        files.append((sa.name, sa))
    msgs = host._messages_path()
    for log in (msgs.with_name(msgs.name + ".1"), msgs, Path("/var/log/cron.1"), Path("/var/log/cron")):
        if log.exists() and log.stat().st_size:
            files.append((log.name, log))
    for err in (Path("/var/log/nginx/error.log.1"), Path("/var/log/nginx/error.log")):
        if err.exists() and (err.stat().st_size or err.name == "error.log"):
            files.append((err.name, err))
    for extra in host.scenario.host.get("logs", []):      # a service's own log (supervisord, postgres...)
        p = Path(extra)
        if p.exists() and p.stat().st_size:
            files.append((p.name, p))
    for p in sorted(OPS_DIR.iterdir()):
        if p.suffix == ".txt":
            files.append((p.name, p))
    return files


def _timeline_rows(host) -> list[str]:
    rows = ["| s | wall clock | what |", "|---|---|---|"]
    for at, text in sorted(host.timeline):
        wall = datetime.fromtimestamp(at).strftime("%H:%M:%S")
        rows.append(f"| {at - host.t0:.1f} | {wall} | {text.replace('|', '/')} |")
    return rows


def _readable(arc: str, path: Path) -> bytes:
    """A file's text as its reader shows it: an sa file as ``sadf -d``
    prints it (disks as ``devM-N``, interfaces, filesystems)."""
    data = path.read_bytes()
    if arc.startswith("sa") and b"\0" in data[:64]:
        out = subprocess.run(["sadf", "-d", str(path), "--", "-A"], capture_output=True)
        return out.stdout
    return data


def _found_in(name: str, files: list[tuple[str, Path]]) -> list[str]:
    """The operator's files that name ``name`` (as a word start)."""
    pat = re.compile(rb"(?<![\w-])" + re.escape(name).encode() + rb"(?![\w])")
    return [arc for arc, p in files if pat.search(_readable(arc, p))]


def write(host, probes, watch, faults: list[float], dmesg: Path | None, sos: Path | None, runner) -> Path:
    sc = host.scenario
    truth = sc.truth
    quiet = bool(truth.get("quiet", False))
    notes = []
    # a host with ordinary work of its own is measured against it (before the fault)
    busy = probes.disturbed(baseline_until=(faults[0] if faults else time.time())
                            if host.background.on else None)
    if busy:
        raise CaseRefused(f"the machine was not quiet: {busy}")
    files = operator_files(host)
    if not any(arc.startswith("sa") and not arc.endswith(".txt") for arc, _ in files):
        raise CaseRefused("sadc wrote no sa file")
    start_between = None
    if not quiet:
        if not faults:
            raise CaseRefused("no fault step ran")
        t_fault = faults[0]
        t_sign, how = t_fault, "the fault step's start"
        if truth.get("sign"):
            hit = probes.first(truth["sign"], t_fault)
            if hit is None:
                name = truth["sign"].split()[0]
                top = probes.peak(name, t_fault, float("inf"))
                raise CaseRefused(f"the fault never showed: {truth['sign']} was not seen after "
                                  f"{_iso(t_fault)} (highest {name}: "
                                  f"{'no sample' if top is None else f'{top:.1f}'})")
            t_sign, how = hit[0], f"`{truth['sign']}` first seen ({hit[1]:.1f})"
        if truth.get("sign_log"):
            if watch is None or watch.seen is None:
                raise CaseRefused(f"the fault never showed: no log line matched {truth['sign_log']!r}")
            if watch.seen[0] < t_fault - float(truth.get("before", 1)):
                # what the fault should cause was there before it: the host was not in its ordinary
                # state (a previous attempt's writeback, say), and the case would date the wrong thing
                raise CaseRefused(f"the sign showed before the fault: {watch.seen[1].strip()[:120]!r} at "
                                  f"{_iso(watch.seen[0])}, the fault at {_iso(t_fault)}")
            if watch.seen[0] > t_sign or not truth.get("sign"):
                t_sign, how = watch.seen[0], f"first log line matching `{truth['sign_log']}`"
        lo = t_fault - float(truth.get("before", 1))
        hi = t_sign + float(truth.get("after", 10))
        start_between = [_iso(lo), _iso(hi)]
        notes.append(f"Fault step at {_iso(t_fault)}; first sign: {how} at {_iso(t_sign)}.")
    peer_files = host.peer.files() if host.peer else []
    responsible, missing = [], []
    for name in truth.get("responsible", []):
        (responsible if _found_in(name, files + peer_files) else missing).append(name)
    if missing:
        notes.append(f"Named in the scenario but in none of the operator's files, so left out of the truth: "
                     f"{', '.join(missing)}.")
    out = host.out
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.tar.xz"):
        old.unlink()
    hostname = sc.host["hostname"]
    archived = files
    if sos is not None:
        # the bundle holds the logs, the sa file and dmesg; the operator adds
        # what sos does not collect: load-test outputs and ps snapshots
        shutil.copy2(sos, out / sos.name)
        archived = [(arc, p) for arc, p in files if p.parent == OPS_DIR and arc != "dmesg.txt"]
    if archived:
        _archive(out, hostname, archived)
    if peer_files:      # the second host's files, in an archive of its own
        _archive(out, host.peer.hostname, peer_files)
    tools = ["sadc 1 s -S XALL"] + (["sadc 60 s -S DISK (cron)", "debian-sa1 600 s -S DISK (cron)"]
                                     if host.background.bg["sadc_cron"] else []) + sorted(host.tool_versions)
    collector = [COLLECTORS[name] for name in sc.collector]
    if host.background.bg["sadc_cron"]:
        _keep_interval_files(host, out)
    lines = [f"kind = {_toml_str(sc.kind)}",
             f"category = {_toml_list(truth.get('category', []))}",
             f"cause = {_toml_list(truth.get('cause', []))}"]
    if start_between:
        lines.append(f"start_between = {_toml_list(start_between)}")
    lines += [f"responsible = {_toml_list(responsible)}",
              f"confounders = {_toml_list(truth.get('confounders', []))}"]
    if collector:
        lines.append(f"collector = {_toml_list(collector)}")
    if truth.get("hosts"):
        lines.append(f"hosts = {_toml_list(truth['hosts'])}")
    lines += [f"quiet = {'true' if quiet else 'false'}",
              f"args = {_toml_list(truth.get('args', []))}", "",
              "[recorded]",
              f"scenario = {_toml_str('lab/scenarios/' + sc.path.name)}",
              f"tools = {_toml_list(tools)}",
              f"recorded_at = {_toml_str(_iso(host.t0))}",
              'timeline = "recorded.md"']
    if host.background.on:
        lines.append(f"background = {_toml_str(_background_text(host.background.bg))}")
    (out / "truth.toml").write_text("\n".join(lines + [""]))
    _write_recorded(host, out, files, sos, notes, probes, faults)
    return out


def _archive(out: Path, hostname: str, files: list[tuple[str, Path]]) -> None:
    with tarfile.open(out / f"{hostname}.tar.xz", "w:xz", preset=9) as tar:
        for arc, path in files:
            info = tar.gettarinfo(str(path), arcname=f"{hostname}/{arc}")
            info.uname = info.gname = "root"
            info.uid = info.gid = 0
            with open(path, "rb") as fh:
                tar.addfile(info, fh)


def _background_text(bg: dict) -> str:
    parts = [f"traffic about {bg['rate']:g} requests/s swinging {bg['swing']:.0%} over {bg['period']:g} s"]
    if bg["cron"]:
        parts.append("cron every minute")
    if bg["agent"]:
        parts.append("a monitoring agent polling /proc every 10 s")
    parts += [f"logrotate at {t:g} s" for t in bg["logrotate"]] + [f"a backup at {t:g} s" for t in bg["backup"]]
    return ", ".join(parts)


def _keep_interval_files(host, out: Path) -> None:
    """The host's own sa files, written by sadc from cron every minute and
    every 10 minutes: beside the case, as ``intervals/<N>s/<host>/saDD``
    (the scorer puts them in place of the 1 s file at that interval)."""
    from lab.recorder.background import SA_60S_DIR, SA_600S_DIR

    hostname = host.scenario.host["hostname"]
    shutil.rmtree(out / "intervals", ignore_errors=True)
    for seconds, folder in ((60, SA_60S_DIR), (600, SA_600S_DIR)):
        found = sorted(p for p in folder.glob("sa[0-9][0-9]") if p.is_file())
        if not found:
            raise CaseRefused(f"cron's sadc wrote no file in {folder}")
        dest = out / "intervals" / f"{seconds}s" / hostname
        dest.mkdir(parents=True)
        for p in found:
            shutil.copy2(p, dest / p.name)


def _write_recorded(host, out: Path, files, sos, notes, probes, faults) -> None:
    sc = host.scenario
    uname = os.uname()
    mem_mb = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    md = [f"# {sc.id}: {sc.summary}", "",
          f"Kind `{sc.kind}`, recorded {_iso(host.t0)} on host `{sc.host['hostname']}` "
          f"(zone {sc.host.get('tz', 'UTC')}): kernel {uname.release}, {os.cpu_count()} CPUs, {mem_mb} MB RAM.",
          "", "Programs: " + "; ".join(sorted(host.tool_versions)) + ".", ""]
    md += ["## Timeline", ""] + _timeline_rows(host) + [""]
    if faults and probes.samples:
        t = faults[0]
        peaks = []
        for name in ("cpu_busy_pct", "iowait_pct", "swap_used_mb", "timewait", "disk_util_pct", "blocked"):
            v = probes.peak(name, t, t + 3600)
            if v is not None:
                peaks.append(f"{name} {v:.1f}")
        low = min((v["mem_available_mb"] for ts, v in probes.samples if ts >= t), default=None)
        if low is not None:
            peaks.append(f"mem_available_mb (lowest) {low:.0f}")
        md += ["## What the recorder saw after the fault (from /proc, once a second)", "", ", ".join(peaks), ""]
    if probes.samples:
        cpu = [v["foreign_cpu_pct"] for _, v in probes.samples]
        io = [v["foreign_io_mbps"] for _, v in probes.samples]
        md += ["## The recording machine's other work", "",
               f"Processes outside the recording used {sum(cpu) / len(cpu):.1f} % of the CPUs on average "
               f"(most in a second: {max(cpu):.0f} %) and moved {sum(io) / len(io):.1f} MB/s of disk I/O on "
               "average while it ran.", ""]
    md += ["## Files", ""]
    if sos is not None:
        md.append(f"- `{sos.name}`: `sos report` of the staged host after the incident")
        files = [(arc, p) for arc, p in files if p.parent == OPS_DIR and arc != "dmesg.txt"]
    md += [f"- `{sc.host['hostname']}/{arc}` ({p.stat().st_size:,} bytes)" for arc, p in files]
    if host.peer:
        md += [f"- `{host.peer.hostname}/{arc}` ({p.stat().st_size:,} bytes)" for arc, p in host.peer.files()]
        notes = notes + [f"Two hosts share the recording machine's kernel: `{sc.host['hostname']}` and "
                         f"`{host.peer.hostname}` (its own host name, network namespace reached over a veth pair, "
                         "files and services). Their sa files' CPU, memory, disk and PSI figures are the machine's, "
                         "the same in both; their network figures are each host's own. The kernel's messages "
                         f"went to `{host.peer.hostname if host.peer.spec.get('kernel_log') else sc.host['hostname']}` "
                         "only."]
    md += ["", "## Notes", ""] + [f"- {n}" for n in notes] + [
        "- The kernel's ring buffer was cleared when the recording began, so that `dmesg` holds this "
        "recording only; syslog started with it too.",
        "- The staged host shares the recording machine's kernel, CPUs, memory and disk. Its `ps` "
        "snapshots keep the kernel's threads and the processes the recording started; the machine's "
        "unrelated processes are left out, as `ps aux | grep -v` would.", ""]
    (out / "recorded.md").write_text("\n".join(md))

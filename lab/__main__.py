"""The incident lab.

    python -m lab list                     the scenarios, their kinds, what is recorded
    python -m lab check                    which scenarios this machine can stage, and why not
    python -m lab record ID|PATH... [--all] [--missing] [--out DIR]
                                           stage and record (root; minutes each)
    python -m lab score [CASE...] [--interval N] [--format text|json|markdown] [--cases-dir DIR]
                        [--cache DIR] [--set-floor]
                                           run sarsleuth on every recorded case against its truth,
                                           at 1 s, 10 s and 60 s (and 10 minutes for the long cases)
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LAB = Path(__file__).resolve().parent
REPO = LAB.parent


def _scenarios(names: list[str], everything: bool):
    from lab.recorder.scenario import all_scenarios, load

    if everything:
        return all_scenarios()
    out = []
    for n in names:
        p = Path(n)
        out.append(load(p if p.suffix == ".toml" else LAB / "scenarios" / f"{n}.toml"))
    return out


def cmd_list(args) -> int:
    from lab.recorder.scenario import all_scenarios

    for sc in all_scenarios():
        recorded = "recorded" if (LAB / "cases" / sc.id / "truth.toml").exists() else "-"
        print(f"{sc.id:36} {sc.kind:20} {recorded:9} {sc.summary}")
    return 0


def cmd_check(args) -> int:
    from lab.recorder.machine import missing

    bad = 0
    for sc in _scenarios(args.scenarios, not args.scenarios):
        reasons = [r for r in (missing(n) for n in sc.needs + _programs(sc)) if r]
        if reasons:
            bad += 1
            print(f"{sc.id:36} cannot be staged here: {'; '.join(dict.fromkeys(reasons))}")
        else:
            print(f"{sc.id:36} ok")
    return 0 if not bad else 3


def _programs(sc) -> list[str]:
    progs = {"sadc", "unshare", "ps", "dmesg", "logger"}
    if sc.host.get("syslog", "traditional") != "none":
        progs.add("rsyslogd")
    if sc.nginx is not None:
        progs.add("nginx")
    for s in sc.steps:
        if s.action in ("run", "load"):
            first = str(s.value).split()[0]
            if first in ("wrk", "ab", "stress-ng", "fio"):
                progs.add(first)
            words = set(str(s.value).replace("/usr/bin/", " ").split())
            progs |= words & {"convert", "zstd", "sqlite3", "node", "perl", "curl", "supervisord", "supervisorctl"}
        if s.action == "nft":
            progs.add("nft")
    return sorted(progs)


def cmd_record(args) -> int:
    from lab.recorder.machine import MACHINE_NETNS, missing

    scenarios = _scenarios(args.scenarios, args.all)
    _interrupt_as_exit()
    status = 0
    for sc in scenarios:
        out = Path(args.out) / sc.id if args.out else LAB / "cases" / sc.id
        if args.missing and (out / "truth.toml").exists():
            continue
        reasons = [r for r in (missing(n) for n in sc.needs + _programs(sc)) if r]
        if reasons:
            print(f"{sc.id}: skipped, this machine cannot stage it: {'; '.join(dict.fromkeys(reasons))}")
            continue
        for attempt in range(1, args.attempts + 1):
            _wait_for_quiet()
            print(f"{sc.id}: recording ({sc.host.get('duration', 120)} s), attempt {attempt}", flush=True)
            work = Path(tempfile.mkdtemp(prefix="lab-"))
            machine = _machine_sysctls(sc)
            try:
                # the recording's own namespaces; the machine's network
                # namespace stays reachable for the sysctls the kernel keeps
                # for the whole machine
                env = {**os.environ, MACHINE_NETNS: f"/proc/{os.getpid()}/ns/net"}
                rc = subprocess.call(["unshare", "--mount", "--uts", "--net", "--propagation", "private", "--",
                                      sys.executable, "-m", "lab", "_stage", str(sc.path), str(work), str(out)],
                                     cwd=REPO, env=env)
            finally:
                _sweep(work, machine)
            if rc != REFUSED:
                break
        if rc:
            status = 1
            print(f"{sc.id}: not recorded (exit {rc})")
        else:
            print(f"{sc.id}: written to {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return status


REFUSED = 4


def _busy_pct(seconds: float = 3.0) -> float:
    def times():
        vals = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        return sum(vals), vals[3] + vals[4]
    import time
    a = times()
    time.sleep(seconds)
    b = times()
    return 100.0 * (1 - (b[1] - a[1]) / max(1, b[0] - a[0]))


def _dirty_mb() -> float:
    """Page cache still to be written (a previous attempt's writes drain
    for minutes through a throttled disk and would be the next one's I/O)."""
    kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(("Dirty:", "Writeback:")):
            kb += int(line.split()[1])
    return kb / 1024


def _wait_for_quiet(limit: float = 15.0, patience: float = 1800.0, checks: int = 4) -> None:
    """Start on a quiet machine, quiet for a while (``checks`` readings
    in a row, 10 s apart): a recording is the staged host alone."""
    import time
    deadline = time.time() + patience
    quiet = 0
    while time.time() < deadline and quiet < checks:
        busy, dirty = _busy_pct(), _dirty_mb()
        quiet = quiet + 1 if busy < limit and dirty < 64 else 0
        if quiet < checks:
            if not quiet:
                print(f"  waiting for a quiet machine (CPUs {busy:.0f} % busy, {dirty:.0f} MB dirty or "
                      f"under writeback)", flush=True)
            time.sleep(10 if quiet else 20)


def _machine_sysctls(sc) -> dict:
    """The machine's own values of the sysctls a scenario sets (those its
    namespace keeps are not changed here; those the kernel keeps for the
    whole machine are, and a recording that died may not give them back)."""
    names = set(sc.host.get("sysctl") or {})
    for step in sc.steps:
        if step.action == "sysctl":
            names |= set(step.value)
    out = {}
    for name in names:
        path = Path("/proc/sys") / name.replace(".", "/")
        if path.exists():
            out[name] = path.read_text().strip()
    return out


def _sweep(work: Path, machine: dict | None = None) -> None:
    """Give back whatever a recording that died left of the machine's."""
    for name, value in (machine or {}).items():
        path = Path("/proc/sys") / name.replace(".", "/")
        try:
            if path.read_text().strip() != value:
                path.write_text(value)
        except OSError:
            pass
    swap = work / "swapfile"
    if swap.exists():
        subprocess.run(["swapoff", str(swap)], capture_output=True)
    for img in work.glob("fs*.img"):
        out = subprocess.run(["losetup", "-j", str(img)], capture_output=True, text=True).stdout
        for line in out.splitlines():
            subprocess.run(["losetup", "-d", line.split(":")[0]], capture_output=True)
    for d in Path("/sys/fs/cgroup").glob("*/lab-*"):
        try:
            d.rmdir()
        except OSError:
            pass
    shutil.rmtree(work, ignore_errors=True)


def _interrupt_as_exit() -> None:
    """SIGTERM (and SIGHUP) end a recording as Ctrl-C does, so that what it
    borrowed from the machine is given back."""
    import signal

    def stop(signum, frame):
        raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)


def cmd_stage(args) -> int:
    from lab.recorder.case import CaseRefused
    from lab.recorder.scenario import load
    from lab.recorder.stage import Host

    os.chdir("/")
    _interrupt_as_exit()
    _adopt_orphans()
    host = Host(load(Path(args.scenario)), Path(args.work), Path(args.out))
    try:
        host.record()
    except CaseRefused as exc:
        print(f"{host.scenario.id}: refused: {exc}", file=sys.stderr)
        return REFUSED
    finally:
        _end_descendants()
    return 0


def _adopt_orphans() -> None:
    """The staged host's orphans (a daemon's detached child) stay its own:
    this process becomes their parent (a child subreaper), so that they
    are in the host's process table and ended with the recording."""
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _end_descendants() -> None:
    import signal

    from lab.recorder.snapshots import staged_pids

    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = [p for p in staged_pids() if p != 2 and _parent_of(p) != 2]
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        if left and sig == signal.SIGTERM:
            import time
            time.sleep(2)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass


def _parent_of(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def cmd_score(args) -> int:
    from lab.scoring.report import main as score_main

    return score_main(args)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list").set_defaults(fn=cmd_list)
    p = sub.add_parser("check")
    p.add_argument("scenarios", nargs="*")
    p.set_defaults(fn=cmd_check)
    p = sub.add_parser("record")
    p.add_argument("scenarios", nargs="*")
    p.add_argument("--all", action="store_true")
    p.add_argument("--missing", action="store_true", help="only scenarios without a recorded case")
    p.add_argument("--out", help="folder of the cases (default lab/cases)")
    p.add_argument("--attempts", type=int, default=3,
                   help="tries per scenario when a recording is refused (the machine was busy, the fault never showed)")
    p.set_defaults(fn=cmd_record)
    p = sub.add_parser("_stage")
    p.add_argument("scenario")
    p.add_argument("work")
    p.add_argument("out")
    p.set_defaults(fn=cmd_stage)
    p = sub.add_parser("score")
    p.add_argument("cases", nargs="*")
    p.add_argument("--cases-dir", default=str(LAB / "cases"))
    p.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    p.add_argument("--interval", type=int, help="only this interval (seconds), as a detailed table")
    p.add_argument("--cache", help="folder of the cases derived at coarser intervals "
                                   "(default $SARSLEUTH_LAB_CACHE or ~/.cache/sarsleuth-lab)")
    p.add_argument("--set-floor", action="store_true",
                   help="write these totals to lab/scores.toml: the test suite holds the lab to them")
    p.set_defaults(fn=cmd_score)
    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())

"""The steps of a scenario, carried out on the staged host at their second.

Every process a step starts is in its own process group, so that stopping
it stops what it started; every change a step makes (a sysctl, an nftables
table, a qdisc) is undone at its ``until`` or when the recording ends.
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
import time
from pathlib import Path

from lab.recorder.machine import read_sysctl
from lab.recorder.snapshots import ps_snapshot

OPS_DIR = Path("/srv/ops")   # where the operator's pasted outputs are saved
_VARIABLE = re.compile(r"\{(\w+)(?:([-+])(\d+))?\}")


class StepRunner:
    def __init__(self, host):
        self.host = host                   # lab.recorder.stage.Host
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.loads: list[threading.Thread] = []
        self.undo: list[tuple[float, str, object]] = []
        self.ps_count = 0

    # ---------------------------------------------------------------- common
    def expand(self, text: str) -> str:
        """``{url}``, ``{port}``, ``{avail_mb-2600}``...: the host's values,
        with an offset where the scenario gives one."""
        def value(m):
            v = self.host.variables[m.group(1)]
            return str(v + int(m.group(3)) * (-1 if m.group(2) == "-" else 1) if m.group(2) else v)
        return _VARIABLE.sub(value, text)

    def _spawn(self, argv: list[str], step, stdout=subprocess.DEVNULL) -> subprocess.Popen:
        o = step.opts if step else {}
        prefix = []
        if o.get("nofile"):
            prefix.append(f"ulimit -n {int(o['nofile'])}")
        if o.get("core"):
            prefix.append("ulimit -c unlimited")
        if o.get("oom_score_adj") is not None:
            prefix.append(f"echo {int(o['oom_score_adj'])} > /proc/self/oom_score_adj")
        if o.get("cgroup"):
            prefix.append(self.host.cgroups[o["cgroup"]].enter_command())
        if o.get("user"):
            argv = ["setpriv", "--reuid", o["user"], "--regid", o["user"], "--init-groups", *argv]
        env = {**os.environ, **{k: str(v) for k, v in (o.get("env") or {}).items()}}
        shell = " && ".join(prefix + ['exec "$@"'])
        return subprocess.Popen(["sh", "-c", shell, "sh", *argv], stdout=stdout, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, env=env,
                                cwd=o.get("cwd") or "/srv/ops")

    # --------------------------------------------------------------- actions
    def run(self, step) -> str:
        argv = shlex.split(self.expand(step.value))
        tag = step.opts.get("syslog_tag")
        if step.opts.get("on") == "peer":       # a command on the second host
            proc = self.host.peer.run(argv, tag)
            if step.until is not None:
                self.undo.append((step.until, "stop-process", proc))
            return f"{self.host.peer.hostname}: `{shlex.join(argv)}` started (pid {proc.pid})"
        proc = self._spawn(argv, step, stdout=subprocess.PIPE if tag else subprocess.DEVNULL)
        if tag:   # a service's output goes to syslog, as a unit's would go to the journal
            logger = subprocess.Popen(["logger", "-t", f"{tag}[{proc.pid}]"], stdin=proc.stdout)
            proc.stdout.close()
            self.procs.append((f"logger for {tag}", logger))
        self.procs.append((step.name or argv[0], proc))
        if step.until is not None:
            self.undo.append((step.until, "stop-process", proc))
        return f"`{shlex.join(argv)}` started (pid {proc.pid})"

    def load(self, step) -> str:
        cmdline = self.expand(step.value)
        argv = shlex.split(cmdline)
        if step.opts.get("rate"):
            argv, cmdline = self._throttled(argv, float(step.opts["rate"]))
        save = OPS_DIR / step.opts.get("save", f"{argv[0]}-{int(step.at)}.txt")

        elsewhere = bool(step.opts.get("elsewhere"))

        def work():
            proc = self._spawn(argv, step, stdout=subprocess.PIPE)
            self.procs.append((argv[0], proc))
            if elsewhere:      # other machines' clients: not in the host's process table, no report kept
                with open("/srv/app/elsewhere.pids", "a") as fh:
                    fh.write(f"{proc.pid}\n")
            out, _ = proc.communicate()
            if elsewhere:
                self.host.mark(f"{argv[0]} (clients elsewhere) finished (exit {proc.returncode})")
                return
            save.write_bytes(f"$ {cmdline}\n".encode() + out)
            self.host.mark(f"{argv[0]} finished (exit {proc.returncode}), output in {save.name}")

        t = threading.Thread(target=work, daemon=True)
        t.start()
        self.loads.append(t)
        return f"`{cmdline}` started"

    def _throttled(self, argv: list[str], rate: float) -> tuple[list[str], str]:
        """wrk at a steady request rate: its Lua ``delay()`` hook spaces each
        connection's requests so that all of them together make ``rate``."""
        conns = next((int(a[2:]) for a in argv if a.startswith("-c") and a[2:].isdigit()), 10)
        script = Path("/srv/ops/steady.lua")
        script.write_text(f"-- about {rate:g} requests a second over {conns} connections\n"
                          f"function delay()\n    return {1000.0 * conns / rate:.1f}\nend\n")
        argv = argv[:-1] + ["-s", script.name, argv[-1]]
        return argv, shlex.join(argv)

    def signal(self, step) -> str:
        sig = getattr(signal, "SIG" + step.value.upper().removeprefix("SIG"))
        target = step.opts.get("target", "nginx-worker")
        pids = self.host.resolve(target)
        if not pids:
            return f"no process for {target!r}: nothing signalled"
        for pid in pids:
            os.kill(pid, sig)
        return f"kill -{sig.name.removeprefix('SIG')} {' '.join(map(str, pids))} ({target})"

    def reload(self, step) -> str:
        err = self.host.nginx.reload(dict(step.value))
        changed = ", ".join(f"{k} = {v}" for k, v in step.value.items())
        return f"nginx -s reload with {changed}" + (f" ({err})" if err else "")

    def stop(self, step) -> str:
        return self.host.service(step.value).stop() or f"{step.value} stopped"

    def start(self, step) -> str:
        self.host.service(step.value).start()
        return f"{step.value} started"

    def restart(self, step) -> str:
        svc = self.host.service(step.value)
        svc.stop()
        svc.start()
        return f"{step.value} restarted"

    def sysctl(self, step) -> str:
        before = {}
        for name, value in step.value.items():
            before[name] = read_sysctl(name)
            self.host.borrowed.sysctl(name, value)
        if step.until is not None:
            self.undo.append((step.until, "sysctl", before))
        return "sysctl " + " ".join(f"{k}={v}" for k, v in step.value.items())

    def nft(self, step) -> str:
        table = f"lab{len(self.undo)}{int(step.at)}"
        if step.value == "stateful":
            # a host firewall that keeps state: every connection is tracked
            # in the kernel's conntrack table (nf_conntrack_max entries)
            script = (f"add table inet {table}\n"
                      f"add chain inet {table} in {{ type filter hook input priority 0; }}\n"
                      f"add rule inet {table} in ct state invalid drop\n"
                      f"add rule inet {table} in ct state established,related accept\n")
            subprocess.run(["nft", "-f", "-"], input=script, text=True, check=True)
            self.undo.append((step.until if step.until is not None else float("inf"), "nft", table))
            return "nftables: a stateful firewall (connections tracked by conntrack)"
        port = int(self.expand(str(step.opts["port"])))
        if step.value == "drop":
            pct = int(step.opts.get("percent", 10))
            rule = f"tcp dport {port} numgen random mod 100 < {pct} drop"
            what = f"{pct} % of packets to port {port} dropped"
        elif step.value == "reject":
            how = step.opts.get("reject", "tcp reset")
            rule = f"tcp dport {port} reject with {how}"
            what = f"packets to port {port} rejected with {how}"
        else:
            raise ValueError(f"nft action is stateful, drop or reject, not {step.value!r}")
        script = (f"add table inet {table}\n"
                  f"add chain inet {table} out {{ type filter hook output priority 0; }}\n"
                  f"add rule inet {table} out {rule}\n")
        subprocess.run(["nft", "-f", "-"], input=script, text=True, check=True)
        self.undo.append((step.until if step.until is not None else float("inf"), "nft", table))
        return f"nftables: {what}"

    def qdisc(self, step) -> str:
        subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", *shlex.split(step.value)], check=True)
        self.undo.append((step.until if step.until is not None else float("inf"), "qdisc", None))
        return f"tc qdisc add dev lo root {step.value}"

    def ps(self, step=None) -> str:
        if step is not None and step.opts.get("on") == "peer":
            return self.host.peer.ps()
        self.ps_count += 1
        path = ps_snapshot(OPS_DIR, self.host.scenario.host.get("ps_style", "aux"))
        return f"ps snapshot {path.name}"

    def logger(self, step) -> str:
        tag = step.opts.get("tag", "admin")
        subprocess.run(["logger", "-t", tag, "-p", step.opts.get("priority", "user.notice"), self.expand(step.value)],
                       check=False)
        return f"logger -t {tag}: {self.expand(step.value)}"

    def mark(self, step) -> str:
        return self.expand(step.value)

    # ------------------------------------------------------------------ undo
    def due_undo(self, now: float) -> list[str]:
        done, keep = [], []
        for at, what, arg in self.undo:
            if at <= now:
                done.append(self._undo(what, arg))
            else:
                keep.append((at, what, arg))
        self.undo = keep
        return [d for d in done if d]

    def _undo(self, what, arg) -> str:
        if what == "stop-process":
            if arg.poll() is None:
                _stop_group(arg)
                return f"pid {arg.pid} stopped"
            return ""
        if what == "sysctl":
            for name, value in arg.items():
                self.host.borrowed.sysctl(name, value)
            return "sysctl " + " ".join(f"{k}={v}" for k, v in arg.items()) + " (restored)"
        if what == "nft":
            subprocess.run(["nft", "delete", "table", "inet", arg], check=False)
            return "nftables rule removed"
        if what == "qdisc":
            subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], check=False)
            return "qdisc on lo removed"
        return ""

    def close(self) -> None:
        for _, what, arg in self.undo:
            self._undo(what, arg)
        self.undo = []
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                _stop_group(proc)
        for t in self.loads:
            t.join(30)


def _stop_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

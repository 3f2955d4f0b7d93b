"""A second host beside the staged one (a proxy and its backend): its own
host name (UTS namespace), network stack (network namespace, reached over
a veth pair: this host 10.77.0.1, the peer 10.77.0.2) and files (mount
namespace: its own /var/log, /srv/ops, /run), with its own rsyslog, sadc,
services and ``ps`` snapshots.

The two hosts share the machine's kernel: their sa files' CPU, memory,
disk and PSI figures are the machine's, the same in both; their network
figures (interfaces, TCP, sockets) are each host's own.  The kernel's
messages go to one host only (its syslog and ``dmesg``): the one the
scenario names (``kernel_log``), where the events it stages happen.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

from lab.recorder.machine import which
from lab.recorder.services import RSYSLOG_TEMPLATES, wait_listening
from lab.recorder.snapshots import STYLES

ADDRESS, PEER_ADDRESS = "10.77.0.1", "10.77.0.2"
PEER_KEYS = {"hostname", "sa_dir", "syslog", "messages", "ps", "ps_style", "kernel_log", "backend", "dmesg"}


class Peer:
    def __init__(self, spec: dict, cgroups: dict):
        self.spec = spec
        self.cgroups = cgroups
        self.hostname = spec["hostname"]
        self.anchor: subprocess.Popen | None = None
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.backends: dict[int, subprocess.Popen] = {}
        self.loggers: list[subprocess.Popen] = []
        self.rsyslog: subprocess.Popen | None = None
        self.t0 = time.time()

    # ------------------------------------------------------------- namespaces
    @property
    def enter(self) -> list[str]:
        return ["nsenter", "-t", str(self.anchor.pid), "-u", "-n", "-m", "--"]

    @property
    def root(self) -> Path:
        """The peer's files as this host's recorder reaches them."""
        return Path(f"/proc/{self.anchor.pid}/root")

    def sh(self, script: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(self.enter + ["sh", "-c", script], check=check, capture_output=True, text=True)

    def setup(self, tz: str) -> None:
        self.anchor = subprocess.Popen(["unshare", "--uts", "--net", "--mount", "--propagation", "private", "--",
                                        "sleep", "1000000"], start_new_session=True)
        for _ in range(50):        # the namespaces exist once unshare has exec'd sleep
            if os.readlink(f"/proc/{self.anchor.pid}/ns/uts") != os.readlink("/proc/self/ns/uts"):
                break
            time.sleep(0.05)
        with open("/srv/app/elsewhere.pids", "a") as fh:   # the anchor is no process of either host
            fh.write(f"{self.anchor.pid}\n")
        self.sh(f"hostname {shlex.quote(self.hostname)} && "
                "for d in /var/log /srv/ops /run /var/lib/lab /var/tmp; do mount -t tmpfs -o mode=755 tmpfs $d; done"
                " && mkdir -p /run/lock /var/log/nginx")
        subprocess.run(["ip", "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b", "netns",
                        str(self.anchor.pid)], check=True)
        subprocess.run(["ip", "addr", "add", f"{ADDRESS}/24", "dev", "veth-a"], check=True)
        subprocess.run(["ip", "link", "set", "veth-a", "up"], check=True)
        self.sh(f"ip link set lo up && ip addr add {PEER_ADDRESS}/24 dev veth-b && ip link set veth-b up")

    # --------------------------------------------------------------- services
    def messages_path(self) -> Path:
        return Path("/var/log") / self.spec.get("messages", "messages")

    def start_rsyslog(self) -> None:
        """The peer's rsyslog, its socket bound at /dev/log in the peer's
        mount namespace; the kernel's lines only if they are the peer's."""
        style = self.spec.get("syslog", "traditional")
        msgs = self.messages_path()
        routing = (f"*.*;auth,authpriv.none {msgs}\n" if msgs.name == "syslog" else
                   f"*.info;mail.none;authpriv.none;cron.none {msgs}\ncron.* {msgs.parent / 'cron'}\n")
        conf = (f'global(workDirectory="/run" processInternalMessages="on")\n'
                'module(load="imuxsock" SysSock.Name="/run/devlog")\n'
                + ('module(load="imklog")\n' if self.spec.get("kernel_log") else "")
                + f"$ActionFileDefaultTemplate {RSYSLOG_TEMPLATES[style]}\n" + routing)
        self.sh(f"cat > /run/rsyslog.conf <<'EOF'\n{conf}EOF")
        self.rsyslog = subprocess.Popen(self.enter + ["rsyslogd", "-n", "-f", "/run/rsyslog.conf", "-i",
                                                      "/run/rsyslogd.pid"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for _ in range(100):
            if (self.root / "run/devlog").exists():
                break
            time.sleep(0.05)
        self.sh("touch /dev/log 2>/dev/null; mount --bind /run/devlog /dev/log")

    def sa_path(self, t0: float) -> Path:
        return Path(self.spec.get("sa_dir", "/var/log/sa")) / f"sa{time.strftime('%d', time.localtime(t0))}"

    def start_sadc(self, t0: float, seconds: int) -> None:
        self.t0 = t0
        path = self.sa_path(t0)
        self.sh(f"mkdir -p {path.parent}")
        proc = subprocess.Popen(self.enter + [which("sadc"), "-S", "XALL", "1", str(seconds), str(path)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(("sadc", proc))

    def start_backend(self, spec: dict) -> str:
        port = int(spec["port"])
        python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else "python3"
        argv = [python, "/srv/app/backend.py", "--port", str(port), "--bind", PEER_ADDRESS,
                "--name", spec.get("name", "api-backend"), "--delay", str(spec.get("delay", 0.0))]
        for key in ("work_ms", "db", "leak_db_every", "fork_export_after", "leak_fds", "threads_per_request"):
            if spec.get(key):
                argv += ["--" + key.replace("_", "-"), str(spec[key])]
        prefix = [f"ulimit -n {int(spec['nofile'])}"] if spec.get("nofile") else []
        if spec.get("cgroup"):
            prefix.append(self.cgroups[spec["cgroup"]].enter_command())
        shell = " && ".join(prefix + ['exec "$@"'])
        proc = subprocess.Popen(self.enter + ["sh", "-c", shell, "sh", *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        tag = spec.get("syslog_tag", spec.get("name", "api-backend"))
        logger = subprocess.Popen(self.enter + ["logger", "-t", f"{tag}[{proc.pid}]"], stdin=proc.stdout)
        proc.stdout.close()
        self.backends[port] = proc
        self.loggers.append(logger)
        wait_listening(port, host=PEER_ADDRESS)
        return f"{self.hostname}: backend {spec.get('name', 'api-backend')} on {PEER_ADDRESS}:{port} (pid {proc.pid})"

    def backend_spec(self, port: int) -> dict:
        return next(b for b in self.spec.get("backend", []) if int(b["port"]) == port)

    def stop_backend(self, port: int) -> str:
        proc = self.backends.get(port)
        if proc and proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
        return f"{self.hostname}: backend on port {port} stopped"

    def run(self, argv: list[str], tag: str | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(self.enter + ["sh", "-c", 'cd /srv/ops && exec "$@"', "sh", *argv],
                                stdout=subprocess.PIPE if tag else subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                start_new_session=True)
        if tag:
            logger = subprocess.Popen(self.enter + ["logger", "-t", f"{tag}[{proc.pid}]"], stdin=proc.stdout)
            proc.stdout.close()
            self.loggers.append(logger)
        self.procs.append((argv[0], proc))
        return proc

    def ps(self) -> str:
        style = self.spec.get("ps_style", "aux")
        name = f"ps-{style}-{time.strftime('%H%M%S')}.txt"
        argv = STYLES[style][1:]
        head = " | head -25" if style == "top" else ""
        self.sh(f"python3 /srv/app/hostps.py {' '.join(argv)}{head} > /srv/ops/{name}")
        return f"{self.hostname}: ps snapshot {name}"

    def dmesg(self) -> None:
        if self.spec.get("kernel_log") and self.spec.get("dmesg", "raw") != "none":
            flag = " -T" if self.spec.get("dmesg") == "human" else ""
            self.sh(f"dmesg{flag} > /srv/ops/dmesg.txt")

    def files(self) -> list[tuple[str, Path]]:
        """(name in the archive, file) of what the operator receives from
        the peer, read through its mount namespace."""
        out = []
        sa = self.root / str(self.sa_path(self.t0)).lstrip("/")
        if sa.exists():
            out.append((sa.name, sa))
        msgs = self.root / str(self.messages_path()).lstrip("/")
        if msgs.exists() and msgs.stat().st_size:
            out.append((msgs.name, msgs))
        for p in sorted((self.root / "srv/ops").iterdir()):
            if p.suffix == ".txt":
                out.append((p.name, p))
        return out

    def stop(self) -> None:
        for port in list(self.backends):
            self.stop_backend(port)
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, 15)
                    proc.wait(5)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass

    def stop_rsyslog(self) -> None:
        time.sleep(1.5)     # imklog polls; let the last kernel lines reach the file
        if self.rsyslog and self.rsyslog.poll() is None:
            self.rsyslog.terminate()
            self.rsyslog.wait(10)

    def close(self) -> None:
        for proc in [p for _, p in self.procs] + list(self.backends.values()) + [self.rsyslog]:
            if proc is not None and proc.poll() is None:
                try:
                    os.killpg(proc.pid, 9)
                except ProcessLookupError:
                    pass
        if self.anchor and self.anchor.poll() is None:
            self.anchor.kill()
            self.anchor.wait()

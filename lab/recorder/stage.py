"""The staged host: runs inside the recording's own mount, UTS and network
namespaces (``python -m lab record`` puts it there), so that its host name,
/etc, /var/log, /srv, loopback, sysctls of the network stack and nftables
are its own, while the kernel, the CPUs, the memory and the disks are the
machine's, as they are for any host.

Layout of the staged host, as a Debian or RHEL host has it:
``/etc/nginx/nginx.conf``, ``/var/log/{messages|syslog}``,
``/var/log/nginx/error.log``, ``/var/log/{sa|sysstat}/saDD``, the service
programs in ``/srv/app``, the web root in ``/srv/www``, disks or loop
filesystems mounted under ``/srv/data``, and the operator's pasted outputs
(load tests, ps) in ``/srv/ops``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from lab.recorder import case as case_files
from lab.recorder.machine import Borrowed, device_numbers, settle_writeback, version_of
from lab.recorder.peer import Peer
from lab.recorder.probes import LogWatch, Probes
from lab.recorder.scenario import Scenario
from lab.recorder.services import Backend, Nginx, Rsyslog, Sadc, drain_kernel_log
from lab.recorder.background import Background
from lab.recorder.background import settings as background_settings
from lab.recorder.steps import OPS_DIR, StepRunner

LAB = Path(__file__).resolve().parent.parent
SETTLE = 3.0     # seconds after sadc's last record before the logs are collected
WARM = 20.0      # seconds the host's ordinary work runs before the recording begins
SA_1S_DIR = Path("/var/lib/lab/sysstat-1s")   # the lab's 1 s file, when the host keeps its own from cron


class Service:
    """stop()/start() of a named service of the host."""

    def __init__(self, stop, start):
        self.stop, self.start = stop, start


class Host:
    def __init__(self, scenario: Scenario, work: Path, out: Path):
        self.scenario = scenario
        self.work = work
        self.out = out
        self.borrowed = Borrowed(work)
        self.cgroups: dict = {}
        self.nginx: Nginx | None = None
        self.backends: dict[int, Backend] = {}
        self.timeline: list[tuple[float, str]] = []
        self.t0 = time.time()
        self.variables: dict = {}
        self.devices: dict = {}
        self.tool_versions: set[str] = set()
        self.background = Background(self, background_settings(scenario))
        self.collectors: dict[str, subprocess.Popen] = {}
        self.peer = Peer(scenario.peer, self.cgroups) if scenario.peer else None

    def mark(self, text: str, at: float | None = None) -> None:
        at = at if at is not None else time.time()
        self.timeline.append((at, text))
        print(f"  {at - self.t0:6.1f}s  {text}", flush=True)

    # ----------------------------------------------------------------- setup
    def setup(self) -> None:
        sc, h = self.scenario, self.scenario.host
        subprocess.run(["mount", "--make-rprivate", "/"], check=True)
        upper, wk = self.work / "etc", self.work / "etc-work"
        upper.mkdir()
        wk.mkdir()
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        f"lowerdir=/etc,upperdir={upper},workdir={wk}", "/etc"], check=True)
        for d in ("/var/log", "/srv", "/var/tmp", "/var/crash", "/var/lib/lab", "/var/spool/cron", "/run"):
            Path(d).mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", d], check=True)
        Path("/run/lock").mkdir(exist_ok=True)
        tz = h.get("tz", "UTC")
        os.environ["TZ"] = tz
        time.tzset()
        Path("/etc/timezone").write_text(tz + "\n")
        Path("/etc/localtime").unlink(missing_ok=True)
        Path("/etc/localtime").symlink_to(f"/usr/share/zoneinfo/{tz}")
        hostname = h["hostname"]
        subprocess.run(["hostname", hostname], check=True)
        Path("/etc/hostname").write_text(hostname + "\n")
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        self.tz = tz
        for d in ("/srv/app", "/srv/www", "/srv/ops", "/srv/data"):
            Path(d).mkdir(parents=True, exist_ok=True)
        for prog in (LAB / "programs").iterdir():
            if prog.is_file() and prog.name != "__init__.py":
                shutil.copy(prog, Path("/srv/app") / prog.name)
        # every `ps` run on the host shows the host (lab/programs/hostps.py)
        Path("/srv/app/host-root.pid").write_text(f"{os.getpid()}\n")
        Path("/srv/app/bin").mkdir()
        Path("/srv/app/bin/ps").write_text('#!/bin/sh\nexec python3 /srv/app/hostps.py "$@"\n')
        for tool in Path("/srv/app").iterdir():      # the host's commands (collect-diag, render-frames...)
            if tool.is_file() and not tool.suffix and os.access(tool, os.X_OK):
                shutil.move(tool, Path("/srv/app/bin") / tool.name)
        for tool in Path("/srv/app/bin").iterdir():
            tool.chmod(0o755)
        os.environ["PATH"] = "/srv/app/bin:" + os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        for path, text in sc.files.items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
        # the machine's disk, for scenarios that load it: a directory of the
        # recording's work folder (on the real disk) bound at /srv/data
        disk = self.work / "data"
        disk.mkdir()
        subprocess.run(["mount", "--bind", str(disk), "/srv/data"], check=True)
        self.devices["/srv/data"] = _device_of(str(disk))
        for i, fs in enumerate(sc.filesystems):
            mount = fs.get("mount", f"/srv/data{i or ''}")
            Path(mount).mkdir(parents=True, exist_ok=True)
            if fs.get("fstype") == "tmpfs":     # memory, not a disk: a tmpfs of the host's own
                subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={fs.get('size', '50%')},mode=1777", "tmpfs",
                                mount], check=True)
                continue
            dev = self.borrowed.loop_filesystem(fs.get("size", "128M"), fs.get("fstype", "ext4"), fs.get("inodes"))
            subprocess.run(["mount", dev, mount], check=True)
            os.chmod(mount, 0o1777)
            self.devices[mount] = device_numbers(dev)
        if h.get("swap"):
            self.borrowed.swap(h["swap"])
        if h.get("hung_task_timeout"):
            self.borrowed.sysctl("kernel.hung_task_timeout_secs", h["hung_task_timeout"])
            self.borrowed.sysctl("kernel.hung_task_warnings", 10)
        for name, value in (h.get("sysctl") or {}).items():
            self.borrowed.sysctl(name, value)
        for name, limits in sc.cgroups.items():
            self.cgroups[name] = self.borrowed.cgroup(name, limits, self.devices)
        if self.peer:
            self.peer.setup(tz)
        mem = {line.split(":")[0]: int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()}
        port = (sc.nginx or {}).get("port", 8080)
        self.variables = {
            "port": port, "url": f"http://127.0.0.1:{port}/", "api": f"http://127.0.0.1:{port}/api/",
            "ncpu": os.cpu_count(), "avail_mb": mem["MemAvailable"] // 1024, "data": "/srv/data",
            "backend": sc.backends[0]["port"] if sc.backends else 0,
        }

    def _messages_path(self) -> Path:
        return Path("/var/log") / self.scenario.host.get("messages", "messages")

    def _sa_path(self) -> Path:
        """The 1 s file (beside the host's own files from cron, on a long
        recording)."""
        day = time.strftime("%d", time.localtime(self.t0))
        if self.background.bg["sadc_cron"]:
            return SA_1S_DIR / f"sa{day}"
        return Path(self.scenario.host.get("sa_dir", "/var/log/sa")) / f"sa{day}"

    # --------------------------------------------------------------- services
    def resolve(self, target: str) -> list[int]:
        if target == "nginx-worker":
            return self.nginx.workers()[:1]
        if target == "nginx-workers":
            return self.nginx.workers()
        if target == "nginx-master":
            return [self.nginx.master_pid()]
        if target.startswith("backend:"):
            b = self.backends[int(target.split(":")[1])]
            return [b.proc.pid] if b.proc and b.proc.poll() is None else []
        if target.startswith("peer:"):      # a process of the peer by its name
            uts = os.readlink(f"/proc/{self.peer.anchor.pid}/ns/uts")
            out = subprocess.run(["pgrep", "-x", target[5:]], capture_output=True, text=True).stdout
            return [int(p) for p in out.split() if _uts_of(int(p)) == uts]
        out = subprocess.run(["pgrep", "-x", target], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def service(self, name: str) -> Service:
        if name == "nginx":
            return Service(self.nginx.stop, self.nginx.start)
        if name.startswith("backend:"):
            b = self.backends[int(name.split(":")[1])]
            return Service(b.stop, b.start)
        if name.startswith("peer:backend:"):
            port = int(name.rsplit(":", 1)[1])
            return Service(lambda: self.peer.stop_backend(port),
                           lambda: self.peer.start_backend(self.peer.backend_spec(port)))
        raise ValueError(f"no service named {name!r} (nginx, backend:PORT)")

    # -------------------------------------------------------------------- run
    def record(self) -> Path:
        try:
            return self._record()
        finally:
            if self.peer:
                self.peer.close()
            self.borrowed.close()

    def _record(self) -> Path:
        sc, h = self.scenario, self.scenario.host
        duration = int(h.get("duration", 120))
        self.setup()
        settle_writeback()
        self.tool_versions = tool_versions(sc)
        drain_kernel_log()
        peer_kernel = bool(self.peer and self.peer.spec.get("kernel_log"))
        rsyslog = Rsyslog(h.get("syslog", "traditional"), self._messages_path(), Path("/srv"), kernel=not peer_kernel) \
            if h.get("syslog", "traditional") != "none" else None
        if self.peer:
            self.peer.start_rsyslog()
        probes = Probes()
        probes.start()
        watch = None
        logs = [self._messages_path(), Path("/var/log/nginx/error.log")]
        if self.peer:
            logs.append(self.peer.root / str(self.peer.messages_path()).lstrip("/"))
        if sc.truth.get("sign_log"):
            watch = LogWatch(logs, sc.truth["sign_log"])
            watch.start()
        runner = StepRunner(self)
        before = [st for st in sc.steps if st.at < 0]
        if before:   # the host as it was when the recording began: services already running
            self.t0 = time.time() - min(st.at for st in before)
            for st in before:
                self._sleep_until(st.at, runner)
                self.mark(f"(before the recording) {getattr(runner, st.action)(st)}")
            self._sleep_until(0, runner)
        running = self.background.on or self.background.bg["sadc_cron"]
        if running:   # the host was running: its services and its ordinary work began before
            self.t0 = time.time()
            self._start_services("(before the recording) ")
            for text in self.background.start():
                self.mark(f"(before the recording) {text}")
            time.sleep(WARM)
        self.t0 = time.time()
        sadc = Sadc(self._sa_path(), duration)
        self.mark(f"sadc -S XALL 1 {duration} {self._sa_path()} started")
        if self.peer:
            self.peer.start_sadc(self.t0, duration)
            self.mark(f"{self.peer.hostname}: sadc -S XALL 1 {duration} {self.peer.sa_path(self.t0)} started")
        try:
            if not running:
                self._start_services()
            schedule = sorted([(float(t), "ps-host", None) for t in h.get("ps", [])] +
                              [(float(t), "ps-peer", None) for t in (sc.peer or {}).get("ps", [])] +
                              [(s.at, "step", s) for s in sc.steps if s.at >= 0] +
                              [(t, "background", what) for t, what in self.background.due()] +
                              [(float(t), "collector", name) for name, t in sc.collector.items()],
                              key=lambda x: x[0])
            faults: list[float] = []
            for at, what, step in schedule:
                self._sleep_until(at, runner)
                now = time.time()
                if what == "ps-host":
                    self.mark(runner.ps(), now)
                    continue
                if what == "ps-peer":
                    self.mark(self.peer.ps(), now)
                    continue
                if what == "background":
                    self.mark(self.background.run_timed(step), now)
                    continue
                if what == "collector":
                    self.mark(self._collect(step), now)
                    continue
                text = getattr(runner, step.action)(step)
                if step.fault:
                    faults.append(now)
                self.mark(("FAULT: " if step.fault else "") + (f"{step.name}: " if step.name else "") + text, now)
            self._sleep_until(duration, runner)
            runner.close()
            self.background.stop()
            if self.nginx:
                self.nginx.stop()
            for b in self.backends.values():
                b.stop()
            if self.peer:
                self.peer.stop()
            sadc.wait(SETTLE + 5)
            self.mark("sadc finished; services stopped")
        finally:
            runner.close()
            self.background.stop()
            probes.stop()
            if watch:
                watch.stop()
        sos = self._collected_sos()
        dmesg = self._dmesg() if not peer_kernel else None
        if self.peer:
            self.peer.dmesg()
            self.peer.stop_rsyslog()
        if rsyslog:
            rsyslog.stop()
        if h.get("sos"):
            sos = self._sos()
        return case_files.write(self, probes, watch, faults, dmesg, sos, runner)

    def _start_services(self, when: str = "") -> None:
        sc = self.scenario
        if self.peer:      # the backend host first: the proxy sends to it
            for spec in self.peer.spec.get("backend", []):
                self.mark(f"{when}{self.peer.start_backend(spec)}")
        nginx_cfg = sc.nginx if sc.nginx is not None else ({} if self.background.on else None)
        if nginx_cfg is None:
            return
        for b in sc.backends:
            be = Backend(b, self.cgroups)
            be.start()
            self.backends[be.port] = be
            self.mark(f"{when}backend {b.get('name', 'api-backend')} on 127.0.0.1:{be.port} (pid {be.proc.pid})")
        self.nginx = Nginx(nginx_cfg)
        self.nginx.start()
        self.mark(f"{when}nginx started: master {self.nginx.master_pid()}, workers "
                  f"{' '.join(map(str, self.nginx.workers()))}")

    def _collect(self, name: str) -> str:
        """A collector gathers the files after the incident, while sadc
        still records (its own CPU is in the data)."""
        env = {**os.environ, "PATH": "/srv/app/bin:" + os.environ.get("PATH", "")}
        if name == "sos":
            self.collectors[name] = subprocess.Popen(self._sos_argv(), env=self._sos_env(),
                                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                     start_new_session=True)
            return f"collector: `sos report` started (pid {self.collectors[name].pid})"
        argv = {"script": ["collect-diag", str(OPS_DIR)],
                "agent": ["python3", "/srv/app/agent.py", "--dump", str(OPS_DIR)]}[name]
        self.collectors[name] = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.DEVNULL, start_new_session=True, cwd="/srv/ops")
        return f"collector: `{' '.join(argv)}` started (pid {self.collectors[name].pid})"

    def _collected_sos(self) -> Path | None:
        for name, proc in self.collectors.items():
            try:
                proc.wait(600)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
            self.mark(f"collector {name} finished (exit {proc.returncode})")
        if "sos" not in self.collectors:
            return None
        found = sorted(Path("/var/tmp").glob("sosreport-*.tar.xz"))
        return found[-1] if found else None

    def _sleep_until(self, offset: float, runner: StepRunner) -> None:
        while True:
            now = time.time()
            for text in runner.due_undo(now - self.t0):
                self.mark(text)
            left = self.t0 + offset - now
            if left <= 0:
                return
            time.sleep(min(left, 0.25))

    def _dmesg(self) -> Path | None:
        style = self.scenario.host.get("dmesg", "raw")
        if style == "none":
            return None
        argv = ["dmesg"] + (["-T"] if style == "human" else [])
        path = OPS_DIR / "dmesg.txt"
        path.write_text(subprocess.run(argv, capture_output=True, text=True).stdout)
        return path

    def _sos(self) -> Path | None:
        """A real ``sos report`` of the staged host, taken after the
        incident as an operator would; in a PID namespace of its own so that
        its process listing holds the host's and not the machine's."""
        subprocess.run(self._sos_argv(), env=self._sos_env(), check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        found = sorted(Path("/var/tmp").glob("sosreport-*.tar.xz"))
        return found[-1] if found else None

    @staticmethod
    def _sos_env() -> dict:
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
                "TZ": os.environ.get("TZ", "UTC")}

    @staticmethod
    def _sos_argv() -> list[str]:
        plugins = "kernel,nginx,logs,sar,process,host,memory,date,processor,filesys,block,networking,cron"
        return ["unshare", "--pid", "--fork", "--mount-proc", "sos", "report", "--batch", "--quiet",
                "--tmp-dir", "/var/tmp", "-z", "xz", "-o", plugins]


def tool_versions(sc: Scenario) -> set[str]:
    """The version lines of the programs the scenario runs."""
    used = {"sadc"}
    bg = background_settings(sc)
    if sc.host.get("syslog", "traditional") != "none":
        used.add("rsyslogd")
    if sc.nginx is not None or bg["profile"] != "none":
        used.add("nginx")
    if sc.host.get("sos") or "sos" in sc.collector:
        used.add("sos")
    if bg["profile"] != "none":
        used |= {"wrk"} | ({"cron"} if bg["cron"] else set()) | ({"logrotate"} if bg["logrotate"] else set()) \
            | ({"tar", "gzip"} if bg["backup"] else set())
    if bg["sadc_cron"]:
        used.add("cron")
    for s in sc.steps:
        if s.action in ("run", "load"):
            prog = str(s.value).split()[0]
            if prog in ("sh", "python3", "/usr/bin/python3") and s.action == "run":
                prog = next((w for w in ("convert", "supervisord", "supervisorctl", "zstd", "curl")
                             if w in str(s.value)), prog)
            if prog in ("wrk", "ab", "stress-ng", "fio", "dd", "xz", "tar", "gzip", "truncate", "touch", "postgres",
                        "supervisord", "supervisorctl", "psql", "pgbench", "convert", "zstd", "sqlite3", "node",
                        "perl", "curl"):
                used.add(prog)
            if "pg-host.sh" in str(s.value):
                used.add("postgres")
    return {version_of(p) for p in used}


def _uts_of(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/uts")
    except OSError:
        return ""


def _device_of(path: str) -> str:
    st = os.stat(path)
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"

"""The programs a staged host runs for the whole recording: rsyslog, sadc,
nginx and the Python backends nginx proxies to.  Each writes where it
writes on a real host (``/var/log/...``) inside the recording's mount
namespace."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from lab.recorder.machine import which

LAB = Path(__file__).resolve().parent.parent

RSYSLOG_TEMPLATES = {
    # /var/log/messages as RHEL and older Debian write it: "Nov 24 13:02:51 host tag: text"
    "traditional": "RSYSLOG_TraditionalFileFormat",
    # rsyslog's high-precision format: "2026-11-24T13:02:51.123456+00:00 host tag: text"
    "precise": "RSYSLOG_FileFormat",
}


def drain_kernel_log() -> None:
    """Read away what the kernel has queued for /proc/kmsg (an earlier
    boot's or recording's lines), so that rsyslog's imklog starts with this
    recording; and clear the ring buffer ``dmesg`` prints."""
    try:
        fd = os.open("/proc/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        while True:
            try:
                if not os.read(fd, 65536):
                    break
            except BlockingIOError:
                break
    finally:
        os.close(fd)
    subprocess.run(["dmesg", "--clear"], check=False)


def _routing(messages: Path) -> str:
    """Debian's rules when the host's log is /var/log/syslog (cron's lines
    in it), Red Hat's when it is /var/log/messages (cron's in /var/log/cron)."""
    if messages.name == "syslog":
        return f"*.*;auth,authpriv.none {messages}\n"
    return f"*.info;mail.none;authpriv.none;cron.none {messages}\ncron.* {messages.parent / 'cron'}\n"


class Rsyslog:
    def __init__(self, style: str, messages: Path, run: Path, kernel: bool = True):
        self.messages = messages
        conf = run / "rsyslog.conf"
        (run / "rsyslog").mkdir(parents=True, exist_ok=True)
        conf.write_text(
            f'global(workDirectory="{run}/rsyslog")\n'
            'module(load="imuxsock")\n'
            + ('module(load="imklog")\n' if kernel else "") +
            f"$ActionFileDefaultTemplate {RSYSLOG_TEMPLATES[style]}\n" + _routing(messages))
        self.proc = subprocess.Popen(["rsyslogd", "-n", "-f", str(conf), "-i", str(run / "rsyslogd.pid")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if Path("/dev/log").exists():
                break
            time.sleep(0.05)

    def stop(self) -> None:
        time.sleep(1.5)  # imklog polls; let the last kernel lines reach the file
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        try:
            if Path("/dev/log").is_socket():
                Path("/dev/log").unlink()
        except OSError:
            pass


class Sadc:
    """``sadc -S XALL 1 N saDD``: one record a second for the recording."""

    def __init__(self, path: Path, seconds: int):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([which("sadc"), "-S", "XALL", "1", str(seconds), str(path)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait(5)


# -------------------------------------------------------------------- nginx
NGINX_DEFAULTS = {
    "port": 8080, "worker_processes": 2, "worker_connections": 1024, "worker_rlimit_nofile": None,
    "error_log_level": "warn", "backends": [], "upstream_keepalive": 0, "proxy_read_timeout": "60s",
    "proxy_connect_timeout": "5s", "core_dumps": False, "access_log": False, "keepalive_timeout": "65s",
    "max_fails": 1, "proxy_http11": False,
}


def nginx_conf(cfg: dict) -> str:
    """nginx.conf as a Debian host would have it, from the scenario's
    [nginx] table."""
    c = {**NGINX_DEFAULTS, **cfg}
    lines = ["user www-data;", f"worker_processes {c['worker_processes']};", "pid /run/nginx.pid;",
             f"error_log /var/log/nginx/error.log {c['error_log_level']};"]
    if c["worker_rlimit_nofile"]:
        lines.append(f"worker_rlimit_nofile {c['worker_rlimit_nofile']};")
    if c["core_dumps"]:
        lines += ["worker_rlimit_core 512m;", "working_directory /var/crash/nginx;"]
    lines += ["", "events {", f"    worker_connections {c['worker_connections']};", "}", "", "http {",
              "    include /etc/nginx/mime.types;", "    default_type application/octet-stream;",
              f"    keepalive_timeout {c['keepalive_timeout']};",
              f"    access_log {c['access_log'] if isinstance(c['access_log'], str) else '/var/log/nginx/access.log'};"
              if c["access_log"] else "    access_log off;"]
    if c["backends"]:
        lines.append("    upstream app_backend {")
        lines += [f"        server {b} max_fails={c['max_fails']} fail_timeout=10s;" for b in c["backends"]]
        if c["upstream_keepalive"]:
            lines.append(f"        keepalive {c['upstream_keepalive']};")
        lines.append("    }")
    lines += ["    server {", f"        listen 127.0.0.1:{c['port']};", "        server_name app.lab.example;",
              "        root /srv/www;", "        location / { }"]
    if c["backends"]:
        lines += ["        location /api/ {", "            proxy_pass http://app_backend;",
                  f"            proxy_connect_timeout {c['proxy_connect_timeout']};",
                  f"            proxy_read_timeout {c['proxy_read_timeout']};"]
        if c["upstream_keepalive"] or c["proxy_http11"]:
            # HTTP/1.1 to the backend; without `keepalive` in the upstream
            # block nginx closes each upstream connection itself
            lines += ["            proxy_http_version 1.1;", '            proxy_set_header Connection "";']
        lines.append("        }")
    lines += ["    }", "}", ""]
    return "\n".join(lines)


class Nginx:
    def __init__(self, cfg: dict):
        self.cfg = dict(cfg)
        self.proc: subprocess.Popen | None = None
        Path("/srv/www").mkdir(parents=True, exist_ok=True)
        Path("/srv/www/index.html").write_text("<html><body>" + "x" * 2048 + "</body></html>\n")
        Path("/srv/www/big.bin").write_bytes(os.urandom(1 << 20))
        Path("/var/log/nginx").mkdir(parents=True, exist_ok=True)
        if self.cfg.get("core_dumps"):
            Path("/var/crash/nginx").mkdir(parents=True, exist_ok=True)
            os.chown("/var/crash/nginx", 33, 33)
        self.write_conf()

    @property
    def port(self) -> int:
        return int(self.cfg.get("port", NGINX_DEFAULTS["port"]))

    def write_conf(self) -> None:
        Path("/etc/nginx/nginx.conf").write_text(nginx_conf(self.cfg))

    def start(self) -> None:
        self.proc = subprocess.Popen(["nginx", "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        wait_listening(self.port)

    def master_pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    def workers(self) -> list[int]:
        pid = self.master_pid()
        if pid is None:
            return []
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
        return sorted(int(p) for p in out.split())

    def reload(self, changes: dict) -> str:
        self.cfg.update(changes)
        self.write_conf()
        return subprocess.run(["nginx", "-s", "reload"], capture_output=True, text=True).stderr.strip()

    def stop(self) -> None:
        if self.master_pid() is None:
            return
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def wait_listening(port: int, timeout: float = 10.0, host: str = "127.0.0.1",
                   proc: subprocess.Popen | None = None) -> None:
    """Until something accepts on ``port``, or ``proc`` (the service
    started) has exited: a service that cannot bind its port (a process it
    forked earlier still holds it) is what some scenarios stage."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            return
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout:g} s")


class Backend:
    """``lab/programs/backend.py`` as the service nginx proxies to."""

    def __init__(self, spec: dict, cgroups: dict):
        self.spec = spec
        self.port = int(spec["port"])
        self.cgroups = cgroups
        self.proc: subprocess.Popen | None = None
        self.logger: subprocess.Popen | None = None

    def start(self) -> None:
        s = self.spec
        # the host's own Python (Debian's, with its python3-psycopg2), as its services run on it
        python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else "python3"
        argv = [python, "/srv/app/backend.py", "--port", str(self.port), "--name", s.get("name", "api-backend"),
                "--delay", str(s.get("delay", 0.0))]
        for key in ("work_ms", "db", "leak_db_every", "fork_export_after"):
            if s.get(key):
                argv += ["--" + key.replace("_", "-"), str(s[key])]
        if s.get("leak_fds"):
            argv += ["--leak-fds", str(s["leak_fds"])]
        if s.get("call"):
            argv += ["--call", str(s["call"])]
        if s.get("threads_per_request"):
            argv += ["--threads-per-request", str(s["threads_per_request"])]
        prefix = []
        if s.get("nofile"):
            prefix.append(f"ulimit -n {int(s['nofile'])}")
        if s.get("cgroup"):
            prefix.append(self.cgroups[s["cgroup"]].enter_command())
        shell = " && ".join(prefix + ['exec "$@"'])
        tag = s.get("syslog_tag", s.get("name", "api-backend"))
        self.proc = subprocess.Popen(["sh", "-c", shell, "sh", *argv], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        # a service's output goes to syslog, as a unit's would go to the journal
        self.logger = subprocess.Popen(["logger", "-t", f"{tag}[{self.proc.pid}]"], stdin=self.proc.stdout)
        self.proc.stdout.close()
        wait_listening(self.port, proc=self.proc)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.logger:
            try:
                self.logger.wait(5)
            except subprocess.TimeoutExpired:
                self.logger.kill()

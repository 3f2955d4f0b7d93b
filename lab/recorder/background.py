"""The ordinary work of a production host, which scenarios run under unless
they say ``[background] profile = "none"``:

- **traffic** through nginx whose rate rises and falls (a sine of
  ``period`` seconds, ``swing`` around ``rate`` requests a second), from
  ``wrk`` with a Lua schedule; the clients stand for other machines, so
  they are left out of the host's process table (``/srv/app/elsewhere.pids``);
- **cron** (the real daemon, the host's ``/etc/crontab``) running a job
  every minute (``minutely.py``: a sitemap and a queue check), its lines in
  syslog as cron writes them; on a long recording also ``sadc`` every
  minute and Debian's ``debian-sa1`` every 10 minutes, as a host keeps
  them;
- a monitoring **agent** polling /proc every 10 s (``agent.py``);
- **logrotate** (the real one, Debian's rules for nginx and rsyslog) and a
  **backup** (``tar -czf`` of /usr/share into /srv/data) at the seconds
  given.

Everything here is started before the recording begins (the host was
running), and stopped when it ends.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

PROFILES = ("production", "none")
DEFAULTS = {"profile": "production", "rate": 30.0, "swing": 0.6, "period": 300.0, "connections": 8,
            "cron": True, "agent": True, "logrotate": [], "backup": [], "sadc_cron": False}
BACKGROUND_KEYS = set(DEFAULTS)
SA_60S_DIR = Path("/var/lib/lab/sysstat-1min")      # sadc every minute from cron
SA_600S_DIR = Path("/var/log/sysstat")              # debian-sa1 every 10 minutes: the host's own files

TRAFFIC_LUA = """-- the site's visitors: about {rate:g} requests a second over {conns} connections,
-- rising and falling by {swing:.0%} over {period:g} s
local start = os.time()
local paths = {{{paths}}}
local n = 0
request = function()
    n = n + 1
    return wrk.format("GET", paths[(n % #paths) + 1])
end
function delay()
    local t = os.time() - start
    local rate = {rate:g} * (1 + {swing:g} * math.sin(2 * math.pi * t / {period:g}))
    if rate < 1 then rate = 1 end
    return 1000 * {conns} / rate
end
"""

LOGROTATE_CONF = """/var/log/nginx/*.log {
    daily
    missingok
    rotate 14
    notifempty
    create 0640 www-data adm
    sharedscripts
    postrotate
        [ -s /run/nginx.pid ] && kill -USR1 `cat /run/nginx.pid`
    endscript
}
/var/log/messages /var/log/syslog /var/log/cron {
    daily
    missingok
    rotate 7
    notifempty
    sharedscripts
    postrotate
        [ -s /srv/rsyslogd.pid ] && kill -HUP `cat /srv/rsyslogd.pid`
    endscript
}
"""


def settings(sc) -> dict:
    """The scenario's background, its defaults filled in."""
    return {**DEFAULTS, **(sc.background or {})}


def crontab(bg: dict) -> str:
    path = "PATH=/srv/app/bin:/usr/lib/sysstat:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    lines = ["# /etc/crontab: system-wide crontab", "SHELL=/bin/sh", path, "",
             "# m h dom mon dow user  command"]
    if bg["cron"]:
        lines.append("*  *  *   *   *  root  python3 /srv/app/minutely.py > /dev/null 2>&1")
    if bg["sadc_cron"]:
        lines += [f"*  *  *   *   *  root  /usr/lib/sysstat/sadc -F -L -S DISK 1 1 {SA_60S_DIR}",
                  "5-55/10 * * * *  root  command -v debian-sa1 > /dev/null && debian-sa1 1 1"]
    return "\n".join(lines) + "\n"


class Background:
    def __init__(self, host, bg: dict):
        self.host = host
        self.bg = bg
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.traffic: subprocess.Popen | None = None

    @property
    def on(self) -> bool:
        return self.bg["profile"] != "none"

    def start(self) -> list[str]:
        """Start the host's ordinary work; returns what was started."""
        if not self.on and not self.bg["sadc_cron"]:
            return []
        done = []
        if self.bg["cron"] or self.bg["sadc_cron"]:
            done.append(self._cron())
        if self.on and self.bg["agent"]:
            done.append(self._run("telemetry-agent", ["python3", "/srv/app/agent.py", "--every", "10"],
                                  tag="telemetry-agent"))
        if self.on and self.host.nginx is not None:
            done.append(self._traffic())
        return done

    def _cron(self) -> str:
        Path("/etc/crontab").write_text(crontab(self.bg))
        os.chmod("/etc/crontab", 0o644)
        for d in ("/etc/cron.d", "/var/spool/cron/crontabs"):
            Path(d).mkdir(parents=True, exist_ok=True)
        for old in Path("/etc/cron.d").iterdir():      # the machine's own entries are not the host's
            old.unlink()
        if self.bg["sadc_cron"]:
            SA_60S_DIR.mkdir(parents=True, exist_ok=True)
            SA_600S_DIR.mkdir(parents=True, exist_ok=True)
            Path("/etc/default/sysstat").write_text('ENABLED="true"\n')
        proc = subprocess.Popen(["cron", "-f"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        self.procs.append(("cron", proc))
        return f"cron started (pid {proc.pid}): " + "; ".join(
            ln.split("root", 1)[1].strip() for ln in crontab(self.bg).splitlines() if " root " in ln)

    def _run(self, name: str, argv: list[str], tag: str) -> str:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PATH": "/srv/app/bin:" + os.environ.get("PATH", "")})
        logger = subprocess.Popen(["logger", "-t", f"{tag}[{proc.pid}]"], stdin=proc.stdout)
        proc.stdout.close()
        self.procs += [(name, proc), (f"logger for {name}", logger)]
        return f"{name} started (pid {proc.pid})"

    def _traffic(self) -> str:
        bg, port = self.bg, self.host.nginx.port
        # the site as its visitors ask for it: pages, the sitemap cron rebuilds, the API behind nginx
        subprocess.run(["python3", "/srv/app/minutely.py"], check=False)
        paths = ["/", "/", "/index.html", "/sitemap.xml"] + (["/api/items"] if self.host.backends else [])
        script = Path("/srv/app/traffic.lua")
        script.write_text(TRAFFIC_LUA.format(rate=bg["rate"], conns=bg["connections"], swing=bg["swing"],
                                             period=bg["period"], paths=", ".join(f'"{p}"' for p in paths)))
        argv = ["wrk", "-t1", f"-c{bg['connections']}", "-d24h", "--timeout", "10s", "-s", str(script),
                f"http://127.0.0.1:{port}/"]
        self.traffic = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        self.procs.append(("traffic", self.traffic))
        with open("/srv/app/elsewhere.pids", "a") as fh:
            fh.write(f"{self.traffic.pid}\n")
        return (f"traffic from other machines: {shlex.join(argv)} (pid {self.traffic.pid}), about "
                f"{bg['rate']:g} requests/s swinging {bg['swing']:.0%} over {bg['period']:g} s")

    def due(self) -> list[tuple[float, str]]:
        """(second, what) of the background's timed work."""
        if not self.on:
            return []
        return sorted([(float(t), "logrotate") for t in self.bg["logrotate"]] +
                      [(float(t), "backup") for t in self.bg["backup"]])

    def run_timed(self, what: str) -> str:
        if what == "logrotate":
            conf = Path("/etc/logrotate.d/lab-host")
            conf.parent.mkdir(parents=True, exist_ok=True)
            conf.write_text(LOGROTATE_CONF)
            out = subprocess.run(["logrotate", "-f", "-s", "/srv/logrotate.status", str(conf)],
                                 capture_output=True, text=True)
            return "logrotate -f (daily rules for nginx and syslog)" + (f": {out.stderr.strip()[:200]}"
                                                                        if out.returncode else "")
        if what == "backup":
            Path("/srv/data/backup").mkdir(parents=True, exist_ok=True)
            argv = ["tar", "-czf", f"/srv/data/backup/usr-share-{time.strftime('%H%M')}.tar.gz", "-C", "/usr",
                    "share/doc", "share/locale", "share/man"]
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
            self.procs.append(("backup", proc))
            return f"backup: `{shlex.join(argv)}` started (pid {proc.pid})"
        raise ValueError(what)

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, 15)
                except ProcessLookupError:
                    continue
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait()

"""``sarsleuth collect`` and ``analyze --here`` on this machine, with real
programs writing the host's files: sysstat's sadc recording for a few
seconds, nginx on loopback refusing connections past its
``worker_connections`` under ab, and a journal written by
systemd-journal-remote from an export stream (journald does not run in the
CI's container).  The host's files live under a folder given as
``--root``; ``/proc`` and the commands (ps, dmesg, sysctl...) are this
machine's.  The tarball is analysed as it is and must tell what the same
files tell analysed where they are."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from .conftest import run_cli

SADC = "/usr/lib/sysstat/sadc"
JOURNAL_REMOTE = "/usr/lib/systemd/systemd-journal-remote"
#: seconds sadc records (one record a second)
RECORDS = 3


def _needs(*programs):
    missing = [p for p in programs if not (shutil.which(p) or os.access(p, os.X_OK))]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (the CI script installs sysstat, nginx, apache2-utils "
                    "and systemd-journal-remote)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NGINX_CONF = """\
# a site's own error log outside /var/log/nginx: collect finds it from here
user nobody nogroup;
worker_processes 1;
pid {root}/run/nginx.pid;
error_log {root}/srv/www/logs/error.log warn;
events {{
    worker_connections 8;
}}
http {{
    include {root}/etc/nginx/conf.d/*.conf;
}}
"""
SITE_CONF = """\
access_log off;
client_body_temp_path {root}/var/lib/nginx/body;
proxy_temp_path {root}/var/lib/nginx/proxy;
fastcgi_temp_path {root}/var/lib/nginx/fastcgi;
uwsgi_temp_path {root}/var/lib/nginx/uwsgi;
scgi_temp_path {root}/var/lib/nginx/scgi;
server {{
    listen 127.0.0.1:{port};
    location / {{ return 200 "ok\\n"; }}
}}
"""


def _export_entry(when: dt.datetime, message: str, host: str, **fields) -> str:
    """One entry of journalctl -o export's text form (no binary fields)."""
    usec = int(when.timestamp() * 1_000_000)
    lines = [f"__REALTIME_TIMESTAMP={usec}", f"__MONOTONIC_TIMESTAMP={usec % 10**9}",
             "_BOOT_ID=5f2b8a6c0e4d4b7e9a1c3d5e7f901234", f"_HOSTNAME={host}", *(f"{k}={v}" for k, v in fields.items()),
             f"MESSAGE={message}"]
    return "\n".join(lines) + "\n\n"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """A host's files under a folder, written by the real programs, and
    its collection; nginx runs until the collection is done."""
    _needs(SADC, "nginx", "ab", JOURNAL_REMOTE, "journalctl")
    base = tmp_path_factory.mktemp("collect")
    root = base / "root"
    for folder in ("var/log/sysstat", "srv/www/logs", "etc/nginx/conf.d", "run", "var/lib/nginx",
                   "var/log/journal/remote"):
        (root / folder).mkdir(parents=True)
    if os.path.islink("/etc/localtime"):          # the host's zone, as its own link names it
        (root / "etc/localtime").symlink_to(os.readlink("/etc/localtime"))
    port = _free_port()
    (root / "etc/nginx/nginx.conf").write_text(NGINX_CONF.format(root=root))
    (root / "etc/nginx/conf.d/site.conf").write_text(SITE_CONF.format(root=root, port=port))
    began = dt.datetime.now().astimezone()
    sa = root / "var/log/sysstat" / f"sa{began.day:02d}"
    sadc = subprocess.Popen([SADC, "-S", "XALL", "1", str(RECORDS), str(sa)])
    nginx = subprocess.Popen(["nginx", "-c", str(root / "etc/nginx/nginx.conf"), "-p", str(root), "-g", "daemon off;"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):                 # until it listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        # keep-alive connections past worker_connections: nginx reuses them, with a warning
        subprocess.run(["ab", "-q", "-r", "-s", "5", "-k", "-n", "2000", "-c", "60", f"http://127.0.0.1:{port}/"],
                       capture_output=True, timeout=60)
        name = socket.gethostname()
        # the journal's kernel lines three days before this machine booted:
        # its own kernel log (which collect gathers too, and which another
        # program may fill with kills and crashes while the test runs) cannot
        # join them (segfaults up to two days apart are one finding)
        boot = dt.datetime.fromtimestamp(_boot_time()).astimezone()
        logged = boot - dt.timedelta(days=3)
        stream = "".join([
            _export_entry(logged + dt.timedelta(seconds=2), "Out of memory: Killed process 4242 (java) "
                          "total-vm:9123456kB, anon-rss:8001234kB, file-rss:120kB, shmem-rss:0kB, UID:1000 "
                          "pgtables:16000kB oom_score_adj:0", name, _TRANSPORT="kernel", SYSLOG_IDENTIFIER="kernel",
                          PRIORITY="3"),
            _export_entry(logged + dt.timedelta(seconds=3), "java[4243]: segfault at 0 ip 00007f3a2b1c4d5e sp "
                          "00007ffd1a2b3c40 error 4 in libjvm.so[7f3a2a000000+1000000]", name, _TRANSPORT="kernel",
                          SYSLOG_IDENTIFIER="kernel", PRIORITY="6")])
        subprocess.run([JOURNAL_REMOTE, f"--output={root}/var/log/journal/remote/remote-test.journal", "-"],
                       input=stream.encode(), check=True, capture_output=True, timeout=60)
        assert sadc.wait(timeout=RECORDS + 30) == 0
        window = f"{(logged - dt.timedelta(minutes=1)).isoformat(timespec='seconds')}.." \
                 f"{(dt.datetime.now().astimezone() + dt.timedelta(minutes=1)).isoformat(timespec='seconds')}"
        tarball = base / "host.tar.gz"
        before = _tree(root)
        ran = run_cli("collect", "--root", root, "--window", window, "-o", tarball)
        here = run_cli("analyze", "--here", "--root", root, "--window", window, "--format", "json")
        after = _tree(root)
    finally:
        nginx.terminate()
        nginx.wait(timeout=30)
        if sadc.poll() is None:
            sadc.kill()
    return {"root": root, "sa": sa, "tarball": tarball, "ran": ran, "here": here, "window": window,
            "unchanged": before == after, "base": base}


def _boot_time() -> int:
    with open("/proc/stat") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("btime "))


def _tree(root: Path) -> dict:
    """Every file under ``root`` with its size and modification time."""
    out = {}
    for here, _dirs, files in os.walk(root):
        for f in files:
            st = os.lstat(os.path.join(here, f))
            out[os.path.join(here, f)] = (st.st_size, st.st_mtime_ns)
    return out


#: the host's own files (under --root) in any naming: where they are, in
#: the tarball, as --here names them
OURS = ("/var/log/sysstat/", "/srv/www/logs/error.log", "journal")
#: configuration a bundle's facts quote (the loose files have none)
FACTS = ("nginx_configuration", "sysctl_-a", "/limits", "systemctl_show")


def _findings(doc: dict) -> list:
    """(detector, severity, start, end, [(line, text) of its evidence from
    inputs, not configuration], title) of every finding."""
    rows = [(f["detector"], f["severity"], f["start"], f["end"],
             [(e.get("line"), e.get("text")) for e in f["evidence"] if not any(c in e["path"] for c in FACTS)],
             f["title"]) for f in doc["findings"]
            if not all("/dmesg" in e["path"] or e["path"].startswith("dmesg") for e in f["evidence"])]
    # the machine's own kernel ring buffer is left out: what it holds depends
    # on the machine the test runs on (when it booted; a virtual machine
    # resumed from a snapshot has a boot days before its clock says), and
    # loose, it names no host, so its boot can follow nothing of the host's
    return sorted(rows, key=lambda r: repr(r))


def _ours(doc: dict) -> list:
    """(detector, [(line, text) of its evidence from the host's own files])
    of the findings citing them: what this machine's live kernel log and
    processes (read again by another collection) cannot change."""
    return sorted((f["detector"], ours) for f in doc["findings"]
                  if (ours := [(e.get("line"), e.get("text")) for e in f["evidence"]
                               if any(o in e["path"] for o in OURS)]))


def test_collect_writes_one_tarball_saying_what_it_took(host):
    ran = host["ran"]
    assert ran.returncode == 0, ran.stderr
    assert f"wrote {host['tarball']}" in ran.stderr
    assert oct(os.stat(host["tarball"]).st_mode & 0o777) == "0o600"       # logs are private
    with tarfile.open(host["tarball"]) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        assert top.startswith(f"sarsleuth-{socket.gethostname()}-")
        manifest = json.load(tar.extractfile(f"{top}/sarsleuth_collect/manifest.json"))
    inside = {n.split("/", 1)[1] for n in names if "/" in n}
    sa_rel = str(host["sa"].relative_to(host["root"]))
    site_log = f"sarsleuth_collect/inputs/{str(host['root']).lstrip('/')}/srv/www/logs/error.log"
    for member in (sa_rel, site_log, "sos_commands/logs/journalctl_--no-pager_-o_json",
                   "sos_commands/process/ps_auxwww", "sos_commands/kernel/sysctl_-a", "sos_commands/kernel/uname_-a",
                   "proc/meminfo", "sarsleuth_collect/nginx_configuration"):
        assert member in inside, member
    assert manifest["root"] == str(host["root"])
    assert manifest["window"]["asked"] == f"--window {host['window']}"
    kept = {i["source"]: i for i in manifest["items"] if i["status"] == "kept"}
    assert kept[f"/{sa_rel}"]["bytes"] == host["sa"].stat().st_size       # as the host names it
    assert any(s.startswith("journalctl --no-pager -o json --since @") and s.endswith(f"--root {host['root']}")
               for s in kept)
    # nginx's limits are read from its configuration (as nginx -T lays it out) and its processes
    with tarfile.open(host["tarball"]) as tar:
        dump = tar.extractfile(f"{top}/sarsleuth_collect/nginx_configuration").read().decode()
    assert dump.startswith(f"# configuration file {host['root']}/etc/nginx/nginx.conf:\n")
    assert f"# configuration file {host['root']}/etc/nginx/conf.d/site.conf:\n" in dump
    # the host's own files are as they were: collect only reads
    assert host["unchanged"]


def test_the_tarball_tells_what_the_files_in_place_tell(host, tmp_path):
    """The tarball as it is, and the same files where they are (the
    journal as journalctl prints it, and the command outputs the tarball
    holds: they have no other place), give the same findings."""
    root = host["root"]
    journal = tmp_path / "journal.json"
    journal.write_bytes(subprocess.run(["journalctl", "--root", str(root), "-o", "json", "--no-pager"],
                                       capture_output=True, check=True, timeout=60).stdout)
    printed = []
    with tarfile.open(host["tarball"]) as tar:
        for member in tar.getmembers():
            if "/sos_commands/" in member.name and not any(c in member.name for c in FACTS) \
                    and member.isfile() and "/journalctl" not in member.name:
                printed.append(tmp_path / member.name.rsplit("/", 1)[1])
                printed[-1].write_bytes(tar.extractfile(member).read())
                os.utime(printed[-1], (member.mtime, member.mtime))
    in_place = run_cli("analyze", host["sa"], root / "srv/www/logs/error.log", journal, *printed, "--format", "json")
    packed = run_cli("analyze", host["tarball"], "--format", "json")
    assert in_place.returncode == 0 and packed.returncode == 0, in_place.stderr + packed.stderr
    from_loose, from_bundle = _findings(json.loads(in_place.stdout)), _findings(json.loads(packed.stdout))
    assert {f[0] for f in from_loose} >= {"oom-kill", "segfault", "worker-connections-exhausted"}
    assert [f[:5] for f in from_bundle] == [f[:5] for f in from_loose]
    # a title says the same, and what the bundle's facts add (the nginx
    # directive behind worker_connections, quoted from its configuration)
    assert all(b[5].startswith(a[5]) for a, b in zip(from_loose, from_bundle))
    (wc,) = [f for f in json.loads(packed.stdout)["findings"] if f["detector"] == "worker-connections-exhausted"]
    assert wc["title"].endswith("(`worker_connections = 8`, `worker_processes = 1`)")
    assert sorted(e["text"] for e in wc["evidence"] if e["path"].endswith("/sarsleuth_collect/nginx_configuration")) \
        == ["worker_connections 8;", "worker_processes 1;"]
    # the bundle is one host with its facts, read from what collect gathered
    (facts,) = json.loads(packed.stdout)["hosts"]
    assert facts["hostname"] == socket.gethostname() and facts["ncpu"] == os.cpu_count()
    assert facts["nginx"]["worker_connections"][0]["value"] == "8"
    assert facts["processes"]["nginx"]


def test_analyze_here_tells_the_same_naming_the_host_s_files(host):
    here = host["here"]
    assert here.returncode == 0, here.stderr
    doc = json.loads(here.stdout)
    packed = json.loads(run_cli("analyze", host["tarball"], "--format", "json").stdout)
    assert _ours(doc) == _ours(packed)
    assert {d for d, _ in _ours(doc)} >= {"oom-kill", "segfault", "worker-connections-exhausted"}
    paths = {e["path"] for f in doc["findings"] for e in f["evidence"]}
    assert str(host["root"] / "srv/www/logs/error.log") in paths       # as the host names it
    assert "<journalctl --no-pager -o json>" in paths                  # a command's output, by its command
    assert "<nginx configuration>" in paths
    assert not any("sarsleuth-collect-" in p for p in paths)             # never the private folder
    assert not any("sarsleuth-collect-" in json.dumps(h) for h in doc["hosts"])
    (facts,) = doc["hosts"]
    assert facts["bundle"] == "<this host>"
    if os.path.islink("/etc/localtime"):
        assert facts["timezone_from"].startswith(f"{host['root']}/etc/localtime -> ")


def test_redact_tells_the_tarball_without_the_host_s_name(host):
    """The tarball holds the host's files as they are; ``analyze --redact``
    tells them with stand-ins, the bundle's own folder name included."""
    ran = run_cli("analyze", host["tarball"], "--redact", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    name = socket.gethostname()
    doc = json.loads(ran.stdout)
    assert doc["hosts"][0]["hostname"] == "host-1"
    assert f"sarsleuth-{name}-" not in ran.stdout and "sarsleuth-host-1-" in ran.stdout


def test_what_another_user_cannot_read_is_said_and_the_rest_collected(tmp_path, request):
    """Run as an unprivileged user: a log only root reads is 'permission
    denied', said on stderr and in the manifest; the tarball still holds
    the rest."""
    import sys
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and util-linux's setpriv to run as another user")
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    if subprocess.run([*drop, sys.executable, "-c", "import sarsleuth.cli, pandas"], capture_output=True, cwd="/",
                      env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}).returncode:
        pytest.skip("this Python or the checkout is not readable by an unprivileged user")
    # pytest's own temporary folders are root's alone (0700): the other user works in one it may enter
    base = Path(tempfile.mkdtemp(prefix="sarsleuth-collect-"))
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    base.chmod(0o755)
    denied = subprocess.run([*drop, sys.executable, "-m", "sarsleuth.cli", "collect", "--root", str(base),
                             "--since", "1h", "-o", str(tmp_path / "c.tar.gz")], capture_output=True, text=True,
                            cwd="/", timeout=300,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert denied.returncode == 2 and denied.stderr.strip().endswith(": cannot write: Permission denied"), \
        denied.stderr
    tmp_path = base
    root = tmp_path / "root"
    secret = root / "var/log/messages"
    secret.parent.mkdir(parents=True)
    secret.write_text("Nov 20 15:00:00 web1 kernel: only root reads this\n")
    secret.chmod(0o600)
    (root / "etc").mkdir()
    (root / "etc/timezone").write_text("Europe/Paris\n")
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    tmp_path.chmod(0o755)
    proc = subprocess.run([*drop, sys.executable, "-m", "sarsleuth.cli", "collect", "--root", str(root), "--since", "1h",
                           "-o", str(out / "c.tar.gz")], capture_output=True, text=True, cwd="/", timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.returncode == 0, proc.stderr
    assert "sarsleuth: /var/log/messages: not collected: permission denied (run as root" in proc.stderr
    with tarfile.open(out / "c.tar.gz") as tar:
        names = [n.split("/", 1)[-1] for n in tar.getnames()]
        manifest = json.load(tar.extractfile(next(n for n in tar.getnames() if n.endswith("manifest.json"))))
    assert "etc/timezone" in names and "var/log/messages" not in names
    (item,) = [i for i in manifest["items"] if i["source"] == "/var/log/messages"]
    assert item["status"] == "not kept" and item["why"].startswith("permission denied")

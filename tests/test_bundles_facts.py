"""Host facts from the files a bundle holds, written the way the programs
write them, and from a sosreport made here by the real sos tool."""
from __future__ import annotations

import os
import socket

from .conftest import make_sosreport
from sarsleuth.inputs.bundles import readers
from sarsleuth.inputs.bundles.expand import expand
from sarsleuth.inputs.bundles.facts import HostFacts
from sarsleuth.inputs.bundles.layout import fact_of

# nginx -T: the test lines on stderr, then each file after its header
NGINX_T = """\
nginx: the configuration file /etc/nginx/nginx.conf syntax is ok
nginx: configuration file /etc/nginx/nginx.conf test is successful
# configuration file /etc/nginx/nginx.conf:
user www-data;
worker_processes 24;
worker_rlimit_nofile 65535;   # raised for the proxy

events {
\tworker_connections 65535;
}
http {
\tinclude /etc/nginx/conf.d/*.conf;
}

# configuration file /etc/nginx/conf.d/img.conf:
upstream img {
    server 10.0.0.1:8080;
    keepalive 32;
}
server {
    location / {
        # proxy_buffers 8 4k;
        proxy_buffers 1024 256k;
        proxy_busy_buffers_size 512k;
    }
}
"""

# /proc/PID/limits as the kernel prints it (fs/proc/base.c: %-25s %-20s %-20s %-10s)
PROC_LIMITS = """\
Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max core file size        0                    unlimited            bytes     
Max open files            65535                65535                files     
Max processes             127431               127431               processes 
"""

SYSCTL_A = """\
fs.file-max = 9223372036854775807
net.ipv4.tcp_max_orphans = 131072
net.ipv4.tcp_max_tw_buckets = 180000
net.ipv4.tcp_mem = 380316\t507089\t760632
vm.swappiness = 60
"""


def _read(rel: str, text: str, facts: HostFacts, path="bundle!" ) -> None:
    entry, m = fact_of(rel)
    assert entry is not None, rel
    readers.READERS[entry["reader"]](text, path + rel, m, facts)


def test_nginx_T_directives_keep_their_dump_line_and_their_file_line():
    facts = HostFacts(bundle="b")
    _read("sos_commands/nginx/nginx_-T", NGINX_T, facts)
    (buffers,) = facts.nginx["proxy_buffers"]         # the commented-out one is not a directive
    assert (buffers.value, buffers.line, buffers.text, buffers.conf) == (
        "1024 256k", 23, "proxy_buffers 1024 256k;", "/etc/nginx/conf.d/img.conf:8")
    assert facts.nginx["worker_rlimit_nofile"][0].value == "65535"
    assert facts.nginx["worker_rlimit_nofile"][0].conf == "/etc/nginx/nginx.conf:3"
    assert facts.nginx["worker_connections"][0].conf == "/etc/nginx/nginx.conf:6"
    assert facts.nginx["upstream"][0].value == "img" and facts.nginx["keepalive"][0].value == "32"
    assert facts.limit("proxy_busy_buffers_size").where() == "bundle!sos_commands/nginx/nginx_-T:24"


def test_sysctl_a_limits_with_their_line():
    facts = HostFacts(bundle="b")
    _read("sos_commands/kernel/sysctl_-a", SYSCTL_A, facts)
    assert facts.limits["net.ipv4.tcp_max_tw_buckets"].number() == 180000
    assert facts.limits["net.ipv4.tcp_max_tw_buckets"].line == 3
    assert facts.limits["net.ipv4.tcp_mem"].value == "380316 507089 760632"
    assert facts.limits["net.ipv4.tcp_mem"].text == "net.ipv4.tcp_mem = 380316\t507089\t760632"
    # proc/sys gives the same value when sysctl -a is absent; the first one read is kept
    other = HostFacts(bundle="b")
    _read("proc/sys/net/ipv4/tcp_max_orphans", "131072\n", other)
    assert other.limits["net.ipv4.tcp_max_orphans"].value == "131072"


def test_nginx_process_limits_are_kept_other_processes_not():
    facts = HostFacts(bundle="b")
    _read("proc/812/limits", PROC_LIMITS, facts)
    _read("proc/812/cmdline", "nginx: worker process\0", facts)
    _read("proc/900/limits", PROC_LIMITS, facts)
    _read("proc/900/comm", "sshd\n", facts)
    readers.settle_processes(facts)
    (proc,) = facts.processes["nginx"]
    assert proc["pid"] == 812
    assert proc["limits"]["Max open files"].value == "65535 65535"
    assert proc["limits"]["Max core file size"].value == "0 unlimited"
    assert proc["limits"]["Max open files"].line == 4


#: ``systemctl show --all`` of services, as sos's systemd plugin saves it.
SYSTEMCTL_SHOW = """\
Type=notify
Restart=on-failure
Id=orders-api.service
Names=orders-api.service
LimitNOFILE=524288
LimitNOFILESoft=1024
LimitNPROC=63707
TasksMax=4915

Type=forking
Id=nginx.service
LimitNOFILE=524288
LimitNOFILESoft=1024
"""


def test_the_limit_a_process_ran_with_is_read_where_it_was_set():
    """/proc/PID/limits first, then nginx's worker_rlimit_nofile, then the
    unit: its drop-in over its file, `systemctl show` for the rest."""
    facts = HostFacts(bundle="b")
    _read("sos_commands/systemd/systemctl_show_service_--all", SYSTEMCTL_SHOW, facts)
    _read("etc/systemd/system/billing.service", "[Service]\nExecStart=/usr/bin/billing\nLimitNOFILE=4096\n", facts)
    _read("etc/systemd/system/billing.service.d/override.conf", "[Service]\n# LimitNOFILE=1\nLimitNOFILE=8192\n", facts)
    assert facts.process_limit("orders-api", "Max open files").text == "LimitNOFILESoft=1024"
    assert facts.process_limit("orders-api", "Max processes").value == "63707"
    billing = facts.process_limit("billing", "Max open files")
    assert (billing.value, billing.line, billing.path) == ("8192", 3, "bundle!etc/systemd/system/billing.service.d/override.conf")
    _read("etc/systemd/system/orders-api.service", "[Service]\nLimitNOFILE=64\n", facts)   # what is in force stays
    assert facts.process_limit("orders-api", "Max open files").text == "LimitNOFILESoft=1024"
    assert facts.process_limit("nginx", "Max open files").value == "1024"
    _read("sos_commands/nginx/nginx_-T", "# configuration file /etc/nginx/nginx.conf:\nworker_rlimit_nofile 2048;\n", facts)
    assert facts.process_limit("nginx", "Max open files").text == "worker_rlimit_nofile 2048;"
    _read("proc/812/limits", PROC_LIMITS, facts)
    _read("proc/812/cmdline", "nginx: worker process\0", facts)
    readers.settle_processes(facts)
    assert facts.process_limit("nginx", "Max open files").value == "65535 65535"
    assert facts.process_limit("sshd", "Max open files") is None
    assert facts.to_dict()["units"]["orders-api.service"]["TasksMax"]["value"] == "4915"


def test_mount_points_of_devices_from_proc_mounts_or_mount_l():
    facts = HostFacts(bundle="b")
    _read("proc/mounts", "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
                         "/dev/vda1 / ext4 rw,relatime 0 0\n"
                         "/dev/loop0 /srv/data\\040store ext4 rw,relatime 0 0\n", facts)
    assert {d: m.value for d, m in facts.mounts.items()} == {"/dev/vda1": "/", "/dev/loop0": "/srv/data store"}
    assert facts.mounts["/dev/loop0"].line == 3
    other = HostFacts(bundle="b")
    _read("sos_commands/filesys/mount_-l", "/dev/mapper/rhel-root on / type xfs (rw,relatime,seclabel)\n"
                                           "tmpfs on /run type tmpfs (rw,nosuid,nodev)\n", other)
    assert other.to_dict()["mounts"] == {"/dev/mapper/rhel-root": "/"}


def test_machine_facts():
    facts = HostFacts(bundle="b")
    _read("sos_commands/kernel/uname_-a",
          "Linux web07 5.10.0-28-amd64 #1 SMP Debian 5.10.209-2 (2024-01-31) x86_64 GNU/Linux\n", facts)
    _read("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\n",
          facts)
    _read("proc/meminfo", "MemTotal:       16303300 kB\nMemFree:          302144 kB\nHugePages_Total:       0\n",
          facts)
    _read("sos_commands/systemd/timedatectl",
          "               Local time: Fri 2026-11-20 14:02:11 CET\n                Time zone: Europe/Paris (CET, +0100)\n",
          facts)
    assert (facts.hostname, facts.kernel, facts.ncpu, facts.mem_total_kb) == ("web07", "5.10.0-28-amd64", 2, 16303300)
    assert facts.meminfo["HugePages_Total"] == 0
    assert facts.timezone == "Europe/Paris" and facts.timezone_from == "bundle!sos_commands/systemd/timedatectl:2"
    assert facts.summary().startswith("web07, kernel 5.10.0-28-amd64, 2 CPUs, 15.5 GiB RAM, zone Europe/Paris")


def test_a_zone_name_that_is_no_zone_is_not_taken():
    facts = HostFacts(bundle="b")
    _read("etc/timezone", "Mars/Olympus_Mons\n", facts)
    assert facts.timezone is None
    assert facts.dropped == ["bundle!etc/timezone:1 names the time zone 'Mars/Olympus_Mons', which the zone "
                             "database does not know: not used"]


def test_zones_and_host_names_a_bundle_gives_but_are_not_used_are_said_in_every_output(tmp_path):
    """An extracted sosreport whose files disagree: etc/localtime links to
    Europe/Paris, timedatectl says America/New_York, etc/timezone names no
    zone; its hostname file says web07, uname db9.  The first of
    each is used (as before) and every other one is a note, in JSON, text,
    markdown and HTML alike."""
    from .conftest import run_cli
    root = tmp_path / "sosreport-web07-2026-11-20-abcdef"
    for rel, text in {"sos_commands/kernel/uname_-a": "Linux db9 6.1.0-18-amd64 #1 SMP x86_64 GNU/Linux\n",
                      "etc/hostname": "web07.example.com\n",
                      "sos_commands/systemd/timedatectl": "                Time zone: America/New_York (EST, -0500)\n",
                      "etc/timezone": "Mars/Olympus_Mons\n",
                      "var/log/messages": "Nov 20 03:14:07 web07 kernel: Out of memory: Killed process 4242 (nginx) "
                                          "total-vm:1021908kB, anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB\n"
                      }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "etc" / "localtime").symlink_to("../usr/share/zoneinfo/Europe/Paris")
    ran = run_cli("analyze", root, "--year", "2026", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    import json
    doc = json.loads(ran.stdout)
    said = [n for n in doc["notes"] if " but " in n or "does not know" in n]
    expected = [
        f"{root}/etc/timezone:1 names the time zone 'Mars/Olympus_Mons', which the zone database does not know: "
        "not used",
        f"{root}/sos_commands/systemd/timedatectl:1 names the time zone America/New_York but {root}/etc/localtime "
        "-> ../usr/share/zoneinfo/Europe/Paris names Europe/Paris: Europe/Paris is used",
        f"{root}/sos_commands/kernel/uname_-a:1 names the host db9 but {root}/etc/hostname:1 names it "
        "web07.example.com: web07.example.com is used"]
    assert sorted(said) == sorted(expected)
    [host] = doc["hosts"]
    assert (host["timezone"], host["hostname"]) == ("Europe/Paris", "web07.example.com")
    for fmt in ("text", "markdown"):
        out = run_cli("analyze", root, "--year", "2026", "--format", fmt).stdout.replace("\\", "")
        assert "Mars/Olympus_Mons" in out and "America/New_York but" in out, fmt
    report = tmp_path / "report.html"
    assert run_cli("analyze", root, "--year", "2026", "--html", report).returncode == 0
    assert "America/New_York but" in report.read_text()


def test_a_sosreport_made_here_by_sos_gives_this_hosts_facts(tmp_path):
    archive = make_sosreport(tmp_path, "host,date,kernel")
    out = expand([archive])
    try:
        (facts,) = out.bundles
        assert facts.hostname == socket.gethostname()
        assert facts.kernel == os.uname().release
        with open("/proc/sys/net/ipv4/tcp_max_tw_buckets") as fh:
            assert facts.limits["net.ipv4.tcp_max_tw_buckets"].value == fh.read().strip()
        assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".md5")) == [archive.name]
    finally:
        out.cleanup()


def test_proc_stat_gives_the_boot_time():
    """This machine's own /proc/stat: btime as the kernel prints it."""
    text = open("/proc/stat").read()
    facts = HostFacts(bundle="b")
    readers.proc_stat(text, "proc/stat", None, facts)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if row.startswith("btime "))
    assert facts.booted == float(text.splitlines()[line - 1].split()[1])
    assert facts.booted_from == f"proc/stat:{line}"
    assert fact_of("proc/stat")[0]["reader"] == "proc_stat"


def test_a_bundles_dmesg_with_no_other_anchor_is_put_on_its_boot_time(tmp_path):
    """A sosreport whose ring buffer no longer holds the boot (no audit
    record, no dmesg -T, no syslog copy): the boot time it recorded in
    proc/stat places its uptime stamps. Near miss: without proc/stat they
    stay unaligned."""
    import json

    from .conftest import run_cli

    root = tmp_path / "sosreport-web01-2026-11-27-abcdef"
    for folder in ("sos_commands/kernel", "proc", "etc"):
        (root / folder).mkdir(parents=True)
    (root / "sos_commands/kernel/dmesg").write_text(
        "[  100.000000] nginx[4242]: segfault at 0 ip 00007f3a2b1c4d5e sp 00007ffd1a2b3c40 error 4 in "
        "libc.so.6[7f3a2a000000+1000000]\n")
    (root / "proc/stat").write_text("cpu  100 0 100 1000 0 0 0 0 0 0\nintr 0\nctxt 1000\nbtime 1795810528\n"
                                    "processes 300\n")
    (root / "etc/hostname").write_text("web01\n")
    doc = json.loads(run_cli("analyze", root, "--format", "json").stdout)
    (crash,) = doc["findings"]
    # 1795810528 is 2026-11-27 20:15:28 UTC; the segfault 100 s after the boot
    assert (crash["detector"], crash["start"], crash["host"]) == ("segfault", "2026-11-27T20:17:08+00:00", "web01")
    assert any("via the boot time its bundle recorded" in n and "proc/stat:4: btime" in n for n in doc["notes"])
    (root / "proc/stat").unlink()
    doc = json.loads(run_cli("analyze", root, "--format", "json").stdout)
    assert doc["findings"][0]["start"] is None
    assert any("could not be put on the wall clock" in n for n in doc["notes"])

"""--redact on names in every spelling real files write them: addresses
however written (leading zeros, glued to ``_`` or a percent-escape, three
spellings of one IPv6 peer, MACs in iptables' ``MAC=``, Cisco's dots,
bare digits, InfiniBand's 20 bytes), a host name joined by ``_`` in
folders, files and volume groups, e-mail addresses percent-escaped, user
names as cron, logind, sshd, pam_unix, postfix and useradd write them.
No original in any byte of any output, and no stand-in where no name was:
systemd's instance units, ``oom_score_adj:0`` and detector ids stay."""
from __future__ import annotations

import hashlib
import json
import re
import sys

import pytest

import sarsleuth
from sarsleuth.redaction.knowledge import forms
from sarsleuth.redaction.names import Redactor

from .conftest import run_cli
from .test_redaction import _parquet_text

#: around each evidence line its five neighbours are quoted: the lines
#: naming people and machines sit there, so that every output shows them
_NAMES_A = [
    "kernel: IN=eth0 OUT= MAC=52:54:00:12:34:56:52:54:00:ab:cd:ef:08:00 SRC=010.077.001.009 DST=10.77.1.10 LEN=60 "
    "TOS=0x00 PREC=0x00 TTL=64 ID=4242 DF PROTO=TCP SPT=51514 DPT=22 WINDOW=64240 RES=0x00 SYN URGP=0",
    "dhcpd[811]: DHCPACK on 10.77.1.20 to 0077.1122.3344 via eth0",
    "NetworkManager[600]: <info>  [1732457922.1] device (eth1): ether 7711223344ab",
    "kernel: ib0: hardware address 80:00:02:08:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0a:bc:de",
    "backup[901]: wrote /srv/dump_10.77.3.9_nightly.sql",
]
_NAMES_B = [
    "app[77]: peer 2001:db8:0:0:0:0:0:42 connected",
    "app[77]: peer 2001:DB8::42 sent 10 MB",
    "app[77]: peer [2001:0db8::0042]:443 closed",
    "CRON[1201]: (carol) CMD (cd / && run-parts --report /etc/cron.hourly)",
    "systemd-logind[512]: New session 3 of user bob.",
]
_NAMES_C = [
    "systemd[1]: Started Session 12 of User alice.",
    "sshd[900]: Connection closed by invalid user bob 198.18.0.4 port 41114 [preauth]",
    "sshd[812]: Accepted keyboard-interactive/pam for dave from 10.77.1.30 port 52515 ssh2",
    "su[77]: pam_unix(su:session): session opened for user root(uid=0) by erin(uid=1000)",
    "postfix/local[3001]: 4F2A1: to=<frank@mail.example.com>, orig_to=<frank>, relay=local, status=sent",
]
_NAMES_D = [
    "useradd[2040]: new user: name=gina, UID=1001, GID=1001, home=/home/gina, shell=/bin/bash, from=/dev/pts/0",
    "systemd[1]: Started user@0.service - User Manager for UID 0.",
    "systemd[1]: Started openvpn@server.service - OpenVPN connection to server.",
    "kernel: lvm: /dev/mapper/rhel_zqweb77-root is rhel_zqweb77/root, dm name rhel_zqweb77-root",
    "kernel: EXT4-fs (dm-0): mounted filesystem /dev/mapper/rhel_zqweb77-root with ordered data mode",
]
#: an address across the cut of a quoted line (240 characters) and of a quote in a story (160)
_LONG = ("app[78]: " + "x" * 96 + " No space left on device: client 10.77.5.123 writing '/srv/data/q' and more "
         "text to make this line longer than the two hundred and forty characters of a quote, peer 10.77.6.201 here")
_ORIGINAL_TEXT = ["zqweb77", "010.077.001.009", "10.77.", "0077.1122.3344", "7711223344ab", "52:54:00:12:34:56",
                  "52:54:00:ab:cd:ef", "c9:03:00:0a:bc:de", "2001:db8", "2001:0db8", "lena", "mail.example.com",
                  "shop.zq.internal", "nas01"]
_ORIGINAL_USERS = ["carol", "bob", "alice", "dave", "erin", "frank", "gina"]


def _syslog(host: str) -> str:
    stamp = iter(f"Nov 24 14:{18 + s // 60:02d}:{s % 60:02d}" for s in range(0, 3600, 2))
    lines = (_NAMES_A + ["kernel: nfs: server nas01 not responding, still trying"] + _NAMES_B + _NAMES_C
             + ["kernel: nfs: server nas01 OK"] + _NAMES_D
             + ["kernel: Out of memory: Killed process 4242 (java) total-vm:1021908kB, anon-rss:524288kB, "
                "file-rss:4096kB, shmem-rss:0kB, UID:1000 pgtables:1200kB oom_score_adj:0", _LONG])
    return "".join(f"{next(stamp)} {host} {line}\n" for line in lines)


def _sar_f(host: str) -> str:
    """``sar -F 1`` as sysstat 12.6 prints it, the root filesystem on the
    volume group the installer named after the host, filling up."""
    out = [f"Linux 6.1.0-13-amd64 ({host}) \t11/24/2026 \t_x86_64_\t(2 CPU)", "",
           "14:18:00     MBfsfree  MBfsused   %fsused  %ufsused     Ifree     Iused    %Iused FILESYSTEM"]
    for s in range(80):
        used = 40.0 if s < 30 else min(100.0, 40.0 + (s - 30) * 3.0)
        out.append(f"14:{18 + (1 + s) // 60:02d}:{(1 + s) % 60:02d} {round(243 - used * 2.43):>12} "
                   f"{round(used * 2.43):>9} {used * 0.93:>9.2f} {used:>9.2f} {65000:>9} {536:>9} {0.82:>9.2f} "
                   f"/dev/mapper/rhel_{host}-root")
    return "\n".join(out) + "\n"


_NGINX = ('2026/11/24 14:19:{s:02d} [error] 2211#2211: *9 upstream timed out (110: Connection timed out) while '
          'reading response header from upstream, client: 10.77.4.8, server: shop.zq.internal, request: '
          '"GET /l?ip%3D10.77.4.9&u=lena%40mail.example.com HTTP/1.1"\n')


@pytest.fixture(scope="module")
def redacted_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("spellings")
    folder = base / "zqweb77_logs"
    folder.mkdir()
    (folder / "zqweb77_messages").write_text(_syslog("zqweb77"))
    (folder / "zqweb77_sar-F.txt").write_text(_sar_f("zqweb77"))
    (folder / "error.log").write_text("".join(_NGINX.format(s=s) for s in range(10, 40, 3)))
    out = base / "out"
    out.mkdir()
    outputs = {}
    for fmt in ("text", "json", "jsonl", "markdown", "jira"):
        ran = run_cli("analyze", folder, "--redact", "--all", "--format", fmt, "-q")
        assert ran.returncode == 0, ran.stderr
        outputs[fmt], outputs[f"stderr {fmt}"] = ran.stdout, ran.stderr
    ran = run_cli("analyze", folder, "--redact", "--redact-map", out / "map.json", "--html", out / "r.html",
                  "--plots", out / "plots", "--save", out / "case", "--format", "json", "-q")
    assert ran.returncode == 0, ran.stderr
    outputs["html"] = (out / "r.html").read_text()
    outputs["stderr"] = ran.stderr
    for svg in sorted((out / "plots").iterdir()):
        outputs[svg.name] = svg.read_text()
    outputs["parquet"] = _parquet_text(out / "case")
    mapping = json.loads((out / "map.json").read_text())
    return outputs, mapping, json.loads(ran.stdout)


def _found(outputs: dict) -> list:
    hits = []
    for name, text in outputs.items():
        for original in _ORIGINAL_TEXT:
            if original.lower() in text.lower():
                hits.append((name, original))
        for user in _ORIGINAL_USERS:
            if re.search(rf"(?<![A-Za-z0-9]){user}(?![A-Za-z0-9])", text, re.I):
                hits.append((name, user))
    return hits


def test_no_original_in_any_spelling_in_any_output(redacted_run):
    outputs, mapping, doc = redacted_run
    assert not _found(outputs)
    # the lines were shown (their stand-ins are there, in the lines the HTML folds around evidence)
    text = outputs["html"]
    for stand_in in ("user@0.service", "openvpn@server.service", "rhel_host-1-root", "rhel_host-1/root",
                     "%40host-", "ether 02000000000"):
        assert stand_in in text, stand_in
    assert re.search(r"MAC=02:00:00:00:00:0\d:02:00:00:00:00:0\d:08:00", text)
    assert re.search(r"to 0200\.0000\.000\d via", text)
    assert re.search(r"dump_198\.18\.\d+\.9_nightly", text) and re.search(r"ip%3D198\.18\.\d+\.9", text)
    # one IPv6 peer written three ways: one stand-in
    assert len(mapping["ipv6"]) == 1
    assert set(re.findall(r"fd00:0:0:[0-9a-f]+::[0-9a-f]+", text)) == set(mapping["ipv6"].values())
    assert text.count(next(iter(mapping["ipv6"].values()))) == 3
    # IPv4 with leading zeros is the address it spells; an input's own 198.18.0.4 never doubles as a stand-in
    assert len(mapping["ipv4"]) == len(set(mapping["ipv4"].values()))
    assert "198.18.0.4" not in mapping["ipv4"].values()
    assert set(_ORIGINAL_USERS) <= set(mapping["user"])
    assert {"zqweb77", "nas01", "shop.zq.internal"} <= set(mapping["host"])


def test_no_stand_in_where_no_name_was(redacted_run):
    outputs, mapping, doc = redacted_run
    assert "0" not in mapping.get("host", {}) and "server" not in mapping.get("host", {})
    detectors = {f["detector"] for f in doc["findings"]}
    assert {"nfs-server-down", "oom-kill", "filesystem-full"} <= detectors
    assert "oom_score_adj:0" in outputs["json"] and "host-" not in "".join(re.findall(r"oom_score_adj:\S+",
                                                                                     outputs["json"]))


def test_a_host_named_by_a_word_of_the_vocabulary_leaves_identifiers_whole():
    """A host called "proxy" or "worker": replaced as a word, but nginx's
    proxy_buffers and worker_connections stay, and the outputs' own words
    are not taken for a leak; a host name of any letters is a name too."""
    r = Redactor()
    for host in ("proxy", "worker", "zqweb77", "hôst1"):
        r.host(host, own=True)
    assert r.text("proxy_buffers 8 16k; worker_connections 768; upstream proxy on hôst1; rhel_zqweb77-root") == \
        "proxy_buffers 8 16k; worker_connections 768; upstream host-1 on host-4; rhel_host-3-root"
    assert r.leak("worker_connections, proxy_buffers, the worker's memory") is None
    assert r.leak("rhel_zqweb77-root") == "a host name" and r.leak("on hôst1") == "a host name"


def test_a_cut_never_leaves_part_of_an_address(redacted_run):
    """The long line is cut at 240 characters in the evidence and at 160 in
    the story: no octets of its addresses are left behind either way."""
    outputs, mapping, doc = redacted_run
    for text in outputs.values():
        assert not re.search(r"(?<![\d.])\d{1,3}\.\d{1,3}\.\d{1,3}\.?(?:…|\.\.\.)", text)
        assert not re.search(r"198\.18\.\d+(?:…|\.\.\.)", text)
    quoted = [e["text"] for f in doc["findings"] for e in f["evidence"] if "No space left" in e["text"]]
    assert quoted and all(q.endswith("…") for q in quoted)


def test_incident_ids_are_made_from_the_stand_ins(redacted_run):
    outputs, mapping, doc = redacted_run
    ids = {inc["id"] for inc in doc["incidents"]}
    for inc in doc["incidents"]:
        original_hosts = [next(o for o, s in mapping["host"].items() if s == h) for h in inc["hosts"]]
        digest = hashlib.sha1(f"{inc['category']}|{','.join(original_hosts)}".encode()).hexdigest()[:12]
        assert digest not in ids


@pytest.mark.parametrize("kind", sorted(forms()))
def test_every_form_gives_its_name_and_no_near_miss_gives_one(kind):
    """Each line form of knowledge/redaction.toml, as its program writes it."""
    what = kind.split("_")[0]
    for form in forms()[kind]:
        for line, name in form["samples"]:
            r = Redactor()
            r.learn(line)
            assert name in r.mapping().get(what, {}), (form["program"], line)
            assert not re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", r.text(line))
        for line in form["near_misses"]:
            r = Redactor()
            r.learn(line)
            assert not r.mapping().get(what), (form["program"], line)


def test_a_load_test_command_names_its_target_by_stand_in(tmp_path):
    """httperf prints its command line (``--server=api01``); wrk's Host
    header: the target is a host name in titles as anywhere."""
    report = tmp_path / "httperf.txt"
    report.write_text(
        "httperf --client=0/1 --server=api01 --port=80 --uri=/ --rate=900 --send-buffer=4096 --recv-buffer=16384 "
        "--num-conns=9000 --num-calls=1\n"
        "httperf: warning: open file limit > FD_SETSIZE; limiting max. # of open files to FD_SETSIZE\n"
        "Maximum connect burst length: 1\n\n"
        "Total: connections 9000 requests 6022 replies 5000 test-duration 10.002 s\n\n"
        "Connection rate: 899.8 conn/s (1.1 ms/conn, <=1022 concurrent connections)\n"
        "Connection time [ms]: min 0.4 avg 301.2 max 7011.3 median 1.5 stddev 1001.2\n"
        "Connection time [ms]: connect 101.5\n"
        "Connection length [replies/conn]: 1.000\n\n"
        "Request rate: 602.1 req/s (1.7 ms/req)\n"
        "Request size [B]: 62.0\n\n"
        "Reply rate [replies/s]: min 480.2 avg 500.0 max 520.2 stddev 17.3 (2 samples)\n"
        "Reply time [ms]: response 199.1 transfer 0.0\n"
        "Reply size [B]: header 240.0 content 612.0 footer 0.0 (total 852.0)\n"
        "Reply status: 1xx=0 2xx=5000 3xx=0 4xx=0 5xx=0\n\n"
        "CPU time [s]: user 2.10 system 7.80 (user 21.0% system 78.0% total 99.0%)\n"
        "Net I/O: 461.8 KB/s (3.8*10^6 bps)\n\n"
        "Errors: total 4000 client-timo 0 socket-timo 0 connrefused 0 connreset 0\n"
        "Errors: fd-unavail 4000 addrunavail 0 ftab-full 0 other 0\n")
    ran = run_cli("analyze", report, "--redact", "--format", "json", "-q")
    assert ran.returncode == 0, ran.stderr
    assert "api01" not in ran.stdout and "--server=host-1" in ran.stdout
    titles = " ".join(f["title"] for f in json.loads(ran.stdout)["findings"])
    assert "api01" not in titles


def test_a_pattern_that_can_match_nothing_is_refused(tmp_path):
    log = tmp_path / "messages"
    log.write_text("Nov 24 14:18:00 db1 kernel: nfs: server nas01 not responding, still trying\n")
    for pattern in ("x*", "(?:ACME-[0-9]+)?", "\\b"):
        config = tmp_path / "c.toml"
        config.write_text(f"[redact.patterns]\ncustomer = '{pattern}'\n")
        ran = run_cli("analyze", log, "--redact", "--config", config)
        assert ran.returncode == 2 and ran.stdout == ""
        assert "customer" in ran.stderr and "empty string" in ran.stderr and len(ran.stderr.splitlines()) == 1


def test_a_fleet_learns_its_hosts_ps_users_and_remakes_its_ids(monkeypatch, tmp_path):
    """Three hosts, each a folder with its syslog and a ps snapshot whose
    user appears only in a path a finding quotes: the user, known from the
    ps column alone, is replaced in the fleet's story too; fleet incident
    ids are digests of the stand-ins, never of the hosts' names."""
    for name in [m for m in list(sys.modules) if m == "distributed" or m.startswith("distributed.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "distributed", None)      # the hosts run in this process
    for n in (1, 2, 3):
        d = tmp_path / f"h{n}"
        d.mkdir()
        (d / "messages").write_text("".join(
            f"Nov 24 14:19:{s:02d} qzhost{n} writer[99]: cannot write /srv/quinn{n}/data/part-{s}: "
            "No space left on device\n" for s in range(10, 20)))
        (d / "ps.txt").write_text(
            "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
            f"quinn{n}      99 12.0  1.0 120000 40000 ?        S    14:00   0:10 writer --out /srv/quinn{n}/data\n")
    ran = run_cli("analyze", tmp_path / "h1", tmp_path / "h2", tmp_path / "h3", "--fleet", "--redact",
                  "--redact-map", tmp_path / "map.json", "--format", "json")
    assert ran.returncode == 0, ran.stderr
    mapping = json.loads((tmp_path / "map.json").read_text())
    assert {"quinn1", "quinn2", "quinn3"} <= set(mapping["user"])
    assert not re.search(r"quinn|qzhost", ran.stdout + ran.stderr, re.I)
    doc = json.loads(ran.stdout)
    assert doc["fleet_incidents"]
    for inc in doc["fleet_incidents"]:
        originals = sorted(next(o for o, s in mapping["host"].items() if s == h) for h in inc["hosts"])
        assert inc["id"] != "fleet-" + hashlib.sha1(
            f"{' + '.join(inc['kinds'])}|{inc['start']}|{','.join(originals)}".encode()).hexdigest()[:10]

"""Support bundles: real sosreports made with sos (samples/bundles, by
stage.sh), their sos collect bundle, extracted folders, /var/log tarballs."""
from __future__ import annotations

import re

import functools
import io
import json
import tarfile
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, run_cli

BUNDLES = SAMPLES / "bundles"


def _one(pattern: str) -> Path:
    found = sorted(BUNDLES.glob(pattern))
    assert len(found) == 1, f"expected one {pattern} in {BUNDLES}"
    return found[0]


@functools.lru_cache(maxsize=None)
def _case(*paths):
    import sarsleuth
    return sarsleuth.load(list(paths))


@pytest.fixture(scope="module")
def web07():
    return _case(_one("sosreport-web07-*.tar.xz"))


@pytest.fixture(scope="module")
def collect():
    return _case(_one("sos-collector-*.tar.gz"))


def _finding(case, detector, host=None):
    found = [f for f in case.findings if f.detector == detector and (host is None or f.host == host)]
    assert found, f"no {detector} finding on {host}: {[f.detector for f in case.findings]}"
    return found[0]


# ------------------------------------------------------------- one sosreport
def test_sosreport_host_facts_are_read_from_the_bundle(web07):
    assert len(web07.hosts) == 1
    h = web07.hosts[0]
    assert (h.host, h.hostname, h.timezone) == ("web07", "web07", "Europe/Paris")
    assert h.timezone_from.endswith("etc/localtime -> ../usr/share/zoneinfo/Europe/Paris")
    tw = h.limits["net.ipv4.tcp_max_tw_buckets"]
    assert (tw.value, tw.text) == ("4096", "net.ipv4.tcp_max_tw_buckets = 4096")
    assert tw.path.endswith("sos_commands/kernel/sysctl_-a") and tw.line > 1
    wc = h.nginx["worker_connections"][0]
    assert (wc.value, wc.text, wc.conf) == ("256", "worker_connections 256;", "/etc/nginx/nginx.conf:7")
    assert h.ncpu and h.mem_total_kb and h.kernel
    # each directive names its line in the configuration file nginx -T dumped
    assert h.nginx["worker_processes"][0].conf == "/etc/nginx/nginx.conf:1"


def test_sosreport_incident_is_judged_against_the_hosts_own_limit(web07):
    tw = _finding(web07, "tcp-timewait", "web07")
    assert tw.metrics["tcp_max_tw_buckets"] == 4096      # the namespace's sysctl, not the 180000 default
    assert tw.metrics["peak_tcp_tw"] == pytest.approx(4096, rel=0.02)
    assert tw.severity == "high"
    quoted = [e for e in tw.evidence if e.path.endswith("sysctl_-a")]
    assert quoted and quoted[0].text == "net.ipv4.tcp_max_tw_buckets = 4096"
    wc = _finding(web07, "worker-connections-exhausted", "web07")
    assert any(e.text == "worker_connections 256;" and e.path.endswith("sos_commands/nginx/nginx_-T")
               for e in wc.evidence)
    top = web07.incidents[0]
    assert {"tcp-timewait", "worker-connections-exhausted"} & {f.detector for f in top.findings}
    assert top.host == "web07" if hasattr(top, "host") else True


def test_sosreport_reads_each_sar_day_once_from_its_most_faithful_copy(web07):
    kinds = sorted(s.kind for s in web07.sources)
    assert kinds.count("sa") == 1 and "sar-text" not in kinds and "sadf-xml" not in kinds
    assert any("sos_commands/sar/sar23 not read" in n or "not read: the same sar day" in n for n in web07.notes)
    sa = next(s for s in web07.sources if s.kind == "sa")
    assert "!" in sa.path and sa.path.endswith("var/log/sysstat/sa23")


def test_sosreport_sources_belong_to_the_bundles_host(web07):
    by_kind = {s.kind: s for s in web07.sources}
    assert by_kind["nginx-error"].host == "web07"
    assert by_kind["ps"].host == "web07"


def _rendered(case, fmt: str) -> str:
    from sarsleuth import render
    out = io.StringIO()
    render.write_case(fmt, case, out)
    return out.getvalue()


def test_every_output_shows_the_host_facts(web07):
    archive = _one("sosreport-web07-*.tar.xz")
    ran = run_cli("analyze", archive, "--format", "json")
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    (host,) = doc["hosts"]
    assert host["hostname"] == "web07" and host["timezone"] == "Europe/Paris"
    assert host["limits"]["net.ipv4.tcp_max_tw_buckets"]["value"] == "4096"
    assert host["nginx"]["worker_connections"][0]["text"] == "worker_connections 256;"
    text = _rendered(web07, "text")
    assert "host: web07, kernel" in text and "zone Europe/Paris" in text
    assert "Host: web07, kernel" in _rendered(web07, "markdown")
    html = _rendered(web07, "html")
    assert "host: web07, kernel" in html and "zone Europe/Paris" in html


def test_the_archive_is_not_extracted_beside_itself(tmp_path, monkeypatch):
    import shutil
    import tempfile
    copy = tmp_path / "in" / _one("sosreport-web07-*.tar.xz").name
    copy.parent.mkdir()
    shutil.copy(_one("sosreport-web07-*.tar.xz"), copy)
    # a temporary folder of this test's own: other tests running beside it
    # make (and remove) their private copies in the shared one
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    ran = run_cli("analyze", copy, "--format", "json")
    assert ran.returncode == 0
    assert sorted(p.name for p in copy.parent.iterdir()) == [copy.name]
    assert list(private_tmp.iterdir()) == []      # private copies removed


# ------------------------------------------------------------- sos collect
def test_collect_bundle_gives_each_host_its_own_facts_zone_and_year(collect):
    hosts = {h.host: h for h in collect.hosts}
    assert set(hosts) == {"web07", "Cangke_107_176"}      # the proxy's files name it so; its hostname file says proxy07
    assert hosts["Cangke_107_176"].hostname == "proxy07"
    assert hosts["web07"].timezone == "Europe/Paris" and hosts["Cangke_107_176"].timezone == "Asia/Shanghai"
    assert collect.host_zones["Cangke_107_176"] in ("+08:00", "Asia/Shanghai")
    years = {}
    for s in collect.sources:
        if s.kind in ("syslog", "sa"):
            start, end = s.span()
            years.setdefault(s.host, set()).update({start.year, end.year})
    assert years["Cangke_107_176"] == {2014}        # messages (no year) follows its host's sa06
    assert years["web07"] == {2026}
    for f in collect.findings:
        assert f.host in ("web07", "Cangke_107_176"), f


def test_collect_bundle_tells_the_proxy_story_with_its_nginx_configuration(collect):
    top = collect.incidents[0]
    assert top.category == "memory-exhaustion"
    mem = _finding(collect, "memory-pressure", "Cangke_107_176")
    assert mem.metrics["proxy_buffer_bytes_per_connection"] == 1024 * 256 * 1024 + 256 * 1024
    quoted = [e for e in mem.evidence if e.path.endswith("sos_commands/nginx/nginx_-T")]
    assert [e.text for e in quoted] == ["proxy_buffers 1024 256k;", "proxy_buffer_size 256k;"]
    assert "proxy_buffers 1024 256k;" in mem.title
    # RAM as sar recorded it when it happened, not the collecting machine's:
    # the MemTotal the sa file holds (sysstat 12.6's kbmemused leaves out
    # buffers, cache and slab, so kbmemfree + kbmemused falls short of it)
    memory = collect.sar("memory", host="Cangke_107_176")
    at_start = memory.loc[mem.start]
    assert mem.metrics["mem_total_kb"] == 32868836
    assert at_start["kbmemused"] / mem.metrics["mem_total_kb"] * 100 == pytest.approx(at_start["%memused"])
    assert at_start["kbmemfree"] + at_start["kbmemused"] < 32868836
    assert mem.metrics["connections_to_fill_ram"] == pytest.approx(
        mem.metrics["mem_total_kb"] * 1024 / mem.metrics["proxy_buffer_bytes_per_connection"], abs=0.05)
    # the other host's story is its own incident
    assert any(i.findings[0].host == "web07" for i in collect.incidents[1:])


def test_two_sample_folders_keep_their_own_years_and_hosts():
    case = _case(SAMPLES / "tengine-720k", SAMPLES / "nginx-proxy-oom")
    for f in case.findings:
        assert f.host is not None
        year = f.start.year
        assert year == (2016 if f.host == "slbv2test04.cm3" else 2014), f


# ------------------------------------------------------------- other layouts
def test_extracted_sosreport_folder_reads_like_the_archive(tmp_path, web07):
    with tarfile.open(_one("sosreport-web07-*.tar.xz")) as tf:
        tf.extractall(tmp_path, filter="data")
    case = _case(tmp_path)
    assert [h.hostname for h in case.hosts] == ["web07"]
    assert case.hosts[0].limits["net.ipv4.tcp_max_tw_buckets"].value == "4096"
    assert sorted(s.kind for s in case.sources) == sorted(s.kind for s in web07.sources)
    tw = _finding(case, "tcp-timewait", "web07")
    assert tw.metrics == _finding(web07, "tcp-timewait", "web07").metrics


def _tar(path: Path, members: dict, mode="w:gz", extra=()) -> Path:
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1399363200          # 2014-05-06
            tf.addfile(info, io.BytesIO(data))
        for info in extra:
            tf.addfile(info)
    return path


def _var_log_members():
    src = SAMPLES / "nginx-proxy-oom"
    return {"var/log/messages": (src / "messages").read_bytes(), "var/log/sa/sa06": (src / "sa06").read_bytes(),
            "var/log/nginx/error.log": (src / "error.log").read_bytes()}


@pytest.mark.parametrize("root", ["var/log/", "./"])     # tar -C / var/log, tar -C /var/log .
def test_var_log_tarball(tmp_path, root):
    members = {root + k[len("var/log/"):]: v for k, v in _var_log_members().items()}
    case = _case(_tar(tmp_path / "var-log-proxy.tar.gz", members))
    assert {s.kind for s in case.sources} == {"syslog", "sa", "nginx-error"}
    assert all(s.host == "Cangke_107_176" for s in case.sources)
    assert case.incidents[0].category == "memory-exhaustion"
    ev = _finding(case, "enomem").evidence[0]
    name = "nginx/error.log" if root == "./" else "var/log/nginx/error.log"
    assert ev.path == f"{tmp_path / 'var-log-proxy.tar.gz'}!{name}" and ev.line == 9


@pytest.mark.parametrize("mode", ["w", "w:bz2", "w:xz", "zst", "zip"])
def test_every_archive_format_is_streamed(tmp_path, mode):
    members = _var_log_members()
    if mode == "zip":
        import zipfile
        path = tmp_path / "logs.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in members.items():
                zf.writestr(name, data)
    elif mode == "zst":
        zstandard = pytest.importorskip("zstandard", reason="zstandard (the zstd extra) is not installed")
        raw = _tar(tmp_path / "logs.tar", members, "w")
        path = tmp_path / "logs.tar.zst"
        path.write_bytes(zstandard.ZstdCompressor().compress(raw.read_bytes()))
    else:
        path = _tar(tmp_path / "logs.tar.x", members, mode)
    case = _case(path)
    assert {s.kind for s in case.sources} == {"syslog", "sa", "nginx-error"}


def test_nested_archives_are_followed(tmp_path):
    inner = _tar(tmp_path / "sosreport-a.tar.xz", {f"sosreport-a/{k}": v for k, v in _var_log_members().items()},
                 "w:xz")
    outer = _tar(tmp_path / "sos-collector-x.tar.gz", {"sos-collector-x/sosreport-a.tar.xz": inner.read_bytes()})
    case = _case(outer)
    assert {s.kind for s in case.sources} == {"syslog", "sa", "nginx-error"}
    assert all(s.path.startswith(f"{outer}!sos-collector-x/sosreport-a.tar.xz!sosreport-a/var/log/")
               for s in case.sources)


def test_an_archive_inside_a_sosreport_folder_is_not_opened(tmp_path):
    """A sosreport packed with the host's trees beside it (``sys.tgz``,
    ``usr.tgz``, as test roots of other tools keep them): sos writes no
    archive inside its own folder, so they are not opened (the same report
    as a folder never opens them either): its logs are read, none of the
    thousands of sysfs files is sniffed or named as skipped."""
    sysfs = {f"sys/devices/system/cpu/cpu{n}/online": b"1\n" for n in range(40)}
    sysfs["sys/kernel/mm/transparent_hugepage/enabled"] = b"always [madvise] never\n"
    inner = _tar(tmp_path / "sys.tgz", sysfs)
    root = "sosreport-web07-2026-11-20-abcdef"
    members = {f"{root}/sos_commands/host/hostname": b"web07\n", f"{root}/sys.tgz": inner.read_bytes()}
    members.update({f"{root}/{k}": v for k, v in _var_log_members().items()})
    outer = _tar(tmp_path / f"{root}.tar.gz", members)
    case = _case(outer)
    assert {s.kind for s in case.sources} == {"syslog", "sa", "nginx-error"}
    assert case.skipped == [] and not any("sys.tgz" in w for w in case.warnings)
    ran = run_cli("sniff", outer)
    assert ran.returncode == 0 and "sys.tgz!" not in ran.stdout


def test_sniff_lists_the_members_read(tmp_path):
    archive = _one("sosreport-web07-*.tar.xz")
    ran = run_cli("sniff", archive)
    assert ran.returncode == 0, ran.stderr
    kinds = dict(line.split("\t") for line in ran.stdout.splitlines())
    root = archive.name[:-len(".tar.xz")]
    assert kinds[f"{archive}!{root}/var/log/sysstat/sa23"] == "sa"
    assert kinds[f"{archive}!{root}/var/log/nginx/error.log"] == "nginx-error"
    assert kinds[f"{archive}!{root}/sos_commands/process/ps_auxwww"] == "ps"


def test_archives_inside_a_walked_folder_are_read_as_bundles(tmp_path):
    import shutil
    (tmp_path / "case").mkdir()
    shutil.copy(_one("sosreport-web07-*.tar.xz"), tmp_path / "case")
    case = _case(tmp_path / "case")
    assert [h.host for h in case.hosts] == ["web07"]
    assert _finding(case, "tcp-timewait", "web07").metrics["tcp_max_tw_buckets"] == 4096



def test_hostile_host_facts_are_made_safe_in_every_output(tmp_path):
    root = tmp_path / "sosreport-evil-2026-11-20-abcdef"
    (root / "sos_commands" / "host").mkdir(parents=True)
    (root / "sos_commands" / "host" / "hostname").write_text("<img_src=x>\x1b[31mred\n")
    (root / "var" / "log").mkdir(parents=True)
    (root / "var" / "log" / "messages").write_bytes(
        b"May  6 15:04:13 evil kernel: Out of memory: Killed process 4242 (nginx) total-vm:8123456kB, "
        b"anon-rss:7823456kB, file-rss:0kB, shmem-rss:0kB\n")
    case = _case(root)
    text = _rendered(case, "text")
    assert "\x1b" not in text and "host: evil, hostname <img_src=x>" in text
    html = _rendered(case, "html")
    assert "<img_src=x>" not in html and "&lt;img_src=x&gt;" in html
    md = _rendered(case, "markdown")
    assert "\\<img_src=x>" in md and not re.search(r"(?<!\\)<img_src", md)      # escaped, still shown


def test_journal_kept_three_times_by_sos_counts_each_event_once(tmp_path):
    root = tmp_path / "sosreport-web07-2026-11-20-abcdef"
    logs = root / "sos_commands" / "logs"
    logs.mkdir(parents=True)
    (root / "sos_commands" / "host").mkdir()
    (root / "sos_commands" / "host" / "hostname").write_text("web07\n")
    journal = ("-- Logs begin at Fri 2026-11-20 00:00:01 CET, end at Fri 2026-11-20 15:10:02 CET. --\n"
               "Nov 20 15:04:13 web07 kernel: Out of memory: Killed process 4242 (nginx) total-vm:8123456kB, "
               "anon-rss:7823456kB, file-rss:0kB, shmem-rss:0kB\n"
               "Nov 20 15:04:14 web07 systemd[1]: nginx.service: Main process exited, code=killed, status=9/KILL\n")
    for name in ("journalctl_--no-pager", "journalctl_--no-pager_--catalog_--boot"):
        (logs / name).write_text(journal)
    (logs / "journalctl_--disk-usage").write_text("Archived and active journals take up 56.0M in the file system.\n")
    case = _case(root)
    assert {s.path.rsplit("/", 1)[1] for s in case.sources} == {"journalctl_--no-pager",
                                                                "journalctl_--no-pager_--catalog_--boot"}
    _finding(case, "oom-kill", "web07")
    # the kill and systemd's word for it, each once
    assert list(case.events["kind"]) == ["oom-kill", "service-exit"] and case.merged == {"events": 2}


def test_zip_inside_a_tar_is_followed(tmp_path):
    import zipfile
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in _var_log_members().items():
            zf.writestr(name, data)
    outer = _tar(tmp_path / "case.tar.gz", {"case/var-log-proxy.zip": inner.getvalue()})
    case = _case(outer)
    assert {s.kind for s in case.sources} == {"syslog", "sa", "nginx-error"}
    assert all(s.path.startswith(f"{outer}!case/var-log-proxy.zip!var/log/") for s in case.sources)


def test_json_with_hosts_validates_against_shipped_schema(collect):
    import jsonschema
    from importlib import resources
    schema = json.loads(resources.files("sarsleuth.schema").joinpath("analysis.schema.json").read_text())
    from sarsleuth.render.formats.json import document
    doc = document(collect)
    jsonschema.validate(doc, schema)
    assert {h["host"] for h in doc["hosts"]} == {"web07", "Cangke_107_176"}


def test_notes_name_archive_members_never_private_copies():
    """A member kept for two reasons (a sosreport beside the collect that
    holds it) is read once without a note; no note or warning names the
    private copies sarsleuth reads members from."""
    case = _case(_one("sosreport-web07-*.tar.xz"), _one("sos-collector-*.tar.gz"))
    said = case.notes + case.warnings
    assert not [n for n in said if "sarsleuth-bundle-" in n]
    assert not [n for n in said if "is the same file as" in n and n.split(" is the same")[0]
                == n.split("same file as ")[1].split(": read once")[0]]
    # web07's sa23 read from both bundles counts once (its interrupts per CPU included)
    assert case.merged["metric_values"] == 15912


def test_a_folder_packed_inside_an_extracted_sosreport_is_read_where_it_was(tmp_path):
    """hotsos keeps a sosreport's `sos_commands/logs` as `sos_commands/
    logs.xz` and a unit's journal as `journalctl_..._unit_X.daemon.xz`:
    tars whatever their names. Their members are read under the paths
    they had; an archive elsewhere in the folder is not opened."""
    root = tmp_path / "sosreport-k8s-4-2022-02-12-abcdef"
    (root / "sos_commands" / "host").mkdir(parents=True)
    (root / "sos_commands" / "host" / "hostname").write_text("k8s-4\n")
    journal = ("-- Logs begin at Fri 2022-02-11 18:58:10 UTC, end at Fri 2022-02-11 19:23:41 UTC. --\n"
               "Feb 11 19:04:13 k8s-4 kernel: Out of memory: Killed process 4242 (java) total-vm:8123456kB, "
               "anon-rss:7823456kB, file-rss:0kB, shmem-rss:0kB\n")
    _tar(root / "sos_commands" / "logs.xz", {"logs/journalctl_--no-pager": journal.encode(),
                                              "logs/journalctl_--disk-usage": b"Archived and active journals take up 56M\n"},
         "w:xz")
    unit = ("-- Logs begin at Fri 2022-02-11 18:58:10 UTC, end at Fri 2022-02-11 19:23:41 UTC. --\n" + "".join(
        f"Feb 11 19:0{i}:4{i} k8s-4 systemd[1]: snap.kube-scheduler.daemon.service: Main process exited, "
        f"code=exited, status=1/FAILURE\nFeb 11 19:0{i}:4{i} k8s-4 systemd[1]: snap.kube-scheduler.daemon.service: "
        "Failed with result 'exit-code'.\n" for i in range(3)))
    (root / "sos_commands" / "kubernetes").mkdir()
    _tar(root / "sos_commands" / "kubernetes" / "journalctl_--no-pager_--unit_snap.kube-scheduler.daemon.xz",
         {"journalctl_--no-pager_--unit_snap.kube-scheduler.daemon": unit.encode()}, "w:xz")
    _tar(root / "sys.tar.gz", {f"sys/devices/system/cpu/cpu{n}/online": b"1\n" for n in range(4)})
    case = _case(root)
    assert sorted(s.path.rsplit("!", 1)[1] for s in case.sources) == [
        "journalctl_--no-pager_--unit_snap.kube-scheduler.daemon", "logs/journalctl_--no-pager"]
    assert {s.host for s in case.sources} == {"k8s-4"}
    _finding(case, "oom-kill", "k8s-4")
    assert _finding(case, "service-failure", "k8s-4").metrics["failures"] == 3
    assert case.skipped == [] and not any("sys.tar.gz" in w for w in case.warnings)

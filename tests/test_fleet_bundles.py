"""A fleet of support bundles: sosreports (archives, extracted folders, the
nodes of a ``sos collect`` archive) grouped into hosts by their host facts,
each host's bundle read in place by its own pipeline, its facts (zone,
limits, kernel, CPUs) carried into every fleet output.

Three sosreports are built here the way ``sos report`` lays them out (the
sa file by the project's sysstat writer, ``sysctl -a``, ``uname -a``,
``/proc`` copies, ``etc/localtime`` as a link into zoneinfo) for three
database hosts whose shared storage stalls at 03:12 UTC, each in its own
zone; the fourth host is the real sosreport ``sos`` made of a staged
TIME_WAIT incident (``samples/bundles``)."""
from __future__ import annotations

import io
import json
import shutil
import sys
import tarfile
import time
from pathlib import Path

import pytest

from .conftest import SAMPLES, run_cli

sys.path.insert(0, str(SAMPLES))
from make_fleet import KERNEL, MEM_TOTAL_KB, NCPU, SHARED_START, _records, _sample_times  # noqa: E402

#: host -> (zone, its UTC offset in November, in minutes)
DB_HOSTS = {"db-1": ("Europe/Paris", 60), "db-2": ("UTC", 0), "db-3": ("America/New_York", -300)}
TW_BUCKETS = {"db-1": 262144, "db-2": 131072, "db-3": 65536}
WEB07 = next(iter(sorted((SAMPLES / "bundles").glob("sosreport-web07-*.tar.xz"))), None)


def _sysctl_a(host: str) -> bytes:
    lines = ["fs.file-max = 9223372036854775807", "fs.nr_open = 1048576",
             "net.core.somaxconn = 4096", "net.ipv4.tcp_max_orphans = 65536",
             "net.ipv4.tcp_max_syn_backlog = 1024", f"net.ipv4.tcp_max_tw_buckets = {TW_BUCKETS[host]}",
             "net.ipv4.tcp_mem = 188964\t251953\t377928", "vm.min_free_kbytes = 67584",
             "vm.overcommit_memory = 0", "vm.swappiness = 60"]
    return ("\n".join(lines) + "\n").encode()


def _sosreport_members(host: str, zone: str, offset: int, tmp: Path) -> tuple[str, dict, list]:
    import numpy as np
    from sarsleuth.inputs.parsers.sa.writer import write_sa
    import datetime as dt
    root = f"sosreport-{host}-2026-11-20-{host.replace('-', '')}x"
    times = _sample_times(offset)
    if offset < 0:
        # 03:12 UTC is still the day before on a clock behind UTC: sa19
        times = [t - dt.timedelta(days=1) for t in times]
    day = times[0].day
    sa = write_sa(tmp / f"{host}-sa{day}", host=host, kernel=KERNEL, ncpu=NCPU,
                  records=_records(np.random.default_rng(700 + offset), times, True),
                  utc_offset_minutes=offset, tzname="UTC" if offset == 0 else zone)
    cpuinfo = "".join(f"processor\t: {c}\nmodel name\t: Intel(R) Xeon(R) Gold 6230\n\n" for c in range(NCPU))
    members = {
        f"{root}/sos_commands/host/hostname": f"{host}\n".encode(),
        f"{root}/sos_commands/kernel/uname_-a":
            f"Linux {host} {KERNEL} #1 SMP PREEMPT_DYNAMIC Thu Apr 18 08:37:44 EDT 2024 x86_64 GNU/Linux\n".encode(),
        f"{root}/sos_commands/kernel/sysctl_-a": _sysctl_a(host),
        f"{root}/proc/meminfo": f"MemTotal:        {MEM_TOTAL_KB} kB\nMemFree:         3100000 kB\n".encode(),
        f"{root}/proc/cpuinfo": cpuinfo.encode(),
        f"{root}/var/log/sa/sa{day}": sa.read_bytes(),
    }
    link = tarfile.TarInfo(f"{root}/etc/localtime")
    link.type, link.linkname = tarfile.SYMTYPE, f"../usr/share/zoneinfo/{zone}"
    return root, members, [link]


def _tar(path: Path, members: dict, links=(), mode="w:xz") -> Path:
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1763610000
            tf.addfile(info, io.BytesIO(data))
        for info in links:
            tf.addfile(info)
    return path


def _messages(host: str, offset: int) -> str:
    """rsyslog's traditional lines on the host's wall clock: the hung tasks
    of the stall."""
    import datetime as dt
    zone = dt.timezone(dt.timedelta(minutes=offset))
    at = SHARED_START.astimezone(zone) + dt.timedelta(minutes=2)
    return "".join(f"{t:%b} {t.day:2d} {t:%H:%M:%S} {host} kernel: INFO: task {task} blocked for more than "
                   f"120 seconds.\n" for t, task in ((at, "jbd2/dm-0-8:612"),
                                                      (at + dt.timedelta(seconds=30), "postgres:4411")))


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory):
    """fleet/: db-1 and db-2 as sosreport archives, db-3 extracted, web07 as
    sos made it; db-1's syslog handed over separately, elsewhere."""
    if WEB07 is None:
        pytest.skip("samples/bundles holds no web07 sosreport")
    tmp = tmp_path_factory.mktemp("fleet-bundles")
    work, fleet = tmp / "work", tmp / "fleet"
    work.mkdir()
    (fleet / "extracted").mkdir(parents=True)
    roots = {}
    for host, (zone, offset) in DB_HOSTS.items():
        root, members, links = _sosreport_members(host, zone, offset, work)
        roots[host] = root
        if host == "db-3":
            for name, data in members.items():
                (fleet / "extracted" / name).parent.mkdir(parents=True, exist_ok=True)
                (fleet / "extracted" / name).write_bytes(data)
            (fleet / "extracted" / root / "etc").mkdir()
            (fleet / "extracted" / root / "etc" / "localtime").symlink_to(links[0].linkname)
        else:
            _tar(fleet / f"{root}.tar.xz", members, links)
    shutil.copy(WEB07, fleet)
    (tmp / "handed-over").mkdir()
    (tmp / "handed-over" / "messages").write_text(_messages("db-1", 60), "utf-8")
    return tmp, fleet, roots


def _serial(monkeypatch):
    for name in [m for m in sys.modules if m == "distributed" or m.startswith("distributed.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "distributed", None)      # no cluster: hosts run in this process


@pytest.fixture(scope="module")
def analysed(fleet_dir):
    import sarsleuth.fleet
    tmp, fleet, _roots = fleet_dir
    mp = pytest.MonkeyPatch()
    _serial(mp)
    try:
        before = sorted(p.name for p in fleet.rglob("*"))
        result = sarsleuth.fleet.analyze(fleet, tmp / "handed-over", save=tmp / "case")
        assert sorted(p.name for p in fleet.rglob("*")) == before     # nothing extracted beside the inputs
    finally:
        mp.undo()
    return result


def test_bundles_are_grouped_by_their_host_facts_and_loose_files_join(fleet_dir):
    from sarsleuth.fleet.hosts import group_inputs
    tmp, fleet, roots = fleet_dir
    grouping = group_inputs([fleet, tmp / "handed-over"])
    assert grouping.hosts == ["db-1", "db-2", "db-3", "web07"]
    db1 = grouping.groups[0]
    assert db1.files == [str(fleet / f"{roots['db-1']}.tar.xz"), str(tmp / "handed-over" / "messages")]
    assert db1.facts["zone"] == "Europe/Paris" and db1.facts["kernel"] == KERNEL and db1.facts["ncpu"] == NCPU
    db3 = grouping.groups[2]
    assert db3.files == [str(fleet / "extracted" / roots["db-3"])]      # the extracted folder is one bundle


def test_the_shared_stall_is_one_fleet_incident_naming_its_three_hosts(analysed):
    top = analysed.incidents[0]
    assert "iowait-spike" in top.kinds
    assert top.hosts == ["db-1", "db-2", "db-3"] and top.hosts_without == ["web07"]
    # three zones, one instant: every host's clock is its own bundle's zone
    assert str(top.start)[:16] == "2026-11-20 03:20"
    assert top.wall_clock is False
    zones = {h.host: h.facts["zone"] for h in analysed.hosts}
    assert zones == {"db-1": "Europe/Paris", "db-2": "UTC", "db-3": "America/New_York", "web07": "Europe/Paris"}
    db1 = analysed.host("db-1")
    assert any(f.detector == "hung-task" for f in db1.findings)      # from the syslog handed over apart


def test_the_other_host_is_judged_against_its_own_sysctl(analysed, fleet_dir):
    web07 = analysed.host("web07")
    tw = next(f for f in web07.findings if f.detector == "tcp-timewait")
    assert tw.metrics["tcp_max_tw_buckets"] == 4096
    cited = [e for e in tw.evidence if e.path.endswith("sos_commands/kernel/sysctl_-a")]
    assert cited and cited[0].text == "net.ipv4.tcp_max_tw_buckets = 4096"
    assert cited[0].path.startswith(f"{fleet_dir[1] / WEB07.name}!sosreport-web07-")   # read in place
    assert cited[0].line == web07.host_facts["limits"]["net.ipv4.tcp_max_tw_buckets"]["line"]
    assert not any("tcp-timewait" in i.kinds and len(i.hosts) > 1 for i in analysed.incidents)


def test_host_facts_reach_json_text_and_parquet(analysed, fleet_dir):
    tmp, fleet, roots = fleet_dir
    doc = analysed.to_json()
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (the test extra) is not installed")
    from importlib import resources
    schema = json.loads(resources.files("sarsleuth.schema").joinpath("analysis.schema.json").read_text())
    jsonschema.validate(json.loads(json.dumps(doc, default=str)), schema)
    hosts = {h["host"]: h for h in doc["hosts"]}
    assert hosts["db-3"]["timezone"] == "America/New_York" and hosts["db-3"]["ncpu"] == NCPU
    assert hosts["db-3"]["mem_total_kb"] == MEM_TOTAL_KB and hosts["db-3"]["kernel"] == KERNEL
    lim = hosts["db-2"]["limits"]["net.ipv4.tcp_max_tw_buckets"]
    assert (lim["value"], lim["line"], lim["text"]) == ("131072", 6, "net.ipv4.tcp_max_tw_buckets = 131072")
    assert lim["path"] == f"{fleet / roots['db-2']}.tar.xz!{roots['db-2']}/sos_commands/kernel/sysctl_-a"
    from sarsleuth.render.fleet_text import fleet_text
    text = fleet_text(analysed)
    assert f"- db-3: kernel {KERNEL}, {NCPU} CPUs, 7.7 GiB RAM, zone America/New_York, 10 limits read" in text
    import sarsleuth
    case = sarsleuth.load_case(tmp / "case")
    got = case.sql("SELECT host, value, line, number FROM limits WHERE name = 'net.ipv4.tcp_max_tw_buckets' "
                   "ORDER BY host")
    assert got.values.tolist() == [["db-1", "262144", 6, 262144.0], ["db-2", "131072", 6, 131072.0],
                                   ["db-3", "65536", 6, 65536.0], ["web07", "4096",
                                   web07_line(analysed), 4096.0]]
    facts = case.sql("SELECT host, zone, ncpu, kernel FROM hosts ORDER BY host").values.tolist()
    assert facts[2] == ["db-3", "America/New_York", NCPU, KERNEL]


def web07_line(analysed) -> int:
    return analysed.host("web07").host_facts["limits"]["net.ipv4.tcp_max_tw_buckets"]["line"]


def test_a_collect_archive_of_three_nodes_is_a_fleet(fleet_dir, tmp_path, monkeypatch):
    """sos collect keeps one sosreport archive per node: three nodes make a
    fleet by themselves; each host's pipeline decompresses only its node."""
    tmp, fleet, roots = fleet_dir
    nodes = {f"sos-collector-stall-2026-11-20-abcdef/{p.name}": p.read_bytes()
             for p in sorted(fleet.glob("sosreport-db-*.tar.xz"))}
    (tmp_path / "db-3").mkdir()
    folder = fleet / "extracted" / roots["db-3"]
    with tarfile.open(tmp_path / f"{roots['db-3']}.tar.xz", "w:xz") as tf:
        tf.add(folder, arcname=roots["db-3"])
    nodes[f"sos-collector-stall-2026-11-20-abcdef/{roots['db-3']}.tar.xz"] = \
        (tmp_path / f"{roots['db-3']}.tar.xz").read_bytes()
    collect = _tar(tmp_path / "sos-collector-stall-2026-11-20-abcdef.tar.gz", nodes, mode="w:gz")
    from sarsleuth.fleet.hosts import group_inputs, names_hosts
    assert names_hosts([collect], 3) and not names_hosts([collect], 4)
    # three bundles of two hosts (web07 alone and again in a collect of two) are not three hosts
    assert not names_hosts([SAMPLES / "bundles"], 3) and names_hosts([SAMPLES / "bundles"], 2)
    groups = group_inputs([collect]).groups
    assert [g.host for g in groups] == ["db-1", "db-2", "db-3"]
    assert all(list(g.select) == [str(collect)] and len(g.select[str(collect)]) == 1 for g in groups)
    _serial(monkeypatch)
    began = time.perf_counter()
    ran = run_cli("analyze", collect, "--format", "json")           # no --fleet: three nodes are a fleet
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    assert doc["fleet_incidents"][0]["hosts"] == ["db-1", "db-2", "db-3"]
    assert [h["timezone"] for h in doc["hosts"]] == ["Europe/Paris", "UTC", "America/New_York"]
    assert all(s["path"].startswith(f"{collect}!sos-collector-stall-2026-11-20-abcdef/sosreport-{s['host']}-")
               for s in doc["sources"])
    assert time.perf_counter() - began < 60


def test_on_dask_the_views_show_each_hosts_facts(fleet_dir, tmp_path):
    """The same fleet on a (threaded, in-process) Dask cluster: every
    bundle read on its worker; markdown and HTML show the host facts."""
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is part of the test extra")
    tmp, fleet, _roots = fleet_dir
    report = tmp_path / "fleet.html"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  # in-process workers measure the whole test process's memory, which
                                  # grows over a session past any fixed limit: paused, they never finish
                                  memory_limit=0) as cluster:
        ran = run_cli("analyze", fleet, "--scheduler", cluster.scheduler_address, "--format", "markdown",
                      "--html", report)
    assert ran.returncode == 0, ran.stderr
    shown = ran.stdout.replace("\\-", "-").replace("\\_", "_")      # markdown escapes, as printed
    assert "seen on: db-1, db-2, db-3" in shown
    assert "\n## Host facts\n" in shown
    assert f"- db-2: kernel {KERNEL}, {NCPU} CPUs, 7.7 GiB RAM, zone UTC, 10 limits read" in shown
    html = report.read_text("utf-8")
    assert "limits read from the bundle (10)" in html and "zone America/New_York" in html
    assert "<td>net.ipv4.tcp_max_tw_buckets</td><td>65536</td>" in html


def test_a_collect_archive_of_extracted_nodes_gives_one_host_per_node(fleet_dir, tmp_path):
    tmp, fleet, roots = fleet_dir
    folder = fleet / "extracted" / roots["db-3"]
    with tarfile.open(tmp_path / "sos-collector-x.tar.gz", "w:gz") as tf:
        tf.add(folder, arcname=f"sos-collector-x/{roots['db-3']}")
        for host in ("db-1", "db-2"):
            with tarfile.open(fleet / f"{roots[host]}.tar.xz") as node:
                for info in node.getmembers():
                    data = node.extractfile(info) if info.isfile() else None
                    info.name = f"sos-collector-x/{info.name}"
                    tf.addfile(info, data)
    from sarsleuth.fleet.hosts import group_inputs
    groups = group_inputs([tmp_path / "sos-collector-x.tar.gz"]).groups
    assert [(g.host, g.facts["zone"]) for g in groups] == [("db-1", "Europe/Paris"), ("db-2", "UTC"),
                                                            ("db-3", "America/New_York")]
    import sarsleuth
    case = sarsleuth.load(tmp_path / "sos-collector-x.tar.gz")
    assert sorted((h.host, h.timezone) for h in case.hosts) == [("db-1", "Europe/Paris"), ("db-2", "UTC"),
                                                                ("db-3", "America/New_York")]


def test_a_hosts_limits_from_python_and_a_single_sosreport_saved(analysed, tmp_path):
    lim = analysed.host("db-3").limit("net.ipv4.tcp_max_tw_buckets")
    assert (lim.number(), lim.line, lim.text) == (65536.0, 6, "net.ipv4.tcp_max_tw_buckets = 65536")
    assert analysed.host("web07").limit("worker_connections").text == "worker_connections 256;"
    assert analysed.host("db-1").limit("worker_connections") is None
    pytest.importorskip("duckdb", reason="DuckDB (the sql extra) is not installed")
    import sarsleuth
    from sarsleuth.fleet.save import save_case
    save_case(sarsleuth.load(WEB07), tmp_path / "one")
    got = sarsleuth.load_case(tmp_path / "one").sql(
        "SELECT host, source, value, text FROM limits WHERE name IN ('net.ipv4.tcp_max_tw_buckets', "
        "'worker_connections') ORDER BY name").values.tolist()
    assert got == [["web07", "sysctl", "4096", "net.ipv4.tcp_max_tw_buckets = 4096"],
                   ["web07", "nginx", "256", "worker_connections 256;"]]


def test_a_var_log_tarball_joins_its_host_by_the_names_in_its_logs(fleet_dir, tmp_path):
    """No hostname file in a /var/log tarball: its syslog names the host."""
    from sarsleuth.fleet.hosts import group_inputs
    tmp, fleet, roots = fleet_dir
    tarball = _tar(tmp_path / "var-log-x.tar.gz", {
        "var/log/dmesg": b"[    0.000000] Linux version 5.14.0-427.13.1.el9_4.x86_64\n",
        "var/log/messages": _messages("db-2", 0).encode()}, mode="w:gz")
    grouping = group_inputs([fleet, tarball])
    assert grouping.hosts == ["db-1", "db-2", "db-3", "web07"]
    db2 = grouping.groups[1]
    assert db2.files == [str(fleet / f"{roots['db-2']}.tar.xz"), str(tarball)]
    assert db2.select[str(tarball)] == [str(tarball)]

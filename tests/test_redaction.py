"""--redact: no host name, address or user name of the inputs in any byte
of any output (text, JSON, markdown, Jira, HTML with its charts, plots,
the saved Parquet case, a comparison PNG), and the story unchanged: the
JSON of the redacted case is the JSON of the case with each name replaced
by its stand-in, nothing else."""
from __future__ import annotations

import io
import ipaddress
import json
import os
import re
import stat
import struct
import zlib

import pytest

import sarsleuth
from sarsleuth import render
from sarsleuth.redaction.check import refuse_folder_leak

from .conftest import SAMPLES, run_cli

CASES = {
    "nginx-proxy-oom": [SAMPLES / "nginx-proxy-oom"],
    "image-service-ab": [SAMPLES / "image-service-ab"],
    "tengine-720k": [SAMPLES / "tengine-720k"],
    "nginx-worker-crash": [SAMPLES / "nginx-worker-crash"],
    "live-loopback": [SAMPLES / "live-loopback"],
    # every release's sa header (each layout names the host its own way),
    # and the sadf and sar renderings of the oldest and newest release
    "sysstat-versions": sorted((SAMPLES / "sysstat-versions").glob("*/sa.gz"))
    + sorted(p for v in ("9.1.5", "12.7.9") for p in (SAMPLES / "sysstat-versions" / v).glob("s[a-z]*-*.gz")),
    "bundles": sorted((SAMPLES / "bundles").glob("*.tar.*")),
}
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_MAC = re.compile(r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}(?![0-9A-Fa-f:])")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{1,4}(?![\w:])")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_SYSCTL = ("abi", "crypto", "debug", "dev", "fs", "kernel", "net", "sunrpc", "user", "vm")


def _system_users() -> set:
    import tomllib
    from importlib import resources
    data = tomllib.loads(resources.files("sarsleuth.knowledge").joinpath("redaction.toml").read_text("utf-8"))
    return {u.lower() for u in data["system_users"]}


def _outputs(case) -> dict:
    out = {}
    for name in render.names():
        buf = io.StringIO()
        render.write_case(name, case, buf)
        out[name] = buf.getvalue()
    # the report's own scripts (uPlot, the explorer) are the same in every
    # report, none of it from an input ("t.add(e)" is no host "add"); the
    # explorer's data is checked with its names, without its numbers (runs
    # of letters where "vM" turns up by chance)
    out["html"] = re.sub(r"<script>.*?</script>", "<script></script>", out["html"], flags=re.S)
    out["html"] = re.sub(r'(<script type="application/json" id="explorer-data">)(.*?)(</script>)',
                         lambda m: m.group(1) + _without_numbers(m.group(2)) + m.group(3), out["html"], flags=re.S)
    return out


def _without_numbers(data: str) -> str:
    payload = json.loads(data)
    for host in payload["hosts"]:
        for section in host["sections"]:
            section.pop("data")
    return json.dumps(payload)


def _originals(plain, outputs: dict, mapping: dict) -> set:
    """What must not be seen again: the case's host names (as its files
    give them, and their first labels), every address and e-mail address
    in its unredacted outputs, the users of its ps snapshots, and every
    original the map file lists."""
    names = {o for kind in mapping.values() for o in kind}
    hosts = {s.host for s in plain.sources} | {n for h in plain.hosts for n in (h.host, h.hostname)}
    if plain.events is not None and len(plain.events):
        hosts |= set(plain.events["host"].dropna())
    hosts = {str(h) for h in hosts if h and str(h) not in ("localhost",)}
    names |= hosts | {h.split(".")[0] for h in hosts}
    text = "\n".join(outputs.values())
    for m in _IPV4.findall(text):
        ip = ipaddress.IPv4Address(m) if all(int(x) < 256 for x in m.split(".")) else None
        mask = ip is not None and bin(int(ip)).count("1") == bin(int(ip)).rstrip("0").count("1")
        if ip is not None and not (ip.is_loopback or ip.is_unspecified or mask):
            names.add(m)
    for m in _IPV6.findall(text):
        try:
            ip = ipaddress.IPv6Address(m)
        except ValueError:
            continue
        if not (ip.is_loopback or ip.is_unspecified):
            names.add(m)
    names |= {m for m in _MAC.findall(text) if m.strip("0:")}
    names |= set(_EMAIL.findall(text))
    system = _system_users()
    for s in plain.sources:
        frame = s.meta.get("processes")
        if frame is not None:
            names |= {u for u in frame["user"].dropna() if u.lower() not in system and not u.isdigit()}
    return names


def _leaks(names: set, blob: str, binary: bool = False) -> list:
    """``binary``: the bytes of a compressed file, where two or three
    letters turn up by chance: only longer names are looked for there."""
    found = []
    for name in names:
        if binary and len(name) < 6:
            continue
        for m in re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", blob, re.I):
            after = blob[m.end():m.end() + 2]
            if name.lower() in _SYSCTL and after[:1] == "." and after[1:].isalpha():
                continue          # vm.min_free_kbytes is a setting, not the host "vm"
            found.append((name, blob[max(0, m.start() - 50):m.end() + 30]))
            break
    return found


def _substituted(value, mapping: dict):
    """``value`` (JSON) with every original replaced by its stand-in, as a
    reader with the map file would undo it the other way."""
    table = {o.lower(): s for kind in mapping.values() for o, s in kind.items()}
    if not table:
        return value
    rx = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(o) for o in sorted(table, key=len, reverse=True))
                    + r")(?![A-Za-z0-9_])", re.I)

    def one(m):
        after = m.string[m.end():m.end() + 2]
        if m.group(0).lower() in _SYSCTL and after[:1] == "." and after[1:].isalpha():
            return m.group(0)
        return table[m.group(0).lower()]

    def walk(v):
        if isinstance(v, str):
            return rx.sub(one, v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        return v
    return walk(value)


def _story(doc: dict) -> dict:
    doc = dict(doc)
    doc.pop("redacted")
    doc["incidents"] = [{k: v for k, v in inc.items() if k != "id"} for inc in doc["incidents"]]
    return doc


def _parquet_text(folder) -> str:
    """Every value, name and metadata of a saved case's Parquet files (the
    raw bytes are looked at apart: see ``_raw``): each column's name and
    each distinct value it holds, as JSON writes them (a value repeated in
    200,000 rows is the same text each time: once is what the checks read,
    and the text of a case with a day of sar data stays a few MB, not 30)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    parts = []
    for root, _dirs, files in os.walk(folder):
        parts.append(root)
        for f in files:
            path = os.path.join(root, f)
            parts.append(path)
            if f.endswith(".parquet"):
                table = pq.read_table(path)
                columns = {}
                for name, column in zip(table.column_names, table.columns):
                    try:
                        columns[name] = pc.unique(column).to_pylist()
                    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
                        columns[name] = column.to_pylist()
                parts.append(json.dumps(columns, default=str))
                parts.append(str(table.schema.metadata))
    return "\n".join(parts)


def _raw(folder) -> str:
    parts = []
    for root, _dirs, files in os.walk(folder):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                parts.append(fh.read().decode("latin-1"))
    return "\n".join(parts)


def _png_text(data: bytes) -> str:
    """The text chunks of a PNG (tEXt, zTXt, iTXt), decoded."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    out, pos = [], 8
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"tEXt":
            out.append(body.decode("latin-1"))
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            out.append(key.decode("latin-1") + " " + zlib.decompress(rest[1:]).decode("latin-1"))
        elif kind == b"iTXt":
            out.append(body.decode("utf-8", "replace"))
        pos += 12 + length
    return "\n".join(out)


@pytest.fixture(scope="module", params=sorted(CASES))
def redacted(request, sample_case):
    paths = CASES[request.param]
    plain = sarsleuth.load(*paths) if len(paths) > 1 else sample_case(request.param)
    red = sarsleuth.load(*paths, redact=True)
    return request.param, plain, red


def test_no_original_name_in_any_output_and_the_story_unchanged(redacted, tmp_path):
    from sarsleuth.render.plots import figure_svg, incident_figure
    from sarsleuth.fleet.save import save_case
    name, plain, red = redacted
    mapping = red.redactor.mapping()
    plain_outputs = _outputs(plain)
    names = _originals(plain, plain_outputs, mapping)
    outputs = _outputs(red)
    for inc in red.incidents:
        fig = incident_figure(red, inc)
        if fig is not None:
            outputs[f"plot {inc.rank}"] = figure_svg(fig)
    save_case(red, tmp_path / "case", CASES[name])
    outputs["parquet"] = _parquet_text(tmp_path / "case")
    for fmt, text in outputs.items():
        assert not _leaks(names, text), (name, fmt, _leaks(names, text))
        # the final check every output passes finds nothing in a redacted case's
        assert red.redactor.leak(text) is None, (name, fmt, red.redactor.leak(text))
    assert not _leaks(names, _raw(tmp_path / "case"), binary=True)
    refuse_folder_leak(red.redactor, tmp_path / "case", "case")
    # every output says it is redacted
    for fmt in ("text", "markdown", "jira", "html"):
        assert "Redacted: host and domain names" in " ".join(outputs[fmt].split()), (name, fmt)
    # the JSON minus the names is the unredacted one: categories, times, numbers, ranks as analysed
    assert _story(json.loads(outputs["json"])) == _story(_substituted(json.loads(plain_outputs["json"]), mapping))
    assert json.loads(outputs["json"])["redacted"].startswith("Redacted:")


def test_the_bundle_through_the_command_line_with_its_private_map(tmp_path):
    """The collect archive and web07's own sosreport: the hosts, the
    upstreams' addresses and the user of a mail address all replaced, in
    the JSON, the HTML, the plots and the saved case; the map, written
    only on request, readable by its owner alone, says what each stand-in
    replaced."""
    paths = CASES["bundles"]
    outputs = {}
    proc = run_cli("analyze", *paths, "--redact", "--redact-map", tmp_path / "map.json", "--format", "json",
                   "--html", tmp_path / "r.html", "--plots", tmp_path / "plots", "--save", tmp_path / "case")
    assert proc.returncode == 0, proc.stderr
    mapping = json.loads((tmp_path / "map.json").read_text())
    assert stat.S_IMODE(os.stat(tmp_path / "map.json").st_mode) == 0o600
    assert {"Cangke_107_176", "proxy07", "web07"} <= set(mapping["host"])
    # an upstream subnet stays one subnet, each address its own host part
    fake_11, fake_12 = mapping["ipv4"]["10.20.0.11"], mapping["ipv4"]["10.20.0.12"]
    assert fake_11.startswith("198.18.") and fake_11.endswith(".11") and fake_12 == fake_11[:-2] + "12"
    assert len({s.rsplit(".", 1)[0] for s in mapping["ipv4"].values()}) == \
        len({o.rsplit(".", 1)[0] for o in mapping["ipv4"]})        # one fake /24 per real /24
    outputs["json"] = proc.stdout
    outputs["stderr"] = proc.stderr
    outputs["html"] = (tmp_path / "r.html").read_text()
    for svg in (tmp_path / "plots").iterdir():
        outputs[svg.name] = svg.read_text()
    outputs["parquet"] = _parquet_text(tmp_path / "case")
    assert not _leaks(set(mapping["host"]) | set(mapping["ipv4"]), _raw(tmp_path / "case"), binary=True)
    names = set(mapping["host"]) | set(mapping["ipv4"]) | set(mapping.get("user", {})) | \
        set(mapping.get("email", {}))
    for fmt, text in outputs.items():
        assert not _leaks(names, text), (fmt, _leaks(names, text))
    assert "host-1" in outputs["json"] and fake_11 in outputs["json"]
    # without --redact-map nothing is written beside the report
    assert run_cli("analyze", *paths, "--redact-map", tmp_path / "m2.json").returncode == 2
    assert not (tmp_path / "m2.json").exists()


def test_a_comparison_png_and_table_name_no_address(tmp_path):
    """A load-test report named after the server it hit: the table and the
    PNG (its text chunks too) carry the stand-in."""
    src = (SAMPLES / "live-loopback" / "ab-c200.txt").read_text()
    named = tmp_path / "ab-10.20.0.11.txt"
    named.write_text(src.replace("Server Hostname:        127.0.0.1", "Server Hostname:        10.20.0.11"))
    png = tmp_path / "runs.png"
    proc = run_cli("compare", named, SAMPLES / "live-loopback" / "wrk-c400.txt", "--redact", "--plot", png,
                   "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert rows[0]["file"] == "ab-198.18.0.11.txt" and rows[0]["requests_per_sec"] == 9866.85
    data = png.read_bytes()
    assert "10.20.0.11" not in _png_text(data) + data.decode("latin-1")
    assert "Software" in _png_text(data)        # the chunks were read


def test_config_patterns_and_what_is_kept(tmp_path):
    """The config's own pattern is replaced too (customer-1); loopback
    addresses, netmasks, root and sysctl names are no one's name and stay."""
    log = tmp_path / "messages"
    log.write_text(
        "May  6 15:04:13 db1 kernel: Out of memory: Killed process 4242 (java) total-vm:1021908kB, "
        "anon-rss:524288kB, file-rss:4096kB, shmem-rss:0kB\n"
        "May  6 15:04:14 db1 sshd[811]: Accepted publickey for alice from 10.1.2.3 port 52514 ssh2: ACME-4711\n"
        "May  6 15:04:15 db1 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/bin/true\n"
        "May  6 15:04:16 db1 kernel: eth0: link up, 00:1b:21:3a:4f:5e, mask 255.255.255.0 via 127.0.0.1\n")
    config = tmp_path / "c.toml"
    config.write_text("[redact.patterns]\ncustomer = 'ACME-[0-9]+'\n")
    case = sarsleuth.load(log, year=2014, config=config, redact=True)
    mapping = case.redactor.mapping()
    assert mapping["customer"] == {"ACME-4711": "customer-1"}
    assert mapping["user"] == {"alice": "user-1"} and mapping["host"] == {"db1": "host-1"}
    assert mapping["mac"] == {"00:1b:21:3a:4f:5e": "02:00:00:00:00:01"}
    assert mapping["ipv4"] == {"10.1.2.3": "198.18.0.3"}
    text = json.dumps(case.to_json())
    assert "host-1" in text and "db1" not in text and "java" in text
    bad = tmp_path / "bad.toml"
    bad.write_text("[redact.patterns]\nx = '(a)\\1'\n")
    proc = run_cli("analyze", log, "--redact", "--config", bad)
    assert proc.returncode == 2 and "RE2" in proc.stderr


def test_a_fleet_is_redacted_with_one_set_of_stand_ins(monkeypatch, tmp_path):
    """Each host of a fleet analysed on its own, the result redacted as
    one: host-1 is the same host in every host's story and in the fleet's
    incidents; a fleet's --save (its hosts written before) is refused."""
    for name in [m for m in list(__import__("sys").modules) if m == "distributed" or m.startswith("distributed.")]:
        monkeypatch.delitem(__import__("sys").modules, name)
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)      # the hosts run in this process
    paths = CASES["bundles"]
    proc = run_cli("analyze", *paths, "--fleet", "--redact", "--redact-map", tmp_path / "map.json",
                   "--format", "json")
    assert proc.returncode == 0, proc.stderr
    mapping = json.loads((tmp_path / "map.json").read_text())
    names = set(mapping["host"]) | set(mapping["ipv4"])
    assert {"web07", "Cangke_107_176"} <= names
    assert not _leaks(names, proc.stdout + proc.stderr), _leaks(names, proc.stdout)
    doc = json.loads(proc.stdout)
    seen = {h for inc in doc["fleet_incidents"] for h in inc["hosts"]}
    assert seen and seen <= set(mapping["host"].values())
    refused = run_cli("analyze", *paths, "--fleet", "--redact", "--save", tmp_path / "case")
    assert refused.returncode == 2 and "--no-fleet" in refused.stderr and not (tmp_path / "case").exists()

"""The native sa reader against sysstat's own renderings of real files.

Every binary file of the corpus that has a ``sadf -d -- -A`` reference must
agree with it value by value (timestamp, device, metric); older formats are
checked against their ``sar -A`` text rendering; damaged files must give a
clean error or warning, never a crash.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers import registry, sniff_bytes
from sarsleuth.inputs.parsers.base import ParseOptions
from sarsleuth.inputs.parsers.sa.compute import writer_version
from sarsleuth.inputs.parsers.sa.formulas import USED_WITHOUT_CACHE_SINCE
from sarsleuth.inputs.parsers.sa.parser import SaBinaryParser
from sarsleuth.inputs.parsers.sa.per_cpu import SUMMED_ALL_SINCE

# --- sadf -d reference files ------------------------------------------------------------

#: First metric of each sadf -d header -> sarsleuth section.
SECTION_BY_FIRST_METRIC = {
    "%usr": "cpu", "proc/s": "tasks", "CPU*": "interrupts", "pswpin/s": "swapping", "pgpgin/s": "paging",
    "tps": "io", "kbmemfree": "memory", "kbswpfree": "swap", "kbhugfree": "hugepages", "dentunusd": "file",
    "runq-sz": "queue", "rcvin/s": "serial", "call/s": "net-nfs", "scall/s": "net-nfsd", "totsck": "net-sock",
    "irec/s": "net-ip", "ihdrerr/s": "net-eip", "imsg/s": "net-icmp", "ierr/s": "net-eicmp",
    "active/s": "net-tcp", "atmptf/s": "net-etcp", "idgm/s": "net-udp", "tcp6sck": "net-sock6",
    "irec6/s": "net-ip6", "ihdrer6/s": "net-eip6", "imsg6/s": "net-icmp6", "ierr6/s": "net-eicmp6",
    "idgm6/s": "net-udp6", "total/s": "softnet", "MHz": "power-cpu", "rpm": "power-fan", "degC": "power-temp",
    "inV": "power-in", "MBfsfree": "filesystem", "fch_rxf/s": "fchost", "%scpu-10": "psi-cpu",
    "%sio-10": "psi-io", "%smem-10": "psi-mem", "rxpck/s": "net-dev", "rxerr/s": "net-edev",
}
#: Columns that name the device rather than hold a value.
DEVICE_COLUMNS = {"CPU", "INTR", "DEV", "IFACE", "TTY", "FAN", "TEMP", "IN", "FILESYSTEM", "FCHOST"}
#: Text columns (or columns sarsleuth does not emit as numbers).
SKIPPED_COLUMNS = {"DEVICE", "manufact", "product", "BUS", "idvendor", "idprod", "maxpower"}


def load_sadf_d(path: Path) -> pd.DataFrame:
    """Long table (timestamp UTC, section, device, metric, value) from a
    ``sadf -d`` CSV."""
    rows = []
    header = None
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            header = line[2:].split(";")
            continue
        fields = line.split(";")
        if header is None or fields[1] == "-1" or len(fields) != len(header):
            continue          # restart/comment lines
        columns = header[3:]
        values = fields[3:]
        names = [c for c in columns if c not in DEVICE_COLUMNS and c not in SKIPPED_COLUMNS]
        if not names or names[0] not in SECTION_BY_FIRST_METRIC:
            continue
        section = "disk" if "DEV" in columns else SECTION_BY_FIRST_METRIC[names[0]]
        device = ""
        for col, val in zip(columns, values):
            if col in DEVICE_COLUMNS:
                device = "all" if val == "-1" else val
        stamp = pd.Timestamp(fields[2].replace(" UTC", ""), tz="UTC")
        for col, val in zip(columns, values):
            if col in DEVICE_COLUMNS or col in SKIPPED_COLUMNS:
                continue
            metric = "intr/s" if col == "CPU*" else col
            rows.append((stamp, section, device, metric, float(val), int(fields[1])))
    return pd.DataFrame(rows, columns=["timestamp", "section", "device", "metric", "value", "interval"])


def match_ratio(source, reference: pd.DataFrame):
    """(ratio of reference values matched, list of mismatches)."""
    ours = source.metrics.copy()
    ours["timestamp"] = ours["timestamp"].dt.tz_convert("UTC")
    for col in ("section", "device", "metric"):
        ours[col] = ours[col].astype(str)
    merged = reference.merge(ours[["timestamp", "section", "device", "metric", "value"]],
                             on=["timestamp", "section", "device", "metric"], how="left",
                             suffixes=("_sadf", "_ours"))
    diff = (merged["value_ours"] - merged["value_sadf"]).abs()
    tolerance = 0.005 + 1e-6 * merged["value_sadf"].abs()
    # sadf prints these sizes rounded to whole megabytes
    tolerance = tolerance.where(~merged["metric"].isin(ROUNDED_TO_UNITS), 0.5)
    good = diff <= tolerance
    bad = merged[~good]
    return float(good.mean()) if len(merged) else 0.0, bad


#: Metrics sadf prints without decimals (rounded).
ROUNDED_TO_UNITS = {"MBfsfree", "MBfsused"}

REFERENCED = ["data-9.1.6", "data-11.6.5", "data-12.0.0", "data-12.5.6-A_QUEUE_modified", "data-extra-12.1.7",
              "data-ppc-11.7.2", "data-ukwn", "data-ukwn1", "pcp-f16-sa20-0x2171-suspend",
              "pcp-sysstat-11.2.0-0x2173-duplex"]

#: An interval sadf prints beyond this (1/100 s) is an unsigned wrap: the
#: uptime went back (a reboot sadc missed) and sysstat divided by 2**64
#: minus a little.  sarsleuth starts a new segment there instead.
WRAPPED_INTERVAL = 10 ** 15


def as_sar_renders_it(reference: pd.DataFrame, header_day: str) -> pd.DataFrame:
    """A reference whose dates its sadf got wrong (see the corpus
    PROVENANCE), dated as sar renders the file: the header's day, each
    record's time of day, one day on when the time of day goes back."""
    stamps = sorted(reference["timestamp"].unique())
    day = pd.Timestamp(header_day, tz="UTC")
    mapping, days, last = {}, 0, None
    for stamp in stamps:
        tod = stamp - stamp.normalize()
        if last is not None and tod < last:
            days += 1
        mapping[stamp] = day + pd.Timedelta(days=days) + tod
        last = tod
    out = reference.copy()
    out["timestamp"] = out["timestamp"].map(mapping)
    return out


#: sadf-d references whose dates are wrong, and the day sar renders them on.
MISDATED = {"data-ppc-11.7.2": "2017-04-27"}


def parse(path, **opts):
    return SaBinaryParser.parse(path, ParseOptions(**opts))


#: Memory figures sysstat prints as 0 when the writer did not record them
#: (sarsleuth leaves them out): sysstat 9 wrote no MemAvailable, Slab...
OMITTED_FOR_OLD_WRITERS = {"kbavail", "kbactive", "kbinact", "kbdirty", "kbanonpg", "kbslab", "kbkstack", "kbpgtbl", "kbvmused",
                           # no discard counts before sysstat 11.7, no link speed before 10
                           "dtps", "bdscd/s", "dkB/s", "%ifutil",
                           # nor guest_nice (before 10.1.2), blocked tasks (9.1.7), reserved/
                           # surplus huge pages (12.1.1), softnet backlog (12.6.0)
                           "%gnice", "blocked", "kbhugrsvd", "kbhugsurp", "blg_len"}


def by_a_later_rule(reference: pd.DataFrame, writer: str) -> pd.Series:
    """Rows of a reference rendered by a sysstat later than the file's
    writer whose formula changed in between: CPU "all" (the file's own line
    until 11.7.2, the sum of the CPUs since) and kbmemused/%memused (total -
    free until 11.7.3).  sarsleuth prints them as the writer did, which
    tests/test_sysstat_versions.py checks against real builds."""
    version = writer_version(writer)
    cpu_all = (reference["section"] == "cpu") & (reference["device"] == "all")
    used = reference["metric"].isin(["kbmemused", "%memused"])
    return (cpu_all & (version < SUMMED_ALL_SINCE)) | (used & (version < USED_WITHOUT_CACHE_SINCE))


@pytest.mark.parametrize("name", REFERENCED)
def test_values_match_sadf_d(corpus, name):
    reference = load_sadf_d(corpus / "sysstat" / "sadf-d" / f"{name}.csv")
    assert len(reference) > 0
    source = parse(corpus / "sysstat" / "binary" / name)
    if name in MISDATED:
        reference = as_sar_renders_it(reference, MISDATED[name])
    # (the big-endian test file's uptimes are garbage, beyond any real
    # uptime: its records are still compared, as sysstat does)
    wrapped = (reference["interval"] > WRAPPED_INTERVAL) & (name not in MISDATED)
    if wrapped.any():
        # sarsleuth neither compares such a record with the one before nor
        # prints a figure for it, and says so
        stamps = set(reference.loc[wrapped, "timestamp"])
        assert not source.metrics["timestamp"].dt.tz_convert("UTC").isin(stamps).any()
        assert any("uptime goes back" in w for w in source.warnings)
        reference = reference[~wrapped]
    reference = reference[~by_a_later_rule(reference, source.meta["sysstat_version"])]
    emitted = set(zip(source.metrics["section"].astype(str), source.metrics["metric"].astype(str)))
    pairs = list(zip(reference["section"], reference["metric"]))
    omitted = {m for sec, m in pairs if (sec, m) not in emitted}
    assert omitted <= OMITTED_FOR_OLD_WRITERS, omitted
    if omitted:
        # only where the writer really lacked the field: sadf shows 0 there
        gone = reference["metric"].isin(omitted)
        assert (reference.loc[gone, "value"] == 0).all()
        reference = reference[~gone]
    ratio, bad = match_ratio(source, reference)
    print(f"{name}: {ratio:.4%} of {len(reference)} sadf values matched")
    assert ratio >= 0.995, bad.head(20).to_string()


# --- sar -A text renderings (formats today's sadf cannot read) ------------------------------

def sar_text_section(path: Path, header_word: str, date: str) -> pd.DataFrame:
    """Rows of one section of a ``sar -A`` text rendering (24-hour clock,
    UTC): the section is the one whose header line contains
    ``header_word``; returns timestamp, device (or ""), metric, value."""
    rows = []
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) < 2 or header_word not in parts[1:]:
            continue
        columns = parts[1:]
        has_device = not columns[0][0].islower() and columns[0] not in ("%usr",) and not columns[0].startswith("%")
        has_device = has_device and columns[0] in {"CPU", "IFACE", "DEV", "INTR"}
        for row in lines[i + 1:]:
            cells = row.split()
            if not cells or cells[0].startswith("Average"):
                break
            stamp = pd.Timestamp(f"{date} {cells[0]}", tz="UTC")
            device = cells[1] if has_device else ""
            values = cells[2:] if has_device else cells[1:]
            metrics = columns[1:] if has_device else columns
            for metric, value in zip(metrics, values):
                rows.append((stamp, device, metric, float(value)))
        break
    return pd.DataFrame(rows, columns=["timestamp", "device", "metric", "value"])


def compare_with_text(source, section: str, text: pd.DataFrame, metrics) -> float:
    ours = source.metrics[source.metrics["section"] == section].copy()
    ours["timestamp"] = ours["timestamp"].dt.tz_convert("UTC")
    ours["device"] = ours["device"].astype(str)
    ours["metric"] = ours["metric"].astype(str)
    text = text[text["metric"].isin(metrics)]
    merged = text.merge(ours[["timestamp", "device", "metric", "value"]], on=["timestamp", "device", "metric"],
                        how="left", suffixes=("_sar", "_ours"))
    good = (merged["value_ours"] - merged["value_sar"]).abs() <= 0.005 + 1e-6 * merged["value_sar"].abs()
    return float(good.mean())


def test_format_2173_of_sysstat_10_3_1_matches_its_sar_rendering(corpus):
    source = parse(corpus / "sysstat" / "binary" / "data-10.3.1")
    assert source.meta["format_magic"] == "0x2173"
    assert source.meta["sysstat_version"] == "10.3.1"
    assert source.host == "kluane.home"
    assert source.meta["kernel"] == "4.4.14-200.fc22.x86_64"
    assert source.meta["ncpu"] == 8
    expected = corpus / "sysstat" / "expected" / "expected.data-10.3.1"
    cpu = sar_text_section(expected, "%usr", "2017-01-21")
    assert len(cpu) == 9 * 10
    # CPU "all" of this rendering is a later sysstat's sum of the CPUs;
    # 10.3.1 printed its own stored line (see by_a_later_rule)
    cpu = cpu[cpu["device"] != "all"]
    cpu_ratio = compare_with_text(source, "cpu", cpu, set(cpu["metric"]))
    memory = sar_text_section(expected, "kbmemfree", "2017-01-21")
    # kbmemused/%memused left out: this rendering comes from a sysstat that
    # computes used memory as total - available, sadf 12.6 (our yardstick
    # elsewhere) as total - free - buffers - cache - slab
    mem_metrics = {"kbmemfree", "kbbuffers", "kbcached", "kbcommit", "%commit", "kbactive", "kbinact", "kbdirty"}
    mem_ratio = compare_with_text(source, "memory", memory, mem_metrics)
    swap = sar_text_section(expected, "kbswpfree", "2017-01-21")
    swap_ratio = compare_with_text(source, "swap", swap, set(swap["metric"]))
    net = sar_text_section(expected, "rxpck/s", "2017-01-21")
    net_ratio = compare_with_text(source, "net-dev", net, set(net["metric"]))
    print(f"data-10.3.1 vs sar -A: cpu {cpu_ratio:.2%}, memory {mem_ratio:.2%}, swap {swap_ratio:.2%}, "
          f"net-dev {net_ratio:.2%}")
    assert cpu_ratio == 1.0 and mem_ratio == 1.0 and swap_ratio == 1.0 and net_ratio == 1.0
    kinds = list(source.events["kind"])
    assert kinds == ["sar-restart", "sar-comment"]
    assert source.events["message"].iloc[1] == "Test sysstat 10.3.1"


def test_format_2170_of_sysstat_9_1_5_reads_fully(corpus):
    source = parse(corpus / "sysstat" / "binary" / "data-9.1.5")
    assert source.meta["format_magic"] == "0x2170"
    assert source.host == "linux-3.home"
    assert source.meta["ncpu"] == 8
    assert source.records == 2
    assert not source.warnings
    sections = set(source.metrics["section"].astype(str))
    assert {"cpu", "tasks", "swapping", "paging", "io", "memory", "swap", "file", "queue", "net-dev",
            "net-edev", "net-nfs", "net-nfsd", "net-sock"} <= sections
    cpu = source.metrics[(source.metrics["section"] == "cpu")]
    wide = cpu.pivot_table(index="device", columns="metric", values="value", observed=True)
    assert len(wide) == 9                   # all + 8 CPUs
    parts = ["%usr", "%nice", "%sys", "%iowait", "%steal", "%irq", "%soft", "%guest", "%idle"]
    assert np.allclose(wide[parts].sum(axis=1), 100.0, atol=0.05)
    mem = source.metrics[source.metrics["section"] == "memory"].set_index("metric")["value"]
    assert mem["kbmemfree"] > 0 and 0 < mem["%memused"] < 100
    assert source.metrics["timestamp"].iloc[0].year == 2021


# --- damaged and unusual files -------------------------------------------------------------

REFUSED = sorted([
    "data-12.6.0-file_act-MAP_SIZE_types_nr-err", "data-12.6.0-file_act-nr-0-err", "data-12.6.0-file_act-nr-err",
    "data-12.6.0-file_act-nr2-0-err", "data-12.6.0-file_act-nr2-err", "data-12.6.0-file_act-size-0-err",
    "data-12.6.0-file_act-size-err", "data-12.6.0-file_hdr-MAP_SIZE_act_types_nr-err",
    "data-12.6.0-file_hdr-MAP_SIZE_rec_types_nr-err", "data-12.6.0-file_hdr-act_size-err",
    "data-12.6.0-file_hdr-rec_size-err", "data-12.6.0-file_hdr-sa_act_nr-err",
    # headers that are sound but followed by no record at all
    "data-12.6.0-file_act-nr-nr_max-err", "data-12.6.0-file_act-types_nr-SARerr",
    "data-12.7.1-A_IRQ_overflow", "data-trunc",
])


@pytest.mark.parametrize("name", REFUSED)
def test_damaged_files_are_refused_with_a_byte_offset(corpus, name):
    path = corpus / "sysstat" / "binary" / name
    with pytest.raises(InputError) as info:
        parse(path)
    message = str(info.value)
    assert "\n" not in message and name in message
    assert info.value.offset is not None and 0 <= info.value.offset <= path.stat().st_size


def test_all_fourteen_corrupted_header_files_are_covered(corpus):
    errs = sorted(p.name for p in (corpus / "sysstat" / "binary").glob("data-12.6.0-*err"))
    assert len(errs) == 14 and set(errs) <= set(REFUSED)


@pytest.mark.parametrize("name, skipped", [("data-ukwn", "activity 255"), ("data-ukwn0", "activity 255"),
                                           ("data-ukwn1", "queue (magic 0x8d)"),
                                           ("data-12.5.6-A_QUEUE_modified", "queue (magic 0x9e)")])
def test_unknown_activities_are_skipped_with_a_warning(corpus, name, skipped):
    source = parse(corpus / "sysstat" / "binary" / name)
    assert any(skipped in w and "(byte " in w for w in source.warnings), source.warnings


def test_non_printable_comment_is_cleaned(corpus):
    source = parse(corpus / "sysstat" / "binary" / "data-non-printable")
    assert source.records == 0
    assert list(source.events["kind"]) == ["sar-comment"]
    assert source.events["message"].iloc[0] == "Hello..o.ld!"


def test_truncated_copy_keeps_the_complete_records(corpus, tmp_path):
    data = (corpus / "sysstat" / "binary" / "data-11.6.5").read_bytes()
    cut = tmp_path / "sa-cut"
    cut.write_bytes(data[:-700])
    source = parse(cut)
    assert source.records == 1
    assert any("records from here on skipped" in w and "(byte " in w for w in source.warnings)


def test_text_and_other_files_are_not_sa(corpus):
    with pytest.raises(InputError):
        parse(corpus / "sysstat" / "binary" / "data-12.7.6.xml")
    assert SaBinaryParser.sniff(b"<?xml version", "<?xml version") == 0.0


def test_sniff_recognises_both_byte_orders(corpus):
    for name in ("data-12.0.0", "data-ppc-11.7.2", "data-9.1.5"):
        head = (corpus / "sysstat" / "binary" / name).read_bytes()[:4096]
        assert sniff_bytes(head) == ("sa", 1.0)


def test_big_endian_32_bit_file_reads(corpus):
    source = parse(corpus / "sysstat" / "binary" / "data-ppc-11.7.2")
    assert source.meta["byte_order"] == "big" and source.meta["long_size"] == 4
    assert source.host == "partch" and source.meta["ncpu"] == 16


def test_comments_restarts_and_zones(corpus):
    source = parse(corpus / "sysstat" / "binary" / "data-12.0.0")
    events = source.events
    assert list(events["kind"]) == ["sar-restart", "sar-comment"]
    assert events["message"].tolist() == ["LINUX RESTART (8 CPU)", "Hello world!"]
    assert str(events["timestamp"].iloc[0]) == "2019-06-30 07:39:21+02:00"
    assert source.tz == "+02:00"
    from sarsleuth.timebase import settle
    in_tokyo = parse(corpus / "sysstat" / "binary" / "data-12.0.0")
    settle([in_tokyo], registry(), tz="Asia/Tokyo")       # shown in Tokyo: the same instants
    first = in_tokyo.metrics["timestamp"].iloc[0]
    assert str(first.tz) == "Asia/Tokyo" and first.hour == 14


def test_gzip_compressed_file_reads_the_same(corpus, tmp_path):
    import gzip
    raw = (corpus / "sysstat" / "binary" / "data-11.6.5").read_bytes()
    packed = tmp_path / "sa29.gz"
    packed.write_bytes(gzip.compress(raw))
    a = parse(corpus / "sysstat" / "binary" / "data-11.6.5").metrics
    b = parse(packed).metrics
    assert len(a) == len(b) and np.allclose(a["value"], b["value"])


# --- random damage never crashes -----------------------------------------------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

FUZZ_SOURCES = ["data-12.0.0", "data-11.6.5", "data-9.1.6", "data-ppc-11.7.2", "data-extra-12.1.7"]


@settings(max_examples=200, deadline=10000, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(FUZZ_SOURCES), cut=st.floats(0.0, 1.0),
       flips=st.lists(st.tuples(st.integers(0, 1999), st.integers(0, 7)), max_size=6))
def test_random_truncation_and_bit_flips_give_source_or_input_error(corpus, tmp_path, which, cut, flips):
    data = bytearray((corpus / "sysstat" / "binary" / which).read_bytes())
    for pos, bit in flips:
        if pos < len(data):
            data[pos] ^= 1 << bit
    data = data[:max(1, int(len(data) * cut))] if cut < 1.0 else data
    path = tmp_path / "fuzzed"
    path.write_bytes(bytes(data))
    try:
        source = parse(path)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert list(source.metrics.columns) == ["timestamp", "host", "section", "device", "metric", "value"]
    assert source.records >= 0


# --- the sample of field report 000, written by sarsleuth ------------------------------------

REPORT_CPU = {
    "15:00:01": "5.00 0.00 5.87 0.00 0.00 89.12", "15:01:01": "5.37 0.00 8.35 0.01 0.00 86.27",
    "15:02:03": "5.24 0.00 7.93 11.12 0.00 75.71", "15:03:01": "7.45 0.00 5.71 32.00 0.00 54.84",
    "15:04:16": "5.93 0.00 7.12 37.88 0.00 49.07", "15:05:03": "0.56 0.00 1.45 64.94 0.00 33.05",
    "15:06:05": "2.07 0.00 2.64 57.55 0.00 37.75", "15:07:01": "2.75 0.00 3.52 46.32 0.00 47.41",
    "15:08:01": "3.88 0.00 4.36 2.40 0.00 89.36", "15:09:01": "3.83 0.00 4.40 0.69 0.00 91.09",
}
REPORT_SWAP = {
    "15:00:01": "8388600 0 0.00 0 0.00", "15:01:01": "8388600 0 0.00 0 0.00",
    "15:02:03": "5065192 3323408 39.62 107908 3.25", "15:03:01": "4174996 4213604 50.23 745556 17.69",
    "15:04:16": "1722900 6665700 79.46 120032 1.80", "15:05:03": "423364 7965236 94.95 292404 3.67",
    "15:06:05": "187788 8200812 97.76 713720 8.70", "15:07:01": "726948 7661652 91.33 1034536 13.50",
    "15:08:01": "814704 7573896 90.29 1160704 15.33", "15:09:01": "848800 7539800 89.88 1216656 16.14",
}


def _to_24h(stamp: str, ampm: str | None) -> str:
    if ampm is None:
        return stamp
    hh, rest = int(stamp[:2]), stamp[2:]
    hh = hh % 12 + (12 if ampm == "PM" else 0)
    return f"{hh:02d}{rest}"


def run_sar(args, path) -> dict:
    """{HH:MM:SS: "values..."} from real sar, in Asia/Shanghai time."""
    out = subprocess.run(["sar", *args, "-f", str(path)], capture_output=True, text=True, check=True,
                         env={"TZ": "Asia/Shanghai", "LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout
    rows = {}
    for line in out.splitlines():
        cells = line.split()
        if not cells or ":" not in cells[0] or cells[0].startswith("Average"):
            continue
        ampm = cells[1] if len(cells) > 1 and cells[1] in ("AM", "PM") else None
        values = cells[2:] if ampm else cells[1:]
        if values and values[0] == "all":
            values = values[1:]
        if values and all(_is_number(v) for v in values):
            rows[_to_24h(cells[0], ampm)] = " ".join(values)
    return rows


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


@pytest.fixture(scope="module")
def sa06(tmp_path_factory):
    """A fresh copy written by the script, so the test checks the script."""
    script = Path(__file__).resolve().parent.parent / "samples" / "make_sa06.py"
    out = tmp_path_factory.mktemp("sa06") / "sa06"
    subprocess.run(["python3", str(script), str(out)], check=True, capture_output=True)
    return out


def test_committed_sample_is_what_the_script_writes(sa06, samples):
    assert (samples / "nginx-proxy-oom" / "sa06").read_bytes() == sa06.read_bytes()


@pytest.mark.skipif(shutil.which("sar") is None, reason="sysstat's sar is not installed")
def test_real_sar_prints_the_report_figures(sa06):
    cpu = run_sar(["-u"], sa06)
    swap = run_sar(["-S"], sa06)
    for stamp, expected in REPORT_CPU.items():
        assert cpu[stamp] == expected, stamp
    for stamp, expected in REPORT_SWAP.items():
        assert swap[stamp] == expected, stamp


def test_sarsleuth_reads_the_sample_back(sa06):
    source = parse(sa06)
    assert source.host == "Cangke_107_176"
    assert source.meta["kernel"] == "2.6.32-358.el6.x86_64" and source.meta["ncpu"] == 24
    assert source.meta["file_date"] == "2014-05-06" and source.tz == "+08:00"
    assert source.records == 100
    m = source.metrics
    stamps = m["timestamp"].dt.strftime("%H:%M:%S")
    cpu = m[(m["section"] == "cpu") & (m["device"] == "all")]
    for stamp, expected in REPORT_CPU.items():
        row = cpu[stamps[cpu.index] == stamp].set_index("metric")["value"]
        user, nice, system, iowait, steal, idle = (float(v) for v in expected.split())
        assert round(row["%usr"], 2) == user and round(row["%iowait"], 2) == iowait
        assert round(row["%sys"] + row["%irq"] + row["%soft"], 2) == system
        assert round(row["%idle"], 2) == idle
    swap = m[m["section"] == "swap"]
    for stamp, expected in REPORT_SWAP.items():
        row = swap[stamps[swap.index] == stamp].set_index("metric")["value"]
        free, used, pct, cad, pct_cad = (float(v) for v in expected.split())
        assert row["kbswpfree"] == free and row["kbswpused"] == used and round(row["%swpused"], 2) == pct
        assert row["kbswpcad"] == cad and round(row["%swpcad"], 2) == pct_cad
    assert str(m["timestamp"].iloc[0].tz) == "UTC+08:00"
    # MemAvailable did not exist in 2.6.32: no kbavail rather than zeros
    assert not ((m["section"] == "memory") & (m["metric"] == "kbavail")).any()


@pytest.mark.skipif(shutil.which("sadf") is None, reason="sysstat's sadf is not installed")
def test_sample_matches_sadf_d_everywhere(sa06, tmp_path):
    csv = tmp_path / "sa06.csv"
    out = subprocess.run(["sadf", "-d", str(sa06), "--", "-A"], capture_output=True, text=True, check=True,
                         env={"TZ": "UTC", "LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout
    csv.write_text(out)
    reference = load_sadf_d(csv)
    reference = reference[reference["metric"] != "kbavail"]
    ratio, bad = match_ratio(parse(sa06), reference)
    print(f"sa06: {ratio:.4%} of {len(reference)} sadf values matched")
    assert ratio >= 0.995, bad.head(20).to_string()


def test_writer_round_trip_with_restart_and_comment(tmp_path):
    import datetime as dt
    from sarsleuth.inputs.parsers.sa.writer import write_sa
    zone = dt.timezone(dt.timedelta(hours=-5))
    t0 = dt.datetime(2024, 3, 1, 10, 0, 0, tzinfo=zone)

    def stats(k, uptime):
        return {"time": t0 + dt.timedelta(minutes=k), "uptime_cs": uptime,
                "cpu": [[0] * 10] + [[1000 + 600 * k, 0, 500 + 300 * k, 90000 + 5100 * k, 0, 0, 0, 0, 0, 0]] * 2,
                "net-sock": {"sock_inuse": 40 + k, "tcp_inuse": 20, "tcp_tw": 7 * k}}
    records = [stats(0, 1000), stats(1, 7000), {"time": t0 + dt.timedelta(minutes=2), "type": "comment",
                                                 "text": "deploy v2"},
               {"time": t0 + dt.timedelta(minutes=3), "type": "restart"}, stats(4, 500), stats(5, 6500)]
    path = write_sa(tmp_path / "sa01", host="web1", kernel="6.1.0", ncpu=2, records=records,
                    utc_offset_minutes=-300)
    source = parse(path)
    assert source.tz == "-05:00" and source.records == 4
    assert list(source.events["kind"]) == ["sar-comment", "sar-restart"]
    m = source.metrics
    cpu = m[(m["section"] == "cpu") & (m["device"] == "all")]
    assert len(cpu["timestamp"].unique()) == 2           # one per segment: the restart is a new start
    usr = cpu[cpu["metric"] == "%usr"]["value"]
    assert np.allclose(usr, 10.0)                        # 600 of 6000 jiffies per CPU
    tw = m[m["metric"] == "tcp-tw"]["value"].tolist()
    assert tw == [7.0, 35.0]


# --- reading a slice of records at a time --------------------------------------------------

def _sorted_long(metrics) -> pd.DataFrame:
    out = metrics.copy()
    for col in ("host", "section", "device", "metric"):
        out[col] = out[col].astype(str)
    return out.sort_values(["timestamp", "section", "device", "metric"]).reset_index(drop=True)


@pytest.mark.parametrize("name", ["data-ppc-11.7.2", "data-12.0.0", "data-11.6.5", "data-9.1.6"])
@pytest.mark.parametrize("records", [1, 2, 3])
def test_slices_of_any_size_give_the_same_table(corpus, monkeypatch, name, records):
    """Offline CPUs (ppc), restarts (12.0.0) and new devices carry over from
    one slice of records to the next."""
    from sarsleuth.inputs.parsers.sa import reader as sa_binary
    whole = parse(corpus / "sysstat" / "binary" / name).metrics
    monkeypatch.setattr(sa_binary, "SLICE_ITEMS", 1)
    monkeypatch.setattr(sa_binary, "SLICE_RECORDS", (records, records))
    sliced = parse(corpus / "sysstat" / "binary" / name).metrics
    pd.testing.assert_frame_equal(_sorted_long(whole), _sorted_long(sliced))


def test_table_columns_are_compact(corpus):
    m = parse(corpus / "sysstat" / "binary" / "data-ppc-11.7.2").metrics
    assert list(m.columns) == ["timestamp", "host", "section", "device", "metric", "value"]
    assert str(m["timestamp"].dtype).startswith("datetime64[ns, ")
    for col in ("host", "section", "device", "metric"):
        assert isinstance(m[col].dtype, pd.CategoricalDtype)
        assert m[col].cat.codes.dtype.itemsize <= 2
        assert set(m[col].unique()) == set(m[col].cat.categories)     # no unused category
    assert m["value"].dtype == np.float64 and not m["value"].isna().any()
    # each series is in time order
    for _key, part in m.groupby(["section", "device", "metric"], observed=True, sort=False):
        assert part["timestamp"].is_monotonic_increasing


def test_big_file_pages_are_given_back(corpus, tmp_path, monkeypatch):
    """A mapped file is not kept resident: the reader hands back the pages
    it is done with, in order, during both passes."""
    from sarsleuth.inputs.parsers.sa import reader as sa_binary
    raw = (corpus / "sysstat" / "binary" / "data-ppc-11.7.2").read_bytes()
    released = []
    original = sa_binary._Pager.__call__

    def spy(self, upto):
        released.append(int(upto))
        return original(self, upto)
    monkeypatch.setattr(sa_binary._Pager, "__call__", spy)
    monkeypatch.setattr(sa_binary, "RELEASE_BYTES", 1)
    monkeypatch.setattr(sa_binary, "SLICE_RECORDS", (1, 1))
    path = tmp_path / "sa"
    path.write_bytes(raw)
    source = parse(path)
    assert source.records > 2 and len(released) >= 2 * source.records - 2
    assert max(released) <= len(raw)

"""Properties that count what was lost: duplicates across files, clocks that
jump back, truncated compressed streams.

    python fuzz/losses.py                 # 40 examples of each property
    python fuzz/losses.py -n 500 truncation

Each property builds its input the way the programs write it, runs
sarsleuth on it and checks that every event is either kept or counted:

* ``duplicates``: two overlapping excerpts of one kernel log (as Debian's
  syslog and kern.log hold the same kernel lines): the events equal the
  lines of their union, the merged count equals the lines of their overlap.
* ``clock``: a sysstat 9.0.4 sa file (from the corpus) whose clock steps
  back by a minute to three days at a random record: every record is read,
  the step is a warning, and no figure or span covers the step.
* ``truncation``: a syslog compressed with gzip/xz/bz2/zstd and cut at a
  random byte: the events kept are exactly those in the bytes decoded
  before the cut, those bytes are nearly all the reference decoder gives,
  and a warning says how many bytes were kept.

The table printed at the end says how many events or records each property
saw lost to damage and how many were kept.
"""
from __future__ import annotations

import argparse
import bz2
import gzip
import lzma
import re
import struct
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

SA_NAME = "pcp-sysstat-9.0.4-0x2170"
NEEDLE = b"time wait bucket table overflow"


def kernel_lines(count: int) -> list[str]:
    """Distinct kernel lines as rsyslog writes them, one a second."""
    return [f"Mar 12 03:{i // 60 % 60:02d}:{i % 60:02d} web7 kernel: [{86000 + i}.{i * 7919 % 10**6:06d}] "
            f"php-fpm[{16000 + i}]: segfault at 0 ip 00007f3a2c1e{i:04x} sp 00007ffd3a9c1e80 error 4 "
            f"in libphp.so[7f3a2c1a0000+9b000]" for i in range(count)]


def syslog_bytes(count: int) -> bytes:
    out = []
    for i in range(count):
        stamp = f"May  6 15:{i // 60 % 60:02d}:{i % 60:02d} web1"
        out.append(f"{stamp} kernel: TCP: time wait bucket table overflow" if i % 7 == 0 else
                   f"{stamp} sshd[{4000 + i}]: Accepted publickey for deploy from 10.0.0.{i % 250} port {40000 + i} ssh2")
    return ("\n".join(out) + "\n").encode()


# --- duplicates ----------------------------------------------------------------------------------

def check_duplicates(total: int, a: tuple, b: tuple, scratch: Path, stats: dict) -> None:
    import sarsleuth
    lines = kernel_lines(total)
    (scratch / "kern.log").write_text("".join(ln + "\n" for ln in lines[a[0]:a[1]]))
    (scratch / "syslog").write_text("".join(ln + "\n" for ln in lines[b[0]:b[1]]))
    case = sarsleuth.load(scratch / "kern.log", scratch / "syslog", year=2024)
    union = len(set(range(*a)) | set(range(*b)))
    overlap = len(set(range(*a)) & set(range(*b)))
    seg = int((case.events["kind"] == "segfault").sum()) if len(case.events) else 0
    assert seg == union, (a, b, seg, union)
    assert case.merged.get("events", 0) == overlap, (a, b, case.merged, overlap)
    stats["events"] += union
    stats["merged"] += overlap


@st.composite
def excerpts(draw):
    total = draw(st.integers(2, 120))
    a0 = draw(st.integers(0, total - 1))
    a1 = draw(st.integers(a0 + 1, total))
    b0 = draw(st.integers(0, total - 1))
    b1 = draw(st.integers(b0 + 1, total))
    return total, (a0, a1), (b0, b1)


# --- clocks --------------------------------------------------------------------------------------

def sa_original(corpus: Path):
    from sarsleuth.inputs.parsers.sa.layout import read_layout
    from sarsleuth.inputs.parsers.sa.records import Walker
    path = corpus / "sysstat" / "binary" / SA_NAME
    raw = path.read_bytes()
    layout = read_layout(str(path), raw)
    return raw, [int(o) for o in Walker(str(path), raw, layout, []).walk().offsets], layout


def check_clock_step(original, at: int, back_s: int, scratch: Path, stats: dict) -> None:
    from sarsleuth.inputs.parsers.base import ParseOptions
    from sarsleuth.inputs.parsers.sa.parser import SaBinaryParser
    raw, offsets, layout = original
    data = bytearray(raw)
    where = offsets[at] + layout.record.ust_off
    stepped = struct.unpack_from("<Q", data, where)[0] - back_s
    struct.pack_into("<Q", data, where, stepped)
    path = scratch / "sa25"
    path.write_bytes(bytes(data))
    src = SaBinaryParser.parse(path, ParseOptions())
    assert src.records == len(offsets), (at, back_s, src.records)
    assert any("goes back" in w for w in src.warnings), (at, back_s, src.warnings)
    stamps = src.metrics["timestamp"].dt.tz_convert("UTC")
    span = (stamps.max() - stamps.min()).total_seconds()
    first = struct.unpack_from("<Q", raw, offsets[0] + layout.record.ust_off)[0]
    last = struct.unpack_from("<Q", raw, offsets[-1] + layout.record.ust_off)[0]
    assert span <= (last - first) + back_s * (at in (0, len(offsets) - 1)), (at, back_s, span)
    stats["records"] += src.records
    stats["steps"] += 1


# --- truncated streams ---------------------------------------------------------------------------

def _zstd(data: bytes) -> bytes:
    import zstandard
    return zstandard.ZstdCompressor().compress(data)


def _unzstd(data: bytes) -> bytes:
    import zstandard
    out = bytearray()
    reader = zstandard.ZstdDecompressor().stream_reader(data)
    try:
        while chunk := reader.read(1 << 16):
            out += chunk
    except zstandard.ZstdError:
        pass
    return bytes(out)


def _partial(decoder):
    def run(data: bytes) -> bytes:
        try:
            return decoder().decompress(data)
        except (EOFError, OSError, ValueError, zlib.error, lzma.LZMAError):
            return b""
    return run


CODECS = {
    "gz": (gzip.compress, _partial(lambda: zlib.decompressobj(31))),
    "xz": (lzma.compress, _partial(lzma.LZMADecompressor)),
    "bz2": (bz2.compress, _partial(bz2.BZ2Decompressor)),
    "zst": (_zstd, _unzstd),
}


def check_truncation(ext: str, lines: int, fraction: float, scratch: Path, stats: dict) -> None:
    from sarsleuth.errors import InputError
    from sarsleuth.inputs.parsers import parse
    from sarsleuth.inputs.parsers.base import ParseOptions
    compress, reference = CODECS[ext]
    whole = syslog_bytes(lines)
    packed = compress(whole)
    cut = packed[:max(1, int(len(packed) * fraction))]
    path = scratch / f"messages.{ext}"
    path.write_bytes(cut)
    readable = reference(cut)
    total_events = whole.count(NEEDLE)
    try:
        src = parse(path, "syslog", ParseOptions(year=2014))
    except InputError:
        # nothing decodable: the whole file is the loss, said in one line
        assert readable.count(b"\n") == 0 or readable.count(NEEDLE) == 0, (ext, len(cut), len(readable))
        stats["lost"] += total_events
        return
    kept_bytes = len(readable)
    said = " ".join(src.warnings)
    found = re.search(r"the (\d+) bytes read before are kept", said)
    if len(cut) < len(packed):
        assert found or readable == whole, (ext, len(cut), src.warnings)
    if found:
        kept_bytes = int(found.group(1))
        # inflaters flush a cut final block a byte or two apart (Python's zlib 288,944 bytes,
        # gzip -dc 288,943, sarsleuth 288,942 on one cut): only the cut last line differs
        assert len(readable) - 2 <= kept_bytes <= len(readable), (ext, kept_bytes, len(readable))
    kept_events = whole[:kept_bytes].count(NEEDLE)
    assert len(src.events) == kept_events, (ext, len(cut), len(src.events), kept_events)
    stats["kept"] += kept_events
    stats["lost"] += total_events - kept_events


# --- runner --------------------------------------------------------------------------------------

def run_property(name: str, examples: int, corpus: Path | None = None, codecs=tuple(CODECS),
                 lines=(50, 4000), fractions=(0.02, 0.999), derandomize=False) -> dict:
    """Run one property ``examples`` times; ``codecs``, ``lines`` and
    ``fractions`` narrow the truncation property's inputs; ``derandomize``
    draws the same examples every run (the test suite's choice)."""
    with tempfile.TemporaryDirectory(prefix="sarsleuth-losses-") as folder:
        return _run_property(name, examples, Path(folder), corpus, codecs, lines, fractions, derandomize)


def _run_property(name, examples, scratch, corpus, codecs, lines, fractions, derandomize) -> dict:
    stats = {"examples": 0, "events": 0, "merged": 0, "records": 0, "steps": 0, "kept": 0, "lost": 0}
    rules = settings(max_examples=examples, deadline=None, database=None, derandomize=derandomize,
                     suppress_health_check=list(HealthCheck))
    if name == "duplicates":
        @rules
        @given(excerpts())
        def prop(drawn):
            check_duplicates(*drawn, scratch, stats)
            stats["examples"] += 1
    elif name == "clock":
        if corpus is None:
            raise SystemExit(f"clock: needs the corpus ({SA_NAME}); set SARSLEUTH_CORPUS")
        original = sa_original(corpus)

        @rules
        @given(st.integers(1, len(original[1]) - 2), st.integers(60, 3 * 86400))
        def prop(at, back_s):
            check_clock_step(original, at, back_s, scratch, stats)
            stats["examples"] += 1
    else:
        @rules
        @given(st.sampled_from(sorted(codecs)), st.integers(*lines), st.floats(*fractions))
        def prop(ext, lines, fraction):
            check_truncation(ext, lines, fraction, scratch, stats)
            stats["examples"] += 1
    prop()
    return stats


PROPERTIES = ("duplicates", "clock", "truncation")


def main(argv=None) -> int:
    import os
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("properties", nargs="*", default=list(PROPERTIES), help=" ".join(PROPERTIES))
    ap.add_argument("-n", "--examples", type=int, default=40)
    args = ap.parse_args(argv)
    env = os.environ.get("SARSLEUTH_CORPUS")
    corpus = Path(env) if env else ROOT.parent / "shared" / "corpus"
    corpus = corpus if corpus.is_dir() else None
    for name in args.properties:
        s = run_property(name, args.examples, corpus)
        print(f"{name:11} examples {s['examples']:5d}  events {s['events']:6d} merged {s['merged']:6d}  "
              f"sa records {s['records']:6d} steps {s['steps']:4d}  kept {s['kept']:7d} lost {s['lost']:7d}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

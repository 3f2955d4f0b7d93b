"""Compressed streams of 10 GB, generated on the fly and piped into
``sarsleuth analyze -`` (or written as small files), peak resident memory
measured in the command's own process; each at ``--gb`` and a quarter of
it, so that seconds per decompressed GB show whether time stays linear.

    python fuzz/compressed_streams.py                 # 10 GB and 2.5 GB
    python fuzz/compressed_streams.py --gb 4 --only syslog-pipe ps-pipe
    python fuzz/compressed_streams.py --with-sa       # also an sa header before 10 GB (8 GiB of disk)

The streams are gzip members of one compressed megabyte repeated (the
decompressed bytes are what counts; the pipe carries a few MB):

- ``zeros-pipe``: zeros; refused at once (no known format).
- ``syslog-pipe`` / ``syslog-file``: rsyslog lines that match nothing;
  analysed, streamed.
- ``ps-pipe``: a ``ps aux`` header then its rows; refused at the 8 MiB a
  document read whole may hold, naming it.
- ``tar-member``: a tar.gz whose one member holds the whole stream; refused
  by its header's size before a byte is copied, naming the 8 GiB spool
  limit (the rest of the stream is read through, as tar would, to reach
  any member after it).
- ``sa-file`` (``--with-sa``): an sa file header then zeros; decompressed to
  disk up to the 8 GiB limit and refused naming it.

Exit 1 when a peak passes ``--max-mb`` (default 500), an exit code or the
line naming a limit is not the one expected.
"""
from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_resource_bounds import _MEASURED, MB, SYSLOG_NOISE  # noqa: E402

PS_HEADER = b"USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
PS_ROW = b"nginx    12345  2.0  1.5 123456 65432 ?        S    10:00   0:01 nginx: worker process\n"

_GENERATE = r"""
import sys
head, block, tail = (open(p, "rb").read() for p in sys.argv[1:4])
n = int(sys.argv[4])
out = sys.stdout.buffer
out.write(head)
for _ in range(n):
    out.write(block)
out.write(tail)
out.flush()
"""


def _members(head: bytes, unit: bytes, gigabytes: float, tail: bytes = b"") -> tuple:
    """(gzip of head, gzip of one MB of ``unit`` lines, gzip of tail, count):
    concatenated, one gzip stream of ``gigabytes`` decompressed."""
    block = unit * max(1, MB // len(unit))          # whole lines, about a MB
    return gzip.compress(head, 1), gzip.compress(block, 9), gzip.compress(tail, 1), int(gigabytes * (1 << 30) / len(block))


_TAR_GENERATE = r"""
import sys, tarfile, zlib
size = int(sys.argv[1])
block = (sys.argv[2].encode() * (1 << 20))[:1 << 20]
info = tarfile.TarInfo("var/log/messages")
info.size, info.mtime = size, 1710212400
out = sys.stdout.buffer
# one gzip member (tarfile reads no other), its deflate blocks flushed whole
# so that the compressed megabyte is the same each time
out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
crc, total = 0, 0
def put(data):
    global crc, total
    crc, total = zlib.crc32(data, crc), total + len(data)
    return deflate.compress(data) + deflate.flush(zlib.Z_FULL_FLUSH)
out.write(put(info.tobuf(tarfile.GNU_FORMAT)))
packed = put(block)
for _ in range(size // len(block) - 1):
    crc, total = zlib.crc32(block, crc), total + len(block)
    out.write(packed)
out.write(packed)
out.write(put(b"\0" * 1024) + deflate.flush())
out.write(crc.to_bytes(4, "little") + (total & 0xFFFFFFFF).to_bytes(4, "little"))
"""


def _sa_stream(gigabytes: float) -> tuple:
    sa = (ROOT / "samples" / "nginx-proxy-oom" / "sa06").read_bytes()
    return _members(sa, b"\0", gigabytes)


CASES = {
    "zeros-pipe": (lambda gb: _members(b"", b"\0", gb), "pipe", 2, "content matches no known format"),
    "syslog-pipe": (lambda gb: _members(SYSLOG_NOISE, SYSLOG_NOISE, gb), "pipe", 0, None),
    "syslog-file": (lambda gb: _members(SYSLOG_NOISE, SYSLOG_NOISE, gb), "file", 0, None),
    "ps-pipe": (lambda gb: _members(PS_HEADER, PS_ROW, gb), "pipe", 2, "more than 8 MiB once decompressed"),
    "tar-member": (None, "pipe", 2, "more than 8 GiB, the most a member is copied to be read"),
    "sa-file": (_sa_stream, "file", 2, "more than 8 GiB once decompressed, the most a compressed sa file"),
}
#: Streams refused at the 8 GiB spool limit: below it they are read (exit 0).
SPOOLED = ("tar-member", "sa-file")


def _generator(name: str, gigabytes: float, work: Path) -> tuple:
    """(the command writing the stream on its standard output, files it reads)."""
    make = CASES[name][0]
    if make is None:            # the tar stream: written by its own generator
        size = int(gigabytes * (1 << 30))
        return [sys.executable, "-c", _TAR_GENERATE, str(size), SYSLOG_NOISE.decode()], []
    parts = make(gigabytes)
    files = []
    for i, data in enumerate(parts[:3]):
        files.append(work / f"{name}-{i}.gz")
        files[-1].write_bytes(data)
    return [sys.executable, "-c", _GENERATE, *map(str, files), str(parts[3])], files


def run_case(name: str, gigabytes: float, work: Path) -> tuple:
    _make, how, want_code, want_text = CASES[name]
    if name in SPOOLED and gigabytes <= 8:
        want_code, want_text = 0, None
    gen, files = _generator(name, gigabytes, work)
    cmd = [sys.executable, "-c", _MEASURED, "analyze", "--format", "json", "--year", "2024"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    if how == "pipe":
        producer = subprocess.Popen(gen, stdout=subprocess.PIPE)
        proc = subprocess.run([*cmd, "-"], stdin=producer.stdout, capture_output=True, text=True, env=env)
        producer.stdout.close()
        producer.kill()
        producer.wait()
    else:
        target = work / f"{name}.gz"
        with open(target, "wb") as fh:
            subprocess.run(gen, stdout=fh, check=True)
        t0 = time.perf_counter()
        proc = subprocess.run([*cmd, str(target)], capture_output=True, text=True, env=env)
        target.unlink()
    seconds = time.perf_counter() - t0
    for f in files:
        f.unlink()
    lines = proc.stderr.splitlines()
    peak = [int(ln.split()[1]) * 1024 for ln in lines if ln.startswith("VMHWM_KB ")]
    said = [ln for ln in lines if ln and not ln.startswith("VMHWM_KB ")]
    ok = proc.returncode == want_code and (want_text is None or any(want_text in ln for ln in said))
    return proc.returncode, (peak[0] if peak else None), seconds, (said[-1] if said else ""), ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=10.0)
    ap.add_argument("--only", nargs="+", choices=sorted(CASES), default=None)
    ap.add_argument("--with-sa", action="store_true", help="also the sa file (8 GiB of temporary disk)")
    ap.add_argument("--max-mb", type=float, default=500.0)
    args = ap.parse_args(argv)
    names = args.only or [n for n in CASES if n != "sa-file" or args.with_sa]
    work = Path(tempfile.mkdtemp(prefix="sarsleuth-streams-"))
    rows, failed = [], False
    try:
        for name in names:
            for gb in (args.gb / 4, args.gb):
                code, peak, secs, said, ok = run_case(name, gb, work)
                ok = ok and (peak or 0) < args.max_mb * MB
                failed |= not ok
                rows.append((name, gb, code, peak, secs, said, ok))
    finally:
        for p in work.iterdir():
            p.unlink()
        work.rmdir()
    print(f"{'stream':12} {'GB':>5} {'exit':>4} {'peak MB':>8} {'seconds':>8} {'s/GB':>6} ok  last line on stderr")
    for name, gb, code, peak, secs, said, ok in rows:
        print(f"{name:12} {gb:5.1f} {code:4d} {(peak or 0) / MB:8.0f} {secs:8.1f} {secs / gb:6.1f} "
              f"{'yes' if ok else 'NO '} {said[:150]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

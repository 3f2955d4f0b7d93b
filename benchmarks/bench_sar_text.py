"""How fast sarsleuth reads ``sar -A`` text compared with sar printing it.

A real sa file (by default the corpus' ``sadc -S XALL`` recording, every
activity including per-CPU interrupts) is rendered with ``sar -A -f``; the
text is repeated ``--repeat`` times (days of the same host back to back, the
way users ``cat`` several days together) and parsed once.  sar's time is the
time of ``--repeat`` renderings, so the ratio compares the same volume.
A ratio below 1 means parsing the text is faster than producing it.

    python benchmarks/bench_sar_text.py [--sa FILE] [--repeat N]
"""
from __future__ import annotations

import argparse
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sarsleuth.inputs.parsers.base import ParseOptions  # noqa: E402
from sarsleuth.inputs.parsers.sar_text.reader import SarTextParser  # noqa: E402

DEFAULT_SA = Path("sar-text") / "generated" / "local-12.6.1_sa20261121_sadc-XALL-1s-x399.xz"
SAR_ENV = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}


def corpus_dir() -> Path | None:
    env = os.environ.get("SARSLEUTH_CORPUS")
    for candidate in ([Path(env)] if env else []) + [ROOT.parent / "shared" / "corpus"]:
        if candidate.is_dir():
            return candidate
    return None


def plain_sa_file(path: Path, workdir: Path) -> Path:
    """sar cannot read compressed files: unpack an .xz first."""
    if path.suffix != ".xz":
        return path
    out = workdir / path.stem
    with lzma.open(path) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def time_sar(sa_file: Path, runs: int) -> tuple[float, bytes]:
    """Seconds for ``runs`` renderings of ``sar -A -f`` (output discarded),
    and the text of one rendering."""
    text = subprocess.run(["sar", "-A", "-f", str(sa_file)], env=SAR_ENV, check=True,
                          capture_output=True).stdout
    start = time.perf_counter()
    for _ in range(runs):
        subprocess.run(["sar", "-A", "-f", str(sa_file)], env=SAR_ENV, check=True,
                       stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sa", type=Path, help="sa file (may be .xz); default: the corpus recording")
    parser.add_argument("--repeat", type=int, default=20, help="renderings of the file (default 20)")
    args = parser.parse_args(argv)
    if shutil.which("sar") is None:
        print("sar (sysstat) is not installed", file=sys.stderr)
        return 2
    sa = args.sa
    if sa is None:
        corpus = corpus_dir()
        if corpus is None:
            print("no --sa file and no corpus (set SARSLEUTH_CORPUS)", file=sys.stderr)
            return 2
        sa = corpus / DEFAULT_SA
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        sa_file = plain_sa_file(sa, workdir)
        sar_seconds, text = time_sar(sa_file, args.repeat)
        big = workdir / "sar-A.txt"
        with open(big, "wb") as fh:
            for _ in range(args.repeat):
                fh.write(text)
        lines = text.count(b"\n") * args.repeat
        start = time.perf_counter()
        source = SarTextParser.parse(big, ParseOptions())
        parse_seconds = time.perf_counter() - start
    print(f"input: {sa.name}, sar -A text {len(text) * args.repeat / 1e6:.1f} MB, {lines} lines "
          f"({args.repeat} renderings)")
    print(f"sar -A -f (x{args.repeat}): {sar_seconds:.2f} s")
    print(f"sarsleuth parse:   {parse_seconds:.2f} s  ({lines / parse_seconds / 1e3:.0f} k lines/s, "
          f"{len(source.metrics) / 1e6:.2f} M values, {source.metrics.section.nunique()} sections)")
    print(f"ratio parse/sar:   {parse_seconds / sar_seconds:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

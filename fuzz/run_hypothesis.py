"""Hypothesis at scale: the properties of tests/test_hostile_inputs.py, with
thousands of examples per parser kind.

    python fuzz/run_hypothesis.py                  # every kind, 2000 examples each
    python fuzz/run_hypothesis.py -n 500 sa ps     # some kinds, fewer examples

For each kind it prints how many generated inputs were parsed (Source or
InputError), how many failed the contract (with the smallest failing input,
saved under --crashes), the worst time and the worst tracemalloc peak.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings  # noqa: E402

from sarsleuth.inputs.parsers import KINDS  # noqa: E402
from tests.test_hostile_inputs import any_damage, check_parse  # noqa: E402


def fuzz_kind(kind: str, examples: int, scratch: Path, crashes: Path, measure_every: int) -> dict:
    stats = {"kind": kind, "inputs": 0, "sources": 0, "errors": 0, "worst_s": 0.0, "worst_peak": 0,
             "worst_bytes": 0, "failure": None}
    path = scratch / f"input-{kind}"

    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(data=any_damage(kind))
    def prop(data):
        path.write_bytes(data)
        measure = stats["inputs"] % measure_every == 0
        out = check_parse(kind, path, data, measure_memory=measure)
        stats["inputs"] += 1
        stats["sources" if out.result == "source" else "errors"] += 1
        stats["worst_s"] = max(stats["worst_s"], out.seconds)
        stats["worst_peak"] = max(stats["worst_peak"], out.peak)
        stats["worst_bytes"] = max(stats["worst_bytes"], len(data))

    try:
        prop()
    except Exception as exc:  # the contract was broken: keep the (shrunk) input
        stats["failure"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        crashes.mkdir(parents=True, exist_ok=True)
        if path.exists():
            (crashes / f"crash-{kind}-{int(time.time())}").write_bytes(path.read_bytes())
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kinds", nargs="*", default=KINDS)
    ap.add_argument("-n", "--examples", type=int, default=2000)
    ap.add_argument("--measure-every", type=int, default=10, help="tracemalloc one input in this many")
    ap.add_argument("--scratch", type=Path, default=None, help="directory for the generated inputs")
    ap.add_argument("--crashes", type=Path, default=Path("fuzz-crashes"))
    args = ap.parse_args(argv)
    import tempfile
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="sarsleuth-fuzz-"))
    scratch.mkdir(parents=True, exist_ok=True)
    print(f"{'kind':12} {'inputs':>7} {'Source':>7} {'InputError':>10} {'worst s':>8} {'worst peak MB':>13}  result")
    failed = 0
    t0 = time.time()
    for kind in args.kinds:
        s = fuzz_kind(kind, args.examples, scratch, args.crashes, args.measure_every)
        failed += s["failure"] is not None
        print(f"{kind:12} {s['inputs']:7d} {s['sources']:7d} {s['errors']:10d} {s['worst_s']:8.2f} "
              f"{s['worst_peak'] / 2**20:13.1f}  {s['failure'] or 'ok'}", flush=True)
    print(f"total {time.time() - t0:.0f}s, {failed} kind(s) failing")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

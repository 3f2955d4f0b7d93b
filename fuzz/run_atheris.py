"""Coverage-guided fuzzing of one parser kind with atheris (libFuzzer).

    pip install atheris
    python fuzz/run_atheris.py syslog -atheris_runs=20000
    python fuzz/run_atheris.py sa -max_total_time=600 -max_len=400000

The seeds of tests/test_hostile_inputs.py (samples, inline documents, the
corpus when present) start the corpus.  Any input that makes the parser
raise something else than InputError, break the Source contract or exceed
the time or memory bounds stops the run with libFuzzer's crash file
(written under the run's temporary directory unless -artifact_prefix= is
given).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import atheris  # noqa: E402

with atheris.instrument_imports(include=["sarsleuth"]):
    from sarsleuth.inputs.parsers import KINDS, registry  # noqa: E402
    from tests.test_hostile_inputs import check_parse, seeds  # noqa: E402
    registry()          # imports every parser module, so they are instrumented too
    import sarsleuth.inputs.parsers.logs.scan, sarsleuth.timebase.align  # noqa: E401,F401,E402

COUNT = {"inputs": 0, "sources": 0, "errors": 0, "worst_s": 0.0}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in KINDS:
        sys.exit(f"usage: run_atheris.py KIND [libFuzzer options]; KIND one of {', '.join(KINDS)}")
    kind = sys.argv.pop(1)
    scratch = Path(tempfile.mkdtemp(prefix=f"sarsleuth-atheris-{kind}-"))
    corpus = scratch / "corpus"
    corpus.mkdir()
    for i, data in enumerate(seeds(kind)):
        (corpus / f"seed-{i}").write_bytes(data[:400_000])
    path = scratch / "input"

    def one_input(data: bytes):
        path.write_bytes(data)
        out = check_parse(kind, path, data, measure_memory=COUNT["inputs"] % 50 == 0)
        COUNT["inputs"] += 1
        COUNT["sources" if out.result == "source" else "errors"] += 1
        COUNT["worst_s"] = max(COUNT["worst_s"], out.seconds)

    import atexit
    atexit.register(lambda: print(f"\n{kind}: {COUNT['inputs']} inputs, {COUNT['sources']} Source, "
                                  f"{COUNT['errors']} InputError, worst {COUNT['worst_s']:.2f}s", file=sys.stderr))
    args = list(sys.argv)
    if not any(a.startswith("-artifact_prefix=") for a in args):
        crashes = scratch / "crashes"
        crashes.mkdir()
        args.append(f"-artifact_prefix={crashes}/")
        print(f"crash files (if any) go to {crashes}", file=sys.stderr)
    atheris.Setup(args + [str(corpus)], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""Benchmark: parse a big /var/log/messages next to ``grep -cE`` over it,
plain and gzipped (next to ``gzip -dc | grep -cE``).

The file is made from real lines of the corpus (``corpus/logs``), re-stamped
with increasing times, with real incident reports (page allocation failure
with call trace, memcg OOM, segfaults, TIME_WAIT overflow with a rate-limit
summary, hung task) sprinkled in at known places.

    python benchmarks/bench_logs.py                  # 500 MB in a temp dir
    python benchmarks/bench_logs.py --size-mb 100 --dir /some/scratch --keep
    python benchmarks/bench_logs.py --generate-only messages.big

Each measurement runs in a child process so its peak RSS can be read (GNU
time); grep gets the same signature patterns translated to POSIX ERE
(``ere.py``).  Runs are interleaved (grep, each engine, grep...) so load on
the machine hits all alike; the best run of each counts.  Targets: plain
log at most 1.5x ``grep -cE``, gzipped at most 2x ``gzip -dc | grep -cE``,
peak memory under 1 GiB.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import ere  # noqa: E402
from sarsleuth.inputs.parsers.logs.engine import candidate_patterns, hyperscan_available  # noqa: E402
from sarsleuth.inputs.parsers.logs import syslog  # noqa: E402
from sarsleuth.knowledge.signatures import classify  # noqa: E402

FILLER_FILES = ["kernlog-ubuntu-5.4-two-boots-hotsos-compute4.log", "messages-2.6.5-fedora-loghub-linux2k.log",
                "messages-two-hosts-unordered-insights.log", "syslog-multiline-continuation-lnav.log"]
INCIDENT_FILES = ["messages-pagealloc-order0-rhel7-3.10.log", "kernlog-oom-memcg-nginx-5.0-aws.log",
                  "messages-segfault-ip-format-variants.log", "messages-tcp-timewait-overflow-ratelimit.log",
                  "kernlog-hung-task-5.15-hotsos.log", "pair-C-syslog-segfault-split-continuation-centos7.log"]
#: One incident block every this many filler lines.
INCIDENT_EVERY = 40_000


def corpus_dir() -> Path:
    env = os.environ.get("SARSLEUTH_CORPUS")
    for cand in ([Path(env)] if env else []) + [ROOT.parent / "shared" / "corpus"]:
        if (cand / "logs").is_dir():
            return cand
    sys.exit("corpus not found: set SARSLEUTH_CORPUS")


def _bodies(path: Path, keep_signatures: bool) -> list[str]:
    """``host tag: message`` parts of the stamped lines of a syslog file."""
    out = []
    for line in path.read_text("utf-8", errors="replace").splitlines():
        info = syslog.parse_line(line)
        if info.stamp is None or info.stamp[0] != "md":
            continue
        body = syslog.RE_3164.match(line).group("rest").lstrip()
        if not keep_signatures and info.tag and classify(info.message):
            continue
        out.append(body)
    return out


def generate(path: Path, size_mb: int, seed: int = 7) -> dict:
    """Write the big file; return what a parser must find in it."""
    corpus = corpus_dir() / "logs"
    rnd = random.Random(seed)
    filler = [b for name in FILLER_FILES for b in _bodies(corpus / name, keep_signatures=False)]
    incidents = []
    for name in INCIDENT_FILES:
        bodies = _bodies(corpus / name, keep_signatures=True)
        expected = len(syslog.read_events(corpus / name).events)
        incidents.append((name, bodies, expected))
    target = size_mb * 1024 * 1024
    when = dt.datetime(2014, 5, 5, 0, 0, 0)
    written, lines, events, n_incidents = 0, 0, 0, 0
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        while written < target:
            chunk = []
            for _ in range(INCIDENT_EVERY):
                when += dt.timedelta(milliseconds=rnd.randrange(0, 80))
                chunk.append(f"{when:%b} {when.day:2d} {when:%H:%M:%S} {rnd.choice(filler)}\n")
            name, bodies, expected = incidents[n_incidents % len(incidents)]
            for body in bodies:
                chunk.append(f"{when:%b} {when.day:2d} {when:%H:%M:%S} {body}\n")
            n_incidents += 1
            events += expected
            text = "".join(chunk)
            fh.write(text)
            written += len(text.encode("utf-8"))
            lines += len(chunk)
    return {"path": str(path), "bytes": written, "lines": lines, "incidents": n_incidents, "events": events}


def _run(cmd: list[str], env: dict | None = None) -> tuple[float, int | None, str, float | None]:
    """Wall seconds, peak RSS (bytes, None when unknown), stdout and CPU
    seconds (user + system, children included; None when unknown) of a
    child process.

    Peak and CPU come from GNU time (``/usr/bin/time -f "%M %U %S"``)
    because the rusage of a child forked from this process would count the
    memory it inherited before exec.  CPU seconds say what a run costs when
    other jobs share the machine and stretch wall times."""
    import shutil
    gnu_time = shutil.which("time", path="/usr/bin:/bin")
    full = [gnu_time, "-f", "%M %U %S"] + cmd if gnu_time else cmd
    start = time.perf_counter()
    proc = subprocess.run(full, capture_output=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):   # grep -c exits 1 on zero matches
        sys.exit(f"{cmd[0]} failed with {proc.returncode}: {proc.stderr.decode()[-500:]}")
    rss = cpu = None
    if gnu_time:
        fields = proc.stderr.decode().strip().splitlines()[-1].split()
        if len(fields) == 3 and fields[0].isdigit():
            rss = int(fields[0]) * 1024
            cpu = float(fields[1]) + float(fields[2])
    return wall, rss, proc.stdout.decode().strip(), cpu


def _cpu(seconds: float | None) -> str:
    return f"CPU {seconds:6.2f} s" if seconds is not None else "CPU    n/a"


def _mib(rss: int | None) -> str:
    return f"{rss / 2**20:7.1f} MiB" if rss is not None else "    n/a"


PARSE_CHILD = """
import json, sys
from sarsleuth.inputs.parsers import parse
src = parse(sys.argv[1])
print(json.dumps({"events": len(src.events), "records": src.records, "engine": src.meta["engine"],
                  "kinds": src.events["kind"].value_counts().to_dict(),
                  "minutes": len(src.meta["volume"]), "volume_lines": int(src.meta["volume"].sum())}))
"""


def _interleaved(runs: int, commands: dict) -> dict:
    """Best (wall, rss, stdout) of each command, running them in turn."""
    results: dict = {name: [] for name in commands}
    for _ in range(runs):
        for name, (cmd, env) in commands.items():
            results[name].append(_run(cmd, env=env))
    return {name: min(r, key=lambda x: x[0]) for name, r in results.items()}


def bench(path: Path, expected: dict | None, runs: int = 3, gz: bool = True, engines: list | None = None) -> None:
    grep = ere.gnu_grep() or "grep"
    with tempfile.NamedTemporaryFile("w", suffix=".ere", delete=False) as fh:
        fh.write(ere.grep_expression(candidate_patterns()) + "\n")
        pattern_file = fh.name
    env_c = dict(os.environ, LC_ALL="C")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    engines = engines or (["hyperscan", "re2"] if hyperscan_available() else ["re2"])
    cases = [("plain", path, [grep, "-cE", "-f", pattern_file, str(path)], "grep -cE")]
    gz_path = None
    if gz:
        gz_path = path.with_name(path.name + ".gz")
        with open(gz_path, "wb") as out:
            subprocess.run(["gzip", "-c", str(path)], stdout=out, check=True)
        cases.append(("gzip", gz_path, ["sh", "-c", f'gzip -dc "$1" | {grep} -cE -f "$2"', "sh",
                                        str(gz_path), pattern_file], "gzip -dc | grep -cE"))
    try:
        for label, target, ref_cmd, ref_name in cases:
            subprocess.run(["cat", str(target)], stdout=subprocess.DEVNULL, check=True)   # warm the page cache
            commands = {ref_name: (ref_cmd, env_c)}
            for engine in engines:
                commands[engine] = ([sys.executable, "-c", PARSE_CHILD, str(target)],
                                    dict(env, SARSLEUTH_LOG_ENGINE=engine))
            best = _interleaved(runs, commands)
            g_wall, g_rss, g_out, g_cpu = best[ref_name]
            print(f"{label}: {target} ({target.stat().st_size / 2**20:.0f} MiB), best of {runs} interleaved run(s)")
            print(f"  {ref_name:20s} {g_wall:7.2f} s   {_cpu(g_cpu)}   peak RSS {_mib(g_rss)}   "
                  f"{g_out} matching lines")
            for engine in engines:
                wall, rss, out, cpu = best[engine]
                info = json.loads(out)
                ok = ""
                if expected:
                    ok = "events as planted" if info["events"] == expected["events"] else \
                        f"MISMATCH: {expected['events']} planted"
                cpu_ratio = f", CPU {cpu / g_cpu:4.2f}x" if cpu and g_cpu else ""
                print(f"  parse [{info['engine']:9s}]    {wall:7.2f} s   {_cpu(cpu)}   peak RSS {_mib(rss)}   "
                      f"{info['events']} events, {info['records']} lines, {info['minutes']} minutes   "
                      f"-> wall {wall / g_wall:4.2f}x{cpu_ratio}   {ok}")
    finally:
        os.unlink(pattern_file)
        if gz_path is not None:
            gz_path.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=500)
    ap.add_argument("--dir", help="where to write the file (default: a new temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated file")
    ap.add_argument("--generate-only", metavar="PATH", help="only write the file to PATH")
    ap.add_argument("--file", help="benchmark an existing file instead of generating one")
    ap.add_argument("--runs", type=int, default=3, help="runs per tool; the fastest counts")
    ap.add_argument("--no-gzip", action="store_true", help="skip the gzipped comparison")
    ap.add_argument("--engine", action="append", choices=["hyperscan", "re2"],
                    help="time only this engine (repeatable; default: both when hyperscan is installed)")
    args = ap.parse_args()
    if args.generate_only:
        print(json.dumps(generate(Path(args.generate_only), args.size_mb)))
        return
    if args.file:
        bench(Path(args.file), None, args.runs, not args.no_gzip, args.engine)
        return
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="sarsleuth-bench-"))
    path = workdir / "messages"
    t0 = time.perf_counter()
    expected = generate(path, args.size_mb)
    print(f"generated {expected['lines']} lines, {expected['incidents']} incidents "
          f"({expected['events']} events planted) in {time.perf_counter() - t0:.1f} s")
    try:
        bench(path, expected, args.runs, not args.no_gzip, args.engine)
    finally:
        if not args.keep:
            path.unlink()
            if not args.dir:
                workdir.rmdir()


if __name__ == "__main__":
    main()

"""Scale under attack: many devices, many files, every line matching.

    python benchmarks/bench_scale.py                 # all three
    python benchmarks/bench_scale.py --only devices  # 10,000 interfaces in a sar text
    python benchmarks/bench_scale.py --only files    # 5,000 small log files
    python benchmarks/bench_scale.py --only matches  # a 300 MB log where every line matches

Each case runs `sarsleuth analyze --format json` in its own process and
reports seconds and the peak resident memory of that process and its
children (the whole cost a user pays).  Targets: 10,000 interfaces in under
10 s, 5,000 small logs in under 60 s, the all-matching 300 MB log under
1 GB peak.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def make_devices(root: Path, interfaces: int = 10_000, records: int = 12) -> Path:
    path = root / "sar-n-DEV.txt"
    with path.open("w") as out:
        out.write("Linux 5.15.0-91-generic (edge1) \t03/01/2024 \t_x86_64_\t(16 CPU)\n\n")
        for rec in range(records):
            t = f"10:{rec * 5:02d}:01"
            out.write(f"{t}        IFACE   rxpck/s   txpck/s    rxkB/s    txkB/s   rxcmp/s   txcmp/s  rxmcst/s   %ifutil\n")
            for i in range(interfaces):
                out.write(f"{t}     veth{i:05d}     12.00     11.00      3.10      2.90      0.00      0.00      0.00      0.01\n")
            out.write("\n")
    return path


def make_files(root: Path, count: int = 5_000) -> Path:
    folder = root / "many"
    folder.mkdir()
    for i in range(count):
        with (folder / f"app{i:05d}.log").open("w") as out:
            for j in range(20):
                out.write(f"Mar 12 03:{j:02d}:07 web7 myapp[{1000 + i}]: request {j} served in {j * 3 + 1} ms\n")
            if i % 100 == 0:
                out.write(f"Mar 12 03:30:07 web7 kernel: [86012.114512] nginx[{16660 + i}]: segfault at 0 ip "
                          "00007f3a2c1e4b5a sp 00007ffd3a9c1e80 error 4 in ngx_http_lua_module.so[7f3a2c1a0000+9b000]\n")
    return folder


def make_matches(root: Path, megabytes: int = 300) -> Path:
    path = root / "error.log"
    line = ("2024/03/12 03:{m:02d}:{s:02d} [error] 2211#0: *{c} upstream timed out (110: Connection timed out) "
            "while reading response header from upstream, client: 10.12.0.20, server: img.example.com, "
            "request: \"GET /img/a.jpg HTTP/1.1\", upstream: \"http://10.20.0.11:8080/img/a.jpg\"\n")
    target = megabytes << 20
    written, c = 0, 0
    with path.open("w") as out:
        while written < target:
            text = line.format(m=(c // 60) % 60, s=c % 60, c=c)
            out.write(text)
            written += len(text)
            c += 1
    return path


def run(paths) -> tuple[float, float, float]:
    """Wall seconds, peak MB and CPU seconds (process and children) of one
    analyze (CPU seconds tell what the run costs when the machine is shared)."""
    code = ("import resource, sys, time, subprocess\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run([sys.executable, '-m', 'sarsleuth.cli', 'analyze', '--format', 'json', *sys.argv[1:]],"
            " stdout=subprocess.DEVNULL)\n"
            "dt = time.perf_counter() - t\n"
            "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(dt, use.ru_maxrss / 1024, use.ru_utime + use.ru_stime, p.returncode)\n")
    out = subprocess.run([sys.executable, "-c", code, *map(str, paths)], capture_output=True, text=True, check=True)
    seconds, peak, cpu, rc = out.stdout.split()
    if rc != "0":
        raise SystemExit(f"analyze exited {rc}")
    return float(seconds), float(peak), float(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["devices", "files", "matches"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sarsleuth-scale-") as tmp:
        root = Path(tmp)
        cases = {"devices": (make_devices, "10,000 interfaces x 12 records (sar -n DEV text)", 10.0, None),
                 "files": (make_files, "5,000 small syslog files", 60.0, None),
                 "matches": (make_matches, "300 MB nginx error.log, every line matching", None, 1024.0)}
        print("| case | seconds | CPU seconds | peak MB (with children) | target |")
        print("|---|---|---|---|---|")
        for name, (make, label, max_s, max_mb) in cases.items():
            if args.only and name != args.only:
                continue
            path = make(root)
            seconds, peak, cpu = run([path])
            target = f"< {max_s:.0f} s" if max_s else f"< {max_mb:.0f} MB"
            print(f"| {label} | {seconds:.1f} | {cpu:.1f} | {peak:.0f} | {target} |")
            sys.stdout.flush()
            if path.is_dir():
                for f in path.iterdir():
                    f.unlink()
                path.rmdir()
            else:
                os.unlink(path)


if __name__ == "__main__":
    main()

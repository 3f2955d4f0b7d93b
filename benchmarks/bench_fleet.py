"""A generated fleet on a local Dask cluster: hosts per second with 1 and 2
workers, and each worker's peak memory for a small and a full fleet.

    python benchmarks/bench_fleet.py                   # 200 hosts x 1 day at 10 minutes
    python benchmarks/bench_fleet.py --hosts 40 --workers 1,2
    python benchmarks/bench_fleet.py --keep /some/dir  # keep the fleet (and the saved case)

The fleet is ``samples/make_fleet.py``: one binary sa file and one syslog per
host, 5 % of hosts sharing an iowait storm at 03:12 UTC, one host with its
own OOM kill.  Side by side, ``sadf -d FILE -- -u -r -q`` reads every host's
sa file in one process (sysstat's own reading of the same data, nothing
analysed).  Each worker count gets a fresh LocalCluster (one single-threaded
worker process each); a three-host warm-up run loads the modules in the workers
first, so hosts/s is the steady rate.  Peak memory is each worker process's
resident high-water mark (``ru_maxrss``), for a quarter of the fleet and for
all of it: it must not grow with the number of hosts.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "samples"))


def _peak_mb() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_seconds() -> float:
    import os
    t = os.times()
    return t.user + t.system


def sadf_seconds(fleet: Path) -> float | None:
    if shutil.which("sadf") is None:
        return None
    began = time.perf_counter()
    for sa in sorted((fleet / "sa").iterdir()):
        subprocess.run(["sadf", "-d", str(sa), "--", "-u", "-r", "-q"], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - began


def run_on_cluster(fleet: Path, warm: Path, workers: int, save: Path | None):
    import logging

    import dask
    import distributed

    import sarsleuth.fleet
    with dask.config.set({"distributed.worker.profile.enabled": False}), distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  memory_limit="2GiB", silence_logs=logging.CRITICAL) as cluster, \
            distributed.Client(cluster) as client:
        sarsleuth.fleet.analyze(warm, scheduler=cluster.scheduler_address)
        cpu_before = client.run(_cpu_seconds)
        began = time.perf_counter()
        result = sarsleuth.fleet.analyze(fleet, scheduler=cluster.scheduler_address, save=save)
        seconds = time.perf_counter() - began
        cpu = sum(v - cpu_before[k] for k, v in client.run(_cpu_seconds).items())
        peaks = sorted(client.run(_peak_mb).values())
    return result, seconds, peaks, cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    ap.add_argument("--keep", type=Path, help="write the fleet here and keep it")
    args = ap.parse_args(argv)
    from make_fleet import write_fleet

    work = args.keep or Path(tempfile.mkdtemp(prefix="sarsleuth-fleet-"))
    try:
        began = time.perf_counter()
        made = write_fleet(work / "fleet", hosts=args.hosts)
        quarter = write_fleet(work / "quarter", hosts=max(4, args.hosts // 4))
        write_fleet(work / "warm", hosts=3)
        print(f"generated {args.hosts} + {len(quarter['hosts'])} hosts in {time.perf_counter() - began:.1f} s; "
              f"shared incident on {len(made['shared'])} hosts, own incident on {made['own']}")
        ref = sadf_seconds(work / "fleet")
        if ref is not None:
            print(f"sadf -d -- -u -r -q over {args.hosts} sa files: {ref:.1f} s = {args.hosts / ref:.1f} hosts/s "
                  "(reading only, one process)")
        rates = {}
        for n in [int(w) for w in args.workers.split(",")]:
            result, seconds, peaks, cpu = run_on_cluster(work / "fleet", work / "warm", n,
                                                    work / f"case-{n}" if args.keep else None)
            first = result.incidents[0]
            assert first.hosts == made["shared"], (first.title, first.hosts)
            assert result.incidents[1].hosts == [made["own"]]
            _q, _qs, qpeaks, _qc = run_on_cluster(work / "quarter", work / "warm", n, None)
            rates[n] = args.hosts / seconds
            print(f"{n} worker(s): {args.hosts} hosts in {seconds:.1f} s = {rates[n]:.2f} hosts/s"
                  + (f" ({rates[n] / (args.hosts / ref):.2f}x sadf's reading rate)" if ref else "")
                  + f"; peak per worker {', '.join(f'{p:.0f}' for p in peaks)} MB "
                  f"(quarter fleet: {', '.join(f'{p:.0f}' for p in qpeaks)} MB)")
            print(f"   workers' CPU {cpu:.1f} s = {cpu / args.hosts * 1000:.0f} ms per host; "
                  f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            print(f"   first: {first.title}")
        if 1 in rates and 2 in rates:
            print(f"speed-up 2 workers / 1: {rates[2] / rates[1]:.2f}x")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

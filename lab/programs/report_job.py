"""The nightly report: one connection to the database per customer
segment, all at once, each running its long aggregate (``pg_sleep``
stands for the scan) and holding its connection until the report is
written.  It names itself (``--name``) the way daemons do."""
import argparse
import ctypes
import sys
import threading
import time

import psycopg2     # Debian's python3-psycopg2

PR_SET_NAME = 15


def segment(dsn: str, n: int, seconds: float, held: list) -> None:
    try:
        conn = psycopg2.connect(dsn, connect_timeout=5)
    except psycopg2.OperationalError as exc:
        print(f"segment {n}: {str(exc).strip()}", file=sys.stderr, flush=True)
        return
    held.append(conn)
    cur = conn.cursor()
    cur.execute("SELECT pg_sleep(%s)", (seconds,))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="nightly-report")
    ap.add_argument("--db", required=True)
    ap.add_argument("--segments", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    ctypes.CDLL(None).prctl(PR_SET_NAME, args.name.encode()[:15], 0, 0, 0)
    held: list = []
    workers = [threading.Thread(target=segment, args=(args.db, n, args.seconds, held))
               for n in range(args.segments)]
    for w in workers:
        w.start()
        time.sleep(0.2)
    for w in workers:
        w.join()
    print(f"report written: {len(held)} segments", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()

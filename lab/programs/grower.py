"""A process whose memory grows: it touches ``--rate-mb`` MB of new heap a
second up to ``--max-mb``, then holds it for ``--hold`` seconds (a cache
that is never trimmed, a leak).  It names itself (``--name``) the way
daemons do, so that the kernel's messages and ``ps -o comm`` show it."""
import argparse
import ctypes
import time

PR_SET_NAME = 15


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="cache-warmer")
    ap.add_argument("--rate-mb", type=float, default=100.0)
    ap.add_argument("--max-mb", type=int, default=4096)
    ap.add_argument("--hold", type=float, default=30.0)
    args = ap.parse_args()
    ctypes.CDLL(None).prctl(PR_SET_NAME, args.name.encode()[:15], 0, 0, 0)
    chunks, held, step = [], 0, 16
    start = time.time()
    while held < args.max_mb:
        due = start + held / args.rate_mb
        if due > time.time():
            time.sleep(due - time.time())
        chunks.append(bytearray(b"\x5a") * (step << 20))   # every page touched
        held += step
    time.sleep(args.hold)


if __name__ == "__main__":
    main()

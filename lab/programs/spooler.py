"""A mail-spool-like writer: it drops one small file a message into
``--dir`` at ``--rate`` files a second and keeps them (a queue that is never
drained).  Errors (ENOSPC when the filesystem runs out of blocks or inodes)
go to stderr, once a second at most.  It names itself (``--name``)."""
import argparse
import ctypes
import os
import sys
import time

PR_SET_NAME = 15


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--rate", type=float, default=500.0)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--name", default="mail-spooler")
    args = ap.parse_args()
    ctypes.CDLL(None).prctl(PR_SET_NAME, args.name.encode()[:15], 0, 0, 0)
    os.makedirs(args.dir, exist_ok=True)
    body = b"x" * args.size
    n, last_error, start = 0, 0.0, time.time()
    while True:
        due = start + n / args.rate
        if due > time.time():
            time.sleep(due - time.time())
        n += 1
        try:
            with open(os.path.join(args.dir, f"msg-{n:08d}.eml"), "wb") as fh:
                fh.write(body)
        except OSError as exc:
            if time.time() - last_error >= 1.0:
                print(f"cannot queue message {n}: {exc}", file=sys.stderr, flush=True)
                last_error = time.time()


if __name__ == "__main__":
    main()

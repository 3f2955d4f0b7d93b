"""A small database's write-ahead log: it appends a record and calls fsync
every ``--every`` seconds, as a database commits, and says in its log when
a commit waited more than a second on the disk.  It names itself
(``--name``) the way daemons do."""
import argparse
import ctypes
import os
import sys
import time

PR_SET_NAME = 15


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="ledger-db")
    ap.add_argument("--path", required=True)
    ap.add_argument("--every", type=float, default=0.1)
    args = ap.parse_args()
    ctypes.CDLL(None).prctl(PR_SET_NAME, args.name.encode()[:15], 0, 0, 0)
    fd = os.open(args.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    record = b"x" * 4096
    while True:
        start = time.monotonic()
        os.write(fd, record)
        os.fsync(fd)
        took = time.monotonic() - start
        if took > 1.0:
            print(f"LOG: commit waited {took:.1f} s for fsync of {args.path}", file=sys.stderr, flush=True)
        time.sleep(max(0.0, args.every - took))


if __name__ == "__main__":
    main()

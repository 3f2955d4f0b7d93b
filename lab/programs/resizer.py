"""An image worker that crashes: after ``--after`` seconds of work it writes
through a NULL pointer in C code (a real SIGSEGV, which the kernel reports
as a segfault line).  It names itself (``--name``) the way daemons do."""
import argparse
import ctypes
import time

PR_SET_NAME = 15


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="img-resizer")
    ap.add_argument("--after", type=float, default=3.0)
    args = ap.parse_args()
    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_NAME, args.name.encode()[:15], 0, 0, 0)
    deadline = time.time() + args.after
    while time.time() < deadline:
        sum(i * i for i in range(20000))
    # a write through a NULL pointer inside libc's memset (ctypes' string_at
    # checks for NULL before it reads; memset does not)
    ctypes.memset(0, 0, 16)


if __name__ == "__main__":
    main()

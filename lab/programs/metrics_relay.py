"""A statsd-style metrics relay: it reads counters and timings from UDP,
sums them, and forwards each batch of 50 to the central aggregator
before it reads again (one thread, as small relays are written), so the
round trip to the aggregator bounds how many datagrams a second it takes.
What it cannot read waits in its socket's receive buffer, then the kernel
drops it."""
import argparse
import socket
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8125)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--forward-ms", type=float, default=20.0, help="the aggregator's round trip per batch")
    ap.add_argument("--rcvbuf", type=int, default=212992)
    args = ap.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
    sock.bind(("127.0.0.1", args.port))
    sums: dict = {}
    while True:
        for _ in range(args.batch):
            name, _sep, rest = sock.recv(2048).decode("ascii", "replace").partition(":")
            value = rest.split("|", 1)[0]
            try:
                sums[name] = sums.get(name, 0.0) + float(value)
            except ValueError:
                continue
        time.sleep(args.forward_ms / 1000.0)     # waiting on the aggregator
        sums.clear()


if __name__ == "__main__":
    main()

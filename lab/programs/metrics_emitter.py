"""An application's metrics client: it sends a counter and a timing per
request to the local statsd relay over UDP, at a steady rate (the
requests a second it serves, times the metrics each request emits)."""
import argparse
import random
import socket
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8125)
    ap.add_argument("--rate", type=float, required=True, help="datagrams a second")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--prefix", default="shop.api")
    args = ap.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    names = [f"{args.prefix}.{part}" for part in ("requests", "orders.created", "cart.items", "db.query",
                                                  "render.template", "cache.hit", "cache.miss")]
    start = time.time()
    sent = 0
    while time.time() - start < args.seconds:
        for _ in range(20):
            name = random.choice(names)
            if random.random() < 0.5:
                line = f"{name}:1|c"
            else:
                line = f"{name}.ms:{random.uniform(2, 180):.1f}|ms"
            sock.sendto(line.encode("ascii"), ("127.0.0.1", args.port))
        sent += 20
        delay = start + sent / args.rate - time.time()
        if delay > 0:
            time.sleep(delay)


if __name__ == "__main__":
    main()

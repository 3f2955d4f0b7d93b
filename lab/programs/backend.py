"""A small HTTP service the staged nginx proxies to (``/api/...``).

It answers each request after ``--delay`` seconds; ``--leak-fds N`` keeps
N descriptors open per request and never closes them (a descriptor leak);
``--threads-per-request N`` starts N short-lived threads per request (a
service that spawns work); ``--call HOST:PORT`` calls another service on a
new connection for every request, closing it itself (no connection pool).  It names itself (``--name``) the way daemons do,
so that the kernel's messages and ``ps -o comm`` show that name.  Errors go
to stderr, which the recording sends to syslog.
"""
import argparse
import ctypes
import http.client
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PR_SET_NAME = 15


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--name", default="api-backend")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--leak-fds", type=int, default=0)
    ap.add_argument("--threads-per-request", type=int, default=0)
    ap.add_argument("--call", default="", help="HOST:PORT of a service called once a request, "
                    "on a new connection each time (no connection pool)")
    args = ap.parse_args()
    ctypes.CDLL(None).prctl(PR_SET_NAME, args.name.encode()[:15], 0, 0, 0)
    leaked = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            try:
                for _ in range(args.leak_fds):
                    leaked.append(open("/dev/null", "rb"))
                workers = [threading.Thread(target=time.sleep, args=(0.5,)) for _ in range(args.threads_per_request)]
                for w in workers:
                    w.start()
            except OSError as exc:          # EMFILE, EAGAIN...
                print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} ERROR {self.path}: {exc}", file=sys.stderr, flush=True)
                self.send_error(500)
                return
            except RuntimeError as exc:     # "can't start new thread"
                print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} ERROR {self.path}: {exc}", file=sys.stderr, flush=True)
                self.send_error(503)
                return
            if args.call:
                host, port = args.call.rsplit(":", 1)
                try:
                    conn = http.client.HTTPConnection(host, int(port), timeout=3)
                    conn.request("GET", "/stock")
                    conn.getresponse().read()
                    conn.close()
                except OSError as exc:     # EADDRNOTAVAIL when the ephemeral ports run out
                    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} ERROR calling {args.call}: {exc}",
                          file=sys.stderr, flush=True)
                    self.send_error(502)
                    return
            if args.delay:
                time.sleep(args.delay)
            body = b'{"ok": true}\n'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *a):     # no access log: only errors reach syslog
            pass

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening on 127.0.0.1:{args.port} (pid {os.getpid()})", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

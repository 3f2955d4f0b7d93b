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
    ap.add_argument("--bind", default="127.0.0.1", help="the address it listens on")
    ap.add_argument("--work-ms", type=float, default=0.0)
    ap.add_argument("--db", default="", help="libpq connection string of the service's database")
    ap.add_argument("--leak-db-every", type=int, default=0)
    ap.add_argument("--fork-export-after", type=float, default=0.0)
    ap.add_argument("--export-seconds", type=float, default=3600.0)
    args = ap.parse_args()
    ctypes.CDLL(None).prctl(PR_SET_NAME, args.name.encode()[:15], 0, 0, 0)
    leaked = []
    served = [0]

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
            if args.db:
                try:
                    query(args, leaked, served)
                except Exception as exc:      # psycopg2.OperationalError: too many clients...
                    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} ERROR {self.path}: database: "
                          f"{str(exc).strip()}", file=sys.stderr, flush=True)
                    self.send_error(500)
                    return
            if args.work_ms:
                busy_until = time.thread_time() + args.work_ms / 1000.0
                while time.thread_time() < busy_until:
                    sum(i * i for i in range(500))
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

    server = ThreadingHTTPServer((args.bind, args.port), Handler)
    server.daemon_threads = True
    if args.fork_export_after:
        threading.Timer(args.fork_export_after, export, (args,)).start()
    print(f"listening on {args.bind}:{args.port} (pid {os.getpid()})", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


def query(args, leaked: list, served: list) -> None:
    import psycopg2     # Debian's python3-psycopg2, as the host's service has it

    served[0] += 1
    conn = psycopg2.connect(args.db, connect_timeout=3)
    cur = conn.cursor()
    cur.execute("SELECT count(*) FROM pg_stat_activity")
    cur.fetchone()
    if args.leak_db_every and served[0] % args.leak_db_every == 0:
        leaked.append(conn)        # the error path that returns before close()
        return
    conn.close()


def export(args) -> None:
    """A long export in a detached child: it keeps every descriptor the
    service had open, the listening socket among them."""
    if os.fork():
        return
    os.setsid()
    ctypes.CDLL(None).prctl(PR_SET_NAME, b"order-export", 0, 0, 0)
    print(f"order-export started (pid {os.getpid()})", file=sys.stderr, flush=True)
    deadline = time.time() + args.export_seconds
    while time.time() < deadline:
        sum(i * i for i in range(20000))
        time.sleep(0.5)
    os._exit(0)


if __name__ == "__main__":
    main()

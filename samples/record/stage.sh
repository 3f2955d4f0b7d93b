#!/usr/bin/env bash
# Stage and record a small, real incident on loopback:
#
#   sadc (1 s, -S XALL)      -> saDD
#   nginx on 127.0.0.1        -> error.log (error_log ... info)
#   ab / wrk against it       -> ab-*.txt, wrk-*.txt
#   ps aux (nginx rows)       -> ps-before.txt, ps-after.txt
#   script clock              -> timeline.txt
#
# What happens, in order: a healthy keep-alive ab run; an ab -k run with more
# connections than nginx's worker_connections allow; a long non-keep-alive ab
# run that piles up TIME_WAIT sockets; a worker killed with SIGSEGV; a wrk
# run past the connection limit with a second worker killed in the middle of
# it; a direct-I/O write burst; a few GB of memory held for ~10 s; a third
# worker crash; then everything stops and the bundle is copied out.
#
# Usage: stage.sh OUTDIR
# Needs: /usr/lib/sysstat/sadc, nginx, ab, wrk, python3 (no root needed).
# Knobs (environment): PORT (default 18631), MEM_MB (default 4096, capped at
# a third of MemAvailable), IO_SECONDS (default 8).
# Bounded: about two and a half minutes (plus up to 70 s at the start while
# TIME_WAIT sockets of an earlier run drain); every process it starts is
# stopped on exit, and its temporary directory removed.

set -euo pipefail

OUT=${1:?usage: stage.sh OUTDIR}
PORT=${PORT:-18631}
MEM_MB=${MEM_MB:-4096}
IO_SECONDS=${IO_SECONDS:-8}
SADC=${SADC:-/usr/lib/sysstat/sadc}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
SADC_SECONDS=240          # hard upper bound of the sa recording

for tool in "$SADC" "$NGINX" "$(command -v ab || true)" "$(command -v wrk || true)" "$(command -v python3 || true)"; do
    if [ -z "$tool" ] || [ ! -x "$tool" ]; then
        echo "stage.sh: missing tool (need sadc, nginx, ab, wrk, python3)" >&2
        exit 2
    fi
done

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sarsleuth-stage.XXXXXX")
chmod 755 "$WORK"            # nginx workers (nobody when run as root) read html/

SADC_PID= NGINX_PID= LOAD_PID= MEM_PID=
cleanup() {
    set +e
    for pid in $LOAD_PID $MEM_PID; do
        pkill -TERM -P "$pid" 2>/dev/null   # ab or wrk under the load subshell
        kill "$pid" 2>/dev/null
    done
    if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -QUIT "$NGINX_PID" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$NGINX_PID" 2>/dev/null
    fi
    if [ -n "$SADC_PID" ] && kill -0 "$SADC_PID" 2>/dev/null; then
        kill -TERM "$SADC_PID" 2>/dev/null
    fi
    wait 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A quiet start: TIME_WAIT sockets left by an earlier run (they live 60 s)
# would hide this run's climb, so wait (at most 70 s) for them to go.
timewait() { awk '$1 == "TCP:" { for (i = 2; i < NF; i++) if ($i == "tw") print $(i + 1) }' /proc/net/sockstat; }
for _ in $(seq 70); do
    [ "$(timewait)" -lt 1000 ] && break
    sleep 1
done
if [ "$(timewait)" -ge 1000 ]; then
    echo "stage.sh: $(timewait) TIME_WAIT sockets before the start; the TIME_WAIT climb may not stand out" >&2
fi

# ------------------------------------------------------------------ the clock
T0=$(date +%s.%N)
{
    echo "# seconds since the start of the recording, wall clock, what happened"
    echo "# host: $(nproc) CPUs, $(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo) MB RAM," \
         "kernel $(uname -r), TZ $(date +%Z)," \
         "net.ipv4.tcp_max_tw_buckets $(cat /proc/sys/net/ipv4/tcp_max_tw_buckets 2>/dev/null || echo unknown)"
    echo "# $("$SADC" -V 2>&1 | head -n1); $("$NGINX" -v 2>&1); ab $(ab -V 2>&1 | sed -n 's/.*Version \([^ ]*\).*/\1/p' | head -n1); $(wrk -v 2>&1 | head -n1 | cut -d' ' -f1-2)"
} > "$WORK/timeline.txt"
mark() {   # mark "what happened": seconds since T0, wall clock, text
    mark_at "$(date +%s.%N)" "$@"
}
mark_at() {  # mark_at EPOCH "what happened"
    local now=$1; shift
    printf '%s  %s  %s\n' "$(awk -v a="$now" -v b="$T0" 'BEGIN { printf "%7.1f", a - b }')" \
        "$(date -d "@$now" '+%Y-%m-%dT%H:%M:%S%z')" "$*" | tee -a "$WORK/timeline.txt"
}
wait_until() {   # wait_until SECONDS: sleep until T0 + SECONDS
    local left
    left=$(python3 -c "import time; print(max(0.0, $T0 + $1 - time.time()))")
    sleep "$left"
}
workers() {      # worker PIDs of the nginx master, ascending
    ps -o pid= --ppid "$NGINX_PID" | tr -d ' ' | sort -n
}
crash_worker() { # crash_worker: SIGSEGV the lowest-numbered worker, wait for its respawn
    local victim before after at
    before=$(workers | tr '\n' ' ')
    victim=$(workers | head -n1)
    at=$(date +%s.%N)
    kill -SEGV "$victim"
    for _ in $(seq 100); do
        after=$(workers | tr '\n' ' ')
        if ! echo " $after " | grep -q " $victim " && [ "$(echo $after | wc -w)" -eq 2 ]; then
            break
        fi
        sleep 0.05
    done
    mark_at "$at" "kill -SEGV $victim (workers before: ${before% }; after: ${after% })"
}
snapshot_ps() {  # ps aux, header and nginx rows only (like `ps aux | grep nginx`)
    { echo "\$ ps aux | grep nginx"; ps aux | awk 'NR == 1 || /nginx: (master|worker)/'; } > "$1"
}
run_load() {     # run_load FILE COMMAND...: the command line, then its output, as pasted
    local file=$1; shift
    { echo "\$ $*"; timeout 90 "$@" 2>&1 || true; } > "$WORK/$file" &
    LOAD_PID=$!
    wait "$LOAD_PID" || true
    LOAD_PID=
}

# ---------------------------------------------------------------- 1. sadc
"$SADC" -S XALL 1 "$SADC_SECONDS" "$WORK/sa.bin" &
SADC_PID=$!
mark "sadc -S XALL 1 $SADC_SECONDS started (pid $SADC_PID)"

# --------------------------------------------------------------- 2. nginx
mkdir -p "$WORK/nginx/conf" "$WORK/nginx/logs" "$WORK/nginx/html" "$WORK/nginx/tmp"
head -c 2048 /dev/zero | tr '\0' 'x' > "$WORK/nginx/html/index.html"
optional_temp=""
for m in fastcgi uwsgi scgi; do
    if ! "$NGINX" -V 2>&1 | grep -q -- "--without-http_${m}_module"; then
        optional_temp="$optional_temp    ${m}_temp_path tmp/$m;
"
    fi
done
cat > "$WORK/nginx/conf/nginx.conf" <<EOF
worker_processes 2;
pid logs/nginx.pid;
error_log logs/error.log info;

events {
    worker_connections 64;
}

http {
    access_log off;
    keepalive_timeout 30s;
    keepalive_requests 100000;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
$optional_temp
    server {
        listen 127.0.0.1:$PORT;
        root html;
        location / { }
    }
}
EOF
ulimit -c 0          # crashes without core files: "exited on signal 11"
wait_until 3
mark "nginx launched"
(cd "$WORK/nginx" && exec "$NGINX" -p ./ -e logs/error.log -c conf/nginx.conf -g 'daemon off;') &
NGINX_PID=$!
sleep 1               # let the master fork its workers before anything else forks
for _ in $(seq 100); do
    [ "$(workers | wc -l)" -eq 2 ] && break
    sleep 0.05
done
python3 - "$PORT" <<'EOF'
import socket, sys, time
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        break
    except OSError:
        time.sleep(0.05)
else:
    sys.exit("stage.sh: nginx is not listening")
EOF
mark "nginx up: master $NGINX_PID, workers $(workers | tr '\n' ' ')(worker_processes 2, worker_connections 64, port $PORT)"
sleep 1
snapshot_ps "$WORK/ps-before.txt"
mark "ps-before.txt snapshot"

URL="http://127.0.0.1:$PORT/"
# ----------------------------------------------------------------- 3. load
wait_until 8
mark "ab -k -n 5000 -c 20 start (healthy: 20 connections < 2 x 64)"
run_load ab-k-c20.txt ab -k -n 5000 -c 20 "$URL"
mark "ab -k -n 5000 -c 20 end"

wait_until 12
mark "ab -k -n 20000 -c 200 start (200 keep-alive connections > 2 x 64 worker_connections)"
run_load ab-k-c200.txt ab -r -s 5 -k -n 20000 -c 200 "$URL"
mark "ab -k -n 20000 -c 200 end"

wait_until 25
mark "ab -n 30000 -c 200 start (no keep-alive: one connection per request, TIME_WAIT piles up)"
run_load ab-c200.txt ab -r -s 5 -n 30000 -c 200 "$URL"
mark "ab -n 30000 -c 200 end"

wait_until 45
crash_worker

wait_until 55
mark "wrk --latency -t2 -c400 -d15s start (400 connections > 2 x 64 worker_connections)"
{ echo "\$ wrk --latency -t2 -c400 -d15s --timeout 2s $URL"; timeout 60 wrk --latency -t2 -c400 -d15s --timeout 2s "$URL" 2>&1 || true; } \
    > "$WORK/wrk-c400.txt" &
LOAD_PID=$!
wait_until 62
crash_worker
wait "$LOAD_PID" || true
LOAD_PID=
mark "wrk --latency -t2 -c400 -d15s end"

# ----------------------------------------------------------- 4. I/O burst
wait_until 80
mark "I/O burst start: dd bs=1M oflag=direct, 512 MB file rewritten for ${IO_SECONDS} s"
io_end=$(( $(date +%s) + IO_SECONDS ))
while [ "$(date +%s)" -lt "$io_end" ]; do
    timeout "$IO_SECONDS" dd if=/dev/zero of="$WORK/io.bin" bs=1M count=512 oflag=direct conv=notrunc 2>/dev/null || true
done
rm -f "$WORK/io.bin"
mark "I/O burst end"

# -------------------------------------------------------- 5. memory climb
wait_until 100
avail_mb=$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo)
if [ "$MEM_MB" -gt $(( avail_mb / 3 )) ]; then MEM_MB=$(( avail_mb / 3 )); fi
mark "memory climb start: python3 allocates $MEM_MB MB in 256 MB steps, holds it 10 s"
python3 - "$MEM_MB" <<'EOF' &
import sys, time
total, step, held = int(sys.argv[1]), 256, []
deadline = time.time() + 40
while sum(len(b) for b in held) < total << 20 and time.time() < deadline:
    held.append(b"\x5a" * (min(step, total - (sum(len(b) for b in held) >> 20)) << 20))  # pages touched
    time.sleep(0.5)
time.sleep(10)
EOF
MEM_PID=$!
wait "$MEM_PID" || true
MEM_PID=
mark "memory climb end (memory released)"

# --------------------------------------------------------- 6. third crash
wait_until 130
crash_worker
wait_until 133
snapshot_ps "$WORK/ps-after.txt"
mark "ps-after.txt snapshot"

# ---------------------------------------------------------------- 7. stop
wait_until 138
kill -QUIT "$NGINX_PID"
wait "$NGINX_PID" || true
mark "nginx stopped (SIGQUIT to master $NGINX_PID)"
NGINX_PID=
wait_until 142
kill -TERM "$SADC_PID" 2>/dev/null || true
wait "$SADC_PID" 2>/dev/null || true
SADC_PID=
mark "sadc stopped"

# ------------------------------------------------------------- 8. copy out
sa_name="sa$(date -d "@${T0%.*}" +%d)"
# -p keeps each file's mtime: load-test reports and ps snapshots carry no
# time of their own, and sarsleuth places them by it
cp -p "$WORK/sa.bin" "$OUT/$sa_name"
cp -p "$WORK/nginx/logs/error.log" "$OUT/error.log"
cp -p "$WORK"/ab-*.txt "$WORK"/wrk-*.txt "$WORK"/ps-*.txt "$WORK/timeline.txt" "$OUT/"
echo "stage.sh: bundle written to $OUT ($(du -sh "$OUT" | cut -f1))"

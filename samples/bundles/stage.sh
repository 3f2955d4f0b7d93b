#!/usr/bin/env bash
# Make real sosreports of two small staged hosts, and a `sos collect`
# bundle holding both:
#
#   web07   a live incident: nginx on loopback behind a TIME_WAIT table
#           capped at net.ipv4.tcp_max_tw_buckets = 4096, a non-keep-alive
#           ab run that fills it, then more clients than worker_connections
#           allow; sadc records it all (1 s, -S XALL); zone Europe/Paris.
#   proxy07 the recorded nginx-proxy-oom day (samples/nginx-proxy-oom: sa06,
#           messages, error.log) laid out as on that host, with the proxy
#           configuration that ate its memory (proxy_buffers 1024 256k) and
#           net.ipv4.tcp_max_tw_buckets = 180000; zone Asia/Shanghai.
#
# Each host lives in its own namespaces (mount, UTS, network, PID): /etc is
# an overlay (its nginx configuration and localtime staged on top), /var/log
# and /var/tmp are empty tmpfs, sysctls are the namespace's own, ps sees
# only the host's processes, /proc/kallsyms reads empty (it would be most of
# the archive).  Then the real `sos report --batch` collects the host with
# the plugins below, in a clean environment.  Nothing of the machine
# running this script is changed.
#
# Usage: stage.sh OUTDIR       (root; about one minute)
# Writes: OUTDIR/sosreport-web07-*.tar.xz, OUTDIR/sosreport-proxy07-*.tar.xz,
#         OUTDIR/sos-collector-incident-*.tar.gz
# Needs: sos (Debian's sosreport), sadc, nginx, ab, unshare, overlayfs.

set -euo pipefail

inner() {
    # runs inside the namespaces, read from standard input so that no path
    # of this machine shows in the host's process list
    set -euo pipefail
    HOST=$STAGE_HOST STAGE=$STAGE_DIR OUT=$STAGE_OUT SAMPLES=$STAGE_SAMPLES
    cd /
    mount --make-rprivate /
    mkdir -p "$STAGE/etc-work"
    mount -t overlay overlay -o "lowerdir=/etc,upperdir=$STAGE/etc,workdir=$STAGE/etc-work" /etc
    mount -t tmpfs tmpfs /var/log
    mount -t tmpfs tmpfs /var/tmp
    : > "$STAGE/empty"
    mount --bind "$STAGE/empty" /proc/kallsyms
    mkdir -p /var/log/sysstat /var/log/nginx
    hostname "$HOST"
    ip link set lo up
    NGINX_PID=
    trap '[ -n "$NGINX_PID" ] && kill -QUIT "$NGINX_PID" 2>/dev/null; wait' EXIT
    case $HOST in
        web07)
            sysctl -qw net.ipv4.tcp_max_tw_buckets=4096
            /usr/lib/sysstat/sadc -S XALL 1 40 "/var/log/sysstat/sa$(date +%d)" &
            SADC=$!
            nginx -g 'daemon off;' & NGINX_PID=$!
            sleep 5
            ab -q -n 30000 -c 20 http://127.0.0.1:8080/ > /dev/null 2>&1 || true
            ab -q -k -n 20000 -c 700 -s 5 http://127.0.0.1:8080/ > /dev/null 2>&1 || true
            wait "$SADC"
            ;;
        proxy07)
            sysctl -qw net.ipv4.tcp_max_tw_buckets=180000
            cp "$SAMPLES/nginx-proxy-oom/sa06" /var/log/sysstat/sa06
            cp "$SAMPLES/nginx-proxy-oom/messages" /var/log/messages
            cp "$SAMPLES/nginx-proxy-oom/error.log" /var/log/nginx/error.log
            # the day the recording was made, not today
            touch -d '2014-05-06 16:00:00 +0800' /var/log/sysstat/sa06 /var/log/messages /var/log/nginx/error.log
            nginx -g 'daemon off;' & NGINX_PID=$!
            sleep 1
            ;;
    esac
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        sos report --batch --quiet --tmp-dir /var/tmp -z xz \
        -o kernel,nginx,logs,sar,process,host,memory,date,processor > /dev/null
    cp /var/tmp/sosreport-*.tar.xz "$OUT/"
}

OUT=${1:?usage: stage.sh OUTDIR}
[ "$(id -u)" = 0 ] || { echo "stage.sh: must run as root (namespaces, sos)" >&2; exit 2; }
for tool in sos /usr/lib/sysstat/sadc nginx ab unshare; do
    command -v "$tool" > /dev/null || { echo "stage.sh: missing $tool" >&2; exit 2; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SAMPLES=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sarsleuth-bundles.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

stage_etc() {   # stage_etc DIR ZONE NGINX_CONF_BODY
    mkdir -p "$1/etc/nginx"
    ln -s "/usr/share/zoneinfo/$2" "$1/etc/localtime"
    echo "$2" > "$1/etc/timezone"
    cat > "$1/etc/nginx/nginx.conf"
}

stage_etc "$WORK/web07" Europe/Paris <<'EOF'
worker_processes 2;
worker_rlimit_nofile 4096;
pid /var/log/nginx/nginx.pid;
error_log /var/log/nginx/error.log info;

events {
    worker_connections 256;
}

http {
    access_log off;
    keepalive_timeout 30;
    server {
        listen 127.0.0.1:8080;
        location / { return 200 "ok\n"; }
    }
}
EOF

stage_etc "$WORK/proxy07" Asia/Shanghai <<'EOF'
worker_processes 4;
worker_rlimit_nofile 65535;
pid /var/log/nginx/nginx.pid;
error_log /var/log/nginx/error.log;

events {
    worker_connections 65535;
}

http {
    access_log off;
    upstream image_backend {
        server 127.0.0.1:9001;
        server 127.0.0.1:9002;
        keepalive 64;
    }
    server {
        listen 127.0.0.1:8081;
        server_name img.example.com;
        location / {
            proxy_pass http://image_backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffer_size 256k;
            proxy_buffers 1024 256k;
            proxy_busy_buffers_size 512k;
        }
    }
}
EOF

for host in web07 proxy07; do
    name=$host
    { declare -f inner; echo inner; } |
        STAGE_HOST=$name STAGE_DIR=$WORK/$name STAGE_OUT=$OUT STAGE_SAMPLES=$SAMPLES \
        unshare --mount --uts --net --pid --fork --mount-proc bash -s
done

# sos collect's layout: one folder holding each node's sosreport archive
stamp=$(date +%Y-%m-%d)
collect="sos-collector-incident-$stamp-$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mkdir -p "$WORK/$collect"
cp "$OUT"/sosreport-web07-*.tar.xz "$OUT"/sosreport-proxy07-*.tar.xz "$WORK/$collect/"
tar -C "$WORK" -czf "$OUT/$collect.tar.gz" "$collect"
ls -l "$OUT"

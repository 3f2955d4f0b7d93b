#!/bin/sh
# Record one small sa file per sysstat release with that release's own sadc,
# and keep that release's own sadf rendering of it as the reference.
#
#   [WORD=32] record.sh OUTDIR SYSSTAT_GIT_DIR VERSION...
#
# SYSSTAT_GIT_DIR is a clone of https://github.com/sysstat/sysstat (its
# history starts at 9.1.5).  Each VERSION (e.g. 10.1.5) is exported from its
# tag, built with the local gcc in a temporary directory (compiler flags only,
# no source edits), and used to write OUTDIR/VERSION/:
#   sa.gz          sadc -S XALL, 1 s interval, then a comment, a restart
#                  (LINUX RESTART) and a few more records, gzip-compressed
#   sadf-d.csv.gz  that version's `sadf -d -- -A` of the file (UTC times)
#   sar-A.txt.gz   that version's `sar -A` of the file
#   partitions.txt the machine's /proc/partitions (names of devM-N)
#   recorded.txt   version, command lines, machine, date
# Nothing is written outside OUTDIR but the temporary build directory, which
# is removed at the end.  sadc is never left running.
set -eu

[ $# -ge 3 ] || { echo "usage: $0 OUTDIR SYSSTAT_GIT_DIR VERSION..." >&2; exit 2; }
out=$1; repo=$2; shift 2
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT INT TERM

RECORDS=${RECORDS:-30}
# glibc >= 2.28 no longer pulls major()/minor() in through sys/types.h, and
# gcc >= 10 defaults to -fno-common: both only need flags on old releases.
FLAGS="-O2 -fcommon -w -include sys/sysmacros.h"
# WORD=32 builds a 32-bit sadc (gcc-multilib): C longs of 4 bytes, as on
# i386 hosts; its files go to OUTDIR/VERSION-m32.
WORD=${WORD:-64}
suffix=""
if [ "$WORD" = 32 ]; then FLAGS="$FLAGS -m32"; suffix="-m32"; fi

# Load for the recording: disk writes, loopback TCP traffic and CPU, so that
# the rates sar prints are not all zero.
cat > "$build/load.py" <<'EOF'
import os, socket, sys, threading, time
end = time.time() + float(sys.argv[1])
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
def sink():
    conn, _ = srv.accept()
    while conn.recv(65536):
        pass
threading.Thread(target=sink, daemon=True).start()
cli = socket.create_connection(srv.getsockname())
chunk = os.urandom(1 << 20)
with open(sys.argv[2], "wb") as disk:
    while time.time() < end:
        cli.sendall(chunk)
        disk.write(chunk); disk.flush(); os.fsync(disk.fileno())
        disk.seek(0)
        sum(range(200000))
cli.close()
os.unlink(sys.argv[2])
EOF

for version in "$@"; do
    src="$build/sysstat-$version"
    mkdir -p "$src"
    git -C "$repo" archive "v$version" | tar -x -C "$src"
    (cd "$src" && ./configure --disable-nls --disable-sensors CFLAGS="$FLAGS" LDFLAGS="$FLAGS" \
        >configure.log 2>&1 && make sadc sar sadf >make.log 2>&1) \
        || { echo "sysstat $version: build failed" >&2; continue; }
    dest="$out/$version$suffix"
    mkdir -p "$dest"
    sa="$build/sa-$version"
    rm -f "$sa"
    python3 "$build/load.py" $((RECORDS + 8)) "$build/load.bin" >/dev/null 2>&1 &
    pid=$!
    "$src/sadc" -S XALL 1 "$RECORDS" "$sa"
    "$src/sadc" -C "sysstat $version comment" "$sa"
    "$src/sadc" "$sa"                     # no interval: a LINUX RESTART record
    "$src/sadc" -S XALL 1 5 "$sa"
    wait "$pid" || true
    TZ=UTC "$src/sadf" -d "$sa" -- -A | gzip -9n > "$dest/sadf-d.csv.gz"
    LC_ALL=C TZ=UTC "$src/sar" -A -f "$sa" | gzip -9n > "$dest/sar-A.txt.gz"
    gzip -9n < "$sa" > "$dest/sa.gz"
    # sadf 12 names disks from the rendering machine's devices
    cp /proc/partitions "$dest/partitions.txt"
    {
        echo "sysstat $version (git tag v$version), built with: $(gcc --version | head -n 1)"
        echo "configure --disable-nls --disable-sensors CFLAGS=\"$FLAGS\" LDFLAGS=\"$FLAGS\"; make sadc sar sadf"
        echo "sadc -S XALL 1 $RECORDS FILE; sadc -C 'sysstat $version comment' FILE; sadc FILE; sadc -S XALL 1 5 FILE"
        echo "TZ=UTC sadf -d FILE -- -A | gzip > sadf-d.csv.gz; LC_ALL=C TZ=UTC sar -A -f FILE | gzip > sar-A.txt.gz"
        echo "machine: $(uname -srm), $(nproc) CPUs; recorded $(date -u '+%Y-%m-%d %H:%M UTC')"
    } > "$dest/recorded.txt"
    echo "sysstat $version: $(wc -c < "$dest/sa.gz") bytes gzipped in $dest"
done

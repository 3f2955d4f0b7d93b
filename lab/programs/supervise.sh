#!/bin/sh
# Keeps a service running the way runit or supervisord do: restart it a
# second after it exits, and say so in syslog.
#   supervise.sh NAME COMMAND...
name=$1; shift
while :; do
    "$@"
    rc=$?
    if [ "$rc" -gt 128 ]; then
        logger -t "supervise[$$]" "$name exited on signal $((rc - 128)), restarting in 1 s"
    else
        logger -t "supervise[$$]" "$name exited with status $rc, restarting in 1 s"
    fi
    sleep 1
done

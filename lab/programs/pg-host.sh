#!/bin/sh
# PostgreSQL as a Debian host runs it for its application: a cluster
# created once, `max_connections` as given, its log in syslog (ident
# postgres), its socket in /run/postgresql.
#   pg-host.sh MAX_CONNECTIONS
set -e
max=${1:-100}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
data=/srv/pgdata
mkdir -p "$data" /run/postgresql
chown postgres:postgres "$data" /run/postgresql
runuser -u postgres -- "$bin/initdb" -D "$data" -A trust --no-sync > /dev/null
cat >> "$data/postgresql.conf" <<CONF
max_connections = $max
superuser_reserved_connections = 3
listen_addresses = ''
unix_socket_directories = '/run/postgresql'
shared_buffers = 64MB
log_destination = 'syslog'
syslog_ident = 'postgres'
log_line_prefix = '[%p] '
CONF
exec runuser -u postgres -- "$bin/postgres" -D "$data"

#!/usr/bin/env bash
# Runs an OpenStack Swift all-in-one on 127.0.0.1 for the virtual media
# publishing tests: one proxy (tempauth + tempurl), one account, container and
# object server on one directory-backed device, and the memcached that
# tempauth keeps its tokens in. Everything lives under SWIFT_AIO_DIR (its
# own swift.conf, rings, configs, data and logs); nothing in /etc/swift is
# used. Idempotent: installs missing packages, writes the configuration
# once, starts the servers that are not answering, and prints the auth URL.
#
#   SWIFT_AIO_DIR   state directory (default /var/lib/ferric-swift-aio)
#   SWIFT_AIO_PORT  proxy port (default 28080); the storage servers use the
#                   ports just below it (-1 account, -2 container,
#                   -3 object) and memcached -4.
#
# Accounts: user "test:tester", key "testing" (an .admin of AUTH_test), and
# "admin:admin", key "admin" (AUTH_admin, reseller admin).
set -euo pipefail

DIR=${SWIFT_AIO_DIR:-/var/lib/ferric-swift-aio}
PROXY_PORT=${SWIFT_AIO_PORT:-28080}
ACCOUNT_PORT=$((PROXY_PORT - 1))
CONTAINER_PORT=$((PROXY_PORT - 2))
OBJECT_PORT=$((PROXY_PORT - 3))
MEMCACHED_PORT=$((PROXY_PORT - 4))
PACKAGES=(swift swift-proxy swift-account swift-container swift-object memcached)

LOG_TAG=swift-aio
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# server_conf NAME PORT EXTRA: the [DEFAULT] and pipeline of a storage server.
server_conf() {
	cat <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $2
workers = 1
user = swift
swift_dir = $DIR/etc
devices = $DIR/srv
mount_check = false
log_name = $1-server

[pipeline:main]
pipeline = $1-server

[app:$1-server]
use = egg:swift#$1
$3
EOF
}

configure() {
	[[ -f $DIR/etc/configured ]] && return 0
	log "configuring under $DIR"
	install -d -m 0755 "$DIR" "$DIR/etc" "$DIR/log" "$DIR/run"
	install -d -o swift -g swift -m 0750 "$DIR/srv/d1" "$DIR/cache"
	local suffix
	suffix=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	cat >"$DIR/etc/swift.conf" <<EOF
[swift-hash]
swift_hash_path_suffix = $suffix
swift_hash_path_prefix = ferric

[storage-policy:0]
name = Policy-0
default = yes
EOF
	server_conf account "$ACCOUNT_PORT" "" >"$DIR/etc/account-server.conf"
	server_conf container "$CONTAINER_PORT" "allow_versions = true" >"$DIR/etc/container-server.conf"
	server_conf object "$OBJECT_PORT" "" >"$DIR/etc/object-server.conf"
	cat >"$DIR/etc/proxy-server.conf" <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $PROXY_PORT
workers = 1
user = swift
swift_dir = $DIR/etc
log_name = proxy-server

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache tempurl tempauth proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:tempauth]
use = egg:swift#tempauth
user_admin_admin = admin .admin .reseller_admin
user_test_tester = testing .admin

[filter:tempurl]
use = egg:swift#tempurl

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$MEMCACHED_PORT

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:proxy-logging]
use = egg:swift#proxy_logging
EOF
	local ring port
	for ring in account:$ACCOUNT_PORT container:$CONTAINER_PORT object:$OBJECT_PORT; do
		port=${ring#*:}
		ring=${ring%%:*}
		rm -f "$DIR/etc/$ring.builder" "$DIR/etc/$ring.ring.gz"
		# 2^10 partitions, one replica, no minimum hours between moves.
		swift-ring-builder "$DIR/etc/$ring.builder" create 10 1 0 >/dev/null
		swift-ring-builder "$DIR/etc/$ring.builder" add "r1z1-127.0.0.1:$port/d1" 1 >/dev/null
		swift-ring-builder "$DIR/etc/$ring.builder" rebalance >/dev/null ||
			[[ -f $DIR/etc/$ring.ring.gz ]] || die "swift-ring-builder rebalance $ring failed"
	done
	touch "$DIR/etc/configured"
}

# start NAME PORT COMMAND...: runs the command detached unless the port answers.
start() {
	local name=$1 port=$2
	shift 2
	port_open "$port" && return 0
	log "starting $name on 127.0.0.1:$port"
	setsid "$@" >>"$DIR/log/$name.log" 2>&1 </dev/null &
	echo $! >"$DIR/run/$name.pid"
	wait_port "$port" 60 "$name" "log: $DIR/log/$name.log"
}

install_packages
configure
start memcached "$MEMCACHED_PORT" memcached -u memcache -l 127.0.0.1 -p "$MEMCACHED_PORT" -U 0 -m 32
start account "$ACCOUNT_PORT" swift-account-server "$DIR/etc/account-server.conf" -v
start container "$CONTAINER_PORT" swift-container-server "$DIR/etc/container-server.conf" -v
start object "$OBJECT_PORT" swift-object-server "$DIR/etc/object-server.conf" -v
start proxy "$PROXY_PORT" swift-proxy-server "$DIR/etc/proxy-server.conf" -v
echo "http://127.0.0.1:$PROXY_PORT/auth/v1.0"

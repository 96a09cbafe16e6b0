#!/usr/bin/env bash
# Idle keep-alive connections: resident memory per idle client connection,
# Levee side by side with nginx (and, with BEFORE=<git rev>, the Levee of
# that revision), and how much of it is given back once the clients leave.
#
#   CONNS=10000 bench/proxy/idle.sh
#   BEFORE=main CONNS=10000 bench/proxy/idle.sh
#
# Each proxy serves one route to the bench backend; the idle tool
# (bench/proxy/idle) opens CONNS connections, sends one request on each,
# leaves them idle, and reads VmRSS. Needs nginx (installed with apt when
# missing, unless NO_INSTALL is set) and an open-files limit above
# 2 x CONNS (raised here when allowed).
set -euo pipefail
CONNS=${CONNS:-10000}
# RELEASE: how long the RSS is watched after the clients leave (the Go
# runtime returns memory after a collection, forced every 2 min when idle).
RELEASE=${RELEASE:-150s}
# HOLD: how long the clients stay idle before the idle RSS is read (0: as
# soon as it is steady; 150s: after the runtime's periodic collection,
# the steady state of long-lived connections).
HOLD=${HOLD:-0s}
# IDLE_TIMEOUT: the proxies' idle keep-alive limit, above HOLD.
IDLE_TIMEOUT=${IDLE_TIMEOUT:-120s}
export NGINX_KEEPALIVE_TIMEOUT=$IDLE_TIMEOUT
BASE_PORT=${BASE_PORT:-18780}
BEFORE=${BEFORE:-}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TMP=$(mktemp -d /tmp/levee-idle.XXXXXX)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cleanup() { stop_started; rm -rf "$TMP"; }
trap cleanup EXIT
log() { echo "[idle] $*" >&2; }

ulimit -n $((CONNS * 2 + 1024)) 2>/dev/null || log "could not raise the open-files limit ($(ulimit -n))"
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
	[ -z "${NO_INSTALL:-}" ] || { log "nginx missing (NO_INSTALL is set)"; exit 1; }
	SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nginx-light >/dev/null ||
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nginx >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

log "building"
build_levee
build_tools backend idle
if [ -n "$BEFORE" ]; then
	git -C "$ROOT" worktree add -q --detach "$TMP/before" "$BEFORE"
	build_levee "$TMP/before" "$TMP/levee-before"
	git -C "$ROOT" worktree remove --force "$TMP/before"
fi

# wait_http URL [Host]: poll until URL answers 2xx (Host bench.local by default).
wait_http() {
	for _ in $(seq 100); do
		curl -fsS -o /dev/null -H "Host: ${2:-bench.local}" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	log "timed out waiting for $1"; return 1
}

"$TMP/backend" -listen "127.0.0.1:$BASE_PORT" >"$TMP/backend.log" 2>&1 &
PIDS+=("$!")
wait_http "http://127.0.0.1:$BASE_PORT/"

# start_levee BIN PORT API: one Levee with the route bench.local; prints its PID.
start_levee() {
	local bin=$1 port=$2 api=$3
	GODEBUG=${LEVEE_GODEBUG:-} GOMAXPROCS=1 "$bin" serve --docker=false --listen "web=127.0.0.1:$port,idle-timeout=$IDLE_TIMEOUT" --api-listen "127.0.0.1:$api" \
		--state-file "$TMP/state-$port.json" --access-log=false --log-level warn \
		--max-client-conns $((CONNS + 100)) >"$TMP/levee-$port.log" 2>&1 &
	local pid=$!
	PIDS+=("$pid")
	wait_http "http://127.0.0.1:$api/health" "127.0.0.1:$api" # the API answers only to its own names
	curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$api/entrypoints" \
		-d '{"name":"bench","backends":[{"address":"127.0.0.1","port":'"$BASE_PORT"'}],"config":{"hostnames":["bench.local"]}}'
	wait_http "http://127.0.0.1:$port/"
	echo "$pid"
}

printf 'target\tconns\tbase_kib\tidle_kib\tper_conn_kib\tclosed_kib\treturned_pct\n'
pid=$(start_levee "$TMP/levee" $((BASE_PORT + 1)) $((BASE_PORT + 2)))
"$TMP/idle" -name levee -addr "127.0.0.1:$((BASE_PORT + 1))" -conns "$CONNS" -hold "$HOLD" -release "$RELEASE" -pids "$pid" -metrics "http://127.0.0.1:$((BASE_PORT + 2))/metrics"
kill "$pid"
if [ -n "$BEFORE" ]; then
	pid=$(start_levee "$TMP/levee-before" $((BASE_PORT + 3)) $((BASE_PORT + 4)))
	"$TMP/idle" -name "levee@$BEFORE" -addr "127.0.0.1:$((BASE_PORT + 3))" -conns "$CONNS" -hold "$HOLD" -release "$RELEASE" -pids "$pid" -metrics "http://127.0.0.1:$((BASE_PORT + 4))/metrics"
	kill "$pid"
fi
write_nginx_conf "$TMP/nginx" "127.0.0.1:$((BASE_PORT + 5))" "127.0.0.1:$BASE_PORT" $((CONNS + 100))
"$NGINX" -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" >"$TMP/nginx/stdout.log" 2>&1 &
pid=$!
PIDS+=("$pid")
wait_http "http://127.0.0.1:$((BASE_PORT + 5))/"
"$TMP/idle" -name nginx -addr "127.0.0.1:$((BASE_PORT + 5))" -conns "$CONNS" -hold "$HOLD" -release "$RELEASE" -pids "$pid"

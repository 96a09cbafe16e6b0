#!/usr/bin/env bash
# User-space instructions per proxied request, counted by valgrind's
# callgrind: repeatable whatever else the machine is doing, unlike req/s or
# CPU time. Runs the in-process harness (bench/proxy/harness) under
# callgrind with each server (edge = Levee's own, stdlib = net/http's),
# sends N1 then N2 requests (bench/proxy/fixedload) in two separate runs,
# and prints (instructions(N2) - instructions(N1)) / (N2 - N1), which
# cancels start-up and shutdown. Kernel work (syscalls) is not counted:
# see profile.sh and run.sh for that.
#
# SERVERS may also name nginx (single process, the same configuration as
# run.sh's), for a user-space comparison with the reference.
#
# Environment: N1=2000 N2=6000 CONNS=8 BASE_PORT=18380 SERVERS="edge stdlib nginx"
# BREAKER=false OUT_DIR=/tmp/levee-instructions
set -euo pipefail
N1=${N1:-2000}
N2=${N2:-6000}
CONNS=${CONNS:-8}
BASE_PORT=${BASE_PORT:-18380}
SERVERS=${SERVERS:-edge stdlib nginx}
BREAKER=${BREAKER:-false}
OUT_DIR=${OUT_DIR:-/tmp/levee-instructions}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 1; }
mkdir -p "$OUT_DIR"
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap stop_started EXIT
(cd "$ROOT/bench" && go build -o "$OUT_DIR/backend" ./proxy/backend && go build -o "$OUT_DIR/harness" ./proxy/harness &&
	go build -o "$OUT_DIR/fixedload" ./proxy/fixedload)

BACKEND=127.0.0.1:$BASE_PORT
PROXY=127.0.0.1:$((BASE_PORT + 1))
"$OUT_DIR/backend" -listen "$BACKEND" &
PIDS+=($!)

# count SERVER N: the instructions callgrind counted in the harness for a
# run that served N requests (plus start-up and shutdown).
count() {
	local server=$1 n=$2 out="$OUT_DIR/callgrind.$1.$2"
	rm -f "$out"
	# The harness exits after the n-th request (plus the readiness probes
	# below, which both runs send alike); callgrind writes its counts at
	# exit. No signal: callgrind does not survive Go's signal handling.
	# No CPU profile and no asynchronous preemption: callgrind does not
	# survive Go's SIGPROF/SIGURG signals.
	GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file="$out" \
		"$OUT_DIR/harness" -server "$server" -breaker="$BREAKER" -listen "$PROXY" -backend "$BACKEND" \
		-warmup 0s -duration 10m -requests "$((n + 1))" -cpuprofile "" -memprofile "" >"$OUT_DIR/harness.$server.$n.log" 2>&1 &
	local pid=$!
	PIDS+=("$pid")
	load "$pid" "$n" || return 1
	wait "$pid" || return 1
	awk '/^summary:|^totals:/ {print $2; exit}' "$out"
}

# load PID N: waits for the proxy to answer (one probe request, which
# reaches the proxy in every run alike), then sends N requests; on failure
# stops PID.
load() {
	local pid=$1 n=$2 i
	for i in $(seq 300); do
		curl -fsS -o /dev/null -H 'Host: bench.local' "http://$PROXY/" 2>/dev/null && break
		sleep 0.2
	done
	"$OUT_DIR/fixedload" -addr "$PROXY" -n "$n" -c "$CONNS" && return 0
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 1
}

# count_nginx N: the same for nginx, stopped by SIGQUIT once the load is
# served (nginx exits cleanly and callgrind writes its counts).
count_nginx() {
	local n=$2 out="$OUT_DIR/callgrind.nginx.$2" dir="$OUT_DIR/nginx"
	local nginx
	nginx=$(command -v nginx || echo /usr/sbin/nginx)
	write_nginx_conf "$dir" "$PROXY" "$BACKEND"
	rm -f "$out"
	valgrind --tool=callgrind --callgrind-out-file="$out" \
		"$nginx" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" >"$OUT_DIR/nginx.$n.log" 2>&1 &
	local pid=$!
	PIDS+=("$pid")
	load "$pid" "$n" || return 1
	kill -QUIT "$pid"
	wait "$pid" || true
	awk '/^summary:|^totals:/ {print $2; exit}' "$out"
}

# counted SERVER N: count, retried: valgrind 3.19 sometimes stops the Go
# runtime on an instruction it does not know (RDTSCP).
counted() {
	local try v
	for try in 1 2 3; do
		local fn=count
		[ "$1" = nginx ] && fn=count_nginx
		if v=$($fn "$1" "$2") && [ -n "$v" ]; then
			echo "$v"
			return 0
		fi
		echo "instructions.sh: the $1 run of $2 requests failed (try $try; see $OUT_DIR/harness.$1.$2.log)" >&2
	done
	return 1
}

printf '%-8s %14s %14s %22s\n' server "instr(N1=$N1)" "instr(N2=$N2)" "instructions/request"
for s in $SERVERS; do
	a=$(counted "$s" "$N1")
	b=$(counted "$s" "$N2")
	printf '%-8s %14s %14s %22.0f\n' "$s" "$a" "$b" "$(awk -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" 'BEGIN {print (b - a) / (n2 - n1)}')"
done

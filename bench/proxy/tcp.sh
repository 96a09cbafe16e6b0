#!/usr/bin/env bash
# TCP relay comparison: the backend directly, Levee's TCP route (spliced
# once the backend has sent its first byte), HAProxy `mode tcp`, with and
# without `option splice-request` + `splice-response`, and nginx `stream`
# (proxy_pass, when its stream module is installed), all on 127.0.0.1.
# Three tests: bulk (CONNS_BULK connections each downloading SIZE bytes,
# again and again: MB/s and the proxy's CPU seconds per GB), ping-pong
# (CONNS_PP connections each echoing a MSG-byte message in a closed loop:
# messages/s, p50, p99 and the proxy's CPU µs per message) and connect
# (CONNS_CONNECT workers each opening a new connection, sending a MSG-byte
# message, reading its echo and closing, again and again: new connections
# per second, p50 and p99 of connect-to-echo, the proxy's CPU µs per
# connection). Backend and load are bench/proxy/tcpload. See
# bench/README.md and docs/performance.md.
#
# Pinning: every proxy AND the backend run on CPU $PROXY_CPU (default 0), the
# load on CPU $LOAD_CPU (default 1), as in run.sh. Each proxy uses one core
# (Levee GOMAXPROCS=1, HAProxy nbthread 1, nginx one worker without
# master); so do the backend and the load.
#
# Environment (all optional):
#   DURATION=5s ROUNDS=3   each run's length; rounds (the order rotates every
#                          round and reverses on even rounds)
#   CONNS_BULK=4 SIZE=67108864   bulk connections, bytes per download
#   CONNS_PP=32 MSG=64     ping-pong connections, message size
#   CONNS_CONNECT=32       connect workers (each one connection at a time)
#   TESTS="bulk pingpong"  which tests (bulk, pingpong, connect)
#   TARGETS="direct levee haproxy haproxy-nosplice nginx"   which targets
#                          (haproxy, the reference of the ratios, is always
#                          measured; nginx only when installed with its
#                          stream module)
#   BASELINE=REV           adds the target levee-baseline: Levee built from
#                          git revision REV (git archive), side by side
#                          with the working tree's, e.g. BASELINE=main
#   PROXY_CPU=0 LOAD_CPU=1
#   BASE_PORT=18680        ports BASE_PORT..BASE_PORT+9
#   NO_INSTALL=1           do not apt-get install HAProxy if missing
#   OUT=file               also write the markdown tables to this file
set -euo pipefail

DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-3}
CONNS_BULK=${CONNS_BULK:-4}
SIZE=${SIZE:-67108864}
CONNS_PP=${CONNS_PP:-32}
CONNS_CONNECT=${CONNS_CONNECT:-32}
MSG=${MSG:-64}
TESTS=${TESTS:-bulk pingpong}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BASE_PORT=${BASE_PORT:-18680}
OUT=${OUT:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_start tcpbench

# --- tools ----------------------------------------------------------------
need=()
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
command -v taskset >/dev/null || need+=(util-linux)
install_missing "${need[@]}"
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# nginx's stream module: built in, or Debian's libnginx-mod-stream (loaded
# with load_module); without either there is no nginx target.
NGINX_STREAM=""
if [ -x "$NGINX" ]; then
	if "$NGINX" -V 2>&1 | grep -q -- '--with-stream\( \|$\)'; then
		NGINX_STREAM=builtin
	else
		for m in /usr/lib/nginx/modules/ngx_stream_module.so /usr/share/nginx/modules/ngx_stream_module.so; do
			[ -f "$m" ] && { NGINX_STREAM=$m; break; }
		done
	fi
fi

ALL_TARGETS=(direct levee levee-baseline haproxy haproxy-nosplice nginx)
BASELINE=${BASELINE:-}
DEFAULT_TARGETS="direct levee haproxy haproxy-nosplice nginx"
[ -z "$BASELINE" ] || DEFAULT_TARGETS="direct levee levee-baseline haproxy haproxy-nosplice nginx"
read -r -a WANTED <<<"${TARGETS:-$DEFAULT_TARGETS}"
TARGETS=()
for t in "${ALL_TARGETS[@]}"; do
	for w in "${WANTED[@]}" haproxy; do
		[ "$t" = "$w" ] || continue
		if [ "$t" = nginx ] && [ -z "$NGINX_STREAM" ]; then
			log "nginx with its stream module is not installed (apt-get install nginx-light libnginx-mod-stream): no nginx target"
		elif [ "$t" = levee-baseline ] && [ -z "$BASELINE" ]; then
			log "TARGETS: levee-baseline needs BASELINE=REV"; exit 2
		else
			TARGETS+=("$t")
		fi
		break
	done
done
for w in "${WANTED[@]}"; do
	case " ${ALL_TARGETS[*]} " in *" $w "*) ;; *) log "TARGETS: unknown target $w (known: ${ALL_TARGETS[*]})"; exit 2 ;; esac
done
for test in $TESTS; do
	case $test in bulk | pingpong | connect) ;; *) log "TESTS: unknown test $test (known: bulk pingpong connect)"; exit 2 ;; esac
done
selected() { case " ${TARGETS[*]} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# --- build ----------------------------------------------------------------
log "building levee and tcpload"
build_levee
build_tools tcpload
if selected levee-baseline; then
	log "building levee at $BASELINE ($(git -C "$ROOT" rev-parse --short "$BASELINE"))"
	mkdir -p "$TMP/baseline-src"
	git -C "$ROOT" archive "$BASELINE" | tar -x -C "$TMP/baseline-src"
	build_levee "$TMP/baseline-src" "$TMP/levee-baseline"
fi

BACKEND_PORT=$BASE_PORT
LEVEE_PORT=$((BASE_PORT + 1))
# BASE_PORT + 2, + 3: that Levee's HTTP listener and API (start_levee)
HAPROXY_PORT=$((BASE_PORT + 4))
HAPROXY_NOSPLICE_PORT=$((BASE_PORT + 5))
NGINX_PORT=$((BASE_PORT + 6))
LEVEE_BASELINE_PORT=$((BASE_PORT + 7)) # and +8, +9
# wait_echo PORT: poll until a ping-pong through 127.0.0.1:PORT works.
wait_echo() {
	for _ in $(seq 100); do
		if "$TMP/tcpload" -target "127.0.0.1:$1" -mode pingpong -conns 1 -duration 50ms >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	log "timed out waiting for an echo through 127.0.0.1:$1"
	return 1
}

# taskset execs the command, so $! is the pinned process itself.

# --- backend --------------------------------------------------------------
GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/tcpload" -serve "127.0.0.1:$BACKEND_PORT" >"$TMP/backend.log" 2>&1 &
BACKEND_PID=$!
PIDS+=("$BACKEND_PID")
wait_echo "$BACKEND_PORT"

# --- Levee: one TCP listener, one API route on it ---------------------------
# start_levee NAME BINARY PORT: a Levee with the TCP listener on PORT, its
# HTTP listener and API on PORT+1 and PORT+2; sets LEVEE_PIDS[NAME].
declare -A LEVEE_PIDS
start_levee() {
	local name=$1 bin=$2 port=$3
	GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$bin" serve --docker=false \
		--http-listen "127.0.0.1:$((port + 1))" --api-listen "127.0.0.1:$((port + 2))" \
		--listen "bench=127.0.0.1:$port,tcp" \
		--state-file "$TMP/$name-state.json" --access-log=false --log-level warn \
		>"$TMP/$name.log" 2>&1 &
	LEVEE_PIDS[$name]=$!
	PIDS+=("$!")
	wait_tcp "$((port + 2))"
	for _ in $(seq 100); do
		curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$((port + 2))/entrypoints" \
			-d '{"name":"bench","protocol":"Tcp","backends":[{"address":"127.0.0.1","port":'"$BACKEND_PORT"'}],"config":{"tcp":{"listener":"bench"}}}' && break
		sleep 0.1
	done
	wait_echo "$port"
}
start_levee levee "$TMP/levee" "$LEVEE_PORT"
selected levee-baseline && start_levee levee-baseline "$TMP/levee-baseline" "$LEVEE_BASELINE_PORT"

# --- HAProxy ---------------------------------------------------------------
# mode tcp, one thread. HAProxy splices only when told to (2.6 manual,
# section 4, `option splice-*`): `option splice-request` and `option
# splice-response` splice both directions whenever it can; `option
# splice-auto` (its heuristic) made no splice(2) call at all on this
# download under strace -c, so it is not used. The haproxy-nosplice target
# is the same proxy without the options (recv/send through its buffers).
start_haproxy() {
	local name=$1 port=$2 opt=$3
	cat >"$TMP/$name.cfg" <<CFG
global
    nbthread 1
    maxconn 4096
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
$opt
frontend fe
    bind 127.0.0.1:$port
    default_backend be
backend be
    server s1 127.0.0.1:$BACKEND_PORT
CFG
	taskset -c "$PROXY_CPU" "$HAPROXY" -db -f "$TMP/$name.cfg" >"$TMP/$name.log" 2>&1 &
	PIDS+=("$!")
	HAPROXY_PIDS[$name]=$!
	wait_echo "$port"
}
declare -A HAPROXY_PIDS
start_haproxy haproxy "$HAPROXY_PORT" "    option splice-request
    option splice-response"
selected haproxy-nosplice && start_haproxy haproxy-nosplice "$HAPROXY_NOSPLICE_PORT" ""

# --- nginx stream ------------------------------------------------------------
# One process (no master, one worker), proxy_pass to the backend; nginx's
# stream proxy copies through its buffers (it has no splice).
if selected nginx; then
	mkdir -p "$TMP/nginx"
	{
		[ "$NGINX_STREAM" = builtin ] || echo "load_module $NGINX_STREAM;"
		cat <<CFG
daemon off;
master_process off;
worker_processes 1;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 4096; }
worker_rlimit_nofile 8256;
stream {
    server {
        listen 127.0.0.1:$NGINX_PORT;
        proxy_pass 127.0.0.1:$BACKEND_PORT;
    }
}
CFG
	} >"$TMP/nginx/nginx.conf"
	taskset -c "$PROXY_CPU" "$NGINX" -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" >"$TMP/nginx/stdout.log" 2>&1 &
	NGINX_PID=$!
	PIDS+=("$NGINX_PID")
	wait_echo "$NGINX_PORT"
fi

declare -A PORT PID
PORT[direct]=$BACKEND_PORT; PID[direct]=$BACKEND_PID
PORT[levee]=$LEVEE_PORT; PID[levee]=${LEVEE_PIDS[levee]}
PORT[levee-baseline]=$LEVEE_BASELINE_PORT; PID[levee-baseline]=${LEVEE_PIDS[levee-baseline]:-}
PORT[haproxy]=$HAPROXY_PORT; PID[haproxy]=${HAPROXY_PIDS[haproxy]}
PORT[haproxy-nosplice]=$HAPROXY_NOSPLICE_PORT; PID[haproxy-nosplice]=${HAPROXY_PIDS[haproxy-nosplice]:-}
PORT[nginx]=$NGINX_PORT; PID[nginx]=${NGINX_PID:-}

# run_load TEST TARGET DURATION: one tcpload run; prints its line.
run_load() {
	local test=$1 t=$2 d=$3 conns=$CONNS_PP
	[ "$test" != bulk ] || conns=$CONNS_BULK
	[ "$test" != connect ] || conns=$CONNS_CONNECT
	GOMAXPROCS=1 taskset -c "$LOAD_CPU" "$TMP/tcpload" -target "127.0.0.1:${PORT[$t]}" -mode "$test" \
		-conns "$conns" -size "$SIZE" -msg "$MSG" -duration "$d" \
		-pid "${PID[$t]}" -backend-pid "$BACKEND_PID" >"$TMP/load.out" 2>"$TMP/load.err" &
	LOAD_PID=$!
	if ! wait "$LOAD_PID"; then
		LOAD_PID=""
		log "tcpload $test failed against $t:"; cat "$TMP/load.err" >&2; exit 1
	fi
	LOAD_PID=""
	cat "$TMP/load.out"
}

RESULTS="$TMP/results.tsv" # test target round fields...
: >"$RESULTS"
n=${#TARGETS[@]}
for test in $TESTS; do
	log "$test: warm-up, 1 s per target"
	for t in "${TARGETS[@]}"; do run_load "$test" "$t" 1s >/dev/null; done
	for round in $(seq "$ROUNDS"); do
		for i in $(seq 0 $((n - 1))); do
			j=$(((i + round - 1) % n))
			[ $((round % 2)) -eq 1 ] || j=$((n - 1 - j))
			t=${TARGETS[$j]}
			line=$(run_load "$test" "$t" "$DURATION")
			printf '%s\t%s\t%s\t%s\n' "$test" "$t" "$round" "$line" >>"$RESULTS"
			log "round $round $test $t: $line"
		done
	done
done

# --- report ---------------------------------------------------------------
# stat TEST TARGET FIELD: the median of FIELD over the rounds; ratio TEST
# TARGET FIELD: TARGET's over haproxy's within each round, the median and
# the rounds' ratios (lib.sh).
stat() { results_median "$RESULTS" "$@"; }
ratio() { results_ratio "$RESULTS" "$1" "$2" haproxy "$3"; }
# latency_table TEST UNITS UNIT: the table of a test whose fields are
# rate, p50, p99, proxy CPU and backend CPU per UNIT (pingpong, connect).
latency_table() {
	local test=$1 units=$2 unit=$3 t
	echo "| target | $units/s (median) | p50 | p99 | proxy CPU per $unit | backend CPU per $unit | $units/s vs haproxy | p99 vs haproxy | proxy CPU per $unit vs haproxy |"
	echo "|---|---:|---:|---:|---:|---:|---|---|---|"
	for t in "${TARGETS[@]}"; do
		if [ "$t" = direct ]; then
			printf '| direct (no proxy) | %.0f | %.0f µs | %.0f µs | - | %.2f µs | %s | %s | - |\n' "$(stat "$test" "$t" 1)" "$(stat "$test" "$t" 2)" "$(stat "$test" "$t" 3)" "$(stat "$test" "$t" 5)" "$(ratio "$test" "$t" 1)" "$(ratio "$test" "$t" 3)"
		else
			printf '| %s | %.0f | %.0f µs | %.0f µs | %.2f µs | %.2f µs | %s | %s | %s |\n' "$t" "$(stat "$test" "$t" 1)" "$(stat "$test" "$t" 2)" "$(stat "$test" "$t" 3)" "$(stat "$test" "$t" 4)" "$(stat "$test" "$t" 5)" "$(ratio "$test" "$t" 1)" "$(ratio "$test" "$t" 3)" "$(ratio "$test" "$t" 4)"
		fi
	done
}
{
	nginx_v=""
	! selected nginx || nginx_v="; nginx $("$NGINX" -v 2>&1 | sed 's|.*nginx/||')"
	echo "tcpload, $ROUNDS rounds of $DURATION per target and test; proxies and backend on CPU $PROXY_CPU, load on CPU $LOAD_CPU; HAProxy $("$HAPROXY" -v | awk 'NR == 1 {print $3}')$nginx_v"
	for test in $TESTS; do
		echo
		case $test in
		connect)
			echo "Connect: $CONNS_CONNECT workers, each opening a new connection, sending a $MSG-byte message, reading its echo and closing, again and again. p50/p99: connect to echo read. Ratios to haproxy within each round, then the median (rounds in parentheses)."
			echo
			latency_table connect connections connection ;;
		bulk)
			echo "Bulk: $CONNS_BULK connections, each downloading $((SIZE >> 20)) MiB from the backend, again and again. Ratios to haproxy within each round, then the median (rounds in parentheses)."
			echo
			echo "| target | MB/s (median) | proxy CPU s per GB | backend CPU s per GB | MB/s vs haproxy | proxy CPU per GB vs haproxy |"
			echo "|---|---:|---:|---:|---|---|"
			for t in "${TARGETS[@]}"; do
				if [ "$t" = direct ]; then
					printf '| direct (no proxy) | %.0f | - | %.2f | %s | - |\n' "$(stat bulk "$t" 1)" "$(stat bulk "$t" 3)" "$(ratio bulk "$t" 1)"
				else
					printf '| %s | %.0f | %.2f | %.2f | %s | %s |\n' "$t" "$(stat bulk "$t" 1)" "$(stat bulk "$t" 2)" "$(stat bulk "$t" 3)" "$(ratio bulk "$t" 1)" "$(ratio bulk "$t" 2)"
				fi
			done ;;
		pingpong)
			echo "Ping-pong: $CONNS_PP connections, each sending a $MSG-byte message and waiting for its echo, in a closed loop. Ratios to haproxy within each round, then the median (rounds in parentheses)."
			echo
			latency_table pingpong messages message ;;
		esac
		if selected levee-baseline; then
			echo
			echo "levee vs levee-baseline ($BASELINE), within each round: rate $(results_ratio "$RESULTS" "$test" levee levee-baseline 1); proxy CPU per unit $(results_ratio "$RESULTS" "$test" levee levee-baseline "$([ "$test" = bulk ] && echo 2 || echo 4)")"
		fi
	done
	echo
	echo "CPU: user + system time of the process over the run (/proc/PID/stat), per GB read by the load, per round trip or per connection."
	echo
	echo "All rounds (test, target, round; bulk: MB/s, proxy CPU s/GB, backend CPU s/GB; pingpong: messages/s, p50 µs, p99 µs, proxy CPU µs/msg, backend CPU µs/msg; connect: connections/s, p50 µs, p99 µs, proxy CPU µs/connection, backend CPU µs/connection):"
	echo
	echo '```'
	sort -k1,1 -k2,2 -k3,3n "$RESULTS"
	echo '```'
} | tee "${OUT:-/dev/null}"

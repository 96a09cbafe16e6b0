#!/usr/bin/env bash
# HTTP/3 against HTTP/2 through the same Levee, in one run: one TLS
# listener with h3 (`--listen websecure=127.0.0.1:PORT,tls,h3`: HTTP/1.1 and
# HTTP/2 by ALPN on TCP, HTTP/3 over QUIC on the UDP port of the same
# number), one self-signed ECDSA P-256 certificate (openssl), one route
# bench.local to bench/proxy/backend (a fixed 35-byte body). The load is
# bench/proxy/h3load: -conns connections, -streams concurrent GETs on each,
# a closed loop; quic-go's client for h3, golang.org/x/net/http2's for h2,
# the same Go code around both. See bench/README.md and docs/performance.md.
#
#   DURATION=5s ROUNDS=5 bench/proxy/h3.sh
#
# Pinning as run.sh: Levee and the backend on CPU $PROXY_CPU, the load on
# CPU $LOAD_CPU; Levee GOMAXPROCS=1, the backend and the load too. Each
# round runs h3 then h2 on odd rounds, h2 then h3 on even ones; the report
# gives the h3/h2 ratio within each round, then the median.
#
# Environment (all optional):
#   DURATION=5s ROUNDS=5 CONNS=2 STREAMS=32
#   PROXY_CPU=0 LOAD_CPU=1 BASE_PORT=18960 (TCP ports BASE_PORT..+3, UDP
#   BASE_PORT+1) NO_INSTALL=1 (do not apt-get install openssl) OUT=file
set -euo pipefail

DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-5}
CONNS=${CONNS:-2}
STREAMS=${STREAMS:-32}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BASE_PORT=${BASE_PORT:-18960}
OUT=${OUT:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_start h3

need=()
command -v openssl >/dev/null || need+=(openssl)
command -v taskset >/dev/null || need+=(util-linux)
install_missing "${need[@]}"

log "building levee, the backend and h3load"
build_levee
build_tools backend h3load

make_cert "$TMP/certs" bench.local

BACKEND_PORT=$BASE_PORT
LEVEE_TLS=$((BASE_PORT + 1))
LEVEE_HTTP=$((BASE_PORT + 2))
LEVEE_API=$((BASE_PORT + 3))

GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/backend" -listen "127.0.0.1:$BACKEND_PORT" >"$TMP/backend.log" 2>&1 &
PIDS+=("$!")
wait_tcp "$BACKEND_PORT"

GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/levee" serve --docker=false \
	--http-listen "127.0.0.1:$LEVEE_HTTP" --listen "websecure=127.0.0.1:$LEVEE_TLS,tls,h3" \
	--tls-cert-dir "$TMP/certs" --tls-default-cert "$CERT" --tls-default-key "$KEY" \
	--api-listen "127.0.0.1:$LEVEE_API" --state-file "$TMP/levee-state.json" \
	--access-log=false --log-level warn >"$TMP/levee.log" 2>&1 &
LEVEE_PID=$!
PIDS+=("$LEVEE_PID")
wait_tcp "$LEVEE_API"
for _ in $(seq 100); do
	curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$LEVEE_API/entrypoints" \
		-d '{"name":"bench","backends":[{"address":"127.0.0.1","port":'"$BACKEND_PORT"'}],"config":{"hostnames":["bench.local"],"tls":{"enabled":true,"redirect":false}}}' && break
	sleep 0.1
done

URL="https://bench.local:$LEVEE_TLS/"
# load PROTO DURATION: one h3load run against Levee; prints its line.
load() {
	GOMAXPROCS=1 taskset -c "$LOAD_CPU" "$TMP/h3load" -proto "$1" -url "$URL" -connect-to "127.0.0.1:$LEVEE_TLS" \
		-conns "$CONNS" -streams "$STREAMS" -duration "$2" -pid "$LEVEE_PID" >"$TMP/load.out" 2>"$TMP/load.err" &
	LOAD_PID=$!
	if ! wait "$LOAD_PID"; then
		LOAD_PID=""
		log "h3load $1 failed:"; cat "$TMP/load.err" >&2; return 1
	fi
	LOAD_PID=""
	cat "$TMP/load.out"
}
# Both protocols answer before anything is measured (the route may take a
# moment to reach the listener).
for p in h2 h3; do
	for i in $(seq 50); do
		load "$p" 100ms >/dev/null 2>&1 && break
		[ "$i" -lt 50 ] || { load "$p" 100ms; exit 1; }
		sleep 0.2
	done
done

RESULTS=$TMP/results.tsv # test target round fields...
: >"$RESULTS"
log "warm-up: 2 s per protocol"
load h3 2s >/dev/null
load h2 2s >/dev/null
for round in $(seq "$ROUNDS"); do
	order=(h3 h2)
	[ $((round % 2)) -eq 1 ] || order=(h2 h3)
	for p in "${order[@]}"; do
		line=$(load "$p" "$DURATION")
		printf 'get\t%s\t%s\t%s\n' "$p" "$round" "$line" >>"$RESULTS"
		log "round $round $p: $line"
	done
done

{
	echo "bench/proxy/h3load, $ROUNDS rounds of $DURATION per protocol, $CONNS connections × $STREAMS concurrent GETs (35-byte answers) through one Levee TLS listener with h3; Levee and the backend on CPU $PROXY_CPU, the load on CPU $LOAD_CPU. Ratios h3 / h2 within each round, then the median (rounds in parentheses)."
	echo
	echo "| protocol | req/s (median) | p50 | p99 | Levee CPU per request | load CPU per request | errors | req/s h3 / h2 | p99 h3 / h2 | Levee CPU per request h3 / h2 |"
	echo "|---|---:|---:|---:|---:|---:|---:|---|---|---|"
	for p in h3 h2; do
		errs=$(awk -F'\t' -v p="$p" '$2 == p {n += $7} END {print n + 0}' "$RESULTS")
		if [ "$p" = h3 ]; then
			r1=$(results_ratio "$RESULTS" get h3 h2 1) r3=$(results_ratio "$RESULTS" get h3 h2 3) r5=$(results_ratio "$RESULTS" get h3 h2 5)
		else
			r1=1.00 r3=1.00 r5=1.00
		fi
		printf '| %s | %.0f | %.0f µs | %.0f µs | %.1f µs | %.1f µs | %d | %s | %s | %s |\n' "$p" \
			"$(results_median "$RESULTS" get "$p" 1)" "$(results_median "$RESULTS" get "$p" 2)" "$(results_median "$RESULTS" get "$p" 3)" \
			"$(results_median "$RESULTS" get "$p" 5)" "$(results_median "$RESULTS" get "$p" 6)" "$errs" "$r1" "$r3" "$r5"
	done
	echo
	echo "CPU: user + system time of the process over the run (/proc/PID/stat) per request answered."
	echo
	echo "All rounds (test, protocol, round, req/s, p50 µs, p99 µs, errors, Levee CPU µs/request, load CPU µs/request):"
	echo
	echo '```'
	sort -k2,2 -k3,3n "$RESULTS"
	echo '```'
} | tee "${OUT:-/dev/null}"

#!/usr/bin/env bash
# Profiles Levee's router under the same load as run.sh: the backend and the
# in-process harness (bench/proxy/harness) on CPU $PROXY_CPU, wrk on CPU
# $LOAD_CPU. Prints the allocations per request and the top of the CPU and
# allocation profiles; the profiles stay in $PROFILE_DIR.
#
# Environment: DURATION=10s (profiling window; 3 s of warm-up come first),
# BREAKER=false, SERVER=edge (or stdlib: net/http's server), CLIENT=levee
# (or stdlib: net/http's Transport), PROXY_CPU=0, LOAD_CPU=1,
# BASE_PORT=18280, PROFILE_DIR=/tmp/levee-profile, CONNECTIONS=64.
set -euo pipefail

DURATION=${DURATION:-10s}
BREAKER=${BREAKER:-false}
SERVER=${SERVER:-edge}
CLIENT=${CLIENT:-levee}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BASE_PORT=${BASE_PORT:-18280}
CONNECTIONS=${CONNECTIONS:-64}
PROFILE_DIR=${PROFILE_DIR:-/tmp/levee-profile}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$PROFILE_DIR"
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap stop_started EXIT
command -v wrk >/dev/null || { echo "wrk is missing: run bench/proxy/run.sh once, or apt-get install wrk" >&2; exit 1; }

case $DURATION in *s) DUR_S=${DURATION%s} ;; *m) DUR_S=$((${DURATION%m} * 60)) ;; *) DUR_S=$DURATION ;; esac
(cd "$ROOT/bench" && go build -o "$PROFILE_DIR/backend" ./proxy/backend && go build -o "$PROFILE_DIR/harness" ./proxy/harness)

BACKEND=127.0.0.1:$BASE_PORT
PROXY=127.0.0.1:$((BASE_PORT + 1))
GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$PROFILE_DIR/backend" -listen "$BACKEND" &
PIDS+=($!)
GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$PROFILE_DIR/harness" -listen "$PROXY" -backend "$BACKEND" \
	-breaker="$BREAKER" -server "$SERVER" -client "$CLIENT" -warmup 3s -duration "${DUR_S}s" \
	-cpuprofile "$PROFILE_DIR/cpu.pprof" -memprofile "$PROFILE_DIR/allocs.pprof" >"$PROFILE_DIR/harness.out" &
HARNESS=$!
PIDS+=("$HARNESS")
for _ in $(seq 100); do
	curl -fsS -o /dev/null -H 'Host: bench.local' "http://$PROXY/" 2>/dev/null && break
	sleep 0.1
done
taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNECTIONS" -d"$((DUR_S + 3))s" --latency -H 'Host: bench.local' "http://$PROXY/" >"$PROFILE_DIR/wrk.txt" &
WRK=$!
PIDS+=("$WRK")
wait "$HARNESS"
wait "$WRK" || true
cat "$PROFILE_DIR/harness.out"
grep -E 'Requests/sec|^ +(50|99)%' "$PROFILE_DIR/wrk.txt"
echo "--- CPU, flat"
go tool pprof -top -nodecount=35 "$PROFILE_DIR/harness" "$PROFILE_DIR/cpu.pprof" 2>/dev/null | sed -n '1,45p'
echo "--- CPU, cumulative"
go tool pprof -top -cum -nodecount=40 "$PROFILE_DIR/harness" "$PROFILE_DIR/cpu.pprof" 2>/dev/null | sed -n '6,50p'
echo "--- allocations (objects), flat"
go tool pprof -sample_index=alloc_objects -top -nodecount=25 "$PROFILE_DIR/harness" "$PROFILE_DIR/allocs.pprof" 2>/dev/null | sed -n '1,35p'

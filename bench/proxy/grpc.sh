#!/usr/bin/env bash
# gRPC unary load through Levee and nginx (grpc_pass), side by side in one
# run: a grpc-go backend (the health service; Check is a small unary call)
# and a closed-loop load generator built from grpc-go (bench/proxy/grpcload),
# both over h2c on 127.0.0.1. The backend and each proxy run on CPU
# $PROXY_CPU, the load on $LOAD_CPU; each proxy uses one core (Levee:
# GOMAXPROCS=1, nginx: worker_processes 1). Traefik is not packaged in
# Debian and is not measured here.
#
# Environment (all optional):
#   DURATION=10s ROUNDS=3 CONNS=4 CONCURRENCY=64 PROXY_CPU=0 LOAD_CPU=1
#   BASE_PORT=18870 (ports BASE_PORT..BASE_PORT+4)
#   OUT=file          also write the markdown table to this file
set -euo pipefail

DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-4}
CONCURRENCY=${CONCURRENCY:-64}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BASE_PORT=${BASE_PORT:-18870}
OUT=${OUT:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TMP=$(mktemp -d)
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
log() { echo "grpc.sh: $*" >&2; }

command -v nginx >/dev/null || { log "nginx is not installed (apt-get install nginx-light)"; exit 1; }

log "building levee and grpcload"
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o "$TMP/levee" ./cmd/levee)
(cd "$ROOT/bench" && CGO_ENABLED=0 go build -trimpath -o "$TMP/grpcload" ./proxy/grpcload)

BACKEND=$BASE_PORT LEVEE=$((BASE_PORT + 1)) API=$((BASE_PORT + 2)) NGINX_PORT=$((BASE_PORT + 3))

GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/grpcload" -backend "127.0.0.1:$BACKEND" >"$TMP/backend.log" 2>&1 &
PIDS+=("$!")

GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/levee" serve --docker=false \
	--http-listen "127.0.0.1:$((BASE_PORT + 4))" --listen "grpc=127.0.0.1:$LEVEE,h2c" --api-listen "127.0.0.1:$API" \
	--state-file "$TMP/state.json" --access-log=false --log-level warn >"$TMP/levee.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 100); do
	curl -fsS -o /dev/null -H "Host: 127.0.0.1:$API" "http://127.0.0.1:$API/health" 2>/dev/null && break
	sleep 0.1
done
curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' -H "Host: 127.0.0.1:$API" "http://127.0.0.1:$API/entrypoints" \
	-d '{"name":"grpc","backends":[{"address":"127.0.0.1","port":'"$BACKEND"'}],"config":{"hostnames":["grpc.local"],"scheme":"h2c"}}'

mkdir -p "$TMP/nginx"
cat >"$TMP/nginx/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $TMP/nginx;
	upstream grpcbackend {
		server 127.0.0.1:$BACKEND;
		keepalive 64;
	}
	server {
		listen 127.0.0.1:$NGINX_PORT http2;
		location / { grpc_pass grpc://grpcbackend; }
	}
}
NGINX
taskset -c "$PROXY_CPU" nginx -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/error.log" >"$TMP/nginx.log" 2>&1 &
PIDS+=("$!")
sleep 1 # startup of three local processes; the first call of each run retries below

run() { # run TARGET ADDR AUTHORITY: "calls/s p50 p99 errors"
	for _ in $(seq 20); do
		if out=$(taskset -c "$LOAD_CPU" "$TMP/grpcload" -target "$2" -authority "$3" -conns "$CONNS" \
			-concurrency "$CONCURRENCY" -duration "$DURATION" 2>"$TMP/load.err"); then
			echo "$out"
			return
		fi
		sleep 0.5
	done
	log "$1: $(cat "$TMP/load.err")"
	exit 1
}

declare -A RPS P99
for round in $(seq "$ROUNDS"); do
	order=("direct" "levee" "nginx")
	[ $((round % 2)) -eq 0 ] && order=("nginx" "levee" "direct")
	for t in "${order[@]}"; do
		case $t in
		direct) r=$(run direct "127.0.0.1:$BACKEND" "") ;;
		levee) r=$(run levee "127.0.0.1:$LEVEE" grpc.local) ;;
		nginx) r=$(run nginx "127.0.0.1:$NGINX_PORT" grpc.local) ;;
		esac
		read -r rps _ p99 errs <<<"$r"
		log "round $round $t: $rps calls/s, p99 ${p99}ms, $errs errors"
		RPS[$t]+="$rps "
		P99[$t]+="$p99 "
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
nginx_rps=$(echo "${RPS[nginx]}" | median)
{
	echo "| target | gRPC unary calls/s (median of $ROUNDS) | p99 ms (median) | vs nginx grpc_pass |"
	echo "|---|---|---|---|"
	for t in direct levee nginx; do
		rps=$(echo "${RPS[$t]}" | median)
		p99=$(echo "${P99[$t]}" | median)
		echo "| $t | $rps | $p99 | $(awk -v a="$rps" -v b="$nginx_rps" 'BEGIN {printf "%.2f×", a/b}') |"
	done
} | tee "${OUT:-/dev/null}"

#!/usr/bin/env bash
# gRPC unary load through Levee and nginx (grpc_pass), side by side in one
# run: a grpc-go backend (the health service; Check is a small unary call)
# and a closed-loop load generator built from grpc-go (bench/proxy/grpcload),
# both over h2c on 127.0.0.1. The backend and each proxy run on CPU
# $PROXY_CPU, the load on $LOAD_CPU; each proxy uses one core (Levee:
# GOMAXPROCS=1, nginx: worker_processes 1, Traefik: GOMAXPROCS=1).
# Traefik is not packaged in Debian: it is measured when TRAEFIK names a
# traefik binary (docs/performance.md says how one was built here).
#
# Environment (all optional):
#   DURATION=10s ROUNDS=3 CONNS=4 CONCURRENCY=64 PROXY_CPU=0 LOAD_CPU=1
#   BASE_PORT=18870 (ports BASE_PORT..BASE_PORT+5)
#   TRAEFIK=path      a traefik v3 binary, measured beside the others
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
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_start grpc

command -v nginx >/dev/null || { log "nginx is not installed (apt-get install nginx-light)"; exit 1; }

log "building levee and grpcload"
build_levee
build_tools grpcload

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
TARGETS=(direct levee nginx)
if [ -n "${TRAEFIK:-}" ]; then
	TRAEFIK_PORT=$((BASE_PORT + 5))
	cat >"$TMP/traefik-dynamic.yml" <<YAML
http:
  routers:
    grpc:
      entryPoints: [grpc]
      rule: Host(\`grpc.local\`)
      service: grpc
  services:
    grpc:
      loadBalancer:
        servers:
          - url: h2c://127.0.0.1:$BACKEND
YAML
	cat >"$TMP/traefik.yml" <<YAML
global:
  checkNewVersion: false
  sendAnonymousUsage: false
log:
  level: ERROR
entryPoints:
  grpc:
    address: 127.0.0.1:$TRAEFIK_PORT
providers:
  file:
    filename: $TMP/traefik-dynamic.yml
YAML
	GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TRAEFIK" --configfile="$TMP/traefik.yml" >"$TMP/traefik.log" 2>&1 &
	PIDS+=("$!")
	TARGETS+=(traefik)
fi
sleep 1 # startup of the local processes; the first call of each run retries below

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

declare -A RPS P99 ROUND
for round in $(seq "$ROUNDS"); do
	order=("${TARGETS[@]}")
	if [ $((round % 2)) -eq 0 ]; then
		order=()
		for ((i = ${#TARGETS[@]} - 1; i >= 0; i--)); do order+=("${TARGETS[i]}"); done
	fi
	for t in "${order[@]}"; do
		case $t in
		direct) r=$(run direct "127.0.0.1:$BACKEND" "") ;;
		levee) r=$(run levee "127.0.0.1:$LEVEE" grpc.local) ;;
		nginx) r=$(run nginx "127.0.0.1:$NGINX_PORT" grpc.local) ;;
		traefik) r=$(run traefik "127.0.0.1:$TRAEFIK_PORT" grpc.local) ;;
		esac
		read -r rps _ p99 errs <<<"$r"
		log "round $round $t: $rps calls/s, p99 ${p99}ms, $errs errors"
		RPS[$t]+="$rps "
		P99[$t]+="$p99 "
		ROUND[$t,$round]=$rps
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# ratios TARGET PEER: the per-round calls/s ratios of TARGET to PEER.
ratios() {
	for round in $(seq "$ROUNDS"); do
		awk -v a="${ROUND[$1,$round]}" -v b="${ROUND[$2,$round]}" 'BEGIN {printf "%.2f ", a/b}'
	done
}
peers=(nginx)
[ -n "${TRAEFIK:-}" ] && peers+=(traefik)
{
	head="| target | gRPC unary calls/s (median of $ROUNDS) | p99 ms (median) |"
	rule="|---|---|---|"
	for p in "${peers[@]}"; do head+=" vs $p, median (per round) |"; rule+="---|"; done
	echo "$head"
	echo "$rule"
	for t in "${TARGETS[@]}"; do
		row="| $t | $(echo "${RPS[$t]}" | median) | $(echo "${P99[$t]}" | median) |"
		for p in "${peers[@]}"; do
			r=$(ratios "$t" "$p")
			row+=" $(echo "$r" | median) ($r) |"
		done
		echo "$row"
	done
} | tee "${OUT:-/dev/null}"

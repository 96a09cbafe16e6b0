#!/usr/bin/env bash
# HTTPS backends: Levee (a route with scheme=https) beside nginx
# (proxy_pass https:// with keep-alive), in one run. Both take plain
# HTTP/1.1 from wrk and speak HTTP/1.1 over TLS to the same backend
# (bench/proxy/backend with -tls-cert: a fixed 35-byte body), verifying
# its certificate (one self-signed ECDSA P-256 certificate for
# bench.local, given to both as the CA) and naming bench.local by SNI.
# Both keep backend connections alive and resume TLS sessions (Levee's
# client always does; nginx: proxy_ssl_session_reuse on, its default).
# See bench/README.md and docs/performance.md.
#
#   DURATION=5s ROUNDS=5 bench/proxy/https.sh
#
# Pinning as run.sh: each proxy and the backend on CPU $PROXY_CPU, wrk on
# CPU $LOAD_CPU; Levee GOMAXPROCS=1, nginx one worker, the backend
# GOMAXPROCS=1. Odd rounds run levee then nginx, even rounds the reverse;
# the report gives levee / nginx within each round, then the median.
#
# Environment (all optional):
#   DURATION=5s ROUNDS=5 CONNECTIONS=64 PROXY_CPU=0 LOAD_CPU=1
#   BASE_PORT=18940 (ports BASE_PORT..BASE_PORT+4) NO_INSTALL=1 OUT=file
set -euo pipefail

DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-5}
CONNECTIONS=${CONNECTIONS:-64}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BASE_PORT=${BASE_PORT:-18940}
OUT=${OUT:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_start https

need=()
command -v openssl >/dev/null || need+=(openssl)
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || need+=(nginx-light)
command -v taskset >/dev/null || need+=(util-linux)
install_missing "${need[@]}"

case $DURATION in *s) DUR_S=${DURATION%s} ;; *m) DUR_S=$((${DURATION%m} * 60)) ;; *) DUR_S=$DURATION ;; esac

log "building levee and the backend"
build_levee
build_tools backend

make_cert "$TMP/certs" bench.local

BACKEND_PORT=$BASE_PORT
LEVEE_PORT=$((BASE_PORT + 1))
LEVEE_API=$((BASE_PORT + 2))
NGINX_PORT=$((BASE_PORT + 3))

GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/backend" -listen "127.0.0.1:$BACKEND_PORT" \
	-tls-cert "$CERT" -tls-key "$KEY" >"$TMP/backend.log" 2>&1 &
PIDS+=("$!")
wait_tcp "$BACKEND_PORT"

GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/levee" serve --docker=false \
	--http-listen "127.0.0.1:$LEVEE_PORT" --api-listen "127.0.0.1:$LEVEE_API" \
	--state-file "$TMP/levee-state.json" --access-log=false --log-level warn >"$TMP/levee.log" 2>&1 &
declare -A PID
PID[levee]=$!
PIDS+=("${PID[levee]}")
wait_tcp "$LEVEE_API"
for _ in $(seq 100); do
	curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$LEVEE_API/entrypoints" \
		-d '{"name":"bench","backends":[{"address":"127.0.0.1","port":'"$BACKEND_PORT"'}],"config":{"hostnames":["bench.local"],"scheme":"https","tls":{"server_name":"bench.local","ca":"'"$CERT"'"}}}' && break
	sleep 0.1
done

mkdir -p "$TMP/nginx"
cat >"$TMP/nginx/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $TMP/nginx/body;
    proxy_temp_path $TMP/nginx/proxy;
    fastcgi_temp_path $TMP/nginx/fastcgi;
    uwsgi_temp_path $TMP/nginx/uwsgi;
    scgi_temp_path $TMP/nginx/scgi;
    keepalive_requests 1000000;
    upstream backend {
        server 127.0.0.1:$BACKEND_PORT;
        keepalive 128;
        keepalive_requests 1000000;
    }
    server {
        listen 127.0.0.1:$NGINX_PORT;
        server_name bench.local;
        location / {
            proxy_pass https://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Forwarded-Host \$host;
            proxy_ssl_server_name on;
            proxy_ssl_name bench.local;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate $CERT;
            proxy_ssl_session_reuse on;
        }
    }
}
EOF
taskset -c "$PROXY_CPU" nginx -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/error.log" >"$TMP/nginx.log" 2>&1 &
PID[nginx]=$!
PIDS+=("${PID[nginx]}")
wait_tcp "$NGINX_PORT"

declare -A PORT=([levee]=$LEVEE_PORT [nginx]=$NGINX_PORT)
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run TARGET SECONDS: one wrk run; prints req/s, p99 µs, errors, proxy
# CPU µs per request.
run() {
	local t=$1 s=$2 c0 out=$TMP/wrk.txt
	c0=$(cpu_ticks "${PID[$t]}")
	taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNECTIONS" -d"${s}s" --latency -H "Host: bench.local" \
		"http://127.0.0.1:${PORT[$t]}/" >"$out" 2>&1
	local ticks=$(($(cpu_ticks "${PID[$t]}") - c0))
	awk -v ticks="$ticks" -v hz="$CLK_TCK" '
		/^Requests\/sec:/ {rps = $2}
		/ requests in / {n = $1}
		$1 == "99%" {v = $2; if (v ~ /us$/) {sub(/us$/, "", v); p99 = v} else if (v ~ /ms$/) {sub(/ms$/, "", v); p99 = v * 1000} else {sub(/s$/, "", v); p99 = v * 1000000}}
		/Non-2xx or 3xx responses:/ {e += $NF}
		/Socket errors:/ {gsub(",", ""); e += $4 + $6 + $8 + $10}
		END {if (n == 0) exit 1; printf "%s\t%.0f\t%d\t%.1f\n", rps, p99, e, ticks * 1000000 / hz / n}' "$out" ||
		{ log "wrk failed against $t:"; cat "$out" >&2; return 1; }
}

for t in levee nginx; do
	for i in $(seq 50); do
		code=$(curl -s -o /dev/null -w '%{http_code}' -H "Host: bench.local" "http://127.0.0.1:${PORT[$t]}/" || true)
		[ "$code" = 200 ] && break
		[ "$i" -lt 50 ] || { log "$t does not answer 200 (last: $code)"; cat "$TMP/$t.log" >&2 || true; exit 1; }
		sleep 0.2
	done
done

RESULTS=$TMP/results.tsv # test target round rps p99 errors cpu
: >"$RESULTS"
log "warm-up: 2 s per target"
run levee 2 >/dev/null
run nginx 2 >/dev/null
for round in $(seq "$ROUNDS"); do
	order=(levee nginx)
	[ $((round % 2)) -eq 1 ] || order=(nginx levee)
	for t in "${order[@]}"; do
		line=$(run "$t" "$DUR_S")
		printf 'get\t%s\t%s\t%s\n' "$t" "$round" "$line" >>"$RESULTS"
		log "round $round $t: $line"
	done
done

{
	echo "wrk -t1 -c$CONNECTIONS, $ROUNDS rounds of $DURATION per target, plain HTTP/1.1 in, HTTP/1.1 over TLS to one HTTPS backend (35-byte answers); each proxy and the backend on CPU $PROXY_CPU, wrk on CPU $LOAD_CPU. Ratios levee / nginx within each round, then the median (rounds in parentheses)."
	echo
	echo "| target | req/s (median) | p99 (median) | proxy CPU per request | errors | req/s vs nginx | p99 vs nginx | CPU per request vs nginx |"
	echo "|---|---:|---:|---:|---:|---|---|---|"
	for t in levee nginx; do
		errs=$(awk -F'\t' -v t="$t" '$2 == t {n += $6} END {print n + 0}' "$RESULTS")
		if [ "$t" = levee ]; then
			r1=$(results_ratio "$RESULTS" get levee nginx 1) r2=$(results_ratio "$RESULTS" get levee nginx 2) r4=$(results_ratio "$RESULTS" get levee nginx 4)
		else
			r1=1.00 r2=1.00 r4=1.00
		fi
		printf '| %s | %.0f | %.0f µs | %.1f µs | %d | %s | %s | %s |\n' "$t" \
			"$(results_median "$RESULTS" get "$t" 1)" "$(results_median "$RESULTS" get "$t" 2)" \
			"$(results_median "$RESULTS" get "$t" 4)" "$errs" "$r1" "$r2" "$r4"
	done
	echo
	echo "All rounds (test, target, round, req/s, p99 µs, errors, proxy CPU µs/request):"
	echo
	echo '```'
	sort -k2,2 -k3,3n "$RESULTS"
	echo '```'
} | tee "${OUT:-/dev/null}"

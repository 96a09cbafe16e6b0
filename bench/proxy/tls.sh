#!/usr/bin/env bash
# HTTPS, HTTP/2 and compression: Levee side by side with nginx in one run,
# the same certificate (one ECDSA P-256 certificate made here with openssl)
# and the same backend. See bench/README.md and docs/performance.md.
#
#   DURATION=10s ROUNDS=3 bench/proxy/tls.sh
#
# Tests (TESTS, default all of them):
#   https       keep-alive over TLS: wrk -t1 -c$CONNECTIONS --latency on https://
#   h2          HTTP/2: h2load -c$H2_CLIENTS -m$H2_STREAMS (streams per connection)
#   hs          new TLS connections per second (bench/proxy/handshakes: each one
#               a handshake, one request with Connection: close, the answer),
#               for each version of TLS_VERSIONS, full handshakes (hs-full-1.3)
#               and resumed ones (hs-resume-1.3: a client session cache)
#   gzip        compression: a $JSON_BYTES-byte JSON answer (the backend's
#               -json-bytes) with Accept-Encoding: gzip, Levee's compress=true
#               against nginx's gzip at level $GZIP_LEVEL (Levee's level);
#               json is the same route without Accept-Encoding (not compressed)
#
# Pinning as run.sh: Levee, nginx and both backends on CPU $PROXY_CPU, the
# load generator on CPU $LOAD_CPU; Levee GOMAXPROCS=1, nginx one worker
# without master. Each round runs every test against Levee and nginx one
# after the other, Levee first on odd rounds, nginx first on even ones; the
# report gives each ratio within its round, then their median: on a shared
# host the speed drifts between rounds more than between two neighbouring runs.
#
# Environment (all optional):
#   DURATION=10s ROUNDS=3 CONNECTIONS=64 H2_CLIENTS=16 H2_STREAMS=10
#   HS_CONNS=16 (concurrent handshaking clients) TLS_VERSIONS="1.3 1.2"
#   HS_CURVES=x25519,p256 (groups the handshake client offers: both servers
#   do the same X25519 key exchange; P-256 is there because OpenSSL refuses a
#   TLS 1.2 client that does not list the ECDSA certificate's curve; "default"
#   offers Go's, where Levee picks X25519MLKEM768 and nginx X25519)
#   JSON_BYTES=16384 GZIP_LEVEL=5 TESTS="https h2 hs gzip"
#   PROXY_CPU=0 LOAD_CPU=1 BASE_PORT=18580 (ports BASE_PORT..BASE_PORT+7)
#   NO_INSTALL=1 (do not apt-get install wrk, h2load, nginx) OUT=file (the report)
set -euo pipefail

DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
H2_CLIENTS=${H2_CLIENTS:-16}
H2_STREAMS=${H2_STREAMS:-10}
HS_CONNS=${HS_CONNS:-16}
TLS_VERSIONS=${TLS_VERSIONS:-1.3 1.2}
HS_CURVES=${HS_CURVES:-x25519,p256}
JSON_BYTES=${JSON_BYTES:-16384}
GZIP_LEVEL=${GZIP_LEVEL:-5}
TESTS=${TESTS:-https h2 hs gzip}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BASE_PORT=${BASE_PORT:-18580}
OUT=${OUT:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_start tls

# --- tools ----------------------------------------------------------------
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v openssl >/dev/null || need+=(openssl)
command -v taskset >/dev/null || need+=(util-linux)
install_missing "${need[@]}"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# --- build, certificate -----------------------------------------------------
log "building levee, the backend and the handshake client"
build_levee
build_tools backend handshakes

# One ECDSA P-256 certificate for both servers, self-signed, for the names
# the tests use. Levee reads it from --tls-cert-dir (chosen by SNI) and as
# its default certificate (wrk sends no usable SNI for 127.0.0.1).
make_cert "$TMP/certs" bench.local gzip.local

BACKEND_PORT=$BASE_PORT
JSON_PORT=$((BASE_PORT + 1))
LEVEE_PORT=$((BASE_PORT + 2))
LEVEE_TLS=$((BASE_PORT + 3))
LEVEE_API=$((BASE_PORT + 4))
NGINX_PORT=$((BASE_PORT + 5))
NGINX_TLS=$((BASE_PORT + 6))
NGINX_GZIP=$((BASE_PORT + 7))

# --- backends ---------------------------------------------------------------
GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/backend" -listen "127.0.0.1:$BACKEND_PORT" >"$TMP/backend.log" 2>&1 &
PIDS+=("$!")
GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/backend" -listen "127.0.0.1:$JSON_PORT" -json-bytes "$JSON_BYTES" >"$TMP/json.log" 2>&1 &
PIDS+=("$!")
wait_http "http://127.0.0.1:$BACKEND_PORT/"
wait_http "http://127.0.0.1:$JSON_PORT/"

# --- Levee ------------------------------------------------------------------
GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/levee" serve --docker=false \
	--http-listen "127.0.0.1:$LEVEE_PORT" --listen "websecure=127.0.0.1:$LEVEE_TLS,tls" \
	--tls-cert-dir "$TMP/certs" --tls-default-cert "$CERT" --tls-default-key "$KEY" \
	--api-listen "127.0.0.1:$LEVEE_API" --state-file "$TMP/levee-state.json" \
	--access-log=false --log-level warn >"$TMP/levee.log" 2>&1 &
LEVEE_PID=$!
PIDS+=("$LEVEE_PID")
wait_http "http://127.0.0.1:$LEVEE_API/health" "127.0.0.1:$LEVEE_API" # the API answers only to its own names
api_post() {
	curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' \
		"http://127.0.0.1:$LEVEE_API/entrypoints" -d "$1"
}
api_post '{"name":"bench","backends":[{"address":"127.0.0.1","port":'"$BACKEND_PORT"'}],"config":{"hostnames":["bench.local"],"tls":{"enabled":true,"redirect":false}}}'
api_post '{"name":"gzip","backends":[{"address":"127.0.0.1","port":'"$JSON_PORT"'}],"config":{"hostnames":["gzip.local"],"compress":{"enabled":true,"encodings":["gzip"]}}}'
wait_http "https://127.0.0.1:$LEVEE_TLS/"
wait_http "http://127.0.0.1:$LEVEE_PORT/" gzip.local

# --- nginx ------------------------------------------------------------------
write_nginx_conf "$TMP/nginx" "127.0.0.1:$NGINX_PORT" "127.0.0.1:$BACKEND_PORT" 4096 \
	"$(nginx_tls_server "127.0.0.1:$NGINX_TLS" "$CERT" "$KEY")
$(nginx_gzip_server "127.0.0.1:$NGINX_GZIP" "127.0.0.1:$JSON_PORT" "$GZIP_LEVEL")
"
taskset -c "$PROXY_CPU" "$NGINX" -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" >"$TMP/nginx/stdout.log" 2>&1 &
NGINX_PID=$!
PIDS+=("$NGINX_PID")
wait_http "https://127.0.0.1:$NGINX_TLS/"
wait_http "http://127.0.0.1:$NGINX_GZIP/" gzip.local

declare -A TLSPORT PLAINPORT SPID
TLSPORT[levee]=$LEVEE_TLS; PLAINPORT[levee]=$LEVEE_PORT; SPID[levee]=$LEVEE_PID
TLSPORT[nginx]=$NGINX_TLS; PLAINPORT[nginx]=$NGINX_GZIP; SPID[nginx]=$NGINX_PID

# Check that both serve what is measured: HTTP/2 by ALPN, gzip on the JSON
# route; and record the sizes.
declare -A GZSIZE RAWSIZE
for s in levee nginx; do
	GZSIZE[$s]=$(curl -s -H "Host: gzip.local" -H "Accept-Encoding: gzip" "http://127.0.0.1:${PLAINPORT[$s]}/" | wc -c)
	RAWSIZE[$s]=$(curl -s -H "Host: gzip.local" "http://127.0.0.1:${PLAINPORT[$s]}/" | wc -c)
	v=$(curl -ks -o /dev/null -w '%{http_version}' --http2 -H "Host: bench.local" "https://127.0.0.1:${TLSPORT[$s]}/")
	[ "$v" = 2 ] || { log "$s: HTTP/2 not negotiated (got $v)"; exit 1; }
	enc=$(curl -s -o /dev/null -D - -H "Host: gzip.local" -H "Accept-Encoding: gzip" "http://127.0.0.1:${PLAINPORT[$s]}/" |
		awk -F': ' 'tolower($1) == "content-encoding" {gsub("\r", "", $2); print $2}')
	[ "$enc" = gzip ] || { log "$s: the JSON route is not gzipped (Content-Encoding: '$enc')"; exit 1; }
	log "$s: HTTP/2 negotiated; JSON answer ${RAWSIZE[$s]} bytes, gzipped ${GZSIZE[$s]}"
done

# --- measuring ----------------------------------------------------------------
seconds() {
	case $1 in
	*m) echo $((${1%m} * 60)) ;;
	*s) echo "${1%s}" ;;
	*) echo "$1" ;;
	esac
}
DUR_S=$(seconds "$DURATION")
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
CLK_TCK=$(getconf CLK_TCK)
to_us() {
	awk -v v="$1" 'BEGIN {
		if (v ~ /us$/) { sub(/us$/, "", v); printf "%.0f", v }
		else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.0f", v * 1000 }
		else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.0f", v * 1000000 }
		else { printf "%.0f", v }
	}'
}

# The tests: https, h2, hs-full-V, hs-resume-V, json, gzip.
ALL=()
for t in $TESTS; do
	case $t in
	https | h2) ALL+=("$t") ;;
	hs) for v in $TLS_VERSIONS; do ALL+=("hs-full-$v" "hs-resume-$v"); done ;;
	gzip) ALL+=(json gzip) ;;
	*) log "TESTS: unknown test $t (known: https h2 hs gzip)"; exit 2 ;;
	esac
done

# load TEST SERVER SECONDS OUT: runs the load generator on LOAD_CPU in the
# background; its output goes to OUT.
load() {
	local t=$1 s=$2 d=$3 out=$4
	case $t in
	https)
		taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNECTIONS" -d"${d}s" --latency -H "Host: bench.local" \
			"https://127.0.0.1:${TLSPORT[$s]}/" >"$out" 2>&1 & ;;
	h2)
		taskset -c "$LOAD_CPU" h2load -t1 -c"$H2_CLIENTS" -m"$H2_STREAMS" -D "$d" \
			--connect-to "127.0.0.1:${TLSPORT[$s]}" "https://bench.local:${TLSPORT[$s]}/" >"$out" 2>&1 & ;;
	hs-*)
		local mode=${t#hs-} flag=""
		[ "${mode%-*}" = resume ] && flag=-resume
		GOMAXPROCS=1 taskset -c "$LOAD_CPU" "$TMP/handshakes" -addr "127.0.0.1:${TLSPORT[$s]}" -d "${d}s" \
			-c "$HS_CONNS" -tls "${mode#*-}" -curves "$HS_CURVES" $flag >"$out" 2>&1 & ;;
	json | gzip)
		local ae=()
		[ "$t" = gzip ] && ae=(-H "Accept-Encoding: gzip")
		taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNECTIONS" -d"${d}s" --latency -H "Host: gzip.local" "${ae[@]}" \
			"http://127.0.0.1:${PLAINPORT[$s]}/" >"$out" 2>&1 & ;;
	esac
	LOAD_PID=$!
	for _ in $(seq $(((d + 30) * 10))); do
		kill -0 "$LOAD_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill "$LOAD_PID" 2>/dev/null || true
	wait "$LOAD_PID" || true
	LOAD_PID=""
}

# measure TEST SERVER ROUND: one run; appends to RESULTS:
# test server round rate p50_us p99_us errors server_cpu_us_per_unit server_busy_pct note
RESULTS=$TMP/results.tsv
: >"$RESULTS"
measure() {
	local t=$1 s=$2 round=$3 f="$TMP/$1-$2-$3.txt" c0 c1 rate p50="-" p99="-" errs n note="-"
	c0=$(cpu_ticks "${SPID[$s]}")
	load "$t" "$s" "$DUR_S" "$f"
	c1=$(cpu_ticks "${SPID[$s]}")
	case $t in
	https | json | gzip)
		rate=$(awk '/^Requests\/sec:/ {print $2}' "$f")
		p50=$(to_us "$(awk '$1 == "50%" {print $2}' "$f")")
		p99=$(to_us "$(awk '$1 == "99%" {print $2}' "$f")")
		errs=$(awk '/Non-2xx or 3xx responses:/ {n += $NF} /Socket errors:/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}' "$f")
		n=$(awk '/ requests in / {print $1}' "$f") ;;
	h2)
		rate=$(awk '/^finished in/ {gsub(",", ""); print $4}' "$f")
		n=$(awk '/^requests:/ {print $8}' "$f")
		errs=$(awk '/^requests:/ {print $10 + $12}' "$f")
		p50=$(awk '/^time for request:/ {print $5}' "$f")
		p50=$(to_us "$p50")
		note="mean" ;;
	hs-*)
		rate=$(sed -n 's/.*per_sec=\([0-9.]*\).*/\1/p' "$f")
		n=$(sed -n 's/.*conns=\([0-9]*\).*/\1/p' "$f")
		errs=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' "$f")
		note="resumed=$(sed -n 's/.*resumed=\([0-9]*\).*/\1/p' "$f")/$n" ;;
	esac
	if [ -z "$rate" ] || [ -z "$n" ] || [ "$n" = 0 ]; then
		log "$t against $s failed:"; cat "$f" >&2; exit 1
	fi
	local cpu busy
	cpu=$(awk -v t=$((c1 - c0)) -v hz="$CLK_TCK" -v n="$n" 'BEGIN {printf "%.1f", t * 1000000 / hz / n}')
	busy=$(awk -v t=$((c1 - c0)) -v hz="$CLK_TCK" -v d="$DUR_S" 'BEGIN {printf "%.0f", t * 100 / hz / d}')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$s" "$round" "$rate" "$p50" "$p99" "$errs" "$cpu" "$busy" "$note" >>"$RESULTS"
	log "round $round $t $s: $rate/s p50 ${p50}us p99 ${p99}us errors $errs server CPU ${cpu}us each, busy ${busy}% $note"
}

log "warm-up: 1 s per test and server"
for t in "${ALL[@]}"; do
	for s in levee nginx; do load "$t" "$s" 1 "$TMP/warmup.txt"; done
done
for round in $(seq "$ROUNDS"); do
	for t in "${ALL[@]}"; do
		if [ $((round % 2)) -eq 1 ]; then order=(levee nginx); else order=(nginx levee); fi
		for s in "${order[@]}"; do measure "$t" "$s" "$round"; done
	done
done

# --- report -------------------------------------------------------------------
{
	echo "$ROUNDS rounds of $DURATION per test and server; Levee and nginx (and the backends) on CPU $PROXY_CPU, the load generator on CPU $LOAD_CPU."
	echo "https: wrk -t1 -c$CONNECTIONS --latency over TLS (HTTP/1.1 keep-alive); h2: h2load -t1 -c$H2_CLIENTS -m$H2_STREAMS (its latency is the mean, not p50);"
	echo "hs-*: bench/proxy/handshakes -c $HS_CONNS -curves $HS_CURVES (new connections per second: handshake, one request, close; full or resumed);"
	echo "json / gzip: wrk -t1 -c$CONNECTIONS on the ${RAWSIZE[levee]}-byte JSON route without / with Accept-Encoding: gzip (gzipped: Levee ${GZSIZE[levee]} bytes, nginx ${GZSIZE[nginx]}; gzip level $GZIP_LEVEL)."
	echo
	echo "| test | Levee /s (median) | nginx /s (median) | Levee / nginx, within each round | median | p99 (mean for h2) Levee / nginx, median | server CPU per request or connection, Levee / nginx (µs) | server CPU busy, Levee / nginx | errors Levee / nginx | resumed |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for t in "${ALL[@]}"; do
		awk -F'\t' -v t="$t" '
			function med(a, n,   i, j, x) {
				for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
				return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			$1 == t && $2 == "levee" {L[$3] = $4; Lp[$3] = ($6 == "-") ? $5 : $6; Lc[$3] = $8; Lb[$3] = $9; Le += $7; Ln = $10}
			$1 == t && $2 == "nginx" {N[$3] = $4; Np[$3] = ($6 == "-") ? $5 : $6; Nc[$3] = $8; Nb[$3] = $9; Ne += $7; Nn = $10}
			END {
				n = 0; list = ""
				for (k = 1; k <= 1000; k++) if ((k in L) && (k in N)) {
					n++; lr[n] = L[k]; nr[n] = N[k]; r[n] = L[k] / N[k]; p[n] = (Np[k] > 0) ? Lp[k] / Np[k] : -1
					lc[n] = Lc[k]; nc[n] = Nc[k]; lb[n] = Lb[k]; nb[n] = Nb[k]
					list = list sprintf("%s%.2f", (list == "" ? "" : " "), L[k] / N[k])
				}
				res = (t !~ /^hs-/) ? "-" : "Levee " Ln ", nginx " Nn " (last round)"
				pm = med(p, n); ps = (pm < 0) ? "-" : sprintf("%.2f", pm)
				printf "| %s | %.0f | %.0f | %s | **%.2f** | %s | %.1f / %.1f | %d%% / %d%% | %d / %d | %s |\n",
					t, med(lr, n), med(nr, n), list, med(r, n), ps, med(lc, n), med(nc, n), med(lb, n), med(nb, n), Le, Ne, res
			}' "$RESULTS"
	done
	echo
	echo "Server CPU: user + system time of the Levee or nginx process over the run (/proc/PID/stat), divided by the requests (or connections) completed; busy: that time over the run's length. The backends are not in it."
	echo
	echo "All runs (test, server, round, per second, p50 or mean µs, p99 µs, errors, server CPU µs each, server busy %, note):"
	echo
	echo '```'
	cat "$RESULTS"
	echo '```'
} | tee "${OUT:-/dev/null}"

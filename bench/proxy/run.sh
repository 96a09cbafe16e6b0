#!/usr/bin/env bash
# Proxy load comparison: the backend directly, Levee without and with a
# circuit breaker (local, and shared through a Redis breaker store), nginx and
# HAProxy, all on 127.0.0.1, side by side in one run. See bench/README.md and
# docs/performance.md.
#
# Pinning: every proxy AND the backend run on CPU $PROXY_CPU (default 0), wrk
# runs on CPU $LOAD_CPU (default 1). The backend therefore shares the proxy's
# core: each proxied figure includes the backend's own cost, the same for
# every proxy. Each proxy is told to use one core (Levee: GOMAXPROCS=1,
# nginx: worker_processes 1, HAProxy: nbthread 1). The redis-server of
# levee-breaker-store also runs on CPU $PROXY_CPU, so the store's cost on the
# machine is in that target's req/s (its CPU is reported apart).
#
# Environment (all optional):
#   DURATION=10s      length of each wrk run (s or m suffix)
#   ROUNDS=3          rounds; each round runs every target once, the order
#                     rotating from round to round (reversed on even rounds)
#   CONNECTIONS=64    wrk connections; THREADS=1 wrk threads
#   PROXY_CPU=0 LOAD_CPU=1
#   BASE_PORT=18080   ports BASE_PORT..BASE_PORT+13 (+15 with BASELINE, +16..+20
#                     for the tracing targets) are used, and the first
#                     free port from BASE_PORT+14 for redis-server
#   NO_INSTALL=1      do not apt-get install missing tools
#   TARGETS="levee nginx"  run only these targets (default: all of direct levee
#                     levee-breaker levee-breaker-store levee-std-server
#                     levee-std-client levee-std-both nginx haproxy;
#                     levee-breaker-store is the levee-breaker route in a second
#                     Levee process with --breaker-store pointing at a
#                     redis-server the script starts (Debian's redis-server;
#                     only when this target is selected) and stops at exit;
#                     levee-std-server is --http-server=stdlib, levee-std-client
#                     --backend-client=stdlib, levee-std-both both;
#                     levee-trace-100 and levee-trace-1 are the levee route with
#                     tracing on, sampling 100 % and 1 %, exporting over
#                     OTLP/HTTP to a sink that drops the spans (the backend
#                     binary with -otlp-sink, on CPU $LOAD_CPU); nginx is always
#                     measured, every ratio is to it)
#   BASELINE=REV      also measure the levee route of the binary built from
#                     git revision REV (target levee-baseline, e.g.
#                     BASELINE=main or a commit): a change side by side with
#                     the code before it, in one run
#   OUT=file          also write the markdown table to this file
set -euo pipefail

DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-1}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BASE_PORT=${BASE_PORT:-18080}
OUT=${OUT:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_start bench

# --- targets --------------------------------------------------------------
ALL_TARGETS=(direct levee levee-breaker levee-breaker-store levee-std-server levee-std-client levee-std-both levee-trace-100 levee-trace-1 nginx haproxy)
BASELINE=${BASELINE:-}
[ -z "$BASELINE" ] || ALL_TARGETS=(direct levee-baseline "${ALL_TARGETS[@]:1}")
if [ -n "${TARGETS:-}" ]; then
	read -r -a WANTED <<<"$TARGETS"
	TARGETS=()
	for t in "${ALL_TARGETS[@]}"; do
		for w in "${WANTED[@]}" nginx; do
			if [ "$t" = "$w" ]; then TARGETS+=("$t"); break; fi
		done
	done
	for w in "${WANTED[@]}"; do
		case " ${ALL_TARGETS[*]} " in *" $w "*) ;; *) log "TARGETS: unknown target $w (known: ${ALL_TARGETS[*]})"; exit 2 ;; esac
	done
else
	TARGETS=("${ALL_TARGETS[@]}")
fi
# selected TARGET: whether TARGET is measured in this run.
selected() { case " ${TARGETS[*]} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# --- tools ----------------------------------------------------------------
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
if selected haproxy; then
	command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
fi
command -v taskset >/dev/null || need+=(util-linux)
if selected levee-breaker-store; then
	command -v redis-server >/dev/null || [ -x /usr/bin/redis-server ] || need+=(redis-server)
fi
install_missing "${need[@]}"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
REDIS_SERVER=$(command -v redis-server || echo /usr/bin/redis-server)

# --- build ----------------------------------------------------------------
log "building levee and the backend"
build_levee
if [ -n "$BASELINE" ]; then
	log "building levee at $BASELINE ($(git -C "$ROOT" rev-parse --short "$BASELINE"))"
	mkdir -p "$TMP/baseline-src"
	git -C "$ROOT" archive "$BASELINE" | tar -x -C "$TMP/baseline-src"
	build_levee "$TMP/baseline-src" "$TMP/levee-baseline"
fi
build_tools backend

BACKEND_PORT=$BASE_PORT
LEVEE_PORT=$((BASE_PORT + 1))
LEVEE_API=$((BASE_PORT + 2))
NGINX_PORT=$((BASE_PORT + 3))
HAPROXY_PORT=$((BASE_PORT + 4))

# taskset execs the command, so $! is the pinned process itself (a shell
# function run with & would be a subshell whose child survives kill).

# --- backend --------------------------------------------------------------
GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/backend" -listen "127.0.0.1:$BACKEND_PORT" >"$TMP/backend.log" 2>&1 &
BACKEND_PID=$!
PIDS+=("$BACKEND_PID")
wait_http "http://127.0.0.1:$BACKEND_PORT/"

# --- Levee ------------------------------------------------------------------
# start_levee NAME PORT API [FLAG...]: one Levee process with the route
# bench.local (and, for the first, bench-cb.local with a breaker); sets
# LEVEE_PID_<NAME>.
api_post() {
	curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' \
		"http://127.0.0.1:$1/entrypoints" -d "$2"
}
declare -A LEVEE_PIDS LEVEE_PORTS
start_levee() {
	local name=$1 port=$2 api=$3
	shift 3
	GOMAXPROCS=1 taskset -c "$PROXY_CPU" "${LEVEE_BIN:-$TMP/levee}" serve --docker=false \
		--http-listen "127.0.0.1:$port" --api-listen "127.0.0.1:$api" \
		--state-file "$TMP/$name-state.json" --access-log=false --log-level warn "$@" \
		>"$TMP/$name.log" 2>&1 &
	LEVEE_PIDS[$name]=$!
	LEVEE_PORTS[$name]=$port
	PIDS+=("$!")
	wait_http "http://127.0.0.1:$api/health" "127.0.0.1:$api" # the API answers only to its own names
	api_post "$api" '{"name":"bench","backends":[{"address":"127.0.0.1","port":'"$BACKEND_PORT"'}],"config":{"hostnames":["bench.local"]}}'
	wait_http "http://127.0.0.1:$port/" bench.local
}

# The four combinations of HTTP server and backend client, in separate
# processes (levee is the default: Levee's own server and client).
# add_breaker_route PORT API: the route bench-cb.local, with a breaker.
add_breaker_route() {
	api_post "$2" '{"name":"bench-cb","backends":[{"address":"127.0.0.1","port":'"$BACKEND_PORT"'}],"config":{"hostnames":["bench-cb.local"],"circuit_breaker":{"threshold":0.5,"min_requests":20,"cooldown_secs":10}}}'
	wait_http "http://127.0.0.1:$1/" bench-cb.local
}
start_levee levee "$LEVEE_PORT" "$LEVEE_API"
add_breaker_route "$LEVEE_PORT" "$LEVEE_API"
start_levee levee-std-server $((BASE_PORT + 6)) $((BASE_PORT + 7)) --http-server=stdlib
start_levee levee-std-client $((BASE_PORT + 8)) $((BASE_PORT + 9)) --backend-client=stdlib
start_levee levee-std-both $((BASE_PORT + 10)) $((BASE_PORT + 11)) --http-server=stdlib --backend-client=stdlib
LEVEE_PID=${LEVEE_PIDS[levee]}
if selected levee-baseline; then
	LEVEE_BIN="$TMP/levee-baseline" start_levee levee-baseline $((BASE_PORT + 5)) $((BASE_PORT + 15))
fi

# --- tracing ----------------------------------------------------------------
# levee-trace-100 and levee-trace-1: the levee route with every request
# (1 % of them) traced, spans batched to an OTLP/HTTP sink that drops them.
# The sink runs on the load's CPU: the export's cost on Levee's side (span
# building, batching, protobuf encoding, the POSTs) is in the row, the
# receiver's is not.
if selected levee-trace-100 || selected levee-trace-1; then
	SINK_PORT=$((BASE_PORT + 20))
	GOMAXPROCS=1 taskset -c "$LOAD_CPU" "$TMP/backend" -otlp-sink -listen "127.0.0.1:$SINK_PORT" >"$TMP/otlp-sink.log" 2>&1 &
	PIDS+=("$!")
	wait_http "http://127.0.0.1:$SINK_PORT/"
	trace_flags=(--tracing-endpoint "127.0.0.1:$SINK_PORT" --tracing-protocol http --tracing-insecure)
	selected levee-trace-100 && start_levee levee-trace-100 $((BASE_PORT + 16)) $((BASE_PORT + 17)) "${trace_flags[@]}" --tracing-sample-ratio 1
	selected levee-trace-1 && start_levee levee-trace-1 $((BASE_PORT + 18)) $((BASE_PORT + 19)) "${trace_flags[@]}" --tracing-sample-ratio 0.01
fi

# --- breaker store ----------------------------------------------------------
# levee-breaker-store: the same breaker route in a Levee process whose
# breakers share their state through a redis-server on loopback (default
# flush interval, 50 ms). redis-server is pinned with the proxies; without
# persistence; in its own temp dir. The port is the first free one from
# BASE_PORT+14 (a bind lost to a race moves on to the next).
REDIS_PID="" STORE_API=$((BASE_PORT + 13))
# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
start_redis() {
	local port=$((BASE_PORT + 14)) tries=0
	mkdir -p "$TMP/redis"
	while [ "$tries" -lt 20 ]; do
		if port_free "$port"; then
			taskset -c "$PROXY_CPU" "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 \
				--save "" --appendonly no --protected-mode no --dir "$TMP/redis" \
				>"$TMP/redis/redis.log" 2>&1 &
			REDIS_PID=$!
			for _ in $(seq 100); do
				grep -q "Ready to accept connections" "$TMP/redis/redis.log" && break
				kill -0 "$REDIS_PID" 2>/dev/null || break
				sleep 0.1
			done
			if kill -0 "$REDIS_PID" 2>/dev/null && grep -q "Ready to accept connections" "$TMP/redis/redis.log"; then
				PIDS+=("$REDIS_PID")
				REDIS_PORT=$port
				return 0
			fi
			kill "$REDIS_PID" 2>/dev/null || true
			wait "$REDIS_PID" 2>/dev/null || true
			REDIS_PID=""
		fi
		port=$((port + 1)) tries=$((tries + 1))
	done
	log "could not start redis-server (last log: $(tail -3 "$TMP/redis/redis.log" 2>/dev/null | tr '\n' ' '))"
	return 1
}
if selected levee-breaker-store; then
	start_redis
	log "redis-server $("$REDIS_SERVER" --version | awk '{print $3}') on 127.0.0.1:$REDIS_PORT"
	start_levee levee-breaker-store $((BASE_PORT + 12)) "$STORE_API" --breaker-store "redis://127.0.0.1:$REDIS_PORT/0"
	add_breaker_route $((BASE_PORT + 12)) "$STORE_API"
fi

# --- nginx ----------------------------------------------------------------
# master_process off: one process that is the worker, so its RSS is the
# proxy's RSS; it serves exactly like a single worker.
write_nginx_conf "$TMP/nginx" "127.0.0.1:$NGINX_PORT" "127.0.0.1:$BACKEND_PORT"
taskset -c "$PROXY_CPU" "$NGINX" -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" >"$TMP/nginx/stdout.log" 2>&1 &
NGINX_PID=$!
PIDS+=("$NGINX_PID")
wait_http "http://127.0.0.1:$NGINX_PORT/"

# --- HAProxy (only when measured) -------------------------------------------
HAPROXY_PID=""
if selected haproxy; then
	cat >"$TMP/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    option http-keep-alive
    option forwardfor
    http-reuse always
frontend fe
    bind 127.0.0.1:$HAPROXY_PORT
    http-request set-header X-Forwarded-Proto http
    http-request set-header X-Forwarded-Host %[req.hdr(host)]
    default_backend be
backend be
    server s1 127.0.0.1:$BACKEND_PORT
EOF
	taskset -c "$PROXY_CPU" "$HAPROXY" -db -f "$TMP/haproxy.cfg" >"$TMP/haproxy.log" 2>&1 &
	HAPROXY_PID=$!
	PIDS+=("$HAPROXY_PID")
	wait_http "http://127.0.0.1:$HAPROXY_PORT/"
fi

# --- load -----------------------------------------------------------------
declare -A URL HOSTH PID
URL[direct]="http://127.0.0.1:$BACKEND_PORT/"; HOSTH[direct]=bench.local; PID[direct]=$BACKEND_PID
URL[levee]="http://127.0.0.1:$LEVEE_PORT/"; HOSTH[levee]=bench.local; PID[levee]=$LEVEE_PID
URL[levee-breaker]="http://127.0.0.1:$LEVEE_PORT/"; HOSTH[levee-breaker]=bench-cb.local; PID[levee-breaker]=$LEVEE_PID
if selected levee-breaker-store; then
	URL[levee-breaker-store]="http://127.0.0.1:${LEVEE_PORTS[levee-breaker-store]}/"; HOSTH[levee-breaker-store]=bench-cb.local
	PID[levee-breaker-store]=${LEVEE_PIDS[levee-breaker-store]}
fi
for t in levee-std-server levee-std-client levee-std-both levee-baseline levee-trace-100 levee-trace-1; do
	selected "$t" || continue
	URL[$t]="http://127.0.0.1:${LEVEE_PORTS[$t]}/"; HOSTH[$t]=bench.local; PID[$t]=${LEVEE_PIDS[$t]}
done
URL[nginx]="http://127.0.0.1:$NGINX_PORT/"; HOSTH[nginx]=bench.local; PID[nginx]=$NGINX_PID
URL[haproxy]="http://127.0.0.1:$HAPROXY_PORT/"; HOSTH[haproxy]=bench.local; PID[haproxy]=$HAPROXY_PID

seconds() {
	case $1 in
	*m) echo $((${1%m} * 60)) ;;
	*s) echo "${1%s}" ;;
	*) echo "$1" ;;
	esac
}
DUR_S=$(seconds "$DURATION")

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# cpu_ticks PID: user + system CPU time of a process, in clock ticks. The
# command name (field 2) has no spaces for any process started here.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
CLK_TCK=$(getconf CLK_TCK)

# to_us VALUE: wrk latency ("812.00us", "1.23ms", "1.01s") in microseconds.
to_us() {
	awk -v v="$1" 'BEGIN {
		if (v ~ /us$/) { sub(/us$/, "", v); printf "%.0f", v }
		else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.0f", v * 1000 }
		else if (v ~ /m$/) { sub(/m$/, "", v); printf "%.0f", v * 60000000 }
		else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.0f", v * 1000000 }
		else { printf "%.0f", v }
	}'
}

# run_wrk TARGET SECONDS OUTFILE: load one target; sets RUN_RSS to the
# proxy's RSS in KiB sampled near the end of the run (1 s before it ends),
# and RUN_CPU / RUN_BCPU to the CPU ticks the proxy / the backend used
# during the run, and RUN_RCPU to the ticks redis-server used (0 without it).
RUN_RSS=0 RUN_CPU=0 RUN_BCPU=0 RUN_RCPU=0
run_wrk() {
	local t=$1 s=$2 out=$3 c0 b0 r0=0
	c0=$(cpu_ticks "${PID[$t]}")
	b0=$(cpu_ticks "$BACKEND_PID")
	[ -z "$REDIS_PID" ] || r0=$(cpu_ticks "$REDIS_PID")
	taskset -c "$LOAD_CPU" wrk -t"$THREADS" -c"$CONNECTIONS" -d"${s}s" --latency \
		-H "Host: ${HOSTH[$t]}" "${URL[$t]}" >"$out" 2>&1 &
	LOAD_PID=$!
	sleep $((s > 1 ? s - 1 : 0))
	RUN_RSS=$(rss_kib "${PID[$t]}")
	# wrk stops by itself after s seconds; bound the wait anyway.
	for _ in $(seq $(((s + 30) * 10))); do
		kill -0 "$LOAD_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill "$LOAD_PID" 2>/dev/null || true
	wait "$LOAD_PID" || true
	LOAD_PID=""
	RUN_CPU=$(($(cpu_ticks "${PID[$t]}") - c0))
	RUN_BCPU=$(($(cpu_ticks "$BACKEND_PID") - b0))
	RUN_RCPU=0
	[ -z "$REDIS_PID" ] || RUN_RCPU=$(($(cpu_ticks "$REDIS_PID") - r0))
}

log "warm-up: 2 s per target"
for t in "${TARGETS[@]}"; do
	run_wrk "$t" 2 "$TMP/warmup-$t.txt"
done

RESULTS="$TMP/results.tsv" # target round rps p50_us p99_us rss_kib errors proxy_cpu_us_per_req backend_cpu_us_per_req
: >"$RESULTS"
STORE_RTICKS=0 STORE_REQS=0 # redis-server's CPU ticks during, and the requests of, the levee-breaker-store runs
n=${#TARGETS[@]}
for round in $(seq "$ROUNDS"); do
	for i in $(seq 0 $((n - 1))); do
		# Rotate the start every round and reverse the order on even
		# rounds, so no target always runs right after the same neighbour.
		j=$(((i + round - 1) % n))
		[ $((round % 2)) -eq 1 ] || j=$((n - 1 - j))
		t=${TARGETS[$j]}
		f="$TMP/wrk-$t-$round.txt"
		run_wrk "$t" "$DUR_S" "$f"
		rss=$RUN_RSS
		rps=$(awk '/^Requests\/sec:/ {print $2}' "$f")
		p50=$(to_us "$(awk '$1 == "50%" {print $2}' "$f")")
		p99=$(to_us "$(awk '$1 == "99%" {print $2}' "$f")")
		errs=$(awk '/Non-2xx or 3xx responses:/ {n += $NF} /Socket errors:/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}' "$f")
		reqs=$(awk '/ requests in / {print $1}' "$f")
		cpu=$(awk -v t="$RUN_CPU" -v hz="$CLK_TCK" -v n="$reqs" 'BEGIN {printf "%.1f", t * 1000000 / hz / n}')
		bcpu=$(awk -v t="$RUN_BCPU" -v hz="$CLK_TCK" -v n="$reqs" 'BEGIN {printf "%.1f", t * 1000000 / hz / n}')
		if [ -z "$rps" ]; then
			log "wrk failed against $t:"; cat "$f" >&2; exit 1
		fi
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$round" "$rps" "$p50" "$p99" "$rss" "$errs" "$cpu" "$bcpu" >>"$RESULTS"
		if [ "$t" = levee-breaker-store ]; then
			STORE_RTICKS=$((STORE_RTICKS + RUN_RCPU)) STORE_REQS=$((STORE_REQS + reqs))
		fi
		log "round $round $t: ${rps} req/s p50 ${p50}us p99 ${p99}us rss ${rss}KiB errors ${errs} cpu ${cpu}us/req backend ${bcpu}us/req"
	done
done

# --- report ---------------------------------------------------------------
median() { sort -n | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
col() { awk -F'\t' -v t="$1" -v c="$2" '$1 == t {print $c}' "$RESULTS"; }
declare -A RPS P50 P99 RSS ERR CPU BCPU
for t in "${TARGETS[@]}"; do
	RPS[$t]=$(col "$t" 3 | median)
	P50[$t]=$(col "$t" 4 | median)
	P99[$t]=$(col "$t" 5 | median)
	RSS[$t]=$(col "$t" 6 | sort -n | tail -1)
	ERR[$t]=$(col "$t" 7 | awk '{n += $1} END {print n + 0}')
	CPU[$t]=$(col "$t" 8 | median)
	BCPU[$t]=$(col "$t" 9 | median)
done

{
	echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency; $ROUNDS rounds; proxies and backend on CPU $PROXY_CPU, wrk on CPU $LOAD_CPU"
	echo
	echo "| target | req/s (median) | p50 | p99 | RSS under load | req/s vs nginx | req/s vs direct | p99 vs nginx | proxy CPU per request | backend CPU per request | non-2xx + socket errors |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	for t in "${TARGETS[@]}"; do
		awk -v t="$t" -v rps="${RPS[$t]}" -v p50="${P50[$t]}" -v p99="${P99[$t]}" -v rss="${RSS[$t]}" \
			-v ng="${RPS[nginx]}" -v d="${RPS[direct]:-0}" -v ngp99="${P99[nginx]}" -v e="${ERR[$t]}" \
			-v cpu="${CPU[$t]}" -v bcpu="${BCPU[$t]}" 'BEGIN {
			label = (t == "direct") ? "direct (the backend: its RSS and CPU)" : t
			pc = (t == "direct") ? "-" : sprintf("%.1f µs", cpu)
			vd = (d > 0) ? sprintf("%.2f", rps / d) : "-"
			printf "| %s | %.0f | %.0f µs | %.0f µs | %.1f MiB | %.2f | %s | %.2f | %s | %.1f µs | %d |\n",
				label, rps, p50, p99, rss / 1024, rps / ng, vd, p99 / ngp99, pc, bcpu, e
		}'
	done
	echo
	echo "The machine's speed drifts between rounds (shared host); ratios taken within each round, then the median over rounds:"
	echo
	echo "| target | req/s vs nginx | p99 vs nginx | proxy CPU per request vs nginx | rounds (req/s vs nginx) |"
	echo "|---|---|---|---|---|"
	for t in "${TARGETS[@]}"; do
		[ "$t" = direct ] && continue
		awk -F'\t' -v t="$t" '
			$1 == "nginx" {ng[$2] = $3; ngp[$2] = $5; ngc[$2] = $8}
			$1 == t {r[$2] = $3; p[$2] = $5; c[$2] = $8}
			function med(a, n,   i, j, x) {
				for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
				return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			END {
				n = 0; list = ""
				for (k in r) if (k in ng) {
					n++; a[n] = r[k] / ng[k]; b[n] = p[k] / ngp[k]; d[n] = c[k] / ngc[k]
				}
				for (k = 1; k <= 1000; k++) if ((k in r) && (k in ng)) list = list sprintf("%s%.2f", (list == "" ? "" : " "), r[k] / ng[k])
				printf "| %s | %.2f | %.2f | %.2f | %s |\n", t, med(a, n), med(b, n), med(d, n), list
			}' "$RESULTS"
	done
	echo
	if [ -n "${RPS[levee-breaker]:-}" ] && [ -n "${RPS[levee]:-}" ]; then
		echo "Breaker cost: levee-breaker req/s is $(awk -v a="${RPS[levee-breaker]}" -v b="${RPS[levee]}" 'BEGIN {printf "%+.1f%%", (a / b - 1) * 100}') of levee's (medians); within rounds: $(awk -F'\t' '
			$1 == "levee" {l[$2] = $3} $1 == "levee-breaker" {b[$2] = $3}
			END {for (k = 1; k <= 1000; k++) if ((k in l) && (k in b)) printf "%+.1f%% ", (b[k] / l[k] - 1) * 100}' "$RESULTS")"
	fi
	# Within-round ratios between Levee variants: what a feature costs
	# against the same Levee without it, in the same round.
	pairs=()
	selected levee && selected levee-breaker && pairs+=("levee-breaker levee")
	selected levee-breaker && selected levee-breaker-store && pairs+=("levee-breaker-store levee-breaker")
	selected levee && selected levee-breaker-store && pairs+=("levee-breaker-store levee")
	selected levee && selected levee-baseline && pairs+=("levee levee-baseline")
	if [ ${#pairs[@]} -gt 0 ]; then
		echo
		echo "Levee variants against each other, ratios within each round, then the median over rounds:"
		echo
		echo "| target | vs | req/s ratio | p99 ratio | proxy CPU per request ratio | rounds (req/s ratio) |"
		echo "|---|---|---|---|---|---|"
		for pair in "${pairs[@]}"; do
			read -r a b <<<"$pair"
			awk -F'\t' -v a="$a" -v b="$b" '
				$1 == b {br[$2] = $3; bp[$2] = $5; bc[$2] = $8}
				$1 == a {ar[$2] = $3; ap[$2] = $5; ac[$2] = $8}
				function med(x, n,   i, j, v) {
					for (i = 2; i <= n; i++) { v = x[i]; for (j = i - 1; j > 0 && x[j] > v; j--) x[j + 1] = x[j]; x[j + 1] = v }
					return (n % 2) ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
				}
				END {
					n = 0; list = ""
					for (k = 1; k <= 1000; k++) if ((k in ar) && (k in br)) {
						n++; r[n] = ar[k] / br[k]; p[n] = ap[k] / bp[k]; c[n] = (bc[k] > 0) ? ac[k] / bc[k] : 0
						list = list sprintf("%s%.3f", (list == "" ? "" : " "), ar[k] / br[k])
					}
					printf "| %s | %s | %.3f | %.2f | %.2f | %s |\n", a, b, med(r, n), med(p, n), med(c, n), list
				}' "$RESULTS"
		done
	fi
	if selected levee-breaker-store; then
		echo
		echo "Breaker store: redis-server $("$REDIS_SERVER" --version | awk '{print $3}') on CPU $PROXY_CPU used $(awk -v t="$STORE_RTICKS" -v hz="$CLK_TCK" -v n="$STORE_REQS" 'BEGIN {printf "%.2f s of CPU during the levee-breaker-store runs (%.2f µs per request)", t / hz, (n > 0) ? t * 1000000 / hz / n : 0}'). The store process's levee_breaker_store_* metrics at the end of the run (GET /metrics on its API port; histogram buckets left out):"
		echo
		echo '```'
		curl -fsS "http://127.0.0.1:$STORE_API/metrics" | grep -E '^levee_breaker_store_' | grep -v '_bucket{' || echo "(no levee_breaker_store_* metrics)"
		echo '```'
	fi
	echo
	echo "CPU per request: user + system time of the process over the run (/proc/PID/stat) divided by the requests wrk completed."
	echo
	echo "All rounds (target, round, req/s, p50 µs, p99 µs, RSS KiB, errors, proxy CPU µs/req, backend CPU µs/req):"
	echo
	echo '```'
	sort -k1,1 -k2,2n "$RESULTS"
	echo '```'
} | tee "${OUT:-/dev/null}"

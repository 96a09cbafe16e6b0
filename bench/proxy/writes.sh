#!/usr/bin/env bash
# A steady route's throughput with and without ten API writes a second,
# with 10,000 API routes loaded (issue 20: "ten writes a second cost a
# steady route <= 5 % of its throughput").
#
#   ROUNDS=3 DURATION=8s bench/proxy/writes.sh
#
# Levee (GOMAXPROCS=1) and the bench backend share CPU $PROXY_CPU (0), wrk
# runs on CPU $LOAD_CPU (1). 10,000 routes go in with one bulk request; the
# writer replaces r0..r9 in turn, one PUT every 100 ms, each changing the
# backend port. Each round measures the steady route quiet, then under the
# writes; the ratio within a round is what counts. The writes' own
# latency under that load (each PUT until its answer is read) is given
# per round as put_p50 and put_p99. Needs wrk, taskset and python3.
set -euo pipefail
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8s}
BASE_PORT=${BASE_PORT:-18990}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_start writes
BACKEND=127.0.0.1:$BASE_PORT PROXY=127.0.0.1:$((BASE_PORT + 1)) API=127.0.0.1:$((BASE_PORT + 2))

build_levee
build_tools backend
python3 - "$TMP/bulk.json" "$BASE_PORT" <<'PY'
import json, sys
ops = [{"op": "create", "entrypoint": {"name": f"r{i}", "backends": [{"address": "127.0.0.1", "port": int(sys.argv[2])}],
        "config": {"hostnames": [f"r{i}.test"]}}} for i in range(10000)]
open(sys.argv[1], "w").write(json.dumps({"operations": ops}))
PY

taskset -c "$PROXY_CPU" "$TMP/backend" -listen "$BACKEND" >/dev/null 2>&1 &
PIDS+=("$!")
GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$TMP/levee" serve --docker=false --http-listen "$PROXY" --api-listen "$API" \
	--state-file "$TMP/state.json" --access-log=false --log-level warn >"$TMP/levee.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 100); do curl -fsS -o /dev/null "http://$API/health" 2>/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' "http://$API/entrypoints/bulk" --data-binary @"$TMP/bulk.json"
curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' "http://$API/entrypoints" \
	-d '{"name":"steady","backends":[{"address":"127.0.0.1","port":'"$BASE_PORT"'}],"config":{"hostnames":["steady.test"]}}'
for _ in $(seq 50); do curl -fsS -o /dev/null -H 'Host: steady.test' "http://$PROXY/" 2>/dev/null && break; sleep 0.1; done

# The writer is one process on the load CPU with a keep-alive connection
# (a curl process per write would charge its start-up to whichever CPU it
# lands on, the proxy's included, and measure curl rather than Levee).
# writer LATENCIES: each PUT's time to its answer, in ms, a line each.
writer() {
	exec taskset -c "$LOAD_CPU" python3 - "$API" "$1" <<'PY'
import http.client, json, sys, time
conn = http.client.HTTPConnection(sys.argv[1])
out = open(sys.argv[2], "w", buffering=1)
n = 0
while True:
    n += 1
    rid = f"r{n % 10}"
    body = json.dumps({"name": rid, "backends": [{"address": "127.0.0.1", "port": 18000 + n % 900}],
                       "config": {"hostnames": [f"{rid}.test"]}})
    start = time.perf_counter()
    conn.request("PUT", f"/entrypoints/{rid}", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    resp.read()
    if resp.status != 200:
        sys.exit(f"PUT {rid}: {resp.status}")
    out.write(f"{(time.perf_counter() - start) * 1000:.3f}\n")
    time.sleep(0.1)
PY
}
# quantile FILE Q: the Q-quantile (0..1) of the numbers in FILE, nearest rank.
quantile() {
	sort -n "$1" | awk -v q="$2" '{v[NR] = $1} END {if (NR == 0) {print "-"; exit} i = int(q * NR + 0.999999); if (i < 1) i = 1; print v[i] " ms"}'
}
echo "round	mode	req/s	p99	put_p50	put_p99	puts"
for round in $(seq "$ROUNDS"); do
	for mode in quiet writes; do
		wp="" lat="$TMP/put.$round"
		if [ "$mode" = writes ]; then writer "$lat" & wp=$!; fi
		out=$(taskset -c "$LOAD_CPU" wrk -t1 -c64 -d"$DURATION" --latency -H 'Host: steady.test' "http://$PROXY/")
		puts="-	-	-"
		if [ -n "$wp" ]; then
			kill "$wp"
			wait "$wp" 2>/dev/null || true
			puts="$(quantile "$lat" 0.5)	$(quantile "$lat" 0.99)	$(wc -l <"$lat")"
		fi
		echo "$round	$mode	$(echo "$out" | awk '/Requests\/sec/ {print $2}')	$(echo "$out" | awk '/ 99%/ {print $2}')	$puts"
	done
done

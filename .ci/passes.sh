#!/usr/bin/env bash
# make test: every pass of the test suite, each run to the end even when an
# earlier one failed, so that one failure never hides another combination's.
#
# Each pass's full log is kept in $TEST_LOG_DIR (default bin/test-logs, one
# file per pass, replaced by the next run); at the end a summary names each
# failed pass and, for each failed test, its name and the last lines it
# printed. The exit status is non-zero when any pass failed.
#
# The passes:
#   format   gofmt and go vet
#   main     go test -race ./... (every package, the real-engine tests too)
#   combos   the router's, the API's and the binary's tests again on the
#            other three --http-server x --backend-client combinations
#            (LEVEE_TEST_* reach the router's tests, LEVEE_* the binary);
#            e2e/conformance runs all four itself
#   bench    go vet and the tests of the benchmark module
#
# PASSES="main combos" runs a subset; GO_TEST_FLAGS adds flags to each go test.
set -u
cd "$(dirname "$0")/.."
logdir=${TEST_LOG_DIR:-bin/test-logs}
mkdir -p "$logdir"
passes=${PASSES:-format main stdlib-levee levee-stdlib stdlib-stdlib bench}
flags=${GO_TEST_FLAGS:-}
failed=()

# summarise LOG: the name of each failed test, the first 10 failure
# messages it printed (t.Error and t.Fatal lines, "file_test.go:N: ...",
# with the lines they continue on; at most 40 lines: a test that dumps a
# log at cleanup would otherwise hide them) and the last 15 lines it
# printed. go test -v heads each test's output with
# "=== RUN|CONT|NAME <name>" lines, so a line belongs to the test named last.
summarise() {
  awk '
    /^=== (RUN|CONT|NAME|PAUSE)[ \t]/ { cur = $3; next }
    /^[ \t]*--- FAIL: / {
      name = $3
      printf "  FAIL %s\n", name
      for (i = 0; i < nmsg[name]; i++) printf "    > %s\n", msg[name, i]
      n = count[name]; start = n > 15 ? n - 15 : 0
      for (i = start; i < n; i++) printf "      %s\n", buf[name, i % 15]
      next
    }
    /^(panic:|FAIL[ \t]|.*DATA RACE)/ { printf "  %s\n", $0 }
    cur != "" && /^[ \t]+[A-Za-z0-9_.]+_test\.go:[0-9]+: / { inmsg[cur] = 1; nhead[cur]++ }
    cur != "" && /^[ \t]+[A-Za-z0-9_.]+\.go:[0-9]+: / && !/_test\.go:[0-9]+: / { inmsg[cur] = 0 }
    cur != "" && inmsg[cur] && nhead[cur] <= 10 && nmsg[cur] < 40 && !/^[ \t]*--- / {
      msg[cur, nmsg[cur]++] = substr($0, 1, 300)
    }
    cur != "" { buf[cur, count[cur] % 15] = $0; count[cur]++ }
  ' "$1"
}

# run NAME CMD...: runs one pass, logging to $logdir/NAME.log; -v output is
# filtered to verdict lines on the terminal.
run() {
  local name=$1; shift
  local log="$logdir/$name.log"
  echo "== pass $name: $*"
  local start=$SECONDS
  "$@" > "$log" 2>&1
  local rc=$?
  grep -E '^\s*--- (PASS|FAIL|SKIP)|^(ok|FAIL|panic)|DATA RACE' "$log"
  echo "== pass $name: exit $rc after $((SECONDS - start)) s (full log: $log)"
  if [ $rc -ne 0 ]; then failed+=("$name"); fi
}

format() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || echo .))
  if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; return 1; fi
  go vet ./...
  # The Kubernetes provider's wiring is built only with its tag.
  go vet -tags kubernetes ./cmd/levee
  go test -tags kubernetes -count=1 -run Kubernetes ./cmd/levee
  # 0-RTT through quic-go's client, which races with itself under -race.
  go test -count=1 -run 'TestEarlyData|TestZeroRTT' ./router/proxy ./router/httpx/h3
}

combo() {
  LEVEE_TEST_SERVER=$1 LEVEE_TEST_CLIENT=$2 LEVEE_HTTP_SERVER=$1 LEVEE_BACKEND_CLIENT=$2 \
    go test -race -count=1 -v $flags -skip 'TestComposeDemo' ./router/... ./api ./e2e
}

bench() { (cd bench && go vet ./... && go test -count=1 $flags ./...); }

for pass in $passes; do
  case $pass in
    format) run format format ;;
    main) run main go test -race -timeout 25m -count=1 -v $flags ./... ;;
    stdlib-levee) run "$pass" combo stdlib levee ;;
    levee-stdlib) run "$pass" combo levee stdlib ;;
    stdlib-stdlib) run "$pass" combo stdlib stdlib ;;
    bench) run bench bench ;;
    *) echo "unknown pass $pass (want: format main stdlib-levee levee-stdlib stdlib-stdlib bench)"; failed+=("$pass") ;;
  esac
done

if [ ${#failed[@]} -eq 0 ]; then
  echo "== every pass passed ($passes)"
  exit 0
fi
echo
echo "== ${#failed[@]} pass(es) failed: ${failed[*]}"
for pass in "${failed[@]}"; do
  [ -f "$logdir/$pass.log" ] || continue
  echo "-- $pass ($logdir/$pass.log):"
  summarise "$logdir/$pass.log"
done
exit 1

// Package breakerbench compares Levee's circuit breaker with
// github.com/sony/gobreaker/v2 on the same workload: a request that
// succeeds (closed path) and a request against an open breaker (rejection
// path), from one goroutine and from GOMAXPROCS goroutines. The figures are
// in docs/performance.md; run them with
//
//	cd bench && go test -run='^$' -bench . -benchmem -count=3 ./breaker/
package breakerbench

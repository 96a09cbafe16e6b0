// Package fleetbench measures Levee's fleet breakers (breaker/fleet) on a
// real redis-server started on a free loopback port:
//
//   - BenchmarkRequestPath: the request path's cost (Admit + Report) of a
//     local breaker and of one shared through the store (flushing every
//     50ms in the background), from GOMAXPROCS goroutines;
//   - BenchmarkTripPropagation: three replicas (three stores, three Redis
//     connections); the time from the trip being applied on the deciding
//     replica to the two others (p50/p99), and from the last failure
//     reported to the whole fleet open;
//   - BenchmarkVersusGobreaker: three replicas of Levee's fleet breaker
//     and three of github.com/sony/gobreaker/v2's DistributedCircuitBreaker
//     (v2.4.0, with a SET NX lock on the same Redis) take the same
//     requests from concurrent goroutines: requests per second and
//     outcomes lost (reported minus counted in Redis).
//
// Run them with
//
//	cd bench && go test -run='^$' -bench RequestPath -benchmem -count=5 ./fleet/
//	cd bench && go test -run='^$' -bench TripPropagation -benchtime=200x -count=1 ./fleet/
//	cd bench && go test -run='^$' -bench VersusGobreaker -benchtime=300x -count=2 ./fleet/
//
// They need redis-server in PATH (skipped without it).
package fleetbench

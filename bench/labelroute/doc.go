// Package labelroute measures label-to-route latency on the real Docker
// Engine: how long after `docker start` returns a labelled container is
// reachable through Levee (first 200), and how long after its removal
// returns Levee stops sending traffic to it (first 503).
//
// The measurement is TestLabelToRoute, which runs only with
// LEVEE_BENCH_DOCKER=1 (it needs an engine, builds images and takes about a
// minute); plain `go test ./...` skips it.
package labelroute

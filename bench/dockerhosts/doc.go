// Package dockerhosts measures the Docker provider of several hosts
// (docker.NewHosts, as `levee serve --docker-host a=… --docker-host b=…`
// builds it) against N simulated engines: in-process HTTP servers that
// answer the Engine API calls the provider makes (/_ping, /containers/json,
// /containers/{id}/json, /events), each with C labelled running containers
// publishing their port, so that every container is a routable backend of
// a remote host.
//
// BenchmarkEvent starts one new labelled container on the last engine per
// iteration: the engine sends its start event, the provider inspects it,
// joins the N hosts' sets, parses the union and sends the update; the
// iteration ends when the consumer sees the container's backend. Reported
// per start event: wall time (ns/op), allocs and bytes (the fake engine's
// side of the inspect and the event is included, the same for every N),
// the event → update latency p50/p99 (µs), and the live heap after the
// first sync divided by N (heap-B/engine). The container is removed again
// with the timer stopped; cpu-ns/event is the process's CPU time over the
// starts and the removals, per event. The sub-benchmarks single and
// single-400 are the provider of one engine (docker.New) with 50 and 400
// containers, today's single-host figures.
//
// The debounce window is 1 µs, so that each event is published on its own
// and the latency is the provider's work, not the window (Levee's default
// is 100 ms after a publish: --docker-debounce in docs/operations.md).
//
//	cd bench && go test -run='^$' -bench . -benchmem -benchtime=300x -count=1 ./dockerhosts/
//
// TestFakeEngines is the fast check that the simulated engines and the
// provider understand each other; it runs with `go test ./...`.
package dockerhosts

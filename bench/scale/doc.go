// Package scale measures Levee's control plane and route table at size:
// 10,000 API entrypoints (snapshot build and swap, host match, a request that
// matches and is answered without a backend), 1,000 synthetic containers fed
// through the label parser and the router (the Docker provider's rebuild),
// and the resident memory of a `levee serve` process holding 10,000 routes.
//
// Inputs go through the same public paths production uses: API payloads
// through config.DecodeEntrypoint, containers through labels.Parser, the
// state file in the API store's format. The benchmarks only run with
// -bench; TestScaleInputs (fast) checks that the inputs are routed as the
// benchmarks assume, and TestServeRSS runs only with LEVEE_BENCH_RSS=1.
package scale

// Package conformance is Levee's adversarial HTTP conformance suite: a
// black-box, table-driven test of what the proxy does with hostile or
// unusual bytes on either side. It needs no Docker and runs under
// `go test ./...`; `go test ./e2e/conformance` runs it alone.
//
// # Model
//
// TestMain builds the real binary once (go build ./cmd/levee from the
// module root). TestConformance then starts one `levee serve` process per
// combination of the two HTTP/1.1 implementations Levee can use,
//
//	--http-server=levee|stdlib     (router/httpx/server, or net/http's server)
//	--backend-client=levee|stdlib  (Levee's own client, or net/http's Transport)
//
// each with --docker=false, listeners on free loopback ports, a state file
// in a temp dir, JSON logs, and short limits so that a vector that waits
// on one ends in seconds (levee_test.go: --request-body-timeout 1s,
// --response-write-timeout 1s, --backend-body-timeout 1s,
// --tunnel-idle-timeout 2s, --max-client-conns 64). Every vector runs on
// all four processes, as subtests named
//
//	TestConformance/server=levee/client=stdlib/<group>/<vector>
//
// A vector gets its own raw backend and its own API entrypoint (route
// <group>-<vector>, host <group>-<vector>.conf.test), so the vectors of a
// combination run side by side on its process (-test.parallel defaults to
// 16 here: they wait on sockets, not the CPU). Vectors marked serial (the
// connection limit, which counts every client of the process) run alone,
// first.
//
// The raw backend (backend_test.go) is a net.Listener that records every
// byte of every connection, reads requests with the suite's strict
// HTTP/1.1 reader (wire_test.go) only to know where each ends, and answers
// each with the exact bytes its script writes: two responses in one
// write, a 101 nobody asked for, an answer held until the next bytes
// arrive, a stall, a close. The raw client (client_test.go) writes exact
// bytes and reads answers with the same strict reader; every read has a
// deadline. Synchronisation is by events (the backend signals each byte,
// request and close); the few sleeps are the behaviour under test (a slow
// backend, a slow uploader), never a wait for something to happen.
//
// # What a vector asserts
//
//   - what the client gets: the status (and 1xx before it), the key
//     headers (X-Levee-Diagnostic on Levee's own answers), the body and
//     trailers, and what becomes of the connection (closed, or usable);
//   - what the backend reads: exactly the request lines listed, in order,
//     each HTTP/1.1 with one unambiguous framing, and nothing else: no
//     smuggled request, no partial request for one Levee refused;
//   - that the next request is the one the client sent: after the vector,
//     a second client sends GET /after-other (the request Levee may put on
//     the pooled backend connection), then the first GET /after-same when
//     its connection is still open; each must get the backend's answer to
//     itself, never a leftover of an earlier response. Where the backend
//     left bytes on its connection, the follow-up must arrive on a new one;
//   - for limits, that the wait ends within the limit plus 5 s: limits are
//     correctness bounds ("it ends"), not timings.
//
// On failure the subtest logs every byte each client and the backend
// received (%q) and Levee's log lines about the route.
//
// # Groups
//
// front: request framing (CL+TE, duplicate, signed, hex and huge lengths,
// transfer-coding lists, obs-fold, chunk sizes, bare LF, control bytes in
// values and targets, target forms, Host rules, versions 0.9 to 2.0).
// pipeline: three pipelined requests split into two packets at every byte.
// back: response framing (leftovers after 204/304/HEAD/Content-Length, CL
// with TE, unsolicited or mismatched 101, 103 Early Hints, trailers, a
// GET body that a backend reads as a second request, late answers).
// limits: slow or silent clients and backends, idle tunnels, the
// connection limit, slow uploads against the circuit breaker. forwarded:
// Forwarded, X-Real-IP, Front-End-Https, the whole X-Forwarded-* family
// and underscore spellings (of those, of X-Levee-* and of a forward-auth
// route's identity and credential fields) from an untrusted client; two
// Authorization fields, and two of a forward-auth credential, refused 400
// bad-header. paths: every spelling of a guarded /admin (slash
// runs, ";" parameters, case, trailing dots and spaces, dot segments,
// encoded separators) against basic auth, an IP allow-list and forward
// auth beside an open /, also as a raw HTTP/2 :path over TLS (h2_test.go);
// a "#" in the query; a redirectRegex group that would pick another site.
//
// # Adding a vector
//
// Add a row to the group's table: frontVectors (front_test.go: the bytes,
// net/http's status on them, and Levee's outcome), backVectors
// (back_test.go: the client's request, the backend's script, what the
// client must get), forwardedVectors; or a vector{name, run} to a group's
// suite function for a flow of its own, starting with v := e.start(...).
// Write the correct behaviour, not the current one: where in doubt,
// net/http's server and httputil.ReverseProxy are the reference.
//
// # Levee's server and net/http's
//
// On front vectors Levee's server must give net/http's status (the netHTTP
// column; TestNetHTTPReference checks the column against a plain net/http
// server, so a change in Go's verdicts shows up there), with these
// documented differences:
//
//   - its refusals carry X-Levee-Diagnostic: bad-request (net/http's carry
//     no diagnostic header), and close the connection;
//   - an HTTP/1.1 request with an empty Host is refused 400 (net/http
//     accepts it, and then no route matches: 404 no-route);
//   - a chunk size of 2^64-1 is refused 400 at once (net/http waits for
//     that many bytes);
//   - a target with a control byte or without a leading slash gets a 400
//     answer, never a silent close.
//
// Beyond the server, Levee's router answers a body that cannot be read
// 400 bad-request-body, with either server, without a backend ever seeing
// the request, and closes a connection whose request used
// Transfer-Encoding once it has answered (RFC 9112 6.3).
package conformance

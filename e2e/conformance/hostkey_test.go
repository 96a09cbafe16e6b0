package conformance

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// Limits kept per Host (sourceCriterion=host): every spelling of the
// route's host that routing takes for it (a port, a trailing dot, upper
// case, IPv6-style brackets) counts against the same limit, or a client
// would multiply its allowance by respelling the Host header.

func hostKeySuite() []vector {
	return []vector{
		{name: "rate-limit", run: runHostKeyRateLimit},
		{name: "in-flight", run: runHostKeyInFlight},
	}
}

// hostSpellings are other spellings of host that route to it.
func hostSpellings(host string) []string {
	up := strings.ToUpper(host)
	return []string{host + ":1", host + ":20", host + ".", up, up + ".:80", "[" + host + "]"}
}

// expectHostLimited sends GET /v on a new connection for each spelling
// and checks that each is refused with 429 and diag.
func expectHostLimited(v *vt, diag string) {
	v.Helper()
	for _, h := range hostSpellings(v.host) {
		c := v.dial()
		if err := c.send("GET /v HTTP/1.1\r\nHost: " + h + "\r\n\r\n"); err != nil {
			v.Fatalf("Host %q: sending: %v", h, err)
		}
		_, m, err := c.final("GET", 5*time.Second)
		switch {
		case err != nil:
			v.Errorf("Host %q: no answer: %v", h, err)
		case m.status != 429 || m.header("X-Levee-Diagnostic") != diag:
			v.Errorf("Host %q: answered %q (X-Levee-Diagnostic %q), want 429 %s: the limit of %s", h, m.start, m.header("X-Levee-Diagnostic"), diag, v.host)
		}
	}
}

// One request an hour per host: after the first, every spelling is
// refused.
func runHostKeyRateLimit(t *testing.T, e *env) {
	v := e.start(t, backendOpts{}, nil, map[string]any{
		"rate_limit": map[string]any{"average": 1, "period": "1h", "burst": 1, "source_criterion": "host"},
	})
	v.ownAnswer(v.dial(), "/first")
	expectHostLimited(v, "rate-limited")
	v.checkBackendRead([]string{"GET /first"})
}

// One request in flight per host: while the backend holds the first,
// every spelling is refused.
func runHostKeyInFlight(t *testing.T, e *env) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	v := e.start(t, backendOpts{}, func(x *exchange) {
		if x.req.target == "/held" {
			<-release
		}
		x.answer()
	}, map[string]any{
		"in_flight": map[string]any{"amount": 1, "source_criterion": "host"},
	})
	held := v.dial()
	if err := v.get(held, "/held"); err != nil {
		t.Fatal(err)
	}
	if len(v.b.waitRequests(1, 5*time.Second)) != 1 {
		t.Fatal("the backend never got the held request")
	}
	expectHostLimited(v, "too-many-in-flight")
	free()
	if _, m, err := held.final("GET", 5*time.Second); err != nil || m.status != 200 {
		t.Errorf("the held request: %v %v", m, err)
	}
	v.checkBackendRead([]string{"GET /held"})
}

package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// vector is one adversarial case. run gets a fresh subtest; it creates its
// own backend and route through v := e.start(...), so that vectors of one
// combination can run side by side on its levee process.
type vector struct {
	name string
	// serial vectors run alone on their process, before the others (they
	// count the process's client connections).
	serial bool
	run    func(t *testing.T, e *env)
}

// allVectors is the suite: every group's table.
func allVectors() []vector {
	var all []vector
	for _, group := range []struct {
		name    string
		vectors []vector
	}{
		{"front", frontSuite()},
		{"pipeline", pipelineSuite()},
		{"back", backSuite()},
		{"limits", limitSuite()},
		{"forwarded", forwardedSuite()},
		{"paths", pathSuite()},
		{"hostkey", hostKeySuite()},
	} {
		for _, v := range group.vectors {
			v.name = group.name + "/" + v.name
			all = append(all, v)
		}
	}
	return all
}

// env is one combination's levee process.
type env struct {
	server, client string
	// tls: the clients speak HTTP/1.1 over TLS to a TLS listener (routes
	// are TLS routes, served with Levee's default certificate).
	tls bool
	p   *leveeProc
}

// TestConformance runs every vector against Levee on the four
// combinations of --http-server and --backend-client, then on both
// servers over TLS (Levee's own HTTP/1.1 server behind router/httpx/tlsmux,
// and net/http's).
func TestConformance(t *testing.T) {
	vectors := allVectors()
	names := map[string]bool{}
	for _, v := range vectors {
		if names[v.name] {
			t.Fatalf("two vectors named %s", v.name)
		}
		names[v.name] = true
	}
	for _, server := range []string{"levee", "stdlib"} {
		t.Run("server="+server, func(t *testing.T) {
			t.Parallel()
			for _, client := range []string{"levee", "stdlib"} {
				t.Run("client="+client, func(t *testing.T) {
					t.Parallel()
					runVectors(t, &env{server: server, client: client, p: startLevee(t, server, client, false)}, vectors)
				})
			}
			t.Run("tls", func(t *testing.T) {
				t.Parallel()
				runVectors(t, &env{server: server, client: "levee", tls: true, p: startLevee(t, server, "levee", true)}, vectors)
			})
		})
	}
}

// runVectors runs the vectors on one combination's process.
func runVectors(t *testing.T, e *env, vectors []vector) {
	t.Cleanup(func() {
		if err := e.p.Exited(); err != nil {
			t.Errorf("%v; its output:\n%s", err, e.p.Output())
		}
	})
	// Serial vectors run here, alone; the parallel ones start once this
	// function has returned.
	for _, v := range vectors {
		if v.serial {
			t.Run(v.name, func(t *testing.T) { v.run(t, e) })
		}
	}
	for _, v := range vectors {
		if !v.serial {
			t.Run(v.name, func(t *testing.T) {
				t.Parallel()
				v.run(t, e)
			})
		}
	}
}

// vt is one running vector: its subtest, backend, route and clients.
type vt struct {
	*testing.T
	e       *env
	b       *backend
	route   string
	host    string
	clients []*rawClient
	// cutAllowed: the request's body streams (chunked), so a backend may
	// have received its head and valid chunks before the body turned out
	// malformed; Levee then closes that connection, and the backend sees
	// a request cut short, never a complete one.
	cutAllowed bool
}

// start gives the running vector its own backend (answering with script,
// nil for the default answer) and its own route (with the extra route
// config fields), named after the vector.
func (e *env) start(t *testing.T, opts backendOpts, script func(*exchange), config map[string]any) *vt {
	t.Helper()
	name := routeName(t.Name())
	v := &vt{T: t, e: e, route: name, host: name + ".conf.test"}
	v.b = newBackend(t, opts, script)
	t.Cleanup(func() {
		if t.Failed() {
			v.dump()
		}
	})
	e.p.createRoute(t, v.route, v.host, v.b.addr, config)
	return v
}

// routeName turns TestConformance/server=x/client=y/group/vector into
// group-vector, an entrypoint name ([a-z0-9][a-z0-9_-]*).
func routeName(testName string) string {
	parts := strings.Split(testName, "/")
	if len(parts) > 3 {
		parts = parts[3:]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(strings.Join(parts, "-")) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// dump logs every byte the vector's clients and backend received and what
// Levee logged about its route.
func (v *vt) dump() {
	v.Helper()
	for i, c := range v.clients {
		got := c.received()
		if len(got) > 4<<10 {
			got = got[:4<<10] + fmt.Sprintf("... (%d bytes)", len(got))
		}
		v.Logf("client %d received %q", i, got)
	}
	v.Logf("%s", v.b.dump())
	if lines := v.e.p.logsAbout(v.route, v.host); len(lines) > 0 {
		v.Logf("levee logged:\n%s", strings.Join(lines, "\n"))
	}
	if err := v.e.p.Exited(); err != nil {
		v.Logf("%v", err)
	}
}

// dial opens a client connection to the proxy; what it receives is
// logged if the vector fails.
func (v *vt) dial() *rawClient {
	v.Helper()
	c := v.dialUnlisted()
	v.clients = append(v.clients, c)
	return c
}

// dialUnlisted is dial for vectors that open many connections and report
// their bytes themselves.
func (v *vt) dialUnlisted() *rawClient {
	v.Helper()
	sni := ""
	if v.e.tls {
		sni = v.host
	}
	c, err := dialRaw(v.e.p.frontAddr, sni)
	if err != nil {
		v.Fatalf("dialing the proxy: %v", err)
	}
	v.Cleanup(c.close)
	return c
}

// expand puts the vector's host into a request template.
func (v *vt) expand(s string) string { return strings.ReplaceAll(s, "{host}", v.host) }

// get sends a plain GET for path on c.
func (v *vt) get(c *rawClient, path string) error {
	return c.send("GET " + path + " HTTP/1.1\r\nHost: " + v.host + "\r\n\r\n")
}

// ownAnswer sends GET path on c and checks that the answer is the
// backend's answer to that very request.
func (v *vt) ownAnswer(c *rawClient, path string) {
	v.Helper()
	if err := v.get(c, path); err != nil {
		v.Errorf("GET %s: sending: %v", path, err)
		return
	}
	_, m, err := c.final("GET", 5*time.Second)
	if err != nil {
		v.Errorf("GET %s: no answer: %v (client received %q)", path, err, c.received())
		return
	}
	switch {
	case m.status == 200 && string(m.body) != "answer:"+path:
		v.Errorf("GET %s answered %q with body %q: not its own answer %q", path, m.start, m.body, "answer:"+path)
	case m.status != 200:
		v.Errorf("GET %s answered %q (X-Levee-Diagnostic %q) with body %q, want the backend's 200 %q", path, m.start, m.get("X-Levee-Diagnostic"), m.body, "answer:"+path)
	}
}

// connAfter is what must happen to the client's connection after the
// vector's answer.
type connAfter int

const (
	// announced: the answer's Connection header decides. With "close" the
	// connection must end; without, it must stay usable.
	announced connAfter = iota
	// closes: the connection must end (after any answer) with nothing more.
	closes
	// staysOpen: the connection must stay usable (and the answer must not
	// say Connection: close).
	staysOpen
	// unusable: the connection carries no more HTTP (a tunnel, or the
	// vector saw it end).
	unusable
)

// afterAnswer checks what happens to c after its answer m and reports
// whether c can carry another request.
func (v *vt) afterAnswer(c *rawClient, m *message, want connAfter) bool {
	v.Helper()
	closeSaid := m != nil && hasToken(m.get("Connection"), "close")
	switch want {
	case unusable:
		return false
	case staysOpen:
		if closeSaid {
			v.Errorf("answer %q says Connection: close; the connection must stay open", m.start)
			return false
		}
		return true
	case announced:
		if !closeSaid {
			return true
		}
	}
	ended, extra := c.ends(3 * time.Second)
	if !ended {
		v.Errorf("the client connection is still open 3s after the answer; it must be closed")
	}
	if len(extra) > 0 {
		v.Errorf("after the answer the client received %q more; want nothing", extra)
	}
	return false
}

func hasToken(values []string, token string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// followUps sends the next requests, first from a second client, then on
// same when it is still usable (nil when not), checks that each gets its
// own answer, and returns the lines the backend must read for them.
func (v *vt) followUps(same *rawClient) []string {
	v.Helper()
	other := v.dial()
	v.ownAnswer(other, "/after-other")
	lines := []string{"GET /after-other"}
	if same != nil {
		v.ownAnswer(same, "/after-same")
		lines = append(lines, "GET /after-same")
	}
	return lines
}

// checkBackendRead checks that the backend read exactly want ("METHOD
// target"), in order, each as HTTP/1.1 with one unambiguous framing.
func (v *vt) checkBackendRead(want []string) {
	v.Helper()
	reqs := v.b.waitRequests(len(want), 2*time.Second)
	if got := linesOf(reqs); !slices.Equal(got, want) {
		v.Errorf("the backend read %q, want exactly %q", got, want)
	}
	for _, r := range reqs {
		v.checkFraming(r)
	}
	v.b.mu.Lock()
	defer v.b.mu.Unlock()
	for _, c := range v.b.conns {
		if v.cutAllowed && c.parseErr != nil && strings.Contains(c.parseErr.Error(), "connection ended inside a message") {
			continue
		}
		if c.parseErr != nil && c.upgradedAt < 0 {
			v.Errorf("backend connection %d: Levee sent bytes that are not a well-framed request: %v", c.idx, c.parseErr)
		}
	}
}

// checkFraming checks one request the backend read: HTTP/1.1, at most one
// Content-Length of digits, never with Transfer-Encoding, which may only
// be "chunked".
func (v *vt) checkFraming(r *breq) {
	v.Helper()
	if r.proto != "HTTP/1.1" {
		v.Errorf("the backend read %q: want HTTP/1.1", r.start)
	}
	cl, te := r.get("Content-Length"), r.get("Transfer-Encoding")
	switch {
	case len(cl) > 0 && len(te) > 0:
		v.Errorf("the backend read %q with both Content-Length %q and Transfer-Encoding %q (head %q)", r.line(), cl, te, r.head)
	case len(cl) > 1:
		v.Errorf("the backend read %q with %d Content-Length fields (head %q)", r.line(), len(cl), r.head)
	case len(te) > 1 || len(te) == 1 && !strings.EqualFold(te[0], "chunked"):
		v.Errorf("the backend read %q with Transfer-Encoding %q (head %q)", r.line(), te, r.head)
	}
}

// diagnostic expectations (outcome.diag).
const (
	noDiag = ""
	// refused: the HTTP server refused the request before routing it:
	// Levee's server says X-Levee-Diagnostic: bad-request; net/http's
	// says nothing.
	refused = "(refused by the server)"
	// anyDiag: some X-Levee-Diagnostic, whatever its value.
	anyDiag = "(any)"
)

// checkDiag checks the X-Levee-Diagnostic of answer m against want.
func (v *vt) checkDiag(m *message, want string) {
	v.Helper()
	got := m.get("X-Levee-Diagnostic")
	if want == refused {
		want = noDiag
		if v.e.server == "levee" {
			want = "bad-request"
		}
	}
	switch {
	case want == anyDiag && len(got) != 1:
		v.Errorf("answer %q carries X-Levee-Diagnostic %q, want one", m.start, got)
	case want == noDiag && len(got) > 0:
		v.Errorf("answer %q carries X-Levee-Diagnostic %q, want none", m.start, got)
	case want != anyDiag && want != noDiag && (len(got) != 1 || got[0] != want):
		v.Errorf("answer %q carries X-Levee-Diagnostic %q, want %q", m.start, got, want)
	}
}

// checkStatus checks the answer's status.
func (v *vt) checkStatus(m *message, want int) {
	v.Helper()
	if m.status != want {
		v.Errorf("answer %q, want status %d", m.start, want)
	}
}

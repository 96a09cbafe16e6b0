package conformance

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// Back-side framing: what a backend answers. The client sends one request
// (GET /v unless the row says otherwise); the backend's script answers it
// with exact bytes; the row says what the client must get. Then a second
// client sends GET /after-other, which Levee may give to the pooled
// backend connection, and the first client GET /after-same when its
// connection is still open: each must get its own answer, never a
// leftover of the scripted one. Where the scripted answer left bytes on
// the backend connection, the follow-up must go over a new one.

// leftover is what a scripted answer leaves on the backend connection:
// a whole response, so that a proxy reusing the connection would hand it
// to the next client as its answer.
const leftover = "HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\nanswer:leftover"

const upgradeRequest = "GET /v HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

const websocket101 = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
	"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"

type backVector struct {
	name   string
	req    string            // default GET /v
	script func(x *exchange) // the backend's answer to /v
	config map[string]any    // extra route config

	// The client's view.
	interim  []int             // 1xx statuses before the final answer
	status   int               //
	diag     string            // X-Levee-Diagnostic (noDiag, anyDiag or a value)
	body     *string           // the exact body, when given
	headers  map[string]string // exact single value; "" means absent
	trailers map[string]string // exact trailer values
	cutShort bool              // the body ends before its length, and the connection with it
	within   time.Duration     // default 5s
	after    connAfter
	check    func(v *vt, interim []*message, m *message)

	// The backend's view.
	newConn  bool // the follow-up must arrive on a new connection
	noTunnel bool // the answering connection gets nothing after the request, and is closed
}

func str(s string) *string { return &s }

// writes is a script that writes the given bytes and, with then, goes on.
func writes(s string, then ...func(x *exchange)) func(x *exchange) {
	return func(x *exchange) {
		if x.write(s) != nil {
			return
		}
		for _, f := range then {
			f(x)
		}
	}
}

func closeConn(x *exchange) { x.close() }
func rawMode(x *exchange)   { x.tunnel(nil) }

func backVectors() []backVector {
	slowTimeout := map[string]any{"backend_timeout": "1s"}
	return []backVector{
		{name: "two-responses-one-write", script: writes("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none" + leftover),
			status: 200, body: str("one"), newConn: true},
		{name: "bytes-after-content-length", script: writes("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none-and-then-some"),
			status: 200, body: str("one"), newConn: true},
		{name: "204-with-body", script: writes("HTTP/1.1 204 No Content\r\n\r\n" + leftover),
			status: 204, body: str(""), newConn: true},
		{name: "304-with-body", script: writes("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n" + leftover),
			status: 304, body: str(""), headers: map[string]string{"ETag": `"v1"`}, newConn: true},
		{name: "head-answered-with-body", req: "HEAD /v HTTP/1.1\r\nHost: {host}\r\n\r\n",
			script: writes(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(leftover), leftover)),
			status: 200, body: str(""), newConn: true},
		{name: "content-length-and-chunked", script: writes("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
			status: 200, body: str("hello"),
			check: func(v *vt, _ []*message, m *message) {
				if m.has("Content-Length") && m.has("Transfer-Encoding") {
					v.Errorf("the client's answer carries both Content-Length %q and Transfer-Encoding %q", m.get("Content-Length"), m.get("Transfer-Encoding"))
				}
			}},
		// A 101 nobody asked for: no tunnel, the client's next bytes are
		// HTTP again and never reach that backend connection.
		{name: "unsolicited-101", script: writes(websocket101, rawMode),
			status: 502, diag: anyDiag, noTunnel: true, newConn: true},
		{name: "101-other-protocol", req: upgradeRequest,
			script: writes("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n", rawMode),
			status: 502, diag: anyDiag, noTunnel: true, newConn: true},
		{name: "103-early-hints", script: writes("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" +
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
			interim: []int{103}, status: 200, body: str("ok"),
			check: func(v *vt, interim []*message, _ *message) {
				if len(interim) > 0 && interim[0].header("Link") != "</style.css>; rel=preload" {
					v.Errorf("the 103 carries Link %q, want %q", interim[0].get("Link"), "</style.css>; rel=preload")
				}
			}},
		{name: "trailers", script: writes("HTTP/1.1 200 OK\r\nTrailer: X-Checksum\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"5\r\nhello\r\n0\r\nX-Checksum: abc\r\n\r\n"),
			status: 200, body: str("hello"), trailers: map[string]string{"X-Checksum": "abc"}},
		{name: "204-with-content-length-0", script: writes("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"),
			status: 204, body: str(""), headers: map[string]string{"Content-Length": ""}},
		{name: "204-with-content-length-5", script: writes("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n"),
			status: 204, body: str(""), headers: map[string]string{"Content-Length": ""}},
		{name: "bare-lf-response", script: writes("HTTP/1.1 200 OK\nContent-Length: 2\n\nok"),
			status: 200, body: str("ok")},
		{name: "close-delimited-body", script: writes("HTTP/1.0 200 OK\r\n\r\nbody-until-close", closeConn),
			status: 200, body: str("body-until-close")},
		{name: "close-without-answer", script: closeConn, status: 502, diag: "backend-unreachable"},
		{name: "partial-head-then-close", script: writes("HTTP/1.1 200 OK\r\nContent-Le", closeConn),
			status: 502, diag: "backend-unreachable"},
		{name: "not-http", script: writes("SSH-2.0-OpenSSH_9.6\r\n", closeConn), status: 502, diag: "backend-unreachable"},
		{name: "negative-content-length", script: writes("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nhello"),
			status: 502, diag: "backend-unreachable", newConn: true},
		{name: "conflicting-content-length", script: writes("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nhello"),
			status: 502, diag: "backend-unreachable", newConn: true},
		{name: "body-cut-short", script: writes("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", closeConn),
			status: 200, cutShort: true, after: unusable},
		{name: "no-answer-504", config: slowTimeout, script: func(*exchange) {},
			status: 504, diag: "backend-timeout", within: time.Second + margin, newConn: true},
		// The answer comes after Levee gave up: it must not be the next
		// client's answer.
		{name: "answer-after-timeout", config: slowTimeout,
			script: func(x *exchange) { time.Sleep(1500 * time.Millisecond); x.answer() },
			status: 504, diag: "backend-timeout", within: time.Second + margin, newConn: true},
	}
}

func backSuite() []vector {
	var out []vector
	for _, bv := range backVectors() {
		out = append(out, vector{name: bv.name, run: bv.run})
	}
	return append(out,
		vector{name: "get-body-smuggle-immediate", run: func(t *testing.T, e *env) { runGetBodySmuggle(t, e, false) }},
		vector{name: "get-body-smuggle-lazy", run: func(t *testing.T, e *env) { runGetBodySmuggle(t, e, true) }},
		vector{name: "websocket-tunnel", run: runWebSocketTunnel},
	)
}

// vScript answers /v with the vector's script and everything else with
// the default answer.
func vScript(script func(x *exchange)) func(x *exchange) {
	return func(x *exchange) {
		if x.req.target == "/v" {
			script(x)
			return
		}
		x.answer()
	}
}

func (bv backVector) run(t *testing.T, e *env) {
	v := e.start(t, backendOpts{}, vScript(bv.script), bv.config)
	req := bv.req
	if req == "" {
		req = "GET /v HTTP/1.1\r\nHost: {host}\r\n\r\n"
	}
	method, _, _ := strings.Cut(req, " ")
	within := bv.within
	if within == 0 {
		within = 5 * time.Second
	}
	c := v.dial()
	if err := c.send(v.expand(req)); err != nil {
		t.Fatalf("sending: %v", err)
	}
	interim, m, err := c.final(method, within)
	switch {
	case bv.cutShort:
		if m == nil || !errors.Is(err, errIncomplete) || isTimeout(err) {
			t.Fatalf("answer %v (%v): want the head, a body cut short and the connection closed within %s", m, err, within)
		}
	case err != nil:
		t.Fatalf("no answer within %s: %v", within, err)
	}
	var gotInterim []int
	for _, i := range interim {
		gotInterim = append(gotInterim, i.status)
	}
	if !slices.Equal(gotInterim, bv.interim) {
		v.Errorf("interim answers %v before %q, want %v", gotInterim, m.start, bv.interim)
	}
	v.checkStatus(m, bv.status)
	v.checkDiag(m, bv.diag)
	if bv.body != nil && string(m.body) != *bv.body {
		v.Errorf("answer body %q, want %q", m.body, *bv.body)
	}
	for name, want := range bv.headers {
		if got := m.get(name); want == "" && len(got) > 0 || want != "" && (len(got) != 1 || got[0] != want) {
			v.Errorf("answer %q carries %s %q, want %q", m.start, name, got, want)
		}
	}
	for name, want := range bv.trailers {
		if got := m.trailer(name); got != want {
			v.Errorf("answer %q has trailer %s %q, want %q (trailers %q)", m.start, name, got, want, m.trailers)
		}
	}
	if bv.check != nil {
		bv.check(v, interim, m)
	}
	// The connection that answered /v.
	reqs := v.b.requests()
	if len(reqs) == 0 {
		t.Fatalf("the backend read no request")
	}
	vreq := reqs[0]
	tunnel := bv.noTunnel && m.status == 101
	if tunnel {
		// The defect this vector is about: show where the client's next
		// bytes go, without waiting on an answer that cannot come.
		_ = c.send(v.expand("GET /after-same HTTP/1.1\r\nHost: {host}\r\n\r\n"))
		if v.b.waitFor(2*time.Second, func() bool { return len(v.b.conns[vreq.conn].raw) > vreq.end }) {
			v.Errorf("the client's next bytes went through a tunnel: the backend connection received %q after the request", v.b.conn(vreq.conn).raw[vreq.end:])
		}
		c.close()
	}
	var same *rawClient
	if !tunnel && v.afterAnswer(c, m, bv.after) {
		same = c
	}
	lines := append([]string{method + " /v"}, v.followUps(same)...)
	v.checkBackendRead(lines)
	if bv.newConn {
		for _, r := range v.b.requests()[1:] {
			if r.conn == vreq.conn {
				v.Errorf("%s went over backend connection %d, the one that answered %s (it cannot be reused); want a new connection", r.line(), r.conn, vreq.line())
			}
		}
	}
	if bv.noTunnel && !tunnel {
		v.b.waitFor(margin, func() bool { return v.b.conns[vreq.conn].ended })
		st := v.b.conn(vreq.conn)
		if after := st.raw[vreq.end:]; after != "" {
			v.Errorf("after its 101 the backend connection received %q: the client's bytes went through a tunnel", after)
		}
		if !st.ended {
			v.Errorf("the backend connection that answered 101 is still open %s later; Levee must close it", margin)
		}
	}
}

// A GET with a body that holds a request, to a backend that does not read
// GET bodies and so answers twice: the second answer must never reach a
// client. Immediate: the backend answers /admin at once. Lazy: it answers
// /admin only when more bytes arrive on that connection, so that Levee
// cannot see it before reusing the connection.
func runGetBodySmuggle(t *testing.T, e *env, lazy bool) {
	script := func(x *exchange) {
		if x.req.target == "/admin" && lazy {
			x.hold(answerFor("/admin", false))
			return
		}
		x.answer()
	}
	v := e.start(t, backendOpts{getBodiesAreRequests: true}, script, nil)
	inner := "GET /admin HTTP/1.1\r\nHost: x\r\n\r\n"
	c := v.dial()
	if err := c.send(fmt.Sprintf("GET /public HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", v.host, len(inner), inner)); err != nil {
		t.Fatal(err)
	}
	_, m, err := c.final("GET", 5*time.Second)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if m.status != 200 || string(m.body) != "answer:/public" {
		v.Errorf("answer %q %q, want the backend's answer to /public", m.start, m.body)
	}
	open := v.afterAnswer(c, m, announced)
	var same *rawClient
	if open {
		same = c
	}
	follow := v.followUps(same)
	for i, cl := range v.clients {
		if got := cl.received(); strings.Contains(got, "answer:/admin") {
			v.Errorf("client %d received the answer to the smuggled /admin: %q", i, got)
		}
	}
	// The backend may read /admin (it is its own parsing), nothing else.
	var got []string
	for _, l := range v.b.lines() {
		if l != "GET /admin" {
			got = append(got, l)
		}
	}
	if want := append([]string{"GET /public"}, follow...); !slices.Equal(got, want) {
		v.Errorf("the backend read %q, want %q (and /admin, which it parsed from the body)", v.b.lines(), want)
	}
}

// An upgrade that the backend accepts is a tunnel both ways.
func runWebSocketTunnel(t *testing.T, e *env) {
	v := e.start(t, backendOpts{}, vScript(writes(websocket101, echoTunnel)), nil)
	c := v.dial()
	openTunnel(v, c)
	v.followUps(nil)
}

// echoTunnel answers every chunk of tunnelled bytes with "pong:" + them.
func echoTunnel(x *exchange) {
	x.tunnel(func(x *exchange, data []byte) { x.write("pong:" + string(data)) })
}

// openTunnel upgrades c to a WebSocket tunnel and checks a round trip.
func openTunnel(v *vt, c *rawClient) {
	v.Helper()
	if err := c.send(v.expand(upgradeRequest)); err != nil {
		v.Fatal(err)
	}
	_, m, err := c.final("GET", 5*time.Second)
	if err != nil {
		v.Fatalf("no answer to the upgrade: %v", err)
	}
	if m.status != 101 || !strings.EqualFold(m.header("Upgrade"), "websocket") || !hasToken(m.get("Connection"), "upgrade") {
		v.Fatalf("answer %q with Upgrade %q, Connection %q; want 101 websocket, Connection: Upgrade", m.start, m.get("Upgrade"), m.get("Connection"))
	}
	reqs := v.b.requests()
	if len(reqs) == 0 || !strings.EqualFold(reqs[0].header("Upgrade"), "websocket") || !hasToken(reqs[0].get("Connection"), "upgrade") {
		v.Errorf("the backend read the upgrade without Upgrade: websocket / Connection: Upgrade")
	}
	if err := c.send("ping"); err != nil {
		v.Fatal(err)
	}
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, len("pong:ping"))
	if _, err := io.ReadFull(c.br, buf); err != nil || string(buf) != "pong:ping" {
		v.Fatalf("through the tunnel: got %q (%v), want %q", buf, err, "pong:ping")
	}
}

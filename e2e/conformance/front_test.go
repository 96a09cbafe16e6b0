package conformance

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Front-side framing: what a client sends. Each vector's bytes go to
// Levee on a fresh connection; the outcome says what the client must get,
// what the backend must read, and what becomes of the connection. The
// netHTTP column is net/http's server's status on the same bytes (checked
// by TestNetHTTPReference): Levee's must be the same except where a row
// says otherwise (and then the comment says why).

// outcome is what Levee must do with a front vector.
type outcome struct {
	status  int
	diag    string   // X-Levee-Diagnostic of the answer (noDiag, refused, or a value)
	forward []string // "METHOD target" the backend must read for it, in order
	body    string   // the body the first forwarded request must carry
	after   connAfter
}

func refusal(status int) outcome { return outcome{status: status, diag: refused, after: closes} }

// badBody: the head was fine, the body's framing was not; Levee's router
// answers (whichever server) and nothing reaches the backend.
func badBody() outcome { return outcome{status: 400, diag: "bad-request-body", after: closes} }

// bodyTimeoutStdlib: a body net/http's server keeps waiting for, answered
// by Levee's router once the request body timeout passes.
var bodyTimeoutStdlib = outcome{status: 408, diag: "client-timeout", after: closes}

func forwarded(after connAfter, body string, lines ...string) outcome {
	return outcome{status: 200, forward: lines, body: body, after: after}
}

type frontVector struct {
	name string
	req  string // the bytes; {host} is the vector's host
	// netHTTP is net/http's server's status for req; hang: no answer.
	netHTTP int
	want    outcome
	// stdlib replaces want with --http-server=stdlib (a documented
	// difference of Levee's server from net/http's).
	stdlib *outcome
	// within bounds the wait for the answer (default 5s).
	within time.Duration
	// hostSent is the Host the backend must read (default {host}).
	hostSent string
	// check is an extra check of the answer.
	check func(v *vt, m *message)
}

const hang = -1

// smuggleTail follows every vector whose connection must close after the
// answer: it must never be read as a request.
const smuggleTail = "GET /smuggled HTTP/1.1\r\nHost: {host}\r\n\r\n"

const chunkedHello = "5\r\nhello\r\n0\r\n\r\n"

func post(fields, body string) string {
	return "POST /v HTTP/1.1\r\nHost: {host}\r\n" + fields + "\r\n" + body
}

func getWith(fields string) string { return "GET /v HTTP/1.1\r\nHost: {host}\r\n" + fields + "\r\n" }

func frontVectors() []frontVector {
	emptyHostStdlib := outcome{status: 404, diag: "no-route", after: announced}
	return []frontVector{
		// Content-Length and Transfer-Encoding together: chunked wins
		// (RFC 9112 6.3) and the connection closes after the answer.
		{name: "cl-te", req: post("Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", chunkedHello), netHTTP: 200,
			want: forwarded(closes, "hello", "POST /v")},
		{name: "te-cl", req: post("Transfer-Encoding: chunked\r\nContent-Length: 4\r\n", chunkedHello), netHTTP: 200,
			want: forwarded(closes, "hello", "POST /v")},
		{name: "cl-duplicate-same", req: post("Content-Length: 5\r\nContent-Length: 5\r\n", "hello"), netHTTP: 200,
			want: forwarded(announced, "hello", "POST /v")},
		{name: "cl-duplicate-different", req: post("Content-Length: 5\r\nContent-Length: 6\r\n", "hello!"), netHTTP: 400, want: refusal(400)},
		{name: "cl-list", req: post("Content-Length: 5, 5\r\n", "hello"), netHTTP: 400, want: refusal(400)},
		{name: "cl-plus", req: post("Content-Length: +5\r\n", "hello"), netHTTP: 400, want: refusal(400)},
		{name: "cl-minus", req: post("Content-Length: -5\r\n", "hello"), netHTTP: 400, want: refusal(400)},
		{name: "cl-hex", req: post("Content-Length: 0x5\r\n", "hello"), netHTTP: 400, want: refusal(400)},
		{name: "cl-huge", req: post("Content-Length: 99999999999999999999\r\n", "hello"), netHTTP: 400, want: refusal(400)},
		{name: "cl-empty", req: post("Content-Length: \r\n", "hello"), netHTTP: 400, want: refusal(400)},

		{name: "te-gzip-chunked", req: post("Transfer-Encoding: gzip, chunked\r\n", chunkedHello), netHTTP: 501, want: refusal(501)},
		{name: "te-chunked-chunked", req: post("Transfer-Encoding: chunked, chunked\r\n", chunkedHello), netHTTP: 501, want: refusal(501)},
		{name: "te-identity", req: post("Transfer-Encoding: identity\r\nContent-Length: 5\r\n", "hello"), netHTTP: 501, want: refusal(501)},
		{name: "te-two-fields", req: post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", chunkedHello), netHTTP: 501, want: refusal(501)},
		{name: "te-uppercase", req: post("Transfer-Encoding: CHUNKED\r\n", chunkedHello), netHTTP: 200,
			want: forwarded(closes, "hello", "POST /v")},
		{name: "te-obs-fold", req: post("Transfer-Encoding:\r\n chunked\r\n", chunkedHello), netHTTP: 200,
			want: forwarded(closes, "hello", "POST /v")},
		// net/http ignores Transfer-Encoding on HTTP/1.0 (so the body is
		// empty and the chunk bytes are never a request: 1.0 closes).
		{name: "te-http10", req: "POST /v HTTP/1.0\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedHello, netHTTP: 200,
			want: forwarded(closes, "", "POST /v")},

		{name: "obs-fold", req: getWith("X-Fold: a\r\n b\r\n"), netHTTP: 200, want: forwarded(announced, "", "GET /v"),
			check: func(v *vt, _ *message) {
				if r := v.b.requests(); len(r) > 0 && r[0].header("X-Fold") != "a b" {
					v.Errorf("the backend read X-Fold %q, want %q", r[0].header("X-Fold"), "a b")
				}
			}},
		{name: "space-before-first-field", req: "GET /v HTTP/1.1\r\n X-Lead: a\r\nHost: {host}\r\n\r\n", netHTTP: 400, want: refusal(400)},
		{name: "space-before-colon", req: getWith("X-Spaced : a\r\n"), netHTTP: 400, want: refusal(400)},

		{name: "chunk-extension", req: post("Transfer-Encoding: chunked\r\n", "5;ext=1\r\nhello\r\n0\r\n\r\n"), netHTTP: 200,
			want: forwarded(closes, "hello", "POST /v")},
		{name: "chunk-size-leading-space", req: post("Transfer-Encoding: chunked\r\n", " 5\r\nhello\r\n0\r\n\r\n"), netHTTP: 400, want: badBody()},
		{name: "chunk-size-trailing-space", req: post("Transfer-Encoding: chunked\r\n", "5 \r\nhello\r\n0\r\n\r\n"), netHTTP: 200,
			want: forwarded(closes, "hello", "POST /v")},
		{name: "chunk-size-0x", req: post("Transfer-Encoding: chunked\r\n", "0x5\r\nhello\r\n0\r\n\r\n"), netHTTP: 400, want: badBody()},
		// 2^64-1: net/http waits for that many bytes; Levee must refuse
		// at once, not when the body timeout ends the wait.
		// The difference of --http-server=stdlib: net/http's chunked
		// reader takes the size and waits for the chunk, so Levee answers
		// 408 once --request-body-timeout passes (docs/operations.md).
		{name: "chunk-size-16f", req: post("Transfer-Encoding: chunked\r\n", "ffffffffffffffff\r\nhello\r\n0\r\n\r\n"), netHTTP: hang,
			want: badBody(), within: 2 * time.Second, stdlib: &bodyTimeoutStdlib},
		{name: "chunk-size-17f", req: post("Transfer-Encoding: chunked\r\n", "fffffffffffffffff\r\nhello\r\n0\r\n\r\n"), netHTTP: 400, want: badBody()},
		{name: "chunk-overrun", req: post("Transfer-Encoding: chunked\r\n", "5\r\nhelloXX\r\n0\r\n\r\n"), netHTTP: 400, want: badBody()},
		{name: "chunk-bare-lf", req: post("Transfer-Encoding: chunked\r\n", "5\nhello\n0\n\n"), netHTTP: 400, want: badBody()},

		{name: "bare-lf", req: "GET /v HTTP/1.1\nHost: {host}\n\n", netHTTP: 200, want: forwarded(announced, "", "GET /v")},
		{name: "bare-cr", req: "GET /v HTTP/1.1\rHost: {host}\r\n\r\n", netHTTP: 400, want: refusal(400)},
		{name: "value-nul", req: getWith("X-C: a\x00b\r\n"), netHTTP: 400, want: refusal(400)},
		{name: "value-cr", req: getWith("X-C: a\rb\r\n"), netHTTP: 400, want: refusal(400)},
		{name: "value-tab", req: getWith("X-C: a\tb\r\n"), netHTTP: 200, want: forwarded(announced, "", "GET /v"),
			check: func(v *vt, _ *message) {
				if r := v.b.requests(); len(r) > 0 && r[0].header("X-C") != "a\tb" {
					v.Errorf("the backend read X-C %q, want %q", r[0].header("X-C"), "a\tb")
				}
			}},
		{name: "value-del", req: getWith("X-C: a\x7fb\r\n"), netHTTP: 400, want: refusal(400)},
		{name: "target-nul", req: "GET /a\x00b HTTP/1.1\r\nHost: {host}\r\n\r\n", netHTTP: 400, want: refusal(400)},
		{name: "target-cr", req: "GET /a\rb HTTP/1.1\r\nHost: {host}\r\n\r\n", netHTTP: 400, want: refusal(400)},
		{name: "target-tab", req: "GET /a\tb HTTP/1.1\r\nHost: {host}\r\n\r\n", netHTTP: 400, want: refusal(400)},
		{name: "target-del", req: "GET /a\x7fb HTTP/1.1\r\nHost: {host}\r\n\r\n", netHTTP: 400, want: refusal(400)},
		{name: "target-space", req: "GET /a b HTTP/1.1\r\nHost: {host}\r\n\r\n", netHTTP: 400, want: refusal(400)},
		{name: "target-no-slash", req: "GET v HTTP/1.1\r\nHost: {host}\r\n\r\n", netHTTP: 400, want: refusal(400)},
		// The authority of an absolute-form target is the host (RFC 9112
		// 3.2.2): it routes, and it is the Host the backend reads.
		{name: "absolute-form", req: "GET http://{host}/v HTTP/1.1\r\nHost: {host}\r\n\r\n", netHTTP: 200,
			want: forwarded(announced, "", "GET /v")},
		{name: "absolute-form-other-host", req: "GET http://{host}/v HTTP/1.1\r\nHost: elsewhere.invalid\r\n\r\n", netHTTP: 200,
			want: forwarded(announced, "", "GET /v")},
		{name: "absolute-form-unrouted", req: "GET http://nowhere.invalid/v HTTP/1.1\r\nHost: {host}\r\n\r\n", netHTTP: 200,
			want: outcome{status: 404, diag: "no-route", after: announced}},

		{name: "host-missing", req: "GET /v HTTP/1.1\r\n\r\n", netHTTP: 400, want: refusal(400)},
		{name: "host-twice-same", req: getWith("Host: {host}\r\n"), netHTTP: 400, want: refusal(400)},
		{name: "host-twice-different", req: getWith("Host: elsewhere.invalid\r\n"), netHTTP: 400, want: refusal(400)},
		// Documented difference: Levee's server refuses an empty Host;
		// net/http accepts it, and then no route matches.
		{name: "host-empty", req: "GET /v HTTP/1.1\r\nHost: \r\n\r\n", netHTTP: 200, want: refusal(400), stdlib: &emptyHostStdlib},
		{name: "host-invalid", req: "GET /v HTTP/1.1\r\nHost: a b\r\n\r\n", netHTTP: 400, want: refusal(400)},

		{name: "http09", req: "GET /v\r\n\r\n", netHTTP: 400, want: refusal(400)},
		{name: "http09-version", req: "GET /v HTTP/0.9\r\nHost: {host}\r\n\r\n", netHTTP: 505, want: refusal(505)},
		{name: "http10", req: "GET /v HTTP/1.0\r\nHost: {host}\r\n\r\n", netHTTP: 200, want: forwarded(closes, "", "GET /v")},
		{name: "http10-keep-alive", req: "GET /v HTTP/1.0\r\nHost: {host}\r\nConnection: keep-alive\r\n\r\n", netHTTP: 200,
			want: forwarded(staysOpen, "", "GET /v"),
			check: func(v *vt, m *message) {
				if !hasToken(m.get("Connection"), "keep-alive") {
					v.Errorf("answer to an HTTP/1.0 keep-alive request has Connection %q; it must say keep-alive", m.get("Connection"))
				}
			}},
		{name: "http20", req: "GET /v HTTP/2.0\r\nHost: {host}\r\n\r\n", netHTTP: 505, want: refusal(505)},
		{name: "http-lowercase", req: "GET /v http/1.1\r\nHost: {host}\r\n\r\n", netHTTP: 400, want: refusal(400)},
		{name: "expect-unknown", req: getWith("Expect: bogus\r\n"), netHTTP: 417, want: refusal(417)},
	}
}

func frontSuite() []vector {
	var out []vector
	for _, fv := range frontVectors() {
		out = append(out, vector{name: fv.name, run: fv.run})
	}
	return out
}

func (fv frontVector) outcome(server string) outcome {
	if server == "stdlib" && fv.stdlib != nil {
		return *fv.stdlib
	}
	return fv.want
}

// bytesFor is what the client sends: the request, and the smuggled tail
// when the connection must close after the answer.
func (fv frontVector) bytesFor(want outcome) string {
	if want.after == closes {
		return fv.req + smuggleTail
	}
	return fv.req
}

func (fv frontVector) run(t *testing.T, e *env) {
	want := fv.outcome(e.server)
	v := e.start(t, backendOpts{}, nil, nil)
	c := v.dial()
	data := v.expand(fv.bytesFor(want))
	if want.diag == "bad-request-body" {
		// The head first, then the body once the backend got a
		// connection or 300ms passed: a body refused for its framing
		// must never reach a backend as a complete request, however its
		// bytes arrive.
		i := strings.Index(data, "\r\n\r\n") + 4
		if err := c.send(data[:i]); err != nil {
			t.Fatalf("sending: %v", err)
		}
		v.b.waitFor(300*time.Millisecond, func() bool { return len(v.b.conns) > 0 })
		data = data[i:]
	}
	start := time.Now()
	if err := c.send(data); err != nil {
		t.Fatalf("sending: %v", err)
	}
	within := fv.within
	if within == 0 {
		within = 5 * time.Second
	}
	method, _, _ := strings.Cut(fv.req, " ")
	_, m, err := c.final(method, within)
	if err != nil {
		t.Fatalf("no answer after %s: %v; want status %d with a response (never a silent close)", time.Since(start).Round(time.Millisecond), err, want.status)
	}
	v.checkStatus(m, want.status)
	v.checkDiag(m, want.diag)
	if want.status == 200 && len(want.forward) > 0 {
		_, target, _ := strings.Cut(want.forward[0], " ")
		if string(m.body) != "answer:"+target {
			v.Errorf("answer body %q, want the backend's %q", m.body, "answer:"+target)
		}
	}
	if fv.check != nil {
		fv.check(v, m)
	}
	// A chunked body streams to the backend (Levee buffers only bodies of
	// known length before dialling); when its framing breaks, the backend
	// connection is closed with the request cut short.
	v.cutAllowed = (want.diag == "bad-request-body" || want.diag == "client-timeout") &&
		strings.Contains(fv.req, "Transfer-Encoding: chunked")
	if len(want.forward) == 0 && !v.cutAllowed {
		if n := v.b.connCount(); n > 0 {
			v.Errorf("Levee opened %d backend connection(s) for a request it answered %d itself (the backend received %q)", n, want.status, v.b.conn(0).raw)
		}
	}
	open := v.afterAnswer(c, m, want.after)
	var same *rawClient
	if open {
		same = c
	}
	lines := append(append([]string(nil), want.forward...), v.followUps(same)...)
	v.checkBackendRead(lines)
	if reqs := v.b.requests(); len(want.forward) > 0 && len(reqs) > 0 {
		first := reqs[0]
		if string(first.body) != want.body {
			v.Errorf("the backend read %q with body %q, want %q", first.line(), first.body, want.body)
		}
		host := v.host
		if fv.hostSent != "" {
			host = fv.hostSent
		}
		if got := first.get("Host"); len(got) != 1 || got[0] != host {
			v.Errorf("the backend read %q with Host %q, want %q", first.line(), got, host)
		}
	}
}

// TestNetHTTPReference checks the netHTTP column: the front vectors'
// bytes against a plain net/http server whose handler reads the body and
// answers 200, or 400 when the body cannot be read (as Levee's router
// does). A change here means Go changed its verdict: the table (and Levee's
// expected outcome) must be looked at again.
func TestNetHTTPReference(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, fv := range frontVectors() {
		t.Run(fv.name, func(t *testing.T) {
			t.Parallel()
			c, err := dialRaw(addr, "")
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			if err := c.send(strings.ReplaceAll(fv.bytesFor(fv.want), "{host}", "ref.test")); err != nil {
				t.Fatal(err)
			}
			method, _, _ := strings.Cut(fv.req, " ")
			_, m, err := c.final(method, time.Second)
			switch {
			case fv.netHTTP == hang:
				if err == nil || !isTimeout(err) {
					t.Errorf("net/http answered %v (%v); the table says it hangs", m, err)
				}
			case err != nil:
				t.Errorf("net/http: no answer: %v (received %q)", err, c.received())
			case m.status != fv.netHTTP:
				t.Errorf("net/http answered %q; the table says %d", m.start, fv.netHTTP)
			}
		})
	}
}

package conformance

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// Waits with limits: each vector makes Levee wait on a client or a
// backend, and checks that the wait ends within the limit the suite gave
// the process (levee_test.go) plus a generous margin: the limits are
// correctness bounds, not timings.

func limitSuite() []vector {
	return []vector{
		{name: "body-never-sent", run: runBodyNeverSent},
		{name: "body-below-min-rate", run: runBodyBelowMinRate},
		{name: "client-never-reads", run: runClientNeverReads},
		{name: "backend-stalls-mid-body", run: runBackendStallsMidBody},
		{name: "tunnel-idle", run: runTunnelIdle},
		{name: "max-client-conns", run: runMaxClientConns, serial: true},
		{name: "slow-upload-breaker", run: runSlowUploadBreaker},
	}
}

// expectTimedOut checks that a request whose body did not come in time was
// answered 408, or its connection closed, within the body timeout and the
// margin; and that no backend ever saw a connection for it (Levee dials
// once a small body is there, not before).
func expectTimedOut(v *vt, c *rawClient, start time.Time) {
	v.Helper()
	_, m, err := c.final("POST", requestBodyTimeout+margin)
	switch {
	case err == nil && m.status != 408:
		v.Errorf("answer %q after %s, want 408 (or the connection closed)", m.start, time.Since(start).Round(time.Millisecond))
	case err != nil && isTimeout(err):
		v.Errorf("neither an answer nor a close within %s (request-body-timeout %s + %s)", requestBodyTimeout+margin, requestBodyTimeout, margin)
	case err != nil && !errors.Is(err, errEnded):
		v.Errorf("a broken answer: %v", err)
	}
	if n := v.b.connCount(); n != 0 {
		v.Errorf("the backend got %d connection(s) for a request whose body never came; want none", n)
	}
}

// A head announcing a body that never comes.
func runBodyNeverSent(t *testing.T, e *env) {
	v := e.start(t, backendOpts{}, nil, nil)
	c := v.dial()
	start := time.Now()
	if err := c.send(v.expand("POST /v HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	expectTimedOut(v, c, start)
	v.followUps(nil)
	v.checkBackendRead([]string{"GET /after-other"})
}

// A body that trickles one byte every 300 ms: never a gap as long as the
// body timeout, but far below --request-body-min-rate (512 B/s by
// default) once the body timeout has passed.
func runBodyBelowMinRate(t *testing.T, e *env) {
	v := e.start(t, backendOpts{}, nil, nil)
	c := v.dial()
	start := time.Now()
	if err := c.send(v.expand("POST /v HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if c.send("x") != nil {
					return
				}
			}
		}
	}()
	expectTimedOut(v, c, start)
	close(stop)
	<-done
	v.followUps(nil)
	v.checkBackendRead([]string{"GET /after-other"})
}

// A client that never reads a 256 MiB answer: Levee must give up on it
// within the write timeout, closing the client's connection and the
// backend's (whose writes then fail).
func runClientNeverReads(t *testing.T, e *env) {
	const size = 256 << 20
	started := make(chan time.Time, 1)
	script := vScript(func(x *exchange) {
		if x.write(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", size)) != nil {
			return
		}
		started <- time.Now()
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if x.writeBytes(chunk) != nil {
				return
			}
		}
	})
	v := e.start(t, backendOpts{}, script, nil)
	c := v.dial()
	if tc, ok := c.c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(16 << 10)
	}
	if err := v.get(c, "/v"); err != nil {
		t.Fatal(err)
	}
	var at time.Time
	select {
	case at = <-started:
	case <-time.After(5 * time.Second):
		t.Fatalf("the backend never read the request")
	}
	limit := responseWriteTimeout + margin
	gaveUp := v.b.waitFor(limit, func() bool {
		bc := v.b.conns[0]
		return bc.writeErr != nil || bc.ended
	})
	if !gaveUp {
		st := v.b.conn(0)
		v.Errorf("%s after the answer started (%d bytes written by the backend), Levee still waits on the client that does not read; want it closed within --response-write-timeout %s + %s",
			time.Since(at).Round(time.Millisecond), st.written, responseWriteTimeout, margin)
	}
	// The client's connection must be closed too: draining it ends before
	// the 256 MiB. Levee closed it with data still queued; the client
	// learns of the close once TCP has delivered that data and the FIN,
	// and after seconds of a closed receive window the sender's window
	// probes are seconds apart (exponential backoff), so the drain is
	// given longer than the margin.
	ended, _ := c.ends(6 * margin)
	if got := c.receivedCount(); !ended || got >= size {
		v.Errorf("the client connection: ended=%v after %d bytes; want it closed before the end of the answer", ended, got)
	}
	v.followUps(nil)
}

// A backend that sends the head and part of the body, then nothing: the
// client's answer is cut short (its connection closed) within the
// backend body timeout, and the backend connection closed.
func runBackendStallsMidBody(t *testing.T, e *env) {
	v := e.start(t, backendOpts{}, vScript(writes("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789")), nil)
	c := v.dial()
	if err := v.get(c, "/v"); err != nil {
		t.Fatal(err)
	}
	limit := backendBodyTimeout + margin
	_, m, err := c.final("GET", limit)
	// Two endings are right: the head and the 10 bytes, then the close
	// (the head went out before the stall); or Levee's own 502/504 (it
	// had sent nothing yet).
	switch {
	case isTimeout(err):
		v.Errorf("the client still waits %s later (--backend-body-timeout %s + %s): %v (received %q)", limit, backendBodyTimeout, margin, err, c.received())
	case m == nil:
		v.Errorf("the connection closed without an answer: %v", err)
	case err == nil && (m.status == 502 || m.status == 504) && m.has("X-Levee-Diagnostic"):
	case err == nil:
		v.Errorf("answer %q with a whole body %q; the backend sent 10 bytes of 1000 and stalled", m.start, m.body)
	case m.status != 200 || string(m.body) != "0123456789":
		v.Errorf("answer %q with body %q cut short, want 200 and the 10 bytes the backend sent", m.start, m.body)
	}
	if !v.b.waitFor(margin, func() bool { return v.b.conns[0].ended }) {
		v.Errorf("the stalled backend connection is still open; Levee must close it")
	}
	v.followUps(nil)
	v.checkBackendRead([]string{"GET /v", "GET /after-other"})
}

// An upgraded connection on which nothing moves is closed within the
// tunnel idle timeout, both sides.
func runTunnelIdle(t *testing.T, e *env) {
	v := e.start(t, backendOpts{}, vScript(writes(websocket101, echoTunnel)), nil)
	c := v.dial()
	openTunnel(v, c)
	last := time.Now()
	limit := tunnelIdleTimeout + margin
	if ended, extra := c.ends(limit); !ended {
		v.Errorf("the idle tunnel is still open %s after the last byte (--tunnel-idle-timeout %s + %s); received %q",
			time.Since(last).Round(time.Millisecond), tunnelIdleTimeout, margin, extra)
	}
	if !v.b.waitFor(margin, func() bool { return v.b.conns[0].ended }) {
		v.Errorf("the backend side of the idle tunnel is still open")
	}
}

// Beyond --max-client-conns, a new connection is closed at once, without
// an answer; once clients leave, new ones are served again.
func runMaxClientConns(t *testing.T, e *env) {
	v := e.start(t, backendOpts{}, nil, nil)
	held := make([]*rawClient, maxClientConns)
	for i := range held {
		held[i] = v.dialUnlisted()
		v.ownAnswer(held[i], fmt.Sprintf("/held-%d", i))
		if t.Failed() {
			t.Fatalf("connection %d of %d: no answer", i+1, maxClientConns)
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	var extras []*rawClient
	for range 4 {
		if e.tls {
			// Over TLS the close comes during the handshake: a failed
			// handshake is the connection closed at once.
			c, err := dialRaw(e.p.frontAddr, v.host)
			if err != nil {
				continue
			}
			v.clients = append(v.clients, c)
			v.Cleanup(c.close)
			_ = v.get(c, "/extra")
			extras = append(extras, c)
			continue
		}
		c := v.dial()
		_ = v.get(c, "/extra") // may fail: the connection may be closed already
		extras = append(extras, c)
	}
	for i, c := range extras {
		ended, extra := c.ends(time.Until(deadline))
		switch {
		case !ended:
			v.Errorf("connection %d beyond --max-client-conns %d is still open 3s later (received %q); want it closed at once", maxClientConns+i+1, maxClientConns, extra)
		case len(extra) > 0:
			v.Errorf("connection %d beyond --max-client-conns %d received %q before its close; want nothing", maxClientConns+i+1, maxClientConns, extra)
		}
	}
	for _, c := range held {
		c.close()
	}
	// Capacity comes back once the held connections are gone (Levee sees
	// them close asynchronously: poll with a deadline).
	var last string
	sni := ""
	if e.tls {
		sni = v.host
	}
	for end := time.Now().Add(margin); ; {
		// Until Levee has seen them close, a new connection is still one
		// too many: over TLS that is a failed handshake, so a dial error
		// is "not yet" here, not a failure.
		c, err := dialRaw(e.p.frontAddr, sni)
		if err != nil {
			last = err.Error()
			if time.Now().After(end) {
				t.Fatalf("no connection served %s after the held ones closed (last: %s)", margin, last)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if v.get(c, "/after") == nil {
			if _, m, err := c.final("GET", time.Second); err == nil && string(m.body) == "answer:/after" {
				c.close()
				break
			} else {
				last = fmt.Sprintf("%v %v", m, err)
			}
		}
		c.close()
		if time.Now().After(end) {
			t.Fatalf("no connection served %s after the held ones closed (last: %s)", margin, last)
		}
	}
	for _, l := range v.b.lines() {
		if strings.Contains(l, "/extra") {
			v.Errorf("the backend read %q from a connection beyond the limit", l)
		}
	}
}

// Clients uploading slowly (but within the body timeout and above the
// minimum rate) to a healthy backend must not open the route's breaker:
// the wait for a client's body is not the backend's time. The route's
// backend_timeout (400ms) is shorter than the pause between two parts of
// the body (700ms), which is shorter than --request-body-timeout (1s).
func runSlowUploadBreaker(t *testing.T, e *env) {
	config := map[string]any{
		"backend_timeout": "400ms",
		"circuit_breaker": map[string]any{"threshold": 0.5, "min_requests": 2},
	}
	v := e.start(t, backendOpts{}, nil, config)
	part := strings.Repeat("u", 1000)
	type result struct {
		m   *message
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		c := v.dial()
		go func() {
			send := func(s string) bool {
				if err := c.send(s); err != nil {
					results <- result{nil, err}
					return false
				}
				return true
			}
			if !send(v.expand(fmt.Sprintf("POST /upload HTTP/1.1\r\nHost: {host}\r\nContent-Length: %d\r\n\r\n", 3*len(part))) + part) {
				return
			}
			for range 2 {
				time.Sleep(700 * time.Millisecond) // the client's pace, not a synchronisation
				if !send(part) {
					return
				}
			}
			_, m, err := c.final("POST", 5*time.Second)
			results <- result{m, err}
		}()
	}
	for range 2 {
		r := <-results
		switch {
		case r.err != nil:
			v.Errorf("slow upload: %v", r.err)
		case r.m.status != 200 || string(r.m.body) != "answer:/upload":
			v.Errorf("slow upload answered %q %q (X-Levee-Diagnostic %q), want the backend's 200", r.m.start, r.m.body, r.m.get("X-Levee-Diagnostic"))
		}
	}
	if state := v.e.p.breakerState(t, v.route); state != "closed" {
		v.Errorf("after two slow uploads to a healthy backend the breaker is %q, want closed", state)
	}
	v.ownAnswer(v.dial(), "/after")
}

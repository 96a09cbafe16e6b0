package conformance

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Pipelining: three requests on one connection, sent as two packets split
// at every byte boundary. When the split falls after the first request,
// the client waits until the backend has read it before sending the rest,
// so that Levee is busy with the first when the others arrive. The
// backend must read exactly the three, in order, and the client must get
// the three answers, in order.

const pipelined = "POST /p0 HTTP/1.1\r\nHost: {host}\r\nContent-Length: 5\r\n\r\nhello" +
	"GET /p1 HTTP/1.1\r\nHost: {host}\r\n\r\n" +
	"GET /xadmin HTTP/1.1\r\nHost: {host}\r\n\r\n"

func pipelineSuite() []vector {
	return []vector{
		{name: "split-everywhere-fast-backend", run: func(t *testing.T, e *env) { runPipelined(t, e, 0) }},
		{name: "split-everywhere-slow-backend", run: func(t *testing.T, e *env) { runPipelined(t, e, 10*time.Millisecond) }},
	}
}

func runPipelined(t *testing.T, e *env, delay time.Duration) {
	script := func(x *exchange) {
		time.Sleep(delay) // the slow backend: an answer takes a while
		x.answer()
	}
	v := e.start(t, backendOpts{}, script, nil)
	data := v.expand(pipelined)
	first := strings.Index(data, "GET /p1")
	targets := []string{"/p0", "/p1", "/xadmin"}
	for split := 1; split < len(data); split++ {
		seen := len(v.b.requests())
		c := v.dialUnlisted()
		if err := c.send(data[:split]); err != nil {
			t.Fatalf("split %d: sending %q: %v", split, data[:split], err)
		}
		if split >= first {
			// The first request is whole: wait until the backend has it.
			if got := v.b.waitRequests(seen+1, 5*time.Second); len(got) <= seen {
				t.Fatalf("split %d: the backend never read the first request %q (sent %q first)", split, data[:first], data[:split])
			}
		}
		if err := c.send(data[split:]); err != nil {
			t.Fatalf("split %d: sending %q: %v", split, data[split:], err)
		}
		for _, target := range targets {
			_, m, err := c.final("GET", 5*time.Second)
			if err != nil {
				t.Fatalf("split %d (%q | %q): no answer for %s: %v (client received %q)", split, data[:split], data[split:], target, err, c.received())
			}
			if m.status != 200 || string(m.body) != "answer:"+target {
				t.Fatalf("split %d (%q | %q): answer %q %q, want the backend's answer to %s (client received %q)",
					split, data[:split], data[split:], m.start, m.body, target, c.received())
			}
		}
		reqs := v.b.waitRequests(seen+3, 2*time.Second)
		got := linesOf(reqs[seen:])
		if want := []string{"POST /p0", "GET /p1", "GET /xadmin"}; !slices.Equal(got, want) {
			var heads []string
			for _, r := range reqs[seen:] {
				heads = append(heads, r.head)
			}
			t.Fatalf("split %d (%q | %q): the backend read %q, want exactly %q; the heads it read: %q", split, data[:split], data[split:], got, want, heads)
		}
		if string(reqs[seen].body) != "hello" {
			t.Fatalf("split %d: the backend read /p0 with body %q, want %q", split, reqs[seen].body, "hello")
		}
		for _, r := range reqs[seen:] {
			v.checkFraming(r)
		}
		c.close()
		if t.Failed() {
			return
		}
	}
}

package conformance

import (
	"strings"
	"testing"
	"time"
)

// Forwarding headers from a client Levee does not trust (the suite sets no
// --trusted-proxies): whatever the client claims, the backend reads
// X-Forwarded-For, -Host and -Proto as Levee saw the request, once each,
// and no Forwarded, X-Real-IP or underscore spelling of any of them (some
// frameworks read X_Forwarded_For as X-Forwarded-For).

var forwardedVectors = []struct{ name, fields string }{
	{"forwarded", "Forwarded: for=6.6.6.6;host=evil.test;proto=https\r\n"},
	{"x-real-ip", "X-Real-IP: 6.6.6.6\r\n"},
	{"x-real-ip-underscore", "X_Real_IP: 6.6.6.6\r\n"},
	{"x-forwarded-for", "X-Forwarded-For: 6.6.6.6\r\n"},
	{"x-forwarded-for-lowercase", "x-forwarded-for: 6.6.6.6\r\n"},
	{"x-forwarded-for-twice", "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 7.7.7.7\r\n"},
	{"x-forwarded-for-underscore", "X_Forwarded_For: 6.6.6.6\r\n"},
	{"x-forwarded-host", "X-Forwarded-Host: evil.test\r\n"},
	{"x-forwarded-host-underscore", "X_Forwarded_Host: evil.test\r\n"},
	{"x-forwarded-proto", "X-Forwarded-Proto: https\r\n"},
	{"x-forwarded-proto-underscore", "X_Forwarded_Proto: https\r\n"},
	{"connection-nominates-x-forwarded-for", "Connection: X-Forwarded-For\r\nX-Forwarded-For: 6.6.6.6\r\n"},
	{"all-at-once", "Forwarded: for=6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\nX_Forwarded_For: 6.6.6.6\r\nX-Forwarded-For: 6.6.6.6\r\n" +
		"X-Forwarded-Host: evil.test\r\nX-Forwarded-Proto: https\r\n"},
}

func forwardedSuite() []vector {
	var out []vector
	for _, fv := range forwardedVectors {
		out = append(out, vector{name: fv.name, run: func(t *testing.T, e *env) { runForwarded(t, e, fv.fields) }})
	}
	return out
}

func runForwarded(t *testing.T, e *env, fields string) {
	v := e.start(t, backendOpts{}, nil, nil)
	c := v.dial()
	if err := c.send(v.expand(getWith(fields))); err != nil {
		t.Fatal(err)
	}
	_, m, err := c.final("GET", 5*time.Second)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if m.status != 200 || string(m.body) != "answer:/v" {
		v.Errorf("answer %q %q, want the backend's answer", m.start, m.body)
	}
	v.checkBackendRead([]string{"GET /v"})
	reqs := v.b.requests()
	if len(reqs) == 0 {
		return
	}
	r := reqs[0]
	proto := "http"
	if e.tls {
		proto = "https"
	}
	for name, want := range map[string]string{
		"X-Forwarded-For":   "127.0.0.1",
		"X-Forwarded-Host":  v.host,
		"X-Forwarded-Proto": proto,
	} {
		if got := r.get(name); len(got) != 1 || got[0] != want {
			v.Errorf("the backend read %s %q, want exactly %q (head %q)", name, got, want, r.head)
		}
	}
	for _, f := range r.fields {
		norm := strings.ToLower(strings.ReplaceAll(f.name, "_", "-"))
		switch {
		case norm == "forwarded", norm == "x-real-ip":
			v.Errorf("the backend read the client's %s: %q", f.name, f.value)
		case strings.Contains(f.name, "_") && (strings.HasPrefix(norm, "x-forwarded-") || norm == "x-real-ip"):
			v.Errorf("the backend read the client's %s: %q (an underscore spelling of a forwarding header)", f.name, f.value)
		}
	}
}

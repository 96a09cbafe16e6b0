package main

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	}))
	srv.StartTLS()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		for _, resume := range []bool{false, true} {
			r := Run(Config{Addr: addr, ServerName: "example.com", Duration: 300 * time.Millisecond,
				Conns: 2, Resume: resume, Version: v, Curves: []tls.CurveID{tls.X25519}, Path: "/"})
			if r.Conns < 3 || r.Errors > 0 {
				t.Fatalf("%s resume=%v: %+v", tls.VersionName(v), resume, r)
			}
			if r.Version != tls.VersionName(v) {
				t.Errorf("version %s, want %s", r.Version, tls.VersionName(v))
			}
			// Each worker's first connection is a full handshake.
			if resume && r.Resumed < r.Conns-2 || !resume && r.Resumed != 0 {
				t.Errorf("%s resume=%v: %d of %d resumed", tls.VersionName(v), resume, r.Resumed, r.Conns)
			}
		}
	}
}

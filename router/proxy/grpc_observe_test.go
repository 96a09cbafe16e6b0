package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

// brokenGRPCBackend starts a gRPC answer and breaks the stream before
// its trailers.
func brokenGRPCBackend(t *testing.T) config.Backend {
	t.Helper()
	return newH2Backend(t, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		w.WriteHeader(200)
		_, _ = w.Write([]byte("\x00\x00\x00\x00\x05ab"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}).backend()
}

// accessLines returns the JSON access lines logged so far, by host and
// path.
func accessLines(t *testing.T, out *syncBuffer) map[string]map[string]any {
	t.Helper()
	got := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if line == "" || json.Unmarshal([]byte(line), &m) != nil || m["event"] != "access" {
			continue
		}
		got[m["host"].(string)+" "+m["path"].(string)] = m
	}
	return got
}

// Every gRPC call is counted in levee_grpc_responses_total by the status
// its client read, and its access line has grpc_method and grpc_status:
// the backend's from trailers or a Trailers-Only head, Levee's own
// answers' (no route, no backend), none for a stream that broke before
// its status. A plain request has neither.
func TestGRPCStatusInMetricsAndAccessLog(t *testing.T) {
	out := &syncBuffer{}
	h := newHarness(t, Options{AccessLog: true, AccessLogOut: out, EjectAfter: -1})
	h.set(config.SourceDocker,
		h2Route("ok", config.SchemeH2C, config.BackendTLS{}, grpcBackend(t, "0", false)),
		h2Route("head", config.SchemeH2C, config.BackendTLS{}, grpcBackend(t, "14", true)),
		h2Route("app", config.SchemeH2C, config.BackendTLS{}, grpcBackend(t, "5", false)),
		h2Route("broken", config.SchemeH2C, config.BackendTLS{}, brokenGRPCBackend(t)),
		ep("down", deadBackend(t)))
	base, c := grpcFront(t, h)
	cases := []struct {
		host, route, label string
		status             any // the access line's grpc_status; nil = absent
	}{
		{"ok.test", "ok", "OK", 0.0},
		{"head.test", "head", "UNAVAILABLE", 14.0},
		{"app.test", "app", "NOT_FOUND", 5.0},
		{"broken.test", "broken", "none", nil},
		{"down.test", "down", "UNAVAILABLE", 14.0},
		{"nothing.test", unmatchedRoute, "UNIMPLEMENTED", 12.0},
	}
	for _, tc := range cases {
		resp := grpcCall(t, c, base, tc.host)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	h.get("ok.test", "/plain")
	eventually(t, "every access line", func() bool { return len(accessLines(t, out)) == len(cases)+1 })
	lines := accessLines(t, out)
	for _, tc := range cases {
		if v := metricValue(t, h, "levee_grpc_responses_total", map[string]string{"route": tc.route, "grpc_status": tc.label}); v != 1 {
			t.Errorf("%s: levee_grpc_responses_total{grpc_status=%q} = %v, want 1", tc.host, tc.label, v)
		}
		l := lines[tc.host+" /pkg.Service/Method"]
		if l["grpc_method"] != "pkg.Service/Method" || l["grpc_status"] != tc.status {
			t.Errorf("%s: access line %v, want grpc_method pkg.Service/Method and grpc_status %v", tc.host, l, tc.status)
		}
	}
	if l, ok := lines["ok.test /plain"]["grpc_method"]; ok {
		t.Errorf("a plain request logged grpc_method: %v", l)
	}
	if v := metricValue(t, h, "levee_grpc_responses_total", map[string]string{"route": "ok"}); v != 1 {
		t.Errorf("route ok: %v gRPC responses, want 1 (the plain request is not one)", v)
	}
}

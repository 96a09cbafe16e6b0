package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// `levee health` is the image's HEALTHCHECK (no shell, no curl): exit 0 on
// 200, 1 on anything else or no answer, 2 on usage errors.
func TestHealthCommand(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()

	health := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"health"}, args...), &out, &errOut, envOf(nil))
		return code, out.String() + errOut.String()
	}
	if code, out := health(srv.URL + "/health"); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("healthy: exit %d, %q", code, out)
	}
	status = http.StatusServiceUnavailable
	if code, out := health(srv.URL + "/health"); code != 1 || !strings.Contains(out, "503") {
		t.Errorf("unhealthy: exit %d, %q", code, out)
	}
	url := srv.URL
	srv.Close()
	if code, out := health(url + "/health"); code != 1 || !strings.Contains(out, url) {
		t.Errorf("unreachable: exit %d, %q (want it to name %s)", code, out, url)
	}
	if code, _ := health("a", "b"); code != 2 {
		t.Errorf("two arguments: exit %d, want 2", code)
	}
}

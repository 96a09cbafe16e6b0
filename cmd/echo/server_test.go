package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/poll"
)

// newTestServer starts an echo server answering as host "h1", name "blue".
func newTestServer(t *testing.T, rand func() float64) (*server, *httptest.Server) {
	t.Helper()
	if rand == nil {
		rand = func() float64 { return 0.5 }
	}
	s := newServer("h1", "blue", rand)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

func do(t *testing.T, method, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp, body
}

func control(t *testing.T, ts *httptest.Server, pathQuery string) State {
	t.Helper()
	resp, body := do(t, http.MethodPost, ts.URL+pathQuery)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: status %d: %s", pathQuery, resp.StatusCode, body)
	}
	var st State
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("POST %s: decode state: %v", pathQuery, err)
	}
	return st
}

// eventually polls f until it returns nil or the generous deadline passes.
func eventually(t *testing.T, f func() error) {
	t.Helper()
	poll.UntilNil(t, 10*time.Second, "the condition", f)
}

func TestEchoReportsWhoAnsweredAndWhatItSaw(t *testing.T) {
	_, ts := newTestServer(t, nil)
	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/some/path?x=1", strings.NewReader("body"))
	req.Host = "app.example.com"
	req.Header.Set("X-Custom", "yes")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	if got := resp.Header.Get("X-Echo-Hostname"); got != "h1" {
		t.Errorf("X-Echo-Hostname = %q, want h1", got)
	}
	var r Reply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Hostname != "h1" || r.Name != "blue" || r.Failed {
		t.Errorf("reply identity = %+v", r)
	}
	seen := r.Request
	if seen.Method != "PUT" || seen.Host != "app.example.com" || seen.Path != "/some/path" || seen.Query != "x=1" {
		t.Errorf("request seen = %+v", seen)
	}
	if got := seen.Headers["X-Custom"]; len(got) != 1 || got[0] != "yes" {
		t.Errorf("header X-Custom seen = %v, want [yes]", got)
	}
	if seen.RemoteAddr == "" {
		t.Error("remote address missing")
	}
}

func TestFailAllThenRecover(t *testing.T) {
	_, ts := newTestServer(t, nil)
	st := control(t, ts, "/_echo/fail?status=502")
	if st.FailStatus != 502 || st.FailRate != 1 {
		t.Fatalf("state after fail = %+v, want status 502 rate 1", st)
	}
	resp, body := do(t, http.MethodGet, ts.URL+"/")
	if resp.StatusCode != 502 {
		t.Fatalf("status while failing = %d, want 502", resp.StatusCode)
	}
	var r Reply
	if err := json.Unmarshal(body, &r); err != nil || !r.Failed || r.Hostname != "h1" {
		t.Errorf("failure body = %s (err %v), want failed reply from h1", body, err)
	}
	if resp, _ := do(t, http.MethodGet, ts.URL+"/_echo/health"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("health while failing = %d, want 503", resp.StatusCode)
	}

	control(t, ts, "/_echo/ok")
	if resp, _ := do(t, http.MethodGet, ts.URL+"/"); resp.StatusCode != http.StatusOK {
		t.Errorf("status after ok = %d, want 200", resp.StatusCode)
	}
	if resp, _ := do(t, http.MethodGet, ts.URL+"/_echo/health"); resp.StatusCode != http.StatusOK {
		t.Errorf("health after ok = %d, want 200", resp.StatusCode)
	}
}

func TestFailRateUsesRandomDraw(t *testing.T) {
	draws := []float64{0.1, 0.9, 0.29, 0.3}
	i := 0
	_, ts := newTestServer(t, func() float64 { v := draws[i%len(draws)]; i++; return v })
	control(t, ts, "/_echo/fail?status=503&rate=0.3")
	var got []int
	for range draws {
		resp, _ := do(t, http.MethodGet, ts.URL+"/")
		got = append(got, resp.StatusCode)
	}
	want := []int{503, 200, 503, 200}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("statuses = %v, want %v (draw < rate fails)", got, want)
		}
	}
}

func TestControlRejectsBadInput(t *testing.T) {
	_, ts := newTestServer(t, nil)
	for _, pq := range []string{
		"/_echo/fail?status=abc", "/_echo/fail?status=700", "/_echo/fail?rate=2",
		"/_echo/hang?duration=forever", "/_echo/slow?delay=-1s", "/_echo/slow",
	} {
		if resp, body := do(t, http.MethodPost, ts.URL+pq); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s = %d %s, want 400", pq, resp.StatusCode, body)
		}
	}
	if resp, _ := do(t, http.MethodGet, ts.URL+"/_echo/fail"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /_echo/fail = %d, want 405", resp.StatusCode)
	}
	if resp, _ := do(t, http.MethodPost, ts.URL+"/_echo/nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /_echo/nope = %d, want 404", resp.StatusCode)
	}
	// Bad input leaves the backend healthy.
	if resp, _ := do(t, http.MethodGet, ts.URL+"/"); resp.StatusCode != http.StatusOK {
		t.Errorf("status after rejected controls = %d, want 200", resp.StatusCode)
	}
}

func TestHangUntilReleased(t *testing.T) {
	s, ts := newTestServer(t, nil)
	control(t, ts, "/_echo/hang")
	done := make(chan int, 1)
	go func() {
		resp, err := http.Get(ts.URL + "/held")
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	eventually(t, func() error {
		if s.held.Load() != 1 {
			return errors.New("request not held yet")
		}
		return nil
	})
	select {
	case code := <-done:
		t.Fatalf("held request answered %d before release", code)
	default:
	}
	// Control endpoints are never held.
	st := control(t, ts, "/_echo/ok")
	if st.Hang {
		t.Errorf("state after ok = %+v, want no hang", st)
	}
	select {
	case code := <-done:
		if code != http.StatusOK {
			t.Fatalf("released request status = %d, want 200", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held request not released by /_echo/ok")
	}
}

func TestHangForDurationEnds(t *testing.T) {
	_, ts := newTestServer(t, nil)
	control(t, ts, "/_echo/hang?duration=50ms")
	start := time.Now()
	resp, _ := do(t, http.MethodGet, ts.URL+"/")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200 after the hang", resp.StatusCode)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("answered after %v, want at least the 50ms hang", el)
	}
}

func TestHungRequestEndsWhenClientGoes(t *testing.T) {
	s, ts := newTestServer(t, nil)
	control(t, ts, "/_echo/hang")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	eventually(t, func() error {
		if s.held.Load() != 1 {
			return errors.New("request not held yet")
		}
		return nil
	})
	cancel()
	if err := <-errc; err == nil {
		t.Error("cancelled request succeeded")
	}
	eventually(t, func() error {
		if n := s.held.Load(); n != 0 {
			return errors.New("request still held after the client left")
		}
		return nil
	})
}

func TestSlowDelaysEveryRequest(t *testing.T) {
	_, ts := newTestServer(t, nil)
	if st := control(t, ts, "/_echo/slow?delay=80ms"); st.Delay != 80*time.Millisecond {
		t.Fatalf("state = %+v, want delay 80ms", st)
	}
	start := time.Now()
	resp, _ := do(t, http.MethodGet, ts.URL+"/")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d", resp.StatusCode)
	}
	if el := time.Since(start); el < 80*time.Millisecond {
		t.Errorf("answered after %v, want at least 80ms", el)
	}
	if st := control(t, ts, "/_echo/ok"); st.Delay != 0 {
		t.Errorf("delay after ok = %v", st.Delay)
	}
}

func TestHealthcheckMode(t *testing.T) {
	_, ts := newTestServer(t, nil)
	var stderr bytes.Buffer
	env := func(string) string { return "" }
	if code := run([]string{"-healthcheck", ts.URL + "/_echo/health"}, env, &stderr); code != 0 {
		t.Fatalf("healthy: exit %d, stderr %s", code, stderr.String())
	}
	control(t, ts, "/_echo/fail")
	if code := run([]string{"-healthcheck", ts.URL + "/_echo/health"}, env, &stderr); code != 1 {
		t.Fatalf("failing: exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "status 503") {
		t.Errorf("stderr = %q, want the failing status", stderr.String())
	}
	if code := run([]string{"-healthcheck", "http://127.0.0.1:1/_echo/health"}, env, &stderr); code != 1 {
		t.Fatalf("unreachable: exit %d, want 1", code)
	}
}

func TestListenAddressFromEnvAndFlag(t *testing.T) {
	env := func(k string) string {
		if k == "ECHO_LISTEN" {
			return "256.0.0.1:80"
		}
		return ""
	}
	var stderr bytes.Buffer
	if code := run(nil, env, &stderr); code != 1 || !strings.Contains(stderr.String(), "256.0.0.1:80") {
		t.Errorf("env listen: exit %d, stderr %q: want a listen error naming ECHO_LISTEN's address", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"-listen", "256.0.0.2:80"}, env, &stderr); code != 1 || !strings.Contains(stderr.String(), "256.0.0.2:80") {
		t.Errorf("flag listen: exit %d, stderr %q: want the flag to win over ECHO_LISTEN", code, stderr.String())
	}
	if got := envOr(func(string) string { return "" }, "ECHO_LISTEN", ":8080"); got != ":8080" {
		t.Errorf("default listen = %q, want :8080", got)
	}
}

func TestBadDrainIsRefused(t *testing.T) {
	env := func(k string) string {
		if k == "ECHO_DRAIN" {
			return "soon"
		}
		return ""
	}
	var stderr bytes.Buffer
	if code := run(nil, env, &stderr); code != 2 || !strings.Contains(stderr.String(), `ECHO_DRAIN="soon"`) {
		t.Errorf("exit %d, stderr %q: want 2 and the bad ECHO_DRAIN named", code, stderr.String())
	}
}

func TestTLSCertNeedsItsKey(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"-tls-cert", "/c.pem"}, func(string) string { return "" }, &stderr); code != 2 || !strings.Contains(stderr.String(), "go together") {
		t.Errorf("exit %d, stderr %q: want 2 and the missing key named", code, stderr.String())
	}
}

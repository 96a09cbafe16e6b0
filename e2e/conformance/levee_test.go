package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/leveetest"
)

// The limits every levee process of the suite runs with: short, so that a
// vector waiting for one of them ends in seconds. Vectors that depend on a
// limit read it from here.
const (
	requestBodyTimeout   = 1 * time.Second
	responseWriteTimeout = 1 * time.Second
	backendBodyTimeout   = 1 * time.Second
	tunnelIdleTimeout    = 2 * time.Second
	maxClientConns       = 64

	// margin is added to every limit: the limits are correctness bounds
	// ("it ends"), not timings.
	margin = 5 * time.Second
)

// leveeProc is a running levee binary (leveetest.Proc) with the suite's
// API helpers.
type leveeProc struct {
	*leveetest.Proc
	tls bool // routes are TLS routes, reached on the TLS listener
	// frontAddr is the listener the clients dial: the plain one, or with
	// tls the TLS one.
	frontAddr string
}

// startLevee runs `levee serve` with the suite's limits and the given
// server and backend client (with tls, a TLS listener "websecure" beside
// the plain one), and returns once its listeners are up. Only
// these flags configure it: the caller's LEVEE_* variables are dropped.
// The process is killed when t ends.
func startLevee(t *testing.T, server, client string, tls bool) *leveeProc {
	t.Helper()
	var listen []string
	if tls {
		listen = []string{"--listen", "websecure=127.0.0.1:0,tls"}
	}
	p := leveetest.Start(t, leveeBinary, leveetest.Options{Args: append(listen,
		"--docker=false",
		"--state-file", filepath.Join(t.TempDir(), "state.json"),
		"--log-level", "info",
		"--http-server", server, "--backend-client", client,
		"--request-body-timeout", requestBodyTimeout.String(),
		"--response-write-timeout", responseWriteTimeout.String(),
		"--backend-body-timeout", backendBodyTimeout.String(),
		"--tunnel-idle-timeout", tunnelIdleTimeout.String(),
		"--max-client-conns", fmt.Sprint(maxClientConns),
		"--shutdown-timeout", "1s",
	)})
	lp := &leveeProc{Proc: p, tls: tls, frontAddr: p.ProxyAddr}
	if tls {
		line, err := p.WaitLog(leveetest.StartupTimeout, func(m map[string]any) bool {
			return m["listener"] == "proxy" && m["name"] == "websecure" && m["message"] == "listening"
		})
		if err != nil {
			t.Fatalf("the TLS listener: %v", err)
		}
		lp.frontAddr = fmt.Sprint(line["addr"])
	}
	return lp
}

// logsAbout returns the raw log lines that name the route or the host
// (access log lines, route changes, breaker transitions).
func (p *leveeProc) logsAbout(route, host string) []string {
	var out []string
	for _, line := range p.RawLines() {
		if strings.Contains(line, `"`+route+`"`) || strings.Contains(line, host) {
			out = append(out, line)
		}
	}
	return out
}

var apiClient = &http.Client{Timeout: 10 * time.Second}

// api sends a request to the API and decodes a JSON answer into out (when
// not nil), returning the status.
func (p *leveeProc) api(method, path string, body any, out any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+p.APIAddr+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, b, err
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, b, fmt.Errorf("decoding %q: %w", b, err)
		}
	}
	return resp.StatusCode, b, nil
}

// createRoute creates an API entrypoint name for host with the backend at
// addr and the extra config fields, and fails unless it was created
// without a single diagnostic (a misspelt field would be W013).
func (p *leveeProc) createRoute(t *testing.T, name, host, addr string, config map[string]any) {
	t.Helper()
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"hostnames": []string{host}}
	if p.tls {
		cfg["tls"] = map[string]any{"enabled": true}
	}
	for k, v := range config {
		cfg[k] = v
	}
	payload := map[string]any{
		"name":     name,
		"backends": []map[string]any{{"address": h, "port": json.Number(port)}},
		"config":   cfg,
	}
	var out struct {
		Diagnostics []map[string]any `json:"diagnostics"`
	}
	status, raw, err := p.api(http.MethodPost, "/entrypoints", payload, &out)
	if err != nil || status != http.StatusCreated {
		t.Fatalf("POST /entrypoints %s = %d %s (%v)", name, status, raw, err)
	}
	if len(out.Diagnostics) > 0 {
		t.Fatalf("POST /entrypoints %s: diagnostics %s", name, raw)
	}
}

// breakerState is the state of the route's breaker as GET /breakers/{route}
// shows it.
func (p *leveeProc) breakerState(t *testing.T, route string) string {
	t.Helper()
	var out struct {
		State string `json:"state"`
	}
	status, raw, err := p.api(http.MethodGet, "/breakers/"+route, nil, &out)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET /breakers/%s = %d %s (%v)", route, status, raw, err)
	}
	return out.State
}

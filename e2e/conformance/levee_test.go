package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

// leveeProc is a running levee binary whose JSON log lines are collected.
type leveeProc struct {
	cmd       *exec.Cmd
	proxyAddr string
	apiAddr   string

	mu    sync.Mutex
	lines []map[string]any
	raw   []string
	added chan struct{} // signalled (non-blocking) on every new line
	exit  chan struct{} // closed when the process has exited
	err   error         // exit error, valid after exit is closed
}

// startLevee runs `levee serve` with the suite's limits and the given
// server and backend client, and returns once both listeners are up. The
// process is killed when t ends.
func startLevee(t *testing.T, server, client string) *leveeProc {
	t.Helper()
	args := []string{"serve",
		"--docker=false",
		"--http-listen", "127.0.0.1:0", "--api-listen", "127.0.0.1:0",
		"--state-file", filepath.Join(t.TempDir(), "state.json"),
		"--log-format", "json", "--log-level", "info",
		"--http-server", server, "--backend-client", client,
		"--request-body-timeout", requestBodyTimeout.String(),
		"--response-write-timeout", responseWriteTimeout.String(),
		"--backend-body-timeout", backendBodyTimeout.String(),
		"--tunnel-idle-timeout", tunnelIdleTimeout.String(),
		"--max-client-conns", fmt.Sprint(maxClientConns),
		"--shutdown-timeout", "1s",
	}
	cmd := exec.Command(leveeBinary, args...)
	// Only the flags above configure the process: LEVEE_* variables of
	// the caller's environment would be used for every flag not given.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEVEE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", leveeBinary, err)
	}
	p := &leveeProc{cmd: cmd, added: make(chan struct{}, 1), exit: make(chan struct{})}
	go p.read(stdout)
	t.Cleanup(func() {
		select {
		case <-p.exit:
		default:
			_ = cmd.Process.Kill()
			<-p.exit
		}
	})
	listening := func(name string) string {
		l, err := p.waitLog(20*time.Second, func(l map[string]any) bool {
			return l["listener"] == name && l["message"] == "listening"
		})
		if err != nil {
			t.Fatalf("levee %s: %v\n%s", strings.Join(args, " "), err, p.output())
		}
		return fmt.Sprint(l["addr"])
	}
	p.apiAddr = listening("api")
	p.proxyAddr = listening("proxy")
	return p
}

func (p *leveeProc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var m map[string]any
		_ = json.Unmarshal([]byte(line), &m) // a panic's lines stay in raw
		p.mu.Lock()
		p.raw = append(p.raw, line)
		if m != nil {
			p.lines = append(p.lines, m)
		}
		p.mu.Unlock()
		select {
		case p.added <- struct{}{}:
		default:
		}
	}
	p.err = p.cmd.Wait()
	close(p.exit)
}

// waitLog waits until a log line satisfies match and returns it.
func (p *leveeProc) waitLog(timeout time.Duration, match func(map[string]any) bool) (map[string]any, error) {
	deadline := time.After(timeout)
	seen := 0
	for {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if match(p.lines[seen]) {
				l := p.lines[seen]
				p.mu.Unlock()
				return l, nil
			}
		}
		p.mu.Unlock()
		select {
		case <-p.added:
		case <-p.exit:
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if seen == n {
				return nil, fmt.Errorf("levee exited (%v) before the expected log line", p.err)
			}
		case <-deadline:
			return nil, fmt.Errorf("no matching log line within %s", timeout)
		}
	}
}

// output is everything the process printed so far.
func (p *leveeProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.raw, "\n")
}

// logsAbout returns the raw log lines that name the route or the host
// (access log lines, route changes, breaker transitions).
func (p *leveeProc) logsAbout(route, host string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, line := range p.raw {
		if strings.Contains(line, `"`+route+`"`) || strings.Contains(line, host) {
			out = append(out, line)
		}
	}
	return out
}

// exited reports whether the process is gone (a crash fails every vector
// of its combination; this names the cause).
func (p *leveeProc) exited() error {
	select {
	case <-p.exit:
		return fmt.Errorf("levee exited: %v", p.err)
	default:
		return nil
	}
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
	req, err := http.NewRequest(method, "http://"+p.apiAddr+path, rd)
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

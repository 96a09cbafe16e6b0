package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// leveeBinary is built once per test process by TestMain.
var leveeBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "levee-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		os.Exit(1)
	}
	leveeBinary = filepath.Join(dir, "levee")
	build := exec.Command("go", "build", "-race", "-o", leveeBinary, "github.com/levee-proxy/levee/cmd/levee")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building levee:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// leveeProc is a running levee binary whose JSON log lines are collected.
type leveeProc struct {
	t   *testing.T
	cmd *exec.Cmd

	mu    sync.Mutex
	lines []map[string]any
	raw   []string
	added chan struct{} // signalled (non-blocking) on every new line
	exit  chan struct{} // closed when the process has exited
	err   error         // exit error, valid after exit is closed
}

// startLevee runs the binary with args (listeners on 127.0.0.1:0 unless
// given) and returns once both listeners are up.
func startLevee(t *testing.T, args ...string) *leveeProc {
	t.Helper()
	full := append([]string{"serve",
		"--http-listen", "127.0.0.1:0", "--api-listen", "127.0.0.1:0",
		"--log-format", "json", "--log-level", "debug",
		"--shutdown-timeout", "5s"}, args...)
	cmd := exec.Command(leveeBinary, full...)
	cmd.Env = append(os.Environ(), "LEVEE_STATE_FILE="+filepath.Join(t.TempDir(), "state.json"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", leveeBinary, err)
	}
	p := &leveeProc{t: t, cmd: cmd, added: make(chan struct{}, 1), exit: make(chan struct{})}
	go p.read(stdout)
	t.Cleanup(func() {
		select {
		case <-p.exit:
		default:
			_ = cmd.Process.Kill()
			<-p.exit
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("levee output:\n%s", strings.Join(p.raw, "\n"))
			p.mu.Unlock()
		}
	})
	p.waitLog(20*time.Second, func(l map[string]any) bool { return l["listener"] == "api" && l["message"] == "listening" })
	p.waitLog(20*time.Second, func(l map[string]any) bool { return l["listener"] == "proxy" && l["message"] == "listening" })
	return p
}

func (p *leveeProc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var m map[string]any
		_ = json.Unmarshal([]byte(line), &m) // non-JSON lines (race reports) stay in raw
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
func (p *leveeProc) waitLog(timeout time.Duration, match func(map[string]any) bool) map[string]any {
	p.t.Helper()
	deadline := time.After(timeout)
	seen := 0
	for {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if match(p.lines[seen]) {
				l := p.lines[seen]
				p.mu.Unlock()
				return l
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
				p.t.Fatalf("levee exited (%v) before the expected log line", p.err)
			}
		case <-deadline:
			p.t.Fatalf("no matching log line within %s", timeout)
		}
	}
}

// logs returns the parsed log lines so far.
func (p *leveeProc) logs() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.lines...)
}

func (p *leveeProc) addr(listener string) string {
	l := p.waitLog(time.Second, func(l map[string]any) bool { return l["listener"] == listener && l["message"] == "listening" })
	return l["addr"].(string)
}

// proxyURL and apiURL are the base URLs of the two listeners.
func (p *leveeProc) proxyURL() string { return "http://" + p.addr("proxy") }
func (p *leveeProc) apiURL() string   { return "http://" + p.addr("api") }

// signal sends sig and waits for the process to exit, returning its error.
func (p *leveeProc) signal(sig syscall.Signal, timeout time.Duration) error {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-p.exit:
		return p.err
	case <-time.After(timeout):
		p.t.Fatalf("levee did not exit within %s of %v", timeout, sig)
		return nil
	}
}

// get performs a GET with an optional Host header and returns status, headers
// and body; a transport error fails the test.
func get(t *testing.T, url, host string) (int, http.Header, string) {
	t.Helper()
	status, hdr, body, err := tryGet(url, host)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", url, host, err)
	}
	return status, hdr, body
}

// tryGet is get for polling loops, where a refused connection is expected
// for a while.
func tryGet(url, host string) (int, http.Header, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, "", err
	}
	if host != "" {
		req.Host = host
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), err
}

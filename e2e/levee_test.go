package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/dockertest"
	"github.com/levee-proxy/levee/e2e/leveetest"
)

// leveeBinary is built once per test process by TestMain.
var leveeBinary string

func TestMain(m *testing.M) {
	bin, remove, err := leveetest.Build(true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	leveeBinary = bin
	code := m.Run()
	remove()
	os.Exit(code)
}

// leveeProc is a running levee binary (leveetest.Proc) whose waits fail
// the test.
type leveeProc struct {
	*leveetest.Proc
	t *testing.T
}

// startLevee runs the binary with args, keeping the caller's LEVEE_*
// variables (make test selects the server and client through them), and
// returns once both listeners are up. It routes only t's own containers
// and services (labelled levee.test=<RunID(t)>); a --docker-constraints
// in args replaces that.
func startLevee(t *testing.T, args ...string) *leveeProc {
	t.Helper()
	defaults := []string{"--log-level", "debug", "--shutdown-timeout", "5s", "--docker-constraints", dockertest.Constraint(dockertest.RunID(t))}
	p := leveetest.Start(t, leveeBinary, leveetest.Options{
		Args:            append(defaults, args...),
		Env:             []string{"LEVEE_STATE_FILE=" + filepath.Join(t.TempDir(), "state.json")},
		InheritLeveeEnv: true,
	})
	return &leveeProc{Proc: p, t: t}
}

// waitLog waits until a log line satisfies match and returns it.
func (p *leveeProc) waitLog(timeout time.Duration, match func(map[string]any) bool) map[string]any {
	p.t.Helper()
	l, err := p.WaitLog(timeout, match)
	if err != nil {
		p.t.Fatal(err)
	}
	return l
}

// logs returns the parsed log lines so far.
func (p *leveeProc) logs() []map[string]any { return p.Lines() }

// proxyURL and apiURL are the base URLs of the two listeners.
func (p *leveeProc) proxyURL() string { return "http://" + p.ProxyAddr }
func (p *leveeProc) apiURL() string   { return "http://" + p.APIAddr }

// signal sends sig and waits for the process to exit, returning its error.
func (p *leveeProc) signal(sig syscall.Signal, timeout time.Duration) error {
	p.t.Helper()
	exitErr, err := p.Signal(sig, timeout)
	if err != nil {
		p.t.Fatal(err)
	}
	return exitErr
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

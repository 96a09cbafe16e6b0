// Package leveetest builds the levee binary and runs it for the
// end-to-end tests (e2e, e2e/conformance, e2e/doctest).
//
// The model: Build compiles cmd/levee once per test process; Start runs
// one `levee serve` per call with its listeners on 127.0.0.1:0, collects
// its JSON log lines, reads both listeners' addresses from their
// "listening" lines, and kills the process when the test ends (printing
// its output if the test failed). Waits on the log are bounded and driven
// by the lines as they arrive, never by sleeps.
package leveetest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles cmd/levee (with the race detector when race is set) into
// a temp directory and returns the binary and a function that removes it.
func Build(race bool) (bin string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "levee-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("temp dir for the levee binary: %w", err)
	}
	remove = func() { _ = os.RemoveAll(dir) }
	bin = filepath.Join(dir, "levee")
	args := []string{"build"}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "-o", bin, "github.com/levee-proxy/levee/cmd/levee")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		remove()
		return "", nil, fmt.Errorf("building levee: %w\n%s", err, out)
	}
	return bin, remove, nil
}

// Options are what Start runs the binary with.
type Options struct {
	// Args follow `serve` and the defaults (listeners on 127.0.0.1:0,
	// --log-format json); a flag given again here wins.
	Args []string
	// Env is added to the environment.
	Env []string
	// InheritLeveeEnv keeps the caller's LEVEE_* variables (make test runs
	// the e2e suite on every server and client this way); without it only
	// Args and Env configure the process.
	InheritLeveeEnv bool
}

// StartupTimeout bounds the wait for both listeners.
const StartupTimeout = 20 * time.Second

// Proc is a running levee process.
type Proc struct {
	// ProxyAddr and APIAddr are the listeners' host:port.
	ProxyAddr, APIAddr string

	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []map[string]any
	raw   []string
	added chan struct{} // signalled (non-blocking) on every new line
	exit  chan struct{} // closed when the process has exited
	err   error         // exit error, valid after exit is closed
}

// Start runs `levee serve` and returns once both listeners are up; a
// process that does not get there fails the test.
func Start(t testing.TB, bin string, o Options) *Proc {
	t.Helper()
	args := append([]string{"serve",
		"--http-listen", "127.0.0.1:0", "--api-listen", "127.0.0.1:0",
		"--log-format", "json"}, o.Args...)
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if o.InheritLeveeEnv || !strings.HasPrefix(kv, "LEVEE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, o.Env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	p := &Proc{cmd: cmd, added: make(chan struct{}, 1), exit: make(chan struct{})}
	go p.read(stdout)
	t.Cleanup(func() {
		select {
		case <-p.exit:
		default:
			_ = cmd.Process.Kill()
			<-p.exit
		}
		if t.Failed() {
			t.Logf("levee output:\n%s", p.Output())
		}
	})
	for _, l := range []struct {
		name string
		addr *string
	}{{"api", &p.APIAddr}, {"proxy", &p.ProxyAddr}} {
		line, err := p.WaitLog(StartupTimeout, func(m map[string]any) bool {
			return m["listener"] == l.name && m["message"] == "listening"
		})
		if err != nil {
			t.Fatalf("levee %s: %s listener: %v", strings.Join(args, " "), l.name, err)
		}
		*l.addr = fmt.Sprint(line["addr"])
	}
	return p
}

func (p *Proc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var m map[string]any
		_ = json.Unmarshal([]byte(line), &m) // non-JSON lines (race reports, panics) stay in raw
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

// WaitLog waits until a log line satisfies match and returns it; an error
// when timeout passes or the process exits first.
func (p *Proc) WaitLog(timeout time.Duration, match func(map[string]any) bool) (map[string]any, error) {
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

// Lines returns the JSON log lines so far.
func (p *Proc) Lines() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.lines...)
}

// RawLines returns every line printed so far, JSON or not.
func (p *Proc) RawLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.raw...)
}

// Output is everything the process printed so far.
func (p *Proc) Output() string { return strings.Join(p.RawLines(), "\n") }

// Exited reports, once the process is gone, why; nil while it runs.
func (p *Proc) Exited() error {
	select {
	case <-p.exit:
		if p.err == nil {
			return errors.New("levee exited")
		}
		return fmt.Errorf("levee exited: %w", p.err)
	default:
		return nil
	}
}

// Signal sends sig and waits up to timeout for the process to exit. It
// returns the process's exit error (nil for a clean exit), or err when the
// signal could not be sent or the process did not exit in time.
func (p *Proc) Signal(sig syscall.Signal, timeout time.Duration) (exitErr, err error) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return nil, fmt.Errorf("signal %v: %w", sig, err)
	}
	select {
	case <-p.exit:
		return p.err, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("levee did not exit within %s of %v", timeout, sig)
	}
}

// Send sends sig without waiting for anything (SIGUSR1, SIGHUP).
func (p *Proc) Send(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v: %w", sig, err)
	}
	return nil
}

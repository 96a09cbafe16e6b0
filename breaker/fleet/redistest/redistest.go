// Package redistest runs a real redis-server for tests: a private process
// on a free loopback port, without persistence, stopped at the end of the
// test.
//
// The binary comes from PATH (.ci/setup.d/redis.sh installs Debian's
// package in CI). Without it a test is skipped, except under CI=true,
// where it fails: CI must never pass by skipping. Under go test -short it
// is always skipped.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Server is one redis-server process.
type Server struct {
	Addr  string
	port  int
	bin   string
	extra []string // more arguments (cluster, sentinel)
	conf  string   // a config file to start with (sentinel needs one)
	cmd   *exec.Cmd
	t     testing.TB
}

// Start starts a redis-server on a free loopback port; t.Cleanup stops it.
// DEBUG is enabled for local clients (Redis 7 refuses it by default), for
// Stall.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, lookPath(t, "redis-server"), "", []string{"--enable-debug-command", "local"})
}

// Stall blocks the server for d (DEBUG SLEEP: no command of any client is
// served meanwhile) and returns when it answers again.
func (s *Server) Stall(d time.Duration) {
	s.t.Helper()
	host, port, _ := net.SplitHostPort(s.Addr)
	secs := strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	out, err := exec.Command(lookPath(s.t, "redis-cli"), "-h", host, "-p", port, "DEBUG", "SLEEP", secs).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		s.t.Fatalf("redis-cli DEBUG SLEEP %s: %v: %s", secs, err, out)
	}
}

// lookPath finds a binary, skipping the test without it (failing under
// CI=true).
func lookPath(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: this test needs %s", name)
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not in PATH under CI=true (.ci/setup.d/redis.sh installs it): %v", name, err)
		}
		t.Skipf("%s not in PATH (apt-get install redis-server): %v", name, err)
	}
	return bin
}

func start(t testing.TB, bin, conf string, extra []string) *Server {
	t.Helper()
	s := &Server{bin: bin, t: t, conf: conf, extra: extra}
	for attempt := 0; ; attempt++ {
		s.port = freePort(t)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		if err := s.start(); err == nil {
			break
		} else if attempt == 4 {
			t.Fatalf("starting redis-server: %v", err)
		}
	}
	t.Cleanup(s.Stop)
	return s
}

// URL returns redis://addr/0.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

func (s *Server) start() error {
	var args []string
	if s.conf != "" {
		args = append(args, s.conf)
	}
	args = append(args, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--dir", s.t.TempDir())
	cmd := exec.Command(s.bin, append(args, s.extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		var lines []string
		for sc.Scan() {
			l := sc.Text()
			if len(lines) < 20 {
				lines = append(lines, l)
			}
			// a sentinel says who it is instead of "ready"
			if !sent && (strings.Contains(l, "Ready to accept connections") || strings.Contains(l, "Sentinel ID is")) {
				ready <- nil
				sent = true
			}
		}
		if !sent {
			ready <- fmt.Errorf("redis-server exited before it was ready: %s", strings.Join(lines, " | "))
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			_ = cmd.Wait()
			return err
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("redis-server not ready after 10s")
	}
	s.cmd = cmd
	return nil
}

// Stop kills the server (as a crash would: SIGKILL) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("restarting redis-server on %s: %v", s.Addr, err)
		}
		time.Sleep(50 * time.Millisecond) // the port may linger briefly; poll
	}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/e2e/poll"
)

// waitFor polls until cond holds, failing after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, cond)
}

func fileHas(path, s string) func() bool {
	return func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), s)
	}
}

func TestLogFileReopenAfterRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	l, err := openLogFile("--access-log-file", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fmt.Fprintln(l, "line one")
	waitFor(t, "line one", fileHas(path, "line one"))
	rotated := path + ".1"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(l, "line two") // logrotate's window: still the old file
	waitFor(t, "line two in the renamed file", fileHas(rotated, "line two"))

	outs := &logOutputs{access: l}
	sig := make(chan os.Signal, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go reopenOn(ctx, sig, outs, zerolog.Nop())
	sig <- syscall.SIGUSR1 // what serve's signal handler receives
	waitFor(t, "the path reopened", func() bool { _, err := os.Stat(path); return err == nil })
	fmt.Fprintln(l, "line three")
	waitFor(t, "line three in the new file", fileHas(path, "line three"))
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "line one") {
		t.Fatalf("new file holds old lines: %q", b)
	}
	if b, _ := os.ReadFile(rotated); strings.Contains(string(b), "line three") {
		t.Fatalf("rotated file got a line after the reopen: %q", b)
	}
}

func TestLogFileReopenFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "levee.log")
	l, err := openLogFile("--log-file", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rotated := path + ".1"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil { // the path cannot be a file now
		t.Fatal(err)
	}
	err = l.Reopen()
	if err == nil || !strings.Contains(err.Error(), "--log-file") || !strings.Contains(err.Error(), path) {
		t.Fatalf("reopen error %v", err)
	}
	fmt.Fprintln(l, "still here")
	waitFor(t, "the line in the old file", fileHas(rotated, "still here"))
}

// A stuck disk (here a pipe nobody reads) never blocks Write: beyond the
// bounded buffer, lines are dropped and counted.
func TestLogFileNeverBlocksOnAStuckDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no fifo:", err)
	}
	// A reader that never reads keeps the pipe open, so the writer's
	// open succeeds and its writes block once the pipe is full.
	r, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := openLogFile("--access-log-file", path)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("x", 1023) + "\n")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 4 * logBufferSize / len(line) {
			l.Write(line)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Write blocked on a stuck file")
	}
	if l.Dropped() == 0 {
		t.Fatal("nothing dropped although 4 MiB went to a stuck pipe")
	}
	go io.Copy(io.Discard, r) // unstick, so that Close can flush
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenLogOutputsNamesFlagAndPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "access.log")
	_, err := openLogOutputs(serveConfig{AccessLogFile: path})
	if err == nil || !strings.Contains(err.Error(), "--access-log-file (LEVEE_ACCESS_LOG_FILE)") || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v", err)
	}
}

func TestAccessLogFlags(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--access-log-format=combined", "--access-log-status=400-599,302", "--access-log-min-duration=200ms"},
		func(k string) string {
			if k == "LEVEE_ACCESS_LOG_FILE" {
				return "/var/log/levee/access.log"
			}
			return ""
		}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AccessLogFile != "/var/log/levee/access.log" || cfg.AccessLogMinDuration != 200*time.Millisecond {
		t.Fatalf("%+v", cfg)
	}
	for _, args := range [][]string{{"--access-log-format=clf"}, {"--access-log-status=4xx"}, {"--access-log-min-duration=-1s"}} {
		_, err := parseServeFlags(args, func(string) string { return "" }, io.Discard)
		name, _, _ := strings.Cut(args[0], "=")
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: %v", args, err)
		}
	}
}

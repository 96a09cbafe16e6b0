// Command compressrss measures the resident memory that stalled readers
// pin in a levee binary: it starts `levee serve` (no Docker, free loopback
// ports), a backend that streams a large, poorly compressible text body,
// API routes on that backend (a plain one, and -compress-routes with
// compress=true), and then opens -conns connections to the plain route,
// then to every compress route at once, with a tiny receive window (SO_RCVBUF 1 KiB) that read the answer's head and then nothing.
// It prints the process's VmRSS before and once it has settled with the
// stalled readers, per route. Give several binaries (-bin a=PATH -bin
// b=PATH) to compare builds side by side on one machine.
//
//	go build -o /tmp/levee-after ./cmd/levee
//	cd bench && go run ./compressrss -bin after=/tmp/levee-after -conns 768
//
// Linux only (VmRSS from /proc).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type binFlag []string

func (b *binFlag) String() string     { return strings.Join(*b, ",") }
func (b *binFlag) Set(v string) error { *b = append(*b, v); return nil }

func main() {
	var bins binFlag
	flag.Var(&bins, "bin", "name=path of a levee binary (repeatable)")
	conns := flag.Int("conns", 768, "stalled readers per route")
	enc := flag.String("encoding", "zstd, br, gzip", "Accept-Encoding of the stalled readers")
	extra := flag.String("args", "", "extra levee serve flags, space-separated")
	routes := flag.Int("compress-routes", 1, "compress routes, each given -conns stalled readers at once")
	flag.Parse()
	if len(bins) == 0 {
		fmt.Fprintln(os.Stderr, "compressrss: give at least one -bin name=path")
		os.Exit(2)
	}
	backend, err := startBackend()
	if err != nil {
		fmt.Fprintln(os.Stderr, "compressrss:", err)
		os.Exit(1)
	}
	fmt.Printf("%-10s %-12s %6s %12s %12s %12s\n", "binary", "routes", "conns", "rss before", "rss stalled", "delta")
	for _, b := range bins {
		name, path, ok := strings.Cut(b, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "compressrss: -bin %q: want name=path\n", b)
			os.Exit(2)
		}
		if err := measure(name, path, backend, *conns, *routes, *enc, strings.Fields(*extra)); err != nil {
			fmt.Fprintf(os.Stderr, "compressrss: %s: %v\n", name, err)
			os.Exit(1)
		}
	}
}

// measure runs one binary: for each route, fresh stalled readers, then
// the RSS they hold, then they close.
func measure(name, path, backend string, conns, routes int, enc string, extra []string) error {
	proxyAddr, apiAddr := freeAddr(), freeAddr()
	dir, err := os.MkdirTemp("", "compressrss")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	args := append([]string{"serve", "--docker=false", "--http-listen", proxyAddr, "--api-listen", apiAddr,
		"--state-file", filepath.Join(dir, "state.json"), "--access-log=false", "--log-level=warn",
		"--response-write-timeout=10m", "--backend-body-timeout=10m"}, extra...)
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := waitReady("http://" + apiAddr + "/health"); err != nil {
		return err
	}
	compressed := []string{}
	for i := range routes {
		compressed = append(compressed, fmt.Sprintf("compress%d", i+1))
	}
	if err := createRoute(apiAddr, "plain", backend, map[string]any{}); err != nil {
		return err
	}
	for _, r := range compressed {
		if err := createRoute(apiAddr, r, backend, map[string]any{"compress": map[string]any{"enabled": true}}); err != nil {
			return err
		}
	}
	// The plain route alone, then every compress route at once.
	for _, group := range [][]string{{"plain"}, compressed} {
		before := settledRSS(cmd.Process.Pid)
		var readers []net.Conn
		for _, route := range group {
			rs, err := stall(proxyAddr, route+".rss.test", conns, enc)
			readers = append(readers, rs...)
			if err != nil {
				closeAll(readers)
				return err
			}
		}
		during := settledRSS(cmd.Process.Pid)
		label := group[0]
		if len(group) > 1 {
			label = fmt.Sprintf("compress×%d", len(group))
		}
		fmt.Printf("%-10s %-12s %6d %9.1f MiB %9.1f MiB %+9.1f MiB\n", name, label, len(readers), mib(before), mib(during), mib(during-before))
		closeAll(readers)
	}
	return nil
}

// stall opens n connections with a tiny receive window, sends GET on
// each, reads the head of the answer and stops reading.
func stall(addr, host string, n int, enc string) ([]net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
		return errors.Join(err, serr)
	}}
	var out []net.Conn
	for i := range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return out, fmt.Errorf("connection %d: %w", i, err)
		}
		out = append(out, c)
		fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: %s\r\n\r\n", host, enc)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
			return out, fmt.Errorf("connection %d: answer %q: %v", i, line, err)
		}
	}
	return out, nil
}

func closeAll(cs []net.Conn) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// settledRSS polls VmRSS until three readings half a second apart agree
// within 1 MiB (or 20 s have passed), and returns the last.
func settledRSS(pid int) int64 {
	deadline := time.Now().Add(20 * time.Second)
	var last []int64
	for {
		last = append(last, rss(pid))
		if n := len(last); n >= 3 {
			lo, hi := last[n-3], last[n-3]
			for _, v := range last[n-3:] {
				lo, hi = min(lo, v), max(hi, v)
			}
			if hi-lo < 1<<20 || time.Now().After(deadline) {
				return last[n-1]
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// startBackend serves GET /big: 256 MiB of random lower-case text (about
// 1.6:1 compressible), so that no answer ends while its client stalls.
func startBackend() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		buf := make([]byte, 32<<10)
		rng := rand.New(rand.NewPCG(1, 2))
		for sent := 0; sent < 256<<20; sent += len(buf) {
			for i := range buf {
				buf[i] = 'a' + byte(rng.IntN(26))
			}
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
	return ln.Addr().String(), nil
}

func createRoute(api, name, backend string, cfg map[string]any) error {
	h, p, _ := net.SplitHostPort(backend)
	port, _ := strconv.Atoi(p)
	cfg["hostnames"] = []string{name + ".rss.test"}
	body, _ := json.Marshal(map[string]any{"name": name, "backends": []map[string]any{{"address": h, "port": port}}, "config": cfg})
	resp, err := http.Post("http://"+api+"/entrypoints", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST /entrypoints %s: %d %s", name, resp.StatusCode, b)
	}
	return nil
}

func waitReady(url string) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within 15s", url)
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

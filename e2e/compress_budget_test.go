package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The encoders' memory is one budget for the process, through the binary:
// with --compress-memory=3 (one zstd encoder, 2.1 MiB), a client that
// stalls a compressed answer on one route leaves none for another route,
// whose answers then go out uncompressed and whole; once the stalled
// client is gone, the other route compresses again.
func TestCompressMemoryIsOneBudget(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path != "/stream" {
			_, _ = io.WriteString(w, strings.Repeat("compress me ", 1000))
			return
		}
		// Far more than socket buffers hold, so that a client that does
		// not read holds its answer (and its encoder) open.
		buf := make([]byte, 32<<10)
		rng := rand.New(rand.NewPCG(1, 2))
		for range 2048 {
			for i := range buf {
				buf[i] = 'a' + byte(rng.IntN(26))
			}
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
	defer backend.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	p := startLevee(t, "--docker=false", "--compress-memory", "3")
	for _, name := range []string{"ca", "cb"} {
		createEntrypoint(t, p, fmt.Sprintf(`{"name":%q,"backends":[{"address":%q,"port":%s}],"config":{"hostnames":["%s.test"],"compress":{"enabled":true,"encodings":["zstd"]}}}`,
			name, host, port, name))
	}
	get := func(route string) (encoding string, body int, err error) {
		req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/small", nil)
		req.Host = route + ".test"
		req.Header.Set("Accept-Encoding", "zstd")
		resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableCompression: true}}).Do(req)
		if err != nil {
			return "", 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.Header.Get("Content-Encoding"), len(b), err
	}
	waitFor(t, "route cb compressing", func() error {
		if enc, _, err := get("cb"); err != nil || enc != "zstd" {
			return fmt.Errorf("Content-Encoding %q, %v", enc, err)
		}
		return nil
	})

	stalled := stallCompressed(t, p.ProxyAddr, "ca.test")
	enc, n, err := get("cb")
	if err != nil || enc != "" || n != 12000 {
		t.Fatalf("route cb while route ca holds the budget: Content-Encoding %q, %d bytes, %v; want the 12000 bytes as they are", enc, n, err)
	}
	waitFor(t, "levee_compress_budget_exhausted_total counted", func() error {
		if m := metrics(t, p); !strings.Contains(m, "\nlevee_compress_budget_exhausted_total 1\n") {
			return fmt.Errorf("%s", grepLines(m, "levee_compress"))
		}
		return nil
	})
	stalled.Close()
	waitFor(t, "route cb compressing again", func() error {
		if enc, _, err := get("cb"); err != nil || enc != "zstd" {
			return fmt.Errorf("Content-Encoding %q, %v", enc, err)
		}
		return nil
	})
}

// stallCompressed asks host for /stream with a tiny receive window, checks
// that the answer is compressed, and then reads nothing more.
func stallCompressed(t *testing.T, addr, host string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /stream HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: zstd\r\n\r\n", host)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(c, 16)
	compressed := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stalled answer's head: %v", err)
		}
		if strings.EqualFold(strings.TrimSpace(line), "Content-Encoding: zstd") {
			compressed = true
		}
		if line == "\r\n" {
			break
		}
	}
	if !compressed {
		t.Fatal("the stalled answer is not compressed")
	}
	return c
}

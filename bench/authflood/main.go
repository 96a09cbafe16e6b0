// Command authflood measures what a flood of wrong basic-auth passwords
// on one route costs an unrelated route: it builds and starts levee
// serve, adds two API routes on one local backend (open.bench without
// policies, auth.bench with basic auth at bcrypt cost 10), measures the
// open route's latency from one keep-alive connection while the process
// is quiet, then while attackers send wrong passwords to auth.bench, and
// prints p50 and p99 of both and the ratio of the p99s.
//
// Modes: -mode=single is the attack seen on the binary (16 keep-alive
// connections from one address); -mode=spread sends every wrong password
// from a fresh loopback address (127.1.0.0/16), so no per-client failure
// budget ever bites and only the process-wide bound on checks stands
// between the flood and the other routes.
//
//	cd bench && go run ./authflood -mode=single
//	cd bench && go run ./authflood -mode=spread
//	cd bench && go run ./authflood -src /tmp/levee-main   # another source tree
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func main() {
	src := flag.String("src", "..", "the Levee source tree to build")
	mode := flag.String("mode", "single", "single: 16 keep-alive connections from one address; spread: a fresh address per request")
	conns := flag.Int("conns", 16, "attacking connections")
	rate := flag.Float64("rate", 23, "wrong passwords a second over all connections (the attack seen on the binary); 0: each connection as fast as it gets answers")
	dur := flag.Duration("d", 10*time.Second, "each measurement's length")
	flag.Parse()
	if err := run(*src, *mode, *conns, *rate, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "authflood:", err)
		os.Exit(1)
	}
}

func run(src, mode string, conns int, rate float64, dur time.Duration) error {
	dir, err := os.MkdirTemp("", "authflood")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "levee")
	build := exec.Command("go", "build", "-o", bin, "./cmd/levee")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building levee in %s: %w\n%s", src, err, out)
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }))
	defer backend.Close()

	proxyAddr, apiAddr := freeAddr(), freeAddr()
	srv := exec.Command(bin, "serve", "--http-listen", proxyAddr, "--api-listen", apiAddr, "--state-file", filepath.Join(dir, "state"), "--log-level", "error")
	srv.Stdout, srv.Stderr = io.Discard, os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	if err := waitHTTP("http://" + apiAddr + "/health"); err != nil {
		return err
	}
	hash, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.DefaultCost)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	for _, ep := range []string{
		`{"name":"open","backends":[{"address":"127.0.0.1","port":` + port + `}],"config":{"hostnames":["open.bench"]}}`,
		`{"name":"auth","backends":[{"address":"127.0.0.1","port":` + port + `}],"config":{"hostnames":["auth.bench"],"basic_auth":{"users":["admin:` + string(hash) + `"]}}}`,
	} {
		resp, err := http.Post("http://"+apiAddr+"/entrypoints", "application/json", strings.NewReader(ep))
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("adding a route: %d %s", resp.StatusCode, body)
		}
	}
	proxy := "http://" + proxyAddr + "/"
	if err := waitRoute(proxy, "open.bench", http.StatusOK); err != nil {
		return err
	}
	if err := waitRoute(proxy, "auth.bench", http.StatusUnauthorized); err != nil {
		return err
	}

	quiet := measure(proxy, dur)
	ctx, stop := context.WithCancel(context.Background())
	answers := attack(ctx, proxy, mode, conns, rate)
	time.Sleep(2 * time.Second) // the flood reaches its steady state
	attacked := measure(proxy, dur)
	stop()
	counts := answers()

	fmt.Printf("levee from %s, %d cores, attack %s: %d connections, %.0f wrong passwords/s (0: unpaced)\n", src, numCPU(), mode, conns, rate)
	fmt.Printf("quiet:        %6d requests  p50 %8v  p99 %8v\n", len(quiet), pct(quiet, 50), pct(quiet, 99))
	fmt.Printf("under attack: %6d requests  p50 %8v  p99 %8v\n", len(attacked), pct(attacked, 50), pct(attacked, 99))
	fmt.Printf("attack answers: %v\n", counts)
	fmt.Printf("p99 ratio (attack / quiet): %.2f\n", float64(pct(attacked, 99))/float64(pct(quiet, 99)))
	return nil
}

// measure sends requests to open.bench from one keep-alive connection,
// one every 5 ms, for d, and returns their latencies.
func measure(proxy string, d time.Duration) []time.Duration {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 30 * time.Second}
	var out []time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, proxy, nil)
		req.Host = "open.bench"
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out = append(out, time.Since(start))
	}
	return out
}

// attack runs conns workers sending wrong passwords to auth.bench until
// ctx ends, rate a second over all of them (each waits for its answer
// first; rate 0: as fast as answers come); the returned function waits
// for them and returns the answers by status.
func attack(ctx context.Context, proxy, mode string, conns int, rate float64) func() map[int]int {
	var gap time.Duration
	if rate > 0 {
		gap = time.Duration(float64(conns) / rate * float64(time.Second))
	}
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	var seq atomic.Uint32
	for i := range conns {
		tr := &http.Transport{MaxIdleConnsPerHost: 1}
		if mode == "spread" {
			tr.DisableKeepAlives = true
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				n := seq.Add(1)
				local := &net.TCPAddr{IP: net.IPv4(127, 1, byte(n>>8), byte(n))}
				return (&net.Dialer{LocalAddr: local}).DialContext(ctx, network, addr)
			}
		}
		c := &http.Client{Transport: tr}
		wg.Go(func() {
			next := time.Now()
			for n := 0; ctx.Err() == nil; n++ {
				if gap > 0 {
					next = next.Add(gap)
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Until(next)):
					}
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, proxy, nil)
				req.Host = "auth.bench"
				req.SetBasicAuth("admin", fmt.Sprintf("guess-%d-%d", i, n))
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				counts[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	return func() map[int]int {
		wg.Wait()
		return counts
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(10 * time.Microsecond)
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitHTTP(url string) error {
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
	}
	return fmt.Errorf("%s did not answer", url)
}

func waitRoute(proxy, host string, want int) error {
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, proxy, nil)
		req.Host = host
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
		}
	}
	return fmt.Errorf("route %s never answered %d", host, want)
}

func numCPU() int {
	out, _ := exec.Command("nproc").Output()
	var n int
	_, _ = fmt.Sscan(string(bytes.TrimSpace(out)), &n)
	return n
}

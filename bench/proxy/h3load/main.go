// Command h3load is the HTTP/3 benchmark's load (see bench/proxy/h3.sh): a
// closed loop of GET requests over a few long-lived connections, HTTP/3
// (quic-go's client) or HTTP/2 over TLS (golang.org/x/net/http2's client),
// so that one run compares the two protocols through the same server with
// the same client code around them.
//
// For -duration, -conns connections each carry -streams concurrent
// requests, each stream sending its next request as soon as the last
// answer's body is read. Every answer must be a 200 in the asked protocol;
// any other counts as an error. It prints one tab-separated line: requests
// per second, p50 and p99 latency (µs), errors, the CPU time per request
// (µs) of process -pid (user + system, /proc/PID/stat) and of the load
// itself.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"

	"github.com/levee-proxy/levee/bench/proxy/internal/procstat"
)

// Config is one run.
type Config struct {
	URL      string        // https:// URL to GET
	Proto    string        // "h3" or "h2"
	Conns    int           // connections
	Streams  int           // concurrent requests on each
	Duration time.Duration // length of the run
	TLS      *tls.Config   // client TLS (server name, roots)
}

// Result is what a run counted.
type Result struct {
	Requests int64 // 200s in the asked protocol
	Errors   int64 // failed requests, other statuses or protocols
	Elapsed  time.Duration
	P50, P99 time.Duration
	LastErr  error // the last error, if any
}

// PerSec is completed requests per second.
func (r Result) PerSec() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

func main() {
	var c Config
	flag.StringVar(&c.URL, "url", "", "https:// URL to GET")
	flag.StringVar(&c.Proto, "proto", "h3", "h3 or h2")
	flag.IntVar(&c.Conns, "conns", 1, "connections")
	flag.IntVar(&c.Streams, "streams", 16, "concurrent requests per connection")
	flag.DurationVar(&c.Duration, "duration", 5*time.Second, "length of the run")
	addr := flag.String("connect-to", "", "host:port to connect to instead of the URL's (the URL's host stays the SNI and :authority)")
	pid := flag.Int("pid", 0, "process whose CPU time per request is reported (0: none)")
	flag.Parse()
	if c.URL == "" {
		log.Fatal("h3load: -url is needed")
	}
	c.TLS = &tls.Config{InsecureSkipVerify: true} // the benchmark's self-signed certificate
	rt, err := transport(c.Proto, c.TLS, *addr)
	if err != nil {
		log.Fatal(err)
	}
	self := os.Getpid()
	p0, s0 := cpu(*pid), cpu(self)
	res := Run(context.Background(), c, rt)
	p1, s1 := cpu(*pid), cpu(self)
	if res.Requests == 0 {
		log.Fatalf("h3load: no request answered over %s (%d errors; last: %v)", c.Proto, res.Errors, res.LastErr)
	}
	if res.Errors > 0 {
		log.Printf("h3load: %d errors, the last: %v", res.Errors, res.LastErr)
	}
	n := float64(res.Requests)
	fmt.Printf("%.0f\t%.1f\t%.1f\t%d\t%.2f\t%.2f\n", res.PerSec(),
		float64(res.P50.Nanoseconds())/1e3, float64(res.P99.Nanoseconds())/1e3, res.Errors,
		(p1-p0)*1e6/n, (s1-s0)*1e6/n)
}

func cpu(pid int) float64 {
	if pid == 0 {
		return 0
	}
	s, err := procstat.CPUSeconds(pid)
	if err != nil {
		log.Fatal(err)
	}
	return s
}

// roundTripper makes one client connection: a transport of its own, so
// that each of Config.Conns is a separate connection.
type roundTripper func() (http.RoundTripper, func())

// transport returns the connection maker of proto; addr, if set, is where
// every connection goes whatever the URL's host.
func transport(proto string, cfg *tls.Config, addr string) (roundTripper, error) {
	switch proto {
	case "h3":
		return func() (http.RoundTripper, func()) {
			t := &http3.Transport{TLSClientConfig: cfg.Clone()}
			if addr != "" {
				t.Dial = func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
					return quic.DialAddr(ctx, addr, tc, qc)
				}
			}
			return t, func() { _ = t.Close() }
		}, nil
	case "h2":
		return func() (http.RoundTripper, func()) {
			t := &http2.Transport{TLSClientConfig: cfg.Clone()}
			if addr != "" {
				t.DialTLSContext = func(ctx context.Context, network, _ string, tc *tls.Config) (net.Conn, error) {
					d := tls.Dialer{Config: tc}
					return d.DialContext(ctx, network, addr)
				}
			}
			return t, t.CloseIdleConnections
		}, nil
	}
	return nil, fmt.Errorf("h3load: unknown -proto %q (h3 or h2)", proto)
}

// Run sends requests for c.Duration and counts them.
func Run(ctx context.Context, c Config, rt roundTripper) Result {
	var (
		res   Result
		ok    atomic.Int64
		bad   atomic.Int64
		mu    sync.Mutex
		lat   [][]time.Duration
		wg    sync.WaitGroup
		start = time.Now()
	)
	end := start.Add(c.Duration)
	wantMajor := map[string]int{"h3": 3, "h2": 2}[c.Proto]
	for range c.Conns {
		t, closeT := rt()
		defer closeT()
		client := &http.Client{Transport: t, Timeout: 10 * time.Second}
		for range c.Streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := make([]time.Duration, 0, 1<<14)
				for {
					t0 := time.Now()
					if !t0.Before(end) {
						break
					}
					err := get(ctx, client, c.URL, wantMajor)
					if err != nil {
						bad.Add(1)
						mu.Lock()
						res.LastErr = err
						mu.Unlock()
						continue
					}
					ok.Add(1)
					l = append(l, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, l)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Requests, res.Errors = ok.Load(), bad.Load()
	all := slices.Concat(lat...)
	if len(all) > 0 {
		slices.Sort(all)
		res.P50, res.P99 = all[len(all)/2], all[len(all)*99/100]
	}
	return res
}

// get sends one GET and reads the answer to its end: a 200 in HTTP major
// version want, or an error.
func get(ctx context.Context, client *http.Client, url string, want int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("h3load: request for %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("h3load: GET %s: %w", url, err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return fmt.Errorf("h3load: reading the answer of %s: %w", url, err)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("h3load: GET %s: status %d", url, resp.StatusCode)
	case resp.ProtoMajor != want:
		return errors.New("h3load: GET " + url + ": answered in " + resp.Proto)
	}
	return nil
}

// Command handshakes counts new TLS connections per second against one
// server: for a fixed time, -conns workers each open a TCP connection, do a
// TLS handshake, send one HTTP/1.1 request with "Connection: close", read
// the answer to the end and close, over and over. With -resume each worker
// keeps a client session cache, so every connection after its first offers
// the last session ticket (TLS 1.2 ticket, TLS 1.3 PSK); without it every
// handshake is a full one.
//
// The request is there because a TLS 1.3 server sends its session tickets
// after the handshake: a client that closed right after the handshake would
// never read them, and could never resume. It is the same for every server.
//
// It prints one line of key=value pairs: conns (connections completed),
// per_sec, resumed (how many of them resumed a session), errors, and the
// version negotiated.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one measurement.
type Config struct {
	Addr       string        // host:port to connect to
	ServerName string        // SNI and Host header
	Duration   time.Duration // how long to open connections
	Conns      int           // concurrent workers
	Resume     bool          // offer sessions (a client session cache per worker)
	Version    uint16        // tls.VersionTLS12 or tls.VersionTLS13
	Curves     []tls.CurveID // key exchange groups offered; nil: Go's defaults
	Path       string        // request path
}

// Result is what Run counted.
type Result struct {
	Conns    int64 // connections that completed handshake, request and answer
	Resumed  int64 // of those, how many resumed a session
	Errors   int64 // connections that failed
	Elapsed  time.Duration
	Version  string // the version of the last connection
	LastFail string // the last error, if any
}

// PerSec is completed connections per second.
func (r Result) PerSec() float64 { return float64(r.Conns) / r.Elapsed.Seconds() }

// Run opens connections until c.Duration has passed.
func Run(c Config) Result {
	end := time.Now().Add(c.Duration)
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	// over says the run is over by the clock: a dial can fail on the
	// deadline a moment before ctx's timer marks ctx done.
	over := func() bool { return ctx.Err() != nil || !time.Now().Before(end) }
	var conns, resumed, failed atomic.Int64
	var mu sync.Mutex
	var version, lastFail string
	req := "GET " + c.Path + " HTTP/1.1\r\nHost: " + c.ServerName + "\r\nConnection: close\r\n\r\n"
	start := time.Now()
	var wg sync.WaitGroup
	for range c.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := &tls.Config{
				ServerName: c.ServerName,
				// The chain is not verified (the bench certificate is
				// self-signed, and verifying it would add the same client
				// cost to every server); the handshake signature is.
				InsecureSkipVerify: true,
				MinVersion:         c.Version,
				MaxVersion:         c.Version,
				CurvePreferences:   c.Curves,
				NextProtos:         []string{"http/1.1"},
			}
			if c.Resume {
				cfg.ClientSessionCache = tls.NewLRUClientSessionCache(1)
			}
			d := &net.Dialer{Timeout: 5 * time.Second}
			for !over() {
				did, v, err := once(ctx, d, c.Addr, cfg, req)
				switch {
				case err == nil:
					conns.Add(1)
					if did {
						resumed.Add(1)
					}
					mu.Lock()
					version = v
					mu.Unlock()
				case over():
					// cut off at the end of the run: not a failure
				default:
					failed.Add(1)
					mu.Lock()
					lastFail = err.Error()
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return Result{Conns: conns.Load(), Resumed: resumed.Load(), Errors: failed.Load(),
		Elapsed: time.Since(start), Version: version, LastFail: lastFail}
}

// once does one connection: handshake, request, whole answer.
func once(ctx context.Context, d *net.Dialer, addr string, cfg *tls.Config, req string) (resumed bool, version string, err error) {
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, "", err
	}
	defer raw.Close()
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl.Add(2 * time.Second))
	}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		return false, "", err
	}
	if _, err := io.WriteString(conn, req); err != nil {
		return false, "", err
	}
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil {
		return false, "", err
	}
	if !strings.Contains(status, " 200 ") {
		return false, "", fmt.Errorf("answer %q", strings.TrimSpace(status))
	}
	if _, err := io.Copy(io.Discard, br); err != nil && !errors.Is(err, io.EOF) {
		return false, "", err
	}
	st := conn.ConnectionState()
	return st.DidResume, tls.VersionName(st.Version), nil
}

func main() {
	var c Config
	var version, curves string
	flag.StringVar(&c.Addr, "addr", "127.0.0.1:18543", "server host:port")
	flag.StringVar(&c.ServerName, "servername", "bench.local", "SNI and Host header")
	flag.DurationVar(&c.Duration, "d", 3*time.Second, "how long to open connections")
	flag.IntVar(&c.Conns, "c", 16, "concurrent connections")
	flag.BoolVar(&c.Resume, "resume", false, "resume sessions (a client session cache per connection worker)")
	flag.StringVar(&version, "tls", "1.3", "TLS version: 1.2 or 1.3")
	flag.StringVar(&curves, "curves", "x25519,p256", "key exchange groups offered, in order: x25519, p256, mlkem (X25519MLKEM768), comma-separated, or default (Go's); a TLS 1.2 client must list p256 for OpenSSL to accept an ECDSA P-256 certificate")
	flag.StringVar(&c.Path, "path", "/", "request path")
	flag.Parse()
	switch version {
	case "1.2":
		c.Version = tls.VersionTLS12
	case "1.3":
		c.Version = tls.VersionTLS13
	default:
		fmt.Fprintf(os.Stderr, "-tls %q: want 1.2 or 1.3\n", version)
		os.Exit(2)
	}
	if curves != "default" {
		for _, s := range strings.Split(curves, ",") {
			switch s {
			case "x25519":
				c.Curves = append(c.Curves, tls.X25519)
			case "p256":
				c.Curves = append(c.Curves, tls.CurveP256)
			case "mlkem":
				c.Curves = append(c.Curves, tls.X25519MLKEM768)
			default:
				fmt.Fprintf(os.Stderr, "-curves: unknown group %q\n", s)
				os.Exit(2)
			}
		}
	}
	r := Run(c)
	fmt.Printf("conns=%d per_sec=%.1f resumed=%d errors=%d version=%q elapsed=%.2fs\n",
		r.Conns, r.PerSec(), r.Resumed, r.Errors, r.Version, r.Elapsed.Seconds())
	if r.Errors > 0 {
		fmt.Fprintf(os.Stderr, "last error: %s\n", r.LastFail)
	}
	if r.Conns == 0 {
		os.Exit(1)
	}
}

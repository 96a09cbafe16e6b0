// Command echo is a tiny HTTP backend for Levee's tests and demos.
//
// Every request outside /_echo/ is answered with a JSON document saying who
// answered (the host name, which is the container ID inside Docker, and the
// optional ECHO_NAME) and what request arrived (method, host, path, query,
// headers, remote address). The response also carries the header
// X-Echo-Hostname so tests can tell replicas apart without parsing the body.
//
// The backend can be told to misbehave, so proxy tests can exercise breakers,
// timeouts and health checks. Control endpoints (POST unless noted):
//
//	/_echo/fail?status=500&rate=1.0  answer status (default 500) to a share rate
//	                                 (0..1, default 1) of ordinary requests;
//	                                 /_echo/health then answers 503
//	/_echo/hang?duration=30s         hold ordinary requests for duration, or
//	                                 until /_echo/ok when duration is omitted
//	/_echo/slow?delay=200ms          delay every ordinary request by delay
//	/_echo/ok                        recover: clear fail, hang and slow, and
//	                                 release every request that is hanging
//	/_echo/health (GET)              200 while healthy, 503 while failing
//	/_echo/state (GET)               the current control state as JSON
//
// Control endpoints are never failed, delayed or held themselves.
//
// Flags and environment:
//
//	-listen ADDR      listen address (env ECHO_LISTEN, default ":8080")
//	-udp ADDR         also echo UDP datagrams on ADDR (env ECHO_UDP): each
//	                  datagram is answered with the name (ECHO_NAME, else the
//	                  host name), ":" and the datagram
//	-tls-cert F, -tls-key F  serve HTTPS with this certificate and key
//	                  (env ECHO_TLS_CERT, ECHO_TLS_KEY)
//	-proxy-protocol   every connection opens with a PROXY v1/v2 header from
//	                  any peer; its client is the remote_addr echoed (env
//	                  ECHO_PROXY_PROTOCOL=1)
//	-healthcheck URL  probe URL once and exit 0 on a 2xx answer, 1 otherwise;
//	                  FROM scratch images have no shell or curl, so a
//	                  HEALTHCHECK runs the binary itself:
//	                  HEALTHCHECK CMD ["/echo","-healthcheck","http://127.0.0.1:8080/_echo/health"]
//
// On SIGTERM or SIGINT the server shuts down at once, so `docker stop` does
// not wait for its kill timeout; with -drain D (env ECHO_DRAIN) it first
// keeps serving, new connections too, for D, as a backend that wants no
// request lost does while its proxy takes it out of rotation
// (docs/operations.md, rolling restarts).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/levee-proxy/levee/router/httpx/proxyheader"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

// run is main without the process exit, so flag handling can be tested.
func run(args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", envOr(getenv, "ECHO_LISTEN", ":8080"), "listen address (env ECHO_LISTEN)")
	probe := fs.String("healthcheck", "", "probe this URL once and exit 0 on 2xx, 1 otherwise")
	udpAddr := fs.String("udp", getenv("ECHO_UDP"), "also echo UDP datagrams on this address, prefixed with the name and ':' (env ECHO_UDP)")
	drain := fs.Duration("drain", 0, "after SIGTERM, keep serving for this long before shutting down (env ECHO_DRAIN)")
	proxyProtocol := fs.Bool("proxy-protocol", getenv("ECHO_PROXY_PROTOCOL") == "1", "every connection opens with a PROXY v1/v2 header, whose client is the remote_addr echoed (env ECHO_PROXY_PROTOCOL=1)")
	tlsCert := fs.String("tls-cert", getenv("ECHO_TLS_CERT"), "serve HTTPS with this certificate (PEM file; env ECHO_TLS_CERT); needs -tls-key")
	tlsKey := fs.String("tls-key", getenv("ECHO_TLS_KEY"), "the private key (PEM file) of -tls-cert (env ECHO_TLS_KEY)")
	if d := getenv("ECHO_DRAIN"); d != "" {
		v, err := time.ParseDuration(d)
		if err != nil || v < 0 {
			fmt.Fprintf(stderr, "echo: ECHO_DRAIN=%q: want a duration such as 500ms\n", d)
			return 2
		}
		*drain = v
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		fmt.Fprintln(stderr, "echo: -tls-cert and -tls-key go together")
		return 2
	}
	if *probe != "" {
		if err := healthcheck(*probe, 3*time.Second); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}

	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	srv := &http.Server{
		Handler:           newServer(host, getenv("ECHO_NAME"), rand.Float64),
		ReadHeaderTimeout: 10 * time.Second,
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "echo: listen on %s: %v\n", *listen, err)
		return 1
	}
	if *proxyProtocol {
		// A test backend trusts every peer's header.
		ln = proxyheader.Listen(ln, proxyheader.Options{Trusted: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}})
	}
	logger := log.New(stderr, "", log.LstdFlags)
	logger.Printf("echo: %s listening on %s", host, ln.Addr())
	if *udpAddr != "" {
		pc, err := net.ListenPacket("udp", *udpAddr)
		if err != nil {
			fmt.Fprintf(stderr, "echo: listen on udp %s: %v\n", *udpAddr, err)
			return 1
		}
		defer pc.Close()
		name := getenv("ECHO_NAME")
		if name == "" {
			name = host
		}
		logger.Printf("echo: %s echoing UDP on %s", host, pc.LocalAddr())
		go func() { _ = echoUDP(pc, name) }()
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 1)
	go func() {
		if *tlsCert != "" {
			errc <- srv.ServeTLS(ln, *tlsCert, *tlsKey)
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "echo: serve: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	if *drain > 0 {
		logger.Printf("echo: stop signal: serving for %s more", *drain)
		time.Sleep(*drain) // the drain itself: serving goes on meanwhile
	}
	// Hanging requests would hold a graceful shutdown for their whole
	// duration; a test backend should just go.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(stderr, "echo: shutdown: %v\n", err)
	}
	return 0
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// healthcheck is the -healthcheck mode: one GET, success on 2xx.
func healthcheck(url string, timeout time.Duration) error {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("healthcheck %s: status %d", url, resp.StatusCode)
	}
	return nil
}

// echoUDP answers each datagram on pc with name, ":" and the datagram,
// until pc is closed.
func echoUDP(pc net.PacketConn, name string) error {
	buf := make([]byte, 65507)
	prefix := []byte(name + ":")
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		if _, err := pc.WriteTo(append(append([]byte(nil), prefix...), buf[:n]...), from); err != nil {
			return fmt.Errorf("echo: udp reply to %s: %w", from, err)
		}
	}
}

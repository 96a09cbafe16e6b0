package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/proxy/tcp"
)

// listenerSpec is one proxy listener:
// `--listen name=addr[,tls[,h3[,0rtt]]|,h2c][,public-port=N][,header-timeout=D][,idle-timeout=D]`,
// or a plain TCP listener `--listen name=addr,tcp`.
type listenerSpec struct {
	Name string
	Addr string
	TLS  bool
	// H2C: a plain listener serves cleartext HTTP/2 with prior knowledge
	// beside HTTP/1.1 (h2cListener), for gRPC clients without TLS.
	H2C bool
	// H3: a TLS listener serves HTTP/3 on the UDP port of the same
	// number too (router/httpx/h3), advertised by Alt-Svc on its TCP
	// answers.
	H3 bool
	// ZeroRTT: the HTTP/3 side accepts 0-RTT early data from resumed
	// clients (replayable: only routes with earlyData serve safe
	// requests in it; the rest wait for the handshake).
	ZeroRTT bool
	// TCP marks a plain TCP listener: it serves the TCP routes that name
	// it (router/proxy/tcp) and no HTTP.
	TCP bool
	// ProxyProtocol: every connection comes from a trusted load balancer
	// (--trusted-proxies) and opens with a PROXY header naming the client
	// (router/httpx/proxyheader); any other is closed.
	ProxyProtocol bool
	// UDP marks a UDP listener: it serves the UDP route that names it
	// (router/proxy/udp).
	UDP bool
	// PublicPort is the port clients reach a TLS listener on, when it is
	// not the port of Addr (a published container port): redirects to the
	// listener carry it. Zero: Addr's port.
	PublicPort int
	// HeaderTimeout bounds reading a request head (and, on a TLS
	// listener, the handshake); IdleTimeout closes a keep-alive
	// connection with no request. Zero: the defaults (proxyReadHeaderTimeout,
	// proxyIdleTimeout).
	HeaderTimeout time.Duration
	IdleTimeout   time.Duration
}

func (s listenerSpec) headerTimeout() time.Duration {
	if s.HeaderTimeout > 0 {
		return s.HeaderTimeout
	}
	return proxyReadHeaderTimeout
}

func (s listenerSpec) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return proxyIdleTimeout
}

// defaultListenerName names the listener of --http-listen (Traefik's name
// for its plain entry point, so compose files read the same).
const defaultListenerName = "web"

// listenFlag is the repeatable --listen flag. Its environment form
// LEVEE_LISTEN holds several, separated by spaces or ';' (a comma
// belongs to one item: "web=:80;websecure=:443,tls").
type listenFlag struct{ specs *[]listenerSpec }

func (f listenFlag) String() string {
	if f.specs == nil {
		return ""
	}
	var items []string
	for _, s := range *f.specs {
		item := s.Name + "=" + s.Addr
		if s.TLS {
			item += ",tls"
		}
		if s.H2C {
			item += ",h2c"
		}
		if s.H3 {
			item += ",h3"
		}
		if s.ZeroRTT {
			item += ",0rtt"
		}
		if s.TCP {
			item += ",tcp"
		}
		if s.PublicPort > 0 {
			item += ",public-port=" + strconv.Itoa(s.PublicPort)
		}
		if s.HeaderTimeout > 0 {
			item += ",header-timeout=" + s.HeaderTimeout.String()
		}
		if s.IdleTimeout > 0 {
			item += ",idle-timeout=" + s.IdleTimeout.String()
		}
		items = append(items, item)
	}
	return strings.Join(items, ";")
}

func (f listenFlag) Set(v string) error {
	items := strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ' ' || r == '\t' || r == '\n' })
	if len(items) == 0 {
		return errors.New("want name=addr[,tls]")
	}
	for _, item := range items {
		s, err := parseListener(item)
		if err != nil {
			return err
		}
		*f.specs = append(*f.specs, s)
	}
	return nil
}

// parseListener parses
// "name=addr[,tls[,h3[,0rtt]]|,h2c|,tcp|,udp][,proxy-protocol][,public-port=N][,header-timeout=D][,idle-timeout=D]".
func parseListener(item string) (listenerSpec, error) {
	name, rest, ok := strings.Cut(item, "=")
	if !ok || !config.ValidListenerName(name) {
		return listenerSpec{}, fmt.Errorf("%q: want name=addr[,tls], the name of lower-case letters, digits, '-' and '_'", item)
	}
	opts := strings.Split(rest, ",")
	s := listenerSpec{Name: name, Addr: opts[0]}
	for _, opt := range opts[1:] {
		key, value, _ := strings.Cut(opt, "=")
		var target *time.Duration
		switch key {
		case "tls":
			s.TLS = true
			continue
		case "h2c":
			s.H2C = true
			continue
		case "h3":
			s.H3 = true
			continue
		case "0rtt":
			s.ZeroRTT = true
			continue
		case "tcp":
			s.TCP = true
			continue
		case "proxy-protocol":
			s.ProxyProtocol = true
			continue
		case "udp":
			s.UDP = true
			continue
		case "public-port":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 || n > 65535 {
				return s, fmt.Errorf("%q: public-port wants a port from 1 to 65535, not %q", item, value)
			}
			s.PublicPort = n
			continue
		case "header-timeout":
			target = &s.HeaderTimeout
		case "idle-timeout":
			target = &s.IdleTimeout
		default:
			return s, fmt.Errorf("%q: unknown option %q (want tls, h2c, h3, 0rtt, tcp, udp, proxy-protocol, public-port=N, header-timeout=D or idle-timeout=D)", item, opt)
		}
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("%q: %s wants a positive duration (e.g. 5s), not %q", item, key, value)
		}
		*target = d
	}
	if _, _, err := net.SplitHostPort(s.Addr); err != nil {
		return s, fmt.Errorf("%q: address %q: want host:port or :port", item, s.Addr)
	}
	if s.TCP && (s.TLS || s.H2C || s.H3 || s.PublicPort > 0 || s.HeaderTimeout > 0 || s.IdleTimeout > 0) {
		// A TCP listener carries no HTTP: its limits are its routes'
		// (tcp.idleTimeout, tcp.connectTimeout); TCP routes on a TLS
		// listener are chosen by SNI there (tcp.sni).
		return s, fmt.Errorf("%q: a tcp listener takes no other option but proxy-protocol (TLS passthrough is by SNI on a tls listener; timeouts are the routes' tcp.* fields)", item)
	}
	if s.UDP && (s.TCP || s.TLS || s.H2C || s.H3 || s.ProxyProtocol || s.PublicPort > 0 || s.HeaderTimeout > 0 || s.IdleTimeout > 0) {
		// A UDP listener's only setting is its route's udp.idleTimeout.
		return s, fmt.Errorf("%q: a udp listener takes no other option (the session timeout is the route's udp.idleTimeout)", item)
	}
	if s.H3 && s.ProxyProtocol {
		// A PROXY header precedes a TCP stream; QUIC datagrams carry none,
		// so the HTTP/3 side could not tell its clients from its peers.
		return s, fmt.Errorf("%q: proxy-protocol applies to TCP connections; an h3 listener's QUIC side would take clients without it", item)
	}
	if s.H2C && s.TLS {
		// A TLS listener serves HTTP/2 already, chosen by ALPN.
		return s, fmt.Errorf("%q: h2c is cleartext HTTP/2 on a plain listener; a tls listener serves h2 by ALPN already", item)
	}
	if s.H3 && !s.TLS {
		// QUIC is TLS 1.3 always (RFC 9001): HTTP/3 has no cleartext form.
		return s, fmt.Errorf("%q: h3 is HTTP/3 over QUIC, which is always TLS; add tls", item)
	}
	if s.ZeroRTT && !s.H3 {
		// 0-RTT is QUIC's here: the TCP side never accepts early data.
		return s, fmt.Errorf("%q: 0rtt is early data on the HTTP/3 side; add h3 (and tls)", item)
	}
	if s.PublicPort > 0 && !s.TLS {
		// Only TLS listeners are redirect targets: on a plain one the
		// option would say nothing.
		return s, fmt.Errorf("%q: public-port is the port of redirects to a TLS listener; add tls or leave it out", item)
	}
	return s, nil
}

// listeners returns the proxy listeners: those of --listen, and the plain
// listener "web" of --http-listen when no --listen is given or when
// --http-listen is given explicitly too.
func (c serveConfig) listeners() ([]listenerSpec, error) {
	out := append([]listenerSpec(nil), c.Listen...)
	if len(out) == 0 || c.httpListenGiven {
		out = append([]listenerSpec{{Name: defaultListenerName, Addr: c.HTTPListen}}, out...)
	}
	seen := map[string]bool{}
	for _, s := range out {
		if seen[s.Name] {
			return nil, fmt.Errorf("--listen: listener %q declared twice (--http-listen declares %q)", s.Name, defaultListenerName)
		}
		seen[s.Name] = true
	}
	return out, nil
}

// hasTLS reports whether a TLS listener is declared.
func hasTLS(specs []listenerSpec) bool {
	for _, s := range specs {
		if s.TLS {
			return true
		}
	}
	return false
}

// routerListeners turns the specs into what the matcher sees. A plain
// listener redirects to the TLS listeners, on their public ports.
func routerListeners(specs []listenerSpec) []*router.Listener {
	out := make([]*router.Listener, len(specs))
	var tlsListeners []*router.Listener
	for i, s := range specs {
		out[i] = &router.Listener{Name: s.Name, TLS: s.TLS, TCP: s.TCP, UDP: s.UDP}
		if s.TLS {
			out[i].PublicPort = s.PublicPort
			if out[i].PublicPort == 0 {
				_, port, _ := net.SplitHostPort(s.Addr)
				out[i].PublicPort, _ = strconv.Atoi(port)
			}
			tlsListeners = append(tlsListeners, out[i])
		}
	}
	for _, l := range out {
		if !l.TLS && !l.TCP && !l.UDP {
			l.TLSListeners = tlsListeners
		}
	}
	return out
}

// The limits every proxy listener's server applies.
const (
	proxyReadHeaderTimeout = 10 * time.Second
	proxyIdleTimeout       = 120 * time.Second
	proxyMaxHeaderBytes    = 1 << 20
)

// tcpServer serves a TCP listener with the TCP routes' proxy: the
// httpServer serve runs and stops.
type tcpServer struct {
	p    *tcp.Proxy
	name string

	mu sync.Mutex
	ln net.Listener
}

func (s *tcpServer) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	err := s.p.Serve(ln, s.name)
	if errors.Is(err, net.ErrClosed) {
		return http.ErrServerClosed
	}
	return err
}

// Shutdown stops accepting and waits for the relayed connections (of
// every TCP route, SNI ones included) until ctx ends.
func (s *tcpServer) Shutdown(ctx context.Context) error {
	s.closeListener()
	return s.p.Shutdown(ctx)
}

func (s *tcpServer) Close() error {
	s.closeListener()
	return s.p.Close()
}

func (s *tcpServer) closeListener() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		_ = s.ln.Close()
	}
}

// tcpDrain stops the TCP proxy with the servers: Shutdown waits for the
// relayed connections, Close cuts them. It serves nothing itself.
type tcpDrain struct{ p *tcp.Proxy }

func (d tcpDrain) Serve(net.Listener) error { return errors.New("tcpDrain serves no listener") }

func (d tcpDrain) Shutdown(ctx context.Context) error { return d.p.Shutdown(ctx) }

func (d tcpDrain) Close() error { return d.p.Close() }

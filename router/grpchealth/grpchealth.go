// Package grpchealth asks backends for their health over the gRPC health
// protocol (grpc/doc/health-checking.md): a unary call of
// grpc.health.v1.Health/Check with a HealthCheckRequest{service}, whose
// HealthCheckResponse{status} is SERVING when the service (the server as
// a whole for "") can take calls. The two messages are one field each,
// so they are written and read with protowire rather than a gRPC client:
// a probe is one HTTP/2 request, as a plain health check is one HTTP/1.1
// one. Transports keeps the probes' HTTP/2 connections, one pool per
// backend TLS configuration, so that a route's probes verify its backends
// as its requests do.
package grpchealth

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

const (
	// Path is the health service's Check method.
	Path = "/grpc.health.v1.Health/Check"
	// serving is HealthCheckResponse.ServingStatus SERVING.
	serving = 1
	// maxMessage bounds the answer a probe reads: the real one
	// is a few bytes.
	maxMessage = 4 << 10
)

// Transports are the HTTP/2 connections of gRPC health checks, one
// transport per backend TLS configuration (nil: h2c). The zero value is
// usable; set the fields before the first Get.
type Transports struct {
	// DialTimeout bounds connecting, and the TLS handshake.
	DialTimeout time.Duration
	// IdleConnTimeout closes connections unused this long (0: never).
	IdleConnTimeout time.Duration
	// MaxHeaderBytes bounds an answer's head (0: net/http's default).
	MaxHeaderBytes int64

	mu sync.Mutex
	m  map[*tls.Config]*http.Transport
}

// Get returns the transport for cfg (nil: cleartext HTTP/2 with prior
// knowledge, RFC 9113 3.3), creating it the first time.
func (g *Transports) Get(cfg *tls.Config) *http.Transport {
	g.mu.Lock()
	defer g.mu.Unlock()
	if tr := g.m[cfg]; tr != nil {
		return tr
	}
	if g.m == nil {
		g.m = make(map[*tls.Config]*http.Transport)
	}
	var p http.Protocols
	d := &net.Dialer{Timeout: g.DialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                  nil, // never route backend traffic through HTTP_PROXY
		DialContext:            d.DialContext,
		Protocols:              &p,
		IdleConnTimeout:        g.IdleConnTimeout,
		MaxResponseHeaderBytes: g.MaxHeaderBytes,
		DisableCompression:     true,
		TLSHandshakeTimeout:    g.DialTimeout,
	}
	if cfg == nil {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP2(true)
		c := cfg.Clone()
		c.NextProtos = []string{"h2"}
		tr.TLSClientConfig = c
	}
	g.m[cfg] = tr
	return tr
}

// CloseIdle closes the connections no probe is using.
func (g *Transports) CloseIdle() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, tr := range g.m {
		tr.CloseIdleConnections()
	}
}

// Probe is how a route's gRPC health checks reach its backends.
type Probe struct {
	client *http.Client
	scheme string // "http" (h2c) or "https" (h2)
	// err, when set, fails every probe: the route's backend TLS could
	// not be compiled, and its requests fail the same way.
	err error
}

// NewProbe returns the probe of a route over trs: h2 with the route's
// backend TLS cfg when speaksTLS, else h2c. A cfgErr (the route's backend
// TLS could not be compiled) fails every check, as it fails the route's
// requests.
func NewProbe(trs *Transports, speaksTLS bool, cfg *tls.Config, cfgErr error) *Probe {
	if !speaksTLS {
		return &Probe{client: &http.Client{Transport: trs.Get(nil)}, scheme: "http"}
	}
	if cfgErr != nil {
		return &Probe{err: fmt.Errorf("backend TLS: %w", cfgErr)}
	}
	return &Probe{client: &http.Client{Transport: trs.Get(cfg)}, scheme: "https"}
}

// Check asks the backend at hostport for service's health within timeout
// (also sent as grpc-timeout); nil means SERVING.
func (p *Probe) Check(ctx context.Context, hostport, service string, timeout time.Duration) error {
	if p.err != nil {
		return p.err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.scheme+"://"+hostport+Path,
		bytes.NewReader(healthRequest(service)))
	if err != nil {
		return fmt.Errorf("gRPC health request to %s: %w", hostport, err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	req.Header.Set("User-Agent", "levee-health-check")
	// The backend may give up when the prober does (gRPC over HTTP2:
	// "Timeout" in milliseconds).
	req.Header.Set("Grpc-Timeout", strconv.FormatInt(max(timeout.Milliseconds(), 1), 10)+"m")
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("gRPC health check of %s: %w", hostport, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/grpc") {
		return fmt.Errorf("gRPC health check of %s: HTTP %d %q is not a gRPC answer", hostport, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMessage+1))
	if err != nil {
		return fmt.Errorf("gRPC health check of %s: reading the answer: %w", hostport, err)
	}
	if len(body) > maxMessage {
		return fmt.Errorf("gRPC health check of %s: answer over %d bytes", hostport, maxMessage)
	}
	// Trailers-Only answers carry grpc-status in the head, others in the
	// trailers, read once the body is.
	st := resp.Trailer.Get("Grpc-Status")
	if st == "" {
		st = resp.Header.Get("Grpc-Status")
	}
	if st != "0" {
		msg := resp.Trailer.Get("Grpc-Message") + resp.Header.Get("Grpc-Message")
		return fmt.Errorf("gRPC health check of %s: grpc-status %q %s", hostport, st, msg)
	}
	status, err := healthStatus(body)
	if err != nil {
		return fmt.Errorf("gRPC health check of %s: %w", hostport, err)
	}
	if status != serving {
		return fmt.Errorf("gRPC health check of %s: status %d, not SERVING", hostport, status)
	}
	return nil
}

// healthRequest is a length-prefixed HealthCheckRequest{service = 1}
// (gRPC over HTTP2: Length-Prefixed-Message, uncompressed).
func healthRequest(service string) []byte {
	var msg []byte
	if service != "" {
		msg = protowire.AppendTag(msg, 1, protowire.BytesType)
		msg = protowire.AppendString(msg, service)
	}
	out := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
	return append(out, msg...)
}

// healthStatus reads HealthCheckResponse.status (field 1, an enum)
// from one length-prefixed message; an absent field is its zero, UNKNOWN.
func healthStatus(frame []byte) (uint64, error) {
	if len(frame) < 5 {
		return 0, errors.New("no response message")
	}
	if frame[0] != 0 {
		return 0, errors.New("compressed response message (none was accepted)")
	}
	n := binary.BigEndian.Uint32(frame[1:5])
	msg := frame[5:]
	if uint64(n) != uint64(len(msg)) {
		return 0, fmt.Errorf("response message of %d bytes where %d were announced", len(msg), n)
	}
	var status uint64
	for len(msg) > 0 {
		num, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return 0, fmt.Errorf("response message: %w", protowire.ParseError(l))
		}
		msg = msg[l:]
		if num == 1 && typ == protowire.VarintType {
			v, l := protowire.ConsumeVarint(msg)
			if l < 0 {
				return 0, fmt.Errorf("response status: %w", protowire.ParseError(l))
			}
			status, msg = v, msg[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(num, typ, msg)
		if l < 0 {
			return 0, fmt.Errorf("response message: %w", protowire.ParseError(l))
		}
		msg = msg[l:]
	}
	return status, nil
}

package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/status"
)

// Defaults for Options fields left zero.
const (
	// DefaultHeartbeat is how often an idle SSE stream gets a comment line,
	// so proxies and clients can tell a quiet stream from a dead one.
	DefaultHeartbeat = 15 * time.Second
	// DefaultEventBuffer is the per-subscriber event buffer; a slower
	// client loses events (the router counts them) rather than stalling it.
	DefaultEventBuffer = 256
	// MaxBodyBytes is the largest accepted request body (1 MiB).
	MaxBodyBytes = 1 << 20
	// DashboardPath is where Options.Dashboard is served.
	DashboardPath = "/dashboard/"
)

// Options configures New.
type Options struct {
	// Router is the running router (see Router). Required.
	Router Router
	// Store holds and persists the API's own entrypoints. Required.
	Store *Store
	// Codec validates request payloads (only Decode is used here; the
	// Store encodes). Required.
	Codec Codec
	// Gatherer is served on /metrics. Required.
	Gatherer prometheus.Gatherer
	// Ready lists what /ready waits for, e.g. the docker provider's first
	// sync. Empty means ready at once.
	Ready []ReadyCheck
	// AdminToken (--api-token) allows every method; ReadToken
	// (--api-read-token) allows GET only. With neither, the API is open
	// (CheckListen makes sure that only happens on loopback).
	AdminToken string
	ReadToken  string
	// Logger receives entrypoint changes and breaker control, with who.
	Logger zerolog.Logger
	// Heartbeat is the SSE keep-alive interval; 0 means DefaultHeartbeat.
	Heartbeat time.Duration
	// EventBuffer is each SSE subscriber's buffer; 0 means
	// DefaultEventBuffer.
	EventBuffer int
	// Dashboard, when set, is served at /dashboard/ without a token: it
	// must serve static files only (package api/dashboard), which then
	// call this API with the user's token like any client.
	Dashboard http.Handler
	// Certificates lists the certificates the TLS listeners serve (GET
	// /certificates); nil or an empty list without a TLS listener.
	Certificates func() []status.CertificateStatus
	// ListenAddr is the API's listen address (host:port, --api-listen);
	// its host is a name the API answers to (origin.go). Empty: only
	// loopback names and Hosts.
	ListenAddr string
	// Hosts are more names the API answers to (--api-hosts), e.g. the
	// name a scraper or a reverse proxy uses; a port is ignored.
	Hosts []string
}

// ReadyCheck is one thing /ready waits for.
type ReadyCheck struct {
	// Name is reported while pending, e.g. "docker".
	Name string
	// Ready reports whether it is ready, e.g. (*docker.Provider).Synced.
	Ready func() bool
	// Connection, when set, reports the provider's connection to its
	// source for /ready's providers list.
	Connection func() Connection
}

// Connection is a provider's connection to its source, as /ready shows
// it.
type Connection struct {
	// State is the provider's own word for it; the docker provider's are
	// connecting, connected and disconnected.
	State string `json:"state"`
	// Since is when the provider last became connected or stopped being
	// connected; the state changes of its retries do not move it.
	Since time.Time `json:"since"`
	// Error ended the last attempt or connection; empty once connected.
	Error string `json:"error,omitempty"`
	// Reconnects counts the connection attempts after the first.
	Reconnects uint64 `json:"reconnects"`
}

// Server is the API's http.Handler.
type Server struct {
	router    Router
	store     *Store
	codec     Codec
	ready     []ReadyCheck
	auth      authenticator
	log       zerolog.Logger
	heartbeat time.Duration
	buffer    int
	certs     func() []status.CertificateStatus
	hosts     hostPolicy
	origins   *http.CrossOriginProtection

	metricsHandler http.Handler

	mux     *http.ServeMux
	routes  []route
	openapi []byte
}

// New builds the API handler. It logs a warning once when it runs without
// tokens.
func New(opts Options) (*Server, error) {
	switch {
	case opts.Router == nil:
		return nil, errors.New("api: Options.Router is required")
	case opts.Store == nil:
		return nil, errors.New("api: Options.Store is required")
	case opts.Codec.Decode == nil:
		return nil, errors.New("api: Options.Codec needs Decode")
	case opts.Gatherer == nil:
		return nil, errors.New("api: Options.Gatherer is required")
	}
	for i, c := range opts.Ready {
		if c.Name == "" || c.Ready == nil {
			return nil, fmt.Errorf("api: Options.Ready[%d] needs a Name and a Ready func", i)
		}
	}
	hosts, err := newHostPolicy(opts.ListenAddr, opts.Hosts)
	if err != nil {
		return nil, err
	}
	s := &Server{
		router:    opts.Router,
		store:     opts.Store,
		codec:     opts.Codec,
		ready:     opts.Ready,
		auth:      newAuthenticator(opts.AdminToken, opts.ReadToken),
		log:       opts.Logger,
		heartbeat: opts.Heartbeat,
		buffer:    opts.EventBuffer,
		certs:     opts.Certificates,
		hosts:     hosts,
		origins:   http.NewCrossOriginProtection(),
		mux:       http.NewServeMux(),
	}
	s.metricsHandler = promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{})
	if s.heartbeat <= 0 {
		s.heartbeat = DefaultHeartbeat
	}
	if s.buffer <= 0 {
		s.buffer = DefaultEventBuffer
	}
	s.routes = append(s.routeTable(), s.trafficRoutes()...)
	for _, rt := range s.routes {
		s.mux.Handle(rt.pattern(), s.guard(rt.access, rt.handler))
	}
	if opts.Dashboard != nil {
		// Not an API operation (not in /openapi.json): static files a
		// browser navigates to, which cannot carry a bearer header.
		s.mux.Handle("GET "+DashboardPath, opts.Dashboard)
		s.mux.Handle("GET "+strings.TrimSuffix(DashboardPath, "/"), http.RedirectHandler(DashboardPath, http.StatusMovedPermanently))
	}
	doc, err := json.MarshalIndent(openAPI(s.routes), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("api: build the OpenAPI document: %w", err)
	}
	s.openapi = doc
	if s.auth.open() {
		s.log.Warn().Msg("API running without authentication: set --api-token (and --api-read-token) before exposing it")
	}
	return s, nil
}

// ServeHTTP checks the request's Host, origin and body type (origin.go),
// then routes it. Requests no route matches still need a
// valid token (so the route list is not probeable), and get JSON 404/405
// bodies instead of the mux's plain text.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r) {
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		if _, ok := s.authorize(w, r, accessRead); !ok {
			return
		}
		s.mux.ServeHTTP(&jsonErrorWriter{ResponseWriter: w}, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// errorBody is every error response.
type errorBody struct {
	Error       string                   `json:"error"`
	Diagnostics []diagnostics.Diagnostic `json:"diagnostics"`
}

func writeError(w http.ResponseWriter, status int, msg string, ds []diagnostics.Diagnostic) {
	if ds == nil {
		ds = []diagnostics.Diagnostic{}
	}
	writeJSON(w, status, errorBody{Error: msg, Diagnostics: ds})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(errorBody{Error: "encode response: " + err.Error(), Diagnostics: []diagnostics.Diagnostic{}})
	}
	writeRaw(w, status, body)
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(body)
	w.Write([]byte{'\n'})
}

// jsonErrorWriter turns the mux's own plain-text errors (404, 405) into the
// API's JSON error body, keeping headers such as Allow.
type jsonErrorWriter struct {
	http.ResponseWriter
	replaced bool
}

func (w *jsonErrorWriter) WriteHeader(status int) {
	if status < 400 {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.replaced = true
	w.Header().Del("Content-Length")
	writeError(w.ResponseWriter, status, http.StatusText(status), nil)
}

func (w *jsonErrorWriter) Write(b []byte) (int, error) {
	if w.replaced {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

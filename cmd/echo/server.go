package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// controlPrefix is the path prefix of the control endpoints; everything else
// is echoed.
const controlPrefix = "/_echo/"

// Reply is the JSON body of every echoed request.
type Reply struct {
	// Hostname is os.Hostname(): the container ID inside Docker.
	Hostname string `json:"hostname"`
	// Name is ECHO_NAME, if set.
	Name    string      `json:"name,omitempty"`
	Request RequestSeen `json:"request"`
	// Failed is set when the answer is an injected failure.
	Failed bool `json:"failed,omitempty"`
}

// RequestSeen is the request as the backend received it.
type RequestSeen struct {
	// Method, Host, Path and Query are as received, after any proxy rewrites.
	Method  string              `json:"method"`
	Host    string              `json:"host"`
	Path    string              `json:"path"`
	Query   string              `json:"query,omitempty"`
	Headers map[string][]string `json:"headers"`
	// RemoteAddr is the peer: the proxy, when there is one.
	RemoteAddr string `json:"remote_addr"`
}

// State is the control state, as reported by /_echo/state.
type State struct {
	// FailStatus and FailRate are set by /_echo/fail; zero means healthy.
	FailStatus int     `json:"fail_status,omitempty"`
	FailRate   float64 `json:"fail_rate,omitempty"`
	// Hang is true while ordinary requests are held; HangFor is how long
	// each is held (0: until released).
	Hang    bool          `json:"hang"`
	HangFor time.Duration `json:"hang_for,omitempty"`
	// Delay is added to every ordinary request (/_echo/slow).
	Delay time.Duration `json:"delay,omitempty"`
	// Held is the number of requests being held by hang or slow right now.
	Held int64 `json:"held"`
}

// server echoes requests and applies the injected misbehaviour. It is safe
// for concurrent use.
type server struct {
	hostname string
	name     string
	// rand returns a number in [0,1); injected so failure rates are testable.
	rand func() float64

	mu    sync.Mutex
	state State
	// release is closed by /_echo/ok to free every request held by a hang.
	release chan struct{}
	held    atomic.Int64
}

func newServer(hostname, name string, rand func() float64) *server {
	return &server{hostname: hostname, name: name, rand: rand, release: make(chan struct{})}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, controlPrefix) {
		s.control(w, r)
		return
	}
	s.echo(w, r)
}

func (s *server) echo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	st, release := s.state, s.release
	s.mu.Unlock()

	if st.Delay > 0 && !s.wait(r, st.Delay, nil) {
		return
	}
	if st.Hang && !s.wait(r, st.HangFor, release) {
		return
	}
	status := http.StatusOK
	failed := st.FailStatus != 0 && st.FailRate > 0 && s.rand() < st.FailRate
	if failed {
		status = st.FailStatus
	}
	s.writeJSON(w, status, Reply{
		Hostname: s.hostname,
		Name:     s.name,
		Failed:   failed,
		Request: RequestSeen{
			Method:     r.Method,
			Host:       r.Host,
			Path:       r.URL.Path,
			Query:      r.URL.RawQuery,
			Headers:    r.Header,
			RemoteAddr: r.RemoteAddr,
		},
	})
}

// wait holds the request for d (0: no limit) or until release is closed. It
// reports false when the client went away first.
func (s *server) wait(r *http.Request, d time.Duration, release <-chan struct{}) bool {
	s.held.Add(1)
	defer s.held.Add(-1)
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
		return true
	case <-release:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (s *server) control(w http.ResponseWriter, r *http.Request) {
	action := strings.TrimPrefix(r.URL.Path, controlPrefix)
	switch action {
	case "health":
		s.mu.Lock()
		failing := s.state.FailStatus != 0 && s.state.FailRate > 0
		s.mu.Unlock()
		if failing {
			s.writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "failing", "hostname": s.hostname})
			return
		}
		s.writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "hostname": s.hostname})
		return
	case "state":
		s.writeJSON(w, http.StatusOK, s.snapshot())
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, fmt.Sprintf("%s%s needs POST", controlPrefix, action), http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	var err error
	switch action {
	case "fail":
		err = s.setFail(q.Get("status"), q.Get("rate"))
	case "hang":
		err = s.setHang(q.Get("duration"))
	case "slow":
		err = s.setDelay(q.Get("delay"))
	case "ok":
		s.recover()
	default:
		http.Error(w, "unknown control endpoint "+r.URL.Path, http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.writeJSON(w, http.StatusOK, s.snapshot())
}

func (s *server) snapshot() State {
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	st.Held = s.held.Load()
	return st
}

func (s *server) setFail(statusArg, rateArg string) error {
	status, rate := http.StatusInternalServerError, 1.0
	if statusArg != "" {
		v, err := strconv.Atoi(statusArg)
		if err != nil || v < 100 || v > 599 {
			return fmt.Errorf("status %q: want an HTTP status 100-599", statusArg)
		}
		status = v
	}
	if rateArg != "" {
		v, err := strconv.ParseFloat(rateArg, 64)
		if err != nil || v < 0 || v > 1 {
			return fmt.Errorf("rate %q: want a number in [0,1]", rateArg)
		}
		rate = v
	}
	s.mu.Lock()
	s.state.FailStatus, s.state.FailRate = status, rate
	s.mu.Unlock()
	return nil
}

func (s *server) setHang(durationArg string) error {
	var d time.Duration
	if durationArg != "" {
		v, err := time.ParseDuration(durationArg)
		if err != nil || v < 0 {
			return fmt.Errorf("duration %q: want a non-negative Go duration such as 30s", durationArg)
		}
		d = v
	}
	s.mu.Lock()
	s.state.Hang, s.state.HangFor = true, d
	s.mu.Unlock()
	return nil
}

func (s *server) setDelay(delayArg string) error {
	d, err := time.ParseDuration(delayArg)
	if err != nil || d < 0 {
		return fmt.Errorf("delay %q: want a non-negative Go duration such as 200ms", delayArg)
	}
	s.mu.Lock()
	s.state.Delay = d
	s.mu.Unlock()
	return nil
}

func (s *server) recover() {
	s.mu.Lock()
	s.state = State{}
	close(s.release)
	s.release = make(chan struct{})
	s.mu.Unlock()
}

func (s *server) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Echo-Hostname", s.hostname)
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

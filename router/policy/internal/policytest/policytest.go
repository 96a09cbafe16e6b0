// Package policytest has the helpers the policies' tests share: a
// recorder of refusals, a manual clock, and a way to run one request
// through one policy.
package policytest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/levee-proxy/levee/router/policy"
)

// Recorder records refusals as "policy/reason".
type Recorder struct {
	mu  sync.Mutex
	Got []string
}

// Refused implements policy.Recorder.
func (r *Recorder) Refused(route, name, reason string) {
	r.mu.Lock()
	r.Got = append(r.Got, name+"/"+reason)
	r.mu.Unlock()
}

// Count returns how many refusals were recorded.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.Got)
}

// Clock is a manually advanced clock.
type Clock struct {
	mu sync.Mutex
	T  time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.T
}

// Advance moves the clock on.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.T = c.T.Add(d)
	c.mu.Unlock()
}

// Result is what one request through a policy produced.
type Result struct {
	Code    int
	Header  http.Header
	Body    string
	Reached bool          // the policy called next
	Request *http.Request // as next saw it
}

// Run sends r through p with a next that answers 200.
func Run(p policy.Policy, r *http.Request) Result {
	w := httptest.NewRecorder()
	var res Result
	p.Serve(w, r, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res.Reached, res.Request = true, r
		w.WriteHeader(http.StatusOK)
	}))
	res.Code, res.Header, res.Body = w.Code, w.Header(), w.Body.String()
	return res
}

// Request returns a GET for host/path from the client address peer.
func Request(peer string, xff ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://app.test/x?y=1", nil)
	r.RemoteAddr = peer
	for _, v := range xff {
		r.Header.Add("X-Forwarded-For", v)
	}
	return r
}

// State is a route's policy state held in a map (policy.State).
type State map[string]any

// Retain implements policy.State: the value kept under name when keep
// accepts it, else a new one from create.
func (s State) Retain(name string, keep func(any) bool, create func() any) any {
	if v, ok := s[name]; ok && keep(v) {
		return v
	}
	v := create()
	s[name] = v
	return v
}
